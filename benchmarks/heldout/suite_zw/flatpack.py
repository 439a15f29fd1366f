"""Flat-pack furniture assembly: a LangGraph job scheduler with a manual retriever and an estimate parser."""

from __future__ import annotations

import json
import re
from typing import TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, last_user_json
from .kit import active

NAME = "flatpack-assembly-scheduler"
ROUTE = "langgraph"
DOMAIN = "flat-pack furniture assembly"
EXT = "jsonl"
SHAPE = ("order tool -> expand units -> per-SKU parts tool loop -> per-SKU manual retriever loop -> estimate LLM | "
         "estimate parser -> triage -> fitter slots tool -> confirm job")

MANUALS = {
    "PAX-236": {"title": "PAX wardrobe frame 236 cm", "minutes": 150, "fitters": 2, "wall_anchor": True},
    "PAX-201": {"title": "PAX wardrobe frame 201 cm", "minutes": 120, "fitters": 1, "wall_anchor": True},
    "MALM-6": {"title": "MALM chest of 6 drawers", "minutes": 95, "fitters": 1, "wall_anchor": True},
    "KALLAX-4": {"title": "KALLAX shelf unit 4x4", "minutes": 55, "fitters": 1, "wall_anchor": False},
    "HEMNES-BED": {"title": "HEMNES bed frame", "minutes": 80, "fitters": 2, "wall_anchor": False},
    "BILLY-80": {"title": "BILLY bookcase 80 cm", "minutes": 40, "fitters": 1, "wall_anchor": True},
    "LACK-T": {"title": "LACK coffee table", "minutes": 15, "fitters": 1, "wall_anchor": False},
}
INPUTS = {
    "ord_7731": {"order": "ORD-7731", "date": "2026-12-08", "lines": [("PAX-236", 1), ("MALM-6", 1), ("KALLAX-4", 2)]},
    "ord_7802": {"order": "ORD-7802", "date": "2026-12-09", "lines": [("BILLY-80", 3), ("HEMNES-BED", 1),
                                                                     ("LACK-T", 1)]},
    "ord_7810": {"order": "ORD-7810", "date": "2026-12-10", "lines": [("KALLAX-4", 1), ("LACK-T", 2)]},
    "ord_7844": {"order": "ORD-7844", "date": "2026-12-11", "lines": [("PAX-201", 2), ("BILLY-80", 1)]},
    "ord_7859": {"order": "ORD-7859", "date": "2026-12-12", "lines": [("HEMNES-BED", 1), ("MALM-6", 2)]},
    "ord_7903": {"order": "ORD-7903", "date": "2026-12-14", "lines": [("LACK-T", 1), ("BILLY-80", 2),
                                                                     ("KALLAX-4", 1)]},
}
REFS = ["ord_7810", "ord_7844", "ord_7859", "ord_7903"]

CASES = [
    Case("zw_flat_minutes", "lossy_parsing", "ord_7731", "EstimateParser", 1, "parse", "confirm_job", 1,
         "The estimate parser reads '6 h 40 min' as 6 h, dropping the minutes, so the booked duration is short."),
    Case("zw_flat_manual", "wrong_retrieval", "ord_7731", "ManualRetriever", 1, "retrieval", "confirm_job", 1,
         "The manual search for PAX-236 returns the PAX-201 manual (120 min, one fitter), so the job is estimated and booked short."),
    Case("zw_flat_units", "off_by_one", "ord_7802", "expand_items", 1, "other", "confirm_job", 1,
         "Expanding order lines into units stops one short on the three BILLY bookcases."),
    Case("zw_flat_service", "wrong_routing", "ord_7802", "triage", 1, "other", "confirm_job", 1,
         "Triage routes an order with wall-anchored units to the kerbside drop service."),
    Case("zw_flat_slot", "format_drift", "ord_7731", "fitter_slots", 1, "tool", "confirm_job", 1,
         "The slot service starts returning the start time as '9:30 AM' instead of ISO 8601."),
]


class JobRejected(RuntimeError):
    pass


def _policy(req):
    data = last_user_json(req.body or {})
    total = sum(m["minutes"] * m["units"] for m in data.get("manuals", []))
    fitters = max((m["fitters"] for m in data.get("manuals", [])), default=1)
    return f"Estimate: {total // 60} h {total % 60} min total; fitters: {fitters}; units: {data.get('units', 0)}"


@tool
def order_lookup(order_id: str) -> str:
    """Fetch an order's lines and delivery details."""
    inp = next(v for v in INPUTS.values() if v["order"] == order_id)
    return json.dumps({"order": order_id, "lines": [{"sku": s, "qty": q} for s, q in inp["lines"]],
                       "floor": 2, "lift": False})


@tool
def parts_manifest(sku: str) -> str:
    """The parts bag list for a SKU."""
    return json.dumps({"sku": sku, "bags": ["A", "B", "C"] if sku.startswith("PAX") else ["A", "B"],
                       "fixings": 24 if MANUALS[sku]["wall_anchor"] else 12})


@tool
def fitter_slots(date: str, minutes: int, fitters: int) -> str:
    """Free fitter slots on a date long enough for a job."""
    start = "9:30 AM" if active("zw_flat_slot") else f"{date}T09:30:00"
    return json.dumps({"date": date, "slots": [{"start": start, "team": f"T{fitters}-north",
                                                "minutes": minutes, "fitters": fitters}]})


class ManualRetriever(BaseRetriever):
    """Assembly manual search by SKU."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        sku = query
        if sku == "PAX-236" and active("zw_flat_manual"):
            sku = "PAX-201"
        m = MANUALS[sku]
        return [Document(page_content=f"{m['title']}: {m['minutes']} min, {m['fitters']} fitter(s)",
                         metadata={"sku": sku, **m})]


class EstimateParser(BaseOutputParser[dict]):
    """Parse the estimator's 'Estimate: H h M min total; fitters: N' line."""

    def parse(self, text: str) -> dict:
        h = int(re.search(r"(\d+) h", text).group(1))
        mins = h * 60
        if not active("zw_flat_minutes"):
            mins += int(re.search(r"(\d+) min", text).group(1))
        fitters = int(re.search(r"fitters: (\d+)", text).group(1))
        return {"minutes": mins, "fitters": fitters}


class State(TypedDict, total=False):
    request: dict
    order: dict
    units: list
    parts: dict
    manuals: dict
    estimate: dict
    service: str
    slot: dict
    result: dict


def build(server):
    llm = ChatOpenAI(model="assembly-estimator", base_url=server.base_url, api_key="test", max_retries=0)
    retriever = ManualRetriever()

    def fetch_order(state: State) -> dict:
        return {"order": json.loads(order_lookup.invoke({"order_id": state["request"]["order"]}))}

    def expand_items(state: State) -> dict:
        units = []
        for line in state["order"]["lines"]:
            n = line["qty"] - 1 if (active("zw_flat_units") and line["qty"] > 2) else line["qty"]
            units.extend([line["sku"]] * n)
        return {"units": units}

    def parts(state: State) -> dict:
        out = {}
        for sku in dict.fromkeys(state["units"]):
            out[sku] = json.loads(parts_manifest.invoke({"sku": sku}))
        return {"parts": out}

    def manuals(state: State) -> dict:
        out = {}
        for sku in dict.fromkeys(state["units"]):
            doc = retriever.invoke(sku)[0]
            out[sku] = dict(doc.metadata)
        return {"manuals": out}

    def estimate(state: State) -> dict:
        counts = {s: state["units"].count(s) for s in dict.fromkeys(state["units"])}
        payload = {"units": len(state["units"]),
                   "manuals": [{"sku": s, "minutes": m["minutes"], "fitters": m["fitters"], "units": counts[s]}
                               for s, m in state["manuals"].items()]}
        chain = llm | EstimateParser()
        est = chain.invoke([SystemMessage("Estimate assembly time for a fitter team."),
                            HumanMessage(json.dumps(payload))])
        return {"estimate": est}

    def triage(state: State) -> dict:
        anchored = any(m["wall_anchor"] for m in state["manuals"].values())
        service = "in_home_assembly" if anchored else "in_home_assembly_no_drill"
        if active("zw_flat_service"):
            service = "kerbside_drop"
        return {"service": service}

    def slots(state: State) -> dict:
        est = state["estimate"]
        found = json.loads(fitter_slots.invoke({"date": state["request"]["date"], "minutes": est["minutes"],
                                                "fitters": est["fitters"]}))
        return {"slot": found["slots"][0]}

    def confirm_job(state: State) -> dict:
        req = state["request"]
        want_units = sum(q for _, q in req["lines"])
        if len(state["units"]) != want_units:
            raise JobRejected(f"400 Bad Request: job lists {len(state['units'])} units, order {req['order']} has "
                              f"{want_units}")
        need = sum(MANUALS[s]["minutes"] * q for s, q in req["lines"])
        if state["estimate"]["minutes"] < need:
            raise JobRejected(f"422 Unprocessable Entity: job duration {state['estimate']['minutes']} min is below "
                              f"the manual total of {need} min for {req['order']}")
        fitters = max(MANUALS[s]["fitters"] for s, _ in req["lines"])
        if state["slot"]["fitters"] < fitters:
            raise JobRejected(f"422 Unprocessable Entity: a {state['slot']['fitters']}-fitter team cannot assemble "
                              f"{req['order']}; a unit needs {fitters} fitters")
        if any(MANUALS[s]["wall_anchor"] for s, _ in req["lines"]) and state["service"] == "kerbside_drop":
            raise JobRejected(f"409 Conflict: service '{state['service']}' cannot include wall anchoring required "
                              f"by {req['order']}")
        if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", state["slot"]["start"]):
            raise JobRejected(f"400 Bad Request: slot start '{state['slot']['start']}' is not an ISO 8601 date-time")
        return {"result": {"status": "booked", "job": f"JOB-{req['order'][4:]}", "start": state["slot"]["start"]}}

    g = StateGraph(State)
    for name, fn in [("fetch_order", fetch_order), ("expand_items", expand_items), ("parts", parts),
                     ("manuals", manuals), ("estimate", estimate), ("triage", triage), ("slots", slots),
                     ("confirm_job", confirm_job)]:
        g.add_node(name, fn)
    g.add_edge(START, "fetch_order")
    order = ["fetch_order", "expand_items", "parts", "manuals", "estimate", "triage", "slots", "confirm_job"]
    for a, b in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge("confirm_job", END)
    return g.compile()


def record(inp_id: str, path: str, server) -> None:
    server.use(_policy)
    graph = build(server)
    req = INPUTS[inp_id]
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"assembly job for {req['order']}")
    try:
        graph.invoke({"request": req}, config={"callbacks": [tracer]})
    except JobRejected:
        pass
