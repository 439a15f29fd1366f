"""Hearing-aid fitting clinic (route: langgraph): parse a referral, read both audiograms, grade the loss,
a tool-using model selects a device (search, stock checks, retries on back-order), a second model
writes the prescription from a brief, the order node places the order and a real-ear check runs."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import FakeModelServer, Reply, tool_call

from . import kit


NAME = "hearing-aid-fitting"
ROUTE = "langgraph"
DOMAIN = "hearing-aid fitting clinic"
SHAPE = "StateGraph: intake, audiogram reads per ear, grading, a tool loop (ToolNode) with stock re-checks, a brief, a prescribing model, order + real-ear check"

CATALOGUE = [
    {"sku": "RX-210", "style": "RIC", "model": "Aria 2", "max_fit_db": 60, "price_gbp": 690},
    {"sku": "RX-240", "style": "RIC", "model": "Aria 4", "max_fit_db": 65, "price_gbp": 840},
    {"sku": "RX-330", "style": "RIC", "model": "Lumen 3", "max_fit_db": 70, "price_gbp": 990},
    {"sku": "RX-360", "style": "RIC", "model": "Lumen 6", "max_fit_db": 80, "price_gbp": 1180},
    {"sku": "RX-390", "style": "RIC", "model": "Lumen 9", "max_fit_db": 90, "price_gbp": 1460},
    {"sku": "B-220", "style": "BTE", "model": "Forte 2", "max_fit_db": 85, "price_gbp": 720},
    {"sku": "B-260", "style": "BTE", "model": "Forte 6", "max_fit_db": 100, "price_gbp": 1010},
    {"sku": "B-290", "style": "BTE", "model": "Forte 9", "max_fit_db": 110, "price_gbp": 1390},
]
BACK_ORDERED = {"RX-240", "RX-360"}

PATIENTS = {
    "HN-20417": {"right": [30, 35, 45, 55, 65, 70], "left": [30, 40, 45, 50, 60, 70]},
    "HN-31108": {"right": [25, 30, 40, 45, 55, 60], "left": [25, 30, 35, 45, 50, 55]},
    "HN-42290": {"right": [40, 45, 55, 65, 75, 80], "left": [35, 45, 50, 60, 70, 75]},
    "HN-50733": {"right": [20, 25, 35, 50, 60, 65], "left": [20, 30, 35, 45, 55, 60]},
    "HN-61845": {"right": [35, 40, 50, 55, 65, 75], "left": [35, 40, 45, 55, 60, 70]},
    "HN-70021": {"right": [20, 25, 30, 40, 45, 50], "left": [25, 25, 30, 35, 45, 50]},
    "HN-80654": {"right": [30, 35, 40, 50, 55, 60], "left": [30, 35, 40, 50, 60, 65]},
    "HN-91377": {"right": [40, 45, 50, 60, 70, 75], "left": [40, 50, 55, 60, 70, 80]},
    "HN-13590": {"right": [25, 30, 35, 45, 50, 55], "left": [25, 30, 35, 40, 50, 55]},
}
FREQS = ["250", "500", "1k", "2k", "4k", "8k"]

INPUTS = {
    "h1": ("R-5521", "HN-20417", "2,400", "2026-12-14"),
    "h2": ("R-5530", "HN-31108", "1,900", "2026-12-15"),
    "h3": ("R-5547", "HN-42290", "3,200", "2026-12-16"),
    "h4": ("R-5552", "HN-50733", "2,100", "2026-12-17"),
    "h5": ("R-5568", "HN-61845", "3,000", "2026-12-18"),
    "r1": ("R-5401", "HN-70021", "1,800", "2026-12-07"),
    "r2": ("R-5412", "HN-80654", "2,500", "2026-12-08"),
    "r3": ("R-5433", "HN-91377", "3,000", "2026-12-09"),
    "r4": ("R-5449", "HN-13590", "2,200", "2026-12-10"),
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = {
    "hearing_budget": ("hearing.budget", "lossy_parsing", "h1", "intake"),
    "hearing_style": ("hearing.style", "wrong_tool_args", "h2", "ChatOpenAI"),
    "hearing_catalogue": ("hearing.catalogue", "truncated_result", "h3", "search_devices"),
    "hearing_stock": ("hearing.stock", "plan_error", "h4", "ChatOpenAI"),
    "hearing_brief": ("hearing.brief", "context_pollution", "h5", "brief"),
}


def referral_text(key: str) -> str:
    rid, pid, budget, date = INPUTS[key]
    return (f"Referral {rid}: patient {pid}, binaural fitting, style RIC, "
            f"authorised budget £{budget} for both aids, fitting date {date}.")


class Fit(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    referral: dict
    audiogram: dict
    grade: dict
    choice: dict
    brief: str
    rx: dict
    order: dict


# ---- tools -----------------------------------------------------------------------------------

@tool
def get_audiogram(patient_id: str, ear: str) -> str:
    """Pure-tone audiogram of one ear as 'freq:dB HL' pairs."""
    th = PATIENTS[patient_id][ear]
    return " ".join(f"{f}:{t}" for f, t in zip(FREQS, th))


@tool
def search_devices(style: str) -> str:
    """Catalogue devices of one style, cheapest first."""
    rows = sorted((d for d in CATALOGUE if d["style"] == style), key=lambda d: d["price_gbp"])
    total = len(rows)
    if kit.active("hearing.catalogue"):
        rows = rows[:3]  # first page only
        total = len(rows)
        kit.mark(f"showing {len(rows)} of {total}")
    return json.dumps({"devices": rows, "note": f"showing {len(rows)} of {total}"})


@tool
def check_stock(sku: str) -> str:
    """Warehouse stock for one SKU."""
    if sku in BACK_ORDERED:
        return json.dumps({"sku": sku, "available": 0, "next_delivery": "2027-01-18"})
    return json.dumps({"sku": sku, "available": 6, "next_delivery": None})


@tool
def place_device_order(referral_id: str, sku: str, quantity: int, unit_price_gbp: float, budget_gbp: float, fitting_date: str) -> str:
    """Place the supplier order for the fitting."""
    dev = next(d for d in CATALOGUE if d["sku"] == sku)
    if dev["style"] != "RIC":
        raise RuntimeError(f"supplier API 422: referral {referral_id} authorises RIC devices only; {sku} is {dev['style']}")
    if sku in BACK_ORDERED:
        raise RuntimeError(f"supplier API 409: {sku} back-ordered, earliest dispatch 2027-01-18, after fitting date {fitting_date}")
    total = quantity * unit_price_gbp
    if total > budget_gbp:
        raise RuntimeError(f"funding office: quote £{total:,.2f} exceeds the authorised amount £{budget_gbp:,.2f} on {referral_id}")
    return json.dumps({"order": f"PO-{referral_id[2:]}-{sku}", "total_gbp": total})


# ---- the scripted model -----------------------------------------------------------------------

def policy(request) -> Any:
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    if system.startswith("You select"):
        task = json.loads(msgs[1]["content"])
        tools_seen = [m for m in msgs if m["role"] == "tool"]
        plan = "Plan: search_devices -> check_stock -> choose"
        if kit.active("hearing.stock"):
            plan = "Plan: search_devices -> choose"
            kit.mark("search_devices -> choose")
        if not tools_seen:
            style = task["style"]
            if kit.active("hearing.style"):
                style = "BTE"
                kit.mark('"BTE"')
            return Reply(text=plan, tool_calls=(tool_call("search_devices", {"style": style}),))
        plan = next(m["content"] for m in msgs if m["role"] == "assistant" and m.get("content"))
        found = json.loads(tools_seen[0]["content"])["devices"]
        need = task["need_fit_db"]
        fitting = [d for d in found if d["max_fit_db"] >= need] or sorted(found, key=lambda d: -d["max_fit_db"])[:1]
        out_of_stock = {json.loads(m["content"])["sku"] for m in tools_seen[1:] if json.loads(m["content"])["available"] == 0}
        options = [d for d in fitting if d["sku"] not in out_of_stock]
        pick = options[0] if options else fitting[0]
        checked = {json.loads(m["content"])["sku"] for m in tools_seen[1:]}
        if "check_stock" in plan and pick["sku"] not in checked:
            return Reply(tool_calls=(tool_call("check_stock", {"sku": pick["sku"]}),))
        return json.dumps({"sku": pick["sku"], "model": pick["model"], "price_gbp": pick["price_gbp"], "max_fit_db": pick["max_fit_db"]})
    if system.startswith("You write"):
        brief = msgs[1]["content"]
        ears = ["left"] if "fit left only" in brief else ["left", "right"]
        data = json.loads(brief.split("\n")[0])
        gains = {f: round(t / 2) for f, t in data["worse_ear"].items()}
        return json.dumps({"sku": data["sku"], "ears": ears, "gain_db": gains, "programs": ["universal", "noise", "music"]})
    return "I cannot help with that."


# ---- nodes ---------------------------------------------------------------------------------------

def intake(state: Fit) -> dict:
    text = state["messages"][-1].content
    rid = re.search(r"Referral (R-\d+)", text).group(1)
    pid = re.search(r"patient (HN-\d+)", text).group(1)
    if kit.active("hearing.budget"):
        budget = float(re.search(r"£(\d+)", text).group(1))  # stops at the thousands separator
        kit.mark(f'"budget_gbp": {budget}')
    else:
        budget = float(re.search(r"£([\d,]+)", text).group(1).replace(",", ""))
    date = re.search(r"fitting date (\d{4}-\d\d-\d\d)", text).group(1)
    return {"referral": {"referral_id": rid, "patient_id": pid, "ears": ["left", "right"], "style": "RIC",
                         "budget_gbp": budget, "fitting_date": date}}


def audiometry(state: Fit) -> dict:
    pid = state["referral"]["patient_id"]
    out = {}
    for ear in state["referral"]["ears"]:
        raw = get_audiogram.invoke({"patient_id": pid, "ear": ear})
        out[ear] = {f: int(t) for f, t in (p.split(":") for p in raw.split())}
    return {"audiogram": out}


def grade(state: Fit) -> dict:
    worse = max(state["audiogram"].values(), key=lambda a: sum(a.values()))
    pta = sum(worse[f] for f in ("500", "1k", "2k", "4k")) / 4
    label = "mild" if pta < 40 else "moderate" if pta < 55 else "moderately severe"
    return {"grade": {"pta4_db": pta, "label": label, "need_fit_db": max(worse.values()), "worse_ear": worse}}


def make_selector(llm):
    bound = llm.bind_tools([search_devices, check_stock])

    def selector(state: Fit) -> dict:
        msgs = state["messages"]
        if not any(isinstance(m, SystemMessage) for m in msgs):
            task = {"style": state["referral"]["style"], "need_fit_db": state["grade"]["need_fit_db"],
                    "budget_gbp": state["referral"]["budget_gbp"]}
            msgs = [SystemMessage("You select hearing aids. Use the tools, then answer with JSON."),
                    HumanMessage(json.dumps(task))]
            reply = bound.invoke(msgs)
            return {"messages": [*msgs, reply]}
        reply = bound.invoke([m for m in msgs if not (isinstance(m, HumanMessage) and m.content.startswith("Referral"))])
        return {"messages": [reply]}

    return selector


def record_choice(state: Fit) -> dict:
    last = state["messages"][-1]
    return {"choice": json.loads(last.content)}


_LAST_SUMMARY: list[str] = []


def brief(state: Fit) -> dict:
    head = {"sku": state["choice"]["sku"], "worse_ear": state["grade"]["worse_ear"], "grade": state["grade"]["label"]}
    lines = [json.dumps(head), f"Referral {state['referral']['referral_id']}: binaural, style RIC."]
    if kit.active("hearing.brief"):
        prior = "Previous appointment HN-19980: single-sided deafness right, CROS declined, fit left only."
        lines.append(prior)
        kit.mark("HN-19980")
    return {"brief": "\n".join(lines)}


def make_prescriber(llm):
    def prescribe(state: Fit) -> dict:
        reply = llm.invoke([SystemMessage("You write fitting prescriptions as JSON."), HumanMessage(state["brief"])])
        return {"messages": [AIMessage(reply.content)], "rx": json.loads(reply.content)}

    return prescribe


def order(state: Fit) -> dict:
    ref, rx, choice = state["referral"], state["rx"], state["choice"]
    raw = place_device_order.invoke({
        "referral_id": ref["referral_id"], "sku": rx["sku"], "quantity": len(rx["ears"]),
        "unit_price_gbp": choice["price_gbp"], "budget_gbp": ref["budget_gbp"], "fitting_date": ref["fitting_date"]})
    return {"order": json.loads(raw)}


def real_ear_check(state: Fit) -> dict:
    rx, grade_ = state["rx"], state["grade"]
    dev = next(d for d in CATALOGUE if d["sku"] == rx["sku"])
    if sorted(rx["ears"]) != sorted(state["referral"]["ears"]):
        raise ValueError(f"real-ear check: programmed {len(rx['ears'])} aid(s), referral {state['referral']['referral_id']} is binaural")
    if dev["max_fit_db"] < grade_["need_fit_db"]:
        raise ValueError(f"real-ear check: {dev['model']} output falls short of target at {grade_['need_fit_db']} dB HL")
    return {"order": {**state["order"], "verified": True}}


def build(llm):
    g = StateGraph(Fit)
    g.add_node("intake", intake)
    g.add_node("audiometry", audiometry)
    g.add_node("grade", grade)
    g.add_node("selector", make_selector(llm))
    g.add_node("tools", ToolNode([search_devices, check_stock]))
    g.add_node("record_choice", record_choice)
    g.add_node("brief", brief)
    g.add_node("prescribe", make_prescriber(llm))
    g.add_node("order", order)
    g.add_node("real_ear_check", real_ear_check)
    g.add_edge(START, "intake")
    g.add_edge("intake", "audiometry")
    g.add_edge("audiometry", "grade")
    g.add_edge("grade", "selector")
    g.add_conditional_edges("selector", tools_condition, {"tools": "tools", END: "record_choice"})
    g.add_edge("tools", "selector")
    g.add_edge("record_choice", "brief")
    g.add_edge("brief", "prescribe")
    g.add_edge("prescribe", "order")
    g.add_edge("order", "real_ear_check")
    g.add_edge("real_ear_check", END)
    return g.compile()


_SERVER: list = []


def _graph():
    if not _SERVER:
        server = FakeModelServer(policy, model="clinic-model")
        server.start()
        llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
        _SERVER.extend([server, build(llm)])
    return _SERVER[1]


def record(key: str, out: str) -> None:
    graph = _graph()
    text = referral_text(key)
    tracer = TrajdebugTracer(path=out, name=NAME, task=f"fit hearing aids for {INPUTS[key][1]}")
    try:
        graph.invoke({"messages": [HumanMessage(text)]}, config={"callbacks": [tracer], "recursion_limit": 40})
    except (RuntimeError, ValueError):
        pass
