"""Sign writer: plans and prices one sign-writing job (LangGraph route, ChatOpenAI on the fake server)."""

from __future__ import annotations

import json
import re
from typing import TypedDict

from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

import kit
from _common import chat_model, dumps, last_user, run_graph, system_of

NAME = "brushline-sign-jobs"
ROUTE = "langgraph"
DOMAIN = "sign writer: sign jobs"
SHAPE = ("intake node (model + parse), plan node (model), task loop driven by a routing function: survey "
         "(tool), board sizing, shop history, design (model) + layout parsing, materials sub-graph (area, "
         "finish router, pricing tool), consent (tools), quote (model), validator node")
EXT = "jsonl"

JOBS = [
    dict(job="SW-301", client="Hollis & Daughter Bakers", address="14 Bridge Street", sign="fascia", finish="painted",
         wording="HOLLIS & DAUGHTER - BAKERS SINCE 1921", colours=["BS 381C 227 deep cream", "BS 381C 412 brown"]),
    dict(job="SW-302", client="Pell Optics", address="3 Market Row", sign="window", finish="vinyl",
         wording="PELL OPTICS - EYE TESTS", colours=["white"]),
    dict(job="SW-303", client="The Copper Kettle", address="22 Bridge Street", sign="fascia", finish="vinyl",
         wording="THE COPPER KETTLE TEA ROOM", colours=["copper", "black"]),
    dict(job="SW-304", client="Amberley Books", address="9 Castle Hill", sign="fascia", finish="painted",
         wording="AMBERLEY BOOKS", colours=["BS 381C 637 green", "gold leaf"]),
    dict(job="SW-305", client="Fenwick Cycles", address="41 Station Road", sign="fascia", finish="painted",
         wording="FENWICK CYCLES - REPAIRS & HIRE", colours=["red", "white"]),
]
CONSERVATION = {"14 Bridge Street", "22 Bridge Street", "9 Castle Hill"}
SURVEYS = {"14 Bridge Street": (212, 22), "3 Market Row": (64, 30), "22 Bridge Street": (180, 20),
           "9 Castle Hill": (150, 18), "41 Station Road": (240, 24)}  # width, height in inches
HISTORY = {
    "14 Bridge Street": ["2019: fascia repainted, approved wording: HOLLIS & DAUGHTER - BAKERS SINCE 1921"],
    "12 Bridge Street": ["2024: fascia quote, approved wording: BRIDGE STREET BARBERS"],
    "3 Market Row": [],
    "22 Bridge Street": ["2021: hanging sign, approved wording: THE COPPER KETTLE TEA ROOM"],
    "20 Bridge Street": ["2025: window vinyl, approved wording: KETTLEWELL ESTATE AGENTS"],
    "9 Castle Hill": ["2018: gilded fascia, approved wording: AMBERLEY BOOKS"],
    "7 Castle Hill": ["2023: fascia, approved wording: CASTLE HILL DELI"],
    "41 Station Road": ["2022: fascia, approved wording: FENWICK CYCLES - REPAIRS & HIRE"],
}
PRICES = {"vinyl film": 38.0, "application tape": 6.0, "enamel": 22.0, "primer": 14.0, "gold leaf": 95.0,
          "board": 31.0}
LABOUR = {"painted": 420.0, "vinyl": 260.0}

INPUTS = [{"job": j["job"], "request": "Job %s for %s at %s: new %s sign, %s finish. Wording: %s. Colours: %s.%s" % (
    j["job"], j["client"], j["address"], j["sign"], j["finish"], j["wording"], ", ".join(j["colours"]),
    " The shop is in the Old Town conservation area." if j["address"] in CONSERVATION else "")} for j in JOBS]
BY_JOB = {j["job"]: j for j in JOBS}

C_UNIT, C_ROUTE, C_DRIFT, C_PLAN, C_POLL = "zzq-sgn-1", "zzq-sgn-2", "zzq-sgn-3", "zzq-sgn-4", "zzq-sgn-5"
CASES = [
    dict(id=C_UNIT, input=4, kind="unit_error", root=("estimate_area", 1, "other"), failure=("validate", 1),
         description="estimate_area divides square millimetres by 10,000 instead of 1,000,000, so the board "
                     "area and the paint ordered are a hundred times too large"),
    dict(id=C_ROUTE, input=2, kind="wrong_routing", root=("choose_finish", 1, "other"),
         failure=("validate", 1),
         description="choose_finish routes on the sign type instead of the finish, sending a vinyl fascia to "
                     "the paint pricing branch"),
    dict(id=C_DRIFT, input=1, kind="format_drift", root=("ChatOpenAI", 3, "llm"), failure=("validate", 1),
         description="the design model gives cap heights as inch strings ('9in') instead of millimetre numbers, "
                     "and the layout parser reads them as 9 mm"),
    dict(id=C_PLAN, input=3, kind="plan_error", root=("ChatOpenAI", 2, "llm"), failure=("validate", 1),
         description="the planning model leaves the consent task out of the plan for a fascia in the "
                     "conservation area"),
    dict(id=C_POLL, input=0, kind="context_pollution", root=("gather_context", 1, "other"),
         failure=("validate", 1),
         description="gather_context adds the job notes of every shop on the same street to the design context, "
                     "and the design model takes another shop's approved wording"),
]


@tool
def site_survey(address: str) -> dict:
    """The site survey of a shop front: fascia width and height in inches."""
    w, h = SURVEYS[address]
    return {"address": address, "width_in": w, "height_in": h, "surveyed": "2026-02-20"}


@tool
def price_materials(items: list) -> dict:
    """Prices a list of materials: each item is {name, qty}."""
    lines = [{"name": i["name"], "qty": i["qty"], "cost": round(PRICES[i["name"]] * i["qty"], 2)} for i in items]
    return {"lines": lines, "total": round(sum(l["cost"] for l in lines), 2)}


@tool
def check_conservation_area(address: str) -> dict:
    """Whether an address lies in a conservation area."""
    return {"address": address, "conservation_area": address in CONSERVATION}


@tool
def find_consent(address: str) -> dict:
    """The council's advertisement consent record for an address."""
    return {"address": address, "consent_ref": "ADV/2026/%04d" % (sum(map(ord, address)) % 9000)}


class S(TypedDict, total=False):
    request: dict
    spec: dict
    plan: list
    todo: list
    survey: dict
    board: dict
    notes: list
    design_text: str
    layout: dict
    materials: dict
    consent: dict
    quote: dict
    result: dict


class M(TypedDict, total=False):
    spec: dict
    board: dict
    area: dict
    materials: dict


def build(llm):
    def intake(s: S) -> dict:
        msg = llm.invoke([("system", "You read sign-writing job requests. Answer JSON: job, client, address, sign, "
                                     "finish, wording, colours, conservation_area."),
                          ("user", s["request"]["request"])])
        return {"spec": json.loads(msg.content)}

    def plan_job(s: S) -> dict:
        msg = llm.invoke([("system", "You plan a sign-writing job. Answer JSON {\"tasks\": [...]} from: survey, "
                                     "size_board, design, materials, consent, quote."),
                          ("user", dumps(s["spec"]))])
        tasks = json.loads(msg.content)["tasks"]
        return {"plan": tasks, "todo": tasks}

    def next_task(s: S) -> str:
        return s["todo"][0] if s["todo"] else "validate"

    def done(s: S) -> list:
        return s["todo"][1:]

    def survey(s: S) -> dict:
        out = site_survey.invoke({"address": s["spec"]["address"]})
        return {"survey": out, "todo": done(s)}

    def size_board(s: S) -> dict:
        w, h = s["survey"]["width_in"], s["survey"]["height_in"]
        return {"board": {"width_mm": round(w * 25.4 - 20), "height_mm": round(h * 25.4 - 20)}, "todo": done(s)}

    def gather_context(s: S) -> dict:
        address = s["spec"]["address"]
        notes = list(HISTORY.get(address, []))
        if kit.on(C_POLL):
            street = address.split(" ", 1)[1]
            notes += [n for a, ns in HISTORY.items() if a != address and a.split(" ", 1)[1] == street for n in ns]
        return {"notes": notes}

    def design(s: S) -> dict:
        msg = llm.invoke([("system", "You design sign layouts. Answer JSON {\"lines\": [{\"text\", \"cap_height_mm\"}], "
                                     "\"colours\": [...]}; use the approved wording from the shop's notes."),
                          ("user", dumps({"spec": s["spec"], "board": s["board"], "notes": s["notes"]}))])
        return {"design_text": msg.content}

    def parse_layout(s: S) -> dict:
        data = json.loads(s["design_text"])
        lines = []
        for ln in data["lines"]:
            h = ln.get("cap_height_mm", ln.get("cap_height"))
            lines.append({"text": ln["text"], "cap_height_mm": int(re.sub(r"[^\d]", "", str(h)))})
        return {"layout": {"lines": lines, "colours": data["colours"]}, "todo": done(s)}

    def estimate_area(m: M) -> dict:
        b = m["board"]
        area = b["width_mm"] * b["height_mm"] / (1e4 if kit.on(C_UNIT) else 1e6)
        return {"area": {"board_m2": round(area, 2)}}

    def choose_finish(m: M) -> str:
        if kit.on(C_ROUTE):
            return "vinyl_quote" if m["spec"]["sign"] == "window" else "paint_quote"
        return "vinyl_quote" if m["spec"]["finish"] == "vinyl" else "paint_quote"

    def vinyl_quote(m: M) -> dict:
        a = m["area"]["board_m2"]
        return {"materials": price_materials.invoke({"items": [
            {"name": "vinyl film", "qty": round(a * 1.15, 2)}, {"name": "application tape", "qty": round(a, 2)}]})}

    def paint_quote(m: M) -> dict:
        a = m["area"]["board_m2"]
        items = [{"name": "board", "qty": round(a, 2)}, {"name": "primer", "qty": round(a * 0.2, 2)},
                 {"name": "enamel", "qty": round(a * 0.3, 2)}]
        if "gold leaf" in m["spec"]["colours"]:
            items.append({"name": "gold leaf", "qty": 1})
        return {"materials": price_materials.invoke({"items": items})}

    mg = StateGraph(M)
    mg.add_node("estimate_area", estimate_area)
    mg.add_node("vinyl_quote", vinyl_quote)
    mg.add_node("paint_quote", paint_quote)
    mg.add_edge(START, "estimate_area")
    mg.add_conditional_edges("estimate_area", choose_finish, ["vinyl_quote", "paint_quote"])
    mg.add_edge("vinyl_quote", END)
    mg.add_edge("paint_quote", END)
    materials_graph = mg.compile()

    def materials(s: S) -> dict:
        out = materials_graph.invoke({"spec": s["spec"], "board": s["board"]})
        return {"materials": dict(out["materials"], area_m2=out["area"]["board_m2"]), "todo": done(s)}

    def consent(s: S) -> dict:
        area = check_conservation_area.invoke({"address": s["spec"]["address"]})
        ref = find_consent.invoke({"address": s["spec"]["address"]}) if area["conservation_area"] else None
        return {"consent": {"needed": area["conservation_area"], "ref": ref and ref["consent_ref"]}, "todo": done(s)}

    def quote(s: S) -> dict:
        msg = llm.invoke([("system", "You write the customer's quote for a sign job: materials, labour and total in "
                                     "GBP, one line each."),
                          ("user", dumps({"job": s["spec"]["job"], "materials": s["materials"]["total"],
                                          "labour": LABOUR[s["spec"]["finish"]]}))])
        amounts = dict(re.findall(r"(materials|labour|total): GBP (\d+(?:\.\d+)?)", msg.content))
        return {"quote": {k: float(v) for k, v in amounts.items()}, "todo": done(s)}

    def validate(s: S) -> dict:
        req = s["request"]["request"]
        wording = req.split("Wording: ")[1].split(". Colours")[0]
        address = req.split(" at ")[1].split(":")[0]
        finish = "vinyl" if "vinyl finish" in req else "painted"
        text = " ".join(l["text"] for l in s.get("layout", {}).get("lines", []))
        if text != wording:
            raise ValueError("layout reads %r, the client's wording is %r" % (text, wording))
        for l in s["layout"]["lines"]:
            if l["cap_height_mm"] < 75:
                raise ValueError("line %r has a cap height of %d mm, under the 75 mm minimum for shop signs"
                                 % (l["text"], l["cap_height_mm"]))
        names = {l["name"] for l in s["materials"]["lines"]}
        if finish == "vinyl" and "vinyl film" not in names:
            raise ValueError("vinyl finish priced with %s and no vinyl film" % ", ".join(sorted(names)))
        board_m2 = s["board"]["width_mm"] * s["board"]["height_mm"] / 1e6
        if abs(s["materials"]["area_m2"] - board_m2) > 0.1 * board_m2:
            raise ValueError("materials priced for %.2f m2, the board is %.2f m2" % (s["materials"]["area_m2"], board_m2))
        if address in CONSERVATION and not (s.get("consent") or {}).get("ref"):
            raise ValueError("%s is in the conservation area and job %s has no consent reference"
                             % (address, s["request"]["job"]))
        q = s["quote"]
        if abs(q["total"] - s["materials"]["total"] - LABOUR[finish]) > 0.01:
            raise ValueError("quote total GBP %.2f, materials GBP %.2f + labour GBP %.2f"
                             % (q["total"], s["materials"]["total"], LABOUR[finish]))
        return {"result": {"ok": True, "total": q["total"]}}

    g = StateGraph(S)
    for name, fn in [("intake", intake), ("plan_job", plan_job), ("survey", survey), ("size_board", size_board),
                     ("gather_context", gather_context), ("design", design), ("parse_layout", parse_layout),
                     ("materials", materials), ("consent", consent), ("quote", quote), ("validate", validate)]:
        g.add_node(name, fn)
    targets = ["survey", "size_board", "gather_context", "materials", "consent", "quote", "validate"]
    g.add_edge(START, "intake")
    g.add_edge("intake", "plan_job")

    def route(s: S) -> str:
        t = next_task(s)
        return "gather_context" if t == "design" else t

    route.__name__ = "next_task"
    for n in ("plan_job", "survey", "size_board", "parse_layout", "materials", "consent", "quote"):
        g.add_conditional_edges(n, route, targets)
    g.add_edge("gather_context", "design")
    g.add_edge("design", "parse_layout")
    g.add_edge("validate", END)
    return g.compile()


def brain(request):
    system = system_of(request)
    user = last_user(request)
    if system.startswith("You read sign-writing"):
        j = BY_JOB[re.search(r"SW-\d+", user).group(0)]
        return json.dumps({"job": j["job"], "client": j["client"], "address": j["address"], "sign": j["sign"],
                           "finish": j["finish"], "wording": j["wording"], "colours": j["colours"],
                           "conservation_area": "conservation area" in user})
    if system.startswith("You plan a sign-writing"):
        spec = json.loads(user)
        tasks = ["survey", "size_board", "design", "materials"]
        if spec["conservation_area"] and not kit.on(C_PLAN):
            tasks.append("consent")
        return json.dumps({"tasks": tasks + ["quote"]})
    if system.startswith("You design sign layouts"):
        data = json.loads(user)
        wording = data["spec"]["wording"]
        for note in data["notes"]:
            if "approved wording: " in note:
                wording = note.split("approved wording: ")[1]
        parts = [p.strip() for p in wording.split(" - ")]
        texts = [parts[0]] + ["- " + p for p in parts[1:]]
        heights = [min(220, int(data["board"]["height_mm"] * 0.45))] + [120] * (len(parts) - 1)
        if kit.on(C_DRIFT):
            lines = [{"text": t, "cap_height": "%din" % round(h / 25.4)} for t, h in zip(texts, heights)]
        else:
            lines = [{"text": t, "cap_height_mm": h} for t, h in zip(texts, heights)]
        return json.dumps({"lines": lines, "colours": data["spec"]["colours"]})
    if system.startswith("You write the customer's quote"):
        data = json.loads(user)
        return "Quote for %s\nmaterials: GBP %.2f\nlabour: GBP %.2f\ntotal: GBP %.2f" % (
            data["job"], data["materials"], data["labour"], data["materials"] + data["labour"])
    return "I cannot help with that."


def record(server, inp: dict, path: str) -> None:
    server.use(brain)
    graph = build(chat_model(server))
    run_graph(graph, {"request": inp}, path, NAME, "plan and price sign job %s" % inp["job"])
