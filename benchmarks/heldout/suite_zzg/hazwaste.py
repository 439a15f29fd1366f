"""LangGraph route: a council hazardous-waste collection booker with a scheduling sub-graph."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, register, reply_json, server
from .kit import active

NAME = "hazwaste-collection-booker"
ROUTE = "langgraph"
DOMAIN = "hazardous waste collection"
SHAPE = "StateGraph: LLM item classifier, parse, tariff tool, weight conversion, scheduling sub-graph (geocode, rounds, LLM date pick), ADR manifest, submit"
SYSTEM = "[haz] You classify household hazardous waste and schedule collections. Answer JSON."

INPUTS = {
    "elm": {"booking": "HW-7701", "uprn": "100050112233", "address": "14 Elm Row", "ward": "Northgate", "booked_on": "2027-03-10",
            "items": "2 x 5 litre tins of oil paint; 1.5 x 4 litre drums of engine oil; 3 x fluorescent tubes; weight 22 lb"},
    "quay": {"booking": "HW-7702", "uprn": "100050998877", "address": "3 Quay Street", "ward": "Riverside", "booked_on": "2027-03-09",
             "items": "4 x 1 litre bottles of pool chlorine; 2 x 5 litre tins of wood preserver; weight 31 lb"},
    "mill": {"booking": "HW-7703", "uprn": "100050445566", "address": "9 Mill Lane", "ward": "Northgate", "booked_on": "2027-03-10",
             "items": "1 x 10 litre drum of engine oil; 2 x car batteries; weight 40 lb"},
    "park": {"booking": "HW-7704", "uprn": "100050223344", "address": "27 Park View", "ward": "Riverside", "booked_on": "2027-03-11",
             "items": "3 x 1 litre bottles of weedkiller; 1 x 5 litre tin of oil paint; weight 18 lb"},
    "kiln": {"booking": "HW-7705", "uprn": "100050667788", "address": "2 Station Road", "ward": "Eastfield", "booked_on": "2027-03-12",
             "items": "2 x gas canisters; 2 x 2.5 litre tins of varnish; weight 15 lb"},
    "ford": {"booking": "HW-7706", "uprn": "100050334455", "address": "61 Ford Close", "ward": "Eastfield", "booked_on": "2027-03-15",
             "items": "1 x 5 litre drum of antifreeze; 6 x aerosol cans; weight 12 lb"},
}
REF_INPUTS = ["mill", "park", "kiln", "ford"]
ROUNDS = {"Northgate": ["2027-03-09", "2027-03-11", "2027-03-16", "2027-03-18"], "Riverside": ["2027-03-10", "2027-03-12", "2027-03-17"],
          "Eastfield": ["2027-03-13", "2027-03-15", "2027-03-19", "2027-03-22"]}
UN = {"paint": ("UN1263", 2.10), "engine oil": ("NONE", 0.0), "tubes": ("UN3506", 1.80), "chlorine": ("UN2880", 3.40),
      "preserver": ("UN1306", 2.60), "batteries": ("UN2794", 0.0), "weedkiller": ("UN3082", 2.90), "canisters": ("UN2037", 1.50),
      "varnish": ("UN1263", 2.10), "antifreeze": ("NONE", 0.90), "aerosol": ("UN1950", 0.40)}


class HazState(TypedDict, total=False):
    request: dict
    classified_text: str
    items: list
    tariff: dict
    weight_kg: float
    location: dict
    round_days: list
    date_text: str
    collection_date: str
    manifest: dict
    receipt: dict


def _policy(msgs: list[dict[str, Any]]) -> str:
    p = json.loads(msgs[-1]["content"])
    if p["task"] == "classify":
        out = []
        for part in p["items"].split(";"):
            part = part.strip()
            if part.startswith("weight"):
                continue
            qty, rest = part.split(" x ", 1)
            key = next(k for k in UN if k in rest)
            out.append({"qty": qty, "description": rest, "category": key, "un": UN[key][0]})
        return reply_json({"items": out})
    if p["task"] == "pick_date":
        later = [d for d in p["round_days"] if d > p["earliest"]]
        return reply_json({"date": later[0], "ward": p["ward"]})
    raise ValueError(p["task"])


register("[haz]", _policy)


@tool
def tariff_lookup(categories: list) -> dict:
    """Per-item disposal charges (GBP) from the council tariff."""
    rates = {c: UN[c][1] for c in categories}
    if active("haz_stale"):
        rates = {c: round(UN[c][1] * 0.8, 2) for c in categories}
        return {"tariff": "2025/26", "rates": rates}
    return {"tariff": "2026/27", "rates": rates}


@tool
def geocode_uprn(uprn: str) -> dict:
    """Resolve a property reference to its address and waste ward."""
    table = {v["uprn"]: v for v in INPUTS.values()}
    row = table[uprn]
    return {"uprn": uprn, "address": row["address"], "ward": row["ward"]}


@tool
def collection_rounds(ward: str) -> list:
    """Hazardous waste collection round days for a ward."""
    return ROUNDS[ward]


def make_graph(llm: ChatOpenAI) -> Any:
    def geocode(state: HazState) -> dict:
        r = state["request"]
        uprn = r["uprn"]
        if active("haz_entity"):
            uprn = INPUTS["mill"]["uprn"] if r["ward"] == "Riverside" else INPUTS["park"]["uprn"]
        return {"location": geocode_uprn.invoke({"uprn": uprn})}

    def rounds(state: HazState) -> dict:
        return {"round_days": collection_rounds.invoke({"ward": state["location"]["ward"]})}

    def pick_date(state: HazState) -> dict:
        earliest = state["request"]["booked_on"]
        payload = {"task": "pick_date", "round_days": state["round_days"], "earliest": earliest, "ward": state["location"]["ward"]}
        msg = llm.invoke([SystemMessage(SYSTEM), HumanMessage(json.dumps(payload, sort_keys=True))])
        return {"date_text": msg.content}

    def read_date(state: HazState) -> dict:
        return {"collection_date": json.loads(state["date_text"])["date"], "round_days": state["round_days"]}

    sub = StateGraph(HazState)
    for n, fn in [("geocode", geocode), ("rounds", rounds), ("pick_date", pick_date), ("read_date", read_date)]:
        sub.add_node(n, fn)
    sub.add_edge(START, "geocode")
    sub.add_edge("geocode", "rounds")
    sub.add_edge("rounds", "pick_date")
    sub.add_edge("pick_date", "read_date")
    sub.add_edge("read_date", END)
    scheduler = sub.compile()

    def classify(state: HazState) -> dict:
        payload = {"task": "classify", "items": state["request"]["items"]}
        msg = llm.invoke([SystemMessage(SYSTEM), HumanMessage(json.dumps(payload, sort_keys=True))])
        return {"classified_text": msg.content}

    def parse_items(state: HazState) -> dict:
        rows = json.loads(state["classified_text"])["items"]
        items = []
        for row in rows:
            qty = float(row["qty"])
            if active("haz_lossy"):
                qty = float(int(qty))
            items.append({"category": row["category"], "un": row["un"], "qty": qty, "description": row["description"]})
        return {"items": items}

    def tariff(state: HazState) -> dict:
        return {"tariff": tariff_lookup.invoke({"categories": sorted({i["category"] for i in state["items"]})})}

    def weigh(state: HazState) -> dict:
        lb = float(state["request"]["items"].rsplit("weight", 1)[1].split()[0])
        kg = lb / 2.2046
        if active("haz_unit"):
            kg = lb * 2.2046
        return {"weight_kg": round(kg, 1)}

    def manifest(state: HazState) -> dict:
        r = state["request"]
        date, days = state["collection_date"], state["round_days"]
        if active("haz_off_by_one"):
            date = days[days.index(date) - 1] if days.index(date) > 0 else date
        lines = [{"un": i["un"], "qty": i["qty"], "charge": round(i["qty"] * state["tariff"]["rates"][i["category"]], 2)} for i in state["items"]]
        return {"manifest": {"booking": r["booking"], "uprn": r["uprn"], "ward": state["location"]["ward"], "date": date,
                             "weight_kg": state["weight_kg"], "lines": lines, "tariff": state["tariff"]["tariff"],
                             "total": round(sum(l["charge"] for l in lines), 2)}}

    def submit(state: HazState) -> dict:
        m, r = state["manifest"], state["request"]
        if m["ward"] != r["ward"]:
            raise ValueError(f'HTTP 422 {{"error": "uprn_ward_mismatch", "uprn": "{m["uprn"]}", "ward": "{m["ward"]}"}}')
        if m["date"] <= r["booked_on"] or m["date"] not in ROUNDS[r["ward"]]:
            raise ValueError(f'HTTP 422 {{"error": "invalid_collection_date", "date": "{m["date"]}", "booked_on": "{r["booked_on"]}"}}')
        if m["weight_kg"] > 25:
            raise ValueError(f"collection refused: {m['weight_kg']} kg exceeds the 25 kg household allowance")
        if m["tariff"] != "2026/27":
            raise ValueError(f'HTTP 409 {{"error": "tariff_superseded", "tariff": "{m["tariff"]}", "current": "2026/27"}}')
        declared = sum(float(p.strip().split(" x ")[0]) for p in r["items"].split(";") if " x " in p)
        listed = sum(l["qty"] for l in m["lines"])
        if abs(declared - listed) > 1e-6:
            raise ValueError(f"ADR manifest check: {listed:g} containers listed, resident declared {declared:g}")
        return {"receipt": {"booking": m["booking"], "date": m["date"], "total": m["total"]}}

    g = StateGraph(HazState)
    for n, fn in [("classify", classify), ("parse_items", parse_items), ("tariff", tariff), ("weigh", weigh),
                  ("scheduler", scheduler), ("manifest", manifest), ("submit", submit)]:
        g.add_node(n, fn)
    g.add_edge(START, "classify")
    for a, b in [("classify", "parse_items"), ("parse_items", "tariff"), ("tariff", "weigh"), ("weigh", "scheduler"),
                 ("scheduler", "manifest"), ("manifest", "submit")]:
        g.add_edge(a, b)
    g.add_edge("submit", END)
    return g.compile()


def record(inp: dict, path: Path) -> None:
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=server().base_url, api_key="sk-test-local", max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"book hazardous waste collection {inp['booking']}")
    try:
        make_graph(llm).invoke({"request": inp}, config={"callbacks": [tracer], "run_name": NAME})
    except ValueError:
        pass


CASES = [
    Case("haz_01", "haz_lossy", "lossy_parsing", "elm", "parse_items", 1, "other",
         "submit", "The item parser truncates the 1.5 drums of engine oil to 1, losing half a container from the manifest."),
    Case("haz_02", "haz_unit", "unit_error", "quay", "weigh", 1, "other",
         "submit", "The weight step multiplies pounds by 2.2046 instead of dividing, so 31 lb becomes 68.3 kg."),
    Case("haz_03", "haz_stale", "stale_data", "elm", "tariff_lookup", 1, "tool",
         "submit", "The tariff lookup answers the superseded 2025/26 price list."),
    Case("haz_04", "haz_entity", "subagent_wrong_entity", "quay", "geocode_uprn", 1, "tool",
         "submit", "The scheduling sub-graph geocodes another resident's property reference, in Northgate, and books that ward's round."),
    Case("haz_05", "haz_off_by_one", "off_by_one", "elm", "manifest", 1, "other",
         "submit", "The manifest builder steps one round day back from the scheduled date, landing on a day before the booking."),
]
