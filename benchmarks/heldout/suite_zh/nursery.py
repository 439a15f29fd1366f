"""Tree nursery wholesale orders: a LangGraph StateGraph (ChatOpenAI, a retriever, tools, a routed branch)."""
from __future__ import annotations

import json
import re
from typing import TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .kit import active

AGENT, ROUTE, EXT = "nursery-wholesale-orders", "langgraph", "jsonl"
DOMAIN = "tree nursery wholesale orders"
SHAPE = "graph: intake (model + JSON parser) -> catalog retriever per line -> lot listing per line -> model routes vehicle -> flatbed|van branch -> model prep plan -> price sheet -> submit check"

INPUTS = {
    "greenway": "Wholesale order from Greenway Landscapes: 60 x Acer rubrum 'October Glory' at 2.4 m; 120 x Cornus sericea 'Flaviramea' at 0.6 m bare-root.",
    "parkside": "Wholesale order from Parkside Council: 40 x Quercus palustris 'Green Pillar' at 3.0 m; 200 x Viburnum opulus 'Roseum' at 0.8 m bare-root.",
    "r1": "Wholesale order from Hollis Gardens: 30 x Betula utilis 'Jacquemontii' at 1.8 m; 80 x Cornus sericea 'Flaviramea' at 0.5 m bare-root.",
    "r2": "Wholesale order from Tarn Estates: 25 x Acer rubrum 'October Glory' at 1.5 m; 60 x Viburnum opulus 'Roseum' at 0.6 m bare-root.",
    "r3": "Wholesale order from Mill Lane Homes: 50 x Quercus palustris 'Green Pillar' at 1.2 m; 90 x Cornus sericea 'Flaviramea' at 0.7 m bare-root.",
    "r4": "Wholesale order from Brook Academy: 20 x Betula utilis 'Jacquemontii' at 2.6 m; 150 x Viburnum opulus 'Roseum' at 0.9 m bare-root.",
}
REFS = ["r1", "r2", "r3", "r4"]
CATALOG = [
    ("Acer rubrum", "Armstrong", "ACR-101", 92.0), ("Acer rubrum", "October Glory", "ACR-114", 98.5),
    ("Cornus sericea", "Kelseyi", "COS-201", 6.2), ("Cornus sericea", "Flaviramea", "COS-208", 5.8),
    ("Quercus palustris", "Freefall", "QUP-301", 120.0), ("Quercus palustris", "Green Pillar", "QUP-317", 1250.0),
    ("Viburnum opulus", "Compactum", "VIO-401", 7.5), ("Viburnum opulus", "Roseum", "VIO-409", 7.9),
    ("Betula utilis", "Grayswood Ghost", "BEU-501", 88.0), ("Betula utilis", "Jacquemontii", "BEU-512", 84.0),
]
LOTS = {sku: [{"lot": f"{sku}-L{i}", "trees": n} for i, n in enumerate((30, 25, 40, 35, 90), 1)] for _, _, sku, _ in CATALOG}

CASES = [
    ("zh-nursery-01", "truncated_result", "greenway", ("list_lots", 1, "tool"), "submit",
     "list_lots returns only its first page of lots, so the first line is allocated fewer trees than ordered and submission refuses it."),
    ("zh-nursery-02", "format_drift", "parkside", ("price_sheet", 1, "tool"), "submit",
     "price_sheet starts writing prices with a decimal comma, the price parsing reads 1.250,00 as 1.25, and the invoice minimum check fails."),
    ("zh-nursery-03", "wrong_routing", "greenway", ("ChatOpenAI", 2, "llm"), "submit",
     "the routing model sends 2.4 m trees to the van branch, and submission refuses a van for trees over 2.0 m."),
    ("zh-nursery-04", "plan_error", "parkside", ("ChatOpenAI", 3, "llm"), "submit",
     "the prep plan leaves out root wrapping for the bare-root line, which the submission's phytosanitary check requires."),
    ("zh-nursery-05", "wrong_retrieval", "greenway", ("CatalogRetriever", 1, "retrieval"), "submit",
     "the catalogue retriever ranks the Armstrong cultivar first for October Glory, so the order line carries a different SKU."),
]


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Extract"):
        buyer = re.search(r"from (.+?):", user).group(1)
        lines = [{"qty": int(q), "species": s, "cultivar": c, "height_m": float(h), "bare_root": bool(b)}
                 for q, s, c, h, b in re.findall(r"(\d+) x (\w+ \w+) '(.+?)' at ([\d.]+) m( bare-root)?", user)]
        return json.dumps({"buyer": buyer, "lines": lines})
    if system.startswith("Route"):
        data = json.loads(user)
        tallest = max(data["heights"])
        vehicle = "flatbed" if tallest > 2.0 else "van"
        if active("zh-nursery-03"):
            vehicle = "van"
        return json.dumps({"vehicle": vehicle, "reason": f"tallest tree {tallest} m"})
    if system.startswith("Plan"):
        data = json.loads(user)
        steps = ["lift", "grade"]
        if any(line["bare_root"] for line in data["lines"]) and not active("zh-nursery-04"):
            steps.append("root_wrap")
        steps += ["label", "load"]
        return json.dumps({"steps": steps})
    return "{}"


class CatalogRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        species, cultivar = query.split(" | ")
        hits = [c for c in CATALOG if c[0] == species]
        if not active("zh-nursery-05"):
            hits.sort(key=lambda c: c[1] != cultivar)
        return [Document(page_content=f"{s} '{cv}' sku {sku} list price {p:.2f}",
                         metadata={"sku": sku, "cultivar": cv, "species": s}) for s, cv, sku, p in hits]


@tool
def list_lots(sku: str) -> list[dict]:
    """List the field lots holding a SKU (first page of the lot register)."""
    lots = LOTS[sku]
    if active("zh-nursery-01"):
        return lots[:2]
    return lots


@tool
def reserve_vehicle(vehicle: str, trees: int) -> dict:
    """Reserve a delivery vehicle."""
    return {"vehicle": vehicle, "trees": trees, "booking": f"VH-{vehicle[:2].upper()}-{trees}"}


@tool
def price_sheet(skus: list[str]) -> list[dict]:
    """Unit prices for SKUs as printed on the trade price sheet."""
    price = {sku: p for _, _, sku, p in CATALOG}
    rows = []
    for sku in skus:
        text = f"{price[sku]:,.2f}"
        if active("zh-nursery-02"):
            text = text.replace(",", " ").replace(".", ",").replace(" ", ".")
        rows.append({"sku": sku, "unit_price": text})
    return rows


class S(TypedDict, total=False):
    text: str
    order: dict
    skus: list
    allocation: dict
    vehicle: dict
    booking: dict
    plan: dict
    invoice: dict
    result: str


def build(llm):
    retriever = CatalogRetriever()
    parser = JsonOutputParser()

    def intake(state: S) -> dict:
        msg = llm.invoke([("system", "Extract the wholesale order as JSON."), ("user", state["text"])])
        return {"order": parser.invoke(msg)}

    def catalog(state: S) -> dict:
        skus = []
        for line in state["order"]["lines"]:
            docs = retriever.invoke(f"{line['species']} | {line['cultivar']}")
            skus.append(docs[0].metadata["sku"])
        return {"skus": skus}

    def stock(state: S) -> dict:
        allocation = {}
        for line, sku in zip(state["order"]["lines"], state["skus"]):
            lots = list_lots.invoke({"sku": sku})
            need, picked = line["qty"], []
            for lot in lots:
                if need <= 0:
                    break
                take = min(need, lot["trees"])
                picked.append({"lot": lot["lot"], "trees": take})
                need -= take
            allocation[sku] = picked
        return {"allocation": allocation}

    def route(state: S) -> dict:
        heights = [line["height_m"] for line in state["order"]["lines"]]
        msg = llm.invoke([("system", "Route the delivery to a vehicle; answer JSON."),
                          ("user", json.dumps({"buyer": state["order"]["buyer"], "heights": heights}))])
        return {"vehicle": json.loads(msg.content)}

    def flatbed(state: S) -> dict:
        trees = sum(line["qty"] for line in state["order"]["lines"])
        return {"booking": reserve_vehicle.invoke({"vehicle": "flatbed", "trees": trees})}

    def van(state: S) -> dict:
        trees = sum(line["qty"] for line in state["order"]["lines"])
        return {"booking": reserve_vehicle.invoke({"vehicle": "van", "trees": trees})}

    def prep(state: S) -> dict:
        msg = llm.invoke([("system", "Plan the lifting and prep steps; answer JSON."),
                          ("user", json.dumps({"lines": state["order"]["lines"]}))])
        return {"plan": json.loads(msg.content)}

    def price(state: S) -> dict:
        rows = price_sheet.invoke({"skus": state["skus"]})
        lines = []
        for line, row in zip(state["order"]["lines"], rows):
            unit = float(row["unit_price"].replace(",", ""))
            lines.append({"sku": row["sku"], "qty": line["qty"], "unit": unit, "amount": round(unit * line["qty"], 2)})
        return {"invoice": {"lines": lines, "total": round(sum(x["amount"] for x in lines), 2)}}

    def submit(state: S) -> dict:
        order, problems = state["order"], []
        names = {sku: cv for _, cv, sku, _ in CATALOG}
        for line, sku in zip(order["lines"], state["skus"]):
            if names[sku] != line["cultivar"]:
                problems.append(f"SKU {sku} is '{names[sku]}', order line asks for '{line['cultivar']}'")
            got = sum(x["trees"] for x in state["allocation"][sku])
            if got != line["qty"]:
                problems.append(f"line {sku}: allocated {got} of {line['qty']} trees")
            if line["bare_root"] and "root_wrap" not in state["plan"]["steps"]:
                problems.append(f"line {sku}: bare-root stock needs root_wrap before phytosanitary release")
        tallest = max(line["height_m"] for line in order["lines"])
        if state["booking"]["vehicle"] == "van" and tallest > 2.0:
            problems.append(f"vehicle van cannot carry trees of {tallest} m (limit 2.0 m)")
        band = {sku: p for _, _, sku, p in CATALOG}
        for x in state["invoice"]["lines"]:
            if not 0.8 * band[x["sku"]] <= x["unit"] <= 1.2 * band[x["sku"]]:
                problems.append(f"line {x['sku']}: unit price {x['unit']:.2f} outside the trade band")
        if state["invoice"]["total"] < 500:
            problems.append(f"invoice total {state['invoice']['total']:.2f} is below the 500.00 wholesale minimum")
        if problems:
            raise ValueError("order submission refused: " + "; ".join(problems))
        return {"result": f"order for {order['buyer']} submitted, invoice {state['invoice']['total']:.2f}"}

    g = StateGraph(S)
    for name, fn in (("intake", intake), ("catalog", catalog), ("stock", stock), ("route", route),
                     ("flatbed", flatbed), ("van", van), ("prep", prep), ("price", price), ("submit", submit)):
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "catalog")
    g.add_edge("catalog", "stock")
    g.add_edge("stock", "route")
    g.add_conditional_edges("route", lambda s: s["vehicle"]["vehicle"], {"flatbed": "flatbed", "van": "van"})
    g.add_edge("flatbed", "prep")
    g.add_edge("van", "prep")
    g.add_edge("prep", "price")
    g.add_edge("price", "submit")
    g.add_edge("submit", END)
    return g.compile()


def record(key: str, fault: str | None, out, server) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=str(out), name=AGENT, task=INPUTS[key])
    try:
        build(llm).invoke({"text": INPUTS[key]}, config={"callbacks": [tracer]})
    except ValueError:
        pass
