"""Spinner's yarn commissions: a LangGraph StateGraph with a spinning loop (a graph cycle)."""
from __future__ import annotations

import json
import math
import re
from typing import TypedDict

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME, ROUTE, EXT = "spinner-commissions", "langgraph", "jsonl"
DOMAIN = "spinner's yarn commissions"
SHAPE = "graph: history tool, model brief, parse node, fleece retriever, skein plan node, spinning cycle (one node visit + wheel tool per skein), dye tool, pricing node, yardage check node (16-49 steps)"
SWITCH = None

FLEECES = [
    {"breed": "Wensleydale", "yd_per_100g": {"2": 190, "3": 130}, "grade": "longwool"},
    {"breed": "Wensleydale cross", "yd_per_100g": {"2": 160, "3": 105}, "grade": "longwool cross"},
    {"breed": "Shetland", "yd_per_100g": {"2": 260, "3": 180}, "grade": "fine"},
    {"breed": "Jacob", "yd_per_100g": {"2": 210, "3": 150}, "grade": "medium"},
    {"breed": "Blue-faced Leicester", "yd_per_100g": {"2": 240, "3": 165}, "grade": "fine longwool"},
]
HISTORY = {
    "Ada Lyle": ["2025: 600 yd 2-ply Jacob, undyed"],
    "Tom Garside": ["2025: 900 yd 3-ply Shetland, weld yellow"],
    "Nell Baxter": [],
    "Joss Amery": ["2024: 400 yd 2-ply Blue-faced Leicester, walnut brown"],
    "Kit Pardoe": ["2025: 1000 yd 2-ply Shetland, woad blue"],
}
SKEIN_G = 100

INPUTS = [
    {"key": "lyle", "customer": "Ada Lyle", "text": "Commission for Ada Lyle: 1200 yd of 3-ply Wensleydale, woad blue."},
    {"key": "garside", "customer": "Tom Garside", "text": "Commission for Tom Garside: 800 yd of 2-ply Jacob, madder red."},
    {"key": "baxter", "customer": "Nell Baxter", "text": "Commission for Nell Baxter: 1500 yd of 2-ply Shetland, weld yellow."},
    {"key": "amery", "customer": "Joss Amery", "text": "Commission for Joss Amery: 700 yd of 3-ply Blue-faced Leicester, undyed."},
    {"key": "pardoe", "customer": "Kit Pardoe", "text": "Commission for Kit Pardoe: 1000 yd of 3-ply Jacob, walnut brown."},
]

CASES = [
    {"id": "zzzw_yarn_01", "input": 0, "switch": "fleece_cross", "fault_kind": "wrong_retrieval",
     "root": {"name": "FleeceRegister", "occurrence": 1}, "failure": {"name": "check_commission", "occurrence": 1},
     "description": "The fleece register answers the Wensleydale cross record for a Wensleydale query, so the grist is lower than the fleece really spun."},
    {"id": "zzzw_yarn_02", "input": 2, "switch": "floor_skeins", "fault_kind": "off_by_one",
     "root": {"name": "plan_skeins", "occurrence": 1}, "failure": {"name": "check_commission", "occurrence": 1},
     "description": "The skein plan rounds the skein count down, one skein short of the yardage asked."},
    {"id": "zzzw_yarn_03", "input": 1, "switch": "wheel_ply", "fault_kind": "tool_ignores_argument",
     "root": {"name": "wheel_schedule", "occurrence": 3}, "failure": {"name": "check_commission", "occurrence": 1},
     "description": "The wheel schedule ignores the ply it is given for the third skein and books it as 3-ply."},
    {"id": "zzzw_yarn_04", "input": 4, "switch": "history_neighbour", "fault_kind": "context_pollution",
     "root": {"name": "customer_history", "occurrence": 1}, "failure": {"name": "dye_bath", "occurrence": 1},
     "description": "The customer history tool adds another customer's order to the brief, and the model takes its colour from it."},
    {"id": "zzzw_yarn_05", "input": 3, "switch": "spaced_yards", "fault_kind": "format_drift",
     "root": {"name": "ChatOpenAI", "occurrence": 1}, "failure": {"name": "check_commission", "occurrence": 1},
     "description": "The model writes the yardage as a spaced text, \"7 00\", instead of a number, and the parse keeps only 7 yards."},
]


def policy(request):
    msgs = request.body["messages"]
    prompt = msgs[-1]["content"]
    if prompt.startswith("Brief this commission"):
        ctx = "\n".join(m["content"] for m in msgs if isinstance(m.get("content"), str))
        req = prompt.split("\n", 1)[1]
        m = re.search(r"(\d+) yd of (\d)-ply ([A-Za-z\- ]+?), ([a-z ]+)\.", req)
        yards, ply, breed, colour = m.groups()
        hist = next(m["content"] for m in msgs if m.get("content", "").startswith("Customer history"))
        colours = re.findall(r"\d-ply [A-Za-z\- ]+?, ([a-z ]+)(?:\n|$|\.)", hist)
        if colours and "Previous orders of other" in ctx:
            colour = colours[-1]
        yards_val = f"{yards[0]} {yards[1:]}" if SWITCH == "spaced_yards" else int(yards)
        return json.dumps({"yards": yards_val, "ply": int(ply), "breed": breed, "colour": colour})
    return "Please send a commission."


@tool
def customer_history(customer: str) -> str:
    """Earlier commissions of a customer."""
    notes = list(HISTORY[customer])
    text = "\n".join(notes) if notes else "no earlier commissions"
    if SWITCH == "history_neighbour":
        text += "\nPrevious orders of other customers: 2025: 300 yd 2-ply Jacob, madder red"
    return text


class FleeceRegister(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager=None):
        hits = [f for f in FLEECES if f["breed"].lower().startswith(query.lower())]
        hits.sort(key=lambda f: len(f["breed"]))
        if SWITCH == "fleece_cross":
            hits.reverse()
        return [Document(page_content=json.dumps(f), metadata={"breed": f["breed"]}) for f in hits]


@tool
def wheel_schedule(skein: int, ply: int, breed: str) -> dict:
    """Book a skein on the wheel and spin it."""
    if SWITCH == "wheel_ply" and skein == 3:
        ply = 3
    return {"skein": skein, "ply": ply, "breed": breed, "grams": SKEIN_G}


@tool
def dye_bath(colour: str, grams: int, ordered_colour: str) -> dict:
    """Dye the spun yarn; the dyer checks the colour card of the commission."""
    if colour != ordered_colour:
        raise ValueError(f"colour card says {ordered_colour}, dye bath asked for {colour}")
    return {"colour": colour, "grams": grams, "mordant": "alum" if colour != "undyed" else None}


class S(TypedDict, total=False):
    customer: str
    request: str
    history: str
    brief: str
    spec: dict
    fleece: dict
    plan: dict
    spun: list
    dye: dict
    quote: dict


def build(llm):
    def load_history(s: S):
        return {"history": customer_history.invoke({"customer": s["customer"]})}

    def brief(s: S):
        msgs = [("system", "You brief yarn commissions as JSON."), ("user", "Customer history:\n" + s["history"]),
                ("user", "Brief this commission as JSON.\n" + s["request"])]
        return {"brief": llm.invoke(msgs).content}

    def parse_brief(s: S):
        raw = json.loads(s["brief"])
        y = raw["yards"]
        yards = y if isinstance(y, int) else int(re.match(r"\d+", str(y)).group(0))
        return {"spec": {"yards": yards, "ply": int(raw["ply"]), "breed": raw["breed"], "colour": raw["colour"]}}

    def find_fleece(s: S):
        docs = FleeceRegister().invoke(s["spec"]["breed"])
        return {"fleece": json.loads(docs[0].page_content)}

    def plan_skeins(s: S):
        per = s["fleece"]["yd_per_100g"][str(s["spec"]["ply"])]
        exact = s["spec"]["yards"] / per
        n = math.floor(exact) if SWITCH == "floor_skeins" else math.ceil(exact)
        return {"plan": {"skeins": max(n, 1), "yd_per_skein": per}, "spun": []}

    def spin(s: S):
        k = len(s["spun"]) + 1
        out = wheel_schedule.invoke({"skein": k, "ply": s["spec"]["ply"], "breed": s["fleece"]["breed"]})
        return {"spun": s["spun"] + [out]}

    def more(s: S):
        return "spin" if len(s["spun"]) < s["plan"]["skeins"] else "dye"

    def dye(s: S):
        ordered = re.search(r", ([a-z ]+)\.$", s["request"]).group(1)
        grams = sum(x["grams"] for x in s["spun"])
        return {"dye": dye_bath.invoke({"colour": s["spec"]["colour"], "grams": grams, "ordered_colour": ordered})}

    def price(s: S):
        g = s["dye"]["grams"]
        return {"quote": {"grams": g, "price": round(g * 0.21 + (6 if s["dye"]["mordant"] else 0), 2)}}

    def check_commission(s: S):
        m = re.search(r"(\d+) yd of (\d)-ply ([A-Za-z\- ]+?),", s["request"])
        yards, ply, breed = int(m.group(1)), int(m.group(2)), m.group(3)
        true_per = {f["breed"]: f for f in FLEECES}[breed]["yd_per_100g"]
        spun_yards = sum(true_per[str(x["ply"])] * x["grams"] / 100 for x in s["spun"])
        plies = sorted({x["ply"] for x in s["spun"]})
        if plies != [ply]:
            raise AssertionError(f"commission is {ply}-ply but skeins were spun {plies}-ply")
        if spun_yards < yards:
            raise AssertionError(f"commission short: {spun_yards:.0f} yd spun of {breed}, {yards} yd asked")
        if spun_yards > yards + true_per[str(ply)] * SKEIN_G / 100:
            raise AssertionError(f"{spun_yards:.0f} yd spun for {yards} yd asked: more than a skein over, fleece used {len(s['spun'])} skeins")
        return {"quote": {**s["quote"], "yards": round(spun_yards)}}

    g = StateGraph(S)
    for n, f in [("load_history", load_history), ("brief", brief), ("parse_brief", parse_brief),
                 ("find_fleece", find_fleece), ("plan_skeins", plan_skeins), ("spin", spin), ("dye", dye),
                 ("price", price), ("check_commission", check_commission)]:
        g.add_node(n, f)
    g.add_edge(START, "load_history")
    for a, b in [("load_history", "brief"), ("brief", "parse_brief"), ("parse_brief", "find_fleece"),
                 ("find_fleece", "plan_skeins"), ("plan_skeins", "spin"), ("dye", "price"),
                 ("price", "check_commission"), ("check_commission", END)]:
        g.add_edge(a, b)
    g.add_conditional_edges("spin", more, {"spin": "spin", "dye": "dye"})
    return g.compile()


def record(server, inp, path):
    server.use(policy)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"yarn commission: {inp['text']}")
    try:
        build(llm).invoke({"customer": inp["customer"], "request": inp["text"]},
                          config={"callbacks": [tracer], "recursion_limit": 60})
    except Exception:
        pass
