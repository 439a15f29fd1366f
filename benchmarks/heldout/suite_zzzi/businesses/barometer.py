"""Barometer repairer (langgraph route): a tool-calling model loop (ToolNode), then plain nodes draft, check and file the invoice."""
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

NAME = "barometer-bench"
SHORT = "baro"
ROUTE = "langgraph"
DOMAIN = "barometer repairer"
SHAPE = "LangGraph ReAct loop: model node <-> ToolNode (parallel history + calibration calls, altitude, parts search (a whole-drawer answer overflows the model's context: HTTP 400), bench booking) -> draft invoice node -> warranty/parts check node -> file invoice tool node"
ACTIVE = None

HISTORY = {
    "AB-2231": [{"date": "2025-03-02", "work": "reglazed dial", "warranty_months": 12}, {"date": "2026-09-14", "work": "capsule stack replaced", "warranty_months": 12}],
    "FR-0917": [{"date": "2023-05-11", "work": "cleaned and recalibrated", "warranty_months": 6}],
    "HB-4410": [],
    "NZ-7702": [{"date": "2024-11-30", "work": "new mercury column seal", "warranty_months": 12}],
    "SW-3358": [{"date": "2022-02-19", "work": "chain and spring replaced", "warranty_months": 12}],
}
OFFSET = {"AB-2231": 6.5, "FR-0917": -3.8, "HB-4410": 8.2, "NZ-7702": -1.4, "SW-3358": 4.9}
NEEDS = {"AB-2231": ["adjusting screw"], "FR-0917": ["capsule stack", "hairspring"], "HB-4410": ["capsule stack", "chain", "pivot jewel"],
         "NZ-7702": ["glass tube seal"], "SW-3358": ["hairspring", "chain"]}
CATALOGUE = {"adjusting screw": 6.0, "capsule stack": 64.0, "hairspring": 18.5, "chain": 12.0, "pivot jewel": 22.0,
             "glass tube seal": 9.5, "bezel gasket": 4.0, "dial screws": 2.5}
DRAWER = sorted(CATALOGUE)
for _kind, _base in (("hairspring", 14.0), ("chain", 9.0), ("pivot jewel", 18.0), ("capsule stack", 55.0), ("bezel gasket", 3.0),
                     ("dial screw", 1.5), ("pointer", 7.0), ("glass tube seal", 8.0)):
    for _size in range(180):
        _name = f"{_kind} size {_size + 1:03d}"
        CATALOGUE[_name] = round(_base + _size * 0.05, 2)
        DRAWER.append(_name)
CONTEXT_TOKENS = 16385

INPUTS = [
    {"serial": "AB-2231", "ticket": "Aneroid AB-2231 reads high and the needle sticks. Shop reference reads 1021.4 hPa. Customer in Bath, 60 m up.", "reference_hpa": 1021.4, "altitude_m": 60, "today": "2027-01-08"},
    {"serial": "FR-0917", "ticket": "French drum barometer FR-0917 sluggish after a move. Shop reference 998.4 hPa. Customer in Buxton, 300 m.", "reference_hpa": 998.4, "altitude_m": 300, "today": "2027-01-12"},
    {"serial": "HB-4410", "ticket": "Holosteric HB-4410 bought at auction, needle loose. Shop reference 1016.0 hPa. Customer at sea level.", "reference_hpa": 1016.0, "altitude_m": 0, "today": "2027-01-15"},
    {"serial": "NZ-7702", "ticket": "Fitzroy mercury barometer NZ-7702 column drifting. Shop reference 1012.2 hPa. Customer in Keswick, 80 m.", "reference_hpa": 1012.2, "altitude_m": 80, "today": "2027-01-19"},
    {"serial": "SW-3358", "ticket": "Banjo barometer SW-3358 stuck on Change. Shop reference 1019.7 hPa. Customer in Swansea, 15 m.", "reference_hpa": 1019.7, "altitude_m": 15, "today": "2027-01-22"},
]

CASES = [
    {"input": 1, "switch": "standard_reference", "kind": "wrong_tool_args", "root": ("ChatOpenAI", 1), "failure": ("set_adjustment", 1),
     "description": "The model asks for the calibration reading against the standard 1013.25 hPa instead of the shop reference of 998.4 hPa in the ticket."},
    {"input": 0, "switch": "cached_history", "kind": "stale_data", "root": ("repair_history", 1), "failure": ("check_invoice", 1),
     "description": "The repair history for AB-2231 comes from a copy made before its September 2026 capsule service, so the job reads as out of warranty."},
    {"input": 2, "switch": "whole_drawer", "kind": "tool_ignores_argument", "root": ("find_parts", 1), "failure": ("ChatOpenAI", 5),
     "description": "The parts search ignores the names it is given and returns the whole drawer of 1,448 parts, which the next model request cannot hold."},
    {"input": 4, "switch": "extra_hours", "kind": "hallucinated_value", "root": ("ChatOpenAI", 6), "failure": ("check_invoice", 1),
     "description": "The model's closing answer bills 3.5 labour hours where the bench booking holds 2.0."},
    {"input": 3, "switch": "uk_date", "kind": "format_drift", "root": ("ChatOpenAI", 6), "failure": ("file_invoice", 1),
     "description": "The model's closing answer gives the invoice date as 19/01/2027 instead of 2027-01-19."},
]


@tool
def repair_history(serial: str) -> dict:
    """Past services of an instrument."""
    h = HISTORY[serial]
    return {"serial": serial, "services": h[:1] if ACTIVE == "cached_history" else h}


@tool
def calibration_reading(serial: str, reference_hpa: float) -> dict:
    """Bench reading of the instrument against a reference pressure; offset in hPa and what it needs."""
    true_ref = next(i["reference_hpa"] for i in INPUTS if i["serial"] == serial)
    return {"serial": serial, "offset_hpa": round(OFFSET[serial] + (reference_hpa - true_ref), 2), "needs": NEEDS[serial]}


@tool
def altitude_correction(altitude_m: float) -> dict:
    """Station-to-sea-level correction in hPa."""
    return {"altitude_m": altitude_m, "correction_hpa": round(altitude_m * 0.012, 2)}


@tool
def find_parts(names: list[str]) -> dict:
    """Search the parts drawer for the named parts."""
    wanted = DRAWER if ACTIVE == "whole_drawer" else names
    return {"hits": [{"part": n, "gbp": CATALOGUE[n]} for n in wanted]}


@tool
def book_bench(serial: str, hours: float) -> dict:
    """Book bench time for the repair."""
    return {"serial": serial, "hours": hours, "slot": "bench 2"}


@tool
def set_adjustment(serial: str, offset_hpa: float, correction_hpa: float) -> dict:
    """Turn the adjusting screw by the reading's offset plus the altitude correction."""
    turn = offset_hpa + correction_hpa
    if abs(turn) > 10:
        raise ValueError(f"{serial}: adjustment of {turn:.1f} hPa is beyond the screw's 10 hPa range")
    return {"serial": serial, "adjusted_hpa": round(turn, 2)}


TOOLS = [repair_history, calibration_reading, altitude_correction, find_parts, book_bench, set_adjustment]


def _done(messages):
    names, outs = {}, {}
    for m in messages:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
        if m.get("role") == "tool":
            outs[names.get(m["tool_call_id"])] = json.loads(m["content"]) if m["content"][:1] in "[{" else m["content"]
    return outs


def policy(request):
    msgs = request.body["messages"]
    tokens = len(json.dumps(msgs)) // 4
    if tokens > CONTEXT_TOKENS:
        return Reply(status=400, error=f"This model's maximum context length is {CONTEXT_TOKENS} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages.")
    ticket = json.loads(next(m["content"] for m in msgs if m["role"] == "user").split("JOB:", 1)[1])
    s = ticket["serial"]
    done = _done(msgs)
    if "repair_history" not in done:
        ref = 1013.25 if ACTIVE == "standard_reference" else ticket["reference_hpa"]
        return Reply(tool_calls=(tool_call("repair_history", {"serial": s}), tool_call("calibration_reading", {"serial": s, "reference_hpa": ref})))
    if "altitude_correction" not in done:
        return Reply(tool_calls=(tool_call("altitude_correction", {"altitude_m": ticket["altitude_m"]}),))
    if "set_adjustment" not in done:
        return Reply(tool_calls=(tool_call("set_adjustment", {"serial": s, "offset_hpa": done["calibration_reading"]["offset_hpa"],
                                                             "correction_hpa": done["altitude_correction"]["correction_hpa"]}),))
    if "find_parts" not in done:
        return Reply(tool_calls=(tool_call("find_parts", {"names": done["calibration_reading"]["needs"]}),))
    hours = 1.0 + 0.5 * len(done["calibration_reading"]["needs"])
    if "book_bench" not in done:
        return Reply(tool_calls=(tool_call("book_bench", {"serial": s, "hours": hours}),))
    last = (done["repair_history"]["services"] or [{}])[-1]
    warranty = bool(last) and _months_between(last["date"], ticket["today"]) < last["warranty_months"]
    billed = 3.5 if ACTIVE == "extra_hours" else done["book_bench"]["hours"]
    date = ticket["today"]
    if ACTIVE == "uk_date":
        date = f"{date[8:10]}/{date[5:7]}/{date[:4]}"
    return json.dumps({"serial": s, "date": date, "labour_hours": billed, "under_warranty": warranty,
                       "parts": done["find_parts"]["hits"], "adjusted_hpa": done["set_adjustment"]["adjusted_hpa"]})


def _months_between(a, b):
    return (int(b[:4]) - int(a[:4])) * 12 + int(b[5:7]) - int(a[5:7])


class S(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    job: dict
    invoice: dict
    filed: dict


def build(llm):
    bound = llm.bind_tools(TOOLS)

    def bench_model(state: S) -> dict:
        return {"messages": [bound.invoke(state["messages"])]}

    def draft_invoice(state: S) -> dict:
        answer = json.loads(state["messages"][-1].content)
        labour = 0.0 if answer["under_warranty"] else round(answer["labour_hours"] * 42.0, 2)
        parts = round(sum(p["gbp"] for p in answer["parts"]), 2)
        return {"invoice": dict(answer, labour_gbp=labour, parts_gbp=parts, total_gbp=round(labour + parts, 2))}

    def check_invoice(state: S) -> dict:
        inv, job = state["invoice"], state["job"]
        tool_out = {}
        for m in state["messages"]:
            if getattr(m, "type", "") == "tool":
                tool_out[m.name] = m.content
        booked = json.loads(tool_out["book_bench"])["hours"]
        if inv["labour_hours"] != booked:
            raise ValueError(f"{job['serial']}: invoice bills {inv['labour_hours']} h, bench booking holds {booked} h")
        needs = json.loads(tool_out["calibration_reading"])["needs"]
        missing = [n for n in needs if n not in {p["part"] for p in inv["parts"]}]
        if missing:
            raise ValueError(f"{job['serial']}: invoice lacks {', '.join(missing)} that the bench reading calls for")
        register = HISTORY[job["serial"]]
        if register and not inv["under_warranty"] and _months_between(register[-1]["date"], job["today"]) < register[-1]["warranty_months"]:
            raise ValueError(f"{job['serial']}: serviced {register[-1]['date']} with {register[-1]['warranty_months']} months' warranty; labour must not be billed")
        return {}

    def file_invoice(state: S) -> dict:
        inv = state["invoice"]
        date = inv["date"]
        if len(date) != 10 or date[4] != "-" or date[7] != "-":
            raise ValueError(f"ledger rejects invoice date {date!r}: expected YYYY-MM-DD")
        return {"filed": {"ledger": "sales", "serial": inv["serial"], "total_gbp": inv["total_gbp"], "date": date}}

    g = StateGraph(S)
    g.add_node("bench_model", bench_model)
    g.add_node("tools", ToolNode(TOOLS, handle_tool_errors=False))
    g.add_node("draft_invoice", draft_invoice)
    g.add_node("check_invoice", check_invoice)
    g.add_node("file_invoice", file_invoice)
    g.add_edge(START, "bench_model")
    g.add_conditional_edges("bench_model", tools_condition, {"tools": "tools", "__end__": "draft_invoice"})
    g.add_edge("tools", "bench_model")
    g.add_edge("draft_invoice", "check_invoice")
    g.add_edge("check_invoice", "file_invoice")
    g.add_edge("file_invoice", END)
    return g.compile()


def record(inp, ctx, path):
    llm = ChatOpenAI(base_url=ctx.server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["ticket"])
    msgs = [("system", "You are the repair bench assistant. Use the tools, then answer the invoice as JSON."),
            ("user", inp["ticket"] + " JOB:" + json.dumps(inp))]
    try:
        build(llm).invoke({"messages": msgs, "job": inp}, config={"callbacks": [tracer]})
    except Exception:
        pass
