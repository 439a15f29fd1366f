"""pool-lane-day: a public swimming pool's lane and lifeguard day plan (OpenTelemetry + OpenInference, OTLP JSON).

The planner reads the club bookings, the lifeguard rota and the water chemistry, retrieves the supervision
procedure, asks the model (instrumented openai client) to allocate club lanes per hour block, parses the
allocation, checks each block and gives the free lanes to public lap swim (a guardrail span per block),
works out the lifeguards needed, saves the day plan to the ops memory the evening shift reads, books the
lanes block by block from that memory, publishes the lifeguard rota, opens the pool and writes the brief.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from ._common import Env, Spans, between, last_user, openai_client, system_text

NAME = "pool-lane-day"
ROUTE = "otlp"
DOMAIN = "public swimming pool: lanes, lifeguards and water checks"
SHAPE = "OTel/OpenInference spans: bookings, rota and chemistry tools (chemistry retries its gateway), procedure retriever, LLM lane allocation (instrumented openai) + JSON chain, guardrail per hour block, guard-plan chain, ops-memory write chain, lane booking tool per block, rota publish tool, pool opening tool, LLM brief"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


LANES = 8
BLOCKS = ["06:00-07:00", "07:00-08:00", "12:00-13:00", "17:00-18:00", "18:00-19:00", "19:00-20:00"]

BOOKINGS: dict[str, list[dict]] = {
    "2025-05-12": [
        {"ref": "PB-501", "who": "Otters SC", "block": "06:00-07:00", "lanes_needed": 4},
        {"ref": "PB-502", "who": "Masters Swim", "block": "07:00-08:00", "lanes_needed": 2},
        {"ref": "PB-503", "who": "Aquafit", "block": "12:00-13:00", "lanes_needed": 3},
        {"ref": "PB-504", "who": "Swim School Stage 5-7", "block": "17:00-18:00", "lanes_needed": 2},
        {"ref": "PB-505", "who": "Otters SC", "block": "18:00-19:00", "lanes_needed": 4}],
    "2025-05-13": [
        {"ref": "PB-511", "who": "Riverside Tri Club", "block": "06:00-07:00", "lanes_needed": 3},
        {"ref": "PB-512", "who": "Otters SC", "block": "07:00-08:00", "lanes_needed": 4},
        {"ref": "PB-513", "who": "Swim School Stage 5-7", "block": "17:00-18:00", "lanes_needed": 2},
        {"ref": "PB-514", "who": "Water Polo Juniors", "block": "19:00-20:00", "lanes_needed": 4}],
    "2025-05-14": [
        {"ref": "PB-521", "who": "Otters SC", "block": "06:00-07:00", "lanes_needed": 4},
        {"ref": "PB-522", "who": "Aquafit", "block": "12:00-13:00", "lanes_needed": 3},
        {"ref": "PB-523", "who": "Masters Swim", "block": "18:00-19:00", "lanes_needed": 2},
        {"ref": "PB-524", "who": "Sub-Aqua Club", "block": "19:00-20:00", "lanes_needed": 3}],
    "2025-05-15": [
        {"ref": "PB-531", "who": "Masters Swim", "block": "06:00-07:00", "lanes_needed": 2},
        {"ref": "PB-532", "who": "Otters SC", "block": "07:00-08:00", "lanes_needed": 4},
        {"ref": "PB-533", "who": "Swim School Stage 1-4", "block": "17:00-18:00", "lanes_needed": 3},
        {"ref": "PB-534", "who": "Riverside Tri Club", "block": "19:00-20:00", "lanes_needed": 3}],
    "2025-05-16": [
        {"ref": "PB-541", "who": "Otters SC", "block": "06:00-07:00", "lanes_needed": 4},
        {"ref": "PB-542", "who": "Aquafit", "block": "12:00-13:00", "lanes_needed": 3},
        {"ref": "PB-543", "who": "Swim School Stage 5-7", "block": "17:00-18:00", "lanes_needed": 2},
        {"ref": "PB-544", "who": "Masters Swim", "block": "18:00-19:00", "lanes_needed": 2}],
}

GUARDS = ["Aisha Khan", "Ben Tull", "Cara Voss", "Dev Mehta", "Ella Park", "Finn Doyle"]


def _rota(date: str) -> dict[str, list[str]]:
    k = int(date[-2:])
    return {b: [GUARDS[(k + i + j) % len(GUARDS)] for j in range(3 if i % 2 else 4)] for i, b in enumerate(BLOCKS)}


PROCEDURES = [
    {"id": "NOP-2024-3", "status": "current", "pool": "Main",
     "content": "Main pool supervision (NOP 2024): one lifeguard per 3 lanes in use (round up), minimum 2 while open."},
    {"id": "NOP-2019-3", "status": "superseded", "pool": "Main",
     "content": "Main pool lifeguard ratio (NOP 2019): one lifeguard per 6 lanes in use, minimum 1 while open."},
    {"id": "NOP-2024-7", "status": "current", "pool": "Learner",
     "content": "Learner pool: one lifeguard on poolside whenever a lesson is in the water."},
    {"id": "NOP-2024-9", "status": "current", "pool": "all",
     "content": "Water: free chlorine 1.0-3.0 ppm and pH 7.2-7.6, tested before opening and every 2 hours."},
]

FLAKY_GATEWAY = {"2025-05-12"}

INPUTS: list[dict[str, Any]] = [
    {"request_id": "PL-0512", "date": "2025-05-12", "pool": "Main"},
    {"request_id": "PL-0513", "date": "2025-05-13", "pool": "Main"},
    {"request_id": "PL-0514", "date": "2025-05-14", "pool": "Main"},
    {"request_id": "PL-0515", "date": "2025-05-15", "pool": "Main"},
    {"request_id": "PL-0516", "date": "2025-05-16", "pool": "Main"},
]

_state: dict[str, Any] = {}  # the leisure system's chemistry log and the ops memory, per run


# --- tools ---------------------------------------------------------------------------------------------------


def pool_bookings(date: str) -> list:
    return [dict(b) for b in BOOKINGS[date]]


def lifeguard_rota(date: str) -> dict:
    return _rota(date)


def _gateway(pool: str, date: str) -> dict:
    _state["gateway_calls"] = _state.get("gateway_calls", 0) + 1
    if date in FLAKY_GATEWAY and _state["gateway_calls"] == 1:
        raise TimeoutError("chemistry gateway: no answer from controller CL-2 within 3 s")
    reading = {"pool": pool, "at": f"{date}T05:50", "free_cl_ppm": 1.6, "ph": 7.4}
    _state.setdefault("chem_log", []).append(reading)
    return reading


def read_chemistry(pool: str, date: str) -> dict:
    readings = []
    try:
        readings.append(_gateway(pool, date))
    except TimeoutError:
        if not _on("gateway_retry"):
            readings.append(_gateway(pool, date))
    return {"pool": pool, "date": date, "readings": readings}


def book_lanes(date: str, block: str, allocations: list) -> dict:
    booked = {b["who"]: b for b in BOOKINGS[date] if b["block"] == block}
    for a in allocations:
        lanes = a["lanes"]
        bad = [n for n in lanes if not 1 <= n <= LANES]
        if bad:
            raise ValueError(f"booking system: the Main pool has {LANES} lanes; lane {bad[0]} requested for "
                             f"{a['who']} {block}")
        if a["who"] != "Public lap swim" and a["who"] not in booked:
            raise ValueError(f"booking system: {block} allocation names {a['who']}, which has no booking in that block")
    for who, b in booked.items():
        got = next((a for a in allocations if a["who"] == who), None)
        if got is None or len(got["lanes"]) < b["lanes_needed"]:
            raise ValueError(f"booking system: {who} ({b['ref']}) holds {b['lanes_needed']} lanes {block} and the "
                             f"plan gives it {len(got['lanes']) if got else 0}")
    return {"date": date, "block": block, "status": "booked", "allocations": len(allocations)}


def publish_rota(date: str, guards: dict) -> dict:
    for block, g in guards.items():
        need = max(2, math.ceil(g["lanes_in_use"] / 3))
        if len(g["names"]) < need:
            raise ValueError(f"rota: {block}: {g['lanes_in_use']} lanes in use need {need} lifeguards under NOP 2024, "
                             f"the rota has {len(g['names'])}")
    return {"date": date, "blocks": len(guards), "status": "published"}


def open_pool(pool: str, date: str) -> dict:
    logged = [r for r in _state.get("chem_log", []) if r["at"].startswith(date)]
    if not logged:
        raise RuntimeError(f"leisure system: {pool} pool has no chemistry reading logged for {date}; cannot open")
    return {"pool": pool, "date": date, "status": "open", "reading_at": logged[-1]["at"]}


def _search(query: str) -> list[dict]:
    words = set(query.lower().split())
    docs = PROCEDURES if _on("procedure_status") else [p for p in PROCEDURES if p["status"] == "current"]
    scored = sorted(((sum(w in p["content"].lower() for w in words) / len(words), p) for p in docs), key=lambda x: -x[0])
    return [{"id": p["id"], "content": p["content"], "score": round(s, 3),
             "metadata": {"status": p["status"], "pool": p["pool"]}} for s, p in scored[:2]]


# --- the agent -----------------------------------------------------------------------------------------------

ALLOC_PROMPT = ("You allocate the Main pool's 8 lanes to club bookings for each hour block, from lane 1 up in "
                "booking order. Answer JSON: {\"blocks\": [{\"block\", \"allocations\": [{\"who\", \"lanes\": \"a-b\"}]}]}.")
BRIEF_PROMPT = "Write the duty manager's two-line pool brief."


def _lanes(text: str) -> list[int]:
    m = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", text or "")
    if not m:
        return [int(x) for x in re.findall(r"\d+", text or "")]
    return list(range(int(m.group(1)), int(m.group(2)) + 1))


def _parse_alloc(text: str) -> dict:
    data = json.loads(text[text.index("{"): text.rindex("}") + 1])
    return {b["block"]: [{"who": a["who"], "lanes": _lanes(a.get("lanes", ""))} for a in b["allocations"]]
            for b in data["blocks"]}


def _lane_check(block: str, allocations: list) -> dict:
    used = sorted(n for a in allocations for n in a["lanes"])
    if len(used) != len(set(used)):
        raise ValueError(f"{block}: a lane is allocated twice")
    top = LANES + 1 if _on("lap_range") else LANES
    free = [n for n in range(1, top + 1) if n not in used]
    return {"block": block, "club_lanes": used, "lap_swim_lanes": free, "lanes_in_use": len(used) + len(free)}


def _guard_plan(doc: str, checks: list, rota: dict) -> dict:
    per = int(re.search(r"one lifeguard per (\d+) lanes", doc).group(1))
    minimum = int(re.search(r"minimum (\d+)", doc).group(1))
    plan = {}
    for c in checks:
        need = max(minimum, math.ceil(c["lanes_in_use"] / per))
        plan[c["block"]] = {"lanes_in_use": c["lanes_in_use"], "names": rota[c["block"]][:need]}
    return plan


def _save_plan(date: str, checks: list, allocs: dict, guards: dict) -> dict:
    memory = {"date": date, "blocks": {}}
    entry: dict[str, Any] = {}
    for c in checks:
        if not _on("entry_reuse"):
            entry = {}
        entry.update({"allocations": allocs[c["block"]] + [{"who": "Public lap swim", "lanes": c["lap_swim_lanes"]}],
                      "guards": guards[c["block"]]["names"]})
        memory["blocks"][c["block"]] = entry
    _state["ops_memory"] = json.loads(json.dumps(memory))
    return memory


def _agent(sp: Spans, env: Env, inp: dict) -> dict:
    date, pool = inp["date"], inp["pool"]
    client = openai_client(env)
    bookings = sp.tool("pool_bookings", pool_bookings, {"date": date})
    rota = sp.tool("lifeguard_rota", lifeguard_rota, {"date": date})
    chem = sp.tool("read_chemistry", read_chemistry, {"pool": pool, "date": date})
    with sp.step("chemistry_check", "GUARDRAIL", chem) as s:
        bad = [r for r in chem["readings"] if not (1.0 <= r["free_cl_ppm"] <= 3.0 and 7.2 <= r["ph"] <= 7.6)]
        if bad:
            raise ValueError(f"water out of range: {bad[0]}")
        s.output = {"passed": True, "readings": len(chem["readings"])}
    docs = sp.retriever("search_procedures", _search, "main pool lifeguard ratio lanes in use")
    alloc_text = client.chat.completions.create(model=env.model, temperature=0, messages=[
        {"role": "system", "content": ALLOC_PROMPT},
        {"role": "user", "content": f"Date: {date}\nBlocks: {json.dumps(BLOCKS)}\nBookings: {json.dumps(bookings)}"},
    ]).choices[0].message.content or ""
    with sp.step("parse_allocation", "CHAIN", alloc_text) as s:
        allocs = s.output = _parse_alloc(alloc_text)
    checks = []
    for block in BLOCKS:
        with sp.step("lane_check", "GUARDRAIL", {"block": block, "allocations": allocs.get(block, [])}) as s:
            s.output = _lane_check(block, allocs.get(block, []))
        checks.append(s.output)
    with sp.step("guard_plan", "CHAIN", {"procedure": docs[0]["content"], "checks": checks, "rota": rota}) as s:
        guards = s.output = _guard_plan(docs[0]["content"], checks, rota)
    with sp.step("save_day_plan", "CHAIN", {"date": date, "checks": checks, "allocations": allocs, "guards": guards}) as s:
        s.output = _save_plan(date, checks, allocs, guards)
    memory = _state["ops_memory"]
    for block in BLOCKS:
        sp.tool("book_lanes", book_lanes, {"date": date, "block": block, "allocations": memory["blocks"][block]["allocations"]})
    sp.tool("publish_rota", publish_rota, {"date": date, "guards": guards})
    opened = sp.tool("open_pool", open_pool, {"pool": pool, "date": date})
    brief = client.chat.completions.create(model=env.model, temperature=0, messages=[
        {"role": "system", "content": BRIEF_PROMPT},
        {"role": "user", "content": json.dumps({"date": date, "bookings": len(bookings), "opened": opened["status"],
                                                "guards": {b: len(g["names"]) for b, g in guards.items()}})},
    ]).choices[0].message.content
    return {"opened": opened, "brief": brief}


def run(inp: dict, out: Path, env: Env) -> dict:
    _state.clear()
    sp = Spans(env.otel.tracer("pool-lane-day"))
    env.otel.begin()
    task = f"pool day {inp['pool']} {inp['date']}"
    with sp.step("pool-lane-day", "AGENT", inp, {"agent.name": "pool-lane-day", "metadata": json.dumps({"task": task}),
                                                  "session.id": inp["request_id"]}) as root:
        root.output = _agent(sp, env, inp)
    return env.otel.document()


# --- the model -----------------------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    system = system_text(request)
    user = last_user(request)
    if system.startswith("You allocate the Main pool"):
        blocks = json.loads(between(user, "Blocks: "))
        bookings = json.loads(between(user, "Bookings: "))
        key = "lane_range" if _on("alloc_keys") else "lanes"
        out = []
        for b in blocks:
            nxt, allocs = 1, []
            for bk in [x for x in bookings if x["block"] == b]:
                allocs.append({"who": bk["who"], key: f"{nxt}-{nxt + bk['lanes_needed'] - 1}"})
                nxt += bk["lanes_needed"]
            out.append({"block": b, "allocations": allocs})
        return json.dumps({"blocks": out})
    if system.startswith("Write the duty manager"):
        d = json.loads(user)
        return f"Main pool {d['date']}: {d['opened']}, {d['bookings']} club bookings. Lifeguards per block: {d['guards']}."
    return "I plan the pool only."
