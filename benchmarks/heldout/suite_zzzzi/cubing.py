"""Speedcubing competition: the scoretaking agent enters one round's scorecards (scans the model reads,
judge look-ups for smudged attempts), computes the WCA averages, ranks and advances competitors and submits
the round to the WCA results team (route: otlp)."""

from __future__ import annotations

import json
import re

from _common import last_user, system_of
from _otlp import setup, span, teardown, write_run

NAME = "cubing-results"
ROUTE = "otlp"
SWITCH = None

FORMATS = {"333": "a", "444": "a", "222": "a", "pyram": "a", "333bf": "b3"}
FIRST = ["Ana Silva", "Tomasz Nowak", "Yuki Sato", "Liam O'Brien", "Priya Nair", "Jonas Berg", "Chen Wei",
         "Sofia Rossi", "Kwame Mensah", "Ines Duarte", "Omar Haddad", "Lea Fischer"]


def _cs(t: str) -> int:
    if t in ("DNF", "DNS"):
        return -1
    if ":" in t:
        m, s = t.split(":")
        return int(m) * 6000 + round(float(s) * 100)
    return round(float(t) * 100)


def _t(cs: int) -> str:
    if cs < 0:
        return "DNF"
    return f"{cs // 6000}:{cs % 6000 / 100:05.2f}" if cs >= 6000 else f"{cs / 100:.2f}"


def _cards(event: str, n: int, base: float, k: int, smudge: tuple[int, int, str] | None = None) -> list[str]:
    lines = []
    for i in range(n):
        times = [base + ((i * 7 + j * 3 + k) % 11) * base / 40 + i * base / 30 for j in range(k)]
        cells = [_t(round(t * 100)) for t in times]
        if (i + k) % 5 == 3:
            cells[-2] = "DNF"
        if smudge and smudge[0] == i:
            cells[smudge[1]] = smudge[2]
        lines.append(f"Comp {i + 1:02d} | {FIRST[i]} | " + ", ".join(cells))
    return lines


INPUTS = [
    {"task": "enter 333 round 1, Leeds Cube Open 2025", "competition": "Leeds Cube Open 2025", "event": "333",
     "round": 1, "cards": _cards("333", 8, 9.5, 5, (6, 2, "1?.?4"))},
    {"task": "enter 444 final, Leeds Cube Open 2025", "competition": "Leeds Cube Open 2025", "event": "444",
     "round": 2, "cards": _cards("444", 6, 38.0, 5)},
    {"task": "enter 333bf final, Leeds Cube Open 2025", "competition": "Leeds Cube Open 2025", "event": "333bf",
     "round": 1, "cards": _cards("333bf", 5, 62.0, 3)},
    {"task": "enter 222 round 1, Leeds Cube Open 2025", "competition": "Leeds Cube Open 2025", "event": "222",
     "round": 1, "cards": _cards("222", 8, 2.9, 5)},
    {"task": "enter pyram round 1, Leeds Cube Open 2025", "competition": "Leeds Cube Open 2025", "event": "pyram",
     "round": 1, "cards": _cards("pyram", 12, 4.1, 5, (3, 4, "5.?1"))},
]
SIGNED = {("333", 7, 3): "12.84", ("pyram", 4, 5): "5.71"}  # (event, competitor, attempt) -> judge-signed value
ROUNDS_IN_EVENT = {"333": 2, "444": 2, "222": 2, "pyram": 2, "333bf": 1}

CASES = [
    {"id": "cubing_header_skip", "input": 3, "switch": "header_skip", "fault_kind": "off_by_one",
     "root": ("parse_scorecards", 1, "other"), "failure": ("validate_results", 1),
     "description": "the scorecard parser starts at the second line as if the first were a header, so "
                    "competitor 01 has no result when the round is validated"},
    {"id": "cubing_smudge_filled", "input": 0, "switch": "smudge_filled", "fault_kind": "hallucinated_value",
     "root": ("ChatCompletion", 2, "llm"), "failure": ("submit_to_wca", 1),
     "description": "transcribing Chen Wei's scan, the model fills the smudged third attempt in as 12.04 "
                    "instead of asking the judge, and the WCA audit finds the signed 12.84"},
    {"id": "cubing_round_key", "input": 1, "switch": "round_key", "fault_kind": "bad_memory_write",
     "root": ("store_round_results", 1, "other"), "failure": ("rank_and_advance", 1),
     "description": "the results memory stores the 444 final under round 1's key, and ranking the final "
                    "finds nothing stored for round 2"},
    {"id": "cubing_bld_as_average", "input": 2, "switch": "bld_as_average", "fault_kind": "wrong_routing",
     "root": ("route_event_format", 1, "other"), "failure": ("validate_results", 1),
     "description": "the format router sends the 3x3 blindfolded final down the average-of-5 path, and the "
                    "validation finds three attempts where five are needed"},
    {"id": "cubing_advance_all", "input": 4, "switch": "advance_all", "fault_kind": "plan_error",
     "root": ("ChatCompletion", 1, "llm"), "failure": ("submit_to_wca", 1),
     "description": "the round planner advances all 12 pyraminx competitors to round 2, and the WCA submission "
                    "is refused under the 75 % advancement rule"},
]


def brain(request):
    system = system_of(request)
    user = last_user(request)
    if "round planner" in system:
        req = json.loads(user)
        adv = 0 if req["rounds_in_event"] == req["round"] else (req["competitors"] * 3) // 4
        if SWITCH == "advance_all":
            adv = req["competitors"]
        return json.dumps({"format": FORMATS[req["event"]], "advance": adv,
                           "time_limit": "10:00" if req["event"] == "333bf" else "1:00"})
    if "scorecard scans" in system:
        m = re.match(r"Comp (\d+) \| ([^|]+) \| (.*)", user)
        cells = [c.strip() for c in m.group(3).split(",")]
        unclear = [i + 1 for i, c in enumerate(cells) if "?" in c]
        if SWITCH == "smudge_filled":
            cells = [c.replace("?", "2", 1).replace("?", "0") for c in cells]
            unclear = []
        return json.dumps({"competitor": int(m.group(1)), "attempts": cells, "unclear": unclear})
    if "announcement" in system:
        req = json.loads(user)
        top = req["ranking"][:3]
        return f"{req['event']} round {req['round']}: " + ", ".join(f"{r['name']} {r['result']}" for r in top) + "."
    return "Noted."


def record(inp: dict, out: str, client, model: str) -> None:
    provider, exporter = setup()
    tracer = provider.get_tracer("cubing-scoretaking")
    ev, rnd = inp["event"], inp["round"]
    rkey = f"{ev}-r{rnd}"
    memory: dict = {}
    try:
        with span(tracer, NAME, "AGENT", {"competition": inp["competition"], "event": ev, "round": rnd},
                  **{"agent.name": NAME, "metadata": json.dumps({"task": inp["task"]})}) as top:
            with span(tracer, "fetch_scorecards", "TOOL", {"event": ev, "round": rnd},
                      **{"tool.name": "fetch_scorecards"}) as s:
                s.output = "\n".join(inp["cards"])
            text = s.output
            with span(tracer, "fetch_registrations", "TOOL", {"competition": inp["competition"], "event": ev},
                      **{"tool.name": "fetch_registrations"}) as s:
                s.output = {"event": ev, "round": rnd, "registered": len(inp["cards"])}
            with span(tracer, "fetch_records", "TOOL", {"event": ev, "region": "GB"},
                      **{"tool.name": "fetch_records"}) as s:
                s.output = {"event": ev, "NR_single": {"333": "4.41", "444": "19.87", "222": "0.98", "pyram": "1.45",
                                                       "333bf": "16.22"}[ev]}
            records = s.output
            plan_reply = client.chat.completions.create(model=model, messages=[
                {"role": "system", "content": "You are the round planner. Answer JSON: format, advance, time_limit."},
                {"role": "user", "content": json.dumps({"event": ev, "round": rnd, "competitors": len(inp["cards"]),
                                                        "rounds_in_event": ROUNDS_IN_EVENT[ev]})}])
            with span(tracer, "parse_plan", "CHAIN", plan_reply.choices[0].message.content) as s:
                s.output = json.loads(plan_reply.choices[0].message.content)
            plan = s.output
            with span(tracer, "route_event_format", "CHAIN", {"event": ev, "format": plan["format"]}) as s:
                path = "best_of_3" if plan["format"] == "b3" else "average_of_5"
                if SWITCH == "bld_as_average":
                    path = "average_of_5"
                s.output = path
            with span(tracer, "parse_scorecards", "CHAIN", text) as s:
                lines = text.splitlines()
                if SWITCH == "header_skip":
                    lines = lines[1:]
                clear, smudged = [], []
                for line in lines:
                    (smudged if "?" in line else clear).append(line)
                rows = []
                for line in clear:
                    m = re.match(r"Comp (\d+) \| ([^|]+?) \| (.*)", line)
                    rows.append({"id": int(m.group(1)), "name": m.group(2),
                                 "attempts": [c.strip() for c in m.group(3).split(",")]})
                s.output = {"rows": rows, "smudged": smudged}
            rows = s.output["rows"]
            for line in s.output["smudged"]:
                reply = client.chat.completions.create(model=model, messages=[
                    {"role": "system", "content": "You transcribe scorecard scans into JSON; list unclear attempts."},
                    {"role": "user", "content": line}])
                with span(tracer, "parse_transcription", "CHAIN", reply.choices[0].message.content) as s:
                    s.output = json.loads(reply.choices[0].message.content)
                card = s.output
                attempts = list(card["attempts"])
                for a in card["unclear"]:
                    with span(tracer, "judge_lookup", "TOOL", {"event": ev, "competitor": card["competitor"],
                                                              "attempt": a}, **{"tool.name": "judge_lookup"}) as j:
                        j.output = {"attempt": a, "signed": SIGNED[(ev, card["competitor"], a)]}
                    attempts[a - 1] = j.output["signed"]
                name = re.match(r"Comp \d+ \| ([^|]+?) \|", line).group(1)
                rows.append({"id": card["competitor"], "name": name, "attempts": attempts})
            rows.sort(key=lambda r: r["id"])
            with span(tracer, "compute_results", "CHAIN", {"path": path, "rows": rows}) as s:
                res = []
                for r in rows:
                    cs = [_cs(a) for a in r["attempts"]]
                    ok = sorted(c for c in cs if c >= 0)
                    best = ok[0] if ok else -1
                    if path == "best_of_3":
                        result = best
                    else:
                        dnf = len(cs) - len(ok)
                        mid = sorted(cs, key=lambda c: (c < 0, c))[1:-1] if cs else []
                        result = -1 if dnf > 1 or len(cs) < 3 else round(sum(c for c in mid if c >= 0) /
                                                                          max(1, len([c for c in mid if c >= 0])))
                    res.append({**r, "best": _t(best), "result": _t(result), "result_cs": result})
                s.output = res
            with span(tracer, "store_round_results", "CHAIN", {"key": rkey, "results": res}) as s:
                key = f"{ev}-r{rnd - 1}" if SWITCH == "round_key" else rkey
                memory[key] = res
                s.output = {"stored": key, "count": len(res)}
            with span(tracer, "rank_and_advance", "CHAIN", {"key": rkey, "advance": plan["advance"]}) as s:
                if rkey not in memory:
                    raise KeyError(f"no results stored for {rkey}")
                ranked = sorted(memory[rkey], key=lambda r: (r["result_cs"] < 0, r["result_cs"]))
                s.output = [{"pos": i + 1, "id": r["id"], "name": r["name"], "result": r["result"],
                             "advances": i < plan["advance"]} for i, r in enumerate(ranked)]
            ranking = s.output
            with span(tracer, "detect_records", "CHAIN", {"ranking": ranking, "records": records}) as s:
                nr = _cs(records["NR_single"])
                s.output = [r["name"] for r in res if 0 <= _cs(r["best"]) < nr]
            with span(tracer, "validate_results", "CHAIN", {"path": path, "results": res}) as s:
                need = 5 if path == "average_of_5" else 3
                for r in res:
                    if len(r["attempts"]) != need:
                        raise ValueError(f"competitor {r['id']:02d} has {len(r['attempts'])} attempts; "
                                         f"{path.replace('_', ' ')} needs {need}")
                got = {r["id"] for r in res}
                missing = [i + 1 for i in range(len(inp["cards"])) if i + 1 not in got]
                if missing:
                    raise ValueError(f"competitor {missing[0]:02d} registered for {ev} round {rnd} has no result")
                s.output = "valid"
            ann = client.chat.completions.create(model=model, messages=[
                {"role": "system", "content": "Write the round's announcement for the venue screen."},
                {"role": "user", "content": json.dumps({"event": ev, "round": rnd, "ranking": ranking})}])
            with span(tracer, "submit_to_wca", "TOOL", {"competition": inp["competition"], "event": ev, "round": rnd,
                                                       "ranking": ranking, "results": res},
                      **{"tool.name": "submit_to_wca"}) as s:
                adv = sum(r["advances"] for r in ranking)
                if adv > (len(ranking) * 3) // 4:
                    raise ValueError(f"WCA results team: {adv} of {len(ranking)} competitors advance; regulation 9p1 "
                                     f"allows at most {(len(ranking) * 3) // 4}")
                for (e, comp, att), signed in SIGNED.items():
                    if e != ev:
                        continue
                    entered = next(r["attempts"][att - 1] for r in res if r["id"] == comp)
                    if entered != signed:
                        raise ValueError(f"WCA results team: competitor {comp:02d} attempt {att} entered as {entered}; "
                                         f"signed scorecard reads {signed}")
                s.output = {"accepted": True, "event": ev, "round": rnd}
            top.output = {"submitted": s.output, "announcement": ann.choices[0].message.content}
    finally:
        write_run(exporter, out)


def finish():
    teardown()
