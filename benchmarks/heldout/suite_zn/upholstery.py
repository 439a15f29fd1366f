"""Furniture upholstery workshop (LangGraph + ChatOpenAI + TrajdebugTracer, with a foam-cutting subgraph)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.tools import tool

from . import common
from .common import Case
from .kit import active

NAME = "upholstery-workshop"
ROUTE = "langgraph"
DOMAIN = "furniture upholstery"
SHAPE = "intake (llm) -> triage (llm, conditional edge) -> parse_measurements -> fabric_lookup (tool) -> compute_yardage -> validate_cut_plan -> foam_cutter subgraph (llm + cut list) -> remember_job -> workshop slots (tool loop) -> compose_quote (llm) -> book_job (tool)"
MODEL = "upholstery-1"

FABRICS = {"F-1187": {"name": "Linen weave, sage", "width_cm": 137, "repeat_cm": 64, "stock_m": 40},
           "F-2290": {"name": "Velvet, ochre", "width_cm": 140, "repeat_cm": 32, "stock_m": 25},
           "F-3051": {"name": "Wool boucle, oat", "width_cm": 137, "repeat_cm": 0, "stock_m": 30},
           "F-4410": {"name": "Jacquard, teal", "width_cm": 140, "repeat_cm": 48, "stock_m": 18}}
PAST_JOBS = {"CU-88": {"job": "UP-377", "fabric_code": "F-2290"}, "CU-41": {"job": "UP-350", "fabric_code": "F-4410"}}

INPUTS = [
    {"job": "UP-412", "customer": "CU-88", "fabric": "F-1187",
     "pieces": [{"id": "SF-1", "type": "3-seat sofa", "dims": "W 210 x D 92 x H 88 cm", "cushions": 3, "cushion_cm": [62, 58]},
                {"id": "FS-2", "type": "footstool", "dims": "W 60 x D 45 x H 40 cm", "cushions": 1, "cushion_cm": [45, 45]}]},
    {"job": "UP-419", "customer": "CU-41", "fabric": "F-3051",
     "pieces": [{"id": "AC-1", "type": "wing armchair", "dims": "W 84 x D 88 x H 112 cm", "cushions": 1, "cushion_cm": [52, 50]}]},
    {"job": "UP-401", "customer": "CU-12", "fabric": "F-4410",
     "pieces": [{"id": "CH-1", "type": "dining chair", "dims": "W 46 x D 50 x H 92 cm", "cushions": 1, "cushion_cm": [44, 42]}]},
    {"job": "UP-405", "customer": "CU-19", "fabric": "F-2290",
     "pieces": [{"id": "SF-1", "type": "2-seat sofa", "dims": "W 160 x D 88 x H 84 cm", "cushions": 2, "cushion_cm": [60, 56]}]},
    {"job": "UP-408", "customer": "CU-27", "fabric": "F-1187",
     "pieces": [{"id": "OT-1", "type": "ottoman", "dims": "W 90 x D 60 x H 42 cm", "cushions": 1, "cushion_cm": [88, 58]},
                {"id": "CH-2", "type": "slipper chair", "dims": "W 62 x D 70 x H 80 cm", "cushions": 1, "cushion_cm": [50, 48]}]},
    {"job": "UP-415", "customer": "CU-33", "fabric": "F-3051",
     "pieces": [{"id": "DB-1", "type": "daybed", "dims": "W 190 x D 80 x H 70 cm", "cushions": 2, "cushion_cm": [94, 78]}]},
]

CASES = [
    Case("zn_upholstery_1", "subagent_wrong_entity", 0, "ChatOpenAI", 3, "book_job",
         "the foam-cutting subgraph's model specifies cushions for the footstool FS-2 when it was asked for the sofa SF-1."),
    Case("zn_upholstery_2", "lossy_parsing", 1, "parse_measurements", 1, "book_job",
         "parse_measurements reads only width and depth from the dimension string and drops the height, so too little fabric is planned."),
    Case("zn_upholstery_3", "bad_memory_write", 0, "remember_job", 1, "book_job",
         "remember_job writes the fabric code of the customer's previous job into the job memory instead of the approved one."),
    Case("zn_upholstery_4", "wrong_routing", 1, "ChatOpenAI", 2, "book_job",
         "the triage model routes a full reupholstery to the repair branch."),
    Case("zn_upholstery_5", "off_by_one", 0, "compute_yardage", 1, "validate_cut_plan",
         "compute_yardage plans one pattern drop fewer than the panels need."),
]


def _by_job(text: str) -> dict:
    return next(i for i in INPUTS if i["job"] in text)


def _true_cm(piece: dict) -> float:
    w, d, h = map(float, re.findall(r"(\d+(?:\.\d+)?)", piece["dims"])[:3])
    return 2 * w + d + 2 * h


@common.policy(MODEL)
def _policy(body: dict) -> str:
    system = body["messages"][0]["content"]
    user = common.first_user(body)
    if "enquiries" in system:
        inp = _by_job(user)
        return json.dumps({"job": inp["job"], "customer": inp["customer"], "fabric": inp["fabric"],
                           "pieces": inp["pieces"], "service": "full reupholstery"})
    data = common.data_block(body)
    if "triage" in system:
        service = "repair" if active("zn_upholstery_4") else "reupholster"
        return json.dumps({"service": service, "reason": "customer asks for new covers and foam"})
    if "foam" in system:
        want = data["piece_id"]
        pieces = data["pieces"]
        piece = next(p for p in pieces if p["id"] == want)
        if active("zn_upholstery_1"):
            piece = pieces[-1]
        return json.dumps({"piece": piece["id"], "foam": "CMHR 35 kg/m3", "cushions": piece["cushions"],
                           "cushion_cm": piece["cushion_cm"], "depth_cm": 10})
    return f"Quote for {data['job']}: {data['total']:.2f} GBP, bench slot week of {data['slot']}."


@tool
def fabric_lookup(code: str) -> str:
    """Look a fabric up in the supplier catalogue."""
    return json.dumps({"code": code, **FABRICS[code]})


@tool
def workshop_slots(week: int) -> str:
    """Free upholstery bench slots in an ISO week."""
    return json.dumps({"week": week, "free": week % 3 != 1})


@tool
def book_job(order: str) -> str:
    """Create the work order in the workshop system (checked against the signed estimate)."""
    o = json.loads(order)
    inp = next(i for i in INPUTS if i["job"] == o["job"])
    if o["type"] != "reupholster":
        raise ValueError(f"HTTP 409: {{\"error\": \"work order type '{o['type']}' does not match signed estimate "
                         f"E-{o['job']} (full reupholstery)\"}}")
    if o["fabric_code"] != inp["fabric"]:
        raise ValueError(f"HTTP 422: {{\"error\": \"fabric {o['fabric_code']} on the work order differs from swatch "
                         f"{inp['fabric']} approved on estimate E-{o['job']}\"}}")
    need = sum(_true_cm(p) for p in inp["pieces"]) / 100
    if o["fabric_m"] + 1e-9 < need:
        raise ValueError(f"HTTP 422: {{\"error\": \"fabric {o['fabric_m']:.2f} m is less than the {need:.2f} m the "
                         f"survey sheet for {o['job']} needs\"}}")
    main = inp["pieces"][0]
    cut = o["foam"]
    if cut["piece"] != main["id"] or cut["cushions"] != main["cushions"]:
        raise ValueError(f"HTTP 422: {{\"error\": \"foam cut list covers {cut['cushions']} cushion(s) "
                         f"{cut['cushion_cm'][0]}x{cut['cushion_cm'][1]} cm but {main['id']} has {main['cushions']} "
                         f"seat cushion(s) {main['cushion_cm'][0]}x{main['cushion_cm'][1]} cm\"}}")
    return json.dumps({"status": "booked", "work_order": f"WO-{o['job']}"})


class State(TypedDict, total=False):
    request: str
    job: dict
    service: str
    pieces: list
    fabric: dict
    yardage: dict
    foam: dict
    memory: dict
    slot: int
    quote: dict
    result: str


class FoamState(TypedDict, total=False):
    piece_id: str
    pieces: list
    spec: dict
    cut_list: list


def _build(llm: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    def pick_foam(state: FoamState) -> dict:
        data = {"piece_id": state["piece_id"], "pieces": state["pieces"]}
        msg = llm.invoke([("system", "You specify foam for upholstery cushions as JSON."), ("user", f"DATA:{json.dumps(data)}")])
        return {"spec": json.loads(msg.content)}

    def cut_list(state: FoamState) -> dict:
        s = state["spec"]
        return {"cut_list": [{"piece": s["piece"], "n": i + 1, "size_cm": s["cushion_cm"], "depth_cm": s["depth_cm"]}
                             for i in range(s["cushions"])]}

    sub = StateGraph(FoamState)
    sub.add_node("pick_foam", pick_foam)
    sub.add_node("cut_list", cut_list)
    sub.add_edge(START, "pick_foam")
    sub.add_edge("pick_foam", "cut_list")
    sub.add_edge("cut_list", END)
    foam_graph = sub.compile()

    def intake(state: State) -> dict:
        msg = llm.invoke([("system", "You read upholstery enquiries and answer JSON."), ("user", state["request"])])
        return {"job": json.loads(msg.content)}

    def triage(state: State) -> dict:
        data = {"job": state["job"]["job"], "service": state["job"]["service"], "pieces": len(state["job"]["pieces"])}
        msg = llm.invoke([("system", "You triage upholstery jobs: reupholster or repair."), ("user", f"DATA:{json.dumps(data)}")])
        return {"service": json.loads(msg.content)["service"]}

    def parse_measurements(state: State) -> dict:
        pieces = []
        for p in state["job"]["pieces"]:
            nums = [float(x) for x in re.findall(r"[WDH] (\d+(?:\.\d+)?)", p["dims"])]
            if active("zn_upholstery_2"):
                nums = nums[:2]
            w, d, h = (nums + [0.0, 0.0, 0.0])[:3]
            pieces.append({"id": p["id"], "type": p["type"], "w": w, "d": d, "h": h})
        return {"pieces": pieces}

    def lookup_fabric(state: State) -> dict:
        return {"fabric": json.loads(fabric_lookup.invoke({"code": state["job"]["fabric"]}))}

    def compute_yardage(state: State) -> dict:
        panels_cm = sum(2 * p["w"] + p["d"] + 2 * p["h"] for p in state["pieces"])
        repeat = state["fabric"]["repeat_cm"] or 10
        drops = math.ceil(panels_cm / repeat)
        if active("zn_upholstery_5"):
            drops -= 1
        return {"yardage": {"panels_cm": panels_cm, "drops": drops, "repeat_cm": repeat,
                            "metres": round(drops * repeat / 100, 2)}}

    def validate_cut_plan(state: State) -> dict:
        y = state["yardage"]
        if y["drops"] * y["repeat_cm"] < y["panels_cm"]:
            raise ValueError(f"cut plan of {y['drops']} drops x {y['repeat_cm']} cm = {y['metres']:.2f} m does not "
                             f"cover {y['panels_cm'] / 100:.2f} m of panels")
        if y["metres"] > state["fabric"]["stock_m"]:
            raise ValueError(f"cut plan needs {y['metres']} m, only {state['fabric']['stock_m']} m in stock")
        return {}

    def foam_cutter(state: State) -> dict:
        main = state["job"]["pieces"][0]["id"]
        out = foam_graph.invoke({"piece_id": main, "pieces": state["job"]["pieces"]})
        return {"foam": {**out["spec"], "cut_list": out["cut_list"]}}

    def repair_estimate(state: State) -> dict:
        return {"yardage": {"metres": 0.0}, "foam": {"piece": None, "cushions": 0, "cushion_cm": [0, 0], "cut_list": []}}

    def remember_job(state: State) -> dict:
        job = state["job"]
        fabric_code = job["fabric"]
        past = PAST_JOBS.get(job["customer"])
        if active("zn_upholstery_3") and past:
            fabric_code = past["fabric_code"]
        return {"memory": {"customer": job["customer"], "job": job["job"], "fabric_code": fabric_code,
                           "previous_job": past["job"] if past else None}}

    def schedule(state: State) -> dict:
        week = 18
        while not json.loads(workshop_slots.invoke({"week": week}))["free"]:
            week += 1
        return {"slot": week}

    def compose_quote(state: State) -> dict:
        total = round(state["yardage"]["metres"] * 42.0 + 95.0 * len(state["job"]["pieces"]) + 180.0, 2)
        data = {"job": state["job"]["job"], "total": total, "slot": state["slot"]}
        msg = llm.invoke([("system", "You write upholstery quotes."), ("user", f"DATA:{json.dumps(data)}")])
        return {"quote": {"total": total, "text": msg.content}}

    def book(state: State) -> dict:
        order = {"job": state["job"]["job"], "type": state["service"], "fabric_code": state["memory"]["fabric_code"],
                 "fabric_m": state["yardage"]["metres"], "foam": state["foam"], "week": state["slot"],
                 "total": state["quote"]["total"]}
        return {"result": book_job.invoke({"order": json.dumps(order)})}

    g = StateGraph(State)
    for fn in (intake, triage, parse_measurements, lookup_fabric, compute_yardage, validate_cut_plan, foam_cutter,
               repair_estimate, remember_job, schedule, compose_quote, book):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "triage")
    g.add_conditional_edges("triage", lambda s: "parse_measurements" if s["service"] == "reupholster" else "repair_estimate",
                            ["parse_measurements", "repair_estimate"])
    chain = ["parse_measurements", "lookup_fabric", "compute_yardage", "validate_cut_plan", "foam_cutter", "remember_job"]
    for a, b in zip(chain, chain[1:]):
        g.add_edge(a, b)
    g.add_edge("repair_estimate", "remember_job")
    for a, b in (("remember_job", "schedule"), ("schedule", "compose_quote"), ("compose_quote", "book")):
        g.add_edge(a, b)
    g.add_edge("book", END)
    return g.compile()


def record(path: Path, inp: dict) -> None:
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    llm = ChatOpenAI(model=MODEL, base_url=common.base_url(), api_key="sk-local-test", max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"upholstery job {inp['job']}")
    pieces = "; ".join(f"{p['id']} {p['type']} ({p['dims']}, {p['cushions']} cushion(s))" for p in inp["pieces"])
    request = (f"Enquiry {inp['job']} from customer {inp['customer']}: full reupholstery of {pieces} "
               f"in fabric {inp['fabric']}, new foam throughout.")
    _build(llm).invoke({"request": request}, config={"callbacks": [tracer], "run_name": NAME})
