"""Luthier workshop (LangGraph): triage a violin-family repair ticket, route to the crack or setup bench, loop over crack segments, estimate, file the work order."""

from __future__ import annotations

import json
import re
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from . import common, kit

NAME = "luthier-workshop"
ROUTE = "langgraph"
DOMAIN = "luthier workshop (violin making/repair)"
EXT = "jsonl"
DESK = "luthier"
SHAPE = "StateGraph: intake -> triage (llm + json parser) -> conditional route -> crack bench (manual retriever, segment loop with tools) | setup bench -> estimate (llm + parse) -> sign off (reserve tonewood, file work order)"

INSTRUMENTS = {
    "V-1187": {"type": "violin", "maker": "Mittenwald c.1890", "segments": [{"id": "C1", "len_mm": 34}, {"id": "C2", "len_mm": 21}, {"id": "C3", "len_mm": 12}]},
    "V-2045": {"type": "violin", "maker": "workshop 1962", "segments": [{"id": "C1", "len_mm": 48}, {"id": "C2", "len_mm": 15}, {"id": "C3", "len_mm": 9}]},
    "A-0311": {"type": "viola", "maker": "J. Harlan 2004", "segments": [{"id": "C1", "len_mm": 27}]},
    "V-3302": {"type": "violin", "maker": "student 2015", "segments": []},
    "C-0420": {"type": "cello", "maker": "Markneukirchen 1925", "segments": [{"id": "C1", "len_mm": 60}, {"id": "C2", "len_mm": 22}]},
    "V-0977": {"type": "violin", "maker": "French c.1910", "segments": []},
}
MANUAL = [
    {"doc": "MAN-CR-V", "instrument": "violin", "job": "crack", "cleat": "spruce", "cleat_spacing_mm": 12},
    {"doc": "MAN-CR-C", "instrument": "cello", "job": "crack", "cleat": "spruce", "cleat_spacing_mm": 20},
    {"doc": "MAN-CR-A", "instrument": "viola", "job": "crack", "cleat": "spruce", "cleat_spacing_mm": 14},
    {"doc": "MAN-SU-V", "instrument": "violin", "job": "setup", "cleat": None, "cleat_spacing_mm": None},
]
TONEWOOD = [{"piece": "TW-88", "species": "spruce", "cut": "slab"}, {"piece": "TW-91", "species": "spruce", "cut": "quarter"},
            {"piece": "TW-40", "species": "maple", "cut": "quarter"}]

INPUTS = {
    "A": {"ticket": "WO-7712", "instrument": "V-1187", "text": "Top crack from lower f-hole toward the bass side, buzzing; owner also wants new strings."},
    "B": {"ticket": "WO-7730", "instrument": "V-2045", "text": "Long crack on the top near the soundpost, seam fine; please quote."},
    "R1": {"ticket": "WO-7690", "instrument": "A-0311", "text": "Small crack near the endpin on the top."},
    "R2": {"ticket": "WO-7695", "instrument": "V-3302", "text": "Needs a setup: bridge warped, pegs slipping."},
    "R3": {"ticket": "WO-7701", "instrument": "C-0420", "text": "Two cracks on the top of the cello after a fall."},
    "R4": {"ticket": "WO-7705", "instrument": "V-0977", "text": "Setup before a concert, new strings and soundpost adjustment."},
}
REFS = ["R1", "R2", "R3", "R4"]

CASES = [
    common.Case("zj-luthier-01", "tool_ignores_argument", "A", "reserve_tonewood", 1, "file_work_order", 1,
                "The tonewood store ignores the requested quarter cut and hands back a slab-cut spruce piece that ends up on the work order."),
    common.Case("zj-luthier-02", "truncated_result", "A", "list_crack_segments", 1, "file_work_order", 1,
                "The crack survey returns only its first page of segments, so the cleat plan covers two of the three cracks."),
    common.Case("zj-luthier-03", "format_drift", "B", "estimate_model", 1, "file_work_order", 1,
                "The estimating model switches to a European number format for the price, which the estimate parser reads as a tiny amount."),
    common.Case("zj-luthier-04", "wrong_routing", "B", "triage_model", 1, "file_work_order", 1,
                "The triage model labels a cracked top as a setup job, so the graph routes to the setup bench and no crack work is planned."),
    common.Case("zj-luthier-05", "wrong_retrieval", "A", "repair_manual", 1, "file_work_order", 1,
                "The repair manual search returns the cello crack procedure for a violin, and its cleat spacing goes into the plan."),
]


class Shop(TypedDict, total=False):
    ticket: dict
    instrument: dict
    job: str
    manual: dict
    segments: list
    cleats: list
    cursor: int
    tonewood: dict
    estimate: dict
    notes: list


def _model(run_name: str):
    return ChatOpenAI(model="gpt-4o-mini", base_url=common.server().base_url, api_key="sk-test-local", max_retries=0,
                      temperature=0).with_config(run_name=run_name)


def _sys(text: str) -> SystemMessage:
    return SystemMessage(f"[desk:{DESK}] {text}")


class RepairManual(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        job, instrument = query.split("|")
        hits = [m for m in MANUAL if m["job"] == job and (m["instrument"] == instrument)]
        if kit.active("luthier.wrong_retrieval"):
            hits = sorted([m for m in MANUAL if m["job"] == job], key=lambda m: -(m["cleat_spacing_mm"] or 0))
        return [Document(page_content=json.dumps(m), metadata={"doc": m["doc"]}) for m in hits[:1]]


@tool
def lookup_instrument(instrument_id: str) -> dict:
    """Read the instrument's card from the workshop register."""
    i = INSTRUMENTS[instrument_id]
    return {"id": instrument_id, "type": i["type"], "maker": i["maker"]}


@tool
def repair_history(instrument_id: str) -> dict:
    """The instrument's last visit to the workshop."""
    return {"instrument": instrument_id, "last_visit": "2025-11-03" if instrument_id < "V" else "2024-06-18"}


@tool
def bench_humidity(bench: str) -> dict:
    """Relative humidity at a bench (glue work needs 40-60%)."""
    return {"bench": bench, "rh_pct": 48}


@tool
def list_crack_segments(instrument_id: str, page_size: int = 10) -> dict:
    """List the crack segments found at inspection."""
    segs = INSTRUMENTS[instrument_id]["segments"]
    shown = segs[:2] if kit.active("luthier.truncated_result") else segs[:page_size]
    return {"instrument": instrument_id, "segments": shown, "page": 1}


@tool
def plan_cleats(segment_id: str, len_mm: int, spacing_mm: int) -> dict:
    """Plan the cleats for one crack segment."""
    return {"segment": segment_id, "cleats": max(1, -(-len_mm // spacing_mm)), "spacing_mm": spacing_mm}


@tool
def reserve_tonewood(species: str, cut: str) -> dict:
    """Reserve a piece of tonewood of the given species and cut."""
    pool = [t for t in TONEWOOD if t["species"] == species]
    if not kit.active("luthier.tool_ignores_argument"):
        pool = [t for t in pool if t["cut"] == cut]
    return dict(pool[0])


@tool
def file_work_order(order: dict) -> dict:
    """File the work order with the front desk system."""
    errs = []
    inst = INSTRUMENTS[order["instrument"]]
    if inst["segments"] and order["job"] != "crack":
        errs.append(f"inspection lists {len(inst['segments'])} crack(s) but the order is a {order['job']} job")
    if order["job"] == "crack":
        planned = {c["segment"] for c in order["cleats"]}
        missing = [s["id"] for s in inst["segments"] if s["id"] not in planned]
        if missing:
            errs.append(f"cleat plan missing segment(s) {', '.join(missing)}")
        if order["manual"] != "MAN-CR-" + {"violin": "V", "viola": "A", "cello": "C"}[inst["type"]]:
            errs.append(f"procedure {order['manual']} is not for a {inst['type']}")
        if order["tonewood"]["cut"] != "quarter":
            errs.append(f"cleat stock {order['tonewood']['piece']} is {order['tonewood']['cut']}-cut; quarter-sawn required")
    if order["price_eur"] < 60:
        errs.append(f"price {order['price_eur']} EUR is below the bench minimum of 60 EUR")
    if errs:
        raise ValueError("work order rejected (409): " + "; ".join(errs))
    return {"filed": order["ticket"], "status": "queued"}


def intake(state: Shop) -> Shop:
    card = lookup_instrument.invoke({"instrument_id": state["ticket"]["instrument"]})
    history = repair_history.invoke({"instrument_id": card["id"]})
    humidity = bench_humidity.invoke({"bench": "crack" if "crack" in state["ticket"]["text"].lower() else "setup"})
    card = dict(card, last_visit=history["last_visit"], bench_rh=humidity["rh_pct"])
    return {"instrument": card, "notes": [f"received {state['ticket']['ticket']}"]}


def triage(state: Shop) -> Shop:
    msg = _model("triage_model").invoke([_sys("Classify the repair job as crack or setup. Answer JSON {job, reason}."),
                                         HumanMessage(json.dumps({"instrument": state["instrument"], "ticket": state["ticket"]["text"]}))])
    parsed = JsonOutputParser().with_config(run_name="parse_triage").invoke(msg)
    return {"job": parsed["job"], "notes": state["notes"] + [parsed["reason"]]}


def route(state: Shop) -> str:
    return "crack_bench" if state["job"] == "crack" else "setup_bench"


def crack_bench(state: Shop) -> Shop:
    docs = RepairManual().with_config(run_name="repair_manual").invoke(f"crack|{state['instrument']['type']}")
    manual = json.loads(docs[0].page_content)
    segs = list_crack_segments.invoke({"instrument_id": state["instrument"]["id"], "page_size": 10})
    return {"manual": manual, "segments": segs["segments"], "cursor": 0, "cleats": []}


def cleat_segment(state: Shop) -> Shop:
    seg = state["segments"][state["cursor"]]
    plan = plan_cleats.invoke({"segment_id": seg["id"], "len_mm": seg["len_mm"], "spacing_mm": state["manual"]["cleat_spacing_mm"]})
    return {"cleats": state["cleats"] + [plan], "cursor": state["cursor"] + 1}


def more_segments(state: Shop) -> str:
    return "cleat_segment" if state["cursor"] < len(state["segments"]) else "estimate"


def setup_bench(state: Shop) -> Shop:
    msg = _model("setup_model").invoke([_sys("List the setup tasks. Answer JSON {tasks}."), HumanMessage(state["ticket"]["text"])])
    tasks = JsonOutputParser().with_config(run_name="parse_setup").invoke(msg)["tasks"]
    return {"manual": {"doc": "MAN-SU-V"}, "cleats": [], "notes": state["notes"] + tasks}


def estimate(state: Shop) -> Shop:
    msg = _model("estimate_model").invoke([_sys("Estimate bench hours and the price. Answer 'hours: H; price: P EUR'."),
                                           HumanMessage(json.dumps({"job": state["job"], "cleats": state.get("cleats", []), "notes": state["notes"]}))])
    text = msg.content
    hours = float(re.search(r"hours:\s*([\d.]+)", text).group(1))
    price = float(re.search(r"price:\s*([\d.,]+)", text).group(1).replace(",", ""))
    return {"estimate": {"hours": hours, "price_eur": price}}


def sign_off(state: Shop) -> Shop:
    wood = {"piece": None, "cut": None}
    if state["job"] == "crack":
        wood = reserve_tonewood.invoke({"species": "spruce", "cut": "quarter"})
    order = {"ticket": state["ticket"]["ticket"], "instrument": state["instrument"]["id"], "job": state["job"],
             "manual": state["manual"]["doc"], "cleats": state["cleats"], "tonewood": wood,
             "price_eur": state["estimate"]["price_eur"]}
    receipt = file_work_order.invoke({"order": order})
    return {"notes": state["notes"] + [receipt["status"]]}


def build():
    g = StateGraph(Shop)
    for name, fn in [("intake", intake), ("triage", triage), ("crack_bench", crack_bench), ("cleat_segment", cleat_segment),
("setup_bench", setup_bench), ("estimate", estimate), ("sign_off", sign_off)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "triage")
    g.add_conditional_edges("triage", route, ["crack_bench", "setup_bench"])
    g.add_conditional_edges("crack_bench", more_segments, ["cleat_segment", "estimate"])
    g.add_conditional_edges("cleat_segment", more_segments, ["cleat_segment", "estimate"])
    g.add_edge("setup_bench", "estimate")
    g.add_edge("estimate", "sign_off")
    g.add_edge("sign_off", END)
    return g.compile()


@common.policy(DESK)
def _policy(messages: list[dict]) -> str:
    system, user = messages[0]["content"].lower(), messages[-1]["content"]
    if "classify" in system:
        job = "crack" if "crack" in user.lower() else "setup"
        if kit.active("luthier.wrong_routing"):
            job = "setup"
        return json.dumps({"job": job, "reason": f"ticket mentions {'a crack' if job == 'crack' else 'setup work'}"})
    if "setup tasks" in system:
        return json.dumps({"tasks": ["fit bridge", "dress pegs", "restring"]})
    u = json.loads(user)
    hours = 1.5 + sum(c["cleats"] for c in u["cleats"]) * 0.75
    price = hours * 160
    if kit.active("luthier.format_drift"):
        return f"hours: {hours}; price: {price:,.2f} EUR".replace(",", "X").replace(".", ",").replace("X", ".")
    return f"hours: {hours}; price: {price:.2f} EUR"


def run_once(inp: dict, path) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"repair ticket {inp['ticket']}")
    build().invoke({"ticket": inp}, config={"callbacks": [tracer], "recursion_limit": 60})
