"""A small apiary's harvest-day logger (LangGraph StateGraph + LangChain runnables, trajdebug's tracer):
field notes to hives, scale readings, moisture, a bottling plan, prices and jar labels."""

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

from . import common

NAME = "hillside-apiary-harvest"
ROUTE = "langgraph"
DOMAIN = "apiary: harvest-day notes to weights, moisture, bottling plan, prices, labels"
SHAPE = "StateGraph: extract(llm+parser) -> weigh(scale tool) -> reconcile -> moisture(tool) -> grade -> plan(llm) -> bottling(tool) -> price(retriever) -> conditional route -> labels(tool) or hold -> final check"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


INPUTS = {
    "hillside": "Harvest 2025-08-02 at Hillside yard. Supers pulled: H1 3, H2 2, H3 2, H4 1, H7b 2 (split from H7 in May). Frames 90% capped.",
    "meadow": "Harvest 2025-08-03 at Meadow yard. Supers pulled: M1 2, M2 2, M3 2, M4 2, M5 2, M6 1, M8 2. Capping good.",
    "orchard": "Harvest 2025-08-05 at Orchard yard. Supers pulled: O1 2, O2 1, O3 2. Some uncapped frames left on.",
    "heather": "Harvest 2025-08-09 at Heather moor. Supers pulled: Q1 1, Q2 2, Q3 1, Q4 1. Heather honey, thixotropic, press needed.",
    "linden": "Harvest 2025-08-10 at Linden lane. Supers pulled: L1 2, L2 3, L3 2. Light linden honey.",
}

CASES = [
    {"id": "apiary_split_hive", "input": "hillside", "switch": "hive_regex", "fault_kind": "lossy_parsing",
     "root": ("HiveListParser", 1), "failure": ("reconcile_supers", 1),
     "description": "The hive-list parser matched ids as a letter and digits only, dropped the split hive H7b, and the reconciliation found scale readings for a hive not on the list."},
    {"id": "apiary_scale_page", "input": "meadow", "switch": "scale_page", "fault_kind": "truncated_result",
     "root": ("scale_log", 1), "failure": ("reconcile_supers", 1),
     "description": "The scale hub answered only its first page of 10 readings for 13 supers, and the reconciliation counted supers without a weight."},
    {"id": "apiary_refractometer_fraction", "input": "orchard", "switch": "moisture_fraction", "fault_kind": "unit_error",
     "root": ("refractometer", 1), "failure": ("final_check", 1),
     "description": "The refractometer tool gave moisture as a fraction (0.176) instead of percent, the grade read it as very dry honey, and the final check rejected a reading below the instrument's range."},
    {"id": "apiary_no_settling", "input": "heather", "switch": "skip_settle", "fault_kind": "plan_error",
     "root": ("ChatOpenAI", 2), "failure": ("book_bottling", 1),
     "description": "The bottling plan left out the 48-hour settling step and put bottling on the extraction day, which the bottling booking refused."},
    {"id": "apiary_old_price_list", "input": "linden", "switch": "price_year", "fault_kind": "stale_data",
     "root": ("PriceListRetriever", 1), "failure": ("final_check", 1),
     "description": "The price retriever ranked the 2023 co-op price sheet first, and the final check found the jar price under the 2025 floor."},
]

SCALE = {  # kg per super, by hive id
    "H1": 14.2, "H2": 12.8, "H3": 13.1, "H4": 11.0, "H7b": 9.4,
    "M1": 12.5, "M2": 13.0, "M3": 11.8, "M4": 12.2, "M5": 12.9, "M6": 10.4, "M8": 11.1,
    "O1": 12.0, "O2": 10.5, "O3": 12.7, "Q1": 8.9, "Q2": 9.6, "Q3": 9.1, "Q4": 8.7, "L1": 13.4, "L2": 14.0, "L3": 12.6,
}
MOISTURE = {"Hillside": 17.4, "Meadow": 17.9, "Orchard": 17.6, "Heather": 18.3, "Linden": 16.9}
PRICE_DOCS = [
    Document(page_content="Co-op wholesale price sheet 2025: 340 g jar 7.60, heather 340 g jar 9.80. Floor 7.20.",
             metadata={"year": 2025, "jar_price": 7.60, "heather_price": 9.80, "floor": 7.20}),
    Document(page_content="Co-op wholesale price sheet 2023: 340 g jar 6.50, heather 340 g jar 8.40. Floor 6.20.",
             metadata={"year": 2023, "jar_price": 6.50, "heather_price": 8.40, "floor": 6.20}),
]
FLOOR_2025 = 7.20

EXTRACT_SYS = "You read beekeepers' harvest notes. Answer with JSON: {\"yard\", \"date\", \"hives\": [{\"hive\", \"supers\"}]}."
PLAN_SYS = "You plan honey extraction and bottling. Answer with JSON: {\"steps\": [{\"do\", \"date\"}], \"jars\": n} using 340 g jars and 75% of super weight as honey."


def brain(request):
    system = common.system_of(request)
    user = common.last_user(request)
    if system.startswith("You read beekeepers"):
        yard = re.search(r"at (\w+)", user).group(1)
        date = re.search(r"\d{4}-\d{2}-\d{2}", user).group(0)
        hives = [{"hive": h, "supers": int(n)} for h, n in re.findall(r"\b([A-Z]\d+[a-z]?) (\d+)\b", user)]
        return json.dumps({"yard": yard, "date": date, "hives": hives})
    if system.startswith("You plan honey"):
        data = json.loads(user)
        y, m, d = data["date"].split("-")
        settle = f"{y}-{m}-{int(d) + 2:02d}"
        jars = int(data["net_kg"] * 1000 // 340)
        steps = [{"do": "extract", "date": data["date"]}]
        if data.get("press"):
            steps[0]["do"] = "press and extract"
        if _on("skip_settle"):
            steps.append({"do": "bottle", "date": data["date"]})
        else:
            steps += [{"do": "settle 48h", "date": data["date"]}, {"do": "bottle", "date": settle}]
        return json.dumps({"steps": steps, "jars": jars})
    return "{}"


class HiveListParser(BaseOutputParser[dict]):
    """Reads the model's JSON hive list."""

    def parse(self, text: str) -> dict:
        data = json.loads(text)
        if _on("hive_regex"):
            data["hives"] = [h for h in data["hives"] if re.fullmatch(r"[A-Z]\d+", h["hive"])]
        return {"yard": data["yard"], "date": data["date"], "hives": [{"hive": h["hive"], "supers": int(h["supers"])} for h in data["hives"]]}


class PriceListRetriever(BaseRetriever):
    """The co-op's price sheets, newest first."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        docs = sorted(PRICE_DOCS, key=lambda d: d.metadata["year"], reverse=not _on("price_year"))
        return docs


@tool
def scale_log(yard: str, hives: list[str]) -> dict:
    """Readings of the extraction-room scale for the given yard's supers, one per super."""
    readings = []
    for h in hives:
        for n in range(CURRENT["supers"][h]):
            readings.append({"hive": h, "super": n + 1, "kg": SCALE[h]})
    if _on("scale_page"):
        readings = readings[:10]
    return {"yard": yard, "readings": readings}


@tool
def refractometer(yard: str) -> dict:
    """Moisture of the yard's extracted honey, in percent."""
    value = MOISTURE[yard]
    if _on("moisture_fraction"):
        value = round(value / 100, 3)
    return {"yard": yard, "moisture": value}


@tool
def book_bottling(date: str, extracted: str, jars: int) -> dict:
    """Book the bottling line."""
    if date <= extracted:
        raise ValueError(f"batch extracted {extracted} must settle 48 h before bottling; bottling booked {date}")
    return {"line": "bottling-1", "date": date, "jars": jars}


@tool
def print_labels(yard: str, grade: str, jars: int, price: float) -> dict:
    """Print jar labels."""
    return {"printed": jars, "label": f"{yard} honey, grade {grade}, 340 g, {price:.2f}"}


class Harvest(TypedDict, total=False):
    notes: str
    harvest: dict
    readings: list
    supers: dict
    moisture: dict
    grade: str
    plan: dict
    bottling: dict
    prices: list
    labels: dict
    report: str


def build(llm):
    parser = HiveListParser()
    retriever = PriceListRetriever()

    def extract_hives(state: Harvest) -> dict:
        reply = llm.invoke([SystemMessage(EXTRACT_SYS), HumanMessage(state["notes"])])
        return {"harvest": parser.invoke(reply.content)}

    def weigh_frames(state: Harvest) -> dict:
        h = state["harvest"]
        log = scale_log.invoke({"yard": h["yard"], "hives": sorted(CURRENT["supers"])})
        return {"readings": log["readings"]}

    def reconcile_supers(state: Harvest) -> dict:
        listed = {h["hive"]: h["supers"] for h in state["harvest"]["hives"]}
        weighed: dict = {}
        for r in state["readings"]:
            if r["hive"] not in listed:
                raise ValueError(f"scale readings for hive {r['hive']} match no hive in the harvest list")
            weighed[r["hive"]] = weighed.get(r["hive"], 0) + 1
        for hive, n in listed.items():
            if weighed.get(hive, 0) != n:
                raise ValueError(f"hive {hive}: {n} supers pulled, {weighed.get(hive, 0)} weighed")
        return {"supers": {"count": sum(listed.values()), "kg": round(sum(r["kg"] for r in state["readings"]), 1)}}

    def moisture_check(state: Harvest) -> dict:
        return {"moisture": refractometer.invoke({"yard": state["harvest"]["yard"]})}

    def grade_honey(state: Harvest) -> dict:
        m = state["moisture"]["moisture"]
        return {"grade": "A" if m <= 18.0 else ("B" if m <= 20.0 else "feed")}

    def plan_jars(state: Harvest) -> dict:
        payload = {"date": state["harvest"]["date"], "net_kg": round(state["supers"]["kg"] * 0.75, 1),
                   "press": state["harvest"]["yard"] == "Heather"}
        reply = llm.invoke([SystemMessage(PLAN_SYS), HumanMessage(json.dumps(payload))])
        return {"plan": json.loads(reply.content)}

    def schedule_bottling(state: Harvest) -> dict:
        bottle = [s for s in state["plan"]["steps"] if s["do"] == "bottle"][0]
        booked = book_bottling.invoke({"date": bottle["date"], "extracted": state["harvest"]["date"], "jars": state["plan"]["jars"]})
        return {"bottling": booked}

    def price_jars(state: Harvest) -> dict:
        docs = retriever.invoke(f"wholesale jar price {state['harvest']['yard']}")
        return {"prices": [d.metadata for d in docs]}

    def route_batch(state: Harvest) -> str:
        return "label_jars" if state["grade"] in ("A", "B") else "hold_batch"

    def label_jars(state: Harvest) -> dict:
        sheet = state["prices"][0]
        price = sheet["heather_price"] if state["harvest"]["yard"] == "Heather" else sheet["jar_price"]
        return {"labels": print_labels.invoke({"yard": state["harvest"]["yard"], "grade": state["grade"],
                                               "jars": state["plan"]["jars"], "price": price})}

    def hold_batch(state: Harvest) -> dict:
        return {"labels": {"printed": 0, "label": "held for feeding"}}

    def final_check(state: Harvest) -> dict:
        m = state["moisture"]["moisture"]
        if not 12.0 <= m <= 30.0:
            raise ValueError(f"moisture {m} is outside the refractometer's range 12-30 %")
        price = float(state["labels"]["label"].rsplit(", ", 1)[1])
        if price < FLOOR_2025:
            raise ValueError(f"label price {price:.2f} is under the 2025 co-op floor {FLOOR_2025:.2f}")
        return {"report": f"{state['harvest']['yard']}: {state['plan']['jars']} jars, grade {state['grade']}"}

    g = StateGraph(Harvest)
    for fn in (extract_hives, weigh_frames, reconcile_supers, moisture_check, grade_honey, plan_jars,
               schedule_bottling, price_jars, label_jars, hold_batch, final_check):
        g.add_node(fn.__name__, fn)
    order = ["extract_hives", "weigh_frames", "reconcile_supers", "moisture_check", "grade_honey", "plan_jars",
             "schedule_bottling", "price_jars"]
    g.add_edge(START, order[0])
    for a, b in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_conditional_edges("price_jars", route_batch, ["label_jars", "hold_batch"])
    g.add_edge("label_jars", "final_check")
    g.add_edge("hold_batch", "final_check")
    g.add_edge("final_check", END)
    return g.compile()


CURRENT: dict = {}
_GRAPH: dict = {}


def record(key: str, path: str) -> None:
    notes = INPUTS[key]
    CURRENT.clear()
    CURRENT["supers"] = {h: int(n) for h, n in re.findall(r"\b([A-Z]\d+[a-z]?) (\d+)\b", notes)}
    CURRENT["yard_name"] = re.search(r"at (\w+)", notes).group(1)
    if "graph" not in _GRAPH or _GRAPH["url"] != common.SERVER.base_url:
        llm = ChatOpenAI(base_url=common.SERVER.base_url, api_key="not-needed", model=common.SERVER.model, max_retries=0)
        _GRAPH.update(graph=build(llm), url=common.SERVER.base_url)
    tracer = TrajdebugTracer(path=path, name=NAME, task=notes)
    try:
        _GRAPH["graph"].invoke({"notes": notes}, config={"callbacks": [tracer]})
    except Exception:
        pass
