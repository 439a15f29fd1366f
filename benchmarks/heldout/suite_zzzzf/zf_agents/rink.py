"""rink-ice-day: an ice rink's day planner for one ice pad (OpenTelemetry + OpenInference, OTLP JSON).

The planner reads the booking export (CSV text) and parses it, works out the pad's skater limit from the
facility record, checks each public session against it (guardrail spans), retrieves the resurfacing policy,
asks the model (the openai client, instrumented by OpenInference) for the resurfacing plan and the first ice
setpoint, reads the ice plant and sets the setpoint, books the resurfacers in parallel, opens the public
sessions at the gates, publishes the schedule and asks the model for the duty brief.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from ._common import Env, Spans, between, in_context_map, last_user, openai_client, system_text

NAME = "rink-ice-day"
ROUTE = "otlp"
DOMAIN = "ice rink: daily ice schedule, resurfacing and gates"
SHAPE = "OTel/OpenInference spans: booking export tool + CSV parser chain, facility tool + limit chain, guardrail per public session, policy retriever, LLM plan (instrumented openai) + JSON chain, ice-plant read and setpoint tools, parallel resurfacer bookings, gate tool per public session, publish tool, LLM brief"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


EXPORTS: dict[tuple[str, str], list[str]] = {
    ("2025-11-08", "Main"): [
        "RB-1170,08:00-09:30,Northgate Figure Club,figure,22",
        "RB-1172,09:45-11:15,Saturday Public Skate,public,260",
        "RB-1175,11:30-12:30,Learn to Skate L1-L3,lesson,40",
        "RB-1178,12:45-14:15,Saturday Public Skate,public,310",
        "RB-1181,14:30-15:30,Hawks U12,hockey,28",
        "RB-1184,15:45-17:15,Disco on Ice,public,280",
        'RB-1187,17:30-19:00,"Hawks U14, Hawks U16",hockey,34',
    ],
    ("2025-11-08", "Studio"): [
        "RB-2101,09:00-10:30,Synchro Juniors,figure,18",
        "RB-2103,10:45-12:15,Parent and Toddler Skate,public,60",
        "RB-2106,12:30-14:00,Studio Public Skate,public,150",
        "RB-2109,14:15-15:15,Curling Taster,lesson,24",
    ],
    ("2025-11-09", "Main"): [
        "RB-1201,09:00-10:00,Learn to Skate L4-L6,lesson,36",
        "RB-1203,10:15-11:45,Sunday Public Skate,public,290",
        "RB-1206,12:00-13:00,Hawks U12,hockey,26",
        "RB-1208,13:15-14:45,Sunday Public Skate,public,330",
        "RB-1211,15:00-16:30,Northgate Figure Club,figure,20",
        "RB-1214,16:45-18:00,Adult Rec Hockey,hockey,30",
    ],
    ("2025-11-09", "Studio"): [
        "RB-2121,08:30-09:30,Sledge Hockey,hockey,14",
        "RB-2123,09:45-11:15,Studio Public Skate,public,140",
        "RB-2126,11:30-12:30,Adult Learn to Skate,lesson,20",
        "RB-2128,12:45-14:15,Synchro Seniors,figure,16",
    ],
    ("2025-11-10", "Main"): [
        "RB-1231,07:00-08:30,Northgate Figure Club,figure,18",
        "RB-1233,09:00-10:00,School Skate: Hill Primary,lesson,60",
        "RB-1236,10:15-11:45,Weekday Public Skate,public,180",
        "RB-1239,12:00-13:00,Hawks U10,hockey,24",
        "RB-1242,13:15-14:45,Weekday Public Skate,public,210",
    ],
}

FACILITY = {
    "Main": {"pad": "Main", "surface": "60 x 30 m", "area": 1800, "area_unit": "m2", "fire_limit": 520,
             "ceiling_c": -3.0, "resurfacer": "Zamboni 552"},
    "Studio": {"pad": "Studio", "surface": "38 x 17 m", "area": 6700, "area_unit": "ft2", "fire_limit": 180,
               "ceiling_c": -3.0, "resurfacer": "Olympia Millennium"},
}

PLANT = {("2025-11-08", "Main"): -3.8, ("2025-11-08", "Studio"): -3.6, ("2025-11-09", "Main"): -4.6,
         ("2025-11-09", "Studio"): -3.7, ("2025-11-10", "Main"): -3.6}

POLICIES = [
    {"id": "ICE-POL-03", "pad": "Studio", "title": "Studio pad resurfacing and ice temperature",
     "content": "Studio pad (rule SP-2): resurface after at most 120 minutes of skating; each resurface takes 10 minutes. "
                "Ice temperature targets: hockey -5.5 C, figure -3.5 C, public -4.5 C, lesson -4.5 C."},
    {"id": "ICE-POL-01", "pad": "Main", "title": "Main pad resurfacing and ice temperature",
     "content": "Main pad (rule MP-4): resurface after every hockey session and after at most 90 minutes of other "
                "skating; each resurface takes 15 minutes. Ice temperature targets: hockey -5.5 C, figure -3.5 C, "
                "public -4.5 C, lesson -4.5 C."},
    {"id": "OPS-11", "pad": "all", "title": "Skate hire sizes", "content": "Hire skates run UK 9 kids to UK 13 adult."},
    {"id": "OPS-14", "pad": "all", "title": "Lost property", "content": "Lost property is kept for 30 days at reception."},
]

INPUTS: list[dict[str, Any]] = [
    {"request_id": "ICE-1108-M", "date": "2025-11-08", "pad": "Main"},
    {"request_id": "ICE-1108-S", "date": "2025-11-08", "pad": "Studio"},
    {"request_id": "ICE-1109-M", "date": "2025-11-09", "pad": "Main"},
    {"request_id": "ICE-1109-S", "date": "2025-11-09", "pad": "Studio"},
    {"request_id": "ICE-1110-M", "date": "2025-11-10", "pad": "Main"},
]


def _mins(t: str) -> int:
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def _hhmm(m: int) -> str:
    return f"{m // 60:02d}:{m % 60:02d}"


# --- tools -----------------------------------------------------------------------------------------------


def booking_export(date: str, pad: str) -> str:
    return "ref,time,group,type,skaters\n" + "\n".join(EXPORTS[(date, pad)])


def facility_record(pad: str) -> dict:
    return dict(FACILITY[pad])


def ice_plant_reading(pad: str, date: str) -> dict:
    if _on("plant_pad"):
        pad = "Main"
    return {"pad": pad, "date": date, "at": "06:40", "surface_c": PLANT[(date, pad)], "brine_c": -9.1}


def set_ice_setpoint(pad: str, date: str, setpoint_c: float) -> dict:
    now = PLANT[(date, pad)]
    ceiling = FACILITY[pad]["ceiling_c"]
    if setpoint_c > ceiling:
        raise ValueError(f"ice plant: {pad} pad setpoint {setpoint_c} C is above the {ceiling} C ceiling")
    step = round(abs(setpoint_c - now), 1)
    if step > 1.5:
        raise ValueError(f"ice plant: {pad} pad setpoint {setpoint_c} C is a {step} C step from the {now} C "
                         f"surface (max 1.5 C per change)")
    return {"pad": pad, "setpoint_c": setpoint_c, "from_c": now, "status": "accepted"}


def book_resurfacer(machine: str, pad: str, start: str, minutes: int) -> dict:
    return {"machine": machine, "pad": pad, "start": start, "end": _hhmm(_mins(start) + minutes), "status": "booked"}


def open_gate(pad: str, ref: str, session: str, ticket_cap: int) -> dict:
    limit = FACILITY[pad]["fire_limit"]
    if ticket_cap > limit:
        raise ValueError(f"gate system: {pad} pad {session} ({ref}): ticket cap {ticket_cap} is over the fire "
                         f"certificate's {limit}")
    return {"pad": pad, "ref": ref, "ticket_cap": ticket_cap, "status": "open for sale"}


def publish_schedule(date: str, pad: str, sessions: list, resurfaces: list) -> dict:
    refs = {s["ref"] for s in sessions}
    for line in EXPORTS[(date, pad)]:
        row = next(csv.reader([line]))
        if row[0] not in refs:
            raise ValueError(f"booking portal: {row[0]} ({row[2]}, {row[1]}) is missing from the {pad} pad schedule")
    after = {r["start"] for r in resurfaces}
    if pad == "Main":
        for s in sessions:
            if s["type"] == "hockey" and s["end"] not in after:
                nxt = next((n for n in sessions if n["start"] > s["start"]), None)
                raise ValueError(f"booking portal: no resurface between {s['group']} ({s['start']}-{s['end']}) and "
                                 f"{nxt['group'] if nxt else 'close'}; rule MP-4 requires one after every hockey session")
    return {"date": date, "pad": pad, "sessions": len(sessions), "resurfaces": len(resurfaces), "status": "published"}


def _search(query: str, pad: str) -> list[dict]:
    words = set(query.lower().replace(",", " ").split())
    scored = []
    for p in POLICIES:
        if not _on("policy_scope") and p["pad"] not in (pad, "all"):
            continue
        text = (p["title"] + " " + p["content"]).lower()
        overlap = sum(1 for w in words if w in text)
        scored.append((overlap / max(1, len(words)), p))
    scored.sort(key=lambda x: -x[0])
    return [{"id": p["id"], "content": p["content"], "score": round(s, 3), "metadata": {"title": p["title"], "pad": p["pad"]}}
            for s, p in scored[:2]]


# --- the agent ---------------------------------------------------------------------------------------------

PLAN_PROMPT = ("You plan the ice for one pad. Using the policy, list every resurface (start at the end of the "
               "session it follows, the policy's minutes, the pad's resurfacer) and the setpoint for the first "
               "session. Answer JSON: {\"resurfaces\": [{\"after\", \"start\", \"minutes\", \"machine\"}], "
               "\"first_setpoint_c\": number}.")
BRIEF_PROMPT = "Write the duty manager's two-line ice brief for the day."


def _parse_export(text: str) -> list[dict]:
    lines = text.strip().splitlines()[1:]
    out = []
    if _on("export_split"):
        for line in lines:
            parts = line.split(",")
            if len(parts) != 5:
                continue
            out.append(parts)
        rows = out
    else:
        rows = list(csv.reader(lines))
    sessions = []
    for ref, span, group, typ, n in rows:
        start, end = span.split("-")
        sessions.append({"ref": ref, "start": start, "end": end, "group": group, "type": typ, "skaters": int(n)})
    return sessions


def _limit(record: dict) -> dict:
    area = record["area"]
    if record["area_unit"] == "ft2" and not _on("area_units"):
        area = area * 0.0929
    return {"pad": record["pad"], "area_m2": round(area), "m2_per_skater": 3.5, "max_skaters": math.floor(area / 3.5)}


def _agent(sp: Spans, env: Env, inp: dict) -> dict:
    date, pad = inp["date"], inp["pad"]
    client = openai_client(env)
    export = sp.tool("booking_export", booking_export, {"date": date, "pad": pad})
    with sp.step("parse_export", "CHAIN", export) as s:
        sessions = s.output = _parse_export(export)
    record = sp.tool("facility_record", facility_record, {"pad": pad})
    with sp.step("skater_limit", "CHAIN", record) as s:
        limit = s.output = _limit(record)
    for sess in [x for x in sessions if x["type"] == "public"]:
        with sp.step("capacity_check", "GUARDRAIL", {"session": sess, "max_skaters": limit["max_skaters"]}) as s:
            if sess["skaters"] > limit["max_skaters"]:
                raise ValueError(f"{sess['ref']}: {sess['skaters']} pre-sold over the {limit['max_skaters']} limit")
            s.output = {"ref": sess["ref"], "passed": True, "headroom": limit["max_skaters"] - sess["skaters"]}
    docs = sp.retriever("search_ice_policy", lambda q: _search(q, pad),
                        "resurfacing rule minutes ice temperature targets hockey public lesson")
    plan_text = client.chat.completions.create(model=env.model, temperature=0, messages=[
        {"role": "system", "content": PLAN_PROMPT},
        {"role": "user", "content": f"Pad: {pad}\nResurfacer: {record['resurfacer']}\nSessions: {json.dumps(sessions)}\n"
                                    f"Policy: {docs[0]['content']}"},
    ]).choices[0].message.content or ""
    with sp.step("parse_plan", "CHAIN", plan_text) as s:
        plan = s.output = json.loads(plan_text[plan_text.index("{"): plan_text.rindex("}") + 1])
    reading = sp.tool("ice_plant_reading", ice_plant_reading, {"pad": pad, "date": date})
    target = plan["first_setpoint_c"]
    now = reading["surface_c"]
    setpoint = target if abs(target - now) <= 1.5 else round(now + math.copysign(1.5, target - now), 1)
    sp.tool("set_ice_setpoint", set_ice_setpoint, {"pad": pad, "date": date, "setpoint_c": setpoint})
    booked = in_context_map(lambda r: sp.tool("book_resurfacer", book_resurfacer, {
        "machine": r["machine"], "pad": pad, "start": r["start"], "minutes": r["minutes"]}), plan["resurfaces"])
    for sess in [x for x in sessions if x["type"] == "public"]:
        cap = min(limit["max_skaters"], 400)
        sp.tool("open_gate", open_gate, {"pad": pad, "ref": sess["ref"], "session": f"{sess['group']} {sess['start']}",
                                         "ticket_cap": cap})
    result = sp.tool("publish_schedule", publish_schedule, {"date": date, "pad": pad, "sessions": sessions,
                                                            "resurfaces": booked})
    brief = client.chat.completions.create(model=env.model, temperature=0, messages=[
        {"role": "system", "content": BRIEF_PROMPT},
        {"role": "user", "content": json.dumps({"pad": pad, "date": date, "sessions": len(sessions),
                                                "resurfaces": [r["start"] for r in booked], "setpoint_c": setpoint})},
    ]).choices[0].message.content
    return {"result": result, "brief": brief}


def run(inp: dict, out: Path, env: Env) -> dict:
    sp = Spans(env.otel.tracer("rink-ice-day"))
    env.otel.begin()
    task = f"ice day {inp['pad']} pad {inp['date']}"
    with sp.step("rink-ice-day", "AGENT", inp, {"agent.name": "rink-ice-day", "metadata": json.dumps({"task": task}),
                                                 "session.id": inp["request_id"]}) as root:
        root.output = _agent(sp, env, inp)
    return env.otel.document()


# --- the model ---------------------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    system = system_text(request)
    user = last_user(request)
    if system.startswith("You plan the ice"):
        sessions = json.loads(between(user, "Sessions: "))
        policy = between(user, "Policy: ")
        machine = between(user, "Resurfacer: ")
        every_hockey = "after every hockey session" in policy
        limit = int(policy.split("after at most ", 1)[1].split(" minutes")[0])
        minutes = int(policy.split("each resurface takes ", 1)[1].split(" minutes")[0])
        targets = {k: float(v) for k, v in (p.strip().rsplit(" ", 2)[:2] for p in
                   policy.split("targets: ", 1)[1].rstrip(".").replace(" C", "").split(","))}
        resurfaces, since = [], 0
        for i, s in enumerate(sessions):
            since += _mins(s["end"]) - _mins(s["start"])
            last = i == len(sessions) - 1
            if last or since >= limit or (every_hockey and s["type"] == "hockey"):
                resurfaces.append({"after": s["ref"], "start": s["end"], "minutes": minutes, "machine": machine})
                since = 0
        first = targets[sessions[0]["type"]]
        if _on("setpoint_guess"):
            first = -2.8
        return json.dumps({"resurfaces": resurfaces, "first_setpoint_c": first})
    if system.startswith("Write the duty manager"):
        d = json.loads(user)
        return (f"{d['pad']} pad, {d['date']}: {d['sessions']} sessions, setpoint {d['setpoint_c']} C. "
                f"Resurfaces at {', '.join(d['resurfaces'])}.")
    return "I plan ice only."
