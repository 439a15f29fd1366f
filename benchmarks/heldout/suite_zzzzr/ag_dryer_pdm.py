"""Paper mill predictive maintenance: a vibration route over one machine asset, bearing-defect diagnosis and
the maintenance work order.

Route: a LangGraph StateGraph recorded by trajdebug's LangChain callback handler. A route retriever lists the
measurement points; a looped node fetches each point's spectrum (historian tool), parses it, composes the
diagnosis context and lets ChatOpenAI call a bearing-frequency tool before stating its finding; a check node
compares spectra with the overall values and diagnoses with spectral peaks; a planner model proposes the work
order date and the CMMS tool validates it.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from common import rnd
from trajdebug.testing import Reply, tool_call

RUN_NAME = "paper-machine-pdm"
ROUTE = "langgraph"
DOMAIN = "paper mill maintenance: vibration route, bearing diagnosis, work order"
SHAPE = "graph: route retriever, looped node per point (historian tool, spectrum parser, context composer, model -> bearing tool -> model), check node, planner model, CMMS tool"
SWITCH = None

BPFO = {"22320 CC": 7.64, "23136 CC": 10.35, "6316 C3": 5.10, "NU 2228": 11.20, "22230 E": 9.15}
ASSETS = {
    "PM5-DRY-14": {"machine": "PM5", "unit": "mm/s", "points": [
        ("DRY14-DS", "23136 CC", 1190, False), ("DRY14-GB-IN", "22320 CC", 1785, True), ("DRY14-FS", "23136 CC", 1190, False)]},
    "PM5-FELT-22": {"machine": "PM5", "unit": "mm/s", "points": [
        ("FELT22-DS", "22320 CC", 1480, True), ("FELT22-FS", "22230 E", 1480, False), ("FELT22-DRV", "6316 C3", 1480, False)]},
    "PM3-SUCT-02": {"machine": "PM3", "unit": "mm/s", "points": [
        ("SUCT02-DS", "NU 2228", 990, False), ("SUCT02-FS", "NU 2228", 990, False), ("SUCT02-GB", "22230 E", 1485, True)]},
    "PM3-VP-2": {"machine": "PM3", "unit": "mm/s", "points": [
        ("VP2-MOT-DE", "6316 C3", 1780, False), ("VP2-PUMP-DE", "22230 E", 890, False), ("VP2-PUMP-NDE", "22230 E", 890, False)]},
    "PM5-PRESS-3": {"machine": "PM5", "unit": "mm/s", "points": [
        ("PRS3-DS", "23136 CC", 1200, True), ("PRS3-FS", "23136 CC", 1200, False)]},
}
IN_PER_S = {"VP2-MOT-DE"}  # the motor point is read with a portable collector set to in/s
MOTOR_RPM = 1785
OUTAGES = {"PM5": "2026-03-18", "PM3": "2026-03-25"}
TODAY = "2026-03-11"

INPUTS = [{"task": f"monthly vibration route, {a}", "asset": a, "analyst": "K. Lindqvist"} for a in ASSETS]

CASES = [
    {"id": "pdm_paged_spectrum", "input": 0, "kind": "truncated_result",
     "root": ("fetch_spectrum", 2, "tool"), "failure": ("check_findings", 1),
     "what": "the historian answers only the first page (up to 200 Hz) of the gearbox input spectrum",
     "description": "The historian returned only the first page of the gearbox input spectrum, cutting the lines above 200 Hz, so the spectrum no longer accounts for the overall vibration value."},
    {"id": "pdm_previous_notes", "input": 1, "kind": "context_pollution",
     "root": ("compose_context", 2, "other"), "failure": ("check_findings", 1),
     "what": "the drive-side finding is carried into the front-side diagnosis context",
     "description": "The context for the front-side point carried the drive-side outer-race finding, so the model repeated it there with a defect frequency that the front-side spectrum does not show."},
    {"id": "pdm_motor_speed", "input": 2, "kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 5, "llm"), "failure": ("check_findings", 1),
     "what": "the model asks for bearing frequencies at the motor speed 1785 rpm instead of the gearbox 1485 rpm",
     "description": "For the gearbox point the model asked the bearing tool for defect frequencies at the motor's 1785 rpm instead of the shaft's 1485 rpm, and the frequency it diagnosed has no spectral peak."},
    {"id": "pdm_inch_spectrum", "input": 3, "kind": "unit_error",
     "root": ("SpectrumParser", 1, "parse"), "failure": ("check_findings", 1),
     "what": "a spectrum in in/s is read as mm/s",
     "description": "The spectrum parser read the vacuum pump motor spectrum, recorded in in/s, as mm/s, so its amplitudes are 25.4 times too small for the overall value."},
    {"id": "pdm_running_shift", "input": 4, "kind": "plan_error",
     "root": ("ChatOpenAI", 5, "llm"), "failure": ("create_work_order", 1),
     "what": "the planner schedules the bearing change on 2026-03-11 while PM5 runs, not at the 2026-03-18 outage",
     "description": "The planner model scheduled the press bearing replacement for the next day shift while the machine is in production rather than at the planned outage, and the CMMS refuses the order."},
]


def _switch(case_id: str) -> bool:
    return SWITCH == case_id


# ----------------------------------------------------------------------------------------------- data
def _lines(point: str, rpm: int, bearing: str, defect: bool) -> list[tuple[float, float]]:
    f1 = rpm / 60
    bpfo = BPFO[bearing] * f1
    out = []
    for i in range(1, 81):
        f = i * 5.0
        a = 0.08 + rnd(point, i) * 0.08
        if abs(f - f1) < 2.5 or abs(f - 2 * f1) < 2.5:
            a += 1.4
        if defect and abs(f - bpfo) <= 2.5:
            a += 3.1
        out.append((f, round(a, 3)))
    return out


# ----------------------------------------------------------------------------------------------- the model
def brain(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    last = msgs[-1]
    if system.startswith("You plan"):
        ctx = json.loads(last["content"])
        date = ctx["today"] if SWITCH == "pdm_running_shift" else ctx["next_outage"]
        kind = "bearing replacement" if ctx["defects"] else "inspection"
        return json.dumps({"asset": ctx["asset"], "type": kind, "date": date, "positions": [d["point"] for d in ctx["defects"]],
                           "bearings": [d["bearing"] for d in ctx["defects"]]})
    ctx = json.loads(msgs[1]["content"])
    if last["role"] == "tool":
        freqs = json.loads(last["content"])
        peaks = ctx["peaks"]
        hit = [p for p in peaks if abs(p["hz"] - freqs["bpfo_hz"]) <= 0.02 * freqs["bpfo_hz"] and p["amp"] > 1.0]
        carried = [n for n in ctx.get("notes", []) if "outer race" in n["finding"]]
        if hit:
            finding = f"outer race defect: peak {hit[0]['amp']} mm/s at {hit[0]['hz']} Hz"
            bearing, hz = ctx["bearing"], freqs["bpfo_hz"]
        elif carried:
            finding = carried[0]["finding"]
            bearing, hz = carried[0]["bearing"], carried[0]["bpfo_hz"]
        elif ctx["peaks"] and max(p["amp"] for p in ctx["peaks"]) > 2.5:
            top = max(ctx["peaks"], key=lambda p: p["amp"])
            finding = f"outer race defect: peak {top['amp']} mm/s near {freqs['bpfo_hz']} Hz"
            bearing, hz = ctx["bearing"], freqs["bpfo_hz"]
        else:
            finding, bearing, hz = "no bearing defect frequency present", ctx["bearing"], freqs["bpfo_hz"]
        return json.dumps({"point": ctx["point"], "bearing": bearing, "finding": finding, "bpfo_hz": hz})
    rpm = MOTOR_RPM if SWITCH == "pdm_motor_speed" and ctx["point"].endswith("GB") else ctx["shaft_rpm"]
    return Reply(tool_calls=(tool_call("bearing_frequencies", {"bearing": ctx["bearing"], "shaft_rpm": rpm}),))


# ----------------------------------------------------------------------------------------------- tools
@tool
def fetch_spectrum(point: str) -> str:
    """Latest velocity spectrum of a measurement point from the vibration historian, with its overall value."""
    asset, (p, bearing, rpm, defect) = next((a, q) for a, v in ASSETS.items() for q in v["points"] if q[0] == point)
    unit = "in/s" if point in IN_PER_S else ASSETS[asset]["unit"]
    lines = _lines(p, rpm, bearing, defect)
    overall = math.sqrt(sum(a * a for _, a in lines))
    if unit == "in/s":
        lines = [(f, round(a / 25.4, 5)) for f, a in lines]
        overall = overall / 25.4
    if _switch("pdm_paged_spectrum") and point.endswith("GB-IN"):
        lines = [ln for ln in lines if ln[0] <= 200]
    head = f"POINT={point} UNIT={unit} OVERALL={overall:.4f} RPM={rpm}"
    return head + "\n" + ";".join(f"{f:.1f}:{a}" for f, a in lines)


@tool
def bearing_frequencies(bearing: str, shaft_rpm: float) -> dict:
    """Outer-race defect frequency (BPFO) of a bearing at a shaft speed."""
    return {"bearing": bearing, "shaft_rpm": shaft_rpm, "bpfo_hz": round(BPFO[bearing] * shaft_rpm / 60, 1)}


@tool
def create_work_order(asset: str, type: str, date: str, positions: list, bearings: list) -> dict:
    """Create a maintenance work order in the CMMS."""
    a = ASSETS[asset]
    installed = {p: b for p, b, _, _ in a["points"]}
    for pos, b in zip(positions, bearings):
        if installed[pos] != b:
            raise ValueError(f"CMMS-214: bearing {b} not installed at {pos} (installed: {installed[pos]})")
    outage = OUTAGES[a["machine"]]
    if type == "bearing replacement" and date != outage:
        raise ValueError(f"CMMS-301: {type} on {asset} requires machine down; {a['machine']} outage is {outage}, requested {date} during production")
    return {"work_order": f"WO-{asset}-{len(positions)}", "date": date, "type": type}


# ----------------------------------------------------------------------------------------------- graph
class RouteRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        asset = query.split()[0]
        return [Document(page_content=f"{p} {b}", metadata={"point": p, "bearing": b, "shaft_rpm": rpm})
                for p, b, rpm, _ in ASSETS[asset]["points"]]


def _parse(text: str) -> dict:
    head, body = text.split("\n", 1)
    meta = dict(kv.split("=") for kv in head.split())
    scale = 25.4 if meta["UNIT"] == "in/s" and not _switch("pdm_inch_spectrum") else 1.0
    lines = [(float(f), float(a) * scale) for f, a in (x.split(":") for x in body.split(";"))]
    overall = float(meta["OVERALL"]) * (25.4 if meta["UNIT"] == "in/s" else 1.0)
    peaks = sorted(({"hz": f, "amp": round(a, 3)} for f, a in lines if a > 1.0), key=lambda p: -p["amp"])
    rms = math.sqrt(sum(a * a for _, a in lines))
    return {"point": meta["POINT"], "unit": "mm/s", "overall": round(overall, 3), "spectral_rms": round(rms, 3), "peaks": peaks[:5]}


def _compose(data: dict) -> dict:
    notes = data["notes"] if _switch("pdm_previous_notes") else [n for n in data["notes"] if n["point"] == data["point"]["point"]]
    return {"point": data["point"]["point"], "bearing": data["point"]["bearing"], "shaft_rpm": data["point"]["shaft_rpm"],
            "peaks": data["spectrum"]["peaks"], "notes": notes}


PARSER = RunnableLambda(_parse).with_config(run_name="SpectrumParser")
COMPOSE = RunnableLambda(_compose).with_config(run_name="compose_context")
ROUTES = RouteRetriever()


class S(TypedDict, total=False):
    asset: str
    points: list
    idx: int
    spectra: list
    findings: list
    plan: dict
    work_order: dict


def build(llm):
    model = llm.bind_tools([bearing_frequencies])

    def load_route(state: S) -> dict:
        docs = ROUTES.invoke(f"{state['asset']} vibration route")
        return {"points": [d.metadata for d in docs], "idx": 0, "spectra": [], "findings": []}

    def measure(state: S) -> dict:
        point = state["points"][state["idx"]]
        spec = PARSER.invoke(fetch_spectrum.invoke({"point": point["point"]}))
        ctx = COMPOSE.invoke({"point": point, "spectrum": spec, "notes": state["findings"]})
        msgs = [SystemMessage(content="You diagnose rolling-element bearings from velocity spectra. Call bearing_frequencies, then answer JSON."),
                HumanMessage(content=json.dumps(ctx))]
        ai = model.invoke(msgs)
        tm = bearing_frequencies.invoke(ai.tool_calls[0])
        final = model.invoke(msgs + [ai, tm])
        return {"idx": state["idx"] + 1, "spectra": state["spectra"] + [spec], "findings": state["findings"] + [json.loads(final.content)]}

    def more(state: S) -> str:
        return "measure" if state["idx"] < len(state["points"]) else "check_findings"

    def check_findings(state: S) -> dict:
        for spec, f in zip(state["spectra"], state["findings"]):
            if abs(spec["spectral_rms"] - spec["overall"]) > 0.15 * spec["overall"]:
                raise ValueError(f"spectral RMS {spec['spectral_rms']} mm/s inconsistent with overall {spec['overall']} mm/s on point {spec['point']}")
            if "defect" in f["finding"] and "no bearing" not in f["finding"]:
                if not any(abs(p["hz"] - f["bpfo_hz"]) <= 0.02 * f["bpfo_hz"] for p in spec["peaks"]):
                    raise ValueError(f"diagnosed BPFO {f['bpfo_hz']} Hz has no spectral peak within 2% on point {spec['point']}")
        return {}

    def plan(state: S) -> dict:
        defects = [f for f in state["findings"] if "no bearing" not in f["finding"]]
        machine = ASSETS[state["asset"]]["machine"]
        ai = llm.invoke([SystemMessage(content="You plan maintenance work orders. Answer JSON: asset, type, date, positions, bearings."),
                         HumanMessage(content=json.dumps({"asset": state["asset"], "defects": defects, "today": TODAY,
                                                          "next_outage": OUTAGES[machine]}))])
        return {"plan": json.loads(ai.content)}

    def order(state: S) -> dict:
        return {"work_order": create_work_order.invoke(state["plan"])}

    g = StateGraph(S)
    for name, fn in [("load_route", load_route), ("measure", measure), ("check_findings", check_findings), ("plan", plan), ("order", order)]:
        g.add_node(name, fn)
    g.add_edge(START, "load_route")
    g.add_edge("load_route", "measure")
    g.add_conditional_edges("measure", more, {"measure": "measure", "check_findings": "check_findings"})
    g.add_edge("check_findings", "plan")
    g.add_edge("plan", "order")
    g.add_edge("order", END)
    return g.compile()


_GRAPH: dict[str, Any] = {}


def execute(inp: dict, env, run) -> None:
    if env.base_url not in _GRAPH:
        llm = ChatOpenAI(model=env.model, base_url=env.base_url, api_key="not-needed", max_retries=0)
        _GRAPH[env.base_url] = build(llm)
    _GRAPH[env.base_url].invoke({"asset": inp["asset"]}, config=env.config)
