"""Home-to-school transport routes (langgraph route): extract the request, roster, policy retriever,
geocoding, stop building, a model stop order, routing engine, own coverage check, operator and MIS APIs."""

from __future__ import annotations

import json
import math
import re
from itertools import pairwise
from pathlib import Path
from typing import TypedDict

from benchmarks.heldout.suite_s import kit
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer


AGENT = "school-transport"
ROUTE = "langgraph"
EXT = "jsonl"
DOMAIN = "home-to-school bus routes for a county council"
SHAPE = "model extraction + parser, roster tool, policy RETRIEVER + parser, geocoding loop (one tool call per pupil), stop builder, model stop order, routing engine tool, coverage check, operator and MIS APIs, model letter"

SCHOOLS = {
    "Fenwick Primary": (54.210, -2.910), "Hollins Academy": (54.250, -2.860), "St Bega's": (54.180, -2.980),
    "Thornby High": (54.300, -2.800),
}
# pupil id -> (name, school, dlat, dlon, terms)
PUPILS = {}
_PLACES = ["Mill Row", "Beck Lane", "Low Fold", "Kirk Brow", "Ghyll Head", "Scar Side", "Moss End", "Howe Rigg"]
for si, school in enumerate(SCHOOLS):
    for k in range(7):
        pid = f"P-{si + 1}{k + 1:02d}"
        PUPILS[pid] = (f"{_PLACES[k]} {si + 1}", school, 0.03 + 0.011 * k, -0.015 + 0.009 * ((k * 3) % 5),
                       {"2025-T3", "2026-T1"} if k not in (0, 6) else ({"2025-T3"} if k == 0 else {"2026-T1"}))
POLICIES = {
    "Westmere": {"id": "POL-WESTMERE-2026", "max_ride_min": 45, "walk_limit_km": 3.2},
    "Northshire": {"id": "POL-NORTHSHIRE-2024", "max_ride_min": 75, "walk_limit_km": 4.8},
}
CONTRACTS = {"Fenwick Primary": "BC-11", "Hollins Academy": "BC-12", "St Bega's": "BC-14", "Thornby High": "BC-17"}


def _request(school, extra=""):
    return f"Please plan the 2026-T1 morning bus for {school} under contract {CONTRACTS[school]} (Westmere council).{extra}"


CASES = [
    {"case": "school_bus_roster_term", "fault": "sb1", "kind": "stale_data", "root": "pupil_roster",
     "fail": "mis_confirm", "marker": "2025-T3", "input": _request("Fenwick Primary")},
    {"case": "school_bus_geocode", "fault": "sb2", "kind": "swallowed_error", "root": "geocode",
     "fail": "route_engine", "marker": '"lat": 0.0', "input": _request("Hollins Academy")},
    {"case": "school_bus_policy_doc", "fault": "sb3", "kind": "wrong_retrieval", "root": "policy_search",
     "fail": "check_coverage", "marker": "POL-NORTHSHIRE-2024", "input": _request("Thornby High", " Late start.")},
    {"case": "school_bus_stop_list", "fault": "sb4", "kind": "off_by_one", "root": "build_stops",
     "fail": "check_coverage", "marker": '"count": 5,', "input": _request("St Bega's")},
    {"case": "school_bus_mileage", "fault": "sb5", "kind": "unit_error", "root": "route_engine",
     "fail": "operator_booking", "marker": "\"distance_km\": 11.29", "input": _request("Hollins Academy", " Wheelchair space needed.")},
]
REFS = [_request("Fenwick Primary", " Two sittings."), _request("St Bega's", " Early finish Fridays."),
        _request("Thornby High"), _request("Hollins Academy", " Two sittings.")]


class TransportError(RuntimeError):
    pass


def _km(a, b):
    dlat = (a[0] - b[0]) * 111.2
    dlon = (a[1] - b[1]) * 111.2 * math.cos(math.radians(a[0]))
    return math.hypot(dlat, dlon)


# ---- tools ------------------------------------------------------------------------------------

@tool
def pupil_roster(school: str, term: str) -> dict:
    """Pupils entitled to transport for a school and term."""
    use = "2025-T3" if kit.active("sb1") else term
    pupils = [{"id": pid, "address": p[0]} for pid, p in PUPILS.items() if p[1] == school and use in p[4]]
    return {"school": school, "term": use, "pupils": pupils}


@tool
def geocode(address: str, school: str) -> dict:
    """Coordinates of a pupil's pickup address."""
    try:
        if kit.active("sb2") and address.startswith("Kirk Brow"):
            raise LookupError(f"address gazetteer has no match for {address}")
        p = next(p for p in PUPILS.values() if p[0] == address)
        base = SCHOOLS[p[1]]
        return {"address": address, "lat": round(base[0] + p[2], 4), "lon": round(base[1] + p[3], 4)}
    except LookupError:
        return {"address": address, "lat": 0.0, "lon": 0.0}


@tool
def route_engine(school: str, stops: list) -> dict:
    """Drive time and distance through the stops to the school."""
    pts = [(s["lat"], s["lon"]) for s in stops] + [SCHOOLS[school]]
    for s in stops:
        if abs(s["lat"]) < 1 and abs(s["lon"]) < 1:
            raise TransportError(f"routing engine: no road network near stop {s['id']} ({s['lat']}, {s['lon']})")
    km = sum(_km(a, b) for a, b in pairwise(pts)) * 1.3
    dist = km / 1.609 if kit.active("sb5") else km
    return {"distance_km": round(dist, 2), "minutes": round(8 + km * 2.1), "stops": len(stops)}


@tool
def operator_booking(contract: str, distance_km: float, minutes: int, max_ride_min: int, school: str) -> dict:
    """Book the route with the bus operator under its contract."""
    survey = round(SURVEY[school], 2)
    if minutes > 60:
        raise TransportError(f"operator {contract}: ride time {minutes} min exceeds the contract cap of 60 min")
    if distance_km < 0.9 * survey:
        raise TransportError(f"operator {contract}: mileage claim {distance_km} km below surveyed route length {survey} km")
    return {"contract": contract, "booked": True, "minutes": minutes}


@tool
def mis_confirm(school: str, term: str, pupil_ids: list) -> dict:
    """Confirm the transport list with the school's MIS."""
    for pid in pupil_ids:
        if term not in PUPILS[pid][4]:
            raise TransportError(f"MIS sync 409: pupil {pid} is not on roll at {school} for {term}")
    return {"school": school, "term": term, "confirmed": len(pupil_ids)}


class PolicyRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        council = "Northshire" if kit.active("sb3") else re.search(r"\((\w+) council\)", query).group(1)
        p = POLICIES[council]
        return [Document(page_content=json.dumps(p), metadata={"id": p["id"], "council": council})]


policy_search = PolicyRetriever().with_config(run_name="policy_search")


# ---- model ------------------------------------------------------------------------------------

def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    if system.startswith("Extract"):
        text = msgs[-1]["content"]
        school = re.search(r"bus for (.+?) under", text).group(1)
        contract = re.search(r"contract (BC-\d+)", text).group(1)
        return json.dumps({"school": school, "term": "2026-T1", "contract": contract, "council": "Westmere"})
    if system.startswith("Order"):
        data = json.loads(msgs[-1]["content"])
        school = SCHOOLS[data["school"]]
        order = sorted(data["stops"], key=lambda s: -_km((s["lat"], s["lon"]), school) if s["lat"] else 0)
        return json.dumps({"order": [s["id"] for s in order]})
    return "Dear parents, the morning bus route is confirmed."


class Bus(TypedDict, total=False):
    text: str
    request: dict
    roster: dict
    policy: dict
    coords: list
    stops: dict
    route: dict
    booking: dict
    letter: str


def _read_request(text: str) -> dict:
    return json.loads(text)


def _read_policy(docs: list) -> dict:
    return json.loads(docs[0].page_content)


def _build_stops(args: dict) -> dict:
    coords, school, walk = args["coords"], SCHOOLS[args["school"]], args["walk_limit_km"]
    start = 1 if kit.active("sb4") else 0
    stops = [{"id": c["id"], "lat": c["lat"], "lon": c["lon"]} for c in coords[start:]
             if not c["lat"] or _km((c["lat"], c["lon"]), school) > walk]
    return {"count": len(stops), "stops": stops}


def _check_coverage(args: dict) -> dict:
    covered = {s["id"] for s in args["stops"]}
    for p in args["pupils"]:
        if p["id"] not in covered:
            raise TransportError(f"coverage check: entitled pupil {p['id']} has no pickup on the planned route")
    return {"covered": len(covered)}


read_request = RunnableLambda(_read_request, name="read_request")
read_policy = RunnableLambda(_read_policy, name="read_policy")
build_stops = RunnableLambda(_build_stops, name="build_stops")
check_coverage = RunnableLambda(_check_coverage, name="check_coverage")


def build(llm):
    def extract(s: Bus) -> dict:
        msg = llm.invoke([SystemMessage("Extract the transport request as JSON."), HumanMessage(s["text"])])
        return {"request": read_request.invoke(msg.content)}

    def roster(s: Bus) -> dict:
        return {"roster": pupil_roster.invoke({"school": s["request"]["school"], "term": s["request"]["term"]})}

    def council_policy(s: Bus) -> dict:
        docs = policy_search.invoke(f"home to school transport policy ({s['request']['council']} council)")
        return {"policy": read_policy.invoke(docs)}

    def locate(s: Bus) -> dict:
        coords = []
        for p in s["roster"]["pupils"]:
            c = geocode.invoke({"address": p["address"], "school": s["request"]["school"]})
            coords.append({"id": p["id"], **c})
        return {"coords": coords}

    def stops(s: Bus) -> dict:
        return {"stops": build_stops.invoke({"coords": s["coords"], "school": s["request"]["school"],
                                             "walk_limit_km": s["policy"]["walk_limit_km"]})}

    def plan(s: Bus) -> dict:
        school = s["request"]["school"]
        msg = llm.invoke([SystemMessage("Order the pickup stops, farthest first. Answer JSON."),
                          HumanMessage(json.dumps({"school": school, "stops": s["stops"]["stops"]}))])
        order = json.loads(msg.content)["order"]
        by_id = {st["id"]: st for st in s["stops"]["stops"]}
        route = route_engine.invoke({"school": school, "stops": [by_id[i] for i in order]})
        return {"route": {**route, "order": order}}

    def check(s: Bus) -> dict:
        check_coverage.invoke({"stops": s["stops"]["stops"], "pupils": s["roster"]["pupils"]})
        return {}

    def book(s: Bus) -> dict:
        req, route = s["request"], s["route"]
        op = operator_booking.invoke({"contract": req["contract"], "distance_km": route["distance_km"],
                                      "minutes": route["minutes"], "max_ride_min": s["policy"]["max_ride_min"],
                                      "school": req["school"]})
        mis = mis_confirm.invoke({"school": req["school"], "term": req["term"], "pupil_ids": route["order"]})
        return {"booking": {"operator": op, "mis": mis}}

    def letter(s: Bus) -> dict:
        msg = llm.invoke([SystemMessage("Write the parents' letter."), HumanMessage(json.dumps(s["booking"]))])
        return {"letter": msg.content}

    g = StateGraph(Bus)
    names = [("extract", extract), ("roster", roster), ("council_policy", council_policy), ("locate", locate),
             ("stops", stops), ("plan", plan), ("check", check), ("book", book), ("letter", letter)]
    for name, fn in names:
        g.add_node(name, fn)
    g.add_edge(START, "extract")
    for (a, _), (b, _) in pairwise(names):
        g.add_edge(a, b)
    g.add_edge("letter", END)
    return g.compile()


def _survey():
    out = {}
    for school, base in SCHOOLS.items():
        pts = sorted([(base[0] + p[2], base[1] + p[3]) for p in PUPILS.values() if p[1] == school and "2026-T1" in p[4]],
                     key=lambda q: -_km(q, base))
        pts = [*pts, base]
        out[school] = sum(_km(a, b) for a, b in pairwise(pts)) * 1.3
    return out


SURVEY = _survey()


def record(text: str, path: Path, server) -> None:
    server.use(policy)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="transport-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task="plan a school bus route")
    try:
        build(llm).invoke({"text": text}, config={"callbacks": [tracer]})
    except TransportError:
        pass
