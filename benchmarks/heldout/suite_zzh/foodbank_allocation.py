"""Food bank distribution (LangGraph): allocates a week's warehouse inventory to partner pantries.

Shape: a StateGraph: inventory (summary tool, CSV export tool, CSV read) -> requests and alerts (tools) ->
model triages the week, a routing function picks the standard or the emergency share rule -> shares ->
a packing sub-graph per partner (model resolves the pantry to its directory id, profile tool, item picking,
model fills the staples part of the box) -> model drafts the manifest -> `validate_allocation`.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import sys
from pathlib import Path
from typing import Any, TypedDict


sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit
from common import chat_messages, system_text, text_of


NAME = "foodbank-allocation"
ROUTE = "langgraph"
DOMAIN = "food bank distribution"
EXT = "jsonl"
SHAPE = ("StateGraph: inventory (summary + CSV export tools), requests + alerts tools, LLM triage with a routing "
         "function (standard / emergency shares), packing sub-graph per partner (LLM id resolution, profile "
         "tool, picking, LLM staples), LLM manifest, validator node; 39-47 steps")

DIRECTORY = {
    "P-01": {"id": "P-01", "name": "Eastside Pantry", "excludes": [], "delivery_offset": 1},
    "P-03": {"id": "P-03", "name": "Northside Community Pantry", "excludes": [], "delivery_offset": 1},
    "P-07": {"id": "P-07", "name": "Northside Halal Pantry", "excludes": ["pork"], "delivery_offset": 2},
    "P-09": {"id": "P-09", "name": "Riverside Shelter", "excludes": ["glass"], "delivery_offset": 2},
    "P-11": {"id": "P-11", "name": "Westside Senior Center", "excludes": ["nuts"], "delivery_offset": 3},
}
BY_NAME = {p["name"]: p for p in DIRECTORY.values()}

# lot, item, category, lb, expiry (days after the week's Monday), tags
BASE_LOTS = [
    ("L-01", "canned chicken", "protein", 180, 200, []),
    ("L-02", "frozen ground turkey", "protein", 160, 30, []),
    ("L-03", "pork sausage, chilled", "protein", 140, 8, ["pork"]),
    ("L-04", "eggs, dozen cartons", "protein", 120, 12, []),
    ("L-10", "apples", "produce", 300, 14, []),
    ("L-11", "potatoes", "produce", 400, 25, []),
    ("L-12", "salad greens", "produce", 90, 3, []),
    ("L-13", "carrots", "produce", 200, 20, []),
    ("L-20", "milk 1%", "dairy", 160, 9, []),
    ("L-21", "cheddar cheese", "dairy", 80, 40, []),
    ("L-22", "yogurt cups", "dairy", 100, 6, []),
    ("L-30", "rice", "grains", 500, 300, []),
    ("L-31", "pasta", "grains", 300, 400, []),
    ("L-32", "rolled oats", "grains", 150, 250, []),
    ("L-33", "granola bars", "grains", 80, 120, ["nuts"]),
    ("L-40", "canned black beans", "staples", 150, 500, []),
    ("L-41", "canned lentils", "staples", 120, 500, []),
    ("L-42", "peanut butter jars", "staples", 90, 200, ["nuts", "glass"]),
    ("L-43", "pasta sauce jars", "staples", 100, 300, ["glass"]),
]
QUOTA = {"protein": 0.30, "produce": 0.25, "dairy": 0.10, "grains": 0.20}  # the rest: staples, chosen by the model
STAPLES = 0.15
MIN_SHELF_DAYS = 3

WEEKS: dict[str, dict[str, Any]] = {
    "2024-W45": {"monday": "2024-11-04", "lots": {}, "alerts": [],
                 "requests": [("Eastside Pantry", 110), ("Riverside Shelter", 55), ("Westside Senior Center", 70)]},
    "2024-W46": {"monday": "2024-11-11", "lots": {"L-11": 360}, "alerts": [{"partner": "Eastside Pantry",
                                                                          "level": "Advisory", "note": "roof repair"}],
                 "requests": [("Northside Community Pantry", 85), ("Northside Halal Pantry", 65),
                              ("Westside Senior Center", 75)]},
    "2024-W47": {"monday": "2024-11-18", "lots": {}, "alerts": [{"partner": "Riverside Shelter", "level": "Emergency",
                                                                "note": "flooded district, 40 extra families"}],
                 "requests": [("Eastside Pantry", 100), ("Riverside Shelter", 60), ("Northside Community Pantry", 80)]},
    "2024-W48": {"monday": "2024-11-25", "lots": {}, "alerts": [],
                 "requests": [("Northside Halal Pantry", 70), ("Eastside Pantry", 115), ("Riverside Shelter", 50)]},
    "2024-W49": {"monday": "2024-12-02", "lots": {"L-40": 150}, "alerts": [],
                 "requests": [("Eastside Pantry", 120), ("Northside Community Pantry", 90),
                              ("Westside Senior Center", 60)]},
    # reference weeks
    "2024-W41": {"monday": "2024-10-07", "lots": {"L-03": 100}, "alerts": [],
                 "requests": [("Northside Halal Pantry", 60), ("Eastside Pantry", 105), ("Westside Senior Center", 65)]},
    "2024-W42": {"monday": "2024-10-14", "lots": {"L-10": 260}, "alerts": [{"partner": "Northside Community Pantry",
                                                                          "level": "emergency", "note": "power cut"}],
                 "requests": [("Northside Community Pantry", 75), ("Riverside Shelter", 55), ("Eastside Pantry", 95)]},
    "2024-W43": {"monday": "2024-10-21", "lots": {}, "alerts": [{"partner": "Westside Senior Center",
                                                                "level": "Advisory", "note": "van in service"}],
                 "requests": [("Westside Senior Center", 80), ("Northside Halal Pantry", 70), ("Riverside Shelter", 45)]},
    "2024-W44": {"monday": "2024-10-28", "lots": {"L-02": 200}, "alerts": [],
                 "requests": [("Eastside Pantry", 90), ("Northside Community Pantry", 70), ("Northside Halal Pantry", 55),
                              ("Riverside Shelter", 40)]},
}

CASES = [
    {"case": "zzh_food_01", "switch": "food.shelf_inclusive", "input": "2024-W45", "fault_kind": "off_by_one",
     "root": ("pick_items", 1), "failure": ("validate_allocation", 1),
     "description": "Picking counts shelf days inclusive of the delivery day, so salad greens expiring 2024-11-07 "
                    "go to Eastside Pantry on 2024-11-05 with two days left where three are required."},
    {"case": "zzh_food_02", "switch": "food.export_cap", "input": "2024-W46", "fault_kind": "truncated_result",
     "root": ("inventory_export", 1), "failure": ("validate_allocation", 1),
     "description": "The inventory export comes back cut at the API's response size limit with no flag, so the "
                    "last lots of the CSV never reach the allocation."},
    {"case": "zzh_food_03", "switch": "food.alert_case", "input": "2024-W47", "fault_kind": "wrong_routing",
     "root": ("choose_share_rule", 1), "failure": ("validate_allocation", 1),
     "description": "The share-rule router compares alert levels to 'EMERGENCY' case-sensitively, misses "
                    "Riverside Shelter's 'Emergency' flood alert and routes the week to standard shares."},
    {"case": "zzh_food_04", "switch": "food.resolve_near_name", "input": "2024-W48", "fault_kind": "subagent_wrong_entity",
     "root": ("ChatOpenAI", 2), "failure": ("validate_allocation", 1),
     "description": "In the packing sub-graph the model resolves 'Northside Halal Pantry' to P-03 (Northside "
                    "Community Pantry), so the box is packed without the halal exclusion and takes pork sausage."},
    {"case": "zzh_food_05", "switch": "food.shared_transcript", "input": "2024-W49", "fault_kind": "context_pollution",
     "root": ("ChatOpenAI", 5), "failure": ("validate_allocation", 1),
     "description": "The staples prompt for Northside Community Pantry carries Eastside Pantry's earlier exchange, "
                    "and the model repeats Eastside's 90 lb of canned black beans, allocating lot L-40 past its 150 lb."},
]
REFS = ["2024-W41", "2024-W42", "2024-W43", "2024-W44"]


class AllocationRejected(Exception):
    """The week's allocation breaks a distribution rule."""


def lots_for(week: str) -> list[dict]:
    w = WEEKS[week]
    monday = dt.date.fromisoformat(w["monday"])
    out = []
    for lot, item, cat, lb, exp, tags in BASE_LOTS:
        out.append({"lot": lot, "item": item, "category": cat, "lb": w["lots"].get(lot, lb),
                    "expires": (monday + dt.timedelta(days=exp)).isoformat(), "tags": "|".join(tags)})
    return out


def inventory_csv(week: str) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=["lot", "item", "category", "lb", "expires", "tags"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(lots_for(week))
    return buf.getvalue()


# -- the model ------------------------------------------------------------------------------------------


def brain(request: Any) -> str:
    messages = chat_messages(request)
    system = system_text(messages)
    user = json.loads(text_of(messages[-1]))
    if system.startswith("You triage"):
        flagged = [a["partner"] for a in user["alerts"]]
        return json.dumps({"partners": len(user["requests"]), "households": sum(r["households"] for r in user["requests"]),
                           "flagged": flagged})
    if system.startswith("You match pantry names"):
        name = user["pantry"]
        if kit.on("food.resolve_near_name") and name == "Northside Halal Pantry":
            return json.dumps({"partner_id": "P-03"})
        match = next(c for c in user["candidates"] if c["name"] == name)
        return json.dumps({"partner_id": match["id"]})
    if system.startswith("You fill the staples"):
        earlier = [text_of(m) for m in messages if m.get("role") == "assistant"]
        if earlier:
            return earlier[0]
        need = user["staples_lb"]
        picks = []
        for lot in user["available"]:
            if need <= 0:
                break
            take = min(lot["lb"], need)
            if take > 0:
                picks.append({"lot": lot["lot"], "lb": round(take, 1)})
                need = round(need - take, 1)
        return json.dumps({"picks": picks})
    if system.startswith("You write the distribution manifest"):
        return "Manifest: " + "; ".join(f"{p['partner']}: {p['lb']} lb" for p in user["packs"]) + "."
    return "{}"


# -- graph ---------------------------------------------------------------------------------------------------


class Week(TypedDict, total=False):
    week: str
    summary: dict
    lots: list
    requests: list
    alerts: list
    triage: dict
    shares: list
    packs: list
    manifest: str


class Pack(TypedDict, total=False):
    pantry: str
    households: int
    target_lb: float
    delivery: str
    available: dict
    lots: list
    partner_id: str
    profile: dict
    picks: list
    staples_lb: float


def build(llm: Any) -> Any:
    from langchain_core.tools import tool
    from langgraph.graph import END, START, StateGraph

    @tool
    def warehouse_summary(week: str) -> dict:
        """The warehouse's stock summary for a week: total pounds and lots."""
        lots = lots_for(week)
        return {"week": week, "lots": len(lots), "total_lb": sum(ln["lb"] for ln in lots)}

    @tool
    def inventory_export(week: str) -> str:
        """The week's inventory as CSV (lot, item, category, lb, expires, tags)."""
        body = inventory_csv(week)
        if kit.on("food.export_cap"):
            body = body[:640]
        return body

    @tool
    def partner_requests(week: str) -> list:
        """The weekly request forms partners sent in."""
        return [{"pantry": n, "households": h} for n, h in WEEKS[week]["requests"]]

    @tool
    def partner_alerts(week: str) -> list:
        """Alerts partners raised for the week."""
        return [dict(a) for a in WEEKS[week]["alerts"]]

    @tool
    def partner_profile(partner_id: str) -> dict:
        """A partner's directory profile: exclusions and delivery day."""
        return dict(DIRECTORY[partner_id])

    def load_inventory(state: Week) -> dict:
        summary = warehouse_summary.invoke({"week": state["week"]})
        text = inventory_export.invoke({"week": state["week"]})
        rows = []
        for row in csv.DictReader(io.StringIO(text)):
            if row.get("tags") is None:
                continue  # a row cut short
            rows.append({**row, "lb": float(row["lb"]), "tags": [t for t in row["tags"].split("|") if t]})
        return {"summary": summary, "lots": rows}

    def load_requests(state: Week) -> dict:
        return {"requests": partner_requests.invoke({"week": state["week"]}),
                "alerts": partner_alerts.invoke({"week": state["week"]})}

    def triage(state: Week) -> dict:
        reply = llm.invoke([
            ("system", "You triage the food bank's weekly partner requests and alerts. Answer JSON."),
            ("user", json.dumps({"requests": [{"pantry": r["pantry"], "households": r["households"]}
                                              for r in state["requests"]], "alerts": state["alerts"]})),
        ])
        return {"triage": json.loads(reply.content)}

    def choose_share_rule(state: Week) -> str:
        if kit.on("food.alert_case"):
            urgent = [a for a in state["alerts"] if a["level"] == "EMERGENCY"]
        else:
            urgent = [a for a in state["alerts"] if a["level"].lower() == "emergency"]
        return "emergency_shares" if urgent else "standard_shares"

    def _shares(state: Week, per_alert: float) -> list:
        monday = dt.date.fromisoformat(WEEKS[state["week"]]["monday"])
        urgent = {a["partner"] for a in state["alerts"] if a["level"].lower() == "emergency"}
        out = []
        for r in state["requests"]:
            per = per_alert if r["pantry"] in urgent else 5.0
            out.append({"pantry": r["pantry"], "households": r["households"], "per_household_lb": per,
                        "target_lb": round(r["households"] * per, 1),
                        "delivery": (monday + dt.timedelta(days=BY_NAME[r["pantry"]]["delivery_offset"])).isoformat()})
        return out

    def standard_shares(state: Week) -> dict:
        return {"shares": _shares(state, 5.0)}

    def emergency_shares(state: Week) -> dict:
        return {"shares": _shares(state, 9.0)}

    def resolve_partner(state: Pack) -> dict:
        reply = llm.invoke([
            ("system", "You match pantry names from request forms to the partner directory. Answer JSON {partner_id}."),
            ("user", json.dumps({"pantry": state["pantry"],
                                 "candidates": [{"id": p["id"], "name": p["name"]} for p in DIRECTORY.values()]})),
        ])
        return {"partner_id": json.loads(reply.content)["partner_id"]}

    def fetch_profile(state: Pack) -> dict:
        return {"profile": partner_profile.invoke({"partner_id": state["partner_id"]})}

    def pick_items(state: Pack) -> dict:
        delivery = dt.date.fromisoformat(state["delivery"])
        excludes = set(state["profile"]["excludes"])
        available = dict(state["available"])
        picks = []
        for category, share in QUOTA.items():
            need = round(state["target_lb"] * share, 1)
            eligible = []
            for lot in state["lots"]:
                days_left = (dt.date.fromisoformat(lot["expires"]) - delivery).days
                if kit.on("food.shelf_inclusive"):
                    days_left += 1
                if (lot["category"] == category and available[lot["lot"]] > 0 and days_left >= MIN_SHELF_DAYS
                        and not excludes & set(lot["tags"])):
                    eligible.append(lot)
            for lot in sorted(eligible, key=lambda ln: (ln["expires"], ln["lot"])):
                if need <= 0:
                    break
                take = round(min(available[lot["lot"]], need), 1)
                picks.append({"lot": lot["lot"], "item": lot["item"], "lb": take})
                available[lot["lot"]] = round(available[lot["lot"]] - take, 1)
                need = round(need - take, 1)
        return {"picks": picks, "available": available, "staples_lb": round(state["target_lb"] * STAPLES, 1)}

    transcript: list = []

    def fill_staples(state: Pack) -> dict:
        excludes = set(state["profile"]["excludes"])
        offer = [{"lot": ln["lot"], "item": ln["item"], "lb": state["available"][ln["lot"]]}
                 for ln in state["lots"] if ln["category"] == "staples" and not excludes & set(ln["tags"])
                 and state["available"][ln["lot"]] > 0]
        ask = [("system", "You fill the staples part of a pantry box from the lots offered. Answer JSON {picks}."),
               ("user", json.dumps({"pantry": state["pantry"], "staples_lb": state["staples_lb"], "available": offer}))]
        messages = transcript + ask if kit.on("food.shared_transcript") else ask
        reply = llm.invoke(messages)
        transcript.extend([ask[1], ("assistant", reply.content)])
        picks = json.loads(reply.content)["picks"]
        available = dict(state["available"])
        for p in picks:
            available[p["lot"]] = round(available[p["lot"]] - p["lb"], 1)
        items = {ln["lot"]: ln["item"] for ln in state["lots"]}
        return {"picks": state["picks"] + [{**p, "item": items[p["lot"]]} for p in picks], "available": available}

    pack = StateGraph(Pack)
    for name, fn in [("resolve_partner", resolve_partner), ("fetch_profile", fetch_profile),
                     ("pick_items", pick_items), ("fill_staples", fill_staples)]:
        pack.add_node(name, fn)
    pack.add_edge(START, "resolve_partner")
    pack.add_edge("resolve_partner", "fetch_profile")
    pack.add_edge("fetch_profile", "pick_items")
    pack.add_edge("pick_items", "fill_staples")
    pack.add_edge("fill_staples", END)
    packer = pack.compile()

    def pack_partners(state: Week) -> dict:
        available = {ln["lot"]: ln["lb"] for ln in state["lots"]}
        packs = []
        for share in state["shares"]:
            got = packer.invoke({"pantry": share["pantry"], "households": share["households"],
                                 "target_lb": share["target_lb"], "delivery": share["delivery"],
                                 "available": available, "lots": state["lots"]})
            available = got["available"]
            packs.append({"pantry": share["pantry"], "partner_id": got["partner_id"], "delivery": share["delivery"],
                          "households": share["households"], "per_household_lb": share["per_household_lb"],
                          "picks": got["picks"]})
        return {"packs": packs}

    def draft_manifest(state: Week) -> dict:
        reply = llm.invoke([
            ("system", "You write the distribution manifest for the drivers."),
            ("user", json.dumps({"week": state["week"], "packs": [
                {"partner": p["pantry"], "lb": round(sum(x["lb"] for x in p["picks"]), 1)} for p in state["packs"]]})),
        ])
        return {"manifest": reply.content}

    def validate_allocation(state: Week) -> dict:
        lots = {ln["lot"]: ln for ln in state["lots"]}
        stock = round(sum(ln["lb"] for ln in lots.values()), 1)
        if abs(stock - state["summary"]["total_lb"]) > 1:
            raise AllocationRejected(f"inventory read holds {len(lots)} lots, {stock:,} lb; the warehouse summary "
                                     f"reports {state['summary']['lots']} lots, {state['summary']['total_lb']:,} lb")
        urgent = {a["partner"] for a in state["alerts"] if a["level"].lower() == "emergency"}
        allocated: dict[str, float] = {}
        for p in state["packs"]:
            partner = BY_NAME[p["pantry"]]
            got = round(sum(x["lb"] for x in p["picks"]), 1)
            floor = 8.0 if p["pantry"] in urgent else 3.0
            if got / p["households"] < floor:
                raise AllocationRejected(f"{p['pantry']} ({p['households']} households) gets {got} lb, "
                                         f"{got / p['households']:.1f} lb per household; its floor is {floor}")
            delivery = dt.date.fromisoformat(p["delivery"])
            for x in p["picks"]:
                lot = lots[x["lot"]]
                bad = set(partner["excludes"]) & set(lot["tags"])
                if bad:
                    raise AllocationRejected(f"{p['pantry']} excludes {sorted(bad)} but receives lot {x['lot']} "
                                             f"({lot['item']})")
                left = (dt.date.fromisoformat(lot["expires"]) - delivery).days
                if left < MIN_SHELF_DAYS:
                    raise AllocationRejected(f"lot {x['lot']} ({lot['item']}, expires {lot['expires']}) goes to "
                                             f"{p['pantry']} on {p['delivery']} with {left} days of shelf life; "
                                             f"minimum {MIN_SHELF_DAYS}")
                allocated[x["lot"]] = round(allocated.get(x["lot"], 0.0) + x["lb"], 1)
        for lot, lb in allocated.items():
            if lb > lots[lot]["lb"]:
                raise AllocationRejected(f"lot {lot} ({lots[lot]['item']}) allocated {lb} lb of {lots[lot]['lb']} lb")
        return {}

    g = StateGraph(Week)
    for name, fn in [("load_inventory", load_inventory), ("load_requests", load_requests), ("triage", triage),
                     ("standard_shares", standard_shares), ("emergency_shares", emergency_shares),
                     ("pack_partners", pack_partners), ("draft_manifest", draft_manifest),
                     ("validate_allocation", validate_allocation)]:
        g.add_node(name, fn)
    g.add_edge(START, "load_inventory")
    g.add_edge("load_inventory", "load_requests")
    g.add_edge("load_requests", "triage")
    g.add_conditional_edges("triage", choose_share_rule, ["standard_shares", "emergency_shares"])
    g.add_edge("standard_shares", "pack_partners")
    g.add_edge("emergency_shares", "pack_partners")
    g.add_edge("pack_partners", "draft_manifest")
    g.add_edge("draft_manifest", "validate_allocation")
    g.add_edge("validate_allocation", END)
    return g.compile()


def record(week: str, path: Path, server: Any) -> None:
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    llm = ChatOpenAI(base_url=server.base_url, api_key="foodbank-local", model="fake-model", max_retries=0,
                     temperature=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"allocate warehouse stock to partners for {week}")
    try:
        build(llm).invoke({"week": week}, config={"callbacks": [tracer]})
    except AllocationRejected:
        pass
