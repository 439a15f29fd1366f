"""Wainwright's cart repairs: a wheel-by-wheel repair job with sub-agents per wheel (sdk route)."""
import json
import math

from openai import OpenAI

import trajdebug

NAME, ROUTE, DOMAIN = "wainwright-repairs", "sdk", "wainwright's cart repairs"
SHAPE = "job card, model job plan, a wheel_survey sub-agent per wheel (measure, notes recall, model assessment, parse, run.state note), parallel stock calls, per-wheel cutting, tyre sums, smithy booking, invoice check"
SWITCH = None
_CLIENTS = {}

WHEELS = {"CW-3": [("near fore", 42), ("off fore", 42), ("near hind", 54), ("off hind", 54)],
          "CW-8": [("near fore", 36), ("off fore", 36), ("near hind", 48), ("off hind", 48)],
          "CW-11": [("near", 50), ("off", 50)],
          "CW-14": [("near fore", 40), ("off fore", 40), ("near hind", 52), ("off hind", 52)],
          "CW-20": [("near", 57), ("off", 57)]}
DAMAGE = {"near fore": 2, "off fore": 1, "near hind": 3, "off hind": 0, "near": 2, "off": 4}
INPUTS = [
    {"job": "CW-3", "cart": "Hermitage farm wagon", "owner": "J. Pengelly", "timber": "oak"},
    {"job": "CW-8", "cart": "market trolley", "owner": "S. Varley", "timber": "ash"},
    {"job": "CW-11", "cart": "two-wheel tip cart", "owner": "B. Nancarrow", "timber": "oak"},
    {"job": "CW-14", "cart": "brewer's dray", "owner": "Tolley Ales", "timber": "elm"},
    {"job": "CW-20", "cart": "Scotch cart", "owner": "K. Moir", "timber": "ash"},
]
CASES = [
    {"id": "zzzo_w01", "input": 0, "switch": "gauge", "fault_kind": "swallowed_error",
     "root": ("measure_wheel", 3, "tool"), "failure": ("book_smithy", 1),
     "description": "The wheel gauge on the near hind wheel failed to read; the measuring tool carried on with the yard's usual 48 in."},
    {"id": "zzzo_w02", "input": 3, "switch": "section", "fault_kind": "wrong_tool_args",
     "root": ("tyre_iron_stock", 1, "tool"), "failure": ("book_smithy", 1),
     "description": "The iron stock was asked for bar to the felloe depth (2 in) instead of the tread width (3 in)."},
    {"id": "zzzo_w03", "input": 1, "switch": "memory", "fault_kind": "context_pollution",
     "root": ("wheel_notes", 2, "tool"), "failure": ("book_smithy", 1),
     "description": "The notes recalled for the off fore wheel carried another customer's wagon with 60 in wheels, and the assessment took that size."},
    {"id": "zzzo_w04", "input": 2, "switch": "plan", "fault_kind": "plan_error",
     "root": ("plan_job", 1, "llm"), "failure": ("invoice", 1),
     "description": "The job plan left the off wheel's tyre reset out, so only one tyre was booked at the smithy for a two-tyre job card."},
    {"id": "zzzo_w05", "input": 4, "switch": "sheet", "fault_kind": "stale_data",
     "root": ("timber_stock", 1, "tool"), "failure": ("cut_parts", 2),
     "description": "The timber stock came from yesterday's sheet, still showing ash spoke billets that had been used up."},
]
SPOKE_BILLETS = {"oak": 30, "ash": 4, "elm": 20}


def policy(request):
    msgs = request.body["messages"]
    data = json.loads(msgs[-1]["content"])
    if msgs[0]["content"].startswith("Plan"):
        tasks = [{"wheel": w, "work": ["reset tyre", "respoke"]} for w in data["wheels"]]
        if SWITCH == "plan":
            tasks[-1]["work"] = ["respoke"]
        return json.dumps({"job": data["job"], "tasks": tasks})
    notes = data.get("notes") or []
    diameter = data["measured_in"]
    for n in notes:
        if n.get("wheel") == data["wheel"] and "diameter_in" in n:
            diameter = n["diameter_in"]
    return f"{data['wheel']}: {data['broken_spokes']} spokes to replace; tyre loose; diameter {diameter} in"


@trajdebug.step(kind="input")
def job_card(card: dict) -> dict:
    return dict(card, wheels=[w for w, _ in WHEELS[card["job"]]])


@trajdebug.step(kind="llm")
def plan_job(client, model, card):
    r = client.chat.completions.create(model=model, messages=[
        {"role": "system", "content": "Plan the repair job. Answer JSON."},
        {"role": "user", "content": json.dumps({"job": card["job"], "cart": card["cart"], "wheels": card["wheels"]})}])
    return json.loads(r.choices[0].message.content)


@trajdebug.step(kind="tool")
def measure_wheel(job: str, wheel: str) -> dict:
    size = dict(WHEELS[job])[wheel]
    try:
        if SWITCH == "gauge" and wheel == "near hind":
            raise OSError("gauge wheel slipped on the tyre")
        reading = size
    except OSError:
        reading = 48
    return {"wheel": wheel, "diameter_in": reading, "broken_spokes": DAMAGE[wheel], "felloe_depth_in": 2}


@trajdebug.step(kind="tool")
def wheel_notes(job: str, wheel: str) -> list:
    notes = [{"job": job, "wheel": wheel, "last_seen": "2025-11"}]
    if SWITCH == "memory" and wheel == "off fore":
        notes.append({"job": "CW-2", "wheel": wheel, "diameter_in": 60, "owner": "T. Rowe"})
    return notes


@trajdebug.step(kind="llm")
def assess_wheel(client, model, measured: dict, notes: list) -> str:
    r = client.chat.completions.create(model=model, messages=[
        {"role": "system", "content": "Assess the wheel from the measurement and the notes."},
        {"role": "user", "content": json.dumps({"wheel": measured["wheel"], "measured_in": measured["diameter_in"],
                                                "broken_spokes": measured["broken_spokes"], "notes": notes})}])
    return r.choices[0].message.content


@trajdebug.step(kind="parse")
def read_assessment(text: str) -> dict:
    wheel, rest = text.split(":", 1)
    spokes = int(rest.split("spokes")[0].strip().split()[-1])
    dia = float(rest.split("diameter")[1].split("in")[0])
    return {"wheel": wheel, "spokes": spokes, "diameter_in": dia, "tyre_loose": "tyre loose" in rest}


@trajdebug.step(kind="state")
def note_wheel(reading: dict) -> None:
    trajdebug.current_run().state[f"wheel:{reading['wheel']}"] = reading


@trajdebug.step(kind="agent")
def wheel_survey(client, model, job: str, wheel: str) -> dict:
    m = measure_wheel(job, wheel)
    notes = wheel_notes(job, wheel)
    reading = read_assessment(assess_wheel(client, model, m, notes))
    note_wheel(reading)
    return reading


@trajdebug.step(kind="tool")
def timber_stock(timber: str) -> dict:
    billets = SPOKE_BILLETS[timber]
    if SWITCH == "sheet":
        billets = 12
    return {"timber": timber, "spoke_billets": billets, "felloe_blanks": 8}


@trajdebug.step(kind="tool")
def tyre_iron_stock(width_in: float) -> dict:
    return {"section": f"{width_in} x 0.5 in", "width_in": width_in, "bar_ft": 120}


@trajdebug.step(kind="tool")
def cut_parts(job: str, wheel: str, timber: str, available: dict) -> dict:
    r = trajdebug.current_run().state[f"wheel:{wheel}"]
    left = trajdebug.current_run().state.get("billets_used", 0)
    rack = SPOKE_BILLETS[timber] + trajdebug.current_run().state.get("billets_delivered", 0)
    if left + r["spokes"] > rack:
        raise RuntimeError(f"no seasoned {timber} spoke billets left for {wheel}: {rack - left} in the rack, {r['spokes']} needed")
    trajdebug.current_run().state["billets_used"] = left + r["spokes"]
    return {"wheel": wheel, "spokes_cut": r["spokes"], "timber": timber}


@trajdebug.step(kind="tool")
def order_billets(timber: str, count: int) -> dict:
    trajdebug.current_run().state["billets_delivered"] = count
    return {"timber": timber, "billets": count, "from": "Dartington sawmill"}


@trajdebug.step(kind="other")
def tyre_lengths(plan: dict) -> list:
    st = trajdebug.current_run().state
    out = []
    for t in plan["tasks"]:
        if "reset tyre" in t["work"]:
            d = st[f"wheel:{t['wheel']}"]["diameter_in"]
            out.append({"wheel": t["wheel"], "diameter_in": d, "tyre_in": round(math.pi * d - 0.75, 2)})
    return out


@trajdebug.step(kind="tool")
def book_smithy(job: str, tyres: list, iron: dict) -> dict:
    tread = 3.0
    if iron["width_in"] != tread:
        raise ValueError(f"bar {iron['section']} will not make a tyre for a {tread} in tread")
    sizes = dict(WHEELS[job])
    for t in tyres:
        if abs(t["diameter_in"] - sizes[t["wheel"]]) > 0.5:
            raise ValueError(f"{t['wheel']} tyre cut at {t['tyre_in']} in for a {t['diameter_in']} in wheel; the forge's traveller reads {sizes[t['wheel']]} in")
    return {"job": job, "tyres": len(tyres), "slot": "Thursday heat"}


@trajdebug.step(kind="output")
def invoice(card: dict, booking: dict) -> dict:
    wheels = len(card["wheels"])
    if booking["tyres"] != wheels:
        raise ValueError(f"job card {card['job']} resets {wheels} tyres, smithy booked {booking['tyres']}")
    return {"job": card["job"], "owner": card["owner"], "total_gbp": 38 * wheels + 12}


def record(inp, server, path):
    if server.base_url not in _CLIENTS:
        _CLIENTS[server.base_url] = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    client = _CLIENTS[server.base_url]
    try:
        with trajdebug.run(NAME, task=f"repair job {inp['job']}", path=path) as run:
            card = job_card(inp)
            plan = plan_job(client, server.model, card)
            for w in card["wheels"]:
                wheel_survey(client, server.model, card["job"], w)
            with trajdebug.ContextThreadPoolExecutor(max_workers=2) as pool:
                width = 2.0 if SWITCH == "section" else 3.0
                f1 = pool.submit(timber_stock, card["timber"])
                f2 = pool.submit(tyre_iron_stock, width)
                timber, iron = f1.result(), f2.result()
            needed = sum(run.state[f"wheel:{w}"]["spokes"] for w in card["wheels"])
            if timber["spoke_billets"] < needed:
                order_billets(card["timber"], needed - timber["spoke_billets"])
            for w in card["wheels"]:
                cut_parts(card["job"], w, card["timber"], timber)
            tyres = tyre_lengths(plan)
            booking = book_smithy(card["job"], tyres, iron)
            invoice(card, booking)
    except (ValueError, RuntimeError):
        pass
