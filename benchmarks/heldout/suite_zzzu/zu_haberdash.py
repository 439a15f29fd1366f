"""Haberdashery online shop assistant (langgraph route): router node, catalogue retriever per item, model basket, JSON parser, stock tool, payment."""
import json

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "notions-shop-assistant"
ROUTE = "langgraph"
DOMAIN = "haberdashery's online shop"
SHAPE = "read message -> model desk label -> router node -> retriever per item -> model basket -> JSON parser -> stock tool per line -> price -> payment -> pick"
SWITCH = set()

CATALOGUE = [
    {"sku": "GG25-NV", "item": "grosgrain ribbon", "width_mm": 25, "colour": "navy", "unit": "m", "price": 1.40},
    {"sku": "GG15-NV", "item": "grosgrain ribbon", "width_mm": 15, "colour": "navy", "unit": "m", "price": 0.95},
    {"sku": "GG25-RD", "item": "grosgrain ribbon", "width_mm": 25, "colour": "red", "unit": "m", "price": 1.40},
    {"sku": "SR10-IV", "item": "satin ribbon", "width_mm": 10, "colour": "ivory", "unit": "m", "price": 0.80},
    {"sku": "PS14-SV", "item": "press studs", "size": 14, "colour": "silver", "unit": "pack", "price": 2.60},
    {"sku": "PS10-BK", "item": "press studs", "size": 10, "colour": "black", "unit": "pack", "price": 2.40},
    {"sku": "TH310", "item": "polyester thread", "colour": "310 navy", "unit": "reel", "price": 2.10},
    {"sku": "TH800", "item": "polyester thread", "colour": "800 white", "unit": "reel", "price": 2.10},
    {"sku": "BB18-WH", "item": "bias binding", "width_mm": 18, "colour": "white", "unit": "m", "price": 0.70},
    {"sku": "ZP20-BK", "item": "concealed zip", "length_cm": 20, "colour": "black", "unit": "each", "price": 1.90},
    {"sku": "ZP56-NV", "item": "concealed zip", "length_cm": 56, "colour": "navy", "unit": "each", "price": 3.20},
    {"sku": "EL06-WH", "item": "knitted elastic", "width_mm": 6, "colour": "white", "unit": "m", "price": 0.45},
]
STOCK = {"GG25-NV": 40, "GG15-NV": 60, "GG25-RD": 12, "SR10-IV": 80, "PS14-SV": 9, "PS10-BK": 20, "TH310": 14,
         "TH800": 30, "BB18-WH": 25, "ZP20-BK": 16, "ZP56-NV": 4, "EL06-WH": 100}

INPUTS = [
    {"customer": "Iris Penhaligon", "preauth": 16.00,
     "wants": [["GG25-NV", 3], ["PS14-SV", 2], ["TH310", 1]],
     "message": "Hello, I need 3 m of 25 mm navy grosgrain ribbon, 2 packs of size 14 silver press studs and a reel of navy thread 310."},
    {"customer": "Tomasz Wolak", "preauth": 15.00,
     "wants": [["ZP56-NV", 2], ["TH310", 2], ["EL06-WH", 4]],
     "message": "Could I order two 56 cm navy concealed zips, two reels of thread 310 and 4 m of 6 mm white elastic?"},
    {"customer": "Greta Ambler", "preauth": 12.00,
     "wants": [["SR10-IV", 5], ["BB18-WH", 3], ["TH800", 1]],
     "message": "Please send 5 m of 10 mm ivory satin ribbon, 3 m of 18 mm white bias binding and one reel of white thread 800."},
    {"customer": "Niamh Doherty", "preauth": 14.00,
     "wants": [["GG25-RD", 4], ["ZP20-BK", 1], ["PS10-BK", 1]],
     "message": "I'd like 4 m of 25 mm red grosgrain, one 20 cm black concealed zip and a pack of size 10 black press studs."},
    {"customer": "Farid Haddad", "preauth": 17.00,
     "wants": [["GG15-NV", 6], ["EL06-WH", 6], ["TH800", 2]],
     "message": "Hi, 6 m of 15 mm navy grosgrain, 6 m of 6 mm white knitted elastic and 2 reels of white thread 800, please."},
]
CASES = [
    {"id": "zzzu_haberdash_desk", "input": 1, "switch": "desk_trade", "kind": "wrong_routing",
     "root": ("route_request", 1), "failure": "take_payment",
     "desc": "The router sent a retail customer's order to the trade desk, whose trade pricing the payment service refused without an account number."},
    {"id": "zzzu_haberdash_width", "input": 0, "switch": "width_rank", "kind": "wrong_retrieval",
     "root": ("CatalogueSearch", 1), "failure": "pick_and_pack",
     "desc": "The catalogue search ranked the 15 mm navy grosgrain first for a 25 mm request, so the basket carried the narrower ribbon."},
    {"id": "zzzu_haberdash_cut", "input": 2, "switch": "cut_message", "kind": "truncated_result",
     "root": ("read_message", 1), "failure": "pick_and_pack",
     "desc": "Reading the message kept only its first 90 characters, so the thread line never reached the basket."},
    {"id": "zzzu_haberdash_prices", "input": 3, "switch": "price_strings", "kind": "format_drift",
     "root": ("ChatOpenAI", 2), "failure": "price_basket",
     "desc": "The model wrote the basket's unit prices as pound strings instead of numbers, which the pricing step could not add."},
    {"id": "zzzu_haberdash_session", "input": 4, "switch": "shared_session", "kind": "context_pollution",
     "root": ("load_session", 1), "failure": "take_payment",
     "desc": "The session loader pulled the previous shopper's chat into this basket's prompt, and the model added their bias binding, overrunning the pre-authorised amount."},
]

PREVIOUS_CHAT = "Earlier customer: add 8 m of 18 mm white bias binding to my basket please."


def policy(request):
    msgs = request.body["messages"]
    first = msgs[0]["content"]
    last = msgs[-1]["content"]
    if first.startswith("Label the request"):
        return "retail"
    # basket composition
    payload = json.loads(last.split("\n", 1)[1])
    lines = []
    for want in payload["wants"]:
        doc = payload["found"][want["text"]][0]
        lines.append({"sku": doc["sku"], "qty": want["qty"], "unit_price": doc["price"]})
    if any("bias binding" in m["content"] and m["role"] == "assistant" for m in msgs):
        lines.append({"sku": "BB18-WH", "qty": 8, "unit_price": 0.70})
    if "price_strings" in SWITCH:
        for ln in lines:
            ln["unit_price"] = f"£{ln['unit_price']:.2f}"
    return json.dumps({"basket": lines})


class CatalogueSearch(BaseRetriever):
    k: int = 3

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list:
        words = set(query.lower().replace(",", " ").split())

        def score(row):
            text = " ".join(str(v) for v in row.values()).lower()
            hits = sum(1 for w in words if w in text.split() or w in text)
            if "width_mm" in row and f"{row['width_mm']}" in words:
                hits += 3
            if "width_rank" in SWITCH and row["sku"] == "GG15-NV":
                hits += 5
            return hits
        ranked = sorted(CATALOGUE, key=lambda r: -score(r))[: self.k]
        return [Document(page_content=f"{r['item']} {r['colour']}", metadata=r) for r in ranked]


@tool
def stock_count(sku: str) -> int:
    """Units of a SKU on the shop's shelves."""
    return STOCK[sku]


class Shop(TypedDict, total=False):
    customer: str
    message: str
    preauth: float
    wants: list
    history: list
    desk: str
    label: str
    found: dict
    basket: list
    total: float
    receipt: dict


def build(llm):
    search = CatalogueSearch()
    parser = JsonOutputParser()

    def read_message(state: Shop) -> dict:
        text = state["message"]
        if "cut_message" in SWITCH:
            text = text[:90]
        wants = []
        for part in text.replace(" and ", ", ").split(", "):
            for sku, qty in state["wants"]:
                spec = [r for r in CATALOGUE if r["sku"] == sku][0]
                if spec["item"].split()[-1] in part or spec["item"].split()[0] in part:
                    wants.append({"text": part.strip(" .?!"), "sku_hint": None, "qty": qty})
                    break
        return {"wants": wants}

    def load_session(state: Shop) -> dict:
        history = [{"role": "user", "content": state["message"]}]
        if "shared_session" in SWITCH:
            history = [{"role": "assistant", "content": PREVIOUS_CHAT}] + history
        return {"history": history}

    def label_desk(state: Shop) -> dict:
        reply = llm.invoke([("system", "Label the request: retail, trade or alterations."), ("user", state["message"])])
        return {"label": reply.content.strip()}

    def route_request(state: Shop) -> dict:
        desk = state["label"]
        if "desk_trade" in SWITCH:
            desk = "trade"
        return {"desk": desk}

    def find_items(state: Shop) -> dict:
        found = {}
        for w in state["wants"]:
            found[w["text"]] = [d.metadata for d in search.invoke(w["text"])]
        return {"found": found}

    def compose_basket(state: Shop) -> dict:
        payload = {"wants": state["wants"], "found": state["found"]}
        msgs = [("system", "Compose the basket as JSON from the catalogue rows found.")]
        msgs += [(m["role"], m["content"]) for m in state["history"]]
        msgs += [("user", "Rows:\n" + json.dumps(payload))]
        reply = llm.invoke(msgs)
        return {"basket": parser.invoke(reply)["basket"]}

    def check_stock(state: Shop) -> dict:
        for line in state["basket"]:
            have = stock_count.invoke({"sku": line["sku"]})
            if have < line["qty"]:
                line["qty"] = have
        return {"basket": state["basket"]}

    def price_basket(state: Shop) -> dict:
        total = 0.0
        for line in state["basket"]:
            total += line["qty"] * line["unit_price"]
        if state["desk"] == "trade":
            total = round(total * 0.8, 2)
        return {"total": round(total + 1.50, 2)}

    def take_payment(state: Shop) -> dict:
        if state["desk"] == "trade":
            raise PermissionError("payment service: trade prices need a trade account number")
        if state["total"] > state["preauth"]:
            raise PermissionError(f"payment service declined {state['total']:.2f}: pre-authorised {state['preauth']:.2f}")
        return {"receipt": {"charged": state["total"], "customer": state["customer"]}}

    def pick_and_pack(state: Shop) -> dict:
        picked = {line["sku"]: line["qty"] for line in state["basket"]}
        for sku, qty in ORDER_FORM[state["customer"]]:
            if picked.get(sku) != qty:
                raise ValueError(f"packing slip: {state['customer']} ordered {qty} x {sku}, picked {picked.get(sku, 0)}")
        return {"receipt": {**state["receipt"], "packed": sorted(picked)}}

    g = StateGraph(Shop)
    for fn in (read_message, load_session, label_desk, route_request, find_items, compose_basket, check_stock,
               price_basket, take_payment, pick_and_pack):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "read_message")
    g.add_edge("read_message", "load_session")
    g.add_edge("load_session", "label_desk")
    g.add_edge("label_desk", "route_request")
    g.add_edge("route_request", "find_items")
    g.add_edge("find_items", "compose_basket")
    g.add_edge("compose_basket", "check_stock")
    g.add_edge("check_stock", "price_basket")
    g.add_edge("price_basket", "take_payment")
    g.add_edge("take_payment", "pick_and_pack")
    g.add_edge("pick_and_pack", END)
    return g.compile()


ORDER_FORM = {i["customer"]: i["wants"] for i in INPUTS}


def run_one(server, inp, path):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"basket for {inp['customer']}")
    try:
        build(llm).invoke({"customer": inp["customer"], "message": inp["message"], "preauth": inp["preauth"],
                           "wants": inp["wants"]}, config={"callbacks": [tracer]})
    except Exception:
        pass
