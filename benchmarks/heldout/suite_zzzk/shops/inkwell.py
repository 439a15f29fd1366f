"""Inkwell and stationery restorer (langgraph route): a workshop ticket graph that loops over the items
handed in (a conditional edge back to next_item), looks up methods in a document retriever, has the
model assess each item, keeps assessments in the graph state, then prices, checks conservation rules
and issues the quote through the quoting tool."""

from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "inkwell-restoration-bench"
ROUTE = "langgraph"
DOMAIN = "an inkwell and stationery restorer"
SHAPE = "StateGraph loop over handed-in items (next_item -> retriever node -> assessing model -> record node -> back), then price list tool, conservation rules node, quoting tool"
SWITCH = None

METHODS = [
    {"method": "ultrasonic clean", "material": "glass", "text": "Glass inkwells: soak, ultrasonic clean, no abrasives on cut facets."},
    {"method": "hinge re-pin", "material": "brass", "text": "Brass lids: re-pin the hinge, polish with a soft wax."},
    {"method": "silver dip and buff", "material": "silver", "text": "Hallmarked silver: dip, hand buff, never lacquer."},
    {"method": "sac replacement", "material": "ebonite", "text": "Ebonite pens: replace the ink sac, flush the feed, polish with micro-mesh."},
    {"method": "French polish", "material": "wood", "text": "Wooden writing slopes: clean, consolidate veneer, French polish."},
    {"method": "leather re-skive", "material": "leather", "text": "Leather blotters: re-skive and re-fix the corners with wheat starch paste."},
]
RATES_2027 = {"list": "PL-2027", "valid_until": "2027-12-31", "per_hour": 48.0, "minimum": 35.0}
RATES_2025 = {"list": "PL-2025", "valid_until": "2026-06-30", "per_hour": 42.0, "minimum": 30.0}

TICKETS = {
    "T-301": {"customer": "Hartley & Sons", "lines": ["glass inkwell, cut facets | glass", "brass travelling inkwell | brass",
                                                      "silver inkstand, hallmarked 1891 | silver"]},
    "T-302": {"customer": "Ms Okafor", "lines": ["Onoto fountain pen | ebonite", "rosewood writing slope | wood",
                                                 "glass inkwell, pressed | glass", "desk blotter | leather"]},
    "T-303": {"customer": "St Aidan's College", "lines": ["silver inkstand, pair | silver", "brass inkwell lid | brass"]},
    "T-304": {"customer": "Mr Lindqvist", "lines": ["Conway Stewart pen | ebonite", "glass inkwell, square | glass",
                                                    "silver pen tray | silver", "oak stationery box | wood"]},
    "T-305": {"customer": "Penfold Antiques", "lines": ["brass capstan inkwell | brass", "leather blotter, green | leather",
                                                        "glass inkwell, ribbed | glass"]},
}
HISTORY = {
    "Hartley & Sons": "Prefers originals left unlacquered.",
    "Ms Okafor": "Collects; wants receipts per item.",
    "St Aidan's College": "Invoice the bursar.",
    "Mr Lindqvist": "Wants everything returned by courier.",
    "Penfold Antiques": "Trade customer, 10 day turnaround.",
}

INPUTS = [{"ticket": t, "date": d} for t, d in
          [("T-301", "2027-01-11"), ("T-302", "2027-01-12"), ("T-303", "2027-01-14"), ("T-304", "2027-01-15"), ("T-305", "2027-01-18")]]

CASES = [
    {"id": "zzzk-inkwell-1", "input": 1, "switch": "methods_by_kind", "kind": "wrong_retrieval",
     "root": ("RestorationArchive", 3), "failure": ("conservation_check", 1),
     "description": "The method lookup for the pressed glass inkwell brings back the fountain pen notes, so the ebonite sac method is chosen for glass."},
    {"id": "zzzk-inkwell-2", "input": 2, "switch": "other_customer_notes", "kind": "context_pollution",
     "root": ("customer_history", 1), "failure": ("conservation_check", 1),
     "description": "The customer history for St Aidan's College comes back with another customer's note asking for all metal to be lacquered, and the assessments follow it on hallmarked silver."},
    {"id": "zzzk-inkwell-3", "input": 4, "switch": "old_price_list", "kind": "stale_data",
     "root": ("price_list", 1), "failure": ("issue_quote", 1),
     "description": "The price list tool answers from the 2025 list that lapsed in June 2026, and the quote is priced on it."},
    {"id": "zzzk-inkwell-4", "input": 3, "switch": "hours_as_text", "kind": "format_drift",
     "root": ("ChatOpenAI", 3), "failure": ("price_quote", 1),
     "description": "The assessment of the silver pen tray gives its hours as the text '1h30' instead of a number of hours."},
    {"id": "zzzk-inkwell-5", "input": 3, "switch": "manifest_cut", "kind": "truncated_result",
     "root": ("read_manifest", 1), "failure": ("issue_quote", 1),
     "description": "The manifest read for ticket T-304 stops after three lines, so the oak stationery box is never assessed or quoted."},
]


class Ticket(TypedDict, total=False):
    ticket: str
    date: str
    manifest: dict
    history: dict
    items: list
    cursor: int
    current: dict
    references: list
    assessments: Annotated[list, operator.add]
    quote: dict
    cleared: bool
    issued: dict


class RestorationArchive(BaseRetriever):
    """Workshop method notes, looked up by material."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        item = json.loads(query)
        key = item["material"]
        if SWITCH == "methods_by_kind" and "inkwell" in item["name"] and "pressed" in item["name"]:
            key = "ebonite"
        return [Document(page_content=m["text"], metadata={"method": m["method"], "material": m["material"]})
                for m in METHODS if m["material"] == key]


@tool
def read_manifest(ticket: str) -> dict:
    """The lines written on a workshop ticket at the counter."""
    lines = TICKETS[ticket]["lines"]
    if SWITCH == "manifest_cut":
        lines = lines[:3]
    return {"ticket": ticket, "customer": TICKETS[ticket]["customer"], "lines": lines}


@tool
def customer_history(customer: str) -> dict:
    """Notes kept on a customer from earlier jobs."""
    notes = [HISTORY[customer]]
    if SWITCH == "other_customer_notes":
        notes.append("Lacquer all metal after polishing, to save re-polishing.")
    return {"customer": customer, "notes": notes}


@tool
def price_list(date: str) -> dict:
    """The workshop's hourly rate and minimum charge in force."""
    return dict(RATES_2025 if SWITCH == "old_price_list" else RATES_2027)


@tool
def issue_quote(quote: dict) -> dict:
    """The quoting system: files the quote against the ticket."""
    counted = len(TICKETS[quote["ticket"]]["lines"])
    if len(quote["lines"]) != counted:
        raise ValueError(f"quote for {quote['ticket']} covers {len(quote['lines'])} items, {counted} were handed in")
    if quote["price_list_valid_until"] < quote["date"]:
        raise ValueError(f"price list {quote['price_list']} ran out {quote['price_list_valid_until']}, quote dated {quote['date']}")
    return {"quote_ref": f"Q-{quote['ticket']}", "total": quote["total"]}


def policy(request):
    msgs = request.body["messages"]
    item = json.loads(msgs[-1]["content"])
    refs = item["references"]
    method = refs[0]["method"] if refs else "inspect only"
    finish = "none"
    if any("lacquer all metal" in n.lower() for n in item["customer_notes"]) and item["material"] in ("brass", "silver"):
        finish = "lacquer"
    hours = {"glass": 1.0, "brass": 1.5, "silver": 1.5, "ebonite": 2.0, "wood": 3.5, "leather": 2.5}[item["material"]]
    hours_out = "1h30" if SWITCH == "hours_as_text" and item["name"] == "silver pen tray" else hours
    return json.dumps({"item": item["name"], "method": method, "finish": finish, "hours": hours_out})


def build(llm):
    archive = RestorationArchive()

    def open_ticket(state):
        manifest = read_manifest.invoke({"ticket": state["ticket"]})
        history = customer_history.invoke({"customer": manifest["customer"]})
        return {"manifest": manifest, "history": history}

    def catalogue_items(state):
        items = []
        for line in state["manifest"]["lines"]:
            name, material = (p.strip() for p in line.split("|"))
            items.append({"name": name, "material": material})
        return {"items": items, "cursor": 0}

    def next_item(state):
        i = state["cursor"]
        return {"current": state["items"][i] if i < len(state["items"]) else None, "cursor": i + 1}

    def lookup_methods(state):
        docs = archive.invoke(json.dumps(state["current"]))
        return {"references": [{"method": d.metadata["method"], "material": d.metadata["material"], "text": d.page_content}
                               for d in docs]}

    def assess(state):
        payload = {**state["current"], "references": state["references"], "customer_notes": state["history"]["notes"]}
        reply = llm.invoke([SystemMessage("Assess the item for restoration; answer JSON {item, method, finish, hours}."),
                            HumanMessage(json.dumps(payload))])
        return {"assessments": [{"answer": reply.content, "references": state["references"]}]}

    def record_assessment(state):
        last = state["assessments"][-1]
        data = json.loads(last["answer"])
        ref = next((r for r in last["references"] if r["method"] == data["method"]), None)
        return {"current": {**state["current"], **data, "method_material": ref["material"] if ref else None}}

    def price_quote(state):
        rates = price_list.invoke({"date": state["date"]})
        lines = []
        for a in state["assessments"]:
            data = json.loads(a["answer"])
            hours = float(data["hours"])
            method_material = next((r["material"] for r in a["references"] if r["method"] == data["method"]), None)
            lines.append({"item": data["item"], "method": data["method"], "finish": data["finish"], "hours": hours,
                          "method_material": method_material, "price": max(rates["minimum"], hours * rates["per_hour"])})
        return {"quote": {"ticket": state["ticket"], "date": state["date"], "lines": lines,
                          "total": round(sum(x["price"] for x in lines), 2), "price_list": rates["list"],
                          "price_list_valid_until": rates["valid_until"]}}

    def conservation_check(state):
        materials = {i["name"]: i["material"] for i in state["items"]}
        for line in state["quote"]["lines"]:
            material = materials[line["item"]]
            if line["method_material"] != material:
                raise ValueError(f"{line['item']}: method '{line['method']}' is for {line['method_material']}, item is {material}")
            if material == "silver" and line["finish"] == "lacquer":
                raise ValueError(f"{line['item']}: hallmarked silver may not be lacquered")
        return {"cleared": True}

    def file_quote(state):
        return {"issued": issue_quote.invoke({"quote": state["quote"]})}

    def more_items(state):
        return "assess" if state["current"] is not None else "done"

    g = StateGraph(Ticket)
    for name, fn in [("open_ticket", open_ticket), ("catalogue_items", catalogue_items), ("next_item", next_item),
                     ("lookup_methods", lookup_methods), ("assess", assess), ("record_assessment", record_assessment),
                     ("price_quote", price_quote), ("conservation_check", conservation_check), ("file_quote", file_quote)]:
        g.add_node(name, fn)
    g.add_edge(START, "open_ticket")
    g.add_edge("open_ticket", "catalogue_items")
    g.add_edge("catalogue_items", "next_item")
    g.add_conditional_edges("next_item", more_items, {"assess": "lookup_methods", "done": "price_quote"})
    g.add_edge("lookup_methods", "assess")
    g.add_edge("assess", "record_assessment")
    g.add_edge("record_assessment", "next_item")
    g.add_edge("price_quote", "conservation_check")
    g.add_edge("conservation_check", "file_quote")
    g.add_edge("file_quote", END)
    return g.compile()


def record(inp, path, server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"restoration quote for ticket {inp['ticket']}")
    try:
        build(llm).invoke({"ticket": inp["ticket"], "date": inp["date"]},
                          config={"callbacks": [tracer], "recursion_limit": 60})
    except ValueError:
        pass
