"""Board game café table reservations: a LangGraph tool-calling loop (ChatOpenAI.bind_tools + ToolNode)."""
from __future__ import annotations

import json
import re
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from .kit import active

AGENT, ROUTE, EXT = "boardgame-cafe-tables", "langgraph", "jsonl"
DOMAIN = "board game café table reservations"
SHAPE = "graph: intake (model + parse_request) -> assistant <-> tools loop (find_tables, game_info, list_slots, hold_table) -> parse_booking -> finalize"

INPUTS = {
    "ortiz": "Table for 6 on Friday at 19:00 to play Twilight Imperium, step-free access needed, name Ortiz.",
    "kaur": "Table for 4 on Saturday at 18:00 to play Wingspan, name Kaur.",
    "r1": "Table for 2 on Thursday at 20:00 to play Patchwork, name Lindqvist.",
    "r2": "Table for 5 on Sunday at 18:30 to play Brass Birmingham, step-free access needed, name Mbeki.",
    "r3": "Table for 3 on Friday at 18:00 to play Azul, name Novak.",
    "r4": "Table for 6 on Saturday at 19:30 to play Scythe, name Haddad.",
}
REFS = ["r1", "r2", "r3", "r4"]
TABLES = [{"table": "T4", "seats": 8, "floor": "mezzanine", "step_free": False},
          {"table": "T2", "seats": 6, "floor": "ground", "step_free": True},
          {"table": "T7", "seats": 4, "floor": "ground", "step_free": True},
          {"table": "T9", "seats": 2, "floor": "ground", "step_free": True}]
GAMES = {"Twilight Imperium": 360, "Wingspan": 75, "Patchwork": 30, "Brass Birmingham": 150, "Azul": 45, "Scythe": 120}
SLOTS = ["17:30", "18:00", "18:30", "19:00", "19:30", "20:00", "20:30"]

CASES = [
    ("zh-boardgame-01", "tool_ignores_argument", "ortiz", ("find_tables", 1, "tool"), "finalize",
     "find_tables ignores the accessible argument and lists the mezzanine table first, which finalize refuses for a step-free booking."),
    ("zh-boardgame-02", "lossy_parsing", "ortiz", ("parse_request", 1, "other"), "finalize",
     "parse_request drops the step-free requirement, so the search and hold go to the mezzanine table."),
    ("zh-boardgame-03", "unit_error", "kaur", ("game_info", 1, "tool"), "finalize",
     "game_info reports playtime in hours under its minutes field, so the table is held for 1.25 minutes."),
    ("zh-boardgame-04", "off_by_one", "kaur", ("parse_booking", 1, "other"), "finalize",
     "parse_booking reads the model's 1-based slot number as a 0-based index and books the slot after the one held."),
    ("zh-boardgame-05", "hallucinated_value", "kaur", ("ChatOpenAI", 6, "llm"), "finalize",
     "the assistant's final answer adds a discount code no tool returned, and the reservation API rejects it."),
]


def _tool_results(msgs):
    return [json.loads(m["content"]) for m in msgs if m["role"] == "tool"]


def policy(request):
    msgs = request.body["messages"]
    first = msgs[0]["content"]
    if first.startswith("Extract"):
        user = msgs[-1]["content"]
        m = re.search(r"Table for (\d+) on (\w+) at ([\d:]+) to play (.+?), (step-free access needed, )?name (\w+)\.", user)
        return json.dumps({"party": int(m.group(1)), "day": m.group(2), "time": m.group(3), "game": m.group(4),
                           "accessible": bool(m.group(5)), "name": m.group(6)})
    req = json.loads(msgs[1]["content"])
    done = _tool_results(msgs)
    if len(done) == 0:
        return Reply(tool_calls=(tool_call("find_tables", {"party_size": req["party"], "accessible": req.get("accessible", False)}),))
    if len(done) == 1:
        return Reply(tool_calls=(tool_call("game_info", {"title": req["game"]}),))
    if len(done) == 2:
        return Reply(tool_calls=(tool_call("list_slots", {"table": done[0][0]["table"], "day": req["day"]}),))
    if len(done) == 3:
        slot = done[2]["slots"].index(req["time"]) + 1
        return Reply(tool_calls=(tool_call("hold_table", {"table": done[0][0]["table"], "day": req["day"],
                                                          "start": req["time"], "minutes": done[1]["minutes"]}),))
    hold = done[3]
    slot = done[2]["slots"].index(hold["start"]) + 1
    code = "none"
    if active("zh-boardgame-05"):
        code = "MEEPLE10"
    return (f"Booking ready: table {hold['table']}, slot {slot} of the {req['day']} list, "
            f"{hold['minutes']} minutes, hold {hold['hold']}, discount code {code}.")


@tool
def find_tables(party_size: int, accessible: bool = False) -> list[dict]:
    """Tables that seat the party, smallest first; accessible=True keeps step-free tables only."""
    rows = sorted((t for t in TABLES if t["seats"] >= party_size), key=lambda t: (t["step_free"], t["seats"]))
    if accessible and not active("zh-boardgame-01"):
        rows = [t for t in rows if t["step_free"]]
    return rows


@tool
def game_info(title: str) -> dict:
    """Library record of a game: players and playtime in minutes."""
    minutes = GAMES[title]
    if active("zh-boardgame-03"):
        return {"title": title, "minutes": round(minutes / 60, 2)}
    return {"title": title, "minutes": minutes}


@tool
def list_slots(table: str, day: str) -> dict:
    """Start times open on a table that day."""
    return {"table": table, "day": day, "slots": SLOTS}


@tool
def hold_table(table: str, day: str, start: str, minutes: float) -> dict:
    """Hold a table for a start time and a duration."""
    return {"table": table, "day": day, "start": start, "minutes": minutes, "hold": f"HD-{table}-{day[:3]}-{start.replace(':', '')}"}


def _parse_request(msg) -> dict:
    data = json.loads(msg.content)
    if active("zh-boardgame-02"):
        data.pop("accessible")
    return data


def _parse_booking(inp: dict) -> dict:
    text = inp["answer"]
    m = re.search(r"table (\w+), slot (\d+) of the (\w+) list, ([\d.]+) minutes, hold ([\w-]+), discount code (\w+)", text)
    n = int(m.group(2))
    idx = n if active("zh-boardgame-04") else n - 1
    return {"table": m.group(1), "day": m.group(3), "start": inp["slots"][idx], "minutes": float(m.group(4)),
            "hold": m.group(5), "discount": None if m.group(6) == "none" else m.group(6)}


class S(TypedDict, total=False):
    text: str
    request: dict
    messages: Annotated[list[AnyMessage], add_messages]
    booking: dict
    result: str


def build(llm):
    tools = [find_tables, game_info, list_slots, hold_table]
    brain = llm.bind_tools(tools)
    parse_request = RunnableLambda(_parse_request, name="parse_request")
    parse_booking = RunnableLambda(_parse_booking, name="parse_booking")

    def intake(state: S) -> dict:
        msg = llm.invoke([("system", "Extract the reservation request as JSON."), ("user", state["text"])])
        req = parse_request.invoke(msg)
        return {"request": req, "messages": [("system", "You book tables for the café; use the tools."),
                                             ("user", json.dumps(req))]}

    def assistant(state: S) -> dict:
        return {"messages": [brain.invoke(state["messages"])]}

    def after(state: S) -> str:
        return "tools" if state["messages"][-1].tool_calls else "read"

    def read(state: S) -> dict:
        slots = next(json.loads(m.content)["slots"] for m in state["messages"] if getattr(m, "name", None) == "list_slots")
        return {"booking": parse_booking.invoke({"answer": state["messages"][-1].content, "slots": slots})}

    def finalize(state: S) -> dict:
        req, b = state["request"], state["booking"]
        table = next(t for t in TABLES if t["table"] == b["table"])
        holds = [json.loads(m.content) for m in state["messages"] if getattr(m, "name", None) == "hold_table"]
        held = holds[-1]
        if INPUT_ACCESS[req["name"]] and not table["step_free"]:
            raise ValueError(f"reservation refused: table {table['table']} ({table['floor']}) has no step-free access")
        if b["start"] != held["start"]:
            raise ValueError(f"409 Conflict: no hold on table {b['table']} at {b['start']} (hold {held['hold']} is for {held['start']})")
        if b["minutes"] < 30:
            raise ValueError(f"422 Unprocessable Entity: booking length {b['minutes']} min is below the 30 min minimum")
        if b["discount"] is not None:
            raise ValueError(f"422 Unprocessable Entity: unknown discount code {b['discount']}")
        return {"result": f"reserved {b['table']} {b['day']} {b['start']} for {req['name']}"}

    g = StateGraph(S)
    g.add_node("intake", intake)
    g.add_node("assistant", assistant)
    g.add_node("tools", ToolNode(tools))
    g.add_node("read", read)
    g.add_node("finalize", finalize)
    g.add_edge(START, "intake")
    g.add_edge("intake", "assistant")
    g.add_conditional_edges("assistant", after, {"tools": "tools", "read": "read"})
    g.add_edge("tools", "assistant")
    g.add_edge("read", "finalize")
    g.add_edge("finalize", END)
    return g.compile()


INPUT_ACCESS = {re.search(r"name (\w+)", v).group(1): "step-free" in v for v in INPUTS.values()}


def record(key: str, fault: str | None, out, server) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=str(out), name=AGENT, task=INPUTS[key])
    try:
        build(llm).invoke({"text": INPUTS[key]}, config={"callbacks": [tracer]})
    except ValueError:
        pass
