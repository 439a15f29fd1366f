"""harbour-pilot: a pilotage desk's tide-window planner for deep-draught arrivals (LangGraph, TrajdebugTracer).

A ship agent's arrival request is read by a model into fields; the vessel's particulars come from the
registry; the passage conditions are gathered (the tide table, the channel's notices to mariners from
a retriever, the VTS passage data); the tide window and boarding time are computed; a routing function
sends the arrival to booking (or to a delay proposal); a model books the pilot and the tugs with
parallel tool calls; a model writes the master's brief and port control's tool checks the plan.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from .common import Case, first_json, last_user, system_of

RUN_NAME = "harbour-pilot"
ROUTE = "langgraph"
DOMAIN = "harbour pilotage: tide windows and boarding times for deep-draught arrivals"
SHAPE = "graph: read_request (prompt > llm > json parser) -> vessel_particulars (tool) -> passage_conditions (tool, retriever, tool) -> compute_window -> router -> book_services (llm, parallel tool calls, tools) -> brief_master (llm) -> confirm (tool)"

SWITCH: str | None = None


def _on(tag: str) -> bool:
    return SWITCH == tag  # the one place SWITCH is read


PORT = "Immingham"
SPEED_LIMIT_KN = 10.0

NOTICES = [
    {"id": "NtM 18/2023", "issued": "2023-05-02", "depth_m": 14.6,
     "text": "Sunk Dredged Channel: controlling depth 14.6 m below chart datum after maintenance dredging."},
    {"id": "NtM 31/2024", "issued": "2024-09-19", "depth_m": 13.9,
     "text": "Sunk Dredged Channel: controlling depth 13.9 m below chart datum after siltation survey; supersedes NtM 18/2023."},
    {"id": "NtM 07/2024", "issued": "2024-03-11", "depth_m": None,
     "text": "Holme Channel: buoy H4 relocated 40 m east. Depths unchanged."},
]
CURRENT_DEPTH = 13.9

VESSELS = {
    "9412345": {"name": "Baltic Crest", "type": "bulk carrier", "draught_m": 14.2, "loa_m": 229, "beam_m": 32.3, "cb": 0.84, "flag": "MT"},
    "9534567": {"name": "Nordic Aurora", "type": "crude tanker", "draught_m": 13.6, "loa_m": 244, "beam_m": 42.0, "cb": 0.82, "flag": "NO"},
    "9723110": {"name": "Cape Fulmar", "type": "bulk carrier", "draught_m": 14.6, "loa_m": 225, "beam_m": 32.2, "cb": 0.85, "flag": "US"},
    "9301877": {"name": "Humber Spirit", "type": "general cargo", "draught_m": 12.9, "loa_m": 169, "beam_m": 27.0, "cb": 0.76, "flag": "GB"},
    "9655402": {"name": "Gdansk Trader", "type": "bulk carrier", "draught_m": 13.8, "loa_m": 199, "beam_m": 32.3, "cb": 0.83, "flag": "PL"},
}

INPUTS: list[dict[str, Any]] = [
    {"task": "pilotage Baltic Crest, Immingham Bulk Terminal, 12 Nov 2024", "hw": 9.3,
     "email": "Dear pilots, please arrange inbound pilotage for MV Baltic Crest (IMO 9412345), ETA Spurn pilot station "
              "2024-11-12 04:00 UTC, for Immingham Bulk Terminal berth 1. Max draught as per registry. Regards, Humber Ship Agency"},
    {"task": "pilotage Nordic Aurora, Immingham Oil Terminal, 14 Nov 2024", "hw": 11.1,
     "email": "Good morning, MT Nordic Aurora (IMO 9534567) will arrive Spurn 2024-11-14 06:00 UTC bound for Immingham "
              "Oil Terminal jetty 3. Please confirm pilot and tugs. Best, Nordic Tankers Agency"},
    {"task": "pilotage Cape Fulmar, Immingham Bulk Terminal, 15 Nov 2024", "hw": 12.0,
     "email": "Pilot request: MV Cape Fulmar, IMO 9723110, ETA Spurn 15 Nov 2024 07:00 UTC, berth Immingham Bulk "
              "Terminal 2. Registry draught applies. Thanks, Gulf Coast Shipping"},
    {"task": "pilotage Humber Spirit, Eastern Jetty, 16 Nov 2024", "hw": 13.2,
     "email": "Hello, please book inbound pilotage for MV Humber Spirit (IMO 9301877), ETA Spurn 16 Nov 2024 09:00 UTC "
              "to Eastern Jetty. Kind regards, Humber Ship Agency"},
    {"task": "pilotage Gdansk Trader, Immingham Bulk Terminal, 18 Nov 2024", "hw": 14.4,
     "email": "Dear Sirs, MV Gdansk Trader (IMO 9655402) ETA Spurn 18 Nov 2024 09:00 UTC, berth Immingham Bulk Terminal 1, "
              "please arrange pilot and two tugs. Baltic Lines Agency"},
]

CASES = [
    Case("hp1", 2, "vts-ms", "unit_error", ("vts_passage", 1), ("port_control_submit", 1),
         "The VTS passage tool gave the channel speed limit as 5.1 (metres per second) in the knots field, so the "
         "squat allowance came out a quarter of the real one and the boarding hour was set before the tide allowed."),
    Case("hp2", 0, "tug-eta", "wrong_tool_args", ("ChatOpenAI", 2), ("port_control_submit", 1),
         "The booking model asked for the tugs at the ship's ETA of 04:00 rather than at the computed boarding time, "
         "and port control refused the plan."),
    Case("hp3", 1, "index-lag", "stale_data", ("ChannelNotices", 1), ("port_control_submit", 1),
         "The notices retriever's index predated NtM 31/2024 and returned the 2023 controlling depth of 14.6 m, so "
         "the window opened too early for the channel as it is now."),
    Case("hp4", 4, "tide-index", "off_by_one", ("compute_window", 1), ("port_control_submit", 1),
         "The window computation paired each hour with the next hour's tide height, so the boarding time came out one "
         "hour early, at a tide the ship could not cross the channel on."),
    Case("hp5", 3, "plan-replace", "bad_memory_write", ("book_services", 1), ("port_control_submit", 1),
         "The booking node wrote the pilot and tug bookings as the whole plan, replacing the stored window and "
         "boarding time, so the plan port control received had no boarding time."),
]

# --------------------------------------------------------------------------------------------------
# The model's side.
# --------------------------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    messages = request.body["messages"]
    system = system_of(messages)
    user = last_user(messages)
    if system.startswith("Read the pilotage request"):
        import re

        imo = re.search(r"IMO (\d{7})", user).group(1)
        m = re.search(r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d)", user)
        if m:
            eta = f"{m.group(1)}-{m.group(2)}-{m.group(3)}T{m.group(4)}:{m.group(5)}Z"
        else:
            d = re.search(r"(\d{1,2}) Nov (\d{4}) (\d\d):(\d\d)", user)
            eta = f"{d.group(2)}-11-{int(d.group(1)):02d}T{d.group(3)}:{d.group(4)}Z"
        berth = re.search(r"(Immingham Bulk Terminal(?: berth)? \d|Immingham Oil Terminal jetty \d|Eastern Jetty)", user).group(1)
        return json.dumps({"imo": imo, "eta": eta, "berth": berth.replace(" berth", ""), "direction": "inbound"})
    if system.startswith("You book pilots and tugs"):
        data = first_json(user)
        time = data["eta"][11:16] if _on("tug-eta") else data["boarding"]
        tugs = 2 if data["vessel"]["loa_m"] >= 200 else 1
        return Reply(tool_calls=(
            tool_call("pilot_roster", {"date": data["eta"][:10], "time": data["boarding"], "loa_m": data["vessel"]["loa_m"]}),
            tool_call("tug_booking", {"berth": data["berth"], "date": data["eta"][:10], "time": time, "tugs": tugs}),
        ))
    if system.startswith("Write the master's brief"):
        data = first_json(user)
        plan = data["plan"]
        return (f"{data['vessel']['name']}: board at Spurn {plan.get('boarding', 'time to be confirmed')} UTC, "
                f"pilot {plan.get('pilot', {}).get('pilot', 'TBC')}, {plan.get('tugs', {}).get('tugs', '?')} tug(s) "
                f"at {plan.get('tugs', {}).get('time', '?')}. Keep speed at or below 10 kn in the Sunk Dredged Channel.")
    return "?"


# --------------------------------------------------------------------------------------------------
# Tools, retriever, graph.
# --------------------------------------------------------------------------------------------------

_hw: dict[str, float] = {}


def _height(hour: float, hw: float) -> float:
    return 3.9 + 3.1 * math.cos(2 * math.pi * (hour - hw) / 12.42)


@tool
def vessel_registry(imo: str) -> dict:
    """Registered particulars of a vessel: draught, length, beam, block coefficient, flag."""
    return {"imo": imo, **VESSELS[imo]}


@tool
def tide_table(port: str, date: str) -> dict:
    """Predicted hourly tide heights above chart datum for a day (UTC)."""
    hw = _hw[date]
    return {"port": port, "date": date, "datum": "chart datum", "unit": "m",
            "heights": [round(_height(h, hw), 2) for h in range(24)]}


@tool
def vts_passage(berth: str) -> dict:
    """VTS passage data from Spurn to a berth: distance and the channel speed limit."""
    speed = round(SPEED_LIMIT_KN * 0.5144, 1) if _on("vts-ms") else SPEED_LIMIT_KN
    return {"from": "Spurn pilot station", "to": berth, "distance_nm": 14.5, "speed_limit_kn": speed}


@tool
def pilot_roster(date: str, time: str, loa_m: float) -> dict:
    """Book a pilot of the right class for a boarding time."""
    cls = "Class 1" if loa_m >= 200 else "Class 2"
    return {"pilot": "Capt. R. Ellison" if cls == "Class 1" else "Capt. J. Okafor", "class": cls, "date": date, "time": time}


@tool
def tug_booking(berth: str, date: str, time: str, tugs: int) -> dict:
    """Book harbour tugs for an arrival."""
    return {"berth": berth, "date": date, "time": time, "tugs": tugs, "company": "Svitzer Humber", "ref": f"SVH-{date[8:]}{time[:2]}"}


def _squat(cb: float, speed_kn: float) -> float:
    return cb * speed_kn**2 / 100


def _required_ukc(draught: float) -> float:
    return max(1.0, 0.08 * draught)


@tool
def port_control_submit(plan: dict) -> dict:
    """Submit the pilotage plan to port control (checked against the current survey)."""
    v = plan["vessel"]
    if "boarding" not in plan:
        raise ValueError(f"plan for {v['name']} has no boarding time")
    hour = int(plan["boarding"][:2])
    h = _height(hour, _hw[plan["date"]])
    squat = _squat(v["cb"], SPEED_LIMIT_KN)
    ukc = CURRENT_DEPTH + h - v["draught_m"] - squat
    need = _required_ukc(v["draught_m"])
    if ukc < need:
        raise ValueError(f"{v['name']}: under-keel clearance at {plan['boarding']} is {ukc:.2f} m (tide {h:.2f} m, "
                         f"squat {squat:.2f} m at {SPEED_LIMIT_KN:.0f} kn, depth {CURRENT_DEPTH} m per NtM 31/2024); "
                         f"{need:.2f} m required")
    if plan["tugs"]["time"] != plan["boarding"]:
        raise ValueError(f"{v['name']}: tugs booked for {plan['tugs']['time']}, pilot boards at {plan['boarding']}")
    return {"status": "accepted", "vessel": v["name"], "boarding": plan["boarding"], "vts_ref": f"HUM-{plan['date'][5:].replace('-', '')}-{hour:02d}"}


class ChannelNotices(BaseRetriever):
    """Notices to mariners for the approach channels, ranked by word overlap with the query."""

    k: int = 2

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        index = [n for n in NOTICES if not (_on("index-lag") and n["issued"] > "2024-06-30")]
        q = set(query.lower().split())
        scored = sorted(index, key=lambda n: n["issued"], reverse=True)  # newest first among equals
        scored.sort(key=lambda n: -len(q & set(n["text"].lower().split())))
        return [Document(page_content=n["text"], metadata={"id": n["id"], "issued": n["issued"], "depth_m": n["depth_m"]})
                for n in scored[: self.k]]


class PilotState(TypedDict, total=False):
    email: str
    request: dict
    vessel: dict
    conditions: dict
    plan: dict
    brief: str
    confirmation: dict


_llm: ChatOpenAI | None = None
_graph: Any = None
_notices = ChannelNotices()


def _read_request(state: PilotState) -> dict:
    prompt = ChatPromptTemplate.from_messages([
        ("system", "Read the pilotage request and answer JSON: imo, eta (ISO, UTC), berth, direction."),
        ("human", "{email}"),
    ])
    return {"request": (prompt | _llm | JsonOutputParser()).invoke({"email": state["email"]})}


def _vessel_particulars(state: PilotState) -> dict:
    msg = vessel_registry.invoke({"imo": state["request"]["imo"]})
    return {"vessel": msg}


def _passage_conditions(state: PilotState) -> dict:
    date = state["request"]["eta"][:10]
    tides = tide_table.invoke({"port": PORT, "date": date})
    docs = _notices.invoke("controlling depth Sunk Dredged Channel")
    depth_doc = next(d for d in docs if d.metadata["depth_m"] is not None)
    passage = vts_passage.invoke({"berth": state["request"]["berth"]})
    return {"conditions": {"date": date, "heights": tides["heights"], "depth_m": depth_doc.metadata["depth_m"],
                           "notice": depth_doc.metadata["id"], "speed_kn": passage["speed_limit_kn"]}}


def _compute_window(state: PilotState) -> dict:
    v, c = state["vessel"], state["conditions"]
    squat = _squat(v["cb"], c["speed_kn"])
    need_tide = v["draught_m"] + squat + _required_ukc(v["draught_m"]) - c["depth_m"]
    heights = c["heights"]
    if _on("tide-index"):
        ok = [h for h in range(23) if heights[h + 1] >= need_tide]
    else:
        ok = [h for h in range(24) if heights[h] >= need_tide]
    eta_hour = int(state["request"]["eta"][11:13])
    later = [h for h in ok if h >= eta_hour]
    if not later:
        raise ValueError(f"no tide window for {v['name']} on {c['date']} after {eta_hour:02d}:00 (needs {need_tide:.2f} m of tide)")
    start = later[0]
    end = start
    while end + 1 in ok:
        end += 1
    return {"plan": {"vessel": v, "date": c["date"], "window": [f"{start:02d}:00", f"{end:02d}:00"],
                     "boarding": f"{start:02d}:00", "need_tide_m": round(need_tide, 2), "notice": c["notice"]}}


def _route_window(state: PilotState) -> str:
    eta_hour = int(state["request"]["eta"][11:13])
    return "book_services" if int(state["plan"]["boarding"][:2]) - eta_hour <= 8 else "propose_delay"


def _propose_delay(state: PilotState) -> dict:
    msgs = [SystemMessage("Write the master's brief proposing a later arrival."), HumanMessage(json.dumps(state["plan"]))]
    return {"brief": _llm.invoke(msgs).content}


def _book_services(state: PilotState) -> dict:
    plan = state["plan"]
    msgs = [SystemMessage("You book pilots and tugs for the boarding time of the plan."),
            HumanMessage(json.dumps({"vessel": state["vessel"], "eta": state["request"]["eta"], "berth": state["request"]["berth"],
                                     "boarding": plan["boarding"], "window": plan["window"]}))]
    ai = _llm.bind_tools([pilot_roster, tug_booking]).invoke(msgs)
    tools = {"pilot_roster": pilot_roster, "tug_booking": tug_booking}
    booked = {}
    for call in ai.tool_calls:
        msg = tools[call["name"]].invoke({**call, "type": "tool_call"})
        booked["pilot" if call["name"] == "pilot_roster" else "tugs"] = json.loads(msg.content)
    if _on("plan-replace"):
        return {"plan": {"vessel": plan["vessel"], "date": plan["date"], **booked}}
    return {"plan": {**plan, **booked}}


def _brief_master(state: PilotState) -> dict:
    msgs = [SystemMessage("Write the master's brief for the pilotage."),
            HumanMessage(json.dumps({"vessel": state["vessel"], "plan": state["plan"]}))]
    return {"brief": _llm.invoke(msgs).content}


def _confirm(state: PilotState) -> dict:
    return {"confirmation": port_control_submit.invoke({"plan": state["plan"]})}


def setup(server: Any) -> None:
    global _llm, _graph
    _llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
    g = StateGraph(PilotState)
    for name, fn in (("read_request", _read_request), ("vessel_particulars", _vessel_particulars),
                     ("passage_conditions", _passage_conditions), ("compute_window", _compute_window),
                     ("propose_delay", _propose_delay), ("book_services", _book_services),
                     ("brief_master", _brief_master), ("confirm", _confirm)):
        g.add_node(name, fn)
    g.add_edge(START, "read_request")
    g.add_edge("read_request", "vessel_particulars")
    g.add_edge("vessel_particulars", "passage_conditions")
    g.add_edge("passage_conditions", "compute_window")
    g.add_conditional_edges("compute_window", _route_window, ["book_services", "propose_delay"])
    g.add_edge("propose_delay", END)
    g.add_edge("book_services", "brief_master")
    g.add_edge("brief_master", "confirm")
    g.add_edge("confirm", END)
    _graph = g.compile()


def teardown() -> None:
    global _llm, _graph
    _llm = _graph = None


def run_once(inp: dict, path: Path) -> None:
    import re

    m = re.search(r"(\d{4})-(\d\d)-(\d\d)", inp["email"])
    date = f"{m.group(1)}-{m.group(2)}-{m.group(3)}" if m else "2024-11-" + re.search(r"(\d{1,2}) Nov", inp["email"]).group(1).zfill(2)
    _hw.clear()
    _hw[date] = inp["hw"]
    tracer = TrajdebugTracer(path=str(path), name=RUN_NAME, task=inp["task"])
    try:
        _graph.invoke({"email": inp["email"]}, config={"callbacks": [tracer]})
    except Exception:  # noqa: BLE001 - the tracer records it; the generator checks the outcome
        pass
