"""The job as plain code, for the two routes where the agent's own code makes the steps (sdk, otlp).

`rec.step(name, kind, input)` is a context manager whose handle takes `.output`; `state` is the run's shared
state (`run.state` on the sdk route); `ask(name, role, payload)` is one model call, returning the answer text.
"""
from __future__ import annotations

import json
import re

from core import ValidationFailed  # noqa: F401  (re-exported for the routes)


def run_job(A, inp, rec, state, ask):
    V = A.v
    by_id = {it["id"]: it for it in inp["items"]}
    with rec.step(V["request"], "input", {"ref": inp["ref"], "date": inp["date"]}) as s:
        s.output = {"ref": inp["ref"], "date": inp["date"], A.cap_noun: inp["cap"], "flag": inp["flag"],
                    "items": [dict(it, note=A.note_for(it)) for it in inp["items"]]}
    request = s.output
    with rec.step(V["catalog"], "retrieval", {"ref": inp["ref"], "date": inp["date"],
                                                 "ids": list(by_id)}) as s:
        s.output = A.catalogue(inp)
    cat = s.output
    with rec.step(V["cap"], "state", {A.cap_noun: request[A.cap_noun]}) as s:
        state["cap"] = A.store_cap(request[A.cap_noun])
        s.output = {"cap": state["cap"]}
    plan_text = ask(V["plan"], "plan", {"ref": inp["ref"], "items": [
        {"id": it["id"], "qty": it["qty"]} for it in request["items"]]})
    with rec.step(V["parse_plan"], "parse", {"text": plan_text}) as s:
        s.output = A.parse_plan(plan_text)
    order = s.output
    history: list[str] = []
    lines = []
    for idx, item_id in enumerate(order):
        item = by_id[item_id]
        with rec.step(V["lookup"], "other", {"item": item["name"], "records": cat["count"]}) as s:
            s.output = A.lookup_rate(cat, item)
        entry = s.output
        nxt = order[(idx + 1) % len(order)]
        est = ask(V["estimate"], "estimate", {"position": idx, "item": item_id, "note": A.note_for(item),
                                              "neighbour": nxt, "history": history[-2:]})
        history.append(A.note_for(item))
        with rec.step(V["parse_est"], "parse", {"text": est}) as s:
            s.output = A.parse_estimate(est, idx)
        parsed = s.output
        for attempt in (1, 2):
            try:
                with rec.step(V["tool"], "tool", {"id": parsed["id"], "qty": parsed["qty"]}) as s:
                    if idx == A.v.get("flaky", 1) and attempt == 1:
                        raise ConnectionError(f"{V['tool']} connection reset")
                    s.output = A.quote(parsed["id"], parsed["qty"], idx)
                break
            except ConnectionError:
                continue
        quote = s.output
        with rec.step(V["convert"], "other", {"quote": quote}) as s:
            s.output = A.convert(quote, idx)
        conv = s.output
        with rec.step(V["record"], "state", {"item": item_id, "entry": entry, "amount": conv}) as s:
            line = A.line(item_id, entry, conv)
            state[f"line:{item_id}"] = line
            s.output = line
        lines.append(s.output)
    check = None if V.get("sub_late") else _check(A, inp, rec, ask)
    with rec.step(V["total"], "other", {"lines": [state[f"line:{i}"] for i in order]}) as s:
        s.output = {"total": A.total([state[f"line:{i}"] for i in order])}
    total = s.output["total"]
    with rec.step(V["route"], "condition", {"total": total, "cap": state["cap"]}) as s:
        s.output = A.channel(total, state["cap"])
    channel = s.output
    note = ask(V["note"], "note", {"ref": inp["ref"], "lines": len(lines), "total": total, "channel": channel})
    with rec.step(V["parse_note"], "parse", {"text": note}) as s:
        m = re.search(r"total ([\d.]+) (\w+), channel (\w+)", note)
        s.output = ({"stated_total": float(m.group(1)), "currency": m.group(2), "channel": m.group(3)} if m
                    else {"stated_total": None, "text": note})
    if check is None:
        check = _check(A, inp, rec, ask)
    with rec.step(V["validate"], "condition", {"lines": lines, "check": check, "total": total,
                                               "channel": channel, "note": note}) as s:
        s.output = A.validate(inp, lines, check, total, channel, note)
    return s.output


def root_of(A, case):
    """The recorded (name, occurrence) of the step a case switches, for the sdk and otlp routes."""
    V, idx, p = A.v, case.get("index", 0), case["point"]
    flaky = V.get("flaky", 1)
    table = {"plan": (V["plan"], 1), "parse_plan": (V["parse_plan"], 1), "catalogue": (V["catalog"], 1),
             "cap": (V["cap"], 1), "estimate": (V["estimate"], idx + 1), "parse_estimate": (V["parse_est"], idx + 1),
             "quote": (V["tool"], idx + 1 + (1 if idx >= flaky else 0)), "convert": (V["convert"], idx + 1),
             "resolve": (V["sub_llm"], 1), "route": (V["route"], 1), "note": (V["note"], 1),
             "total": (V["total"], 1), "hold": (V["sub_tool"], 1), "summarise": (V["sub_sum"], 1)}
    return table[p]


def failure_of(A, case):
    return A.v["validate"], 1


def _check(A, inp, rec, ask):
    V = A.v
    with rec.step(V["sub"], "agent", {"flag": inp["flag"]}) as sub:
        pick = ask(V["sub_llm"], "resolve", {"flag": inp["flag"], "ids": [it["id"] for it in inp["items"]]})
        target = json.loads(pick)["id"]
        with rec.step(V["sub_tool"], "tool", {"id": target}) as s:
            s.output = A.hold_record(inp, target)
        hold = s.output
        summary = ask(V["sub_sum"], "summarise", {"record": hold, "date": inp["date"]})
        with rec.step(V["sub_parse"], "parse", {"text": summary}) as s:
            s.output = json.loads(summary)
        check = s.output
        sub.output = check
    return check
