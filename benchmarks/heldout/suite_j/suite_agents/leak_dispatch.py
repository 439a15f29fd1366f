"""Water-utility leak dispatch (route: langgraph): a night's acoustic-logger alerts become work orders.

A LangGraph loop over the alerts: parse the logger feed, read the crew roster, then per alert look up
the asset, read the district's pressure (a flaky SCADA read, retried by the graph's retry policy),
let the model triage it, estimate the loss, and route it (a conditional edge) to emergency dispatch
(isolation valves, a network simulation, a crew) or to the planned-works scheduler; at the end the
losses are reconciled with the district's night-flow balance.
"""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy

from ..harness import AgentSpec, Fault, active, extract_json, last_user
from ..routes import chat_openai


NAME = "leak-dispatch-planner"
SHIFT_DATE = "2026-03-02"


def alert(logger: str, asset: str, flow: float, unit: str, chainage: int) -> dict[str, Any]:
    return {"logger": logger, "asset": asset, "flow": flow, "unit": unit, "chainage_m": chainage}


def feed(dma: str, alerts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"dma": dma, "alerts": alerts}


def _alerts(prefix: str, flows: list[tuple[float, str]], sub: dict[int, str] | None = None) -> list[dict[str, Any]]:
    out = []
    for k, (flow, unit) in enumerate(flows):
        asset = (sub or {}).get(k, f"MN-{prefix}{k:02d}")
        out.append(alert(f"AL-{prefix}{k + 10}", asset, flow, unit, 40 + 25 * k))
    return out


INPUTS = [
    feed("DMA-14", _alerts("14", [(2.1, "L/s"), (3.4, "L/s"), (1.2, "L/s"), (7.8, "L/s"), (2.6, "L/s"),
                                  (0.9, "L/s"), (3.0, "L/s")], {3: "HYD-2231/B"})),
    feed("DMA-07", _alerts("07", [(1.4, "L/s"), (2.2, "L/s"), (3.1, "L/s"), (14.2, "L/s"), (0.8, "L/s"),
                                  (2.5, "L/s")])),
    feed("DMA-21", _alerts("21", [(2.4, "L/s"), (3.3, "L/s"), (4.1, "L/s"), (30.0, "m3/h"), (1.9, "L/s"),
                                  (2.8, "L/s"), (3.6, "L/s"), (1.1, "L/s")])),
    feed("DMA-03", _alerts("03", [(1.6, "L/s"), (9.4, "L/s"), (2.0, "L/s")])),
    feed("DMA-11", _alerts("11", [(2.2, "L/s"), (3.9, "L/s"), (6.5, "L/s"), (1.3, "L/s"), (2.7, "L/s")])),
]
REFS = [
    feed("DMA-05", _alerts("05", [(1.8, "L/s"), (8.1, "L/s"), (2.9, "L/s"), (18.0, "m3/h")])),
    feed("DMA-18", _alerts("18", [(3.2, "L/s"), (1.5, "L/s"), (2.4, "L/s"), (11.3, "L/s"), (0.7, "L/s")])),
    feed("DMA-09", _alerts("09", [(2.0, "L/s"), (1.1, "L/s"), (6.2, "L/s")], {1: "HYD-2231/A"})),
    feed("DMA-22", _alerts("22", [(4.4, "L/s"), (2.3, "L/s"), (1.7, "L/s"), (3.8, "L/s"), (5.6, "L/s"),
                                  (1.2, "L/s")])),
]
BY_DMA = {f["dma"]: f for f in INPUTS + REFS}
ASSET_DMA = {"HYD-2231/A": "DMA-09", "HYD-2231": "DMA-09", "HYD-2231/B": "DMA-14"}
_FLAKY: set[str] = set()


class ScadaTimeout(TimeoutError):
    pass


class DispatchRejected(RuntimeError):
    pass


class BalanceMismatch(AssertionError):
    pass


def lps(a: dict[str, Any]) -> float:
    return a["flow"] / 3.6 if a["unit"] == "m3/h" else a["flow"]


def policy(request: Any) -> str:
    data = extract_json(last_user(request))
    flow = data["flow"] / 3.6 if data["unit"] == "m3/h" else data["flow"]
    queue = "emergency" if flow >= 5 else "planned"
    if active("lk-route") and data["logger"] == "AL-0713":
        queue = "planned"
    kind = "burst main" if queue == "emergency" or flow >= 5 else "background leak"
    return json.dumps({"logger": data["logger"], "classification": kind, "queue": queue,
                       "reason": f"{flow:.1f} L/s at {data['pressure_drop_kpa']} kPa pressure drop"})


# -- tools -----------------------------------------------------------------------------------------


@tool
def get_crew_roster(date: str) -> dict:
    """The repair crews on shift on a date."""
    if active("lk-roster"):
        # served from the roster cache, last refreshed the day before
        return {"roster_date": "2026-03-01", "crews": [{"crew": "C7", "on_shift": True}, {"crew": "C3", "on_shift": True}]}
    return {"roster_date": date, "crews": [{"crew": "C3", "on_shift": True}, {"crew": "C5", "on_shift": True}]}


@tool
def get_asset(asset: str) -> dict:
    """The network asset (main or hydrant) an acoustic logger sits on, with its district and valves."""
    dma = ASSET_DMA.get(asset) or "DMA-" + asset[3:5]
    base = int("".join(ch for ch in asset if ch.isdigit())[-2:] or 0)
    valves = [{"valve": f"V-{base * 3 + k + 100}", "chainage_m": c} for k, c in enumerate((0, 200, 400))]
    return {"asset": asset, "dma": dma, "material": "ductile iron", "valves": valves}


@tool
def get_dma_pressure(dma: str, logger: str) -> dict:
    """The district's pressure drop at the logger over the night window (SCADA)."""
    if logger.endswith("12") and logger not in _FLAKY:
        _FLAKY.add(logger)
        raise ScadaTimeout(f"SCADA historian did not answer for {dma} within 5 s")
    return {"dma": dma, "logger": logger, "pressure_drop_kpa": 18 + len(logger) * 2}


@tool
def estimate_loss(flow: float, unit: str) -> dict:
    """Estimate the daily water loss of a leak from its flow."""
    per_day = 24.0 if unit == "m3/h" and not active("lk-units") else 86.4
    return {"flow": flow, "unit": unit, "loss_m3_per_day": round(flow * per_day, 1)}


@tool
def simulate_isolation(asset: str, valves: list[str], chainage_m: int) -> dict:
    """Run the hydraulic model: does closing these valves isolate the leak without cutting supply?"""
    v = {x["valve"]: x["chainage_m"] for x in _valves(asset)}
    lo, hi = min(v[x] for x in valves), max(v[x] for x in valves)
    if not lo <= chainage_m <= hi:
        raise DispatchRejected(f"network model: closing {' and '.join(valves)} does not bound the leak at "
                               f"chainage {chainage_m} m on {asset}")
    return {"asset": asset, "isolated": valves, "customers_affected": 140 + chainage_m, "feasible": True}


@tool
def dispatch_crew(crew: str, asset: str, dma: str, alert_dma: str) -> dict:
    """Raise an emergency work order and dispatch a crew."""
    if crew not in ("C3", "C5"):
        raise DispatchRejected(f"workforce system: crew {crew} is not on shift on {SHIFT_DATE}")
    if dma != alert_dma:
        raise DispatchRejected(f"workforce system: asset {asset} is in {dma}, not in {alert_dma} where the alert was raised")
    return {"work_order": f"EWO-{asset[-4:]}-{crew}", "crew": crew, "eta_min": 35}


@tool
def schedule_planned_repair(asset: str, flow_lps: float) -> dict:
    """Book a planned leak repair (for background leaks only)."""
    if flow_lps > 5:
        raise DispatchRejected(f"planned works: {flow_lps:.1f} L/s on {asset} exceeds the 5.0 L/s ceiling "
                               "for planned repairs; raise it as an emergency")
    return {"work_order": f"PWO-{asset[-4:]}", "window": "within 10 working days"}


@tool
def get_dma_night_flow(dma: str) -> dict:
    """The district's minimum night flow balance net of legitimate night use (m3/day)."""
    net = sum(lps(a) for a in BY_DMA[dma]["alerts"]) * 86.4
    return {"dma": dma, "unexplained_m3_per_day": round(net, 1)}


def _valves(asset: str) -> list[dict[str, Any]]:
    return get_asset.func(asset)["valves"]


# -- parsing ---------------------------------------------------------------------------------------


def parse_alert_feed(text: str) -> dict[str, Any]:
    lines = text.strip().splitlines()
    dma = lines[0].split("=", 1)[1]
    alerts = []
    for line in lines[2:]:
        logger, asset, flow, unit, chainage = line.split(";")
        if active("lk-feed"):
            asset = asset.split("/")[0]
        alerts.append(alert(logger, asset, float(flow), unit, int(chainage)))
    return {"dma": dma, "alerts": alerts}


def select_isolation_valves(asset: dict[str, Any]) -> list[str]:
    valves = sorted(asset["valves"], key=lambda v: v["chainage_m"])
    picked = valves[1:3] if active("lk-valves") else valves[0:2]
    return [v["valve"] for v in picked]


# -- the graph -------------------------------------------------------------------------------------


class LeakState(TypedDict, total=False):
    feed: str
    dma: str
    alerts: list
    i: int
    current: dict
    asset: dict
    triage: dict
    roster: dict
    losses: Annotated[list, operator.add]
    orders: Annotated[list, operator.add]


def build(llm: Any) -> Any:
    def ingest(state: LeakState) -> dict:
        parsed = RunnableLambda(parse_alert_feed, name="parse_alert_feed").invoke(state["feed"])
        roster = get_crew_roster.invoke({"date": SHIFT_DATE})
        return {"dma": parsed["dma"], "alerts": parsed["alerts"], "i": 0, "roster": roster}

    def next_alert(state: LeakState) -> dict:
        return {"current": state["alerts"][state["i"]], "i": state["i"] + 1}

    def assess(state: LeakState) -> dict:
        a = state["current"]
        asset = get_asset.invoke({"asset": a["asset"]})
        pressure = get_dma_pressure.invoke({"dma": state["dma"], "logger": a["logger"]})
        msg = llm.invoke([SystemMessage("You triage leak alerts for a water utility. Answer JSON: classification, queue."),
                          HumanMessage("Alert: " + json.dumps({**a, "pressure_drop_kpa": pressure["pressure_drop_kpa"]}))])
        loss = estimate_loss.invoke({"flow": a["flow"], "unit": a["unit"]})
        return {"asset": asset, "triage": json.loads(msg.content), "losses": [loss]}

    def route(state: LeakState) -> str:
        return "emergency_dispatch" if state["triage"]["queue"] == "emergency" else "planned_works"

    def emergency_dispatch(state: LeakState) -> dict:
        a, asset = state["current"], state["asset"]
        valves = RunnableLambda(select_isolation_valves, name="select_isolation_valves").invoke(asset)
        simulate_isolation.invoke({"asset": a["asset"], "valves": valves, "chainage_m": a["chainage_m"]})
        crew = next(c["crew"] for c in state["roster"]["crews"] if c["on_shift"])
        order = dispatch_crew.invoke({"crew": crew, "asset": a["asset"], "dma": asset["dma"], "alert_dma": state["dma"]})
        return {"orders": [order]}

    def planned_works(state: LeakState) -> dict:
        a = state["current"]
        return {"orders": [schedule_planned_repair.invoke({"asset": a["asset"], "flow_lps": round(lps(a), 2)})]}

    def more(state: LeakState) -> str:
        return "next_alert" if state["i"] < len(state["alerts"]) else "water_balance_check"

    def water_balance_check(state: LeakState) -> dict:
        balance = get_dma_night_flow.invoke({"dma": state["dma"]})["unexplained_m3_per_day"]
        total = round(sum(x["loss_m3_per_day"] for x in state["losses"]), 1)
        if abs(total - balance) > 0.15 * balance:
            raise BalanceMismatch(f"estimated leak losses {total} m3/day do not reconcile with the {state['dma']} "
                                  f"night-flow balance of {balance} m3/day")
        return {}

    g = StateGraph(LeakState)
    g.add_node("ingest", ingest)
    g.add_node("next_alert", next_alert)
    g.add_node("assess", assess, retry_policy=RetryPolicy(max_attempts=3, initial_interval=0.001, jitter=False,
                                                          retry_on=ScadaTimeout))
    g.add_node("emergency_dispatch", emergency_dispatch)
    g.add_node("planned_works", planned_works)
    g.add_node("water_balance_check", water_balance_check)
    g.add_edge(START, "ingest")
    g.add_edge("ingest", "next_alert")
    g.add_edge("next_alert", "assess")
    g.add_conditional_edges("assess", route, ["emergency_dispatch", "planned_works"])
    g.add_conditional_edges("emergency_dispatch", more, ["next_alert", "water_balance_check"])
    g.add_conditional_edges("planned_works", more, ["next_alert", "water_balance_check"])
    g.add_edge("water_balance_check", END)
    return g.compile()


_GRAPHS: dict[str, Any] = {}


def run(server: Any, item: dict[str, Any], path: Path) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    server.use(policy)
    _FLAKY.clear()
    llm = chat_openai(server)
    if _GRAPHS.get("llm") is not llm:
        _GRAPHS.update(llm=llm, graph=build(llm))
    text = f"DMA={item['dma']}\nlogger;asset;flow;unit;chainage_m\n" + "\n".join(
        f"{a['logger']};{a['asset']};{a['flow']};{a['unit']};{a['chainage_m']}" for a in item["alerts"])
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"dispatch the night's leak alerts in {item['dma']}")
    try:
        _GRAPHS["graph"].invoke({"feed": text}, config={"callbacks": [tracer], "recursion_limit": 200})
    except (DispatchRejected, BalanceMismatch):
        pass


SPEC = AgentSpec(
    name=NAME, route="langgraph", domain="water-utility leak dispatch", inputs=INPUTS, ref_inputs=REFS, run=run,
    faults=[
        Fault("lk-feed", "lossy_parsing", 0, "parse_alert_feed", '"asset": "HYD-2231"',
              "the feed parser cuts the hydrant's outlet suffix; the asset resolves to another district"),
        Fault("lk-route", "wrong_routing", 1, "ChatOpenAI", '\\"queue\\": \\"planned\\", \\"reason\\": \\"14.2 L/s',
              "the model sends a 14.2 L/s burst to the planned-works queue, which refuses it"),
        Fault("lk-units", "unit_error", 2, "estimate_loss", '"loss_m3_per_day": 2592.0',
              "an m3/h logger is converted as L/s; the night-flow balance does not reconcile"),
        Fault("lk-roster", "stale_data", 3, "get_crew_roster", '"roster_date": "2026-03-01"',
              "yesterday's roster sends crew C7, who is off shift"),
        Fault("lk-valves", "off_by_one", 4, "select_isolation_valves", '"V-107", "V-108"',
              "the valve slice starts one valve late; the network model refuses the isolation"),
    ],
)
