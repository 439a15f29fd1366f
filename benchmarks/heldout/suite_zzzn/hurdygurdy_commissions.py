"""Hurdy-gurdy maker: commission intake and build plan (route: langgraph)."""
import json
from typing import TypedDict

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "hurdygurdy-commissions"
ROUTE = "langgraph"
DOMAIN = "hurdy-gurdy maker's commissions"
SHAPE = "StateGraph: model plan -> sourcing node looping timber and price tools -> model schedule -> parse -> bench booking check"
SWITCH = None
SERVER = None

PARTS = {"soundboard": "spruce", "wheel": "pear", "keybox": "sycamore", "tangents": "holly", "body": "maple"}
TIMBER = {"spruce": 6, "pear": 3, "sycamore": 4, "holly": 5, "maple": 7, "walnut": 2}
PRICES = {"spruce": 140, "pear": 90, "sycamore": 75, "holly": 40, "maple": 110, "walnut": 160}
PRICES_2025 = {"spruce": 95, "pear": 60, "sycamore": 50, "holly": 25, "maple": 70, "walnut": 110}
INPUTS = [
    {"task": "commission: Elsa Brandt, six-string lute-backed, May", "client": "Elsa Brandt", "body": "lute-backed", "month": "2027-05", "deposit": 370},
    {"task": "commission: Tomas Ruiz, guitar-bodied, June", "client": "Tomas Ruiz", "body": "guitar-bodied", "month": "2027-06", "deposit": 370},
    {"task": "commission: Ines Varga, walnut body, July", "client": "Ines Varga", "body": "walnut", "month": "2027-07", "deposit": 395},
    {"task": "commission: Hugo Lenz, lute-backed, September", "client": "Hugo Lenz", "body": "lute-backed", "month": "2027-09", "deposit": 370},
    {"task": "commission: Maud Keane, guitar-bodied, October", "client": "Maud Keane", "body": "guitar-bodied", "month": "2027-10", "deposit": 370},
]
CASES = [
    dict(id="zn11", input=1, switch="plan", kind="plan_error", root=("ChatOpenAI", 1), failure=None,
         desc="The model's build plan left the wheel out, so no pear was reserved or priced for it."),
    dict(id="zn12", input=0, switch="species", kind="tool_ignores_argument", root=("timber_stock", 1), failure=None,
         desc="The timber stock tool answered for maple whatever species it was asked about."),
    dict(id="zn13", input=3, switch="date", kind="format_drift", root=("ChatOpenAI", 2), failure=None,
         desc="The model gave the bench date as day/month/year instead of the ISO date it gives elsewhere."),
    dict(id="zn14", input=2, switch="prices", kind="stale_data", root=("part_price", 1), failure=None,
         desc="Part prices came from the 2025 price list, so the quote fell below the deposit taken."),
    dict(id="zn15", input=4, switch="args", kind="wrong_tool_args", root=("timber_stock", 4), failure=None,
         desc="Sourcing asked the stock tool for the part name, tangents, instead of its timber, holly."),
]


class Commission(TypedDict, total=False):
    request: dict
    plan: list
    sourced: list
    schedule_text: str
    bench: dict
    ticket: dict


def policy(request):
    system = request.body["messages"][0]["content"]
    ask = json.loads(request.body["messages"][-1]["content"])
    if system.startswith("Plan"):
        parts = [{"part": p, "timber": "walnut" if p == "body" and ask["body"] == "walnut" else t}
                 for p, t in PARTS.items()]
        if SWITCH == "plan":
            parts = [p for p in parts if p["part"] != "wheel"]
        return json.dumps({"parts": parts})
    day = {"05": 12, "06": 9, "07": 14, "09": 8, "10": 13}[ask["month"][-2:]]
    if SWITCH == "date":
        return f"Bench free from {day:02d}/{ask['month'][5:]}/{ask['month'][:4]}."
    return f"Bench free from {ask['month']}-{day:02d}."


@tool
def timber_stock(species: str) -> dict:
    """Boards of a timber species in the seasoning shed."""
    if SWITCH == "species":
        species = "maple"
    return {"species": species, "boards": TIMBER.get(species, 0)}


@tool
def part_price(timber: str) -> dict:
    """Price in euros of a part cut from a timber."""
    table = PRICES_2025 if SWITCH == "prices" else PRICES
    return {"timber": timber, "eur": table[timber]}


def graph(llm):
    def plan_build(s):
        r = llm.invoke([("system", "Plan the parts and timbers of a hurdy-gurdy. Answer JSON."),
                        ("user", json.dumps(s["request"]))])
        return {"plan": json.loads(r.content)["parts"]}

    def source_parts(s):
        sourced = []
        for p in s["plan"]:
            asked = p["part"] if SWITCH == "args" and p["part"] == "tangents" else p["timber"]
            stock = timber_stock.invoke({"species": asked})
            price = part_price.invoke({"timber": p["timber"]})
            sourced.append({"part": p["part"], "timber": p["timber"], "stock": stock, "eur": price["eur"]})
        return {"sourced": sourced}

    def schedule(s):
        r = llm.invoke([("system", "Say when the bench is free for this build."),
                        ("user", json.dumps({"client": s["request"]["client"], "month": s["request"]["month"]}))])
        return {"schedule_text": r.content}

    def read_schedule(s):
        text = s["schedule_text"].rstrip(".").split()[-1]
        return {"bench": {"start": text}}

    def book_bench(s):
        start = s["bench"]["start"]
        y, m, d = start.split("-") if start.count("-") == 2 else ("", "", "")
        if not (y.isdigit() and m.isdigit() and d.isdigit()):
            raise ValueError(f"bench calendar rejects start {start!r}: expected YYYY-MM-DD")
        for item in s["sourced"]:
            if item["stock"]["species"] != item["timber"] or item["stock"]["boards"] < 1:
                raise ValueError(f"no {item['timber']} boards on hand for the {item['part']}")
        parts = {i["part"] for i in s["sourced"]}
        if parts != set(PARTS):
            raise ValueError(f"build ticket lacks parts: {sorted(set(PARTS) - parts)}")
        total = sum(i["eur"] for i in s["sourced"]) + 300
        if total < s["request"]["deposit"] * 2:
            raise ValueError(f"quote {total} EUR is under twice the {s['request']['deposit']} EUR deposit")
        return {"ticket": {"start": start, "quote_eur": total}}

    g = StateGraph(Commission)
    for name, fn in [("plan_build", plan_build), ("source_parts", source_parts), ("schedule", schedule),
                     ("read_schedule", read_schedule), ("book_bench", book_bench)]:
        g.add_node(name, fn)
    g.add_edge(START, "plan_build")
    g.add_edge("plan_build", "source_parts")
    g.add_edge("source_parts", "schedule")
    g.add_edge("schedule", "read_schedule")
    g.add_edge("read_schedule", "book_bench")
    g.add_edge("book_bench", END)
    return g.compile()


def run_one(inp, path):
    llm = ChatOpenAI(base_url=SERVER.base_url, api_key="not-needed", model=SERVER.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["task"])
    try:
        graph(llm).invoke({"request": inp}, config={"callbacks": [tracer]})
    except ValueError:
        pass
