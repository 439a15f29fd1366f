"""bunker-order-desk: a marine fuel supplier's order desk turning a bunker nomination e-mail into a barge delivery
(Ghent and Antwerp).

Route: a LangGraph `StateGraph` with `ChatOpenAI`, LangChain tools, retrievers and an output parser, recorded by
trajdebug's LangChain callback handler (`TrajdebugTracer`), JSONL.
Shape: extraction chain (model call + output parser), customer-history retriever, a plain merge node, a price
tool node, a barge-stock retriever node, a scheduler model looping over tools (conversion, parallel barge-slot
checks, reservation) through a ToolNode, and a confirm node whose order tool validates the order.
"""

import json
import re
from typing import Annotated, Any, TypedDict

from trajdebug.testing import FakeModelServer, Reply, tool_call

from ._kit import dumps, system_text, text_of, tool_results

NAME = "bunker-order-desk"
ROUTE = "langgraph"
DOMAIN = "marine fuel supplier: bunker nominations scheduled onto delivery barges"
SHAPE = "llm + output parser chain, retriever, merge node, tool node, retriever node, model/tool loop with parallel calls (ToolNode), confirm tool"

SWITCH: str | None = None


def _on(case: str) -> bool:
    return SWITCH == case


NOMINATIONS = [
    {"ref": "SBS-N-1187", "vessel": "NORD SWAN", "imo": "9512337", "port": "Ghent", "berth": "Kluizendok 5",
     "grade": "VLSFO", "spec": "RMG380 0.5%S", "quantity": "500 mt", "window": "2025-05-14 08:00-16:00",
     "buyer": "Nordvik Shipping AS"},
    {"ref": "SBS-N-1192", "vessel": "ATLANTIC PROVIDER", "imo": "9433107", "port": "Antwerp", "berth": "Quay 1742",
     "grade": "VLSFO", "spec": "RMG380 0.5%S", "quantity": "1,200 mt", "window": "2025-05-16 06:00-18:00",
     "buyer": "Atlantic Bulk Carriers Ltd"},
    {"ref": "SBS-N-1195", "vessel": "CELTIC SPIRIT", "imo": "9371522", "port": "Antwerp", "berth": "Quay 526",
     "grade": "MGO", "spec": "DMA 0.1%S", "quantity": "180 mt", "window": "2025-05-19 10:00-14:00",
     "buyer": "Celtic Coasters Ltd"},
    {"ref": "SBS-N-1201", "vessel": "NORD EAGLE", "imo": "9512349", "port": "Ghent", "berth": "Kluizendok 3",
     "grade": "VLSFO", "spec": "RMG380 0.5%S", "quantity": "650 mt", "window": "2025-05-21 07:00-15:00",
     "buyer": "Nordvik Shipping AS"},
    {"ref": "SBS-N-1204", "vessel": "BALTIC TRADER", "imo": "9290618", "port": "Ghent", "berth": "Rodenhuize 2",
     "grade": "MGO", "spec": "DMA 0.1%S", "quantity": "90 mt", "window": "2025-05-23 09:00-13:00",
     "buyer": "Baltic Feeder Lines"},
]


def _email(n: dict[str, Any]) -> str:
    return (f"Subject: Bunker nomination {n['ref']}\n\nPlease supply MV {n['vessel']} (IMO {n['imo']}).\n"
            f"Port: {n['port']}, {n['berth']}\nGrade: {n['grade']} {n['spec']}\nQuantity: {n['quantity']}\n"
            f"Delivery window: {n['window']} LT\nBuyer: {n['buyer']}\nAgent: Wijnants Maritime, +32 9 255 1100")


INPUTS = [{"task": f"bunker nomination {n['ref']} {n['vessel']}", "email": _email(n)} for n in NOMINATIONS]

BARGES = [
    {"barge": "LEIE 2", "port": "Ghent", "grade": "VLSFO", "stock_m3": 910.0, "density_15c": 0.9871},
    {"barge": "BRABO 7", "port": "Ghent", "grade": "VLSFO", "stock_m3": 620.0, "density_15c": 0.9865},
    {"barge": "GENT TANK 4", "port": "Ghent", "grade": "MGO", "stock_m3": 240.0, "density_15c": 0.8450},
    {"barge": "SCHELDE 11", "port": "Antwerp", "grade": "VLSFO", "stock_m3": 1480.0, "density_15c": 0.9902},
    {"barge": "SCHELDE 3", "port": "Antwerp", "grade": "VLSFO", "stock_m3": 760.0, "density_15c": 0.9868},
    {"barge": "ZANDVLIET 2", "port": "Antwerp", "grade": "MGO", "stock_m3": 310.0, "density_15c": 0.8452},
]

HISTORY = [
    {"buyer": "Nordvik Shipping AS", "vessel": "NORD SWAN", "status": "delivered",
     "text": "NORD SWAN 2025-02-03 Ghent: 480 mt VLSFO delivered; hose on starboard side, notify chief engineer "
             "2 h before barge alongside."},
    {"buyer": "Nordvik Shipping AS", "vessel": "NORD SWAN", "status": "pending",
     "text": "AMENDMENT to nomination SBS-N-1188 (Nordvik Shipping AS): quantity revised to 500 mt VLSFO, "
             "delivery Ghent 2025-06-02."},
    {"buyer": "Nordvik Shipping AS", "vessel": "NORD EAGLE", "status": "delivered",
     "text": "NORD EAGLE 2025-03-11 Ghent: 610 mt VLSFO delivered; manifold midships port side, 6 inch reducer."},
    {"buyer": "Atlantic Bulk Carriers Ltd", "vessel": "ATLANTIC PROVIDER", "status": "delivered",
     "text": "ATLANTIC PROVIDER 2024-12-18 Antwerp: 1,150 mt VLSFO delivered in two parcels."},
    {"buyer": "Celtic Coasters Ltd", "vessel": "CELTIC SPIRIT", "status": "delivered",
     "text": "CELTIC SPIRIT 2025-01-22 Antwerp: 160 mt MGO delivered; small manifold, 4 inch hose."},
    {"buyer": "Baltic Feeder Lines", "vessel": "BALTIC TRADER", "status": "delivered",
     "text": "BALTIC TRADER 2025-02-27 Ghent: 85 mt MGO delivered; sample sealed with the chief engineer."},
]

PRICES = {("Ghent", "VLSFO"): 571.5, ("Antwerp", "VLSFO"): 566.0, ("Ghent", "MGO"): 742.0, ("Antwerp", "MGO"): 735.5}
MIN_DELIVERY_MT = 50.0


# ----------------------------------------------------------------------------------------------- components


def _build(server: FakeModelServer) -> Any:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
    from langchain_core.output_parsers import BaseOutputParser
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition

    class NominationParser(BaseOutputParser[dict]):
        """The extraction model's JSON, with the quantity as a number of metric tonnes."""

        def parse(self, text: str) -> dict:
            data = json.loads(text[text.index("{"): text.rindex("}") + 1])
            q = str(data["quantity"])
            if _on("qty_parse"):
                amount = float(re.match(r"[\d.]+", q).group())
            else:
                amount = float(re.sub(r"[^\d.]", "", q.split("mt")[0]))
            day, start, end = re.match(r"(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})-(\d{2}:\d{2})", data["window"]).groups()
            return {"ref": data["ref"], "vessel": data["vessel"].upper(), "port": data["port"],
                    "grade": data["grade"].upper(), "quantity_mt": amount, "buyer": data["buyer"],
                    "window": {"day": day, "from": start, "to": end}}

    class CustomerHistoryRetriever(BaseRetriever):
        """The order book's past and pending records of one buyer."""

        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list:
            return [Document(page_content=h["text"], metadata={"vessel": h["vessel"], "status": h["status"]})
                    for h in HISTORY if h["buyer"] in query]

    class BargeStockRetriever(BaseRetriever):
        """Barges with free stock; the query carries `grade:` and `port:` filters."""

        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list:
            filters = dict(re.findall(r"(\w+):(\S+)", query))
            hits = [b for b in BARGES if b["port"] == filters.get("port")]
            if not _on("stock_grade"):
                hits = [b for b in hits if b["grade"] == filters.get("grade")]
            hits.sort(key=lambda b: -b["stock_m3"])
            return [Document(page_content=f"{b['barge']} | free stock {b['stock_m3']:.0f} m3 | density at 15 C "
                                          f"{b['density_15c']:.4f} | {b['port']}",
                             metadata={"barge": b["barge"], "grade": b["grade"]}) for b in hits]

    @tool
    def get_bunker_price(port: str, grade: str) -> dict:
        """Today's delivered price in USD per metric tonne for a grade in a port."""
        return {"port": port, "grade": grade, "usd_per_mt": PRICES[(port, grade)]}

    @tool
    def convert_quantity(quantity_mt: float, density_15c: float) -> dict:
        """Volume at 15 C in cubic metres of a quantity in metric tonnes, for a density in t/m3 at 15 C."""
        tonnes = quantity_mt * 1.01605 if _on("long_tons") else quantity_mt
        return {"quantity_mt": quantity_mt, "density_15c": density_15c, "volume_m3": round(tonnes / density_15c, 1)}

    @tool
    def check_barge_slot(barge: str, day: str) -> dict:
        """Whether a barge has a free delivery slot on a day."""
        busy = {("BRABO 7", "2025-05-21")}
        return {"barge": barge, "day": day, "free": (barge, day) not in busy}

    @tool
    def reserve_barge(barge: str, grade: str, volume_m3: float, day: str, vessel: str) -> dict:
        """Reserve a barge's stock for a delivery."""
        info = next(b for b in BARGES if b["barge"] == barge)
        if info["grade"] != grade:
            raise ValueError(f"{barge} carries {info['grade']} only; {grade} requested for {vessel}")
        if volume_m3 > info["stock_m3"]:
            raise ValueError(f"{barge} has {info['stock_m3']:.1f} m3 free; {volume_m3:.1f} m3 requested")
        return {"reservation": f"RSV-{day[5:7]}{day[8:10]}-{barge.split()[-1]}", "barge": barge, "grade": grade,
                "volume_m3": volume_m3, "density_15c": info["density_15c"], "day": day}

    @tool
    def issue_bunker_order(order: dict) -> dict:
        """Issue the delivery order to the barge and the buyer (validated against the nomination)."""
        nominated, volume, density = order["nominated_mt"], order["volume_m3"], order["density_15c"]
        delivered = round(volume * density, 1)
        if abs(delivered - nominated) > 0.005 * nominated:
            raise ValueError(f"order {order['ref']}: reserved {volume:.1f} m3 at {density:.4f} is {delivered:.1f} mt; "
                             f"nominated {nominated:.1f} mt")
        if nominated < MIN_DELIVERY_MT:
            raise ValueError(f"order {order['ref']}: {nominated:.1f} mt is below the {MIN_DELIVERY_MT:.0f} mt minimum "
                             f"delivery by barge")
        return {"order": order["ref"].replace("-N-", "-O-"), "status": "issued", "barge": order["barge"],
                "value_usd": round(nominated * order["usd_per_mt"], 2)}

    class State(TypedDict, total=False):
        email: str
        nomination: dict
        history: list
        notes: list
        price: dict
        barges: list
        messages: Annotated[list, add_messages]
        order: dict

    llm = ChatOpenAI(model=server.model, base_url=server.base_url, api_key="not-needed", max_retries=0,
                     temperature=0)
    extractor = llm.with_config(run_name="nomination_model")
    scheduler_tools = [convert_quantity, check_barge_slot, reserve_barge]
    scheduler = llm.bind_tools(scheduler_tools).with_config(run_name="scheduler_model")
    history_retriever = CustomerHistoryRetriever()
    stock_retriever = BargeStockRetriever()
    parser = NominationParser()

    def extract(state: State) -> dict:
        prompt = [SystemMessage("ROLE nomination-extractor. Extract the nomination as JSON {ref, vessel, port, "
                                "grade, quantity, window, buyer}; keep the quantity as written."),
                  HumanMessage(state["email"])]
        return {"nomination": (extractor | parser).invoke(prompt)}

    def history(state: State) -> dict:
        docs = history_retriever.invoke(f"orders of {state['nomination']['buyer']}")
        return {"history": [{"text": d.page_content, **d.metadata} for d in docs]}

    def merge_context(state: State) -> dict:
        vessel = state["nomination"]["vessel"]
        if _on("merge_all"):
            keep = list(state["history"])
        else:
            keep = [h for h in state["history"] if h["vessel"] == vessel and h["status"] == "delivered"]
        return {"notes": [h["text"] for h in keep]}

    def price(state: State) -> dict:
        n = state["nomination"]
        return {"price": get_bunker_price.invoke({"port": n["port"], "grade": n["grade"]})}

    def stock(state: State) -> dict:
        n = state["nomination"]
        docs = stock_retriever.invoke(f"grade:{n['grade']} port:{n['port']} barges with free stock")
        return {"barges": [d.page_content for d in docs]}

    def schedule(state: State) -> dict:
        n = state["nomination"]
        prompt = [SystemMessage("ROLE bunker-scheduler. Convert the nominated tonnes to m3 at the barge's density, "
                                "check barge slots, reserve one barge with enough stock, then say which."),
                  HumanMessage(dumps({"nomination": n, "notes": state["notes"], "barges": state["barges"]}))]
        return {"messages": [scheduler.invoke(prompt + list(state.get("messages", [])))]}

    def confirm(state: State) -> dict:
        n = state["nomination"]
        reservation = next(json.loads(m.content) for m in reversed(state["messages"])
                           if isinstance(m, ToolMessage) and m.name == "reserve_barge")
        order = {"ref": n["ref"], "vessel": n["vessel"], "grade": n["grade"], "nominated_mt": n["quantity_mt"],
                 "barge": reservation["barge"], "volume_m3": reservation["volume_m3"],
                 "density_15c": reservation["density_15c"], "day": reservation["day"],
                 "usd_per_mt": state["price"]["usd_per_mt"]}
        return {"order": issue_bunker_order.invoke({"order": order})}

    g = StateGraph(State)
    g.add_node("extract", extract)
    g.add_node("history", history)
    g.add_node("merge_context", merge_context)
    g.add_node("price", price)
    g.add_node("stock", stock)
    g.add_node("schedule", schedule)
    g.add_node("tools", ToolNode(scheduler_tools, handle_tool_errors=False))
    g.add_node("confirm", confirm)
    g.add_edge(START, "extract")
    g.add_edge("extract", "history")
    g.add_edge("history", "merge_context")
    g.add_edge("merge_context", "price")
    g.add_edge("price", "stock")
    g.add_edge("stock", "schedule")
    g.add_conditional_edges("schedule", tools_condition, {"tools": "tools", "__end__": "confirm"})
    g.add_edge("tools", "schedule")
    g.add_edge("confirm", END)
    return g.compile()


_graph: Any = None
_graph_url: str | None = None

CASES = [
    {"id": "bunker_quantity_thousands", "input": 1, "switch": "qty_parse", "fault_kind": "lossy_parsing",
     "root": {"name": "NominationParser", "occurrence": 1}, "root_kind": "parse", "failure": "issue_bunker_order",
     "description": "NominationParser read the quantity '1,200 mt' up to its thousands separator and passed on "
                    "1.0 mt for ATLANTIC PROVIDER."},
    {"id": "bunker_reserve_tonnes_as_m3", "input": 0, "switch": "reserve_args", "fault_kind": "wrong_tool_args",
     "root": {"name": "scheduler_model", "occurrence": 3}, "root_kind": "llm", "failure": "issue_bunker_order",
     "description": "scheduler_model called reserve_barge with volume_m3 500, the nominated tonnes, instead of the "
                    "506.5 m3 that convert_quantity had returned for NORD SWAN."},
    {"id": "bunker_conversion_long_tons", "input": 4, "switch": "long_tons", "fault_kind": "unit_error",
     "root": {"name": "convert_quantity", "occurrence": 1}, "root_kind": "tool", "failure": "issue_bunker_order",
     "description": "convert_quantity converted BALTIC TRADER's 90 mt of MGO as long tons and returned 108.2 m3 "
                    "instead of 106.5 m3."},
    {"id": "bunker_stock_any_grade", "input": 2, "switch": "stock_grade", "fault_kind": "tool_ignores_argument",
     "root": {"name": "BargeStockRetriever", "occurrence": 1}, "root_kind": "retrieval", "failure": "reserve_barge",
     "description": "BargeStockRetriever ignored the grade:MGO filter and listed Antwerp's VLSFO barges first, so "
                    "the scheduler picked SCHELDE 11 for CELTIC SPIRIT's MGO."},
    {"id": "bunker_sister_amendment", "input": 3, "switch": "merge_all", "fault_kind": "context_pollution",
     "root": {"name": "merge_context", "occurrence": 1}, "root_kind": "other", "failure": "issue_bunker_order",
     "description": "merge_context put every Nordvik record into the notes, including a pending amendment to "
                    "500 mt for another nomination, and the scheduler applied it to NORD EAGLE's 650 mt."},
]


def record(inp: dict[str, Any], path: str, server: FakeModelServer) -> None:
    global _graph, _graph_url
    from trajdebug.integrations.langchain import TrajdebugTracer

    if _graph is None or _graph_url != server.base_url:
        _graph, _graph_url = _build(server), server.base_url
    tracer = TrajdebugTracer(path=path, name=NAME)
    try:
        _graph.invoke({"email": inp["email"], "messages": []},
                      config={"callbacks": [tracer], "metadata": {"task": inp["task"]}, "recursion_limit": 20})
    except Exception:
        pass


# ----------------------------------------------------------------------------------------------- the model


def _nomination_from_email(text: str) -> dict[str, Any]:
    def field(label: str) -> str:
        return re.search(rf"{label}: (.+)", text).group(1).strip()

    port, _berth = field("Port").split(",", 1)
    grade = field("Grade").split()[0]
    return {"ref": re.search(r"nomination (\S+)", text).group(1), "vessel": re.search(r"MV ([A-Z ]+?) \(", text).group(1),
            "port": port.strip(), "grade": grade, "quantity": field("Quantity"),
            "window": field("Delivery window").replace(" LT", ""), "buyer": field("Buyer")}


def brain(request: Any) -> Any:
    messages = request.body["messages"]
    role = system_text(messages)
    if role.startswith("ROLE nomination-extractor"):
        return "```json\n" + json.dumps(_nomination_from_email(text_of(messages[-1]))) + "\n```"
    if role.startswith("ROLE bunker-scheduler"):
        user = next(m for m in messages if m["role"] == "user")
        data = json.loads(text_of(user))
        n = data["nomination"]
        qty = n["quantity_mt"]
        for note in data["notes"]:
            m = re.match(r"AMENDMENT to nomination \S+ \((.+?)\): quantity revised to ([\d.]+) mt", note)
            if m and m.group(1) == n["buyer"]:
                qty = float(m.group(2))
        barges = []
        for line in data["barges"]:
            name, stock, dens, _port = [p.strip() for p in line.split("|")]
            barges.append({"barge": name, "stock_m3": float(stock.split()[2]), "density": float(dens.split()[-1])})
        results = tool_results(messages)
        done = [r["name"] for r in results]
        if "convert_quantity" not in done:
            return Reply(tool_calls=(tool_call("convert_quantity", {"quantity_mt": qty,
                                                                    "density_15c": barges[0]["density"]}),))
        volume = json.loads(next(r["content"] for r in results if r["name"] == "convert_quantity"))["volume_m3"]
        fit = [b for b in barges if b["stock_m3"] >= volume]
        if "check_barge_slot" not in done:
            return Reply(tool_calls=tuple(tool_call("check_barge_slot", {"barge": b["barge"],
                                                                         "day": n["window"]["day"]})
                                          for b in fit[:2]))
        if "reserve_barge" not in done:
            slots = [json.loads(r["content"]) for r in results if r["name"] == "check_barge_slot"]
            barge = next(s["barge"] for s in slots if s["free"])
            amount = qty if _on("reserve_args") else volume
            return Reply(tool_calls=(tool_call("reserve_barge", {"barge": barge, "grade": n["grade"],
                                                                 "volume_m3": amount, "day": n["window"]["day"],
                                                                 "vessel": n["vessel"]}),))
        rsv = json.loads(next(r["content"] for r in results if r["name"] == "reserve_barge"))
        return (f"Reserved {rsv['barge']} ({rsv['reservation']}) for {n['vessel']}: {rsv['volume_m3']} m3 "
                f"{n['grade']} on {rsv['day']}.")
    return "I only handle bunker nominations."
