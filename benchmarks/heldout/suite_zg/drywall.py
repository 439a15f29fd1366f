"""Drywall contractor estimate builder: a LangGraph StateGraph with ChatOpenAI, a retriever and a parser."""

from __future__ import annotations

import json
import math
import operator
from pathlib import Path
from typing import Annotated, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .kit import active

AGENT = "drywall-estimator"
ROUTE = "langgraph"
DOMAIN = "drywall contractor estimates"
SHAPE = "intake -> code specs (retriever) -> takeoff (LLM) + TakeoffParser -> price loop (tool per board) -> supplier delivery quote (tool) -> book delivery -> labour (LLM) -> issue estimate"
EXT = "jsonl"

SPECS = [
    Document(page_content="Garage to dwelling separation wall: 5/8 in Type X gypsum board, taped and finished.",
             metadata={"id": "IRC-R302.6", "use": "garage"}),
    Document(page_content="Bathroom and laundry walls: 1/2 in moisture-resistant board.", metadata={"id": "SPEC-MR", "use": "wet"}),
    Document(page_content="Living rooms, bedrooms, hallways: 1/2 in regular gypsum board.", metadata={"id": "SPEC-REG", "use": "dry"}),
]
BOARD_FOR = {"IRC-R302.6": ("5/8", "type-x"), "SPEC-MR": ("1/2", "mr"), "SPEC-REG": ("1/2", "regular")}
PRICE_LIST = {("1/2", "regular"): 11.20, ("1/2", "mr"): 14.10, ("5/8", "type-x"): 15.80, ("1/2", "type-x"): 13.40}
RATE_CARD = {"hang": 52.00, "finish": 58.00}
INPUTS = {
    "a": {"job": "DW-3310", "rooms": [
        {"name": "Garage", "use": "garage", "perimeter_lf": 84, "height_ft": 9, "ceiling_sqft": 440},
        {"name": "Bath 2", "use": "wet", "perimeter_lf": 30, "height_ft": 8, "ceiling_sqft": 56},
        {"name": "Hall", "use": "dry", "perimeter_lf": 44, "height_ft": 8, "ceiling_sqft": 90}], "deliver_by": "2026-08-14"},
    "b": {"job": "DW-3342", "rooms": [
        {"name": "Garage", "use": "garage", "perimeter_lf": 72, "height_ft": 10, "ceiling_sqft": 320},
        {"name": "Bedroom 3", "use": "dry", "perimeter_lf": 48, "height_ft": 8, "ceiling_sqft": 140}], "deliver_by": "2026-08-20"},
    "r1": {"job": "DW-3201", "rooms": [
        {"name": "Laundry", "use": "wet", "perimeter_lf": 26, "height_ft": 8, "ceiling_sqft": 40}], "deliver_by": "2026-07-10"},
    "r2": {"job": "DW-3225", "rooms": [
        {"name": "Den", "use": "dry", "perimeter_lf": 52, "height_ft": 8, "ceiling_sqft": 165},
        {"name": "Bath 1", "use": "wet", "perimeter_lf": 28, "height_ft": 8, "ceiling_sqft": 48}], "deliver_by": "2026-07-16"},
    "r3": {"job": "DW-3260", "rooms": [
        {"name": "Garage", "use": "garage", "perimeter_lf": 80, "height_ft": 9, "ceiling_sqft": 400}], "deliver_by": "2026-07-22"},
    "r4": {"job": "DW-3288", "rooms": [
        {"name": "Office", "use": "dry", "perimeter_lf": 40, "height_ft": 9, "ceiling_sqft": 100},
        {"name": "Garage", "use": "garage", "perimeter_lf": 70, "height_ft": 9, "ceiling_sqft": 300}], "deliver_by": "2026-07-30"},
}
REFS = ["r1", "r2", "r3", "r4"]


def policy(request):
    msgs = request.body["messages"]
    task = msgs[0]["content"].split(":", 1)[0]
    data = json.loads(msgs[-1]["content"])
    if task == "TAKEOFF":
        lines = [f"{r['name']} | walls {r['perimeter_lf']} lf x {r['height_ft']} ft | ceiling {r['ceiling_sqft']} sqft"
                 for r in data["rooms"]]
        return "\n".join(lines)
    if task == "LABOUR":
        hours = round(data["sheets"] * 0.45, 1)
        rate = data["rate_card"]["hang"]
        if active("dw-3"):
            rate = 38.50
        return json.dumps({"hours": hours, "rate": rate, "labour_total": round(hours * rate, 2)})
    return "{}"


class SpecRetriever(BaseRetriever):
    """Building-code and spec snippets by room use."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        use = query.split("use=")[1]
        if use == "garage" and active("dw-2"):
            use = "wet"
        return [d for d in SPECS if d.metadata["use"] == use]


@tool
def price_board(thickness: str, grade: str, sheets: int) -> str:
    """Supplier price of 4x12 gypsum sheets."""
    key = ("1/2", grade) if active("dw-5") else (thickness, grade)
    return json.dumps({"thickness": thickness, "grade": grade, "sheets": sheets, "unit_price": PRICE_LIST[key]})


@tool
def delivery_quote(job: str, deliver_by: str, sheets: int) -> str:
    """Supplier delivery slot for a job."""
    y, m, d = deliver_by.split("-")
    day = f"{m}/{int(d) - 1:02d}/{y}" if active("dw-4") else f"{y}-{m}-{int(d) - 1:02d}"
    return json.dumps({"job": job, "delivery_date": day, "truck": "boom", "sheets": sheets})


def _parse_takeoff(text) -> list:
    rooms = []
    for line in text.content.splitlines():
        name, walls, ceiling = [p.strip() for p in line.split("|")]
        lf, ht = walls.replace("walls ", "").replace(" lf", "").replace(" ft", "").split(" x ")
        room = {"name": name, "wall_sqft": int(lf) * int(ht)}
        if not active("dw-1"):
            room["ceiling_sqft"] = int(ceiling.split()[1])
        rooms.append(room)
    return rooms


class DwState(TypedDict, total=False):
    job: str
    rooms: list
    deliver_by: str
    specs: Annotated[dict, operator.or_]
    takeoff: list
    lines: Annotated[list, operator.add]
    todo: list
    delivery: dict
    booked: str
    labour: dict


def record(server, inp: dict, out: Path) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="local", model=server.model, max_retries=0)
    retriever = SpecRetriever()
    parser = RunnableLambda(_parse_takeoff).with_config(run_name="TakeoffParser")

    def intake(state: DwState) -> dict:
        return {"todo": [r["name"] for r in state["rooms"]]}

    def find_specs(state: DwState, config: RunnableConfig) -> dict:
        specs = {}
        for use in sorted({r["use"] for r in state["rooms"]}):
            docs = retriever.invoke(f"drywall board for use={use}", config=config)
            specs[use] = docs[0].metadata["id"]
        return {"specs": specs}

    def takeoff(state: DwState, config: RunnableConfig) -> dict:
        chain = llm | parser
        rooms = chain.invoke([SystemMessage("TAKEOFF: one line per room, walls and ceiling"),
                              HumanMessage(json.dumps({"rooms": state["rooms"]}))], config=config)
        return {"takeoff": rooms}

    def price_room(state: DwState, config: RunnableConfig) -> dict:
        name, rest = state["todo"][0], state["todo"][1:]
        use = next(r["use"] for r in state["rooms"] if r["name"] == name)
        room = next(r for r in state["takeoff"] if r["name"] == name)
        area = room["wall_sqft"] + room.get("ceiling_sqft", 0)
        sheets = math.ceil(area * 1.10 / 48)
        thickness, grade = BOARD_FOR[state["specs"][use]]
        priced = json.loads(price_board.invoke({"thickness": thickness, "grade": grade, "sheets": sheets}, config=config))
        return {"todo": rest, "lines": [{"room": name, **priced}]}

    def more_rooms(state: DwState) -> str:
        return "price_room" if state["todo"] else "quote_delivery"

    def quote_delivery(state: DwState, config: RunnableConfig) -> dict:
        sheets = sum(ln["sheets"] for ln in state["lines"])
        q = delivery_quote.invoke({"job": state["job"], "deliver_by": state["deliver_by"], "sheets": sheets}, config=config)
        return {"delivery": json.loads(q)}

    def book_delivery(state: DwState) -> dict:
        date = state["delivery"]["delivery_date"]
        parts = date.split("-")
        if len(parts) != 3 or len(parts[0]) != 4:
            raise ValueError(f"delivery booking failed: HTTP 400 {{\"delivery_date\": \"'{date}' is not YYYY-MM-DD\"}}")
        return {"booked": date}

    def estimate_labour(state: DwState, config: RunnableConfig) -> dict:
        sheets = sum(ln["sheets"] for ln in state["lines"])
        msg = llm.invoke([SystemMessage("LABOUR: hours and cost to hang and finish"),
                          HumanMessage(json.dumps({"sheets": sheets, "rate_card": RATE_CARD}))], config=config)
        return {"labour": json.loads(msg.content)}

    def issue_estimate(state: DwState) -> dict:
        for r in state["rooms"]:
            need = math.ceil((r["perimeter_lf"] * r["height_ft"] + r["ceiling_sqft"]) * 1.10 / 48)
            line = next(ln for ln in state["lines"] if ln["room"] == r["name"])
            if line["sheets"] < need:
                raise ValueError(f"estimate {state['job']} not issued: {r['name']} lists {line['sheets']} sheets, "
                                 f"board area needs {need} with 10% waste")
            if r["use"] == "garage" and (line["thickness"], line["grade"]) != ("5/8", "type-x"):
                raise ValueError(f"estimate {state['job']} not issued: {r['name']} separation wall needs 5/8 in Type X, "
                                 f"estimate lists {line['thickness']} in {line['grade']}")
            listed = PRICE_LIST[(line["thickness"], line["grade"])]
            if line["unit_price"] != listed:
                raise ValueError(f"estimate {state['job']} not issued: {line['thickness']} {line['grade']} priced "
                                 f"{line['unit_price']:.2f}/sheet, supplier list {listed:.2f}")
        if state["labour"]["rate"] not in RATE_CARD.values():
            raise ValueError(f"estimate {state['job']} not issued: labour rate {state['labour']['rate']:.2f}/h "
                             "is not on the rate card")
        return {}

    g = StateGraph(DwState)
    for name, fn in [("intake", intake), ("find_specs", find_specs), ("takeoff", takeoff), ("price_room", price_room),
                     ("quote_delivery", quote_delivery), ("book_delivery", book_delivery),
                     ("estimate_labour", estimate_labour), ("issue_estimate", issue_estimate)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "find_specs")
    g.add_edge("find_specs", "takeoff")
    g.add_edge("takeoff", "price_room")
    g.add_conditional_edges("price_room", more_rooms)
    g.add_edge("quote_delivery", "book_delivery")
    g.add_edge("book_delivery", "estimate_labour")
    g.add_edge("estimate_labour", "issue_estimate")
    g.add_edge("issue_estimate", END)
    tracer = TrajdebugTracer(path=str(out), name=AGENT, task=f"drywall estimate {inp['job']}")
    g.compile().invoke({"job": inp["job"], "rooms": inp["rooms"], "deliver_by": inp["deliver_by"]},
                       config={"callbacks": [tracer], "recursion_limit": 60})


CASES_SPEC = [
    ("dw-1", "lossy_parsing", "a", "TakeoffParser", "wall_sqft", "issue_estimate",
     "The takeoff parser keeps each room's wall area but drops the ceiling area, so too few sheets are priced."),
    ("dw-2", "wrong_retrieval", "b", "SpecRetriever", "SPEC-MR", "issue_estimate",
     "The spec retriever answers the moisture-resistant board spec for the garage separation wall."),
    ("dw-3", "hallucinated_value", "a", "ChatOpenAI", "38.5", "issue_estimate",
     "The labour estimate states an hourly rate of 38.50 that the rate card it was given does not hold."),
    ("dw-4", "format_drift", "b", "delivery_quote", "08/19/2026", "book_delivery",
     "The supplier delivery quote answers the date as MM/DD/YYYY instead of ISO, which the delivery booking cannot read."),
    ("dw-5", "tool_ignores_argument", "a", "price_board", "type-x", "issue_estimate",
     "The board price tool ignores the 5/8 thickness it is given and answers the 1/2 in Type X price."),
]
