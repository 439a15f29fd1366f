"""Filigree jeweller: commission quotes (langgraph route). A StateGraph whose model call routes the request
(catalogue or bespoke), tools price metal and motifs in a node that loops over motifs, a labour estimate from
the model is read into the quote, and the quote is reviewed against the workshop's rules."""
import json
from typing import TypedDict

import trajdebug
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "filigree-quotes"
ROUTE = "langgraph"
DOMAIN = "filigree jeweller"
SHAPE = "StateGraph: model router with conditional edges, two branches, a node that loops over motifs, model labour estimate parsed downstream, review node"
ACTIVE = None

CATALOGUE = {
    "rose brooch": {"motifs": ["rose", "leaf", "leaf"], "grams": 6.0},
    "scroll earrings": {"motifs": ["scroll", "scroll"], "grams": 4.0},
    "lace pendant": {"motifs": ["lace", "scroll", "dot", "dot"], "grams": 5.5},
}
MOTIF_HOURS = {"rose": 3.0, "leaf": 1.25, "scroll": 1.5, "lace": 4.0, "dot": 0.5, "star": 2.0, "wave": 2.5}
FIX = {"silver": 0.92, "gold": 74.0}   # today's price per gram
LAST_MONTH = {"silver": 0.88, "gold": 61.0}
RATE = 38.0

INPUTS = [
    {"ref": "CM-51", "text": "rose brooch in silver", "metal": "silver", "gauge_mm": 0.4},
    {"ref": "CM-52", "text": "bespoke: star, wave, wave, dot in gold, 7 g", "metal": "gold", "gauge_mm": 0.3},
    {"ref": "CM-53", "text": "lace pendant in gold", "metal": "gold", "gauge_mm": 0.3},
    {"ref": "CM-54", "text": "bespoke: wave, rose, leaf in silver, 8 g", "metal": "silver", "gauge_mm": 0.5},
    {"ref": "CM-55", "text": "scroll earrings in silver", "metal": "silver", "gauge_mm": 0.4},
]


class Quote(TypedDict, total=False):
    request: dict
    route: str
    motifs: list
    grams: float
    metal_cost: float
    motif_hours: list
    idx: int
    labour_text: str
    total: float
    verdict: str


def policy(request):
    msgs = request.body["messages"]
    prompt = msgs[-1]["content"]
    if prompt.startswith("Classify"):
        text = prompt.split("\n", 1)[1]
        route = "bespoke" if text.startswith("bespoke") else "catalogue"
        if ACTIVE == "wrong_routing" and "wave, rose" in text:
            route = "catalogue"
        return route
    if prompt.startswith("Estimate finishing hours"):
        data = json.loads(prompt.split("\n", 1)[1])
        hours = 1.0 + 0.5 * len(data["motifs"])
        if ACTIVE == "format_drift" and data["metal"] == "gold" and len(data["motifs"]) == 4:
            h, m = int(hours), int(round((hours - int(hours)) * 60))
            return f"{h}h{m:02d}"
        return f"{hours:.2f}"
    return "?"


@tool
def find_design(description: str) -> dict:
    """Closest catalogue design for a description."""
    for name, d in CATALOGUE.items():
        if name in description:
            return {"design": name, **d}
    words = set(description.replace(",", " ").split())
    best = max(CATALOGUE, key=lambda n: len(words & set(" ".join(CATALOGUE[n]["motifs"]).split())))
    return {"design": best, **CATALOGUE[best]}


@tool
def metal_price(metal: str) -> dict:
    """Price per gram of a metal at today's fix."""
    table = LAST_MONTH if ACTIVE == "stale_data" and metal == "gold" else FIX
    return {"metal": metal, "per_gram": table[metal]}


@tool
def motif_hours(motif: str, gauge_mm: float) -> float:
    """Bench hours to form one motif in wire of the given gauge."""
    base = MOTIF_HOURS[motif]
    if ACTIVE == "tool_ignores_argument":
        gauge_mm = 0.4
    return round(base * (1.0 + (0.4 - gauge_mm) * 2.5), 3)


def build(llm):
    def intake(state: Quote) -> dict:
        return {"request": state["request"], "idx": 0, "motif_hours": []}

    def classify(state: Quote) -> dict:
        ans = llm.invoke([("user", "Classify the commission as catalogue or bespoke.\n" + state["request"]["text"])])
        return {"route": ans.content.strip()}

    def pick_branch(state: Quote) -> str:
        return "bespoke_brief" if state["route"] == "bespoke" else "catalogue_design"

    def catalogue_design(state: Quote) -> dict:
        d = find_design.invoke({"description": state["request"]["text"]})
        return {"motifs": d["motifs"], "grams": d["grams"]}

    def bespoke_brief(state: Quote) -> dict:
        text = state["request"]["text"].split(":", 1)[1]
        body, grams = text.rsplit(",", 1)
        body = body.rsplit(" in ", 1)[0]
        return {"motifs": [m.strip() for m in body.split(",")], "grams": float(grams.strip().rstrip("g").strip())}

    def price_metal(state: Quote) -> dict:
        p = metal_price.invoke({"metal": state["request"]["metal"]})
        return {"metal_cost": round(p["per_gram"] * state["grams"], 2)}

    def price_motif(state: Quote) -> dict:
        i = state["idx"]
        h = motif_hours.invoke({"motif": state["motifs"][i], "gauge_mm": state["request"]["gauge_mm"]})
        return {"motif_hours": state["motif_hours"] + [h], "idx": i + 1}

    def more_motifs(state: Quote) -> str:
        last = len(state["motifs"]) - (1 if ACTIVE == "off_by_one" else 0)
        return "price_motif" if state["idx"] < last else "finishing"

    def finishing(state: Quote) -> dict:
        ans = llm.invoke([("user", "Estimate finishing hours as a decimal number.\n" + json.dumps(
            {"motifs": state["motifs"], "metal": state["request"]["metal"]}))])
        return {"labour_text": ans.content.strip()}

    def total(state: Quote) -> dict:
        hours = sum(state["motif_hours"]) + float(state["labour_text"])
        return {"total": round(state["metal_cost"] * 1.15 + hours * RATE, 2)}

    def review_quote(state: Quote) -> dict:
        req = state["request"]
        if req["text"].startswith("bespoke"):
            asked = [m.strip() for m in req["text"].split(":", 1)[1].rsplit(",", 1)[0].rsplit(" in ", 1)[0].split(",")]
            if state["motifs"] != asked:
                raise ValueError(f"{req['ref']}: quoted motifs {state['motifs']} are not the commissioned {asked}")
        if len(state["motif_hours"]) != len(state["motifs"]):
            raise ValueError(f"{req['ref']}: {len(state['motifs'])} motifs but {len(state['motif_hours'])} priced")
        floor = FIX[req["metal"]] * state["grams"] * 1.1
        if state["metal_cost"] * 1.15 < floor:
            raise ValueError(f"{req['ref']}: metal charge below today's fix floor {floor:.2f}")
        expected = sum(MOTIF_HOURS[m] for m in state["motifs"]) * (1 + (0.4 - req["gauge_mm"]) * 2.5)
        if abs(sum(state["motif_hours"]) - expected) > 0.05:
            raise ValueError(f"{req['ref']}: bench hours {sum(state['motif_hours']):.2f} do not match the {req['gauge_mm']} mm gauge sheet ({expected:.2f})")
        return {"verdict": "approved"}

    g = StateGraph(Quote)
    for fn in (intake, classify, catalogue_design, bespoke_brief, price_metal, price_motif, finishing, total, review_quote):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "classify")
    g.add_conditional_edges("classify", pick_branch, ["bespoke_brief", "catalogue_design"])
    g.add_edge("bespoke_brief", "price_metal")
    g.add_edge("catalogue_design", "price_metal")
    g.add_edge("price_metal", "price_motif")
    g.add_conditional_edges("price_motif", more_motifs, ["price_motif", "finishing"])
    g.add_edge("finishing", "total")
    g.add_edge("total", "review_quote")
    g.add_edge("review_quote", END)
    return g.compile()


def run_one(server, inp, path):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"quote {inp['ref']}: {inp['text']}")
    build(llm).invoke({"request": inp}, config={"callbacks": [tracer], "recursion_limit": 60})


def _c(n, kind, inp, root, occ, rkind, failure, desc):
    return {"id": f"zzzq-filigree-{n}", "kind": kind, "switch": kind, "input": inp,
            "root": {"name": root, "occurrence": occ, "kind": rkind}, "failure": failure, "description": desc}


CASES = [
    _c(1, "wrong_routing", 3, "ChatOpenAI", 1, "llm", "review_quote",
       "The model classifies a bespoke commission as a catalogue piece, so a catalogue design is quoted instead."),
    _c(2, "stale_data", 2, "metal_price", 1, "tool", "review_quote",
       "The gold price tool answers last month's price per gram instead of today's fix."),
    _c(3, "off_by_one", 0, "more_motifs", 2, "other", "review_quote",
       "The motif loop stops one motif early, so the last leaf is never priced."),
    _c(4, "tool_ignores_argument", 3, "motif_hours", 1, "tool", "review_quote",
       "The bench-hours tool ignores the wire gauge and prices every motif at 0.4 mm."),
    _c(5, "format_drift", 1, "ChatOpenAI", 2, "llm", "total",
       "The model gives the finishing hours as '3h00' instead of a decimal number."),
]
