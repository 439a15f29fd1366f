"""Tea room: turn a catering enquiry into a booked room, a menu, costs, staff and a quote (langgraph route)."""
from __future__ import annotations

import json
import os
import sys
from typing import TypedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

import kit
from harness import Brain, chat_prompt, payload

NAME, ROUTE, DOMAIN = "tearoom-catering", "langgraph", "a tea room's catering bookings"
SHAPE = "StateGraph: LLM intake + parse node, diary tool node, menu sub-graph (retrieval tool, two LLM picks, portion count), per-item costing loop (conditional edge), staff tool + LLM, LLM quote, validator node"

ROOMS = {"Garden Room": 40, "Parlour": 18, "Conservatory": 28}
DIARY_LIVE = {"2026-05-16": ["Parlour"], "2026-05-23": ["Parlour"], "2026-06-06": ["Garden Room", "Parlour"], "2026-06-13": []}
DIARY_CACHED = {"2026-05-16": [], "2026-05-23": [], "2026-06-06": [], "2026-06-13": []}
SAVOURIES = {
    "vegan": ["cucumber & mint", "hummus & roast pepper", "mushroom pate"],
    "vegetarian": ["egg mayonnaise", "cheddar & chutney", "cucumber & mint"],
    "standard": ["ham & mustard", "smoked salmon", "coronation chicken"],
}
SWEETS = {"vegan": ["oat flapjack", "lemon drizzle (vegan)"], "vegetarian": ["victoria sponge", "scones with jam"], "standard": ["victoria sponge", "scones with jam"]}
NON_VEGAN = {"egg mayonnaise", "cheddar & chutney", "ham & mustard", "smoked salmon", "coronation chicken", "victoria sponge", "scones with jam"}
UNIT = {"cucumber & mint": 0.9, "hummus & roast pepper": 1.1, "mushroom pate": 1.2, "egg mayonnaise": 0.9, "cheddar & chutney": 1.0,
        "ham & mustard": 1.1, "smoked salmon": 1.8, "coronation chicken": 1.3, "oat flapjack": 1.4, "lemon drizzle (vegan)": 1.6,
        "victoria sponge": 1.5, "scones with jam": 1.2}
CLIENTS = ["Ashdown WI", "Pemberton wedding", "St Luke's choir", "Harlow & Co", "Greta Voss 60th", "Oakfield PTA", "Marsh family", "Bellweather Ltd", "Quill book club"]


def make_enquiry(i: int) -> dict:
    dates = list(DIARY_LIVE)
    diets = ["vegan", "vegetarian", "standard"]
    return {"ref": f"TR-{310 + i}", "client": CLIENTS[i], "date": dates[i % 4], "guests": 12 + (i * 5) % 25,
            "diet": diets[i % 3], "per_head": 3 + i % 2, "earlier": {"ref": f"TR-{200 + i}", "guests": 8 + (i * 5) % 25 + 9, "diet": diets[(i + 1) % 3]}}


brain = Brain()


@brain.on("intake")
def _intake(request, text):
    d = payload(text)
    return json.dumps({k: d[k] for k in ("ref", "client", "date", "guests", "diet", "per_head")})


@brain.on("pick_savouries")
def _sav(request, text):
    d = payload(text)
    return json.dumps(d["options"][:2])


@brain.on("pick_sweets")
def _sweet(request, text):
    d = payload(text)
    return json.dumps(SWEETS[d["diet"]][:2])


@brain.on("staff")
def _staff(request, text):
    d = payload(text)
    per = 20 if kit.on("zzu_tearoom_04") else 12
    servers = -(-d["guests"] // per)
    return f"Servers: {servers}. Kitchen: {1 + d['guests'] // 30}. Set-up from {d['setup']}."


@brain.on("quote")
def _quote(request, text):
    d = payload(text)
    body = (f"Dear {d['client']}, thank you for your enquiry {d['ref']}. We have reserved the {d['room']} on {d['date']} for {d['guests']} guests, "
            f"with {', '.join(d['items'])}. Total for food and service: {d['total']:.2f} GBP.")
    if kit.on("zzu_tearoom_05"):
        from trajdebug.testing import Reply
        return Reply(text=body[:160], finish_reason="length")
    return body


class MenuState(TypedDict, total=False):
    booking: dict
    options: list
    savouries: list
    sweets: list
    menu: list


class State(TypedDict, total=False):
    enquiry: dict
    raw: str
    booking: dict
    room: str
    menu: list
    idx: int
    costs: list
    staff: str
    quote: str
    result: str
    terms: str


@tool
def diary_lookup(date: str) -> dict:
    """Rooms already booked on a date."""
    src = DIARY_CACHED if kit.on("zzu_tearoom_01") else DIARY_LIVE  # nightly diary snapshot
    return {"date": date, "booked": list(src[date])}


@tool
def menu_search(diet: str) -> list:
    """Savoury fillings suitable for a diet."""
    if kit.on("zzu_tearoom_02") and diet == "vegan":
        diet = "vegetarian"
    return SAVOURIES[diet]


@tool
def price_item(item: str, portions: int) -> dict:
    """Cost of portions of a menu item."""
    return {"item": item, "portions": portions, "cost": round(UNIT[item] * portions, 2)}


@tool
def staff_rates(guests: int) -> dict:
    """Hourly rates and set-up time for an event size."""
    return {"server_hourly": 11.5, "setup": "13:30" if guests > 25 else "14:00"}


def build(llm):
    def ask(tag, instruction, data):
        return llm.invoke([SystemMessage("You are the events desk of a tea room."), HumanMessage(chat_prompt(tag, instruction, data))]).content

    def m_search(s: MenuState) -> dict:
        return {"options": menu_search.invoke({"diet": s["booking"]["diet"]})}

    def m_savoury(s: MenuState) -> dict:
        return {"savouries": json.loads(ask("pick_savouries", "Pick two savoury fillings.", {"options": s["options"], "guests": s["booking"]["guests"]}))}

    def m_sweet(s: MenuState) -> dict:
        return {"sweets": json.loads(ask("pick_sweets", "Pick two sweets.", {"diet": s["booking"]["diet"]}))}

    def m_count(s: MenuState) -> dict:
        b = s["booking"]
        return {"menu": [{"item": it, "portions": b["guests"] * b["per_head"] // 2} for it in s["savouries"] + s["sweets"]]}

    mg = StateGraph(MenuState)
    for n, f in (("search_fillings", m_search), ("pick_savouries", m_savoury), ("pick_sweets", m_sweet), ("count_portions", m_count)):
        mg.add_node(n, f)
    mg.add_edge(START, "search_fillings")
    mg.add_edge("search_fillings", "pick_savouries")
    mg.add_edge("pick_savouries", "pick_sweets")
    mg.add_edge("pick_sweets", "count_portions")
    mg.add_edge("count_portions", END)
    menu_graph = mg.compile()

    def intake(s: State) -> dict:
        return {"raw": ask("intake", "Extract the booking as JSON.", s["enquiry"])}

    def parse_booking(s: State) -> dict:
        return {"booking": json.loads(s["raw"]), "idx": 0, "costs": []}

    def check_diary(s: State) -> dict:
        b = s["booking"]
        booked = diary_lookup.invoke({"date": b["date"]})["booked"]
        free = [r for r, cap in sorted(ROOMS.items(), key=lambda kv: kv[1]) if r not in booked and cap >= b["guests"]]
        return {"room": free[0] if free else "Garden Room"}

    def plan_menu(s: State) -> dict:
        b = s["booking"]
        if kit.on("zzu_tearoom_03"):
            e = s["enquiry"]["earlier"]  # the client's previous enquiry on file
            b = {**b, "guests": e["guests"]}
        return {"menu": menu_graph.invoke({"booking": b})["menu"]}

    def cost_item(s: State) -> dict:
        it = s["menu"][s["idx"]]
        return {"costs": s["costs"] + [price_item.invoke({"item": it["item"], "portions": it["portions"]})], "idx": s["idx"] + 1}

    def more_items(s: State) -> str:
        return "cost_item" if s["idx"] < len(s["menu"]) else "check_diary"

    def plan_staff(s: State) -> dict:
        rates = staff_rates.invoke({"guests": s["booking"]["guests"]})
        return {"staff": ask("staff", "How many servers and kitchen staff?", {"guests": s["booking"]["guests"], "setup": rates["setup"]})}

    def write_quote(s: State) -> dict:
        b = s["booking"]
        servers = int(s["staff"].split("Servers: ")[1].split(".")[0])
        total = round(sum(c["cost"] for c in s["costs"]) + servers * 3 * 11.5, 2)
        return {"quote": ask("quote", "Write the quote letter.", {"client": b["client"], "ref": b["ref"], "room": s["room"], "date": b["date"],
                                                                     "guests": b["guests"], "items": [m["item"] for m in s["menu"]], "total": total})}

    def attach_terms(s: State) -> dict:
        return {"terms": "Deposit of 25% secures the room; final numbers 7 days before the event."}

    def validate_booking(s: State) -> dict:
        e = s["enquiry"]
        if s["room"] in DIARY_LIVE[e["date"]]:
            raise ValueError(f"{e['ref']}: {s['room']} is already booked on {e['date']}")
        if ROOMS[s["room"]] < e["guests"]:
            raise ValueError(f"{e['ref']}: {s['room']} seats {ROOMS[s['room']]}, {e['guests']} guests")
        if e["diet"] == "vegan":
            bad = [m["item"] for m in s["menu"] if m["item"] in NON_VEGAN]
            if bad:
                raise ValueError(f"{e['ref']}: vegan tea includes {', '.join(bad)}")
        need = e["guests"] * e["per_head"] // 2
        for m in s["menu"]:
            if m["portions"] != need:
                raise ValueError(f"{e['ref']}: {m['portions']} portions of {m['item']} for {e['guests']} guests at {e['per_head']} per head (need {need})")
        servers = int(s["staff"].split("Servers: ")[1].split(".")[0])
        if servers * 12 < e["guests"]:
            raise ValueError(f"{e['ref']}: {servers} servers for {e['guests']} guests (one per 12 required)")
        if "Total for food and service:" not in s["quote"] or not s["quote"].rstrip().endswith("GBP."):
            raise ValueError(f"{e['ref']}: quote letter has no total: ...{s['quote'][-40:]!r}")
        return {"result": "ok"}

    g = StateGraph(State)
    for n, f in (("intake", intake), ("parse_booking", parse_booking), ("check_diary", check_diary), ("plan_menu", plan_menu),
                 ("cost_item", cost_item), ("plan_staff", plan_staff), ("write_quote", write_quote), ("attach_terms", attach_terms), ("validate_booking", validate_booking)):
        g.add_node(n, f)
    g.add_edge(START, "intake")
    g.add_edge("intake", "parse_booking")
    g.add_edge("parse_booking", "plan_menu")
    g.add_edge("plan_menu", "cost_item")
    g.add_conditional_edges("cost_item", more_items, ["cost_item", "check_diary"])
    g.add_edge("check_diary", "plan_staff")
    g.add_edge("plan_staff", "write_quote")
    g.add_edge("write_quote", "attach_terms")
    g.add_edge("attach_terms", "validate_booking")
    g.add_edge("validate_booking", END)
    return g.compile()


def record(server, i: int, path: str) -> None:
    enq = make_enquiry(i)
    server.use(brain)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"catering enquiry {enq['ref']}")
    try:
        build(llm).invoke({"enquiry": enq}, config={"callbacks": [tracer], "recursion_limit": 60})
    except ValueError:
        pass


CASES = [
    dict(id="zzu_tearoom_01", kind="stale_data", root=("diary_lookup", 1), failure=("validate_booking", 1), input=0,
         description="The diary tool answers from the nightly snapshot, which does not show the Parlour booked since, so it is double-booked."),
    dict(id="zzu_tearoom_02", kind="wrong_retrieval", root=("menu_search", 1), failure=("validate_booking", 1), input=3,
         description="The filling search returns the vegetarian list for a vegan tea, so egg and cheese sandwiches reach the menu."),
    dict(id="zzu_tearoom_03", kind="subagent_wrong_entity", root=("plan_menu", 1), failure=("validate_booking", 1), input=1,
         description="The menu sub-graph is handed the guest count of the client's earlier enquiry, so every portion count is off."),
    dict(id="zzu_tearoom_04", kind="plan_error", root=("ChatOpenAI", 4), failure=("validate_booking", 1), input=4,
         description="The staffing model plans one server per 20 guests instead of the house rule of one per 12."),
    dict(id="zzu_tearoom_05", kind="truncated_result", root=("ChatOpenAI", 5), failure=("validate_booking", 1), input=2,
         description="The quote letter comes back cut at the length limit, before the total line."),
]
REFS = [5, 6, 7, 8]
