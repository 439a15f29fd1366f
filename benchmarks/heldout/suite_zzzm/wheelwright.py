"""Wheelwright's workshop (langgraph): a tool-calling agent loop (bind_tools + ToolNode) with parallel calls and a retried tool."""
import json
from typing import Annotated

from langchain_core.messages import AIMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from typing_extensions import TypedDict

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

NAME, ROUTE, DOMAIN = "wheelwright-job-planner", "langgraph", "wheelwright's workshop"
SHAPE = "graph loop: model with tools <-> ToolNode (parallel hub + timber calls, a tyre quote retried after a dropped connection) -> finalise (JsonOutputParser) -> inspect"
ON: set = set()

INPUTS = [
    {"wheel": "W-1187", "kind": "dray wheel", "diameter_mm": 1220, "spokes": 14, "species": "oak"},
    {"wheel": "W-1190", "kind": "gig wheel", "diameter_mm": 1060, "spokes": 12, "species": "ash"},
    {"wheel": "W-1203", "kind": "hay wain wheel", "diameter_mm": 1370, "spokes": 16, "species": "oak"},
    {"wheel": "W-1211", "kind": "barrow wheel", "diameter_mm": 460, "spokes": 8, "species": "ash"},
    {"wheel": "W-1224", "kind": "carriage wheel", "diameter_mm": 1140, "spokes": 12, "species": "hickory"},
]
CASES = [
    {"id": "zzzm-16", "input": 0, "switch": "spoke_len_arg", "kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 2, "llm"), "failure": ("fit_felloes", 1),
     "description": "The model passes the wheel's full diameter as the spoke length when it calls the spoke cutter."},
    {"id": "zzzm-17", "input": 2, "switch": "timber_match", "kind": "wrong_retrieval",
     "root": ("lookup_timber_stock", 1, "tool"), "failure": ("inspect_job_sheet", 1),
     "description": "The timber stock lookup maps the oak order to the ash rack and returns ash blanks."},
    {"id": "zzzm-18", "input": 1, "switch": "felloe_count", "kind": "off_by_one",
     "root": ("fit_felloes", 1, "tool"), "failure": ("inspect_job_sheet", 1),
     "description": "The felloe fitter counts one felloe more than half the spokes."},
    {"id": "zzzm-19", "input": 4, "switch": "sheet_fields", "kind": "lossy_parsing",
     "root": ("finalise", 1, None), "failure": ("inspect_job_sheet", 1),
     "description": "Finalising the job sheet keeps only the numeric fields of the model's summary and loses the timber species."},
    {"id": "zzzm-20", "input": 3, "switch": "stock_page", "kind": "truncated_result",
     "root": ("lookup_timber_stock", 1, "tool"), "failure": ("cut_spokes", 1),
     "description": "The timber stock lookup returns only the first page of the rack, fewer blanks than the wheel needs."},
]
HUBS = {"W-1187": 210, "W-1190": 160, "W-1203": 240, "W-1211": 90, "W-1224": 170}
_tyre = {"calls": 0}


@tool
def measure_hub(wheel: str) -> dict:
    """Measure the hub of a wheel brought in for rebuilding (mm)."""
    return {"wheel": wheel, "hub_mm": HUBS[wheel], "bore_mm": HUBS[wheel] // 3}


@tool
def lookup_timber_stock(species: str) -> dict:
    """Seasoned spoke blanks on the rack for a timber species."""
    racks = {"oak": 18, "ash": 20, "hickory": 14}
    rack_of = {"oak": "ash", "ash": "ash", "hickory": "hickory"} if "timber_match" in ON else {k: k for k in racks}
    found = rack_of[species]
    blanks = [{"blank": f"{found[:2].upper()}-{i:02d}", "species": found, "seasoned_years": 4} for i in range(racks[found])]
    if "stock_page" in ON:
        blanks = blanks[:5]
    return {"species": found, "blanks": blanks}


@tool
def cut_spokes(count: int, length_mm: int, species: str) -> dict:
    """Cut and shave spokes from the rack's blanks."""
    stock = lookup_cache.get("stock", {})
    have = len(stock.get("blanks", []))
    if have < count:
        raise ValueError(f"only {have} {species} spoke blanks on the rack, {count} needed")
    return {"count": count, "length_mm": length_mm, "species": stock.get("species", species)}


@tool
def fit_felloes(spokes: int, diameter_mm: int, spoke_length_mm: int) -> dict:
    """Fit the felloes onto the spokes (two spokes to a felloe)."""
    seat = diameter_mm // 2 - 60
    if spoke_length_mm > seat:
        raise ValueError(f"spokes of {spoke_length_mm} mm overrun the felloe seat ({seat} mm) of a {diameter_mm} mm wheel")
    n = spokes // 2 + (1 if "felloe_count" in ON else 0)
    return {"felloes": n, "diameter_mm": diameter_mm}


@tool
def quote_tyre(diameter_mm: int) -> dict:
    """Quote the smith for shrinking an iron tyre on the wheel."""
    _tyre["calls"] += 1
    if _tyre["calls"] == 1:
        raise ConnectionError("forge quoting line dropped, call again")
    return {"diameter_mm": diameter_mm, "iron_mm": round(diameter_mm * 3.1416 - 12), "price_gbp": round(diameter_mm * 0.21)}


lookup_cache: dict = {}
TOOLS = [measure_hub, lookup_timber_stock, cut_spokes, fit_felloes, quote_tyre]


def policy(request):
    msgs = request.body["messages"]
    order = json.loads(msgs[1]["content"])
    names, results = {}, {}
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
        if m["role"] == "tool":
            try:
                results[names[m["tool_call_id"]]] = json.loads(m["content"])
            except ValueError:
                results.pop(names[m["tool_call_id"]], None)
    if "measure_hub" not in results:
        return Reply(tool_calls=(tool_call("measure_hub", {"wheel": order["wheel"]}),
                                 tool_call("lookup_timber_stock", {"species": order["species"]})))
    if "cut_spokes" not in results:
        length = (order["diameter_mm"] - results["measure_hub"]["hub_mm"]) // 2 - 70
        if "spoke_len_arg" in ON:
            length = order["diameter_mm"]
        return Reply(tool_calls=(tool_call("cut_spokes", {"count": order["spokes"], "length_mm": length, "species": order["species"]}),))
    if "fit_felloes" not in results:
        return Reply(tool_calls=(tool_call("fit_felloes", {"spokes": results["cut_spokes"]["count"], "diameter_mm": order["diameter_mm"],
                                                           "spoke_length_mm": results["cut_spokes"]["length_mm"]}),))
    if "quote_tyre" not in results:
        return Reply(tool_calls=(tool_call("quote_tyre", {"diameter_mm": order["diameter_mm"]}),))
    return json.dumps({"wheel": order["wheel"], "spokes": results["cut_spokes"]["count"], "felloes": results["fit_felloes"]["felloes"],
                       "spoke_length_mm": results["cut_spokes"]["length_mm"], "timber": results["cut_spokes"]["species"],
                       "tyre_price_gbp": results["quote_tyre"]["price_gbp"]})


class Job(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    order: dict
    sheet: dict
    passed: bool


def build(llm):
    bound = llm.bind_tools(TOOLS)
    tools = ToolNode(TOOLS, handle_tool_errors=(ConnectionError,))
    parser = JsonOutputParser()

    def agent(s: Job) -> dict:
        return {"messages": [bound.invoke(s["messages"])]}

    def stock_watch(s: Job) -> dict:
        for m in s["messages"]:
            if getattr(m, "name", None) == "lookup_timber_stock" and getattr(m, "status", "") != "error":
                lookup_cache["stock"] = json.loads(m.content)
        return {}

    def finalise(s: Job) -> dict:
        last = s["messages"][-1]
        summary = parser.invoke(last)
        if "sheet_fields" in ON:
            summary = {k: v for k, v in summary.items() if isinstance(v, (int, float))} | {"wheel": summary["wheel"]}
        return {"sheet": summary}

    def inspect(s: Job) -> dict:
        sheet, order = s["sheet"], s["order"]
        if sheet.get("timber") != order["species"]:
            raise AssertionError(f"job sheet timber {sheet.get('timber')!r} does not match the {order['species']} ordered for a {order['kind']}")
        if sheet["felloes"] * 2 != sheet["spokes"]:
            raise AssertionError(f"{sheet['felloes']} felloes cannot seat {sheet['spokes']} spokes at two per felloe")
        return {"passed": True}

    g = StateGraph(Job)
    g.add_node("agent", agent)
    g.add_node("tools", tools)
    g.add_node("stock_watch", stock_watch)
    g.add_node("finalise", finalise)
    g.add_node("inspect_job_sheet", inspect)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: "finalise"})
    g.add_edge("tools", "stock_watch")
    g.add_edge("stock_watch", "agent")
    g.add_edge("finalise", "inspect_job_sheet")
    g.add_edge("inspect_job_sheet", END)
    return g.compile()


def run_one(inp, path, server):
    _tyre["calls"] = 0
    lookup_cache.clear()
    llm = ChatOpenAI(base_url=server.base_url, api_key="x", model="workshop-foreman", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"rebuild {inp['wheel']} {inp['kind']}")
    msgs = [("system", "You plan wheel rebuilds with the workshop tools, then summarise the job as JSON."),
            ("user", json.dumps(inp))]
    try:
        build(llm).invoke({"messages": msgs, "order": dict(inp)}, config={"callbacks": [tracer], "recursion_limit": 40})
    except Exception:
        pass
