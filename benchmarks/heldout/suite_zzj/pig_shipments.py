"""Pig farm: picks the finished pigs of a week's pens for the abattoir and books transport (sdk route).

Shape: request in -> model plans the week's steps -> per pen: weights export (with a retry), CSV parsing,
pen context, model selection + parsing, medication withdrawal check, pen record in run.state -> a transport
sub-agent (two haulier quotes, model choice, truck booking) -> manifest -> farm register -> validator.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

import kit
from common import chat, dumps, json_in, system_text, user_text
from openai import OpenAI

import trajdebug


NAME = "pig-shipment-planner"
ROUTE = "sdk"
DOMAIN = "pig farm"
SHAPE = "request -> model plan -> per pen: weights (retry), CSV parse, context, model selection + parse, withdrawal check, state write -> transport sub-agent -> manifest -> register -> validator"

PENS = {
    "P1": [
        ("UK-0101", 112.5, ""),
        ("UK-0102", 98.0, ""),
        ("UK-0103", 118.0, ""),
        ("UK-0104", 121.5, ""),
        ("UK-0105", 109.0, ""),
        ("UK-0106", 127.5, ""),
    ],
    "P2": [
        ("UK-0201", 115.0, ""),
        ("UK-0202", 119.5, "lame, hold"),
        ("UK-0203", 101.0, ""),
        ("UK-0204", 111.0, ""),
        ("UK-0205", 123.0, ""),
        ("UK-0206", 96.5, ""),
    ],
    "P3": [
        ("UK-0301", 117.5, ""),
        ("UK-0302", 122.0, ""),
        ("UK-0303", 108.5, "tail bite, hold"),
        ("UK-0304", 113.0, ""),
        ("UK-0305", 99.0, ""),
        ("UK-0306", 110.5, ""),
    ],
    "P4": [
        ("UK-0401", 106.0, ""),
        ("UK-0402", 114.5, ""),
        ("UK-0403", 120.0, ""),
        ("UK-0404", 124.5, ""),
        ("UK-0405", 103.0, ""),
        ("UK-0406", 116.0, ""),
    ],
    "P5": [
        ("UK-0501", 111.5, ""),
        ("UK-0502", 118.5, ""),
        ("UK-0503", 107.0, "hernia, hold"),
        ("UK-0504", 122.5, ""),
        ("UK-0505", 100.5, ""),
        ("UK-0506", 113.5, ""),
    ],
    "P6": [
        ("UK-0601", 119.0, ""),
        ("UK-0602", 110.0, ""),
        ("UK-0603", 126.0, ""),
        ("UK-0604", 112.0, ""),
        ("UK-0605", 117.0, ""),
        ("UK-0606", 104.5, ""),
    ],
    "P7": [
        ("UK-0701", 108.0, ""),
        ("UK-0702", 121.0, ""),
        ("UK-0703", 115.5, ""),
        ("UK-0704", 118.0, "abscess, hold"),
        ("UK-0705", 97.5, ""),
        ("UK-0706", 112.5, ""),
    ],
    "P8": [
        ("UK-0801", 113.0, ""),
        ("UK-0802", 120.5, ""),
        ("UK-0803", 109.5, ""),
        ("UK-0804", 116.5, ""),
        ("UK-0805", 102.0, ""),
        ("UK-0806", 124.0, ""),
    ],
}
MEDS = {  # tag: (drug, treated, withdrawal days)
    "UK-0103": ("oxytetracycline", "2026-03-02", 14),
    "UK-0402": ("amoxicillin", "2026-03-06", 15),
    "UK-0602": ("tylosin", "2026-02-20", 14),
    "UK-0504": ("oxytetracycline", "2026-03-10", 14),
    "UK-0803": ("tylosin", "2026-04-01", 14),
    "UK-0301": ("amoxicillin", "2026-01-30", 15),
}
HAULIERS = {"Dale Livestock Haulage": 3.10, "Pennine Pig Transport": 2.85}
TRUCK_HEADS = 24


def _req(week, monday, ship, pens, abattoir):
    return {
        "week": week,
        "week_start": monday,
        "ship_date": ship,
        "pens": pens,
        "abattoir": abattoir,
        "weight_band_kg": [105, 125],
    }


INPUTS = {
    "w11": _req("2026-W11", "2026-03-09", "2026-03-12", ["P3", "P5", "P7"], "Harland Meats"),
    "w12": _req("2026-W12", "2026-03-16", "2026-03-19", ["P1", "P4", "P6"], "Harland Meats"),
    "w13": _req("2026-W13", "2026-03-23", "2026-03-26", ["P2", "P8", "P5"], "Vale Abattoir"),
    "w14": _req("2026-W14", "2026-03-30", "2026-04-02", ["P4", "P2", "P6"], "Harland Meats"),
    "w15": _req("2026-W15", "2026-04-06", "2026-04-09", ["P1", "P7", "P8"], "Vale Abattoir"),
    "w16": _req("2026-W16", "2026-04-13", "2026-04-16", ["P6", "P3", "P2"], "Harland Meats"),
    "w17": _req("2026-W17", "2026-04-20", "2026-04-23", ["P5", "P1", "P4"], "Vale Abattoir"),
    "w18": _req("2026-W18", "2026-04-27", "2026-04-30", ["P7", "P6", "P8"], "Harland Meats"),
    "w19": _req("2026-W19", "2026-05-04", "2026-05-07", ["P2", "P3", "P4"], "Vale Abattoir"),
}
REFS = ["w16", "w17", "w18", "w19"]
CASES = [
    {
        "id": "pig_c1",
        "kind": "swallowed_error",
        "input": "w12",
        "root": ("check_withdrawal", 2),
        "failure": "validate_shipment",
        "description": "The vet-records call times out for pen P4 and the withdrawal check catches the timeout and answers that no pig is under withdrawal, so UK-0402 (amoxicillin, clear on 2026-03-21) is shipped on 2026-03-19.",
    },
    {
        "id": "pig_c2",
        "kind": "wrong_tool_args",
        "input": "w13",
        "root": ("book_trucks", 1),
        "failure": "validate_shipment",
        "description": "The transport sub-agent books the trucks with the week's start date (2026-03-23) instead of the ship date (2026-03-26).",
    },
    {
        "id": "pig_c3",
        "kind": "lossy_parsing",
        "input": "w14",
        "root": ("parse_weights", 2),
        "failure": "validate_shipment",
        "description": "The weights parser splits P2's CSV lines on every comma, so the quoted note 'lame, hold' loses its hold and UK-0202 is selected.",
    },
    {
        "id": "pig_c4",
        "kind": "context_pollution",
        "input": "w11",
        "root": ("build_pen_context", 2),
        "failure": "validate_shipment",
        "description": "The pen context keeps the previous pen's pigs, so the model's selection for P5 also lists P3's finished pigs and they appear twice in the manifest.",
    },
    {
        "id": "pig_c5",
        "kind": "plan_error",
        "input": "w15",
        "root": ("plan_week", 1),
        "failure": "validate_shipment",
        "description": "The model's week plan leaves out the medication withdrawal check, so UK-0803 (tylosin, clear on 2026-04-15) is shipped on 2026-04-09.",
    },
]

_CLIENT: OpenAI | None = None
_MODEL = "fake-model"
PLAN_SYSTEM = (
    'You plan a pig farm\'s weekly shipment to the abattoir. Return only JSON {"steps": [...]}, choosing '
    "from: weigh_pens, select_finished, check_withdrawal, book_transport, movement_licence, in order."
)
SELECT_SYSTEM = (
    "You pick the finished pigs of a pen. A pig is finished when its weight is inside the weight band "
    'and it has no hold note. Return only JSON {"pen": str, "ready": [tags], "held_back": [tags]}.'
)
HAULIER_SYSTEM = 'You choose a livestock haulier. Return only JSON {"haulier": str, "reason": str}: the cheapest that can take the load.'


def brain_for(req: dict):
    def brain(request):
        system = system_text(request)
        if system.startswith("You plan a pig farm"):
            steps = [
                "weigh_pens",
                "select_finished",
                "check_withdrawal",
                "book_transport",
                "movement_licence",
            ]
            if kit.on("pig_c5"):
                steps = ["weigh_pens", "select_finished", "book_transport", "movement_licence"]
            return json.dumps({"steps": steps})
        if system.startswith("You pick the finished pigs"):
            ctx = json_in(user_text(request))
            lo, hi = ctx["weight_band_kg"]
            ready = [p["tag"] for p in ctx["pigs"] if lo <= p["weight_kg"] <= hi and not p["hold"]]
            back = [p["tag"] for p in ctx["pigs"] if p["tag"] not in ready]
            return json.dumps({"pen": ctx["pen"], "ready": ready, "held_back": back})
        if system.startswith("You choose a livestock haulier"):
            quotes = json_in(user_text(request))["quotes"]
            best = min(quotes, key=lambda q: q["price_gbp"])
            return json.dumps(
                {"haulier": best["haulier"], "reason": f"lowest price at {best['price_gbp']:.2f} GBP"}
            )
        return "{}"

    return brain


def _llm_call(msgs: list[dict]) -> dict:
    reply = chat(_CLIENT, _MODEL, msgs)
    u = reply.usage
    trajdebug.current_step().usage(
        model=reply.model, prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens
    )
    return {"role": "assistant", "content": reply.choices[0].message.content}


@trajdebug.step(kind="input")
def receive_request(req: dict) -> dict:
    return req


@trajdebug.step(kind="llm")
def plan_week(messages: list[dict]) -> dict:
    return _llm_call(messages)


@trajdebug.step(kind="parse")
def parse_plan(reply: dict) -> list[str]:
    return list(json.loads(reply["content"])["steps"])


_EXPORT_CALLS = {"n": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_pen_weights(pen: str, week: str) -> str:
    _EXPORT_CALLS["n"] += 1
    if _EXPORT_CALLS["n"] == 3:
        raise ConnectionError(f"scale gateway for {pen} reset the connection")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["tag", "weight_kg", "notes"])
    for tag, kg, notes in PENS[pen]:
        w.writerow([tag, f"{kg:.1f}", notes])
    return buf.getvalue()


@trajdebug.step(kind="parse")
def parse_weights(export: str) -> list[dict]:
    if kit.on("pig_c3"):
        rows = [line.split(",") for line in export.strip().splitlines()[1:]]
    else:
        rows = list(csv.reader(io.StringIO(export)))[1:]
    pigs = []
    for r in rows:
        note = r[2].strip().strip('"')
        pigs.append({"tag": r[0], "weight_kg": float(r[1]), "note": note, "hold": note.endswith("hold")})
    return pigs


@trajdebug.step(kind="other")
def build_pen_context(pen: str, pigs: list[dict], req: dict, buffer: list[dict]) -> list[dict]:
    if not kit.on("pig_c4"):
        buffer.clear()
    buffer.extend(pigs)
    payload = {
        "pen": pen,
        "weight_band_kg": req["weight_band_kg"],
        "pigs": [{"tag": p["tag"], "weight_kg": p["weight_kg"], "hold": p["hold"]} for p in buffer],
    }
    return [{"role": "system", "content": SELECT_SYSTEM}, {"role": "user", "content": dumps(payload)}]


@trajdebug.step(kind="llm")
def classify_pen(messages: list[dict]) -> dict:
    return _llm_call(messages)


@trajdebug.step(kind="parse")
def parse_selection(reply: dict) -> dict:
    sel = json.loads(reply["content"])
    return {"pen": sel["pen"], "ready": list(sel["ready"]), "held_back": list(sel["held_back"])}


def _vet_api(tags: list[str], pen: str) -> dict:
    if kit.on("pig_c1") and pen == "P4":
        raise TimeoutError("vet records service: read timed out after 10 s")
    return {
        t: {"drug": MEDS[t][0], "treated": MEDS[t][1], "withdrawal_days": MEDS[t][2]}
        for t in tags
        if t in MEDS
    }


@trajdebug.step(kind="tool")
def check_withdrawal(pen: str, tags: list[str], ship_date: str) -> dict:
    try:
        records = _vet_api(tags, pen)
    except TimeoutError:
        records = {}
    held = []
    for tag, rec in records.items():
        clear = dt.date.fromisoformat(rec["treated"]) + dt.timedelta(days=rec["withdrawal_days"])
        if clear.isoformat() > ship_date:
            held.append({"tag": tag, "clear_on": clear.isoformat(), "drug": rec["drug"]})
    return {"pen": pen, "checked": len(tags), "in_withdrawal": held}


@trajdebug.step(kind="state")
def record_pen(pen: str, selection: dict, withdrawal: dict | None, pigs: list[dict]) -> dict:
    out = {t["tag"] for t in (withdrawal or {}).get("in_withdrawal", [])}
    weights = {p["tag"]: p["weight_kg"] for p in pigs}
    ready = [t for t in selection["ready"] if t not in out]
    entry = {"pen": pen, "ready": ready, "weights": {t: weights.get(t) for t in ready}}
    trajdebug.current_run().state[f"pen:{pen}"] = entry
    return entry


@trajdebug.step(kind="tool")
def quote_haulier(haulier: str, heads: int, date: str) -> dict:
    trucks = -(-heads // TRUCK_HEADS)
    return {
        "haulier": haulier,
        "date": date,
        "trucks": trucks,
        "price_gbp": round(HAULIERS[haulier] * heads * 38, 2),
    }


@trajdebug.step(kind="llm")
def choose_haulier(messages: list[dict]) -> dict:
    return _llm_call(messages)


@trajdebug.step(kind="tool")
def book_trucks(haulier: str, date: str, heads: int, abattoir: str) -> dict:
    trucks = -(-heads // TRUCK_HEADS)
    booking = {
        "booking": f"TB-{date.replace('-', '')}-{heads:02d}",
        "haulier": haulier,
        "date": date,
        "trucks": trucks,
        "capacity_heads": trucks * TRUCK_HEADS,
        "destination": abattoir,
    }
    trajdebug.current_run().state["transport"] = booking
    return booking


@trajdebug.step(kind="agent")
def transport_agent(req: dict, heads: int) -> dict:
    quotes = [quote_haulier(h, heads, req["ship_date"]) for h in HAULIERS]
    reply = choose_haulier(
        [
            {"role": "system", "content": HAULIER_SYSTEM},
            {"role": "user", "content": dumps({"heads": heads, "quotes": quotes})},
        ]
    )
    choice = json.loads(reply["content"])
    date = req["week_start"] if kit.on("pig_c2") else req["ship_date"]
    return book_trucks(choice["haulier"], date, heads, req["abattoir"])


@trajdebug.step(kind="other")
def compile_manifest(req: dict) -> dict:
    state = trajdebug.current_run().state
    pigs = []
    for pen in req["pens"]:
        entry = state[f"pen:{pen}"]
        pigs += [{"tag": t, "pen": pen, "weight_kg": entry["weights"][t]} for t in entry["ready"]]
    return {
        "week": req["week"],
        "ship_date": req["ship_date"],
        "abattoir": req["abattoir"],
        "pigs": pigs,
        "transport": state["transport"],
    }


@trajdebug.step(kind="tool")
def farm_register(tags: list[str]) -> dict:
    out = {}
    for pen, rows in PENS.items():
        for tag, _kg, notes in rows:
            if tag in tags:
                med = MEDS.get(tag)
                out[tag] = {
                    "pen": pen,
                    "notes": notes,
                    "medication": None
                    if med is None
                    else {"drug": med[0], "treated": med[1], "withdrawal_days": med[2]},
                }
    return out


@trajdebug.step(kind="condition")
def validate_shipment(manifest: dict, register: dict) -> dict:
    lo, hi = 105, 125
    seen: dict[str, str] = {}
    for pig in manifest["pigs"]:
        tag = pig["tag"]
        if tag in seen:
            raise ValueError(f"{tag} is listed twice (pens {seen[tag]} and {pig['pen']})")
        seen[tag] = pig["pen"]
        reg = register[tag]
        if reg["pen"] != pig["pen"]:
            raise ValueError(f"{tag} is listed for pen {pig['pen']} but lives in pen {reg['pen']}")
        if not lo <= pig["weight_kg"] <= hi:
            raise ValueError(f"{tag} weighs {pig['weight_kg']} kg, outside {lo}-{hi} kg")
        if "hold" in reg["notes"]:
            raise ValueError(f"{tag} is on hold ({reg['notes']}) and cannot travel")
        med = reg["medication"]
        if med:
            clear = (
                dt.date.fromisoformat(med["treated"]) + dt.timedelta(days=med["withdrawal_days"])
            ).isoformat()
            if clear > manifest["ship_date"]:
                raise ValueError(
                    f"{tag} is under {med['drug']} withdrawal until {clear}, ship date {manifest['ship_date']}"
                )
    t = manifest["transport"]
    if t["date"] != manifest["ship_date"]:
        raise ValueError(f"trucks booked for {t['date']}, pigs ship on {manifest['ship_date']}")
    if t["capacity_heads"] < len(manifest["pigs"]):
        raise ValueError(f"{len(manifest['pigs'])} pigs for {t['capacity_heads']} truck places")
    return {"week": manifest["week"], "pigs": len(manifest["pigs"]), "status": "approved"}


def agent(req: dict) -> dict:
    req = receive_request(req)
    plan = parse_plan(
        plan_week([{"role": "system", "content": PLAN_SYSTEM}, {"role": "user", "content": dumps(req)}])
    )
    buffer: list[dict] = []
    heads = 0
    for pen in req["pens"]:
        pigs = parse_weights(fetch_pen_weights(pen, req["week"]))
        msgs = build_pen_context(pen, pigs, req, buffer)
        selection = parse_selection(classify_pen(msgs))
        withdrawal = None
        if "check_withdrawal" in plan:
            withdrawal = check_withdrawal(pen, selection["ready"], req["ship_date"])
        entry = record_pen(pen, selection, withdrawal, pigs)
        heads += len(entry["ready"])
    if "book_transport" in plan:
        transport_agent(req, heads)
    manifest = compile_manifest(req)
    register = farm_register([p["tag"] for p in manifest["pigs"]])
    return validate_shipment(manifest, register)


def record(server, inp: dict, path: str) -> None:
    global _CLIENT, _MODEL
    _CLIENT = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _MODEL = server.model
    _EXPORT_CALLS["n"] = 0
    server.use(brain_for(inp))
    try:
        with trajdebug.run(NAME, path=path, task=f"plan the {inp['week']} shipment to {inp['abattoir']}"):
            agent(inp)
    except ValueError:
        pass
