"""Tinsmith's workshop: order triage, cut list and work ticket (route: langgraph)."""
import json
import operator
import re
from typing import Annotated, TypedDict

from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "tinsmith-work-tickets"
ROUTE = "langgraph"
DOMAIN = "tinsmith's workshop"
SHAPE = "StateGraph with a model router (conditional edges), a graph cycle over order lines (parse, area tool, state filing), notes memory, model quote, schema-checked work ticket"
SWITCH = None
SERVER = None

SHEET_CM2 = {"0.3 mm": 24000, "0.5 mm": 18000, "0.8 mm": 12000}
INPUTS = [
    {"task": "tin order: Ashby Chapel lanterns", "customer": "Ashby Chapel", "kind": "new",
     "lines": ["lantern body, 4 pcs, 0.5 mm, 300 x 220 mm", "lantern cap, 4 pcs, 0.3 mm, 160 x 160 mm"], "pieces": 8},
    {"task": "tin order: Mill Farm dairy pails", "customer": "Mill Farm", "kind": "new",
     "lines": ["pail wall, 3 pcs, 0.8 mm, 900 x 280 mm", "pail base, 3 pcs, 0.8 mm, 300 x 300 mm",
               "pail handle strap, 3 pcs, 0.5 mm, 400 x 30 mm"], "pieces": 9},
    {"task": "tin order: Orchard Cottage candle sconces", "customer": "Orchard Cottage", "kind": "new",
     "lines": ["sconce back, 6 pcs, 0.3 mm, 240 x 120 mm", "sconce dish, 6 pcs, 0.5 mm, 110 x 110 mm"], "pieces": 12},
    {"task": "tin order: Quarry Inn cookie cutters", "customer": "Quarry Inn", "kind": "new",
     "lines": ["cutter strip, 12 pcs, 0.3 mm, 320 x 25 mm"], "pieces": 12},
    {"task": "tin order: Vicarage watering can", "customer": "The Vicarage", "kind": "new",
     "lines": ["can body, 1 pcs, 0.5 mm, 620 x 300 mm", "can spout, 1 pcs, 0.5 mm, 280 x 90 mm",
               "can rose, 2 pcs, 0.3 mm, 90 x 90 mm", "can handle, 1 pcs, 0.8 mm, 260 x 40 mm"], "pieces": 5},
]
NOTES = {"Ashby Chapel": ["vestry door lanterns: leave seams unsoldered for venting"],
         "Mill Farm": ["pails go to the dairy: 0.8 mm walls, rolled rims"],
         "Orchard Cottage": ["sconces hung on plaster: two fixing holes"],
         "Quarry Inn": ["cutters: fold the top edge for grip"],
         "The Vicarage": ["rose holes 1.5 mm"],
         "Harrow Smithy": ["all work in 0.8 mm, no exceptions: their forge tools"]}
CASES = [
    dict(id="zn26", input=3, switch="route", kind="wrong_routing", root=("ChatOpenAI", 1), failure=None,
         desc="The model's triage sent a cookie-cutter order down the repair branch."),
    dict(id="zn27", input=2, switch="notes", kind="context_pollution", root=("workshop_notes", 1), failure=None,
         desc="The notes lookup handed the quote another customer's rule to make everything in 0.8 mm."),
    dict(id="zn28", input=1, switch="area", kind="unit_error", root=("cut_area", 2), failure=None,
         desc="The area of the pail bases was given in square millimetres where square centimetres are used."),
    dict(id="zn29", input=4, switch="pcs", kind="lossy_parsing", root=("read_dimensions", 3), failure=None,
         desc="Reading the watering-can rose line kept its size but dropped its piece count of 2, defaulting to 1."),
    dict(id="zn30", input=0, switch="file", kind="bad_memory_write", root=("file_cut", 2), failure=None,
         desc="Filing the lantern cap into the cut list copied the gauge of the lantern body before it."),
]


class Job(TypedDict, total=False):
    order: dict
    route: str
    idx: int
    current: dict
    cut_list: Annotated[list, operator.add]
    notes: list
    quote: dict
    ticket: dict


def policy(request):
    system = request.body["messages"][0]["content"]
    ask = json.loads(request.body["messages"][-1]["content"])
    if system.startswith("Triage"):
        if SWITCH == "route" and "cutter" in ask["lines"][0]:
            return "repair"
        return "new_work" if ask["kind"] == "new" else "repair"
    gauge_rule = None
    for note in ask["notes"]:
        m = re.search(r"all work in (\d\.\d mm)", note)
        if m:
            gauge_rule = m.group(1)
    lines = [{"part": c["part"], "pieces": c["pieces"], "gauge": gauge_rule or c["gauge"],
              "eur": round(c["area_cm2"] * 0.004 + 3 * c["pieces"], 2)} for c in ask["cut_list"]]
    return json.dumps({"lines": lines})


@tool
def cut_area(width_mm: int, height_mm: int, pieces: int) -> float:
    """Sheet area in square centimetres needed for a part."""
    area = width_mm * height_mm * pieces
    if SWITCH == "area" and width_mm == height_mm == 300:
        return float(area)
    return area / 100


@tool
def workshop_notes(customer: str) -> list:
    """The workshop's notes about a customer."""
    notes = list(NOTES.get(customer, []))
    if SWITCH == "notes":
        notes += NOTES["Harrow Smithy"]
    return notes


@tool
def repair_rate(customer: str) -> dict:
    """Bench rate for repair work."""
    return {"customer": customer, "eur_per_hour": 28}


def _read(text):
    part, pcs, gauge, dims = [x.strip() for x in text.split(",")]
    w, h = re.findall(r"\d+", dims)
    n = int(pcs.split()[0])
    if SWITCH == "pcs" and n == 2:
        n = 1
    return {"part": part, "pieces": n, "gauge": gauge, "width_mm": int(w), "height_mm": int(h)}


read_dimensions = RunnableLambda(_read, name="read_dimensions")


def graph(llm):
    def triage(s):
        r = llm.invoke([("system", "Triage the tin order: answer new_work or repair."),
                        ("user", json.dumps(s["order"]))])
        return {"route": r.content.strip(), "idx": 0}

    def line_item(s):
        d = read_dimensions.invoke(s["order"]["lines"][s["idx"]])
        area = cut_area.invoke({"width_mm": d["width_mm"], "height_mm": d["height_mm"], "pieces": d["pieces"]})
        return {"current": {**d, "area_cm2": area}}

    def file_cut(s):
        entry = dict(s["current"])
        if SWITCH == "file" and s["idx"] == 1:
            entry["gauge"] = s["cut_list"][-1]["gauge"]
        return {"cut_list": [entry], "idx": s["idx"] + 1}

    def recall_notes(s):
        return {"notes": workshop_notes.invoke({"customer": s["order"]["customer"]})}

    def quote(s):
        r = llm.invoke([("system", "Price each cut part and name its gauge. Answer JSON."),
                        ("user", json.dumps({"cut_list": s["cut_list"], "notes": s["notes"]}))])
        return {"quote": json.loads(r.content)}

    def price_repair(s):
        return {"quote": {"lines": [], "repair": repair_rate.invoke({"customer": s["order"]["customer"]})}}

    def work_ticket(s):
        order = s["order"]
        lines = s.get("quote", {}).get("lines", [])
        if order["kind"] == "new" and not lines:
            raise ValueError("work ticket schema: new work needs priced cut lines, got none")
        if sum(l["pieces"] for l in lines) != order["pieces"]:
            raise ValueError(f"work ticket schema: {sum(l['pieces'] for l in lines)} pieces ticketed, order has {order['pieces']}")
        for text, l in zip(order["lines"], lines):
            gauge = text.split(",")[2].strip()
            if l["gauge"] != gauge:
                raise ValueError(f"work ticket schema: {l['part']} ticketed in {l['gauge']}, ordered in {gauge}")
        for gauge, cm2 in SHEET_CM2.items():
            need = sum(c["area_cm2"] for c in s["cut_list"] if c["gauge"] == gauge)
            if need > cm2:
                raise ValueError(f"work ticket schema: {need} cm2 of {gauge} sheet needed, rack holds {cm2}")
        return {"ticket": {"customer": order["customer"], "lines": lines}}

    g = StateGraph(Job)
    for name, fn in [("triage", triage), ("line_item", line_item), ("file_cut", file_cut),
                     ("recall_notes", recall_notes), ("quote", quote), ("price_repair", price_repair),
                     ("work_ticket", work_ticket)]:
        g.add_node(name, fn)
    g.add_edge(START, "triage")
    g.add_conditional_edges("triage", lambda s: "line_item" if s["route"] == "new_work" else "price_repair",
                            ["line_item", "price_repair"])
    g.add_edge("line_item", "file_cut")
    g.add_conditional_edges("file_cut", lambda s: "line_item" if s["idx"] < len(s["order"]["lines"]) else "recall_notes",
                            ["line_item", "recall_notes"])
    g.add_edge("recall_notes", "quote")
    g.add_edge("quote", "work_ticket")
    g.add_edge("price_repair", "work_ticket")
    g.add_edge("work_ticket", END)
    return g.compile()


def run_one(inp, path):
    llm = ChatOpenAI(base_url=SERVER.base_url, api_key="not-needed", model=SERVER.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["task"])
    try:
        graph(llm).invoke({"order": inp, "cut_list": []}, config={"callbacks": [tracer], "recursion_limit": 60})
    except ValueError:
        pass
