"""Agent 6 (langgraph route): orchard frost protection for one night.

Shape: a LangGraph StateGraph: intake -> tool-calling agent loop (ChatOpenAI + ToolNode: frost forecast,
per-block sensor logs) -> summarise_forecast (model) -> parse_sensor_logs -> assess_risk -> advise (runs a
compiled sub-graph, the block advisor with its own model call, once per block at risk) -> water_need ->
submit_frost_plan (irrigation controller).  Recorded by TrajdebugTracer.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Annotated, Any, Iterator, TypedDict

from langgraph.graph.message import add_messages

from . import kit
from .common import Fault

AGENT = "orchard_frost"
ROUTE = "langgraph"
EXT = "jsonl"
RUN_NAME = "orchard-frost-watch"
DOMAIN = "Orchard frost protection"
SHAPE = "StateGraph: ChatOpenAI/ToolNode loop over 5 tool calls, summary model, parse, risk, sub-graph advisor per block, water sum, controller"

BLOCKS = {"B-1": {"variety": "Gala", "critical_c": -1.1, "area_ha": 4.0},
          "B-2": {"variety": "Bramley", "critical_c": -2.2, "area_ha": 3.5},
          "B-3": {"variety": "Conference pear", "critical_c": -3.9, "area_ha": 4.5},
          "B-4": {"variety": "Cox", "critical_c": -2.8, "area_ha": 3.0}}
SENSOR_MIN = {"B-1": -0.6, "B-2": -1.4, "B-3": -3.2, "B-4": -0.9}
RESERVOIR_M3 = 3000
RATE_MM_H = 3.0


class ControllerRefused(RuntimeError):
    pass


ControllerRefused.__module__ = "irrigation_controller.api"

_tools: dict[str, Any] = {}
_graph: dict[str, Any] = {}


def sensor_rows(block: str, hours: int) -> list[tuple[str, float]]:
    low = SENSOR_MIN[block]
    rows = []
    for h in range(12):  # falls to the minimum at 02:00, then eases under cloud
        t = round(4.0 - (4.0 - low) * (h / 7), 1) if h <= 7 else round(low + 0.3 * (h - 7), 1)
        rows.append((f"{(19 + h) % 24:02d}:00", t))
    return rows[-hours:]


def _build_tools():
    from langchain_core.tools import tool

    @tool
    def get_frost_forecast(orchard: str, night: str) -> str:
        """Met office frost bulletin text for an orchard's area."""
        text = f"Frost bulletin {night} for {orchard}: overnight minimum -2.5C around 05:00, 6 hours below zero."
        if kit.active("of_context_pollution"):
            text += " Hillcrest upland orchards: overnight minimum -6.0C, 9 hours below zero."
        return text

    @tool
    def read_block_sensors(block: str, hours: int = 12) -> str:
        """Temperature log of an orchard block, one row per hour, for the last `hours` hours."""
        got = hours
        if kit.active("of_tool_ignores_argument"):
            got = 3
        lines = [f"# block {block}, window {len(sensor_rows(block, got))} h", "time,temp_c"]
        lines += [f"{t},{v:.1f}".replace("-", "\u2212") for t, v in sensor_rows(block, got)]
        return "\n".join(lines)

    @tool
    def submit_frost_plan(plan: dict) -> str:
        """Send the night's frost protection plan to the irrigation controller."""
        covered = {p["block"] for p in plan["protect"]}
        for b, prof in BLOCKS.items():
            if SENSOR_MIN[b] <= prof["critical_c"] + 1.0 or -2.5 <= prof["critical_c"]:
                if b not in covered:
                    raise ControllerRefused(f"controller 422: block {b} ({prof['variety']}) is at frost risk and has no protection")
        if plan["water_m3"] > RESERVOIR_M3:
            raise ControllerRefused(f"controller 409: plan draws {plan['water_m3']:,.0f} m3, reservoir holds {RESERVOIR_M3:,} m3")
        return json.dumps({"plan": f"FP-{kit.seed(plan['orchard']) % 9000 + 1000}", "armed": True})

    _tools.update(forecast=get_frost_forecast, sensors=read_block_sensors, submit=submit_frost_plan)


def _policy(request):
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    system = msgs[0]["content"]
    if system.startswith("Summarise"):
        text = msgs[-1]["content"]
        mins = [float(p.split("C")[0]) for p in text.split("minimum ")[1:]]
        hours = [int(p.split(" hours")[0].split()[-1]) for p in text.split(", ")[1:] if " hours below" in p]
        i = mins.index(min(mins))
        return json.dumps({"min_c": mins[i], "hours_below_zero": hours[i]})
    if system.startswith("You advise"):
        ask = json.loads(msgs[-1]["content"])
        block = ask["block"]
        if kit.active("of_subagent_wrong_entity"):
            block = "K-" + block.split("-")[1]
        return json.dumps({"block": block, "method": "overtree sprinklers", "rate_mm_h": RATE_MM_H,
                           "start": "01:00"})
    ask = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))
    called = [tc["function"]["name"] + ":" + tc["function"]["arguments"]
              for m in msgs for tc in (m.get("tool_calls") or [])]
    if not any(c.startswith("get_frost_forecast") for c in called):
        return Reply(tool_calls=(tool_call("get_frost_forecast", {"orchard": ask["orchard"], "night": ask["night"]}),))
    for b in ask["blocks"]:
        if not any(c.startswith("read_block_sensors") and f'"{b}"' in c for c in called):
            return Reply(tool_calls=(tool_call("read_block_sensors", {"block": b, "hours": 12}),))
    return "All readings collected."


class FState(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    request: dict
    forecast: dict
    logs: dict
    at_risk: list
    advice: list
    plan: dict
    receipt: dict


class AState(TypedDict, total=False):
    block: str
    profile: dict
    advice: dict


def _compile(llm):
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode

    tools = [_tools["forecast"], _tools["sensors"]]
    bound = llm.bind_tools(tools)

    def advisor_llm(state):
        msg = llm.invoke([("system", "You advise on frost protection for one orchard block. Answer JSON."),
                          ("user", json.dumps({"block": state["block"], "profile": state["profile"]}))])
        return {"advice": json.loads(msg.content)}

    sub = StateGraph(AState)
    sub.add_node("advisor_llm", advisor_llm)
    sub.add_edge(START, "advisor_llm")
    sub.add_edge("advisor_llm", END)
    advisor = sub.compile()

    def intake(state):
        r = state["request"]
        return {"request": {**r, "blocks": sorted(BLOCKS)}}

    def assistant(state):
        msgs = state.get("messages") or []
        if not msgs:
            r = state["request"]
            msgs = [("system", "You watch orchard frost. Fetch the forecast and every block's sensor log."),
                    ("user", json.dumps({"orchard": r["orchard"], "night": r["night"], "blocks": r["blocks"]}))]
            return {"messages": [*msgs, bound.invoke(msgs)]}
        return {"messages": [bound.invoke(msgs)]}

    def after_assistant(state):
        return "tools" if state["messages"][-1].tool_calls else "summarise_forecast"

    def _tool_texts(state, name):
        calls = {tc["id"]: tc for m in state["messages"] for tc in (getattr(m, "tool_calls", None) or [])}
        return [(calls[m.tool_call_id]["args"], m.content) for m in state["messages"]
                if getattr(m, "type", "") == "tool" and calls[m.tool_call_id]["name"] == name]

    def summarise_forecast(state):
        [(_, text)] = _tool_texts(state, "get_frost_forecast")
        msg = llm.invoke([("system", "Summarise the frost bulletin as JSON: min_c, hours_below_zero."), ("user", text)])
        return {"forecast": json.loads(msg.content)}

    def parse_sensor_logs(state):
        logs = {}
        for args, text in _tool_texts(state, "read_block_sensors"):
            vals = []
            for line in text.splitlines()[2:]:
                raw = line.split(",")[1]
                if kit.active("of_lossy_parsing"):
                    try:
                        vals.append(float(raw))
                    except ValueError:
                        continue
                else:
                    vals.append(float(raw.replace("\u2212", "-")))
            logs[args["block"]] = {"rows_read": len(vals), "min_c": min(vals) if vals else None}
        return {"logs": logs}

    def assess_risk(state):
        fmin = state["forecast"]["min_c"]
        risk = []
        for b, prof in BLOCKS.items():
            smin = state["logs"][b]["min_c"]
            if fmin <= prof["critical_c"] or (smin is not None and smin <= prof["critical_c"] + 1.0):
                risk.append(b)
        return {"at_risk": risk}

    def advise(state):
        out = []
        for b in state["at_risk"]:
            out.append(advisor.invoke({"block": b, "profile": BLOCKS[b]})["advice"])
        return {"advice": out}

    def water_need(state):
        hours = state["forecast"]["hours_below_zero"]
        per_mm_ha = 100 if kit.active("of_unit_error") else 10
        total = 0.0
        protect = []
        for a in state["advice"]:
            area = BLOCKS.get(a["block"], {"area_ha": 3.0})["area_ha"]
            m3 = round(a["rate_mm_h"] * area * hours * per_mm_ha, 1)
            protect.append({"block": a["block"], "m3": m3, "start": a["start"]})
            total += m3
        return {"plan": {"orchard": state["request"]["orchard"], "protect": protect, "water_m3": round(total, 1)}}

    def submit(state):
        return {"receipt": json.loads(_tools["submit"].invoke({"plan": state["plan"]}))}

    g = StateGraph(FState)
    for name, fn in [("intake", intake), ("assistant", assistant), ("summarise_forecast", summarise_forecast),
                     ("parse_sensor_logs", parse_sensor_logs), ("assess_risk", assess_risk), ("advise", advise),
                     ("water_need", water_need), ("submit", submit)]:
        g.add_node(name, fn)
    g.add_node("tools", ToolNode(tools))
    g.add_edge(START, "intake")
    g.add_edge("intake", "assistant")
    g.add_conditional_edges("assistant", after_assistant, ["tools", "summarise_forecast"])
    g.add_edge("tools", "assistant")
    for a, b in [("summarise_forecast", "parse_sensor_logs"), ("parse_sensor_logs", "assess_risk"),
                 ("assess_risk", "advise"), ("advise", "water_need"), ("water_need", "submit"), ("submit", END)]:
        g.add_edge(a, b)
    return g.compile()


@contextmanager
def session() -> Iterator[None]:
    from langchain_openai import ChatOpenAI

    from trajdebug.testing import FakeModelServer

    _build_tools()
    with FakeModelServer(_policy, model="gpt-4o-mini") as server:
        llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
        _graph["app"] = _compile(llm)
        try:
            yield
        finally:
            _graph.clear()


def run_once(inp: dict, path: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=f"frost watch {inp['orchard']} {inp['night']}")
    try:
        _graph["app"].invoke({"request": inp}, config={"callbacks": [tracer], "recursion_limit": 60})
    except ControllerRefused:
        pass


def _req(orchard: str, night: str) -> dict:
    return {"orchard": orchard, "night": night}


_IN = {
    "lossy": _req("Medlar Farm", "2027-04-11"),
    "units": _req("Nethercote Orchards", "2027-04-12"),
    "entity": _req("Oldacre Fruit", "2027-04-14"),
    "pollution": _req("Penhallow Estate", "2027-04-16"),
    "ignores": _req("Quarrendon Orchard", "2027-04-19"),
}

FAULTS = [
    Fault("orchardfrost_1", "of_lossy_parsing", "lossy_parsing", "parse_sensor_logs", f'"rows_read": {sum(1 for _, v in sensor_rows("B-1", 12) if f"{v:.1f}"[0] != "-")}', _IN["lossy"]),
    Fault("orchardfrost_2", "of_unit_error", "unit_error", "water_need", '"water_m3": 21600.0', _IN["units"]),
    Fault("orchardfrost_3", "of_subagent_wrong_entity", "subagent_wrong_entity", "ChatOpenAI", "K-2", _IN["entity"]),
    Fault("orchardfrost_4", "of_context_pollution", "context_pollution", "get_frost_forecast", "Hillcrest", _IN["pollution"]),
    Fault("orchardfrost_5", "of_tool_ignores_argument", "tool_ignores_argument", "read_block_sensors", "block B-3, window 3 h", _IN["ignores"]),
]

REFS = [_req("Redbourne Orchard", "2027-04-09"), _req("Stowey Fruit Farm", "2027-04-13"),
        _req("Tidcombe Orchards", "2027-04-20"), _req("Westleigh Cider Fruit", "2027-04-22")]
