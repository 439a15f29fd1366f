"""Apiary inspection planner (langgraph route): a beekeeper's visit notes -> extraction chain (prompt |
model | line parser) -> hive records from the apiary log (a retriever) -> the model's assessment ->
routed to treatment (reservations through a tool) or routine -> feeding plan -> plan check."""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from ._common import system_text, user_text


NAME = "apiary-inspections"
ROUTE = "langgraph"
DOMAIN = "beekeeping, hive inspections and treatment plans"
SHAPE = "StateGraph: extraction chain with a custom line parser, retriever over the apiary log, assessment model, conditional routing (treat / routine), treatment node calling a reservation tool per hive, feeding node, plan check"
SWITCH = None


def _switched(name: str) -> bool:
    return SWITCH == name


INPUTS = [
    {"task": "Orchard apiary visit 2026-05-10", "notes": "Orchard apiary, 2026-05-10. Hive A: brood on 7 frames, no queen cells, 3 mites per 300 bees, scale 38 kg. Hive B: brood on 5 frames, no queen cells, 12 mites per 300 bees, scale 31 kg."},
    {"task": "Ridge apiary visit 2026-05-11", "notes": "Ridge apiary, 2026-05-11. Hive C: brood on 6 frames, no queen cells, 2 mites per 300 bees, scale 29 kg. Hive D: brood on 8 frames, no queen cells, 4 mites per 300 bees, scale 40 kg. Hive E: brood on 4 frames, no queen cells, 5 mites per 300 bees, scale 21 kg."},
    {"task": "Mill apiary visit 2026-05-12", "notes": "Mill apiary, 2026-05-12. Hive F: brood on 6 frames, no queen cells, 11 mites per 300 bees, scale 30 kg. Hive G: brood on 7 frames, no queen cells, 2 mites per 300 bees, scale 36 kg. Hive H: brood on 5 frames, no queen cells, 10 mites per 300 bees, scale 27 kg."},
    {"task": "Church apiary visit 2026-05-13", "notes": "Church apiary, 2026-05-13. Hive J: brood on 6 frames, no queen cells, 4 mites per 300 bees, scale 70 lb. Hive K: brood on 7 frames, no queen cells, 3 mites per 300 bees, scale 79 lb."},
    {"task": "Heath apiary visit 2026-05-14", "notes": "Heath apiary, 2026-05-14. Hive L: brood on 8 frames, no queen cells, 14 mites per 300 bees, scale 41 kg. Hive M: brood on 6 frames, no queen cells, 3 mites per 300 bees, scale 33 kg."},
]

LOG = {  # hive -> (record this season, record of last season)
    "A": ({"boxes": 2, "last_treated": "2025-09-02", "queen": "2025"}, None),
    "B": ({"boxes": 2, "last_treated": "2025-09-02", "queen": "2024"}, None),
    "C": ({"boxes": 2, "last_treated": "2025-08-28", "queen": "2025"}, None),
    "D": ({"boxes": 2, "last_treated": "2025-08-28", "queen": "2025"}, None),
    "E": ({"boxes": 1, "last_treated": "2025-08-28", "queen": "2026"}, None),
    "F": ({"boxes": 2, "last_treated": "2026-04-24", "queen": "2025"}, {"boxes": 2, "last_treated": "2025-09-05", "queen": "2024"}),
    "G": ({"boxes": 2, "last_treated": "2025-09-05", "queen": "2025"}, None),
    "H": ({"boxes": 1, "last_treated": "2025-09-05", "queen": "2025"}, None),
    "J": ({"boxes": 2, "last_treated": "2025-09-10", "queen": "2025"}, None),
    "K": ({"boxes": 2, "last_treated": "2025-09-10", "queen": "2025"}, None),
    "L": ({"boxes": 2, "last_treated": "2025-09-12", "queen": "2025"}, None),
    "M": ({"boxes": 2, "last_treated": "2025-09-12", "queen": "2025"}, None),
}
MITE_LIMIT = 9  # mites per 300 bees
STRIPS_PER_BOX = 2
TARE_KG = {1: 14.0, 2: 22.0}
STORES_TARGET_KG = {1: 12.0, 2: 18.0}


# ---- model -------------------------------------------------------------------------------------------

def brain(request):
    system = system_text(request)
    if system.startswith("List every hive"):
        text = user_text(request)
        lines = []
        for hive, frames, mites, weight, unit in re.findall(
                r"Hive (\w): brood on (\d+) frames, no queen cells, (\d+) mites per 300 bees, scale (\d+) (kg|lb)", text):
            lines.append(f"{hive} | brood {frames} | queen cells 0 | mites {mites}/300 | weight {weight} {unit}")
        return "\n".join(lines)
    if system.startswith("Assess each hive"):
        data = json.loads(user_text(request))
        out = []
        for h in data["hives"]:
            rec = data["records"][h["hive"]]
            boxes = rec["boxes"]
            if _switched("box-count") and h["hive"] == "L":
                boxes = 3
            action = "varroa_treatment" if h["mites"] > MITE_LIMIT else "routine"
            out.append({"hive": h["hive"], "action": action, "boxes": boxes,
                        "note": f"{h['mites']} mites per 300 bees, brood on {h['frames']} frames"})
        return json.dumps({"assessment": out})
    return "Please send inspection notes."


# ---- parser, retriever, tool -------------------------------------------------------------------------

class HiveLinesParser(BaseOutputParser[list]):
    """One hive per line: `A | brood 7 | queen cells 0 | mites 3/300 | weight 38 kg`."""

    def parse(self, text: str) -> list:
        lines = text.split("\n")
        if _switched("last-line"):
            lines = text.split("\n")[:-1] if not text.endswith("\n") else lines
        hives = []
        for line in lines:
            if not line.strip():
                continue
            hive, brood, qc, mites, weight = [p.strip() for p in line.split("|")]
            value, unit = weight.split()[1:]
            hives.append({"hive": hive, "frames": int(brood.split()[1]), "queen_cells": int(qc.split()[-1]),
                          "mites": int(mites.split()[1].split("/")[0]), "weight": float(value), "unit": unit})
        return hives


class ApiaryLog(BaseRetriever):
    """The apiary log: one document per hive record."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        docs = []
        for hive in query.split(","):
            current, previous = LOG[hive]
            rec = previous if (_switched("last-season") and previous) else current
            docs.append(Document(page_content=json.dumps({"hive": hive, **rec}), metadata={"hive": hive}))
        return docs


REGISTRY = {h: rec["last_treated"] for h, (rec, _) in LOG.items()}


@tool
def reserve_treatment(hive: str, product: str, strips: int, boxes: int, visit: str) -> dict:
    """Reserve varroa strips for a hive and enter the treatment in the medicines register."""
    last = date.fromisoformat(REGISTRY[hive])
    if (date.fromisoformat(visit) - last).days < 30:
        raise ValueError(f"register: hive {hive} was treated on {last}, the next treatment is allowed after 30 days")
    on_record = LOG[hive][0]["boxes"]
    if boxes != on_record or strips > STRIPS_PER_BOX * on_record:
        raise ValueError(f"register: hive {hive} has {on_record} boxes on record, {strips} strips for {boxes} boxes refused")
    return {"hive": hive, "product": product, "strips": strips, "batch": f"AV-{hive}-{visit[5:7]}{visit[8:]}"}


# ---- graph -------------------------------------------------------------------------------------------

class State(TypedDict, total=False):
    notes: str
    visit: str
    hives: list
    records: dict
    assessment: list
    treatments: list
    feeding: list


def build(llm: ChatOpenAI):
    extract = ChatPromptTemplate.from_messages([("system", "List every hive in the notes, one line each."), ("human", "{notes}")]) \
        | llm | HiveLinesParser()
    log = ApiaryLog()

    def read_notes(state: State) -> dict:
        return {"hives": extract.invoke({"notes": state["notes"]}),
                "visit": re.search(r"\d{4}-\d{2}-\d{2}", state["notes"]).group(0)}

    def load_records(state: State) -> dict:
        docs = log.invoke(",".join(h["hive"] for h in state["hives"]))
        return {"records": {d.metadata["hive"]: json.loads(d.page_content) for d in docs}}

    def assess(state: State) -> dict:
        answer = llm.invoke([SystemMessage("Assess each hive: action and boxes, JSON."),
                             HumanMessage(json.dumps({"hives": state["hives"], "records": state["records"]}))])
        return {"assessment": json.loads(answer.content)["assessment"]}

    def route_visit(state: State) -> str:
        hives = state["hives"][:1] if _switched("first-hive") else state["hives"]
        return "treat" if any(h["mites"] > MITE_LIMIT for h in hives) else "routine"

    def treat(state: State) -> dict:
        done = []
        for a in state["assessment"]:
            if a["action"] != "varroa_treatment":
                continue
            last = date.fromisoformat(state["records"][a["hive"]]["last_treated"])
            if (date.fromisoformat(state["visit"]) - last).days < 30:
                continue
            done.append(reserve_treatment.invoke({"hive": a["hive"], "product": "Apivar", "boxes": a["boxes"],
                                                  "strips": STRIPS_PER_BOX * a["boxes"], "visit": state["visit"]}))
        return {"treatments": done}

    def routine(state: State) -> dict:
        return {"treatments": []}

    def plan_feeding(state: State) -> dict:
        plan = []
        for h in state["hives"]:
            kg = h["weight"] * (0.4536 if h["unit"] == "lb" else 1.0)
            if _switched("scale-units"):
                kg = h["weight"]
            boxes = state["records"][h["hive"]]["boxes"]
            stores = round(kg - TARE_KG[boxes], 1)
            syrup = max(0.0, round((STORES_TARGET_KG[boxes] - stores) / 0.8, 1))
            plan.append({"hive": h["hive"], "weight_kg": round(kg, 1), "stores_kg": stores, "syrup_l": syrup})
        return {"feeding": plan}

    def check_plan(state: State) -> dict:
        named = re.findall(r"Hive (\w):", state["notes"])
        planned = [f["hive"] for f in state["feeding"]]
        if planned != named:
            raise ValueError(f"the notes name hives {', '.join(named)}, the plan covers {', '.join(planned)}")
        treated = {t["hive"] for t in state["treatments"]}
        for h in state["hives"]:
            recent = (date.fromisoformat(state["visit"]) - date.fromisoformat(REGISTRY[h["hive"]])).days < 30
            if h["mites"] > MITE_LIMIT and h["hive"] not in treated and not recent:
                raise ValueError(f"hive {h['hive']}: {h['mites']} mites per 300 bees is over {MITE_LIMIT} and no treatment is booked")
        for f in state["feeding"]:
            if f["weight_kg"] > 45:
                raise ValueError(f"hive {f['hive']}: {f['weight_kg']} kg is more than a full double brood hive weighs")
        return {}

    g = StateGraph(State)
    for name, node in [("read_notes", read_notes), ("load_records", load_records), ("assess", assess), ("treat", treat),
                       ("routine", routine), ("plan_feeding", plan_feeding), ("check_plan", check_plan)]:
        g.add_node(name, node)
    g.add_edge(START, "read_notes")
    g.add_edge("read_notes", "load_records")
    g.add_edge("load_records", "assess")
    g.add_conditional_edges("assess", route_visit, {"treat": "treat", "routine": "routine"})
    g.add_edge("treat", "plan_feeding")
    g.add_edge("routine", "plan_feeding")
    g.add_edge("plan_feeding", "check_plan")
    g.add_edge("check_plan", END)
    return g.compile()


_graph: dict[str, Any] = {}


def record(inp: dict, out: Path, ctx) -> None:
    if "g" not in _graph:
        _graph["g"] = build(ChatOpenAI(base_url=ctx.server.base_url, api_key="not-needed", model=ctx.model, max_retries=0))
    tracer = TrajdebugTracer(path=str(out), name=NAME, task=inp["task"])
    try:
        _graph["g"].invoke({"notes": inp["notes"]}, config={"callbacks": [tracer]})
    except ValueError:
        pass


CASES = [
    {"id": "apiary_1", "input": 0, "switch": "first-hive", "kind": "wrong_routing",
     "root": ("route_visit", 1), "failure": ("check_plan", 1),
     "description": "The visit router looks at the first hive only and sends the visit to routine, so hive B's 12 mites go untreated and the plan check refuses the plan."},
    {"id": "apiary_2", "input": 3, "switch": "scale-units", "kind": "unit_error",
     "root": ("plan_feeding", 1), "failure": ("check_plan", 1),
     "description": "The feeding planner takes the hive scale's pounds as kilograms, so hive J reads 70 kg and the plan check refuses the weight."},
    {"id": "apiary_3", "input": 1, "switch": "last-line", "kind": "lossy_parsing",
     "root": ("HiveLinesParser", 1), "failure": ("check_plan", 1),
     "description": "The hive-line parser drops the last line of the model's list when it has no trailing newline, so hive E is missing from the plan."},
    {"id": "apiary_4", "input": 2, "switch": "last-season", "kind": "stale_data",
     "root": ("ApiaryLog", 1), "failure": ("reserve_treatment", 1),
     "description": "The apiary log answers last season's record for hive F, so the planner books a treatment the register refuses: F was treated 18 days ago."},
    {"id": "apiary_5", "input": 4, "switch": "box-count", "kind": "hallucinated_value",
     "root": ("ChatOpenAI", 2), "failure": ("reserve_treatment", 1),
     "description": "The assessment model says hive L has 3 boxes when its record says 2, and the register refuses 6 strips for it."},
]
