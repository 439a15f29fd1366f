"""Wine import compliance (LangGraph with a `ToolNode`, recorded by `TrajdebugTracer`): the broker reads
the shipment's manifest, has the model look up the tariff of every lot in one turn (parallel tool
calls), collects the tariffs, reads the exchange rate, computes each lot's duty and excise, checks the
customs bond and files the entry with customs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, TypedDict

from benchmarks.heldout.suite_i._kit import Case, active, json_in, last_user
from langchain_core.messages import AnyMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import FakeModelServer, Reply, tool_call


NAME = "wine-import-broker"
ROUTE = "langgraph"

WINES = {  # lot code -> (wine, style, abv %, bottle ml)
    "BDX-19": ("Bordeaux Superieur 2019", "still", 13.5, 750), "CHP-NV": ("Champagne Brut NV", "sparkling", 12.0, 750),
    "RIO-20": ("Rioja Crianza 2020", "still", 14.0, 750), "PRS-22": ("Prosecco DOC 2022", "sparkling", 11.0, 750),
    "PRT-10": ("Tawny Port 10 Years", "still", 20.0, 750), "CAV-21": ("Cava Brut 2021", "sparkling", 11.5, 750),
    "MAG-18": ("Barolo 2018 magnum", "still", 14.5, 1500), "SAN-23": ("Sancerre 2023", "still", 12.5, 750),
    "CRE-21": ("Cremant d'Alsace 2021", "sparkling", 12.0, 750),
}
INPUTS = {  # shipment -> [(lot, bottles, invoice EUR)]
    "SHP-4101": [("BDX-19", 1200, 9600), ("CHP-NV", 600, 13200), ("RIO-20", 1800, 12600)],
    "SHP-4102": [("PRS-22", 2400, 14400), ("SAN-23", 900, 10800), ("BDX-19", 600, 4800), ("CRE-21", 1200, 10200)],
    "SHP-4103": [("MAG-18", 300, 16500), ("PRT-10", 600, 10800)],
    "SHP-4104": [("SAN-23", 1200, 14400), ("CAV-21", 2400, 16800), ("PRT-10", 300, 5400)],
    "SHP-4105": [("CRE-21", 900, 7650), ("SAN-23", 600, 7200), ("RIO-20", 1200, 8400)],
    "SHP-4190": [("BDX-19", 600, 4800), ("PRS-22", 1200, 7200)],
    "SHP-4191": [("CHP-NV", 300, 6600), ("RIO-20", 1200, 8400), ("MAG-18", 120, 6600), ("SAN-23", 600, 7200)],
    "SHP-4192": [("CRE-21", 1800, 15300), ("PRT-10", 450, 8100), ("CAV-21", 600, 4200)],
    "SHP-4193": [("SAN-23", 300, 3600), ("BDX-19", 900, 7200), ("PRS-22", 600, 3600)],
}
REFS = ("SHP-4190", "SHP-4191", "SHP-4192", "SHP-4193")
FX = {"pair": "EURUSD", "rate": 1.153, "as_of": "2026-12-01"}
BOND_USD = 12_000

CASES = (
    Case("wine-style", "wi_style", "tool_ignores_argument", "SHP-4101", "lookup_tariff",
         '"lot": "CHP-NV", "hts": "2204.21.50"',
         "The tariff service ignores the style argument for the Champagne lot and answers the still-wine heading."),
    Case("wine-fx", "wi_fx", "stale_data", "SHP-4104", "get_fx_rate", '"as_of": "2026-09-30"',
         "The exchange-rate service answers from its end-of-quarter cache (1.0712 of 2026-09-30) instead of the entry date's rate."),
    Case("wine-litres", "wi_litres", "unit_error", "SHP-4102", "compute_lot_duty", '"litres": 18000.0',
         "The Prosecco lot's volume is computed with bottle millilitres over 100 instead of 1000 (18,000 L for 1,800 L)."),
    Case("wine-pairing", "wi_pairing", "off_by_one", "SHP-4105", "collect_tariffs", '"CRE-21": {"duty_per_l": 0.063',
         "Collecting the tool results pairs each lot with the result one position after its own, so the Cremant gets the Sancerre's still-wine tariff."),
    Case("wine-args", "wi_args", "wrong_tool_args", "SHP-4103", "ChatOpenAI", '"abv": 14.5, "bottle_ml": 750, "lot": "PRT-10"',
         "The model asks the Port's tariff with 14.5% alcohol, the Barolo's figure, instead of 20.0%."),
)


class CustomsRejected(RuntimeError):
    """Customs (or the surety) refused the entry."""

    __module__ = "brokerage.ace"


def _heading(style: str, abv: float) -> tuple[str, float, float]:
    """HTS heading, duty USD per litre and federal excise USD per litre."""
    if style == "sparkling":
        return "2204.10.00", 0.198, 0.898
    if abv > 16.0:
        return "2204.21.80", 0.169, 0.415
    return "2204.21.50", 0.063, 0.283


# -- the scripted model ----------------------------------------------------------------------------


def policy(request: Any) -> Reply | str:
    if request.body["messages"][-1]["role"] == "tool":
        return f"Tariffs collected for {sum(m['role'] == 'tool' for m in request.body['messages'])} lots."
    calls = []
    for lot in json_in(last_user(request))["lots"]:
        abv = 14.5 if active("wi_args") and lot["lot"] == "PRT-10" else lot["abv"]
        calls.append(tool_call("lookup_tariff", {"lot": lot["lot"], "style": lot["style"], "abv": abv,
                                                 "bottle_ml": lot["bottle_ml"]}))
    return Reply(tool_calls=tuple(calls))


# -- tools -----------------------------------------------------------------------------------------


@tool
def get_manifest(shipment_id: str) -> list[dict[str, Any]]:
    """The lots of a shipment as the exporter declared them."""
    lots = []
    for lot, bottles, invoice in INPUTS[shipment_id]:
        wine, style, abv, ml = WINES[lot]
        lots.append({"lot": lot, "wine": wine, "style": style, "abv": abv, "bottle_ml": ml,
                     "bottles": bottles, "invoice_eur": invoice})
    return lots


@tool
def lookup_tariff(lot: str, style: str, abv: float, bottle_ml: int) -> dict[str, Any]:
    """The HTS heading and rates for a wine lot, from its style, alcohol and container size."""
    if active("wi_style") and lot == "CHP-NV":
        style = "still"
    hts, duty, excise = _heading(style, abv)
    return {"lot": lot, "hts": hts, "duty_per_l": duty, "excise_per_l": excise}


@tool
def get_fx_rate(pair: str, date: str) -> dict[str, Any]:
    """The certified exchange rate for a currency pair on a date."""
    if active("wi_fx"):
        return {"pair": pair, "rate": 1.0712, "as_of": "2026-09-30"}
    return {**FX, "pair": pair}


@tool
def check_bond(estimated_duties_usd: float) -> dict[str, Any]:
    """Whether the single-entry customs bond covers the estimated duties and taxes."""
    if estimated_duties_usd > BOND_USD:
        raise CustomsRejected(f"estimated duties and taxes USD {estimated_duties_usd:,.2f} exceed the "
                              f"single-entry bond of USD {BOND_USD:,}")
    return {"bond": "SEB-88120", "covered": True}


@tool
def file_customs_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """File the entry summary (CBP Form 7501) with customs."""
    if abs(entry["fx_rate"] - FX["rate"]) / FX["rate"] > 0.01:
        raise CustomsRejected(f"exchange rate {entry['fx_rate']} differs from the certified rate {FX['rate']} "
                              f"for {FX['as_of']} by more than 1%")
    for line in entry["lines"]:
        _, style, abv, _ = WINES[line["lot"]]
        expected = _heading(style, abv)[0]
        if line["hts"] != expected:
            raise CustomsRejected(f"line {line['lot']}: HTS {line['hts']} does not match the declared product "
                                  f"({style}, {abv}% vol), expected {expected}")
    return {"entry": f"ENT-{entry['shipment'][4:]}-7501", "status": "accepted"}


def _collect(given: dict[str, Any]) -> dict[str, Any]:
    results = [json.loads(m.content) for m in given["messages"] if isinstance(m, ToolMessage)]
    if active("wi_pairing") and len(results) == 3 and given["lots"][0] == "CRE-21":
        return {lot: results[(i + 1) % len(results)] for i, lot in enumerate(given["lots"])}
    return {t["lot"]: t for t in results}


def _lot_duty(row: dict[str, Any]) -> dict[str, Any]:
    lot, tariff = row["lot"], row["tariff"]
    litres = lot["bottles"] * lot["bottle_ml"] / 1000
    if active("wi_litres") and lot["lot"] == "PRS-22":
        litres = lot["bottles"] * lot["bottle_ml"] / 100
    return {"lot": lot["lot"], "hts": tariff["hts"], "litres": round(litres, 1),
            "duty_usd": round(litres * tariff["duty_per_l"], 2), "excise_usd": round(litres * tariff["excise_per_l"], 2),
            "value_usd": round(lot["invoice_eur"] * row["fx_rate"], 2)}


collect_tariffs = RunnableLambda(_collect, name="collect_tariffs")
compute_lot_duty = RunnableLambda(_lot_duty, name="compute_lot_duty")


# -- the graph -------------------------------------------------------------------------------------


class Entry(TypedDict, total=False):
    shipment: str
    lots: list[dict[str, Any]]
    messages: Annotated[list[AnyMessage], add_messages]
    tariffs: dict[str, Any]
    fx: dict[str, Any]
    lines: list[dict[str, Any]]
    filed: dict[str, Any]


def _graph(llm: ChatOpenAI) -> Any:
    model = llm.bind_tools([lookup_tariff])

    def load_shipment(state: Entry) -> Entry:
        lots = get_manifest.invoke({"shipment_id": state["shipment"]})
        ask = json.dumps({"shipment": state["shipment"], "lots": [
            {k: lot[k] for k in ("lot", "style", "abv", "bottle_ml")} for lot in lots]})
        return {"lots": lots, "messages": [("system", "You classify wine lots for US customs with the tariff tool."),
                                           ("user", "Look up the tariff of every lot: " + ask)]}

    def classify(state: Entry) -> Entry:
        return {"messages": [model.invoke(state["messages"])]}

    def collect(state: Entry) -> Entry:
        lots = [lot["lot"] for lot in state["lots"]]
        return {"tariffs": collect_tariffs.invoke({"messages": state["messages"], "lots": lots})}

    def exchange(state: Entry) -> Entry:
        return {"fx": get_fx_rate.invoke({"pair": "EURUSD", "date": "2026-12-01"})}

    def duties(state: Entry) -> Entry:
        lines = [compute_lot_duty.invoke({"lot": lot, "tariff": state["tariffs"][lot["lot"]], "fx_rate": state["fx"]["rate"]})
                 for lot in state["lots"]]
        check_bond.invoke({"estimated_duties_usd": round(sum(x["duty_usd"] + x["excise_usd"] for x in lines), 2)})
        return {"lines": lines}

    def file(state: Entry) -> Entry:
        entry = {"shipment": state["shipment"], "fx_rate": state["fx"]["rate"], "lines": state["lines"]}
        return {"filed": file_customs_entry.invoke({"entry": entry})}

    g = StateGraph(Entry)
    for name, node in (("load_shipment", load_shipment), ("classify", classify), ("collect", collect),
                       ("exchange", exchange), ("duties", duties), ("file", file)):
        g.add_node(name, node)
    g.add_node("tools", ToolNode([lookup_tariff]))
    g.add_edge(START, "load_shipment")
    g.add_edge("load_shipment", "classify")
    g.add_conditional_edges("classify", tools_condition, {"tools": "tools", END: "collect"})
    g.add_edge("tools", "classify")
    for a, b in (("collect", "exchange"), ("exchange", "duties"), ("duties", "file"), ("file", END)):
        g.add_edge(a, b)
    return g.compile()


def record(server: FakeModelServer, input_id: str, path: Path) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="tariff-clerk", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"customs entry for {input_id}")
    try:
        _graph(llm).invoke({"shipment": input_id}, config={"callbacks": [tracer]})
    except CustomsRejected:
        pass
