"""A flight training school's dispatch desk: clears a student pilot's solo navigation exercise.

Route: a LangGraph StateGraph (a model-with-tools loop through ToolNode) recorded by trajdebug's LangChain
callback (JSONL). Shape: booking -> tech-log retriever -> METAR tool and METAR output parser -> student
record tool -> route legs (plain node) -> dispatcher model <-> ToolNode loop (fuel state, mass and balance,
aircraft booking; parallel tool calls) -> solo authorisation -> instructor sign-off -> flight plan filing.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.testing import Reply, tool_call

from . import common

NAME = "flight-school-dispatch"
ROUTE = "langgraph"
DOMAIN = "flight training school: dispatching a student pilot's solo navigation exercise"
SHAPE = "LangGraph: retriever, tool + output parser, plain node, model/ToolNode loop with parallel calls, sign-off chain"
SWITCH = None

TECH_LOG = [
    {"ref": "TL-2291", "aircraft": "G-BSKI", "hours_since_check": 12.4, "defects": []},
    {"ref": "TL-2304", "aircraft": "G-BSKY", "hours_since_check": 47.6, "defects": ["left landing light u/s"]},
    {"ref": "TL-2310", "aircraft": "G-OFTA", "hours_since_check": 22.0, "defects": []},
    {"ref": "TL-2318", "aircraft": "G-CFLY", "hours_since_check": 8.9, "defects": []},
    {"ref": "TL-2320", "aircraft": "G-BNSR", "hours_since_check": 31.5, "defects": []},
]
METARS = {
    "EGTC": "EGTC 100920Z 24012G25KT 9999 FEW035 17/09 Q1018",
    "EGBK": "EGBK 100920Z 23010KT 9999 SCT040 16/08 Q1018",
    "EGSC": "EGSC 100920Z 20008KT 9999 FEW030 18/10 Q1016",
    "EGTK": "EGTK 100920Z 27009KT CAVOK 19/08 Q1019",
    "EGBJ": "EGBJ 100920Z 25011KT 9999 BKN045 15/09 Q1017",
}
STUDENTS = {
    "SP-14": {"name": "Rhiannon Bell", "solo_endorsement_expiry": "2025-07-05", "max_wind_kt": 15, "max_gust_kt": 20},
    "SP-09": {"name": "Kwame Mensah", "solo_endorsement_expiry": "2025-08-12", "max_wind_kt": 15, "max_gust_kt": 20},
    "SP-21": {"name": "Lucy Fairbairn", "solo_endorsement_expiry": "2025-06-30", "max_wind_kt": 12, "max_gust_kt": 18},
    "SP-17": {"name": "Tomasz Nowak", "solo_endorsement_expiry": "2025-07-21", "max_wind_kt": 15, "max_gust_kt": 20},
    "SP-03": {"name": "Grace Okoye", "solo_endorsement_expiry": "2025-09-02", "max_wind_kt": 18, "max_gust_kt": 25},
}
CACHED_STUDENTS = {"SP-21": {**STUDENTS["SP-21"], "solo_endorsement_expiry": "2025-06-01"}}
FUEL_LITRES = {"G-BSKI": 110.0, "G-BSKY": 96.0, "G-OFTA": 120.0, "G-CFLY": 100.0, "G-BNSR": 105.0}
LEG_NM = {("EGTC", "EGBK"): 24, ("EGBK", "EGTC"): 24, ("EGSC", "EGTC"): 19, ("EGTC", "EGSC"): 19,
          ("EGTK", "EGBJ"): 41, ("EGBJ", "EGTK"): 41, ("EGSC", "EGBK"): 31, ("EGBK", "EGSC"): 31}

INPUTS = [
    {"booking": "BK-7731", "student": "SP-09", "aircraft": "G-BSKY", "route": ["EGBK", "EGSC", "EGBK"], "date": "2025-06-10", "slot": "10:00"},
    {"booking": "BK-7732", "student": "SP-14", "aircraft": "G-OFTA", "route": ["EGSC", "EGTC", "EGSC"], "date": "2025-06-10", "slot": "11:30"},
    {"booking": "BK-7733", "student": "SP-21", "aircraft": "G-CFLY", "route": ["EGTK", "EGBJ", "EGTK"], "date": "2025-06-10", "slot": "09:00"},
    {"booking": "BK-7734", "student": "SP-17", "aircraft": "G-BNSR", "route": ["EGSC", "EGBK", "EGSC"], "date": "2025-06-10", "slot": "14:00"},
    {"booking": "BK-7735", "student": "SP-03", "aircraft": "G-BSKI", "route": ["EGTC", "EGBK", "EGTC"], "date": "2025-06-10", "slot": "13:00"},
]

CASES = [
    {"id": "D1", "input": 0, "fault_kind": "wrong_retrieval",
     "root": ("tech_log_search", 1), "failure": ("book_aircraft", 1),
     "description": "The tech-log search for G-BSKY ranked the log of the look-alike registration G-BSKI first, so "
                    "the booking quoted tech-log entry TL-2291 and the aircraft booking system refused it."},
    {"id": "D2", "input": 4, "fault_kind": "lossy_parsing",
     "root": ("metar_parser", 1), "failure": ("instructor_sign_off", 1),
     "description": "The METAR parser read 24012G25KT as 240/12 and dropped the 25 kt gust, so the dispatch sheet "
                    "did not reproduce the current METAR and the instructor sign-off refused it."},
    {"id": "D3", "input": 2, "fault_kind": "stale_data",
     "root": ("get_student_record", 1), "failure": ("authorise_solo", 1),
     "description": "The student record came from the training system's cache, with the solo endorsement expiry "
                    "before its renewal (2025-06-01 instead of 2025-07-05), so solo authorisation refused the flight."},
    {"id": "D4", "input": 3, "fault_kind": "off_by_one",
     "root": ("plan_legs", 1), "failure": ("file_flight_plan", 1),
     "description": "The leg planner stopped one waypoint early and planned EGSC-EGBK without the return leg, so "
                    "the flight plan filing found the route's last leg missing."},
    {"id": "D5", "input": 1, "fault_kind": "unit_error",
     "root": ("get_fuel_state", 1), "failure": ("instructor_sign_off", 1),
     "description": "The fuel gauge service answered G-OFTA's fuel in US gallons (31.7) where dispatch reads "
                    "litres, so the sign-off found 31.7 L on board, below the trip fuel plus reserve."},
]


def brain(request):
    system = common.system_text(request)
    if system.startswith("You dispatch"):
        brief = json.loads(common.user_text(request))
        results = common.tool_results(request)
        names = {k for r in results if isinstance(r, dict) for k in r}
        if not results:
            return Reply(tool_calls=(
                tool_call("get_fuel_state", {"aircraft": brief["aircraft"]}),
                tool_call("mass_and_balance", {"aircraft": brief["aircraft"], "student": brief["student"]}),
            ))
        if "booked" not in names:
            return Reply(tool_calls=(tool_call("book_aircraft", {
                "aircraft": brief["aircraft"], "tech_log_ref": brief["tech_log"]["ref"], "slot": brief["slot"]}),))
        fuel = next(r for r in results if isinstance(r, dict) and "fuel" in r)
        return json.dumps({"dispatch": "go", "fuel": fuel["fuel"], "fuel_unit": fuel.get("unit", "L")})
    return "Sorry, I can't help with that."




class TechLogRetriever(BaseRetriever):
    """Tech-log entries ranked by how closely their registration matches the query."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        reg = query.split()[0]

        def score(e: dict) -> float:
            same = sum(a == b for a, b in zip(e["aircraft"], reg))
            return same + (0.5 if e["aircraft"] == reg else 0.0)

        ranked = sorted(TECH_LOG, key=score, reverse=True)
        if SWITCH == "D1":
            ranked = [e for e in TECH_LOG if e["aircraft"][:5] == reg[:5]]  # the registration-prefix index
        return [Document(page_content=json.dumps(e), metadata={"ref": e["ref"]}) for e in ranked[:2]]


class MetarParser(BaseOutputParser[dict]):
    """Reads the wind group of a METAR."""

    def parse(self, text: str) -> dict:
        station = text.split()[0]
        m = re.search(r"\b(\d{3})(\d{2})(?:G(\d{2}))?KT\b", text)
        gust = int(m.group(3)) if m.group(3) else None
        if SWITCH == "D2":
            gust = None
        return {"station": station, "wind_dir": int(m.group(1)), "wind_kt": int(m.group(2)), "gust_kt": gust}


@tool
def fetch_metar(station: str) -> str:
    """Latest METAR for an aerodrome."""
    return METARS[station]


@tool
def get_student_record(student: str) -> dict:
    """The student's training record (solo endorsement and limits)."""
    if SWITCH == "D3" and student in CACHED_STUDENTS:
        return {"student": student, **CACHED_STUDENTS[student], "as_of": "2025-05-28"}
    return {"student": student, **STUDENTS[student], "as_of": "2025-06-10"}


@tool
def get_fuel_state(aircraft: str) -> dict:
    """Fuel on board, from the aircraft's gauge telemetry."""
    if SWITCH == "D5":
        return {"aircraft": aircraft, "fuel": round(FUEL_LITRES[aircraft] / 3.785, 1), "unit": "L"}
    return {"aircraft": aircraft, "fuel": FUEL_LITRES[aircraft], "unit": "L"}


@tool
def mass_and_balance(aircraft: str, student: str) -> dict:
    """Take-off mass and centre of gravity with the student and full fuel."""
    return {"aircraft": aircraft, "takeoff_kg": 1012, "cg_in": 39.4, "within_envelope": True}


@tool
def book_aircraft(aircraft: str, tech_log_ref: str, slot: str) -> dict:
    """Book the aircraft against its current tech-log entry."""
    entry = next(e for e in TECH_LOG if e["ref"] == tech_log_ref)
    if entry["aircraft"] != aircraft:
        raise ValueError(f"tech-log entry {tech_log_ref} is for {entry['aircraft']}, not {aircraft}")
    return {"booked": True, "aircraft": aircraft, "slot": slot, "tech_log_ref": tech_log_ref}


@tool
def authorise_solo(student: dict, date: str) -> dict:
    """Solo authorisation against the endorsement on file."""
    if student["solo_endorsement_expiry"] < date:
        raise PermissionError(f"solo endorsement for {student['student']} expired {student['solo_endorsement_expiry']}")
    return {"student": student["student"], "authorised": True}


@tool
def instructor_sign_off(student: dict, wind: dict, fuel: dict, legs: list) -> dict:
    """The duty instructor's checks: the student's wind limits and fuel for the legs plus 45 minutes."""
    if wind["wind_kt"] > student["max_wind_kt"] or (wind["gust_kt"] or 0) > student["max_gust_kt"]:
        raise PermissionError(f"wind {wind['wind_dir']:03d}/{wind['wind_kt']} gust {wind['gust_kt']} "
                              f"exceeds {student['student']}'s solo limits")
    m = re.search(r"\b(\d{3})(\d{2})(?:G(\d{2}))?KT\b", METARS[wind["station"]])
    reported = (int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None)
    if reported != (wind["wind_dir"], wind["wind_kt"], wind["gust_kt"]):
        raise ValueError(f"dispatch sheet wind {wind['wind_dir']:03d}/{wind['wind_kt']} gust {wind['gust_kt']} does "
                         f"not match the current METAR {METARS[wind['station']]}")
    need = sum(leg["nm"] for leg in legs) / 95 * 32 + 24  # 32 L/h at 95 kt, 45 min reserve
    if fuel["fuel"] < need:
        raise ValueError(f"fuel on board {fuel['fuel']} {fuel['unit']} is below trip plus reserve {need:.1f} L")
    return {"signed": "CFI A. Moreau", "fuel_required_l": round(need, 1)}


@tool
def file_flight_plan(route: list, legs: list) -> dict:
    """File the VFR flight plan."""
    if len(legs) != len(route) - 1 or legs[-1]["to"] != route[-1]:
        raise ValueError(f"route {'-'.join(route)} has {len(route) - 1} legs, the plan lists {len(legs)}")
    return {"filed": True, "ref": f"FPL-{route[0]}-{len(legs)}"}


DISPATCH_TOOLS = [get_fuel_state, mass_and_balance, book_aircraft]


class State(TypedDict, total=False):
    booking: dict
    tech_log: dict
    wind: dict
    student: dict
    legs: list
    messages: Annotated[list, add_messages]
    dispatch: dict
    authorisation: dict
    sign_off: dict
    flight_plan: dict


def build():
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=common.SERVER.base_url, api_key="not-needed", model=common.SERVER.model,
                     max_retries=0, temperature=0)
    dispatcher_llm = llm.bind_tools(DISPATCH_TOOLS).with_config(run_name="dispatcher_model")
    retriever = TechLogRetriever().with_config(run_name="tech_log_search")
    metar_parser = MetarParser().with_config(run_name="metar_parser")

    def maintenance(s: State) -> dict:
        docs = retriever.invoke(f"{s['booking']['aircraft']} tech log")
        return {"tech_log": json.loads(docs[0].page_content)}

    def weather(s: State) -> dict:
        raw = fetch_metar.invoke({"station": s["booking"]["route"][0]})
        return {"wind": metar_parser.invoke(raw)}

    def student(s: State) -> dict:
        return {"student": get_student_record.invoke({"student": s["booking"]["student"]})}

    def plan_legs(s: State) -> dict:
        route = s["booking"]["route"]
        stop = len(route) - 1
        if SWITCH == "D4":
            stop = len(route) - 2
        return {"legs": [{"from": route[i], "to": route[i + 1], "nm": LEG_NM[(route[i], route[i + 1])]}
                         for i in range(stop)]}

    def dispatcher(s: State) -> dict:
        msgs = s.get("messages") or [
            SystemMessage("You dispatch solo training flights. Check fuel and mass and balance, then book the aircraft."),
            HumanMessage(json.dumps({**s["booking"], "tech_log": s["tech_log"], "wind": s["wind"], "legs": s["legs"]})),
        ]
        reply = dispatcher_llm.invoke(msgs)
        out: dict[str, Any] = {"messages": ([] if s.get("messages") else msgs) + [reply]}
        if not reply.tool_calls:
            out["dispatch"] = json.loads(reply.content)
        return out

    def authorise(s: State) -> dict:
        return {"authorisation": authorise_solo.invoke({"student": s["student"], "date": s["booking"]["date"]})}

    def sign_off(s: State) -> dict:
        d = s["dispatch"]
        return {"sign_off": instructor_sign_off.invoke({"student": s["student"], "wind": s["wind"],
                                                        "fuel": {"fuel": d["fuel"], "unit": d["fuel_unit"]},
                                                        "legs": s["legs"]})}

    def file_plan(s: State) -> dict:
        return {"flight_plan": file_flight_plan.invoke({"route": s["booking"]["route"], "legs": s["legs"]})}

    g = StateGraph(State)
    for name, fn in [("maintenance", maintenance), ("weather", weather), ("student", student),
                     ("plan_legs", plan_legs), ("dispatcher", dispatcher), ("authorise", authorise),
                     ("sign_off", sign_off), ("file_plan", file_plan)]:
        g.add_node(name, fn)
    g.add_node("tools", ToolNode(DISPATCH_TOOLS, handle_tool_errors=False))
    g.add_edge(START, "maintenance")
    g.add_edge("maintenance", "weather")
    g.add_edge("weather", "student")
    g.add_edge("student", "plan_legs")
    g.add_edge("plan_legs", "dispatcher")
    g.add_conditional_edges("dispatcher", tools_condition, {"tools": "tools", END: "authorise"})
    g.add_edge("tools", "dispatcher")
    g.add_edge("authorise", "sign_off")
    g.add_edge("sign_off", "file_plan")
    g.add_edge("file_plan", END)
    return g.compile()


def record(inp: dict, path: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    task = f"dispatch {inp['student']} solo in {inp['aircraft']} {'-'.join(inp['route'])} {inp['date']} {inp['slot']}"
    tracer = TrajdebugTracer(path=path, name=NAME, task=task, metadata={"booking": inp["booking"]})
    build().invoke({"booking": inp}, config={"callbacks": [tracer]})
