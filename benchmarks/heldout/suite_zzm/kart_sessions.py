"""A go-kart track's race sessions (langgraph route): booking -> rules -> kart allocation sub-graph -> heats -> laps -> results."""

from __future__ import annotations

import json
import re
import sys
import zlib
from pathlib import Path
from typing import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from trajdebug.integrations.langchain import TrajdebugTracer  # noqa: E402

AGENT = "kart-sessions"
ROUTE = "langgraph"
DOMAIN = "go-kart track's race sessions"
SHAPE = "StateGraph: request reading (LLM), booking and rules tools, kart allocation sub-graph (group load, fleet, kart per driver), heats, lap times per heat, standings, results summary (LLM) and parse, validator node"

FIRST = ["Ola", "Ben", "Cai", "Dina", "Eli", "Fay", "Gil", "Hal", "Ines", "Jon", "Kit", "Lea", "Mo", "Nia", "Oto", "Pia"]
LAST = ["Berg", "Cole", "Dunn", "Ertl", "Frei", "Gold", "Hart", "Ivey", "Jung", "Kerr", "Lund", "Moss", "Nagy", "Orr", "Pratt", "Quin"]


def _drivers(seed: int, n: int) -> list:
    out = []
    for i in range(n):
        k = (seed * 7 + i * 5) % 16
        out.append({"name": f"{FIRST[k]} {LAST[(k + seed) % 16]}", "weight_kg": 62 + (seed * 13 + i * 11) % 34,
                    "age": 18 + (seed + i * 3) % 30})
    return out


BOOKINGS = {f"G-{700 + s}": {"package": "grand prix", "drivers": _drivers(s, n)} for s, n in
            [(1, 10), (2, 9), (3, 10), (4, 8), (5, 10), (6, 9), (7, 10), (8, 9), (9, 10), (10, 10)]}
RULES = {
    "outdoor": {"circuit": "outdoor 1.1 km", "kart": "390cc", "max_heat_size": 8, "race_laps": 12, "min_weight_kg": 80},
    "indoor": {"circuit": "indoor 420 m", "kart": "270cc", "max_heat_size": 12, "race_laps": 12, "min_weight_kg": 80},
}
FLEET = [{"kart": f"K{n:02d}", "class": "390cc" if n < 17 else "270cc"} for n in range(1, 33)]


def _lap(name: str, lap: int) -> float:
    h = zlib.crc32(f"{name}:{lap}".encode())
    return round(61.0 + (h % 4000) / 1000.0 + (zlib.crc32(name.encode()) % 700) / 100.0, 3)


def _request(gid, date):
    b = BOOKINGS[gid]
    return {"group": gid, "date": date,
            "text": f"Grand prix session on the outdoor circuit for group {gid} on {date}, {len(b['drivers'])} drivers."}


INPUTS = {
    "kart_01": _request("G-701", "2026-07-04"),
    "kart_02": _request("G-702", "2026-07-04"),
    "kart_03": _request("G-704", "2026-07-11"),
    "kart_04": _request("G-705", "2026-07-11"),
    "kart_05": _request("G-703", "2026-07-18"),
}
REFS = [_request("G-706", "2026-06-20"), _request("G-707", "2026-06-20"), _request("G-708", "2026-06-27"),
        _request("G-710", "2026-06-27")]
CASES = [
    {"case": "kart_01", "kind": "wrong_retrieval", "root": {"name": "search_rules"}, "failure": {"name": "validate_session"},
     "description": "The rules search returns the indoor circuit's sheet (12 karts a heat) for an outdoor booking, so all 10 drivers are put in one heat over the outdoor limit of 8."},
    {"case": "kart_02", "kind": "subagent_wrong_entity", "root": {"name": "load_group"}, "failure": {"name": "validate_session"},
     "description": "The kart allocation sub-graph loads the group of the previous booking (G-701) instead of G-702, and the session runs with drivers who did not book."},
    {"case": "kart_03", "kind": "tool_ignores_argument", "root": {"name": "assign_kart", "occurrence": 3},
     "failure": {"name": "validate_session"},
     "description": "The kart assignment tool ignores its ballast_kg argument and fits no ballast, so a driver under 80 kg races underweight."},
    {"case": "kart_04", "kind": "truncated_result", "root": {"name": "fetch_lap_times", "occurrence": 2},
     "failure": {"name": "validate_session"},
     "description": "The timing system returns only the first page (10 of 12 laps) for heat 2, and the standings count 10 laps for those drivers."},
    {"case": "kart_05", "kind": "format_drift", "root": {"name": "ChatOpenAI", "occurrence": 2},
     "failure": {"name": "validate_session"},
     "description": "The results summary writes the fastest lap as m:ss.mmm instead of seconds, and the summary parser reads 1:01.664 as 1.664 s."},
]


class KartState(TypedDict, total=False):
    request: dict
    booking_ref: dict
    rules: dict
    allocation: list
    heats: list
    laps: list
    standings: list
    summary: dict


class AllocState(TypedDict, total=False):
    group: str
    booking: dict
    drivers: list
    fleet: list
    allocation: list


@tool
def fetch_booking(group: str) -> dict:
    """Fetch a group booking from the booking system."""
    b = BOOKINGS[group]
    return {"group": group, "package": b["package"], "drivers": [d["name"] for d in b["drivers"]],
            "kart": "390cc", "min_weight_kg": 80}


@tool
def search_rules(query: str) -> dict:
    """Search the track's rule sheets."""
    layout = "indoor" if kit.on("kart_01") else ("outdoor" if "outdoor" in query else "indoor")
    return {"sheet": f"{layout} grand prix", **RULES[layout]}


@tool
def group_registry(group: str) -> dict:
    """Read a group's registered drivers (weights and ages)."""
    return {"group": group, "drivers": BOOKINGS[group]["drivers"]}


@tool
def kart_fleet(kart_class: str) -> list:
    """List the karts of a class that are serviceable today."""
    return [k for k in FLEET if k["class"] == kart_class]


@tool
def assign_kart(driver: str, kart: str, ballast_kg: int) -> dict:
    """Assign a kart to a driver and fit ballast."""
    fitted = 0 if kit.on("kart_03") else ballast_kg
    return {"driver": driver, "kart": kart, "ballast": fitted}


@tool
def build_heats(drivers: list, heat_size: int) -> list:
    """Split the drivers into heats of at most heat_size."""
    n = -(-len(drivers) // heat_size)
    return [drivers[i::n] for i in range(n)]


@tool
def fetch_lap_times(heat: int, drivers: list, laps: int) -> dict:
    """Fetch the timing system's lap times for a heat."""
    page = 10 if (kit.on("kart_04") and heat == 2) else laps
    return {"heat": heat, "laps": {d: [_lap(d, i) for i in range(1, page + 1)] for d in drivers}}


def build(llm):
    # ---- the kart allocation sub-graph ----
    def load_group(state: AllocState) -> dict:
        group = state["group"]
        if kit.on("kart_02"):
            group = f"G-{int(group[2:]) - 1}"
        return {"drivers": group_registry.invoke({"group": group})["drivers"]}

    def load_fleet(state: AllocState) -> dict:
        return {"fleet": kart_fleet.invoke({"kart_class": state["booking"]["kart"]})}

    def assign(state: AllocState) -> dict:
        out = []
        for d, k in zip(state["drivers"], state["fleet"]):
            ballast = max(0, state["booking"]["min_weight_kg"] - d["weight_kg"])
            out.append({**assign_kart.invoke({"driver": d["name"], "kart": k["kart"], "ballast_kg": ballast}),
                        "weight_kg": d["weight_kg"]})
        return {"allocation": out}

    sub = StateGraph(AllocState)
    sub.add_node("load_group", load_group)
    sub.add_node("load_fleet", load_fleet)
    sub.add_node("assign", assign)
    sub.add_edge(START, "load_group")
    sub.add_edge("load_group", "load_fleet")
    sub.add_edge("load_fleet", "assign")
    sub.add_edge("assign", END)
    alloc_graph = sub.compile()

    # ---- the main graph ----
    def read_request(state: KartState) -> dict:
        r = llm.invoke([("system", "[read_request] Extract group, circuit and package from the request as JSON."),
                        ("user", state["request"]["text"])])
        return {"booking_ref": json.loads(r.content)}

    def booking(state: KartState) -> dict:
        ref = state["booking_ref"]
        booking = fetch_booking.invoke({"group": ref["group"]})
        return {"booking_ref": {**ref, **booking}}

    def allocate_karts(state: KartState) -> dict:
        ref = state["booking_ref"]
        out = alloc_graph.invoke({"group": ref["group"], "booking": {"kart": ref["kart"], "min_weight_kg": ref["min_weight_kg"]}})
        return {"allocation": out["allocation"]}

    def heats(state: KartState) -> dict:
        ref = state["booking_ref"]
        rules = search_rules.invoke({"query": f"{ref['circuit']} {ref['package']} race format"})
        names = [a["driver"] for a in state["allocation"]]
        return {"rules": rules, "heats": build_heats.invoke({"drivers": names, "heat_size": rules["max_heat_size"]})}

    def lap_times(state: KartState) -> dict:
        laps = []
        for i, h in enumerate(state["heats"], 1):
            laps.append(fetch_lap_times.invoke({"heat": i, "drivers": h, "laps": state["rules"]["race_laps"]}))
        return {"laps": laps}

    def standings(state: KartState) -> dict:
        rows = []
        for heat in state["laps"]:
            for d, times in heat["laps"].items():
                rows.append({"driver": d, "heat": heat["heat"], "laps": len(times), "best": min(times),
                             "total": round(sum(times), 3)})
        rows.sort(key=lambda r: (-r["laps"], r["total"]))
        return {"standings": rows}

    def summarise(state: KartState) -> dict:
        r = llm.invoke([("system", "[results] Summarise the results: winner and fastest lap in seconds, one per line."),
                        ("user", json.dumps({"standings": state["standings"]}))])
        return {"summary": {"text": r.content}}

    def parse_summary(state: KartState) -> dict:
        text = state["summary"]["text"]
        winner = re.search(r"Winner: (.+)", text).group(1).strip()
        m = re.search(r"Fastest lap: ([\d:.]+) s? ?by (.+)", text)
        best = float(m.group(1).split(":")[-1])
        return {"summary": {"winner": winner, "fastest_lap": best, "fastest_by": m.group(2).strip()}}

    def validate_session(state: KartState) -> dict:
        rules, alloc, ref = state["rules"], state["allocation"], state["booking_ref"]
        for i, h in enumerate(state["heats"], 1):
            if len(h) > RULES[ref["circuit"]]["max_heat_size"]:
                raise ValueError(f"heat {i} has {len(h)} karts on the {ref['circuit']} circuit (limit {RULES[ref['circuit']]['max_heat_size']})")
        booked = set(ref["drivers"])
        for a in alloc:
            if a["driver"] not in booked:
                raise ValueError(f"driver {a['driver']} has a kart but is not in booking {ref['group']}")
            if a["weight_kg"] + a["ballast"] < RULES[ref["circuit"]]["min_weight_kg"]:
                raise ValueError(f"driver {a['driver']} races at {a['weight_kg'] + a['ballast']} kg with ballast, minimum 80 kg")
        for row in state["standings"]:
            if row["laps"] != RULES[ref["circuit"]]["race_laps"]:
                raise ValueError(f"{row['driver']} has {row['laps']} laps in the standings, race distance {RULES[ref['circuit']]['race_laps']}")
        s = state["summary"]
        best = min(state["standings"], key=lambda r: r["best"])
        if s["winner"] != state["standings"][0]["driver"] or abs(s["fastest_lap"] - best["best"]) > 0.001:
            raise ValueError(f"summary fastest lap {s['fastest_lap']} s by {s['fastest_by']}, timing shows {best['best']} s by {best['driver']}")
        return {}

    g = StateGraph(KartState)
    for name, fn in [("read_request", read_request), ("booking", booking), ("parse_summary", parse_summary),
                     ("allocate_karts", allocate_karts), ("heats", heats), ("lap_times", lap_times),
                     ("standings", standings), ("summarise", summarise), ("validate_session", validate_session)]:
        g.add_node(name, fn)
    order = ["read_request", "booking", "allocate_karts", "heats", "lap_times", "standings", "summarise", "parse_summary",
             "validate_session"]
    g.add_edge(START, order[0])
    for a, b in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1], END)
    return g.compile()


def brain(inp):
    def read(req):
        text = kit.last_user(req)
        return json.dumps({"group": re.search(r"group (G-\d+)", text).group(1), "circuit": "outdoor", "package": "grand prix"})

    def results(req):
        rows = kit.json_in(kit.last_user(req))["standings"]
        best = min(rows, key=lambda r: r["best"])
        lap = best["best"]
        shown = f"{int(lap // 60)}:{lap % 60:06.3f}" if kit.on("kart_05") else f"{lap:.3f}"
        return f"Winner: {rows[0]['driver']}\nFastest lap: {shown} s by {best['driver']}"

    return kit.Brain({"read_request": read, "results": results})


def record(inp: dict, server, path: Path) -> None:
    server.use(brain(inp))
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"run the grand prix session of {inp['group']} on {inp['date']}")
    try:
        build(llm).invoke({"request": inp}, config={"callbacks": [tracer]})
    except ValueError:
        pass  # the validator node's rejection fails the run; the tracer records it
