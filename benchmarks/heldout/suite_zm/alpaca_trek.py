"""Alpaca trekking outfitter (recording SDK): parse a group request, pair hikers with alpacas, book."""
from __future__ import annotations

import json
import re

import trajdebug
from openai import OpenAI

from .common import Case, last_user_json, policy
from .kit import active

NAME, ROUTE, DOMAIN = "alpaca-trek-desk", "sdk", "alpaca trekking"
SHAPE = "parse request, retried forecast tool, per-hiker LLM pairing loop + state, pack loads, trail retrieval, LLM itinerary, booking API"

HERD = [
    {"alpaca": "Pepito", "capacity_kg": 14, "gentle": True},
    {"alpaca": "Luna", "capacity_kg": 18, "gentle": True},
    {"alpaca": "Tormenta", "capacity_kg": 22, "gentle": False},
    {"alpaca": "Quinoa", "capacity_kg": 16, "gentle": True},
    {"alpaca": "Rayo", "capacity_kg": 20, "gentle": False},
    {"alpaca": "Maiz", "capacity_kg": 15, "gentle": True},
]
TRAILS = {
    "Ridge Loop": {"trail": "Ridge Loop", "km": 7.5, "min_age": 8},
    "Ridge Loop North": {"trail": "Ridge Loop North", "km": 13.0, "min_age": 14},
    "Valley Walk": {"trail": "Valley Walk", "km": 4.0, "min_age": 5},
    "Valley Walk East": {"trail": "Valley Walk East", "km": 9.5, "min_age": 12},
}
INPUTS = {
    "A": "Party: Ines(34), Marco(36), Lia(9). Date 2027-05-14. Route Ridge Loop. Gear 22 lb per hiker.",
    "B": "Party: Tom(41), Ana(39), Ben(12), Eva(10). Date 2027-06-02. Route Valley Walk. Gear 15 lb per hiker.",
    "R1": "Party: Kai(28), Noa(27). Date 2027-07-09. Route Ridge Loop. Gear 18 lb per hiker.",
    "R2": "Party: Oscar(52), Mila(50), Teo(11). Date 2027-05-21. Route Valley Walk. Gear 20 lb per hiker.",
    "R3": "Party: Sara(30), Ivo(33), Pia(31). Date 2027-08-01. Route Ridge Loop. Gear 12 lb per hiker.",
    "R4": "Party: Jon(45), Ada(13). Date 2027-09-12. Route Valley Walk. Gear 25 lb per hiker.",
}
WAIVERS = {n: int(a) for t in INPUTS.values() for n, a in re.findall(r"(\w+)\((\d+)\)", t)}
REFS = ["R1", "R2", "R3", "R4"]

CASES = [
    Case("zm_alpaca_1", "lossy_parsing", "A", ("parse_request", 1, "parse"), ("book_trek", 1),
         "parse_request drops the hiker ages so every hiker is booked as an adult and the waiver cross-check rejects the booking", "alpaca.lossy"),
    Case("zm_alpaca_2", "unit_error", "B", ("compute_pack_loads", 1, "other"), ("book_trek", 1),
         "compute_pack_loads treats pounds as kilograms so each alpaca looks overloaded at booking", "alpaca.unit"),
    Case("zm_alpaca_3", "stale_data", "A", ("fetch_forecast", 2, "tool"), ("book_trek", 1),
         "the retried forecast call answers from an old cache dated a week before the trek", "alpaca.stale"),
    Case("zm_alpaca_4", "wrong_retrieval", "B", ("lookup_trail", 1, "retrieval"), ("check_trail_fit", 1),
         "lookup_trail returns the longer East variant of the requested route", "alpaca.retrieval"),
    Case("zm_alpaca_5", "bad_memory_write", "A", ("record_pairing", 2, "state"), ("book_trek", 1),
         "record_pairing stores the second hiker under the first hiker's alpaca, giving one alpaca two riders", "alpaca.memory"),
]


@policy("alpaca_pair")
def _pair(msgs):
    q = last_user_json(msgs)
    free = [a for a in q["free"] if (a["gentle"] or not q["child"])]
    free.sort(key=lambda a: a["capacity_kg"])
    return json.dumps({"hiker": q["hiker"], "alpaca": free[0]["alpaca"]})


@policy("alpaca_itin")
def _itin(msgs):
    q = last_user_json(msgs)
    return json.dumps({"summary": f"{q['trail']['trail']} on {q['date']} with {len(q['pairs'])} alpacas",
                       "start": "09:00"})


def _ask(client, desk, payload, name):
    msgs = [{"role": "system", "content": f"[desk:{desk}] You are the alpaca ranch planner. Answer JSON."},
            {"role": "user", "content": json.dumps(payload)}]
    with trajdebug.step(name, kind="llm", input={"messages": msgs}) as s:
        r = client.chat.completions.create(model="ranch-planner-1", messages=msgs)
        s.output = {"role": "assistant", "content": r.choices[0].message.content}
    return json.loads(s.output["content"])


_calls = {"forecast": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_forecast(date: str) -> dict:
    _calls["forecast"] += 1
    if _calls["forecast"] % 2 == 1:
        raise ConnectionError("weather gateway timed out after 5s")
    if active("alpaca.stale"):
        return {"date": "2027-05-07", "wind_kmh": 12, "rain_mm": 0, "source": "cache"}
    return {"date": date, "wind_kmh": 12, "rain_mm": 0, "source": "live"}


def record(key: str, out, base_url: str) -> None:
    client = OpenAI(base_url=base_url, api_key="local", max_retries=0)
    text = INPUTS[key]
    _calls["forecast"] = 0
    with trajdebug.run(NAME, path=str(out), task="book an alpaca trek") as run:
        with trajdebug.step("trek_request", kind="input") as s:
            s.output = {"text": text}
        with trajdebug.step("parse_request", kind="parse", input=s.output) as p:
            hikers = [{"name": n, "age": int(a)} for n, a in re.findall(r"(\w+)\((\d+)\)", text)]
            if active("alpaca.lossy"):
                hikers = [{"name": h["name"], "age": 18} for h in hikers]
            p.output = {"hikers": hikers,
                        "date": re.search(r"Date (\S+)\.", text).group(1),
                        "route": re.search(r"Route ([A-Za-z ]+)\.", text).group(1),
                        "gear_lb": float(re.search(r"Gear (\d+) lb", text).group(1))}
        req = p.output
        with trajdebug.step("fetch_herd", kind="tool", input={"ranch": "Andes Hill"}) as h:
            h.output = {"herd": [dict(a) for a in HERD]}
        forecast = fetch_forecast(req["date"])
        pairs = {}
        with trajdebug.step("pairing_loop", kind="agent"):
            for i, hk in enumerate(req["hikers"]):
                taken = set(pairs.values())
                free = [a for a in h.output["herd"] if a["alpaca"] not in taken]
                ans = _ask(client, "alpaca_pair", {"hiker": hk["name"], "child": hk["age"] < 14, "free": free},
                           "choose_alpaca")
                with trajdebug.step("record_pairing", kind="state", input=ans):
                    alpaca = ans["alpaca"]
                    if active("alpaca.memory") and i == 1:
                        alpaca = pairs[req["hikers"][0]["name"]]
                    pairs[ans["hiker"]] = alpaca
                    run.state[f"pair:{ans['hiker']}"] = alpaca
        with trajdebug.step("compute_pack_loads", kind="other", input={"pairs": pairs, "gear_lb": req["gear_lb"]}) as c:
            factor = 1.0 if active("alpaca.unit") else 0.4536
            c.output = {a: round(req["gear_lb"] * factor, 1) for a in pairs.values()}
        with trajdebug.step("lookup_trail", kind="retrieval", input={"route": req["route"]}) as t:
            name = req["route"] + (" East" if active("alpaca.retrieval") and req["route"] == "Valley Walk" else "")
            t.output = {"documents": [dict(TRAILS[name])]}
        trail = t.output["documents"][0]
        with trajdebug.step("check_trail_fit", kind="condition", input={"trail": trail, "hikers": req["hikers"]}) as cf:
            youngest = min(x["age"] for x in req["hikers"])
            if trail["km"] > 8.0 and youngest < 14:
                raise ValueError(f"trail {trail['trail']} is {trail['km']} km; groups with hikers under 14 are capped at 8.0 km")
            cf.output = {"ok": True, "youngest": youngest}
        itin = _ask(client, "alpaca_itin", {"trail": trail, "date": req["date"], "pairs": pairs}, "draft_itinerary")
        with trajdebug.step("book_trek", kind="tool", input={"pairs": pairs, "loads": c.output, "forecast": forecast,
                                                             "trail": trail, "hikers": req["hikers"], "itinerary": itin}) as b:
            herd = {a["alpaca"]: a for a in HERD}
            errors = []
            if len(set(pairs.values())) != len(pairs):
                errors.append("each alpaca may carry for one hiker only (duplicate alpaca in pairs)")
            for a, kg in c.output.items():
                if kg > herd[a]["capacity_kg"]:
                    errors.append(f"load {kg} kg exceeds {a}'s limit of {herd[a]['capacity_kg']} kg")
            if forecast["date"] != req["date"]:
                errors.append(f"forecast date {forecast['date']} does not match trek date {req['date']}")
            kids = [x["name"] for x in req["hikers"] if x["age"] < trail["min_age"]]
            if kids:
                errors.append(f"hikers below minimum age {trail['min_age']}: {', '.join(kids)}")
            for x in req["hikers"]:
                if WAIVERS.get(x["name"]) != x["age"]:
                    errors.append(f"waiver on file for {x['name']} gives age {WAIVERS.get(x['name'])}, booking says {x['age']}")
            if errors:
                raise RuntimeError("HTTP 422 from bookings.andeshill.example: " + "; ".join(errors))
            b.output = {"booking": f"AH-{req['date']}-{len(pairs)}", "status": "confirmed"}
