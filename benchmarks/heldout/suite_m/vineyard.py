"""Vineyard harvest planner (route sdk): block logs -> ripeness -> pick plan -> crews, bins, press, intake."""

from __future__ import annotations

import json
import math

import trajdebug
from suite_m import kit


AGENT = "vineyard-harvest"
ROUTE = "sdk"
DOMAIN = "vineyard harvest planning"
SHAPE = "loop over 6 blocks (log, parse, tonnes, ripeness), model pick order, crew memory in run.state, intake pre-advice, day loop booking crews, bins, press"

BLOCKS = {
    "B1": ("Cabernet", 24.1, 6.2, 3.48, "4120 kg", "2026-09-11"),
    "B2": ("Merlot", 23.6, 5.9, 3.52, "3310 kg", "2026-09-12"),
    "B3": ("Syrah", 23.2, 6.4, 3.41, "3,847 kg", "2026-09-12"),
    "B4": ("Grenache", 22.9, 5.7, 3.55, "2960 kg", "2026-09-11"),
    "B5": ("Mourvedre", 22.4, 6.6, 3.38, "2415 kg", "2026-09-12"),
    "B6": ("Viognier", 21.9, 6.0, 3.46, "1780 kg", "2026-09-12"),
    "B7": ("Chardonnay", 22.6, 7.1, 3.31, "3,505 kg", "2026-09-11"),
    "B8": ("Pinot Noir", 23.9, 6.8, 3.36, "2690 kg", "2026-09-12"),
}
REGISTERED_T = {"B1": 4.0, "B2": 3.4, "B3": 3.9, "B4": 3.0, "B5": 2.5, "B6": 1.7, "B7": 3.4, "B8": 2.8}
ROSTER = [
    {"crew": "C-204", "pickers": 9, "on_leave": False},
    {"crew": "C-207", "pickers": 7, "on_leave": False},
    {"crew": "C-211", "pickers": 8, "on_leave": True},
    {"crew": "C-215", "pickers": 10, "on_leave": False},
]


def _inp(estate: str, blocks: list[str], start: str, press_t: float) -> dict:
    return {
        "task": f"Plan the {estate} harvest of blocks {', '.join(blocks)} from {start}",
        "estate": estate,
        "blocks": blocks,
        "start": start,
        "press_t_per_day": press_t,
    }


INPUTS = [
    _inp("Quinta Alta", ["B1", "B2", "B3", "B4", "B5", "B6"], "2026-09-14", 8.0),
    _inp("Quinta Alta", ["B1", "B3", "B4", "B5", "B7", "B8"], "2026-09-15", 5.5),
    _inp("Monte Verde", ["B2", "B3", "B4", "B6", "B7", "B8"], "2026-09-14", 7.5),
    _inp("Monte Verde", ["B1", "B2", "B4", "B5", "B6", "B8"], "2026-09-16", 8.0),
    _inp("Quinta Alta", ["B2", "B3", "B5", "B6", "B7", "B8"], "2026-09-15", 7.5),
]
REFERENCES = [
    _inp("Serra Baixa", ["B1", "B2", "B5", "B6", "B7", "B8"], "2026-09-17", 8.0),
    _inp("Serra Baixa", ["B1", "B2", "B3", "B4", "B7", "B8"], "2026-09-14", 8.5),
    _inp("Monte Verde", ["B3", "B4", "B5", "B6", "B7", "B8"], "2026-09-18", 7.5),
    _inp("Quinta Alta", ["B1", "B2", "B3", "B6", "B7", "B8"], "2026-09-16", 8.0),
]

CASES = [
    {"case": "m_vineyard_1", "fid": "vin1", "kind": "lossy_parsing", "input": 0, "root": "parse_block_log", "marker": "3.847", "failure": "submit_intake"},
    {"case": "m_vineyard_2", "fid": "vin2", "kind": "off_by_one", "input": 1, "root": "harvest_window", "marker": "2026-09-19", "failure": "reserve_press"},
    {"case": "m_vineyard_3", "fid": "vin3", "kind": "bad_memory_write", "input": 2, "root": "save_crew_plan", "marker": "C-211", "failure": "book_crew"},
    {"case": "m_vineyard_4", "fid": "vin4", "kind": "stale_data", "input": 3, "root": "fetch_block_log", "marker": "2026-09-02", "failure": "submit_intake"},
    {"case": "m_vineyard_5", "fid": "vin5", "kind": "swallowed_error", "input": 4, "root": "estimate_tonnes", "marker": "0.0", "failure": "submit_intake"},
]


def policy(inp: dict):
    def answer(request) -> str:
        prompt = request.body["messages"][-1]["content"]
        readings = json.loads(prompt.split("READINGS:", 1)[1])
        order = sorted(readings, key=lambda r: (-r["brix"], r["block"]))
        return json.dumps({"pick_order": [r["block"] for r in order], "note": "highest sugar first"})

    return answer


# -- tools and steps -----------------------------------------------------------------------


@trajdebug.step(kind="tool")
def fetch_block_log(block: str) -> str:
    variety, brix, ta, ph, yield_text, sampled = BLOCKS[block]
    if block == "B5" and kit.active("vin4"):
        brix, sampled = 23.8, "2026-09-02"  # the sensor gateway serves its cached record
    return f"block={block} variety={variety} brix={brix} ta={ta}g/L ph={ph} est_yield={yield_text} sampled={sampled}"


@trajdebug.step(kind="parse")
def parse_block_log(text: str) -> dict:
    fields = dict(part.split("=", 1) for part in text.split(" ") if "=" in part)
    raw = text.split("est_yield=", 1)[1].split(" kg")[0]
    if kit.active("vin1"):
        kg = float(raw.replace(",", "."))
    else:
        kg = float(raw.replace(",", ""))
    return {
        "block": fields["block"],
        "variety": fields["variety"],
        "brix": float(fields["brix"]),
        "ta": float(fields["ta"].removesuffix("g/L")),
        "ph": float(fields["ph"]),
        "yield_kg": kg,
        "sampled": fields["sampled"],
    }


@trajdebug.step(kind="other")
def estimate_tonnes(reading: dict) -> dict:
    kg = reading["yield_kg"]
    try:
        if reading["block"] == "B6" and kit.active("vin5"):
            raise ZeroDivisionError("float division by zero")  # the bunch-weight model has no sample count yet
        tonnes = round(kg / 1000.0, 3)
    except ZeroDivisionError:
        tonnes = 0.0
    return {"block": reading["block"], "tonnes": tonnes, "basis": "field estimate"}


@trajdebug.step(kind="condition")
def ripeness_check(reading: dict) -> str:
    return "pick" if reading["brix"] >= 21.5 and reading["ph"] <= 3.6 else "wait"


@trajdebug.step(kind="llm")
def draft_pick_order(readings: list[dict], env) -> dict:
    prompt = "Order these blocks for picking, ripest first. Answer JSON.\nREADINGS:" + json.dumps(readings)
    reply = env.client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": prompt}])
    trajdebug.current_step().usage(
        model=reply.model, prompt_tokens=reply.usage.prompt_tokens, completion_tokens=reply.usage.completion_tokens
    )
    return {"role": "assistant", "content": reply.choices[0].message.content}


@trajdebug.step(kind="parse")
def parse_pick_order(message: dict) -> list[str]:
    return list(json.loads(message["content"])["pick_order"])


@trajdebug.step(kind="tool")
def fetch_crew_roster(estate: str) -> list[dict]:
    return [dict(c) for c in ROSTER]


@trajdebug.step(kind="state")
def save_crew_plan(roster: list[dict]) -> list[str]:
    if kit.active("vin3"):
        crews = [c["crew"] for c in roster]
    else:
        crews = [c["crew"] for c in roster if not c["on_leave"]]
    trajdebug.current_run().state["crew_rotation"] = crews
    return crews


@trajdebug.step(kind="other")
def harvest_window(start: str, picks: int) -> dict:
    y, m, d = (int(x) for x in start.split("-"))
    days = picks - 1 if kit.active("vin2") else picks
    end = f"{y:04d}-{m:02d}-{d + days - 1:02d}"
    return {"first_day": start, "last_day": end, "days": days}


@trajdebug.step(kind="other")
def day_of(window: dict, i: int) -> str:
    y, m, d = (int(x) for x in window["first_day"].split("-"))
    last = int(window["last_day"].split("-")[2])
    return f"{y:04d}-{m:02d}-{min(d + i, last):02d}"


@trajdebug.step(kind="condition")
def pick_crew(day_index: int) -> str:
    crews = trajdebug.current_run().state["crew_rotation"]
    return crews[day_index % len(crews)]


@trajdebug.step(kind="tool")
def book_crew(crew: str, day: str) -> dict:
    entry = next(c for c in ROSTER if c["crew"] == crew)
    if entry["on_leave"]:
        raise RuntimeError(f"labour office: crew {crew} cannot be scheduled on {day} (status: leave)")
    return {"crew": crew, "day": day, "confirmation": f"LB-{crew[2:]}-{day[-2:]}"}


@trajdebug.step(kind="tool")
def book_bins(block: str, tonnes: float) -> dict:
    bins = max(1, math.ceil(tonnes / 0.4))
    return {"block": block, "bins": bins, "yard": "north"}


_PRESS: dict[str, float] = {}


@trajdebug.step(kind="tool")
def reserve_press(day: str, tonnes: float, capacity: float) -> dict:
    used = _PRESS.get(day, 0.0)
    if used + tonnes > capacity:
        raise RuntimeError(
            f"press line 2: {used + tonnes:.2f} t requested for {day}, {capacity:.1f} t available"
        )
    _PRESS[day] = used + tonnes
    return {"day": day, "slot": f"P2-{day[-2:]}-{len(_PRESS)}", "booked_t": round(used + tonnes, 3)}


@trajdebug.step(kind="tool")
def submit_intake(manifest: list[dict]) -> dict:
    for row in manifest:
        reg = REGISTERED_T[row["block"]]
        if abs(row["tonnes"] - reg) > 0.25 * reg:
            raise RuntimeError(
                f"winery intake 422: manifest line {row['block']} declares {row['tonnes']} t, "
                f"registered estimate {reg} t (tolerance 25%)"
            )
        if row["sampled"] < "2026-09-07":
            raise RuntimeError(f"winery intake 422: maturity sample for {row['block']} is older than 7 days")
    return {"intake_id": "WI-" + "".join(r["block"][1] for r in manifest), "lines": len(manifest)}


@trajdebug.step(kind="output")
def harvest_summary(plan: list[dict], intake: dict) -> str:
    return f"{len(plan)} blocks scheduled, intake {intake['intake_id']}"


def execute(inp: dict, env) -> None:
    _PRESS.clear()
    with trajdebug.step("harvest_request", kind="input") as s:
        s.output = dict(inp)
    readings, tonnes = [], {}
    for block in inp["blocks"]:
        text = fetch_block_log(block)
        reading = parse_block_log(text)
        est = estimate_tonnes(reading)
        if ripeness_check(reading) == "pick":
            readings.append(reading)
            tonnes[block] = est
    order = parse_pick_order(draft_pick_order(readings, env))
    save_crew_plan(fetch_crew_roster(inp["estate"]))
    window = harvest_window(inp["start"], len(order))
    by_block = {r["block"]: r for r in readings}
    manifest = [
        {"block": b, "tonnes": tonnes[b]["tonnes"], "sampled": by_block[b]["sampled"]} for b in order
    ]
    intake = submit_intake(manifest)
    plan = []
    for i, block in enumerate(order):
        day = day_of(window, i)
        crew = pick_crew(i)
        booking = book_crew(crew, day)
        t = tonnes[block]["tonnes"]
        bins = book_bins(block, t)
        press = reserve_press(day, t, inp["press_t_per_day"])
        plan.append({"block": block, "day": day, "crew": booking["crew"], "bins": bins["bins"], "press": press["slot"]})
    harvest_summary(plan, intake)
