"""Sign painter's lettering jobs (sdk route): a tool-choosing model loop, a memory book, two sub-agents, a work-order schema check."""
from __future__ import annotations

import json

from openai import OpenAI

import trajdebug

NAME = "sign-lettering"
ROUTE = "sdk"
DOMAIN = "a sign painter's lettering jobs"
SHAPE = "memory recall, model loop choosing tools (with step input=args), layout sub-agent (model, parse, loop over words), materials sub-agent, memory write, schema check"
SWITCH = None

INPUTS = [
    {"job": "SP-11", "client": "Marlow Bakery", "wording": "MARLOW BAKERY", "wall": "east", "style": "block serif", "finish": "enamel"},
    {"job": "SP-12", "client": "Café Rosé", "wording": "CAFÉ ROSÉ & WINE", "wall": "north", "style": "script", "finish": "gold leaf"},
    {"job": "SP-13", "client": "Thwaite Hardware", "wording": "THWAITE HARDWARE", "wall": "fascia", "style": "block sans", "finish": "enamel"},
    {"job": "SP-14", "client": "Pike & Sons", "wording": "PIKE & SONS WORKSHOP", "wall": "south", "style": "block serif", "finish": "gold leaf"},
    {"job": "SP-15", "client": "Quayside Books", "wording": "QUAYSIDE BOOKS", "wall": "west", "style": "block sans", "finish": "silver leaf"},
]
WALLS = {"east": (5200, 700), "north": (3400, 600), "gable": (2400, 900), "fascia": (6400, 650), "south": (7200, 800), "west": (4800, 700)}
BOOK = {
    "Marlow Bakery": ["prefers cream on green", "repainted 2019"],
    "Café Rosé": ["accents must be kept", "awning covers lower 100 mm"],
    "Thwaite Hardware": ["fascia is timber, prime first"],
    "Pike & Sons": ["ampersand in script even on block jobs"],
    "Quayside Books": ["salt air: two coats varnish"],
}
GLYPHS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ&ÉÈ"
LEAF_STOCK = {"gold leaf": 40, "silver leaf": 25, "enamel": 999}
_last_job = {"ticket": None}


def _chat(base_url, model, messages, tools=None):
    client = OpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    kw = {"tools": tools} if tools else {}
    return client.chat.completions.create(model=model, messages=messages, **kw).choices[0].message


def brain(request):
    from trajdebug.testing import Reply, tool_call
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    if system.startswith("You are the shop foreman"):
        ticket = json.loads(msgs[1]["content"].split("TICKET:", 1)[1].split("\n", 1)[0])
        done = [m for m in msgs if m["role"] == "tool"]
        notes = msgs[1]["content"]
        if len(done) == 0:
            wall = ticket["wall"]
            if SWITCH == "wall-arg" and ticket["job"] == "SP-13":
                wall = "gable"
            return Reply(tool_calls=(tool_call("survey_wall", {"site": ticket["client"], "wall": wall}),))
        if len(done) == 1:
            return Reply(tool_calls=(tool_call("font_catalog", {"style": ticket["style"]}),))
        finish = ticket["finish"]
        if "previous job" in notes and "white gold" in notes:
            finish = "white gold leaf"
        return json.dumps({"ready": True, "finish": finish})
    if system.startswith("You lay out lettering"):
        brief = json.loads(msgs[1]["content"])
        w, h = brief["wall_mm"]
        height = int(min(h * 0.55, 300))
        if SWITCH == "height" and brief["wording"] == "QUAYSIDE BOOKS":
            height = 610
        lines = [brief["wording"]]
        return "Layout:\n" + json.dumps({"lines": lines, "letter_height_mm": height, "margin_mm": 120})
    return "?"


@trajdebug.step(kind="input")
def job_ticket(ticket: dict) -> dict:
    return dict(ticket)


@trajdebug.step(kind="tool")
def recall_client_notes(client: str) -> list[str]:
    notes = list(BOOK[client])
    if SWITCH == "carry-notes" and _last_job["ticket"] is not None:
        prev = _last_job["ticket"]
        notes.append(f"previous job {prev['job']} for {prev['client']}: finish white gold leaf, {prev['wording']}")
    return notes


@trajdebug.step(kind="llm")
def foreman(messages: list[dict], model: str, base_url: str, tools: list[dict]) -> dict:
    m = _chat(base_url, model, messages, tools)
    calls = [{"id": c.id, "name": c.function.name, "args": json.loads(c.function.arguments)} for c in (m.tool_calls or [])]
    return {"content": m.content, "calls": calls, "message": m.model_dump(exclude_none=True)}


def survey_wall(site: str, wall: str) -> dict:
    width, height = WALLS[wall]
    return {"site": site, "wall": wall, "width_mm": width, "height_mm": height, "surface": "rendered brick"}


def font_catalog(style: str) -> dict:
    widths = {g: (0.62 if g in "MW" else 0.38 if g == "I" else 0.55) for g in GLYPHS}
    if style == "script":
        widths = {g: round(v * 1.1, 3) for g, v in widths.items()}
    if SWITCH == "catalog-page":
        widths = dict(list(widths.items())[:20])
    return {"style": style, "space": 0.35, "widths": widths}


TOOLS = {"survey_wall": survey_wall, "font_catalog": font_catalog}
TOOL_SPECS = [
    {"type": "function", "function": {"name": "survey_wall", "parameters": {"type": "object", "properties": {
        "site": {"type": "string"}, "wall": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "font_catalog", "parameters": {"type": "object", "properties": {
        "style": {"type": "string"}}}}},
]


@trajdebug.step(kind="llm")
def propose_layout(brief: dict, model: str, base_url: str) -> str:
    return _chat(base_url, model, [
        {"role": "system", "content": "You lay out lettering for painted signs. Answer with JSON."},
        {"role": "user", "content": json.dumps(brief)},
    ]).content


@trajdebug.step(kind="parse")
def read_layout(text: str) -> dict:
    layout = json.loads(text.split("Layout:", 1)[1])
    if SWITCH == "ascii":
        layout["lines"] = [l.encode("ascii", "ignore").decode().replace("  ", " ") for l in layout["lines"]]
    return layout


@trajdebug.step(kind="tool")
def measure_word(word: str, letter_height_mm: int, widths: dict, space: float, room_mm: float) -> dict:
    width = sum(widths[c] for c in word) * letter_height_mm + space * letter_height_mm
    if width > room_mm:
        raise ValueError(f"'{word}' needs {width:.0f} mm at {letter_height_mm} mm letters; the wall leaves {room_mm:.0f} mm")
    return {"word": word, "width_mm": round(width, 1)}


@trajdebug.step(kind="tool")
def paint_stock(finish: str, area_m2: float) -> dict:
    return {"finish": finish, "tins": max(1, round(area_m2 * 2)), "varnish_l": round(area_m2 * 0.3, 2)}


@trajdebug.step(kind="tool")
def leaf_supplier(finish: str, books: int) -> dict:
    if finish not in LEAF_STOCK:
        raise KeyError(f"supplier has no '{finish}' on its list")
    return {"finish": finish, "books": books, "in_stock": LEAF_STOCK[finish] >= books}


@trajdebug.step(kind="state")
def remember_job(ticket: dict, order: dict) -> None:
    BOOK.setdefault(ticket["client"], [])
    trajdebug.current_run().state["order"] = order


@trajdebug.step(kind="condition")
def validate_work_order(ticket: dict) -> dict:
    order = trajdebug.current_run().state["order"]
    schema = {"job": str, "wording": str, "letter_height_mm": int, "width_mm": float, "finish": str, "materials": dict}
    for key, typ in schema.items():
        if not isinstance(order.get(key), typ):
            raise TypeError(f"work order {ticket['job']}: '{key}' must be {typ.__name__}, got {order.get(key)!r}")
    if order["wording"] != ticket["wording"]:
        raise ValueError(f"work order {ticket['job']}: wording '{order['wording']}' is not the ticket's '{ticket['wording']}'")
    return order


def record(inp, path, server):
    with trajdebug.run(NAME, task=f"letter {inp['job']} for {inp['client']}", path=path):
        ticket = job_ticket(inp)
        notes = recall_client_notes(ticket["client"])
        messages = [
            {"role": "system", "content": "You are the shop foreman. Gather the wall survey and the lettering style."},
            {"role": "user", "content": "TICKET:" + json.dumps(ticket) + "\nNotes: " + "; ".join(notes)},
        ]
        facts: dict = {}
        while True:
            turn = foreman(messages, server.model, server.base_url, TOOL_SPECS)
            if not turn["calls"]:
                decision = json.loads(turn["content"])
                break
            messages.append(turn["message"])
            for call in turn["calls"]:
                with trajdebug.step(call["name"], kind="retrieval" if call["name"] == "font_catalog" else "tool",
                                    input=call["args"]) as s:
                    s.output = facts[call["name"]] = TOOLS[call["name"]](**call["args"])
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(s.output)})
        wall = facts["survey_wall"]
        catalog = facts["font_catalog"]
        with trajdebug.step("layout_agent", kind="agent") as la:
            brief = {"wording": ticket["wording"], "style": ticket["style"], "wall_mm": [wall["width_mm"], wall["height_mm"]]}
            text = propose_layout(brief, server.model, server.base_url)
            layout = read_layout(text)
            room = wall["width_mm"] - 2 * layout["margin_mm"]
            words = []
            for line in layout["lines"]:
                for word in line.split(" "):
                    m = measure_word(word, layout["letter_height_mm"], catalog["widths"], catalog["space"], room)
                    words.append(m)
                    room -= m["width_mm"]
            la.output = {"layout": layout, "words": words}
        with trajdebug.step("materials_agent", kind="agent") as ma:
            width = round(sum(w["width_mm"] for w in words), 1)
            area = round(width * layout["letter_height_mm"] / 1e6, 3)
            paint = paint_stock("enamel", area)
            mats = {"paint": paint}
            if "leaf" in decision["finish"]:
                mats["leaf"] = leaf_supplier(decision["finish"], max(1, int(area * 25)))
            ma.output = mats
        order = {"job": ticket["job"], "wording": " ".join(layout["lines"]), "letter_height_mm": layout["letter_height_mm"],
                 "width_mm": width, "finish": decision["finish"], "materials": mats}
        remember_job(ticket, order)
        validate_work_order(ticket)
        _last_job["ticket"] = ticket


CASES = [
    {"id": "sign-accents-dropped", "input": 1, "switch": "ascii", "kind": "lossy_parsing",
     "root": ("read_layout", 1), "failure": ("validate_work_order", 1),
     "description": "Reading the layout keeps only ASCII, so CAFÉ ROSÉ & WINE loses its accented letters before it is measured and ordered."},
    {"id": "sign-letter-height", "input": 4, "switch": "height", "kind": "hallucinated_value",
     "root": ("propose_layout", 1), "failure": ("measure_word", 2),
     "description": "The layout model sets 610 mm letters, a height no survey or brief gave, on a 700 mm wall."},
    {"id": "sign-previous-notes", "input": 3, "switch": "carry-notes", "kind": "context_pollution",
     "root": ("recall_client_notes", 1), "failure": ("leaf_supplier", 1),
     "description": "The client notes for Pike & Sons carry a line about the previous job's white gold leaf, which the foreman model then takes as this job's finish."},
    {"id": "sign-catalog-cut", "input": 0, "switch": "catalog-page", "kind": "truncated_result",
     "root": ("font_catalog", 1), "failure": ("measure_word", 1),
     "description": "The font catalog returns only its first 20 glyph widths (A to T), so words with later letters cannot be measured."},
    {"id": "sign-survey-wall", "input": 2, "switch": "wall-arg", "kind": "wrong_tool_args",
     "root": ("foreman", 1), "failure": ("measure_word", 2),
     "description": "The foreman model asks for the survey of the 2400 mm gable wall instead of the 6400 mm fascia named on the ticket."},
]
