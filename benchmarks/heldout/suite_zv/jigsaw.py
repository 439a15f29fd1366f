"""Jigsaw puzzle manufacturing: plan die cutting and board for a print order, then book the press (LangGraph)."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from .common import Case
from .kit import active

AGENT = "jigsaw-production-planner"
ROUTE = "langgraph"

ORDERS = {
    "J-3307": {"image": "IMG-2270", "pieces": 1000, "quantity": 1200, "reprint_of": "IMG-2207", "w": 700, "h": 500},
    "J-3342": {"image": "IMG-3115", "pieces": 500, "quantity": 800, "reprint_of": "IMG-3151", "w": 490, "h": 360},
    "J-3360": {"image": "IMG-4021", "pieces": 1000, "quantity": 600, "reprint_of": "IMG-4012", "w": 680, "h": 480},
    "J-3378": {"image": "IMG-4470", "pieces": 300, "quantity": 1500, "reprint_of": "IMG-4407", "w": 460, "h": 340},
    "J-3391": {"image": "IMG-5238", "pieces": 1500, "quantity": 400, "reprint_of": "IMG-5283", "w": 850, "h": 600},
    "J-3405": {"image": "IMG-6014", "pieces": 500, "quantity": 900, "reprint_of": "IMG-6041", "w": 500, "h": 370},
}
DIES = {300: (20, 15), 500: (25, 20), 1000: (40, 25), 1500: (50, 30)}
LOTS = [("BL-11", 60), ("BL-12", 45), ("BL-14", 220), ("BL-17", 400), ("BL-19", 260)]


class Plan(TypedDict, total=False):
    order_id: str
    order: dict
    profile_raw: dict
    artwork: dict
    messages: Annotated[list[AnyMessage], add_messages]
    plan: dict
    board: dict
    qc_brief: str
    qc: dict
    booking: dict


class PressRejected(Exception):
    pass


@tool
def get_print_profile(image_id: str) -> dict:
    """Artwork print profile from the prepress server."""
    o = next(v for v in ORDERS.values() if v["image"] == image_id)
    size = f"{o['w']}x{o['h']}"
    if active("jig-03"):
        size = f"H{o['h']} W{o['w']}"  # prepress server v2 answers height first
    return {"image_id": image_id, "size_mm": size, "dpi": 300, "colour": "CMYK"}


@tool
def lookup_die(pieces: int, width_mm: int, height_mm: int) -> dict:
    """Find a cutting die for a piece count and a board size."""
    cols, rows = DIES[pieces]
    if width_mm < height_mm:
        cols, rows = rows, cols
    return {"die_id": f"D-{pieces}-{cols}x{rows}", "cols": cols, "rows": rows, "pieces": cols * rows}


@tool
def check_board_stock(grade: str) -> list:
    """Board lots in the warehouse for a grade (sheets free)."""
    lots = [{"lot": lot, "grade": grade, "sheets": n} for lot, n in LOTS]
    if active("jig-02"):
        lots = lots[:2]  # the stock API pages at two rows
    return lots


TOOLS = [get_print_profile, lookup_die, check_board_stock]


def sheets_needed(order: dict) -> int:
    per_sheet = 6 if order["w"] <= 500 else 3  # puzzle faces per greyboard sheet
    return math.ceil(order["quantity"] / per_sheet)


def policy(request):
    msgs = request.body["messages"]
    first = msgs[0]["content"] if msgs else ""
    if first.startswith("You are the QC"):
        img = re.search(r"IMG-\d+", msgs[-1]["content"]).group(0)
        return json.dumps({"approved": True, "artwork": img, "checks": ["bleed 3 mm", "die alignment", "colour proof"]})
    user = json.loads(msgs[1]["content"])
    tool_msgs = [m for m in msgs if m["role"] == "tool"]
    if not tool_msgs:
        pieces = user["pieces"] // 2 if active("jig-01") else user["pieces"]
        return Reply(tool_calls=(tool_call("lookup_die", {"pieces": pieces, "width_mm": user["width_mm"], "height_mm": user["height_mm"]}),))
    die = json.loads(tool_msgs[0]["content"])
    if len(tool_msgs) == 1 and not active("jig-04"):
        return Reply(tool_calls=(tool_call("check_board_stock", {"grade": "2.0mm greyboard"}),))
    lots, need = [], user["sheets"]
    if len(tool_msgs) > 1:
        for lot in json.loads(tool_msgs[1]["content"]):
            if need <= 0:
                break
            take = min(lot["sheets"], need)
            lots.append({"lot": lot["lot"], "sheets": take})
            need -= take
    return json.dumps({"die_id": die["die_id"], "grid": [die["cols"], die["rows"]], "board_lots": lots})


def build(llm):
    def intake(state: Plan) -> dict:
        return {"order": dict(ORDERS[state["order_id"]], order_id=state["order_id"])}

    def fetch_profile(state: Plan) -> dict:
        return {"profile_raw": get_print_profile.invoke({"image_id": state["order"]["image"]})}

    def parse_profile(state: Plan) -> dict:
        a, b = (int(x) for x in re.findall(r"\d+", state["profile_raw"]["size_mm"])[:2])
        return {"artwork": {"image_id": state["profile_raw"]["image_id"], "width_mm": a, "height_mm": b}}

    def brief(state: Plan) -> dict:
        o, art = state["order"], state["artwork"]
        req = {"order": o["order_id"], "pieces": o["pieces"], "width_mm": art["width_mm"], "height_mm": art["height_mm"],
               "sheets": sheets_needed(o)}
        return {"messages": [SystemMessage("You plan die cutting and board allocation for puzzle print runs."),
                             HumanMessage(json.dumps(req))]}

    planner_llm = llm.bind_tools([lookup_die, check_board_stock])

    def planner(state: Plan) -> dict:
        return {"messages": [planner_llm.invoke(state["messages"])]}

    def parse_plan(state: Plan) -> dict:
        return {"plan": json.loads(state["messages"][-1].content)}

    def allocate_board(state: Plan) -> dict:
        lots = state["plan"]["board_lots"]
        return {"board": {"lots": [x["lot"] for x in lots], "sheets": sum(x["sheets"] for x in lots)}}

    def qc_handoff(state: Plan) -> dict:
        o = state["order"]
        image = o["reprint_of"] if active("jig-05") else o["image"]
        return {"qc_brief": f"Review artwork {image} for order {o['order_id']} against die {state['plan']['die_id']}."}

    def qc_review(state: Plan) -> dict:
        reply = llm.invoke([SystemMessage("You are the QC reviewer for puzzle artwork."), HumanMessage(state["qc_brief"])])
        return {"qc": json.loads(reply.content)}

    qc = StateGraph(Plan)
    qc.add_node("qc_review", qc_review)
    qc.add_edge(START, "qc_review")
    qc.add_edge("qc_review", END)
    qc_agent = qc.compile()

    def schedule_press(state: Plan) -> dict:
        o, plan, board, qcr = state["order"], state["plan"], state["board"], state["qc"]
        cols, rows = plan["grid"]
        if cols * rows != o["pieces"]:
            raise PressRejected(f"press booking refused: die {plan['die_id']} cuts {cols * rows} pieces, order {o['order_id']} is for {o['pieces']}")
        if (cols > rows) != (o["w"] > o["h"]):
            raise PressRejected(f"press booking refused: die grid {cols}x{rows} does not fit artwork {o['image']} ({o['w']}x{o['h']} mm)")
        if board["sheets"] < sheets_needed(o):
            raise PressRejected(f"press booking refused: {board['sheets']} sheets allocated ({', '.join(board['lots']) or 'no lots'}), run needs {sheets_needed(o)}")
        if qcr["artwork"] != o["image"]:
            raise PressRejected(f"press booking refused: QC approval covers artwork {qcr['artwork']}, order {o['order_id']} prints {o['image']}")
        return {"booking": {"press": "Heidelberg-2", "order": o["order_id"], "die": plan["die_id"]}}

    g = StateGraph(Plan)
    for name, fn in [("intake", intake), ("fetch_profile", fetch_profile), ("parse_profile", parse_profile), ("brief", brief),
                     ("planner", planner), ("parse_plan", parse_plan), ("allocate_board", allocate_board),
                     ("qc_handoff", qc_handoff), ("qc_agent", qc_agent), ("schedule_press", schedule_press)]:
        g.add_node(name, fn)
    g.add_node("tools", ToolNode([lookup_die, check_board_stock]))
    g.add_edge(START, "intake")
    g.add_edge("intake", "fetch_profile")
    g.add_edge("fetch_profile", "parse_profile")
    g.add_edge("parse_profile", "brief")
    g.add_edge("brief", "planner")
    g.add_conditional_edges("planner", tools_condition, {"tools": "tools", END: "parse_plan"})
    g.add_edge("tools", "planner")
    g.add_edge("parse_plan", "allocate_board")
    g.add_edge("allocate_board", "qc_handoff")
    g.add_edge("qc_handoff", "qc_agent")
    g.add_edge("qc_agent", "schedule_press")
    g.add_edge("schedule_press", END)
    return g.compile()


def record(order_id: str, path: Path, server) -> None:
    server.use(policy)
    llm = ChatOpenAI(base_url=server.base_url, api_key="local-key", model="gpt-4o-mini", max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"schedule the press run for order {order_id}")
    try:
        build(llm).invoke({"order_id": order_id}, config={"callbacks": [tracer]})
    except PressRejected:
        pass


REF_INPUTS = ["J-3360", "J-3378", "J-3391", "J-3405"]
CASES = [
    Case("jig-01", "wrong_tool_args", "J-3307", ("ChatOpenAI", 1), ("schedule_press", 1),
         "The planner asks the die lookup for half the ordered piece count."),
    Case("jig-02", "truncated_result", "J-3342", ("check_board_stock", 1), ("schedule_press", 1),
         "The board stock lookup returns only its first two lots, so the allocation falls short."),
    Case("jig-03", "format_drift", "J-3307", ("get_print_profile", 1), ("schedule_press", 1),
         "The prepress profile answers the size height first, and the digit parser reads it as width by height."),
    Case("jig-04", "plan_error", "J-3342", ("ChatOpenAI", 2), ("schedule_press", 1),
         "The planner finalises the plan after the die lookup without checking board stock, allocating no board."),
    Case("jig-05", "subagent_wrong_entity", "J-3307", ("qc_handoff", 1), ("schedule_press", 1),
         "The QC hand-off briefs the sub-agent with the artwork of the earlier print instead of this order's."),
]
