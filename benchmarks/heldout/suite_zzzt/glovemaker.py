"""Glovemaker's made-to-measure orders (langgraph route): a StateGraph whose state carries the
order; the model reads the tracing notes, a parser node turns them into numbers, a size-chart node,
a cutting loop (a cycle over the pieces), a second model call for the leather, and a fitting check
node that raises."""
import json
import operator
from typing import Annotated, TypedDict

NAME = "glovemaker-fittings"
ROUTE = "langgraph"
DOMAIN = "glovemaker's made-to-measure orders"
SHAPE = "graph: intake -> llm read_tracing -> parse node -> size chart -> loop cut_piece x7 (cycle) -> llm choose_leather -> stitch plan -> fitting check node"
MODE = None

INPUTS = [
    {"order": "G-11", "client": "Ms. Varga", "hand": "right", "palm_cm": 19.5, "middle_cm": 8.1, "use": "riding", "notes": "slim fingers"},
    {"order": "G-12", "client": "Mr. Osei", "hand": "left", "palm_cm": 22.0, "middle_cm": 8.9, "use": "evening", "notes": "long thumb"},
    {"order": "G-13", "client": "Mrs. Kato", "hand": "right", "palm_cm": 18.0, "middle_cm": 7.6, "use": "driving", "notes": "none"},
    {"order": "G-14", "client": "Dr. Brandt", "hand": "right", "palm_cm": 21.0, "middle_cm": 8.4, "use": "falconry", "notes": "wide knuckles"},
    {"order": "G-15", "client": "Mx. Ferro", "hand": "left", "palm_cm": 20.5, "middle_cm": 8.0, "use": "evening", "notes": "short little finger"},
]
PRIOR_NOTES = {"G-13": "previous client G-12: evening gloves, silk lining, cabretta"}

CASES = [
    {"input": 0, "mode": "g1", "kind": "lossy_parsing", "root": ("parse_tracing", 1),
     "description": "the tracing parser reads the palm girth 19.5 as 19, dropping the half centimetre"},
    {"input": 1, "mode": "g2", "kind": "wrong_retrieval", "root": ("size_chart", 1),
     "description": "the size chart node fetches the chart for ready-to-wear women's sizes instead of the bespoke men's chart"},
    {"input": 2, "mode": "g3", "kind": "context_pollution", "root": ("gather_notes", 1),
     "description": "the notes for the leather choice carry the previous client's evening-glove notes into a driving-glove order"},
    {"input": 3, "mode": "g4", "kind": "off_by_one", "root": ("more_pieces", 6),
     "description": "the cutting loop's router stops one piece early, so the thumb is never cut"},
    {"input": 4, "mode": "g5", "kind": "format_drift", "root": ("ChatOpenAI", 1),
     "description": "the model answers the tracing with the middle finger length in millimetres under a new key, which the parser does not know"},
]

PIECES = ["palm", "back", "fourchette_1", "fourchette_2", "fourchette_3", "gusset", "thumb"]
LEATHER = {"riding": "deerskin", "evening": "kid", "driving": "peccary", "falconry": "elk"}


def task(inp):
    return f"gloves {inp['order']} for {inp['client']}"


def policy(request):
    msgs = request.body["messages"]
    prompt = msgs[-1]["content"]
    inp = next(i for i in INPUTS if i["order"] in prompt)
    if prompt.startswith("Transcribe the tracing"):
        d = {"order": inp["order"], "hand": inp["hand"], "palm_girth": f"{inp['palm_cm']} cm", "middle_length": f"{inp['middle_cm']} cm"}
        if MODE == "g5":
            d.pop("middle_length")
            d["middle_finger_mm"] = int(inp["middle_cm"] * 10)
        return json.dumps(d)
    if prompt.startswith("Choose the leather"):
        sys_notes = " ".join(m["content"] for m in msgs if m["role"] == "system")
        use = prompt.split("use: ")[1].split(";")[0]
        if "evening gloves" in sys_notes:
            use = "evening"
        return json.dumps({"leather": LEATHER[use], "lining": "silk" if use == "evening" else "unlined"})
    return "ok"


class Order(TypedDict, total=False):
    order: dict
    tracing: str
    measures: dict
    chart: dict
    size: str
    cut: Annotated[list, operator.add]
    next_piece: int
    notes: list
    leather: dict
    plan: dict


def build(llm):
    from langchain_core.messages import HumanMessage, SystemMessage
    from langgraph.graph import END, START, StateGraph

    def intake(state: Order) -> dict:
        return {"order": state["order"], "next_piece": 0}

    def read_tracing(state: Order) -> dict:
        o = state["order"]
        msg = llm.invoke([SystemMessage("You transcribe glove tracings into JSON."),
                          HumanMessage(f"Transcribe the tracing of order {o['order']}: {o['hand']} hand, palm {o['palm_cm']} cm, middle {o['middle_cm']} cm")])
        return {"tracing": msg.content}

    def parse_tracing(state: Order) -> dict:
        d = json.loads(state["tracing"])
        palm = d["palm_girth"].split()[0]
        palm_cm = float(int(float(palm))) if MODE == "g1" else float(palm)
        middle = float(d.get("middle_length", "7.0 cm").split()[0])
        return {"measures": {"hand": d["hand"], "palm_cm": palm_cm, "middle_cm": middle}}

    def size_chart(state: Order) -> dict:
        bespoke = {"sizes": [{"size": str(s / 2), "palm_cm": round(2.54 * s / 2, 1)} for s in range(13, 21)], "chart": "bespoke"}
        if MODE == "g2":
            return {"chart": {"sizes": [{"size": str(s), "palm_cm": round(2.54 * s * 0.85, 1)} for s in (6, 7, 8)], "chart": "ready-to-wear W"}}
        return {"chart": bespoke}

    def pick_size(state: Order) -> dict:
        palm = state["measures"]["palm_cm"]
        best = min(state["chart"]["sizes"], key=lambda r: abs(r["palm_cm"] - palm))
        return {"size": best["size"]}

    def cut_piece(state: Order) -> dict:
        i = state["next_piece"]
        piece = PIECES[i]
        m = state["measures"]
        length = m["middle_cm"] + (1.0 if piece.startswith("fourchette") else 0.0)
        return {"cut": [{"piece": piece, "length_cm": round(length, 1)}], "next_piece": i + 1}

    def more_pieces(state: Order) -> str:
        last = len(PIECES) - 1 if MODE == "g4" else len(PIECES)
        return "cut_piece" if state["next_piece"] < last else "gather_notes"

    def gather_notes(state: Order) -> dict:
        o = state["order"]
        notes = [f"client notes: {o['notes']}"]
        if MODE == "g3" and o["order"] in PRIOR_NOTES:
            notes.append(PRIOR_NOTES[o["order"]])
        return {"notes": notes}

    def choose_leather(state: Order) -> dict:
        o = state["order"]
        msg = llm.invoke([SystemMessage("You choose glove leathers. " + " ".join(state["notes"])),
                          HumanMessage(f"Choose the leather for order {o['order']}; use: {o['use']}; size {state['size']}")])
        return {"leather": json.loads(msg.content)}

    def stitch_plan(state: Order) -> dict:
        return {"plan": {"stitch": "pique" if state["leather"]["leather"] in ("kid", "peccary") else "prix-seam",
                         "pieces": [c["piece"] for c in state["cut"]], "size": state["size"]}}

    def fitting_check(state: Order) -> dict:
        o, plan = state["order"], state["plan"]
        missing = [p for p in PIECES if p not in plan["pieces"]]
        if missing:
            raise ValueError(f"order {o['order']}: pattern incomplete, missing {missing}")
        size_palm = float(plan["size"]) * 2.54
        if abs(size_palm - o["palm_cm"]) > 0.7:
            raise ValueError(f"order {o['order']}: size {plan['size']} ({size_palm:.1f} cm) does not fit palm {o['palm_cm']} cm")
        if abs(state["measures"]["palm_cm"] - o["palm_cm"]) > 0.2:
            raise ValueError(f"order {o['order']}: pattern palm {state['measures']['palm_cm']} cm against traced {o['palm_cm']} cm")
        if abs(state["measures"]["middle_cm"] - o["middle_cm"]) > 0.2:
            raise ValueError(f"order {o['order']}: finger length {state['measures']['middle_cm']} cm against traced {o['middle_cm']} cm")
        if state["leather"]["leather"] != LEATHER[o["use"]]:
            raise ValueError(f"order {o['order']}: {state['leather']['leather']} is not a {o['use']} leather")
        return {}

    g = StateGraph(Order)
    for fn in (intake, read_tracing, parse_tracing, size_chart, pick_size, cut_piece, gather_notes, choose_leather, stitch_plan, fitting_check):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "read_tracing")
    g.add_edge("read_tracing", "parse_tracing")
    g.add_edge("parse_tracing", "size_chart")
    g.add_edge("size_chart", "pick_size")
    g.add_edge("pick_size", "cut_piece")
    g.add_conditional_edges("cut_piece", more_pieces, ["cut_piece", "gather_notes"])
    g.add_edge("gather_notes", "choose_leather")
    g.add_edge("choose_leather", "stitch_plan")
    g.add_edge("stitch_plan", "fitting_check")
    g.add_edge("fitting_check", END)
    return g.compile()


def run(inp, server, tracer):
    from langchain_openai import ChatOpenAI
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    build(llm).invoke({"order": dict(inp)}, config={"callbacks": [tracer], "recursion_limit": 60})
