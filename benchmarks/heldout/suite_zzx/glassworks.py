"""Glass-blowing studio commissions (LangGraph route).

A StateGraph: the model reads the commission into a brief, a catalogue retriever resolves the colours, a loop prices
each piece (weight tool, furnace rate tool, model estimate of bench hours), a kiln sub-graph (slots tool, model pick,
slot parser) books annealing, then the quote is assembled and validated against the studio's rules.
"""
import operator
from datetime import date
from typing import Annotated, TypedDict

from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

import kit
from common import chat_brain
from lg_common import ask, ask_json

NAME = "glass-commissions"
ROUTE = "langgraph"
DOMAIN = "glass-blowing studio commissions"
SHAPE = "intake (llm) -> notes -> colour retriever -> loop per piece: weight tool, furnace tool, hours (llm) -> kiln sub-graph (slots tool, pick llm, parse) -> assemble -> validate"
EXT = "jsonl"

CATALOGUE = [
    {"colour": "cobalt blue", "code": "GB-112", "coe": 96}, {"colour": "copper blue", "code": "GB-118", "coe": 90},
    {"colour": "amber", "code": "GB-201", "coe": 96}, {"colour": "amber gold", "code": "GB-207", "coe": 90},
    {"colour": "ruby", "code": "GB-305", "coe": 96}, {"colour": "ruby pink", "code": "GB-309", "coe": 90},
    {"colour": "sea green", "code": "GB-410", "coe": 96}, {"colour": "opal white", "code": "GB-502", "coe": 96},
    {"colour": "smoke grey", "code": "GB-611", "coe": 96},
]
RATE = {"vase": 42.0, "bowl": 38.0, "pendant": 55.0, "tumbler": 30.0, "platter": 40.0}
KILN = ["2026-06-03", "2026-06-05", "2026-06-09", "2026-06-12", "2026-06-16", "2026-06-19"]
OTHER_THREAD = "Previous commission (Hallam Bistro): deadline 2026-06-19, 12 tumblers in smoke grey."

INPUTS = {
    "cm-701": {"client": "Northlight Hotel", "deadline": "2026-06-10", "colours": ["cobalt blue", "opal white"],
               "pieces": [["pendant", 2.4], ["pendant", 2.4], ["vase", 3.1], ["bowl", 1.8]]},
    "cm-702": {"client": "Aster Gallery", "deadline": "2026-06-13", "colours": ["amber", "smoke grey"],
               "pieces": [["vase", 4.2], ["platter", 2.9], ["bowl", 2.2], ["tumbler", 0.6]]},
    "cm-703": {"client": "Fenwick & Co", "deadline": "2026-06-06", "colours": ["ruby", "sea green"],
               "pieces": [["bowl", 1.5], ["bowl", 1.5], ["vase", 2.7], ["platter", 3.3]]},
    "cm-704": {"client": "Marlow House", "deadline": "2026-06-17", "colours": ["sea green", "amber"],
               "pieces": [["pendant", 1.9], ["tumbler", 0.5], ["tumbler", 0.5], ["vase", 3.6]]},
    "cm-705": {"client": "Quayside Studio", "deadline": "2026-06-10", "colours": ["opal white", "ruby"],
               "pieces": [["platter", 3.0], ["vase", 2.2], ["pendant", 2.1], ["bowl", 1.7]]},
    "cm-706": {"client": "Orchard Dental", "deadline": "2026-06-13", "colours": ["smoke grey", "cobalt blue"],
               "pieces": [["vase", 2.8], ["bowl", 2.0], ["platter", 3.4], ["tumbler", 0.7]]},
}

CASES = [
    dict(id="zzx-glass-01", input="cm-701", kind="wrong_retrieval", root=("colour_catalogue", 1),
         failure=("validate_quote", 1),
         line="the colour retriever matches 'cobalt blue' to copper blue, a glass of another expansion"),
    dict(id="zzx-glass-02", input="cm-702", kind="unit_error", root=("ChatOpenAI", 5),
         failure=("validate_quote", 1), line="the model gives the tumbler's bench time in minutes under the hours key"),
    dict(id="zzx-glass-03", input="cm-703", kind="context_pollution", root=("gather_notes", 1),
         failure=("validate_quote", 1),
         line="the notes node pulls another client's thread into the kiln model's context"),
    dict(id="zzx-glass-04", input="cm-705", kind="format_drift", root=("ChatOpenAI", 6),
         failure=("validate_quote", 1),
         line="the kiln model writes the slot as month/day/year and the slot parser reads it as day/month"),
    dict(id="zzx-glass-05", input="cm-706", kind="truncated_result", root=("kiln_slots", 1),
         failure=("validate_quote", 1), line="the kiln slot tool returns only the first page of slots"),
]


def brain():
    def brief(p):
        return {"client": p["client"], "deadline": p["deadline"], "colours": p["colours"],
                "pieces": [{"type": t, "kg": kg} for t, kg in p["pieces"]]}

    def hours(p):
        h = round(1.5 + p["kg"] * 1.2 + (1.0 if p["type"] == "pendant" else 0.0), 1)
        if kit.on("zzx-glass-02") and p["type"] == "tumbler":
            return {"type": p["type"], "hours": round(h * 60)}
        return {"type": p["type"], "hours": h}

    def kiln(p):
        deadline = p["deadline"]
        for note in p.get("notes", []):
            if "deadline" in note:
                deadline = note.split("deadline ")[1][:10]
        ok = [s for s in p["slots"] if s <= deadline]
        slot = ok[-1] if ok else p["slots"][-1]
        if kit.on("zzx-glass-04"):
            y, m, d = slot.split("-")
            return {"slot": f"{m}/{d}/{y}"}
        return {"slot": slot}

    return chat_brain({"brief": brief, "hours": hours, "kiln": kiln})


@tool
def colour_catalogue(colour: str) -> dict:
    """Find a colour in the studio's glass catalogue."""
    words = colour.split()
    if kit.on("zzx-glass-01"):
        hits = [c for c in CATALOGUE if c["colour"].split()[-1] == words[-1] and c["colour"] != colour]
    else:
        hits = [c for c in CATALOGUE if c["colour"] == colour]
    return (hits or [c for c in CATALOGUE if c["colour"] == colour])[0]


@tool
def glass_weight(piece_type: str, kg: float) -> dict:
    """Gather weight of glass for one piece, including 15% working loss."""
    return {"type": piece_type, "gather_kg": round(kg * 1.15, 2)}


@tool
def furnace_rate(piece_type: str) -> dict:
    """Hourly bench rate of the hot shop for a piece type, EUR."""
    return {"type": piece_type, "eur_per_hour": RATE[piece_type]}


@tool
def kiln_slots(after: str) -> list:
    """Free annealing kiln slots from a date on."""
    slots = [s for s in KILN if s >= after]
    return slots[:2] if kit.on("zzx-glass-05") else slots


class State(TypedDict, total=False):
    request: dict
    brief: dict
    notes: list
    colours: list
    idx: int
    lines: Annotated[list, operator.add]
    slot_text: str
    slot: str
    quote: dict


class Kiln(TypedDict, total=False):
    brief: dict
    notes: list
    slots: list
    slot_text: str
    slot: str


SYSTEM = "You are the studio manager of a glass-blowing studio. Answer with JSON only."


def build(server):
    def intake(s):
        r = s["request"]
        return {"brief": ask_json(server, SYSTEM, "brief", "Read this commission into a brief.", r), "idx": 0}

    def gather_notes(s):
        notes = [f"Client {s['brief']['client']}: deadline {s['brief']['deadline']}"]
        if kit.on("zzx-glass-03"):
            notes.append(OTHER_THREAD)
        return {"notes": notes}

    def resolve_colours(s):
        return {"colours": [colour_catalogue.invoke({"colour": c}) for c in s["brief"]["colours"]]}

    def price_piece(s):
        piece = s["brief"]["pieces"][s["idx"]]
        w = glass_weight.invoke({"piece_type": piece["type"], "kg": piece["kg"]})
        rate = furnace_rate.invoke({"piece_type": piece["type"]})
        est = ask_json(server, SYSTEM, "hours", "Estimate the bench hours of this piece.", piece)
        line = {"type": piece["type"], "gather_kg": w["gather_kg"], "hours": est["hours"],
                "labour_eur": round(est["hours"] * rate["eur_per_hour"], 2)}
        return {"lines": [line], "idx": s["idx"] + 1}

    def more(s):
        return "price_piece" if s["idx"] < len(s["brief"]["pieces"]) else "gather_notes"

    def find_slots(k):
        return {"slots": kiln_slots.invoke({"after": "2026-06-01"})}

    def pick_slot(k):
        payload = {"deadline": k["brief"]["deadline"], "slots": k["slots"]}
        if len(k["notes"]) > 1:
            payload["notes"] = k["notes"]
        return {"slot_text": ask_json(server, SYSTEM, "kiln", "Pick the annealing slot.", payload)["slot"]}

    def parse_slot(k):
        t = k["slot_text"]
        if "/" in t:
            a, b, y = t.split("/")
            t = date(int(y), int(b), int(a)).isoformat() if int(b) <= 12 else date(int(y), int(a), int(b)).isoformat()
        return {"slot": t}

    kg = StateGraph(Kiln)
    kg.add_node("find_slots", find_slots)
    kg.add_node("pick_slot", pick_slot)
    kg.add_node("parse_slot", parse_slot)
    kg.add_edge(START, "find_slots")
    kg.add_edge("find_slots", "pick_slot")
    kg.add_edge("pick_slot", "parse_slot")
    kg.add_edge("parse_slot", END)
    kiln = kg.compile()

    def assemble(s):
        lines = s["lines"]
        return {"quote": {"client": s["brief"]["client"], "lines": lines, "colours": s["colours"],
                          "anneal": s["slot"], "deadline": s["brief"]["deadline"],
                          "total_eur": round(sum(l["labour_eur"] for l in lines), 2)}}

    def validate_quote(s):
        q = s["quote"]
        coes = {c["coe"] for c in q["colours"]}
        if coes != {96}:
            raise ValueError(f"colours {[c['code'] for c in q['colours']]} mix expansion {sorted(coes)}; "
                             "the clear base is COE 96")
        for l in q["lines"]:
            if l["hours"] > 24:
                raise ValueError(f"{l['type']} quoted at {l['hours']} bench hours; one piece is at most 24 h")
        if q["anneal"] > q["deadline"]:
            raise ValueError(f"annealing slot {q['anneal']} is after the deadline {q['deadline']}")
        if q["anneal"] != max(s2 for s2 in KILN if s2 <= q["deadline"]):
            raise ValueError(f"annealing slot {q['anneal']} leaves the later free slot before {q['deadline']} unused")
        return {}

    g = StateGraph(State)
    for n, f in [("intake", intake), ("gather_notes", gather_notes), ("resolve_colours", resolve_colours),
                 ("price_piece", price_piece), ("kiln", kiln), ("assemble", assemble),
                 ("validate_quote", validate_quote)]:
        g.add_node(n, f)
    g.add_edge(START, "intake")
    g.add_edge("intake", "price_piece")
    g.add_conditional_edges("price_piece", more, ["price_piece", "gather_notes"])
    g.add_edge("gather_notes", "resolve_colours")
    g.add_edge("resolve_colours", "kiln")
    g.add_edge("kiln", "assemble")
    g.add_edge("assemble", "validate_quote")
    g.add_edge("validate_quote", END)
    return g.compile()


def record(cm_id, path, server):
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=path, name=NAME, task=f"quote commission {cm_id}")
    build(server).invoke({"request": INPUTS[cm_id], "lines": []}, config={"callbacks": [tracer], "recursion_limit": 60})
