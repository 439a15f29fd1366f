"""Canal lock-flight passage booking (LangGraph + langchain-openai, recorded by TrajdebugTracer).

A navigator agent (model + ToolNode loop: boat record and lock flight in parallel, stoppage notices,
pound levels), a node remembering the boat, a model classifying the vessel and a conditional edge routing
to the self-service or the lock-keeper branch (each calling a tool), the lock schedule, the draft check,
a model composing the booking, a parse node and the Canal Trust's booking tool.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, TypedDict

from benchmarks.heldout.suite_o import kit
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.testing import Reply, tool_call


NAME = "canal-lock-booking"
ROUTE = "langgraph"
DOMAIN = "canal lock-flight passage booking"
SHAPE = "LangGraph: intake, navigator model <-> ToolNode loop (parallel calls), memory node, classifier model + conditional routing to one of two tool-calling branches, schedule, check, composer model, parse, booking tool"

FLIGHTS = {
    "caen-hill": {"waterway": "Kennet and Avon", "first": 17, "last": 32, "prefix": "C", "chamber_m": 2.13},
    "tardebigge": {
        "waterway": "Worcester and Birmingham",
        "first": 30,
        "last": 58,
        "prefix": "T",
        "chamber_m": 2.18,
    },
    "bingley": {"waterway": "Leeds and Liverpool", "first": 1, "last": 5, "prefix": "B", "chamber_m": 4.27},
    "hatton": {"waterway": "Grand Union", "first": 26, "last": 46, "prefix": "H", "chamber_m": 4.42},
}

BOATS = {
    "NB-51877": {
        "name": "Kingfisher Lady",
        "beam_m": 2.08,
        "draft_m": 0.62,
        "length_m": 17.4,
        "licence": "LIC-88213",
        "expires": "2026-11-30",
    },
    "WB-20931": {
        "name": "Broad Horizon",
        "beam_m": 3.95,
        "draft_m": 0.70,
        "length_m": 18.0,
        "licence": "LIC-90457",
        "expires": "2027-02-28",
    },
    "NB-60412": {
        "name": "Tilly Mint",
        "beam_m": 2.06,
        "draft_m": 0.58,
        "length_m": 15.2,
        "licence": "LIC-71130",
        "expires": "2026-09-30",
    },
    "WB-33185": {
        "name": "Otter's Rest",
        "beam_m": 3.40,
        "draft_m": 0.66,
        "length_m": 16.5,
        "licence": "LIC-93302",
        "expires": "2026-12-31",
    },
    "NB-47709": {
        "name": "Morning Heron",
        "beam_m": 2.07,
        "draft_m": 0.64,
        "length_m": 20.1,
        "licence": "LIC-84519",
        "expires": "2027-01-31",
    },
}
OLD_LICENCES = {"LIC-55102": "2025-12-31", "LIC-61877": "2025-10-31", "LIC-49920": "2026-01-31"}

INPUTS = {
    "kingfisher": {
        "reg": "NB-51877",
        "flight": "caen-hill",
        "date": "2026-04-09",
        "arrival": "09:15",
        "last_trip": {"date": "2025-08-14", "licence": "LIC-55102"},
    },
    "broad": {
        "reg": "WB-20931",
        "flight": "bingley",
        "date": "2026-04-11",
        "arrival": "10:00",
        "last_trip": {"date": "2025-09-02", "licence": "LIC-61877"},
    },
    "tilly": {
        "reg": "NB-60412",
        "flight": "tardebigge",
        "date": "2026-04-15",
        "arrival": "08:45",
        "last_trip": {"date": "2025-07-21", "licence": "LIC-49920"},
    },
    "otter": {
        "reg": "WB-33185",
        "flight": "hatton",
        "date": "2026-04-18",
        "arrival": "09:30",
        "last_trip": {"date": "2025-10-05", "licence": "LIC-61877"},
    },
    "heron": {
        "reg": "NB-47709",
        "flight": "caen-hill",
        "date": "2026-04-22",
        "arrival": "10:30",
        "last_trip": {"date": "2025-06-30", "licence": "LIC-55102"},
    },
    "tilly2": {
        "reg": "NB-60412",
        "flight": "hatton",
        "date": "2026-04-25",
        "arrival": "09:00",
        "last_trip": {"date": "2026-04-15", "licence": "LIC-49920"},
    },
}

STOPPAGES = {
    "Kennet and Avon": [
        ("C-12", "2026-04-09", "all day"),
        ("C-41", "2026-04-09", "all day"),
        ("C-44", "2026-04-22", "all day"),
        ("C-29", "2026-04-09", "08:00-12:00"),
        ("C-20", "2026-04-22", "07:00-09:00"),
    ],
    "Worcester and Birmingham": [
        ("T-12", "2026-04-15", "all day"),
        ("T-44", "2026-04-15", "07:00-09:30"),
        ("T-61", "2026-04-16", "all day"),
        ("T-27", "2026-04-15", "all day"),
    ],
    "Leeds and Liverpool": [
        ("B-9", "2026-04-11", "all day"),
        ("B-21", "2026-04-11", "all day"),
        ("B-3", "2026-04-11", "09:00-10:30"),
    ],
    "Grand Union": [
        ("H-10", "2026-04-18", "all day"),
        ("H-52", "2026-04-18", "all day"),
        ("H-30", "2026-04-25", "08:00-11:00"),
        ("H-47", "2026-04-25", "all day"),
    ],
}

FAULTS = [
    {
        "id": "canal.lock_numbers",
        "kind": "off_by_one",
        "input": "tilly",
        "root": "schedule_locks",
        "marker": "T-59",
        "note": "the schedule numbers the flight's locks from first+1 to last+1",
    },
    {
        "id": "canal.vessel_class",
        "kind": "wrong_routing",
        "input": "broad",
        "root": "ChatOpenAI",
        "marker": "narrowboat",
        "note": "the classifier model calls a 3.95 m beam boat a narrowboat, so the graph routes to self-service",
    },
    {
        "id": "canal.notice_page",
        "kind": "truncated_result",
        "input": "kingfisher",
        "root": "get_stoppages",
        "marker": "eyJvZmZzZXQiOjN9",
        "note": "the notices service returns its first page only",
    },
    {
        "id": "canal.licence_merge",
        "kind": "bad_memory_write",
        "input": "heron",
        "root": "remember_boat",
        "marker": "LIC-55102",
        "note": "the memory node lets the last trip's licence override the fresh boat record",
    },
    {
        "id": "canal.arrival_time",
        "kind": "hallucinated_value",
        "input": "otter",
        "root": "ChatOpenAI",
        "marker": "07:40",
        "note": "the composer model states an arrival time no input holds",
    },
]


def task(inp: dict) -> str:
    return f"Book {inp['reg']} through the {inp['flight']} flight on {inp['date']}, arriving {inp['arrival']}"


def _notices(waterway: str) -> list[dict]:
    return [
        {"notice": f"stp-{i + 1:04d}", "structure": s, "date": d, "window": w}
        for i, (s, d, w) in enumerate(STOPPAGES[waterway])
    ]


@tool
def get_boat_record(reg: str) -> str:
    """The registry record of a boat."""
    return json.dumps({"reg": reg, **BOATS[reg]})


@tool
def get_lock_flight(flight: str) -> str:
    """The locks of a flight."""
    f = FLIGHTS[flight]
    return json.dumps({"flight": flight, **f, "locks": f["last"] - f["first"] + 1})


@tool
def get_stoppages(waterway: str) -> str:
    """Stoppage notices on a waterway."""
    notices = _notices(waterway)
    if kit.active("canal.notice_page"):
        return json.dumps({"waterway": waterway, "notices": notices[:3], "next_cursor": "eyJvZmZzZXQiOjN9"})
    return json.dumps({"waterway": waterway, "notices": notices, "next_cursor": None})


@tool
def get_water_levels(flight: str) -> str:
    """Pound levels (m) above each lock of a flight."""
    f = FLIGHTS[flight]
    return json.dumps(
        {f"{f['prefix']}-{n}": round(1.1 + (n % 5) * 0.07, 2) for n in range(f["first"], f["last"] + 1)}
    )


@tool
def reserve_self_service(flight: str, reg: str, beam_m: float) -> str:
    """Reserve self-service passage (single chambers)."""
    width = FLIGHTS[flight]["chamber_m"]
    if beam_m > min(width, 2.2):
        raise RuntimeError(f"lock office: 422 self-service passage on {flight} not available for this vessel")
    return json.dumps({"flight": flight, "reg": reg, "mode": "self-service", "ref": f"SS-{reg[-4:]}"})


@tool
def request_lockkeeper(flight: str, reg: str, date: str) -> str:
    """Request an assisted passage with a lock-keeper."""
    return json.dumps(
        {"flight": flight, "reg": reg, "mode": "assisted", "ref": f"LK-{reg[-4:]}-{date[5:7]}{date[8:]}"}
    )


@tool
def book_passage(reg: str, licence: str, flight: str, date: str, arrival: str, slots: list) -> str:
    """Book the passage with the Canal Trust."""
    f = FLIGHTS[flight]
    known = {f"{f['prefix']}-{n}" for n in range(f["first"], f["last"] + 1)}
    expiry = {b["licence"]: b["expires"] for b in BOATS.values()} | OLD_LICENCES
    if expiry.get(licence, "0000") < date:
        raise RuntimeError(f"canal trust: 403 licence {licence} not valid on {date}")
    if arrival < "08:00":
        raise RuntimeError(f"canal trust: 422 arrival {arrival} outside lock operating hours")
    for slot in slots:
        if slot["lock"] not in known:
            raise RuntimeError(f"canal trust: 404 structure {slot['lock']} not found on {flight}")
        for n in _notices(f["waterway"]):
            hit = n["structure"] == slot["lock"] and n["date"] == date
            if hit and (n["window"] == "all day" or n["window"][:5] <= slot["time"] < n["window"][6:]):
                raise RuntimeError(f"canal trust: 409 {slot['lock']} closed {n['window']} on {date}")
    return json.dumps({"booking": f"CRT-{reg[-5:]}-{date.replace('-', '')}", "locks": len(slots)})


NAV_SYS = (
    "You are a canal navigation assistant. Gather the boat record, the flight, stoppages and pound levels."
)
CLASS_SYS = "Classify the vessel for lock passage. Answer with one word."
COMPOSE_SYS = "Compose the Canal Trust booking request as JSON."


def policy(request: Any) -> Any:
    c = kit.Convo(request)
    if c.system.startswith("You are a canal navigation"):
        req = json.loads(c.user)
        if not c.called("get_boat_record"):
            return Reply(
                tool_calls=(
                    tool_call("get_boat_record", {"reg": req["reg"]}),
                    tool_call("get_lock_flight", {"flight": req["flight"]}),
                )
            )
        if not c.called("get_stoppages"):
            return Reply(
                tool_calls=(
                    tool_call("get_stoppages", {"waterway": c.result("get_lock_flight")["waterway"]}),
                )
            )
        if not c.called("get_water_levels"):
            return Reply(tool_calls=(tool_call("get_water_levels", {"flight": req["flight"]}),))
        return "Boat record, flight, notices and pound levels gathered."
    facts = json.loads(c.last.get("content") or "{}")
    if c.system.startswith("Classify"):
        wide = facts["beam_m"] > 2.2 and not kit.active("canal.vessel_class")
        return "widebeam" if wide else "narrowboat"
    arrival = "07:40" if kit.active("canal.arrival_time") else facts["arrival"]
    return json.dumps(
        {"reg": facts["reg"], "licence": facts["licence"], "arrival": arrival, "mode": facts["mode"]}
    )


class Passage(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    request: dict
    boat: dict
    vessel_class: str
    reservation: dict
    slots: list
    booking: dict


def build(base_url: str) -> Any:
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(
        base_url=base_url, api_key="not-needed", model="fake-model", max_retries=0, temperature=0
    )
    tools = [get_boat_record, get_lock_flight, get_stoppages, get_water_levels]
    nav_llm = llm.bind_tools(tools)

    def found(state: Passage, name: str) -> Any:
        return next(
            json.loads(m.content)
            for m in reversed(state["messages"])
            if isinstance(m, ToolMessage) and m.name == name
        )

    def intake(state: Passage) -> dict:
        r = state["request"]
        return {
            "messages": [
                SystemMessage(NAV_SYS),
                HumanMessage(json.dumps({k: r[k] for k in ("reg", "flight", "date", "arrival")})),
            ]
        }

    def navigator(state: Passage) -> dict:
        return {"messages": [nav_llm.invoke(state["messages"])]}

    def remember_boat(state: Passage) -> dict:
        record = found(state, "get_boat_record")
        boat = {k: record[k] for k in ("reg", "name", "beam_m", "draft_m", "licence")}
        if kit.active("canal.licence_merge"):
            boat["licence"] = state["request"]["last_trip"]["licence"]
        return {"boat": boat}

    def classify(state: Passage) -> dict:
        reply = llm.invoke([SystemMessage(CLASS_SYS), HumanMessage(json.dumps(state["boat"]))])
        return {"vessel_class": reply.content.strip()}

    def self_service(state: Passage) -> dict:
        b = state["boat"]
        return {
            "reservation": json.loads(
                reserve_self_service.invoke(
                    {"flight": state["request"]["flight"], "reg": b["reg"], "beam_m": b["beam_m"]}
                )
            )
        }

    def lockkeeper(state: Passage) -> dict:
        r = state["request"]
        return {
            "reservation": json.loads(
                request_lockkeeper.invoke({"flight": r["flight"], "reg": r["reg"], "date": r["date"]})
            )
        }

    def schedule_locks(state: Passage) -> dict:
        r = state["request"]
        flight = found(state, "get_lock_flight")
        notices = found(state, "get_stoppages")["notices"]
        start = r["arrival"]
        for n in notices:
            if (
                n["date"] == r["date"]
                and n["window"] != "all day"
                and n["window"][:5] <= start < n["window"][6:]
            ):
                start = n["window"][6:]
        lo, hi = flight["first"], flight["last"]
        if kit.active("canal.lock_numbers"):
            lo, hi = lo + 1, hi + 1
        h, m = int(start[:2]), int(start[3:])
        slots = []
        for i, n in enumerate(range(lo, hi + 1)):
            t = h * 60 + m + 12 * i
            slots.append({"lock": f"{flight['prefix']}-{n}", "time": f"{t // 60:02d}:{t % 60:02d}"})
        return {"slots": slots}

    def check_draft(state: Passage) -> dict:
        levels = found(state, "get_water_levels")
        for slot in state["slots"]:
            level = levels.get(slot["lock"])
            if level is None:
                raise LookupError(
                    f"pound level unknown above {slot['lock']}; draft clearance cannot be confirmed"
                )
            if level - state["boat"]["draft_m"] < 0.3:
                raise ValueError(f"draft clearance under 0.3 m above {slot['lock']}")
        return {}

    def compose(state: Passage) -> dict:
        facts = {**state["boat"], "arrival": state["slots"][0]["time"], "mode": state["reservation"]["mode"]}
        return {"messages": [llm.invoke([SystemMessage(COMPOSE_SYS), HumanMessage(json.dumps(facts))])]}

    def parse_booking(state: Passage) -> dict:
        return {"booking": json.loads(state["messages"][-1].content)}

    def submit(state: Passage) -> dict:
        b, r = state["booking"], state["request"]
        out = book_passage.invoke(
            {
                "reg": b["reg"],
                "licence": b["licence"],
                "flight": r["flight"],
                "date": r["date"],
                "arrival": b["arrival"],
                "slots": state["slots"],
            }
        )
        return {"booking": {**b, **json.loads(out)}}

    g = StateGraph(Passage)
    for name, fn in [
        ("intake", intake),
        ("navigator", navigator),
        ("remember_boat", remember_boat),
        ("classify", classify),
        ("self_service", self_service),
        ("lockkeeper", lockkeeper),
        ("schedule_locks", schedule_locks),
        ("check_draft", check_draft),
        ("compose", compose),
        ("parse_booking", parse_booking),
        ("submit", submit),
    ]:
        g.add_node(name, fn)
    g.add_node("tools", ToolNode(tools))
    g.add_edge(START, "intake")
    g.add_edge("intake", "navigator")
    g.add_conditional_edges(
        "navigator",
        lambda s: "tools" if s["messages"][-1].tool_calls else "remember_boat",
        ["tools", "remember_boat"],
    )
    g.add_edge("tools", "navigator")
    g.add_edge("remember_boat", "classify")
    g.add_conditional_edges(
        "classify",
        lambda s: "lockkeeper" if s["vessel_class"] == "widebeam" else "self_service",
        ["lockkeeper", "self_service"],
    )
    g.add_edge("self_service", "schedule_locks")
    g.add_edge("lockkeeper", "schedule_locks")
    for a, b in [
        ("schedule_locks", "check_draft"),
        ("check_draft", "compose"),
        ("compose", "parse_booking"),
        ("parse_booking", "submit"),
    ]:
        g.add_edge(a, b)
    g.add_edge("submit", END)
    return g.compile()


def invoke(base_url: str, inp: dict, callbacks: list) -> None:
    build(base_url).invoke({"request": inp}, config={"callbacks": callbacks, "run_name": NAME})
