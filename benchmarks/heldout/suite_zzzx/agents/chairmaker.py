"""Chairmaker's commissions (sdk route): plan from the model, a loop over parts with a price retry, state in run.state."""
from __future__ import annotations

import json

from openai import OpenAI

import trajdebug

NAME = "chair-commissions"
ROUTE = "sdk"
DOMAIN = "a chairmaker's commissions"
SHAPE = "retrieval, model plan, parse, loop over parts (cut, priced with a retry, logged to run.state), quote check"
SWITCH = None

INPUTS = [
    {"ref": "CM-301", "style": "windsor armchair", "timber": "oak", "seat_mm": 460, "client": "Hollis"},
    {"ref": "CM-302", "style": "ladderback side chair", "timber": "ash", "seat_mm": 440, "client": "Brandt"},
    {"ref": "CM-303", "style": "rocking chair", "timber": "walnut", "seat_mm": 480, "client": "Okafor"},
    {"ref": "CM-304", "style": "kitchen stool", "timber": "cherry", "seat_mm": 620, "client": "Lind"},
    {"ref": "CM-305", "style": "windsor settee", "timber": "elm", "seat_mm": 450, "client": "Ferreira"},
]

STYLE_PARTS = {
    "windsor armchair": [("leg", 4), ("stretcher", 3), ("seat", 1), ("spindle", 7), ("arm bow", 1), ("crest rail", 1)],
    "ladderback side chair": [("leg", 4), ("stretcher", 4), ("seat", 1), ("slat", 3)],
    "rocking chair": [("leg", 4), ("rocker", 2), ("stretcher", 2), ("seat", 1), ("spindle", 9), ("crest rail", 1)],
    "kitchen stool": [("leg", 4), ("stretcher", 4), ("seat", 1)],
    "windsor settee": [("leg", 6), ("stretcher", 4), ("seat", 1), ("spindle", 13), ("crest rail", 1)],
}
PRICE_PER_BF = {"oak": 9.5, "ash": 7.0, "walnut": 16.0, "cherry": 12.5, "elm": 8.0}
WOOD_NOTES = {
    "oak": "Riven oak for legs and spindles; kiln-dried quartersawn for the seat.",
    "ash": "Green ash for slats; steam-bend within two days of splitting.",
    "walnut": "Walnut for rockers must be laminated; seat from a single 2-inch slab.",
    "cherry": "Cherry darkens in light; keep offcuts for plugs.",
    "elm": "Elm seat blanks resist splitting; legs in ash or oak allowed.",
}
_yard_calls = {"n": 0}
_previous = {"timber": None}


def brain(request):
    msg = request.body["messages"][-1]["content"]
    job = json.loads(msg.split("COMMISSION:", 1)[1])
    parts = [{"part": p, "count": c} for p, c in STYLE_PARTS[job["style"]]]
    if SWITCH == "plan" and job["style"] == "windsor armchair":
        parts = [p for p in parts if p["part"] != "stretcher"]
    joints = [{"joint": "leg-to-seat", "needs": ["leg", "seat"]}]
    if any(n == "stretcher" for n, _ in STYLE_PARTS[job["style"]]):
        joints.append({"joint": "leg-to-stretcher", "needs": ["leg", "stretcher"]})
    if any(n == "spindle" for n, _ in STYLE_PARTS[job["style"]]):
        joints.append({"joint": "spindle-to-crest", "needs": ["spindle", "crest rail"]})
    return "Cutting plan follows.\n```json\n" + json.dumps({"parts": parts, "joints": joints}) + "\n```"


@trajdebug.step(kind="input")
def take_commission(job: dict) -> dict:
    return dict(job)


@trajdebug.step(kind="retrieval")
def workshop_notes(timber: str) -> list[dict]:
    return [{"doc": f"timber/{timber}", "text": WOOD_NOTES[timber]},
            {"doc": "house/joinery", "text": "Tapered mortise-and-tenon at every leg; wedged through-tenons at the seat."}]


def _client(server):
    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


@trajdebug.step(kind="llm")
def draft_cutting_plan(messages: list[dict], model: str, base_url: str) -> str:
    client = OpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    reply = client.chat.completions.create(model=model, messages=messages)
    return reply.choices[0].message.content


@trajdebug.step(kind="parse")
def read_cutting_plan(text: str) -> dict:
    body = text.split("```json", 1)[1].split("```", 1)[0]
    plan = json.loads(body)
    if SWITCH == "spindles":
        # counts read as ranges of item numbers
        for p in plan["parts"]:
            if p["part"] == "spindle":
                p["count"] = len(range(1, p["count"]))
    return plan


@trajdebug.step(kind="tool")
def cut_part(part: str, timber: str, seat_mm: int, ref: str) -> dict:
    lengths = {"leg": 520, "stretcher": 410, "seat": seat_mm, "spindle": 560, "arm bow": 1350, "crest rail": 620,
               "slat": 400, "rocker": 900}
    length = lengths[part]
    unit = "mm"
    if SWITCH == "seat-cm" and part == "seat" and ref == "CM-304":
        length, unit = length / 10, "mm"
    return {"part": part, "length": length, "unit": unit, "timber": timber}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def timber_yard_price(timber: str, length_mm: float, part: str) -> dict:
    _yard_calls["n"] += 1
    if part == "seat" and _yard_calls["n"] % 2 == 1:
        _yard_calls["n"] += 0
        raise ConnectionError("timber yard price list did not answer")
    if SWITCH == "yard-down" and timber == "walnut" and part == "rocker":
        try:
            raise TimeoutError("price list unavailable for laminated stock")
        except TimeoutError:
            return {"part": part, "board_feet": round(length_mm / 300 * 0.6, 2), "price": 0.0}
    bf = round(length_mm / 300 * (3.0 if part == "seat" else 0.6), 2)
    return {"part": part, "board_feet": bf, "price": round(bf * PRICE_PER_BF[timber], 2)}


@trajdebug.step(kind="state")
def log_part(part: str, cut: dict, price: dict, timber: str) -> None:
    ledger = trajdebug.current_run().state
    species = timber
    if SWITCH == "ledger-species" and part == "seat" and timber == "ash":
        species = _previous["timber"]
    ledger[f"part:{part}"] = {"length_mm": cut["length"], "price": price["price"], "board_feet": price["board_feet"],
                               "species": species}


@trajdebug.step(kind="other")
def total_quote(part_names: list[str], counts: dict) -> dict:
    state = trajdebug.current_run().state
    lines = []
    for p in part_names:
        rec = state[f"part:{p}"]
        lines.append({"part": p, "count": counts[p], "each": rec["price"], "length_mm": rec["length_mm"],
                      "board_feet": rec["board_feet"], "species": rec["species"]})
    materials = round(sum(l["each"] * l["count"] for l in lines), 2)
    board_feet = round(sum(l["board_feet"] * l["count"] for l in lines), 2)
    return {"lines": lines, "materials": materials, "board_feet": board_feet, "labour_hours": 6 + sum(counts.values()) * 0.75}


@trajdebug.step(kind="output")
def check_and_issue_quote(job: dict, plan: dict, quote: dict) -> str:
    have = {l["part"] for l in quote["lines"]}
    for j in plan["joints"]:
        missing = [n for n in j["needs"] if n not in have]
        if missing:
            raise ValueError(f"{job['ref']}: joint {j['joint']} has no {', '.join(missing)} in the cut list")
    for l in quote["lines"]:
        if l["species"] != job["timber"]:
            raise ValueError(f"{job['ref']}: {l['part']} logged in {l['species']}, commission is {job['timber']}")
        if l["part"] == "seat" and l["length_mm"] < job["seat_mm"] - 20:
            raise ValueError(f"{job['ref']}: seat blank {l['length_mm']} mm is under the {job['seat_mm']} mm seat")
    yard_rate = {"oak": 9.5, "ash": 7.0, "walnut": 16.0, "cherry": 12.5, "elm": 8.0}[job["timber"]]
    rate = quote["materials"] / quote["board_feet"]
    if rate < yard_rate - 0.05:
        raise ValueError(f"{job['ref']}: materials {quote['materials']:.2f} for {quote['board_feet']} bf is "
                         f"{rate:.2f} a board foot, under the yard's {yard_rate:.2f} for {job['timber']}")
    spindles = next((l["count"] for l in quote["lines"] if l["part"] == "spindle"), 0)
    holes = {"windsor armchair": 7, "rocking chair": 9, "windsor settee": 13}.get(job["style"], 0)
    if spindles != holes:
        raise ValueError(f"{job['ref']}: {spindles} spindles cut for {holes} crest-rail holes")
    return f"{job['ref']} for {job['client']}: materials {quote['materials']:.2f}, {quote['labour_hours']} h"


def record(inp, path, server):
    _yard_calls["n"] = 0
    with trajdebug.run(NAME, task=f"quote commission {inp['ref']}: {inp['style']} in {inp['timber']}", path=path):
        job = take_commission(inp)
        notes = workshop_notes(job["timber"])
        messages = [
            {"role": "system", "content": "You are the workshop's planner. Answer with a cutting plan as JSON."},
            {"role": "user", "content": "Notes: " + json.dumps(notes) + "\nCOMMISSION:" + json.dumps(job)},
        ]
        text = draft_cutting_plan(messages, server.model, server.base_url)
        plan = read_cutting_plan(text)
        counts = {}
        for p in plan["parts"]:
            cut = cut_part(p["part"], job["timber"], job["seat_mm"], job["ref"])
            price = timber_yard_price(job["timber"], cut["length"], p["part"])
            log_part(p["part"], cut, price, job["timber"])
            counts[p["part"]] = p["count"]
        quote = total_quote([p["part"] for p in plan["parts"]], counts)
        _previous["timber"] = job["timber"]
        check_and_issue_quote(job, plan, quote)


CASES = [
    {"id": "chair-plan-no-stretchers", "input": 0, "switch": "plan", "kind": "plan_error",
     "root": ("draft_cutting_plan", 1), "failure": ("check_and_issue_quote", 1),
     "description": "The model's cutting plan for the windsor armchair leaves out the stretchers that its own leg-to-stretcher joint needs."},
    {"id": "chair-seat-in-cm", "input": 3, "switch": "seat-cm", "kind": "unit_error",
     "root": ("cut_part", 3), "root_holds": "seat", "failure": ("check_and_issue_quote", 1),
     "description": "The cut for the stool seat reports 62 as millimetres when it is the 620 mm length in centimetres."},
    {"id": "chair-spindle-count", "input": 2, "switch": "spindles", "kind": "off_by_one",
     "root": ("read_cutting_plan", 1), "failure": ("check_and_issue_quote", 1),
     "description": "Reading the plan turns the 9 spindles into 8 by counting a 1-based range."},
    {"id": "chair-rocker-price-zero", "input": 2, "switch": "yard-down", "kind": "swallowed_error",
     "root": ("timber_yard_price", 2), "root_holds": "rocker", "failure": ("check_and_issue_quote", 1),
     "description": "The timber yard lookup for the walnut rockers hides a timeout and prices them at 0.00, dragging materials below the walnut floor."},
    {"id": "chair-seat-species", "input": 1, "switch": "ledger-species", "kind": "bad_memory_write",
     "root": ("log_part", 3), "root_holds": "seat", "failure": ("check_and_issue_quote", 1),
     "description": "Logging the ladderback seat writes the species of the previous commission (elm) instead of ash."},
]
