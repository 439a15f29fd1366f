"""Harmonica repair bench: a LangGraph StateGraph with a model intake, a ticket reader, a model diagnosis,
a conditional router to one of three repair branches, parts and stock tools, a quote, an approval check and
part reservations (langgraph)."""
from __future__ import annotations

import json
import re
from typing import TypedDict

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "harmonica-bench"
ROUTE = "langgraph"
DOMAIN = "harmonica repair bench"
SHAPE = "LangGraph: intake model node, ticket reader node (plain parse), diagnosis model node with a conditional router to reed/valve/comb branches, parts tool, per-part stock tool loop, quote node, approval validator node, reservation tool node"
SWITCH = None

INPUTS = [
    {"ticket": "Hohner Special 20 in Low F, Richter tuning: hole 4 draw plays flat.", "customer": "Ada Quill"},
    {"ticket": "Seydel 1847 in A, Paddy Richter tuning: air leaks on the valves of holes 7 to 10.", "customer": "Ben Harte"},
    {"ticket": "Suzuki Manji in G, Richter tuning: cracked comb near hole 2.", "customer": "Cora Vance"},
    {"ticket": "Hohner Marine Band in C, Country tuning: hole 5 blow buzzes on the reed.", "customer": "Dev Mallory"},
    {"ticket": "Hohner Crossover in D, Richter tuning: cracked comb and loose cover plate.", "customer": "Elsie Brand"},
]

CASES = [
    {"id": "zzzh-harmonica-01", "input": 3, "switch": "route", "fault_kind": "wrong_routing",
     "root": "route_repair", "root_occurrence": 1, "failure": "approve_quote",
     "description": "The repair router sent a buzzing reed on the Marine Band to valve work, so the quote held only valve parts."},
    {"id": "zzzh-harmonica-02", "input": 0, "switch": "key", "fault_kind": "lossy_parsing",
     "root": "read_ticket", "root_occurrence": 1, "failure": "approve_quote",
     "description": "The ticket reader kept only 'F' of the key 'Low F', so the parts lookup quoted an F reed plate for a Low F harmonica."},
    {"id": "zzzh-harmonica-03", "input": 1, "switch": "tuning", "fault_kind": "tool_ignores_argument",
     "root": "parts_catalogue", "root_occurrence": 1, "failure": "approve_quote",
     "description": "The parts catalogue ignored the Paddy Richter tuning it was asked for and listed the plain Richter valve set."},
    {"id": "zzzh-harmonica-04", "input": 2, "switch": "stock", "fault_kind": "stale_data",
     "root": "stock_level", "root_occurrence": 1, "failure": "reserve_part",
     "description": "The stock level for the G Manji comb came from last month's cached count of 2 while the shelf held none, so the reservation was refused."},
    {"id": "zzzh-harmonica-05", "input": 4, "switch": "page", "fault_kind": "truncated_result",
     "root": "parts_catalogue", "root_occurrence": 1, "failure": "approve_quote",
     "description": "The parts catalogue answered only its first page of two parts for the comb replacement, leaving out the comb screws."},
]

STOCK = {"comb:Suzuki Manji": 0}
PRICES = {"reed plate": 38.0, "valve set": 12.5, "comb": 27.0, "comb screws": 4.0, "cover plate": 22.0}


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Extract"):
        m = re.match(r"(.+?) in (.+?), (.+?) tuning: (.+)", user)
        return json.dumps({"model": m.group(1), "key": m.group(2), "tuning": m.group(3), "symptom": m.group(4)})
    if system.startswith("Diagnose"):
        data = json.loads(user)
        s = data["symptom"]
        if "comb" in s:
            return "comb: replace the comb"
        if "valve" in s:
            return "valve: replace the valves"
        return "reed: replace the reed plate"
    return "Please describe the harmonica."


class Bench(TypedDict, total=False):
    ticket: str
    customer: str
    extracted: str
    intake: dict
    diagnosis: str
    parts: list
    stock: list
    quote: dict
    reserved: list


@tool
def parts_catalogue(model: str, key: str, tuning: str, repair: str) -> list:
    """Parts for a repair on one harmonica model, key and tuning."""
    if SWITCH == "tuning":
        tuning = "Richter"
    if repair == "reed":
        parts = [{"part": "reed plate", "sku": f"RP-{key}-{tuning}"}]
    elif repair == "valve":
        parts = [{"part": "valve set", "sku": f"VS-{tuning}"}]
    else:
        parts = [{"part": "comb", "sku": f"CB-{model}"}, {"part": "cover plate", "sku": f"CP-{model}"},
                 {"part": "comb screws", "sku": "SC-M1.6"}]
        if SWITCH == "page":
            parts = parts[:2]
    return parts


@tool
def stock_level(sku: str, part: str, model: str) -> dict:
    """How many of a part are on the shelf."""
    count = STOCK.get(f"{part}:{model}", 5)
    if SWITCH == "stock" and part == "comb":
        count = 2
    return {"sku": sku, "on_shelf": count}


@tool
def reserve_part(sku: str, part: str, model: str) -> dict:
    """Reserve a part for a repair."""
    if STOCK.get(f"{part}:{model}", 5) <= 0:
        raise RuntimeError(f"cannot reserve {sku}: none on the shelf")
    return {"sku": sku, "reserved": True}


def build(llm):
    def intake(state: Bench) -> dict:
        msg = llm.invoke([("system", "Extract model, key, tuning and symptom as JSON."), ("user", state["ticket"])])
        return {"extracted": msg.content}

    def read_ticket(state: Bench) -> dict:
        data = json.loads(state["extracted"])
        if SWITCH == "key":
            data["key"] = data["key"].split()[-1]
        return {"intake": data}

    def diagnose(state: Bench) -> dict:
        msg = llm.invoke([("system", "Diagnose the repair class."), ("user", json.dumps(state["intake"]))])
        return {"diagnosis": msg.content}

    def route_repair(state: Bench) -> str:
        repair = state["diagnosis"].split(":")[0]
        if SWITCH == "route" and repair == "reed":
            repair = "valve"
        return f"{repair}_work"

    def branch(repair):
        def node(state: Bench) -> dict:
            i = state["intake"]
            parts = parts_catalogue.invoke({"model": i["model"], "key": i["key"], "tuning": i["tuning"], "repair": repair})
            return {"parts": parts}
        return node

    def check_stock(state: Bench) -> dict:
        model = state["intake"]["model"]
        return {"stock": [stock_level.invoke({"sku": p["sku"], "part": p["part"], "model": model}) for p in state["parts"]]}

    def quote(state: Bench) -> dict:
        lines = []
        for p, s in zip(state["parts"], state["stock"]):
            lines.append({**p, "price": PRICES[p["part"]], "lead_days": 0 if s["on_shelf"] > 0 else 14})
        labour = 25.0 * len(lines)
        return {"quote": {"customer": state["customer"], "lines": lines, "labour": labour,
                          "total": round(labour + sum(l["price"] for l in lines), 2)}}

    def approve_quote(state: Bench) -> dict:
        ticket = state["ticket"]
        m = re.match(r"(.+?) in (.+?), (.+?) tuning: (.+)", ticket)
        model, key, tuning, symptom = m.groups()
        names = [l["part"] for l in state["quote"]["lines"]]
        skus = [l["sku"] for l in state["quote"]["lines"]]
        if ("reed" in symptom or "flat" in symptom) and "reed plate" not in names:
            raise ValueError(f"quote for {model} lists {names}, none of which is a reed plate for '{symptom}'")
        if "comb" in symptom and not {"comb", "comb screws"} <= set(names):
            raise ValueError(f"quote for {model} lists {names}: a comb replacement needs the comb and its screws")
        for sku in skus:
            if sku.startswith("RP-") and sku != f"RP-{key}-{tuning}":
                raise ValueError(f"reed plate {sku} does not fit a {model} in {key}, {tuning} tuning")
            if sku.startswith("VS-") and sku != f"VS-{tuning}":
                raise ValueError(f"valve set {sku} does not fit {tuning} tuning")
        return {"quote": {**state["quote"], "approved": True}}

    def reserve_parts(state: Bench) -> dict:
        model = state["intake"]["model"]
        done = []
        for line in state["quote"]["lines"]:
            if line["lead_days"] == 0:
                done.append(reserve_part.invoke({"sku": line["sku"], "part": line["part"], "model": model}))
        return {"reserved": done}

    g = StateGraph(Bench)
    for name, fn in [("intake", intake), ("read_ticket", read_ticket), ("diagnose", diagnose),
                     ("reed_work", branch("reed")), ("valve_work", branch("valve")), ("comb_work", branch("comb")),
                     ("check_stock", check_stock), ("quote", quote), ("approve_quote", approve_quote),
                     ("reserve_parts", reserve_parts)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "read_ticket")
    g.add_edge("read_ticket", "diagnose")
    g.add_conditional_edges("diagnose", route_repair, ["reed_work", "valve_work", "comb_work"])
    for b in ("reed_work", "valve_work", "comb_work"):
        g.add_edge(b, "check_stock")
    g.add_edge("check_stock", "quote")
    g.add_edge("quote", "approve_quote")
    g.add_edge("approve_quote", "reserve_parts")
    g.add_edge("reserve_parts", END)
    return g.compile()


def record(server, inp, path):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["ticket"])
    build(llm).invoke({"ticket": inp["ticket"], "customer": inp["customer"]}, config={"callbacks": [tracer]})
