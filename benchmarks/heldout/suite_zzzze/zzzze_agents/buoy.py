"""A research cruise's mooring-turnaround planner: parse the chief scientist's service request, have a model
plan the spares each mooring needs, then per mooring read the acoustic release's codes and battery, choose
the operation, draw spares from the ship's inventory and remember the assignment; then get the weather
windows, schedule the operations, have a model draft the operations plan, check it and file it with the
cruise management system.

Route: the OpenTelemetry SDK with OpenInference attributes (spans of the agent's own, model calls through
openinference-instrumentation-openai), exported as one OTLP JSON document per run.
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta

from .common import RT, OtelRecorder, json_block, last_user

NAME = "mooring-turnaround"
ROUTE = "otlp"
DOMAIN = "oceanographic mooring service on a research cruise (physical oceanography)"
SHAPE = (
    "agent span -> request parser chain -> llm spares plan -> loop per mooring (release tool, operation "
    "chain, one inventory tool call per instrument, memory chain) -> weather tool -> scheduler chain -> "
    "llm operations plan -> plan guardrail -> filing tool"
)
SWITCH: str | None = None

HS_LIMIT_M = 2.5
OP_HOURS = {"turnaround": 8, "instrument swap": 4}
SPARES = {  # the ship's spare instruments, in the order of the store's list
    "SBE37": [("20388", 2000), ("21102", 2000), ("21560", 2000), ("22410", 3500), ("22415", 7000)],
    "RDI ADCP": [("24980", 1500), ("25011", 6000)],
    "RCM": [("452", 2000), ("467", 6000)],
    "Aquadopp": [("9921", 3000)],
}
RELEASES = {  # release serial -> battery expiry
    "1288": "2027-06-01", "1342": "2026-05-10", "1377": "2027-11-15", "1401": "2028-02-01", "1415": "2026-04-20",
    "1420": "2027-08-30", "1433": "2027-03-01", "1450": "2028-05-01", "1462": "2026-09-01", "1470": "2027-12-01",
    "1488": "2028-01-15", "1491": "2027-05-20", "1502": "2027-10-10", "1517": "2026-06-30", "1523": "2028-03-03",
    "1530": "2027-09-09", "1544": "2027-02-02", "1551": "2027-07-07", "1560": "2028-04-04", "1575": "2027-01-31",
}

LEGS = {
    "HK26-04": {"area": "Faroe-Shetland Channel", "start": "2026-03-14", "end": "2026-03-24", "moorings": [
        ("FSC-1", "61\u00b005.20'N 003\u00b012.40'W", 1020, "1288", "SBE37 s/n 20117, RCM s/n 411"),
        ("FSC-2", "61\u00b012.40'N 004\u00b031.10'W", 1180, "1342", "SBE37 s/n 21944"),
        ("FSC-3", "61\u00b024.00'N 005\u00b002.70'W", 2400, "1377", "SBE37 s/n 22001"),
        ("FSC-4", "60\u00b058.10'N 002\u00b047.90'W", 850, "1401", "RCM s/n 398")]},
    "HK26-05": {"area": "Rockall Trough", "start": "2026-04-02", "end": "2026-04-12", "moorings": [
        ("RT-1", "57\u00b006.00'N 009\u00b033.50'W", 1600, "1415", "SBE37 s/n 20902"),
        ("RT-2", "57\u00b029.80'N 010\u00b051.20'W", 1900, "1420", "SBE37 s/n 21377"),
        ("RT-3", "57\u00b058.40'N 011\u00b012.00'W", 1750, "1433", "SBE37 s/n 21040"),
        ("RT-4", "56\u00b044.10'N 009\u00b002.30'W", 900, "1450", "RCM s/n 402")]},
    "HK26-06": {"area": "Iceland Basin", "start": "2026-04-20", "end": "2026-04-30", "moorings": [
        ("IB-1", "59\u00b012.00'N 019\u00b030.00'W", 2800, "1462", "SBE37 s/n 21210"),
        ("IB-2", "58\u00b047.50'N 020\u00b011.80'W", 2600, "1470", "RDI ADCP s/n 24877"),
        ("IB-3", "59\u00b040.20'N 018\u00b055.40'W", 1400, "1488", "Aquadopp s/n 9804")]},
    "HK26-07": {"area": "Faroe Bank Channel", "start": "2026-05-08", "end": "2026-05-16", "moorings": [
        ("FBC-1", "61\u00b023.10'N 008\u00b016.60'W", 820, "1491", "RCM s/n 388"),
        ("FBC-2", "61\u00b018.70'N 008\u00b035.20'W", 880, "1502", "SBE37 s/n 21944 + RDI ADCP s/n 24510"),
        ("FBC-3", "61\u00b009.40'N 009\u00b001.90'W", 1050, "1517", "SBE37 s/n 20655")]},
    "HK26-08": {"area": "Norwegian Sea, Svinoy section", "start": "2026-05-28", "end": "2026-06-06", "moorings": [
        ("SV-1", "62\u00b048.00'N 004\u00b016.00'E", 480, "1523", "RCM s/n 377"),
        ("SV-2", "63\u00b000.20'N 003\u00b045.10'E", 1000, "1530", "SBE37 s/n 20731, RCM s/n 390"),
        ("SV-3", "63\u00b011.90'N 003\u00b012.50'E", 1420, "1544", "SBE37 s/n 21877"),
        ("SV-4", "63\u00b020.00'N 002\u00b042.00'E", 2000, "1551", "Aquadopp s/n 9790")]},
}
# the cruise management system's register of what is on each mooring (what must come back)
REGISTER = {m[0]: sorted(re.findall(r"s/n (\d+)", m[4])) for leg in LEGS.values() for m in leg["moorings"]}


def _request(leg_id: str) -> str:
    leg = LEGS[leg_id]
    lines = [f"Cruise leg: RV Heinrich Kessler {leg_id}, {leg['start']} to {leg['end']}, {leg['area']}"]
    for mid, pos, depth, rel, inst in leg["moorings"]:
        lines.append(f"{mid} | {pos} | {depth} m | release AR861 s/n {rel} | recover and replace: {inst}")
    return "\n".join(lines)


def _windows(leg_id: str, issued_days_before: int) -> list[dict]:
    """12-hour forecast slots from the leg's start; an older issue saw a calmer spell."""
    start = datetime.fromisoformat(LEGS[leg_id]["start"] + "T00:00")
    base = [1.6, 1.9, 2.2, 3.4, 3.1, 2.0, 1.7, 1.5, 2.4, 2.8, 1.8, 1.6, 1.9, 2.1, 2.6, 2.2, 1.7, 1.5, 1.9, 2.0]
    if leg_id == "HK26-06":
        base = [3.0, 2.9, 3.6, 3.4, 2.2, 1.9, 2.3, 1.8, 1.6, 2.1, 2.7, 2.4, 1.9, 1.7, 2.0, 2.2, 1.8, 1.6, 1.9, 2.1]
    if issued_days_before >= 3 and leg_id == "HK26-06":
        base = [2.1, 1.8, 2.0, 2.3, 2.2, 1.9, 2.3, 1.8, 1.6, 2.1, 2.7, 2.4, 1.9, 1.7, 2.0, 2.2, 1.8, 1.6, 1.9, 2.1]
    return [{"from": (start + timedelta(hours=12 * i)).strftime("%Y-%m-%dT%H:%MZ"),
             "to": (start + timedelta(hours=12 * (i + 1))).strftime("%Y-%m-%dT%H:%MZ"), "hs_m": hs}
            for i, hs in enumerate(base)]


INPUTS = {k: {"task": f"mooring service plan for cruise leg {k}", "request": _request(k)} for k in LEGS}

CASES = [
    {"n": 1, "input": "HK26-04", "kind": "wrong_tool_args", "root": ("ChatCompletion", 1),
     "failure": ("file_plan", 1),
     "description": "The spares plan asks the inventory for an SBE37 rated to 1180 m for FSC-3, copying FSC-2's "
                    "water depth, although FSC-3 stands in 2400 m of water.",
     "what": "min_depth_rating_m 1180 for a 2400 m mooring"},
    {"n": 2, "input": "HK26-05", "kind": "bad_memory_write", "root": ("remember_assignment", 2),
     "failure": ("file_plan", 1),
     "description": "Remembering RT-2's spare replaces the list of SBE37s already assigned instead of adding to "
                    "it, so RT-1's spare 20388 is no longer excluded and is drawn again for RT-3.",
     "what": "assignment memory overwritten instead of appended"},
    {"n": 3, "input": "HK26-06", "kind": "stale_data", "root": ("weather_windows", 1),
     "failure": ("file_plan", 1),
     "description": "The weather tool answers with the wave forecast issued three days before the leg, which "
                    "showed a calm first day that the current forecast no longer has.",
     "what": "three-day-old wave forecast from cache"},
    {"n": 4, "input": "HK26-07", "kind": "lossy_parsing", "root": ("parse_service_request", 1),
     "failure": ("file_plan", 1),
     "description": "The request parser splits FBC-2's instruments on commas only, so 'SBE37 s/n 21944 + RDI "
                    "ADCP s/n 24510' yields the SBE37 alone and the ADCP drops out of the plan.",
     "what": "'+' separated instrument lost"},
    {"n": 5, "input": "HK26-08", "kind": "format_drift", "root": ("ChatCompletion", 2),
     "failure": ("file_plan", 1),
     "description": "The plan-drafting model writes the operation times as '28 May 00:00' style text instead of "
                    "the ISO 8601 UTC times the filing system takes.",
     "what": "operation times drafted as free text"},
]

OTEL = OtelRecorder(NAME)
MEMORY: dict[str, list] = {}


# ---------------------------------------------------------------- the model


def brain(request):
    prompt = last_user(request)
    if prompt.startswith("Plan the spares"):
        moorings = json_block(prompt)
        out, prev_depth = [], None
        for m in moorings:
            rating = m["depth_m"]
            if SWITCH == "zze_buoy_1" and m["id"] == "FSC-3":
                rating = prev_depth
            out.append({"mooring": m["id"], "spares": [{"type": i["type"], "min_depth_rating_m": rating}
                                                       for i in m["instruments"]]})
            prev_depth = m["depth_m"]
        return json.dumps({"plan": out})
    if prompt.startswith("Draft the operations plan"):
        facts = json_block(prompt)
        ops = []
        for op in facts["operations"]:
            start, end = op["start"], op["end"]
            if SWITCH == "zze_buoy_5":
                fmt = lambda t: datetime.strptime(t, "%Y-%m-%dT%H:%MZ").strftime("%d %b %H:%M")  # noqa: E731
                start, end = fmt(start), fmt(end)
            ops.append({**op, "start": start, "end": end})
        return json.dumps({"leg": facts["leg"], "operations": ops,
                           "notes": f"{len(ops)} operations, weather limit Hs {HS_LIMIT_M} m."})
    return "Send the service request."


# ---------------------------------------------------------------- the agent


def _chat(messages: list[dict]) -> str:
    reply = RT.client().chat.completions.create(model=RT.model, messages=messages, temperature=0)
    return reply.choices[0].message.content


def _parse_request(text: str) -> dict:
    with OTEL.span("parse_service_request", "CHAIN", text) as sp:
        lines = text.strip().splitlines()
        head = re.match(r"Cruise leg: (.+?) (\S+), (\S+) to (\S+), (.+)", lines[0])
        moorings = []
        for ln in lines[1:]:
            mid, pos, depth, release, inst = [p.strip() for p in ln.split("|")]
            items = inst.split(": ", 1)[1]
            pieces = items.split(",") if SWITCH == "zze_buoy_4" else re.split(r"[,+]", items)
            instruments = []
            for piece in pieces:
                m = re.match(r"\s*(.+?) s/n (\d+)", piece)
                instruments.append({"type": m.group(1), "sn": m.group(2)})
            moorings.append({"id": mid, "position": pos, "depth_m": int(depth.split()[0]),
                             "release_sn": release.rsplit(" ", 1)[1], "instruments": instruments})
        return sp.output({"ship": head.group(1), "leg": head.group(2), "start": head.group(3), "end": head.group(4),
                          "area": head.group(5), "moorings": moorings})


def _release_codes(sn: str) -> dict:
    with OTEL.span("release_codes", "TOOL", {"release_sn": sn}, **{"tool.name": "release_codes"}) as sp:
        n = int(sn)
        return sp.output({"release_sn": sn, "enable": f"{(n * 7) % 10000:04d}", "release": f"{(n * 13) % 10000:04d}",
                          "battery_expiry": RELEASES[sn]})


def _choose_operation(mooring: dict, release: dict, leg_end: str) -> str:
    with OTEL.span("choose_operation", "CHAIN", {"mooring": mooring["id"], "battery_expiry": release["battery_expiry"],
                                                 "next_service_before": leg_end}) as sp:
        next_service = date.fromisoformat(leg_end) + timedelta(days=365)
        op = "turnaround" if date.fromisoformat(release["battery_expiry"]) < next_service else "instrument swap"
        return sp.output(op)


def _spare_inventory(kind: str, min_rating: int, exclude: list) -> dict:
    args = {"type": kind, "min_depth_rating_m": min_rating, "exclude": exclude}
    with OTEL.span("spare_inventory", "TOOL", args, **{"tool.name": "spare_inventory"}) as sp:
        for sn, rating in SPARES[kind]:
            if rating >= min_rating and sn not in exclude:
                return sp.output({"type": kind, "sn": sn, "rating_m": rating, "available": True})
        return sp.output({"type": kind, "available": False})


def _remember(mooring: str, assigned: list[dict]) -> dict:
    with OTEL.span("remember_assignment", "CHAIN", {"mooring": mooring, "assigned": assigned}) as sp:
        for a in assigned:
            held = MEMORY.get(a["type"], [])
            MEMORY[a["type"]] = [a["sn"]] if SWITCH == "zze_buoy_2" else [*held, a["sn"]]
        return sp.output({k: list(v) for k, v in MEMORY.items()})


def _weather(area: str, start: str, end: str) -> dict:
    with OTEL.span("weather_windows", "TOOL", {"area": area, "from": start, "to": end},
                   **{"tool.name": "weather_windows"}) as sp:
        leg = next(k for k, v in LEGS.items() if v["area"] == area)
        issued = 3 if SWITCH == "zze_buoy_3" else 0
        when = (date.fromisoformat(start) - timedelta(days=issued)).isoformat()
        return sp.output({"area": area, "issued": f"{when}T06:00Z", "slots": _windows(leg, issued)})


def _schedule(ops: list[dict], weather: dict) -> list[dict]:
    with OTEL.span("schedule_operations", "CHAIN", {"operations": ops, "forecast": weather}) as sp:
        out, t = [], None
        for op in ops:
            hours = OP_HOURS[op["op"]]
            for slot in weather["slots"]:
                s0 = datetime.strptime(slot["from"], "%Y-%m-%dT%H:%MZ")
                s1 = datetime.strptime(slot["to"], "%Y-%m-%dT%H:%MZ")
                begin = max(s0, t) if t else s0
                if slot["hs_m"] <= HS_LIMIT_M and begin + timedelta(hours=hours) <= s1:
                    t = begin + timedelta(hours=hours)
                    out.append({**op, "start": begin.strftime("%Y-%m-%dT%H:%MZ"), "end": t.strftime("%Y-%m-%dT%H:%MZ")})
                    break
        return sp.output(out)


def _validate_plan(plan: dict, moorings: list) -> str:
    with OTEL.span("validate_plan", "GUARDRAIL", plan) as sp:
        if len(plan["operations"]) != len(moorings):
            raise ValueError(f"{len(plan['operations'])} operations planned for {len(moorings)} moorings")
        return sp.output("every mooring has an operation")


def _file_plan(plan: dict, leg_id: str) -> dict:
    with OTEL.span("file_plan", "TOOL", plan, **{"tool.name": "file_plan"}) as sp:
        for op in plan["operations"]:
            for key in ("start", "end"):
                try:
                    datetime.strptime(op[key], "%Y-%m-%dT%H:%MZ")
                except ValueError:
                    raise ValueError(f"{op['mooring']}: {key} {op[key]!r} is not an ISO 8601 UTC time") from None
        depths = {m[0]: m[2] for m in LEGS[leg_id]["moorings"]}
        for op in plan["operations"]:
            missing = sorted(set(REGISTER[op["mooring"]]) - set(op["recover"]))
            if missing:
                raise ValueError(f"{op['mooring']}: instruments s/n {', '.join(missing)} are on the mooring register "
                                 f"but not in the plan's recovery list")
        for op in plan["operations"]:
            for s in op["deploy"]:
                if s["rating_m"] < depths[op["mooring"]]:
                    raise ValueError(f"{op['mooring']}: spare {s['type']} s/n {s['sn']} is rated to {s['rating_m']} m, "
                                     f"the mooring stands in {depths[op['mooring']]} m of water")
        seen: dict[str, str] = {}
        for op in plan["operations"]:
            for s in op["deploy"]:
                if s["sn"] in seen:
                    raise ValueError(f"spare {s['type']} s/n {s['sn']} is assigned to both {seen[s['sn']]} and "
                                     f"{op['mooring']}")
                seen[s["sn"]] = op["mooring"]
        current = _windows(leg_id, 0)
        for op in plan["operations"]:
            t0 = datetime.strptime(op["start"], "%Y-%m-%dT%H:%MZ")
            for slot in current:
                if datetime.strptime(slot["from"], "%Y-%m-%dT%H:%MZ") <= t0 < datetime.strptime(slot["to"], "%Y-%m-%dT%H:%MZ"):
                    if slot["hs_m"] > HS_LIMIT_M:
                        raise ValueError(f"{op['mooring']}: {op['op']} at {op['start']} falls in a slot with "
                                         f"significant wave height {slot['hs_m']} m in today's forecast "
                                         f"(limit {HS_LIMIT_M} m)")
        return sp.output({"filed": True, "reference": f"CMS-{leg_id}-OPS", "operations": len(plan["operations"])})


def plan_leg(key: str) -> dict:
    inp = INPUTS[key]
    with OTEL.span(NAME, "AGENT", inp["request"], metadata=json.dumps({"task": inp["task"]}),
                   **{"agent.name": NAME}) as top:
        req = _parse_request(inp["request"])
        spares_plan = json_block(_chat([
            {"role": "system", "content": "You plan mooring spares. Answer with JSON."},
            {"role": "user", "content": "Plan the spares for these moorings (each replacement must be rated for the "
                                        "water depth): " + json.dumps(req["moorings"])}]))["plan"]
        by_mooring = {p["mooring"]: p for p in spares_plan}
        ops = []
        for m in req["moorings"]:
            release = _release_codes(m["release_sn"])
            op = _choose_operation(m, release, req["end"])
            deploy = []
            for need in by_mooring[m["id"]]["spares"]:
                got = _spare_inventory(need["type"], need["min_depth_rating_m"], list(MEMORY.get(need["type"], [])))
                deploy.append({"type": got["type"], "sn": got.get("sn"), "rating_m": got.get("rating_m", 0)})
            _remember(m["id"], deploy)
            ops.append({"mooring": m["id"], "op": op, "recover": [i["sn"] for i in m["instruments"]],
                        "deploy": deploy, "release_codes": {"enable": release["enable"], "release": release["release"]}})
        weather = _weather(req["area"], req["start"], req["end"])
        scheduled = _schedule(ops, weather)
        plan = json_block(_chat([
            {"role": "system", "content": "You draft the cruise's mooring operations plan as JSON; times in ISO 8601 "
                                          "UTC (YYYY-MM-DDTHH:MMZ)."},
            {"role": "user", "content": "Draft the operations plan from this schedule: " + json.dumps(
                {"leg": req["leg"], "operations": scheduled})}]))
        _validate_plan(plan, req["moorings"])
        return top.output(_file_plan(plan, key))


def setup() -> None:
    OTEL.setup()


def teardown() -> None:
    OTEL.teardown()


def execute(key: str, path: str) -> None:
    MEMORY.clear()
    OTEL.begin()
    try:
        plan_leg(key)
    except ValueError:
        pass
    OTEL.export(path)
