"""Theme park ride maintenance (langgraph route): read a ride's sensors and inspections, diagnose, file a work order."""

from __future__ import annotations

import json
import operator
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from .common import Case, last_user_json, policy, server
from .kit import active

NAME = "ride-maintenance-desk"
ROUTE = "langgraph"
TODAY = "2026-12-05"

INPUTS = {
    "ride_cyclone": {"ride_id": "R-CYC", "model": "Vekoma SLC 689", "channels": ["VIB-1", "VIB-2", "BRK-T"],
                     "vib_in_s": {"VIB-1": 0.09, "VIB-2": 0.29, "BRK-T": 0.05},
                     "inspections": ["INS-801 2026-10-02", "INS-822 2026-10-30", "INS-840 2026-11-13", "INS-851 2026-11-20",
                                     "INS-866 2026-12-02"], "finding": "brake fin wear 2.1 mm"},
    "ride_logflume": {"ride_id": "R-LOG", "model": "Mack Log Flume 2", "channels": ["PUMP-1", "VIB-1", "VIB-2"],
                      "vib_in_s": {"PUMP-1": 0.22, "VIB-1": 0.06, "VIB-2": 0.04},
                      "inspections": ["INS-790 2026-10-01", "INS-815 2026-10-20", "INS-833 2026-11-06", "INS-861 2026-11-29"],
                      "finding": "pump bearing noise"},
    "ride_ref_a": {"ride_id": "R-TEA", "model": "Zamperla Tea Cups 18", "channels": ["VIB-1", "MOT-1"],
                   "vib_in_s": {"VIB-1": 0.04, "MOT-1": 0.05}, "inspections": ["INS-800 2026-10-02", "INS-850 2026-11-20"],
                   "finding": "seat belt latch stiff"},
    "ride_ref_b": {"ride_id": "R-DRP", "model": "Intamin Drop Tower 60", "channels": ["BRK-T", "VIB-1", "VIB-2"],
                   "vib_in_s": {"BRK-T": 0.21, "VIB-1": 0.05, "VIB-2": 0.06},
                   "inspections": ["INS-805 2026-10-03", "INS-829 2026-11-01", "INS-858 2026-11-27"],
                   "finding": "magnetic brake gap drift"},
    "ride_ref_c": {"ride_id": "R-CAR", "model": "Chance Carousel 50", "channels": ["MOT-1", "VIB-1"],
                   "vib_in_s": {"MOT-1": 0.03, "VIB-1": 0.04}, "inspections": ["INS-811 2026-10-10", "INS-862 2026-11-30"],
                   "finding": "none"},
    "ride_ref_d": {"ride_id": "R-WAV", "model": "Zierer Wave Swinger 48", "channels": ["VIB-1", "VIB-2", "MOT-1"],
                   "vib_in_s": {"VIB-1": 0.05, "VIB-2": 0.26, "MOT-1": 0.04},
                   "inspections": ["INS-807 2026-10-05", "INS-830 2026-11-02", "INS-849 2026-11-19", "INS-864 2026-12-01"],
                   "finding": "swing chain link wear"},
}
REFS = ["ride_ref_a", "ride_ref_b", "ride_ref_c", "ride_ref_d"]
CATALOG = [
    {"part": "BRK-FIN-689", "fits": "Vekoma SLC 689", "family": "Vekoma SLC"},
    {"part": "BRK-FIN-412", "fits": "Vekoma SLC 412", "family": "Vekoma SLC"},
    {"part": "PMP-BRG-2", "fits": "Mack Log Flume 2", "family": "Mack Log Flume"},
    {"part": "PMP-BRG-1", "fits": "Mack Log Flume 1", "family": "Mack Log Flume"},
    {"part": "LATCH-18", "fits": "Zamperla Tea Cups 18", "family": "Zamperla Tea Cups"},
    {"part": "MAG-GAP-60", "fits": "Intamin Drop Tower 60", "family": "Intamin Drop Tower"},
    {"part": "CHN-48", "fits": "Zierer Wave Swinger 48", "family": "Zierer Wave Swinger"},
    {"part": "GEN-KIT", "fits": "Chance Carousel 50", "family": "Chance Carousel"},
]
ALARM_MM_S = 4.5

CASES = [
    Case("zzb_rides_01", NAME, ROUTE, "unit_error", "rides_unit", "ride_cyclone", "normalise_readings", 1, "other",
         "file_work_order", "normalise_readings converts inches per second to millimetres with 2.54 instead of 25.4, hiding the VIB-2 alarm."),
    Case("zzb_rides_02", NAME, ROUTE, "truncated_result", "rides_page", "ride_cyclone", "fetch_ride_record", 1, "tool",
         "file_work_order", "fetch_ride_record returns only the first page of inspections, so the latest inspection is missing."),
    Case("zzb_rides_03", NAME, ROUTE, "wrong_retrieval", "rides_parts", "ride_logflume", "PartsCatalogRetriever", 1, "retrieval",
         "file_work_order", "the parts retriever matches on the ride family and returns the part for the older flume model first."),
    Case("zzb_rides_04", NAME, ROUTE, "format_drift", "rides_format", "ride_cyclone", "ChatOpenAI", 1, "llm",
         "file_work_order", "the diagnosis model answers severity as a word instead of a 1-3 number and the parser falls back to 3."),
    Case("zzb_rides_05", NAME, ROUTE, "tool_ignores_argument", "rides_channel", "ride_logflume", "read_sensor", 2, "tool",
         "file_work_order", "read_sensor ignores its channel argument and returns the first channel's reading every time."),
]


class RideState(TypedDict, total=False):
    ride_id: str
    record: dict
    pending: list
    readings: Annotated[list, operator.add]
    vibration: dict
    diagnosis_text: str
    diagnosis: dict
    parts: list
    window: dict
    work_order: dict


_CURRENT: dict = {}


@tool
def fetch_ride_record(ride_id: str) -> dict:
    """Fetch a ride's model, sensor channels and inspection history from the maintenance system."""
    r = _CURRENT
    inspections = r["inspections"][:3] if active("rides_page") else r["inspections"]
    return {"ride_id": ride_id, "model": r["model"], "channels": r["channels"], "inspections": inspections,
            "open_finding": r["finding"]}


@tool
def read_sensor(ride_id: str, channel: str) -> dict:
    """Read the RMS vibration velocity of one sensor channel (inches per second)."""
    ch = _CURRENT["channels"][0] if active("rides_channel") else channel
    return {"ride_id": ride_id, "channel": ch, "rms_in_s": _CURRENT["vib_in_s"][ch]}


class PartsCatalogRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        q = json.loads(query)
        if active("rides_parts"):
            family = " ".join(q["model"].split()[:-1])
            hits = sorted((p for p in CATALOG if p["family"] == family), key=lambda p: p["part"])
        else:
            hits = [p for p in CATALOG if p["fits"] == q["model"]]
        return [Document(page_content=json.dumps(p), metadata={"part": p["part"]}) for p in hits]


def _llm() -> ChatOpenAI:
    return ChatOpenAI(model="rides-engineer", base_url=server().base_url, api_key="sk-test-local", max_retries=0)


@policy("rides-engineer")
def _engineer(request):
    p = last_user_json(request)
    if p.get("task") == "diagnose":
        alarms = [ch for ch, v in p["vibration_mm_s"].items() if v > ALARM_MM_S]
        sev = 1 if alarms or "brake" in p["open_finding"] else 2 if p["open_finding"] != "none" else 3
        sev_out: Any = {1: "High", 2: "Medium", 3: "Low"}[sev] if active("rides_format") else sev
        return json.dumps({"severity": sev_out, "alarms": alarms, "component": p["open_finding"],
                           "based_on": p["latest_inspection"]})
    days = {1: 0, 2: 3, 3: 10}[p["severity"]]
    return json.dumps({"window_start": f"2026-12-{5 + days:02d}", "crew": "night shift" if days == 0 else "day shift"})


def load_ride(state: RideState) -> dict:
    rec = fetch_ride_record.invoke({"ride_id": state["ride_id"]})
    return {"record": rec, "pending": list(rec["channels"])}


def read_next_sensor(state: RideState) -> dict:
    channel = state["pending"][0]
    reading = read_sensor.invoke({"ride_id": state["ride_id"], "channel": channel})
    return {"readings": [reading], "pending": state["pending"][1:]}


def more_channels(state: RideState) -> str:
    return "read_next_sensor" if state["pending"] else "normalise_readings"


def normalise_readings(state: RideState) -> dict:
    factor = 2.54 if active("rides_unit") else 25.4
    return {"vibration": {r["channel"]: round(r["rms_in_s"] * factor, 2) for r in state["readings"]}}


def diagnose(state: RideState) -> dict:
    rec = state["record"]
    payload = {"task": "diagnose", "model": rec["model"], "vibration_mm_s": state["vibration"],
               "open_finding": rec["open_finding"], "latest_inspection": rec["inspections"][-1]}
    reply = _llm().invoke([SystemMessage("You are a ride maintenance engineer. Answer JSON: severity 1-3, alarms."),
                           HumanMessage(json.dumps(payload, sort_keys=True))])
    return {"diagnosis_text": reply.content}


def parse_diagnosis(state: RideState) -> dict:
    d = json.loads(state["diagnosis_text"])
    sev = d["severity"] if isinstance(d["severity"], int) else 3
    return {"diagnosis": {**d, "severity": sev}}


def find_parts(state: RideState) -> dict:
    docs = PartsCatalogRetriever().invoke(json.dumps({"model": state["record"]["model"],
                                                      "component": state["diagnosis"]["component"]}))
    return {"parts": [json.loads(d.page_content) for d in docs]}


def plan_window(state: RideState) -> dict:
    reply = _llm().invoke([SystemMessage("Plan the maintenance window for this finding."),
                           HumanMessage(json.dumps({"task": "window", "severity": state["diagnosis"]["severity"]}))])
    return {"window": json.loads(reply.content)}


class WorkOrderRejected(ValueError):
    pass


def file_work_order(state: RideState) -> dict:
    r = _CURRENT
    order = {"ride_id": state["ride_id"], "part": state["parts"][0]["part"] if state["parts"] else None,
             "window": state["window"]["window_start"], "severity": state["diagnosis"]["severity"],
             "inspection": state["diagnosis"]["based_on"], "alarms": state["diagnosis"]["alarms"]}
    latest = r["inspections"][-1]
    if order["inspection"] != latest:
        raise WorkOrderRejected(f"CMMS rejected work order for {r['ride_id']}: references {order['inspection']}, "
                                f"latest inspection on file is {latest}")
    seen = {x["channel"] for x in state["readings"]}
    if seen != set(r["channels"]):
        raise WorkOrderRejected(f"CMMS rejected work order for {r['ride_id']}: sensor log has channels {sorted(seen)}, "
                                f"ride has {r['channels']}")
    alarm = [ch for ch, v in r["vib_in_s"].items() if v * 25.4 > ALARM_MM_S]
    for ch in alarm:
        if ch not in order["alarms"]:
            raise WorkOrderRejected(f"CMMS rejected work order for {r['ride_id']}: channel {ch} reads "
                                    f"{r['vib_in_s'][ch] * 25.4:.1f} mm/s, above the {ALARM_MM_S} mm/s alarm, "
                                    f"and the order lists alarms {order['alarms']}")
    if (alarm or "brake" in r["finding"]) and order["window"] > TODAY:
        raise WorkOrderRejected(f"Safety rule SR-3: ride {r['ride_id']} has an open severity-1 condition "
                                f"({', '.join(alarm) or r['finding']}); window {order['window']} is after reopening on {TODAY}")
    part = next((p for p in CATALOG if p["part"] == order["part"]), None)
    if part and part["fits"] != r["model"]:
        raise WorkOrderRejected(f"CMMS rejected work order for {r['ride_id']}: part {order['part']} is certified for "
                                f"{part['fits']}, not {r['model']}")
    return {"work_order": {**order, "number": "WO-" + r["ride_id"][2:] + "-1207"}}


def build_graph():
    g = StateGraph(RideState)
    for fn in (load_ride, read_next_sensor, normalise_readings, diagnose, parse_diagnosis, find_parts, plan_window,
               file_work_order):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "load_ride")
    g.add_edge("load_ride", "read_next_sensor")
    g.add_conditional_edges("read_next_sensor", more_channels, ["read_next_sensor", "normalise_readings"])
    g.add_edge("normalise_readings", "diagnose")
    g.add_edge("diagnose", "parse_diagnosis")
    g.add_edge("parse_diagnosis", "find_parts")
    g.add_edge("find_parts", "plan_window")
    g.add_edge("plan_window", "file_work_order")
    g.add_edge("file_work_order", END)
    return g.compile()


def record(input_key: str, path: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    ride = INPUTS[input_key]
    _CURRENT.clear()
    _CURRENT.update(ride)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"maintenance work order for {ride['ride_id']}")
    try:
        build_graph().invoke({"ride_id": ride["ride_id"], "readings": []}, config={"callbacks": [tracer]})
    except WorkOrderRejected:
        pass
