"""Pasta factory (langgraph): plan a production order into dryer batches, source semolina, book extruder slots."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from .common import Case, last_user, register_policy
from .kit import active
from .lgutil import invoke, model

AGENT, ROUTE, DOMAIN, EXT = "pasta_factory_planner", "langgraph", "pasta factory", "jsonl"
SHAPE = "intake -> LLM batch plan -> parse -> sourcing subgraph (resolve order, lot lookup, allocate, reserve) -> extruder slots -> dryer profile retriever -> LLM QA -> submit"

INPUTS = {
    "rigatoni": "PO-5512: 1200 kg rigatoni, bronze die, ship 2026-02-10",
    "fusilli": "PO-5519: 900 kg fusilli, bronze die, ship 2026-02-12",
    "r1": "PO-5521: 600 kg penne, teflon die, ship 2026-02-13",
    "r2": "PO-5524: 1500 kg spaghetti, bronze die, ship 2026-02-16",
    "r3": "PO-5527: 300 kg farfalle, bronze die, ship 2026-02-17",
    "r4": "PO-5530: 1050 kg linguine, teflon die, ship 2026-02-19",
}
REFS = ["r1", "r2", "r3", "r4"]
DRYER_KG = 300
SHAPES = {"rigatoni": "short", "fusilli": "short", "penne": "short", "farfalle": "short", "spaghetti": "long", "linguine": "long"}
PROFILES = [
    {"id": "SC-18", "cut": "short", "hours": 18, "humidity": 0.12},
    {"id": "LC-72", "cut": "long", "hours": 72, "humidity": 0.125},
]
LOTS = [{"lot": "SL-88", "grade": "A", "kg": 4000}, {"lot": "SL-91", "grade": "B", "kg": 2500}]
SLOTS = ["EX1-Mon-06", "EX1-Mon-14", "EX2-Mon-06", "EX2-Mon-14", "EX1-Tue-06", "EX2-Tue-06"]

CASES = [
    Case("zu_pasta_01", "pasta.plan_batches", "plan_error", "rigatoni", "ChatOpenAI", 1, "llm", "submit_production_order", 1,
         "The planning model proposes three dryer batches for a 1200 kg order, so the plan falls short of the order."),
    Case("zu_pasta_02", "pasta.dryer_profile", "wrong_retrieval", "fusilli", "DryerProfileRetriever", 1, "retrieval", "submit_production_order", 1,
         "The dryer profile retriever returns the long-cut profile for a short-cut shape."),
    Case("zu_pasta_03", "pasta.lot_format", "format_drift", "rigatoni", "lookup_semolina_lots", 1, "tool", "submit_production_order", 1,
         "The lot service now writes kilograms with a European thousands separator, the allocator reads 4.0 kg and falls back to the grade B lot."),
    Case("zu_pasta_04", "pasta.order_ref", "subagent_wrong_entity", "fusilli", "resolve_order", 1, "other", "submit_production_order", 1,
         "The sourcing subgraph resolves the previous purchase order and reserves semolina under it."),
    Case("zu_pasta_05", "pasta.slot_page", "truncated_result", "rigatoni", "list_extruder_slots", 1, "tool", "submit_production_order", 1,
         "The extruder slot listing returns only its first page, so the last batch gets no slot."),
]


def _policy(body: dict) -> str:
    system = body["messages"][0]["content"]
    data = json.loads(last_user(body))
    if "Plan" in system:
        batches = math.ceil(data["kg"] / data["dryer_kg"])
        if active("pasta.plan_batches"):
            batches = data["kg"] // 400
        return json.dumps({"batch_kg": data["dryer_kg"], "batches": batches, "note": "fill dryer fully"})
    return "QA: batch sheet consistent; release for production."


register_policy("pasta", _policy)


class St(TypedDict, total=False):
    text: str
    order: dict
    plan: dict
    prev_order: str
    lots: list
    reservation: dict
    slots: list
    schedule: list
    profile: dict
    qa: str
    result: dict


_LAST_ORDER: dict[str, str] = {"id": "PO-5507"}


@tool
def lookup_semolina_lots(grade_min: str) -> str:
    """Semolina lots in the silo, as JSON."""
    rows = []
    for lot in LOTS:
        kg: Any = lot["kg"]
        if active("pasta.lot_format"):
            kg = f"{kg:,}".replace(",", ".") if kg >= 1000 else kg
        rows.append({**lot, "kg": kg})
    return json.dumps(rows)


@tool
def reserve_semolina(order_id: str, lot: str, kg: int) -> str:
    """Reserve semolina from a lot for an order."""
    return json.dumps({"reservation": f"RES-{lot}-{order_id[-4:]}", "order_id": order_id, "lot": lot, "kg": kg})


@tool
def list_extruder_slots(day: str, count: int) -> str:
    """Free extruder slots from a day on."""
    free = SLOTS[:count]
    if active("pasta.slot_page"):
        free = free[:3]
    return json.dumps({"slots": free})


@tool
def submit_production_order(sheet: str) -> str:
    """Submit the batch sheet to the MES."""
    s = json.loads(sheet)
    text = INPUTS_BY_ID[s["order_id"]]
    kg = int(re.search(r"(\d+) kg", text).group(1))
    shape = re.search(r"kg (\w+)", text).group(1)
    planned = s["batch_kg"] * len(s["batches"])
    if planned < kg:
        raise ValueError(f"MES 422: planned output {planned} kg does not cover order {s['order_id']} ({kg} kg)")
    if s["reservation"]["order_id"] != s["order_id"]:
        raise ValueError(f"MES 409: semolina reservation {s['reservation']['reservation']} belongs to order {s['reservation']['order_id']}")
    if s["lot_grade"] != "A" and "bronze" in text:
        raise ValueError(f"MES 422: lot {s['reservation']['lot']} grade {s['lot_grade']} not permitted on the bronze-die line")
    missing = [b["batch"] for b in s["batches"] if not b.get("slot")]
    if missing:
        raise ValueError(f"MES 422: batches {missing} have no extruder slot")
    cut = next(p["cut"] for p in PROFILES if p["id"] == s["dryer_profile"])
    if cut != SHAPES[shape]:
        raise ValueError(f"MES 422: dryer profile {s['dryer_profile']} is for {cut} cuts; {shape} needs a {SHAPES[shape]}-cut profile")
    return json.dumps({"status": "released", "order": s["order_id"]})


INPUTS_BY_ID = {t.split(":")[0]: t for t in INPUTS.values()}


class DryerProfileRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        cut = "long" if active("pasta.dryer_profile") else ("short" if "short" in query else "long")
        return [Document(page_content=json.dumps(p), metadata={"id": p["id"]}) for p in PROFILES if p["cut"] == cut]


def intake(state: St) -> dict:
    m = re.match(r"(PO-\d+): (\d+) kg (\w+), (\w+) die, ship (\S+)", state["text"])
    return {"order": {"id": m.group(1), "kg": int(m.group(2)), "shape": m.group(3), "die": m.group(4), "ship": m.group(5)}}


def plan_batches(state: St) -> dict:
    o = state["order"]
    msg = model().invoke([SystemMessage("[pasta] Plan dryer batches for the order; answer JSON."),
                          HumanMessage(json.dumps({"kg": o["kg"], "shape": o["shape"], "dryer_kg": DRYER_KG}))])
    return {"plan": {"raw": msg.content}}


def parse_plan(state: St) -> dict:
    p = json.loads(state["plan"]["raw"])
    return {"plan": {"batch_kg": p["batch_kg"], "batches": p["batches"]}}


def resolve_order(state: St) -> dict:
    oid = _LAST_ORDER["id"] if active("pasta.order_ref") else state["order"]["id"]
    return {"prev_order": oid}


def check_lots(state: St) -> dict:
    return {"lots": json.loads(lookup_semolina_lots.invoke({"grade_min": "A"}))}


def allocate_and_reserve(state: St) -> dict:
    need = state["plan"]["batch_kg"] * state["plan"]["batches"]
    # first silo that holds the whole order, else the overflow silo (listed last)
    chosen = next((lot for lot in state["lots"] if float(lot["kg"]) >= need), state["lots"][-1])
    res = json.loads(reserve_semolina.invoke({"order_id": state["prev_order"], "lot": chosen["lot"], "kg": need}))
    return {"reservation": {**res, "grade": chosen["grade"]}}


def _sourcing():
    g = StateGraph(St)
    g.add_node("resolve_order", resolve_order)
    g.add_node("check_lots", check_lots)
    g.add_node("allocate_and_reserve", allocate_and_reserve)
    g.add_edge(START, "resolve_order")
    g.add_edge("resolve_order", "check_lots")
    g.add_edge("check_lots", "allocate_and_reserve")
    g.add_edge("allocate_and_reserve", END)
    return g.compile()


def schedule(state: St) -> dict:
    n = state["plan"]["batches"]
    slots = json.loads(list_extruder_slots.invoke({"day": "Mon", "count": n}))["slots"]
    sched = [{"batch": i + 1, "slot": slots[i] if i < len(slots) else None} for i in range(n)]
    return {"slots": slots, "schedule": sched}


def dryer(state: St) -> dict:
    cut = SHAPES[state["order"]["shape"]]
    docs = DryerProfileRetriever().invoke(f"{cut} cut {state['order']['shape']}")
    return {"profile": json.loads(docs[0].page_content)}


def qa_review(state: St) -> dict:
    msg = model().invoke([SystemMessage("[pasta] Review the batch sheet for release."),
                          HumanMessage(json.dumps({"schedule": state["schedule"], "profile": state["profile"]["id"]}))])
    return {"qa": msg.content}


def submit(state: St) -> dict:
    sheet = {"order_id": state["order"]["id"], "batch_kg": state["plan"]["batch_kg"], "batches": state["schedule"],
             "reservation": state["reservation"], "lot_grade": state["reservation"]["grade"], "dryer_profile": state["profile"]["id"]}
    return {"result": json.loads(submit_production_order.invoke({"sheet": json.dumps(sheet)}))}


def _graph():
    g = StateGraph(St)
    for name, fn in [("intake", intake), ("plan_batches", plan_batches), ("parse_plan", parse_plan), ("sourcing", _sourcing()),
                     ("schedule", schedule), ("dryer", dryer), ("qa_review", qa_review), ("submit", submit)]:
        g.add_node(name, fn)
    order = ["intake", "plan_batches", "parse_plan", "sourcing", "schedule", "dryer", "qa_review", "submit"]
    g.add_edge(START, order[0])
    for a, b in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1], END)
    return g.compile()


_GRAPH = None


def record(key: str, path: Path) -> None:
    global _GRAPH
    _GRAPH = _GRAPH or _graph()
    text = INPUTS[key]
    invoke(_GRAPH, {"text": text}, path, AGENT, text, (ValueError,))
