"""Mountain hut: bed bookings (recording route: LangGraph through trajdebug's LangChain tracer).

Shape: a tool-calling loop: a ChatOpenAI agent node bound to tools and a prebuilt ToolNode (parallel
tool calls: guest-note recall with the bed check, then the guest note saved with the member
discount), then a commit node that reads the guest note back from memory and books through the
alpine club's booking API, which refuses what it cannot honour. The model's final JSON is the
booking the commit node reads.
"""
from __future__ import annotations

import json
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

RUN_NAME = "mountain-hut-beds"
ROUTE = "langgraph"
DOMAIN = "a mountain hut's bed bookings"
SHAPE = "ReAct loop: ChatOpenAI agent node <-> ToolNode (parallel tool calls, memory tools) x3 turns -> commit node (memory read tool + booking API tool); 18-19 steps"

SWITCH = None

INPUTS = [
    {"guest": "Familie Brunner", "hut": "Laemmerenhuette", "arrival": "2026-07-14", "nights": 3, "party": 5,
     "adults": 2, "diet": ["vegetarian"], "member_no": "SAC-10233"},
    {"guest": "Ines Caduff", "hut": "Tierberglihuette", "arrival": "2026-08-02", "nights": 1, "party": 2,
     "adults": 2, "diet": [], "member_no": None},
    {"guest": "Bergclub Wil", "hut": "Laemmerenhuette", "arrival": "2026-08-20", "nights": 2, "party": 8,
     "adults": 8, "diet": ["gluten-free", "vegan"], "member_no": "SAC-55120"},
    {"guest": "Tomasz Wrobel", "hut": "Chamanna Coaz", "arrival": "2026-07-30", "nights": 2, "party": 3,
     "adults": 1, "diet": [], "member_no": None},
    {"guest": "Elodie Favre", "hut": "Cabane de Moiry", "arrival": "2026-09-05", "nights": 4, "party": 4,
     "adults": 4, "diet": ["lactose-free"], "member_no": "CAF-8812"},
]

CASES = [
    {"id": "zzzb_hut_01", "input": 0, "switch": "one_night_hold", "kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 1), "failure": ("alpine_club_booking", 1),
     "description": "The model's bed check for the Brunners asked for 1 night instead of the 3 they wrote, so the hold did not cover the stay and the club's system refused the booking."},
    {"id": "zzzb_hut_02", "input": 3, "switch": "note_party_from_adults", "kind": "bad_memory_write",
     "root": ("save_guest_note", 1), "failure": ("alpine_club_booking", 1),
     "description": "The guest note saved the party as 1 (the adults only) for a party of 3, so half board was asked for fewer guests than beds and the booking was refused."},
    {"id": "zzzb_hut_03", "input": 2, "switch": "morning_snapshot", "kind": "stale_data",
     "root": ("check_beds", 1), "failure": ("alpine_club_booking", 1),
     "description": "The bed check answered from the hut's 06:00 cache, with that morning's hold id since released, so the club's system found no live hold for the Bergclub Wil booking."},
    {"id": "zzzb_hut_04", "input": 1, "switch": "member_number_made_up", "kind": "hallucinated_value",
     "root": ("ChatOpenAI", 3), "failure": ("alpine_club_booking", 1),
     "description": "The model's final booking gave Ines Caduff a member number (SAC-44812) she never gave and no tool returned, which the club's register does not know."},
    {"id": "zzzb_hut_05", "input": 4, "switch": "note_store_read_only", "kind": "swallowed_error",
     "root": ("save_guest_note", 1), "failure": ("read_guest_note", 1),
     "description": "Saving the guest note hit a read-only note store, caught the error and answered that the note was saved, so the commit found no note for Elodie Favre."},
]

FREE = {("Laemmerenhuette", "2026-07-14"): 12, ("Tierberglihuette", "2026-08-02"): 6,
        ("Laemmerenhuette", "2026-08-20"): 10, ("Chamanna Coaz", "2026-07-30"): 7, ("Cabane de Moiry", "2026-09-05"): 10}
MORNING = {("Laemmerenhuette", "2026-08-20"): {"free": 9, "hold": "H-LAEM-0820-0600", "as_of": "06:00"}}
EARLIER = {"Bergclub Wil": "2025: booked 8 beds, paid on arrival"}
MEMBERS = {"SAC-10233": 0.1, "SAC-55120": 0.1, "CAF-8812": 0.05}


def _tool_results(messages):
    return [m for m in messages if m.get("role") == "tool"]


def policy(request):
    messages = request.body["messages"]
    ask = json.loads([m for m in messages if m["role"] == "user"][0]["content"])
    results = _tool_results(messages)
    if not results:
        nights = 1 if SWITCH == "one_night_hold" else ask["nights"]
        return Reply(tool_calls=(
            tool_call("recall_guest_note", {"guest": ask["guest"]}),
            tool_call("check_beds", {"hut": ask["hut"], "arrival": ask["arrival"], "nights": nights, "beds": ask["party"]}),
        ))
    if len(results) == 2:
        calls = [tool_call("save_guest_note", {"guest": ask["guest"], "party": ask["party"], "adults": ask["adults"],
                                               "diet": ask["diet"]})]
        if ask["member_no"]:
            calls.append(tool_call("member_discount", {"member_no": ask["member_no"]}))
        return Reply(tool_calls=tuple(calls))
    beds = json.loads(results[1]["content"])
    member = ask["member_no"]
    if SWITCH == "member_number_made_up" and member is None:
        member = "SAC-44812"
    return json.dumps({"guest": ask["guest"], "hut": ask["hut"], "arrival": ask["arrival"], "nights": ask["nights"],
                       "beds": ask["party"], "hold": beds["hold"], "member_no": member})


def build(llm, memory):
    holds = set()

    @tool
    def recall_guest_note(guest: str) -> str:
        """The hut's earlier note on this guest, if any."""
        return EARLIER.get(guest, "no earlier note")

    @tool
    def check_beds(hut: str, arrival: str, nights: int, beds: int) -> dict:
        """Free beds on the arrival night, and a hold on them."""
        if SWITCH == "morning_snapshot" and (hut, arrival) in MORNING:
            cached = MORNING[(hut, arrival)]
            return {"hut": hut, "arrival": arrival, "free": cached["free"], "as_of": cached["as_of"],
                    "hold": {"id": cached["hold"], "nights": nights, "beds": beds}}
        hold = f"H-{hut[:4].upper()}-{arrival[5:].replace('-', '')}-{len(holds) + 1}"
        holds.add(hold)
        return {"hut": hut, "arrival": arrival, "free": FREE[(hut, arrival)], "as_of": "live",
                "hold": {"id": hold, "nights": nights, "beds": beds}}

    @tool
    def save_guest_note(guest: str, party: int, adults: int, diet: list[str]) -> str:
        """Save the guest's party and diet for the warden and the kitchen."""
        note = {"party": party, "adults": adults, "diet": diet}
        if SWITCH == "note_party_from_adults":
            note["party"] = adults
        try:
            memory.write(guest, note)
        except PermissionError:
            pass
        return f"note saved for {guest}"

    @tool
    def member_discount(member_no: str) -> dict:
        """Alpine club member discount."""
        return {"member_no": member_no, "discount": MEMBERS.get(member_no, 0.0)}

    @tool
    def read_guest_note(guest: str) -> dict:
        """Read the saved guest note."""
        return memory.read(guest)

    @tool
    def alpine_club_booking(booking: dict, half_board: int, diet: list[str]) -> dict:
        """Book beds through the alpine club's booking system."""
        hold = booking["hold"]
        free = FREE[(booking["hut"], booking["arrival"])]
        if hold["id"] not in holds:
            raise ValueError(f"booking refused: hold {hold['id']} was released, no live hold for {booking['guest']}")
        if hold["nights"] != booking["nights"]:
            raise ValueError(f"booking refused: hold {hold['id']} covers {hold['nights']} night(s), the booking asks {booking['nights']}")
        if booking["beds"] > free:
            raise ValueError(f"booking refused: {booking['beds']} beds asked, {free} free at {booking['hut']} on {booking['arrival']}")
        if booking["member_no"] and booking["member_no"] not in MEMBERS:
            raise ValueError(f"booking refused: member number {booking['member_no']} is not in the club register")
        if half_board != booking["beds"]:
            raise ValueError(f"booking refused: half board for {half_board} guest(s) but {booking['beds']} beds held")
        return {"confirmation": f"{hold['id']}-{booking['beds']}", "half_board": half_board}

    tools = [recall_guest_note, check_beds, save_guest_note, member_discount]
    bound = llm.bind_tools(tools)

    class Hut(TypedDict, total=False):
        messages: Annotated[list[AnyMessage], add_messages]
        confirmation: dict

    def warden_assistant(state: Hut) -> dict:
        return {"messages": [bound.invoke(state["messages"])]}

    def commit_booking(state: Hut) -> dict:
        booking = json.loads(state["messages"][-1].content)
        note = read_guest_note.invoke({"guest": booking["guest"]})
        done = alpine_club_booking.invoke({"booking": booking, "half_board": note["party"], "diet": note["diet"]})
        return {"confirmation": done}

    g = StateGraph(Hut)
    g.add_node("warden_assistant", warden_assistant)
    g.add_node("tools", ToolNode(tools))
    g.add_node("commit_booking", commit_booking)
    g.add_edge(START, "warden_assistant")
    g.add_conditional_edges("warden_assistant", tools_condition, {"tools": "tools", "__end__": "commit_booking"})
    g.add_edge("tools", "warden_assistant")
    g.add_edge("commit_booking", END)
    return g.compile()


class NoteStore:
    def __init__(self):
        self.notes = {}

    def write(self, guest, note):
        if SWITCH == "note_store_read_only":
            raise PermissionError("note store is mounted read-only")
        self.notes[guest] = dict(note)

    def read(self, guest):
        if guest not in self.notes:
            raise LookupError(f"no guest note for {guest}")
        return dict(self.notes[guest])


def record(inp, path, server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=RUN_NAME, task=f"book {inp['party']} beds at {inp['hut']} from {inp['arrival']}")
    graph = build(llm, NoteStore())
    try:
        graph.invoke({"messages": [("system", "You are the hut warden's booking assistant. Check beds, keep guest notes, answer the booking as JSON."),
                                   ("user", json.dumps(inp))]}, config={"callbacks": [tracer]})
    except (ValueError, LookupError):
        pass
