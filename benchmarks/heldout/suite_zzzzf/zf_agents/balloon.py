"""balloon-dispatch: a hot-air balloon ride operator's dawn flight dispatch (trajdebug's own recorder, JSONL).

The dispatcher gathers the day's bookings, the forecast and the fleet in parallel, parses the booking
manifest, asks the model for the pilot brief, routes each passenger to a basket type, seats them, checks
each envelope's payload against its load chart, keeps the loads in run memory, asks the model to pick a
landing field (a tool call to the landowner line), sends the chase crews and checks the whole dispatch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openai import OpenAI

import trajdebug

from ._common import Env, between, last_user, messages, openai_client, system_text

NAME = "balloon-dispatch"
ROUTE = "sdk"
DOMAIN = "hot-air balloon rides: dawn flight dispatch"
SHAPE = "parallel fetches (one retried), manifest parser, LLM brief + JSON parse, per-passenger routing loop, seating, per-envelope load-chart loop, run.state memory, retriever, LLM tool-call loop, chase orders, final check"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


LB_TO_KG = 0.4536
PILOT_KG = 90.0

SITES: dict[str, dict[str, Any]] = {
    "Wolds Meadow": {
        "fleet": [
            {"reg": "G-WOLD", "seats": 8, "door": True, "envelope": "Cameron Z-210", "pilot": "Hal Boyd"},
            {"reg": "G-CVXA", "seats": 6, "door": False, "envelope": "Lindstrand 150", "pilot": "Sue Marr"},
        ],
        "fields": [
            {"field": "Hobb's Lane", "farm": "Hobb Farm", "agreement_id": "LA-2209", "bearing": (40, 100), "status": "active"},
            {"field": "Lower Carr", "farm": "Carr Estate", "agreement_id": "LA-1187", "bearing": (60, 130), "status": "active"},
            {"field": "Sandpit Ley", "farm": "Ley Holdings", "agreement_id": "LA-0932", "bearing": (200, 260), "status": "active"},
            {"field": "Mill Hollow", "farm": "Hollow Farm", "agreement_id": "LA-3015", "bearing": (250, 320), "status": "lapsed"},
        ],
    },
    "Tarn Hill": {
        "fleet": [
            {"reg": "G-TARN", "seats": 8, "door": True, "envelope": "Cameron Z-210", "pilot": "Ines Polk"},
            {"reg": "G-BEKO", "seats": 6, "door": False, "envelope": "Lindstrand 150", "pilot": "Ravi Shah"},
        ],
        "fields": [
            {"field": "Fell Gate", "farm": "Gate Farm", "agreement_id": "LA-4410", "bearing": (30, 90), "status": "active"},
            {"field": "Beck Side", "farm": "Beck Farm", "agreement_id": "LA-4476", "bearing": (80, 140), "status": "active"},
            {"field": "High Rigg", "farm": "Rigg Estate", "agreement_id": "LA-3902", "bearing": (220, 280), "status": "active"},
        ],
    },
    "Kelby Park": {
        "fleet": [
            {"reg": "G-KELB", "seats": 8, "door": True, "envelope": "Cameron Z-210", "pilot": "Tom Earl"},
            {"reg": "G-OHMS", "seats": 6, "door": False, "envelope": "Lindstrand 150", "pilot": "Ada Venn"},
        ],
        "fields": [
            {"field": "Orchard Piece", "farm": "Kelby Orchards", "agreement_id": "LA-5120", "bearing": (150, 210), "status": "active"},
            {"field": "Long Acre", "farm": "Acre Farm", "agreement_id": "LA-5147", "bearing": (170, 240), "status": "active"},
            {"field": "Church Close", "farm": "Glebe Trust", "agreement_id": "LA-5009", "bearing": (20, 70), "status": "active"},
        ],
    },
    "Ashcombe Down": {
        "fleet": [
            {"reg": "G-ASHD", "seats": 8, "door": True, "envelope": "Cameron Z-210", "pilot": "Nell Rooke"},
            {"reg": "G-FLIX", "seats": 6, "door": False, "envelope": "Lindstrand 150", "pilot": "Owen Pratt"},
        ],
        "fields": [
            {"field": "Barrow Field", "farm": "Down Farm", "agreement_id": "LA-6601", "bearing": (60, 120), "status": "active"},
            {"field": "Coombe Bottom", "farm": "Coombe Estate", "agreement_id": "LA-6633", "bearing": (90, 150), "status": "active"},
            {"field": "Sheep Wash", "farm": "Wash Farm", "agreement_id": "LA-6590", "bearing": (280, 340), "status": "active"},
        ],
    },
    "Fenmoor Green": {
        "fleet": [
            {"reg": "G-REED", "seats": 6, "door": False, "envelope": "Lindstrand 150", "pilot": "Kit Dane"},
            {"reg": "G-FENM", "seats": 8, "door": True, "envelope": "Cameron Z-210", "pilot": "Lou Fisk"},
        ],
        "fields": [
            {"field": "Drove End", "farm": "Drove Farm", "agreement_id": "LA-7204", "bearing": (0, 50), "status": "active"},
            {"field": "Sluice Meadow", "farm": "Fen Board", "agreement_id": "LA-7251", "bearing": (30, 80), "status": "active"},
            {"field": "Willow Carr", "farm": "Carr Trust", "agreement_id": "LA-7188", "bearing": (180, 230), "status": "active"},
        ],
    },
}

CHASE_VANS = [{"van": "CV-2", "seats": 6, "driver": "Pete Lamb"}, {"van": "CV-1", "seats": 9, "driver": "Jo Kerr"}]


def _lines(*rows: tuple[str, str, str, str]) -> list[str]:
    return [f"{ref} | {name} | {w} | {notes}" for ref, name, w, notes in rows]


BOOKINGS: dict[str, list[str]] = {
    "2025-06-11": _lines(
        ("BK-7781", "Ana Ruiz", "64 kg", "birthday"),
        ("BK-7782", "Luis Ruiz", "81 kg", ""),
        ("BK-7785", "Dale Hunter", "231 lb", "first flight"),
        ("BK-7786", "Gwen Hunter", "152 lb", ""),
        ("BK-7790", "Priya Nair", "58 kg", ""),
        ("BK-7791", "Sam Nair", "77 kg", ""),
        ("BK-7793", "Mo Lindqvist", "88 kg", "step-free boarding"),
        ("BK-7794", "Eve Cole", "70 kg", ""),
        ("BK-7795", "Ray Cole", "92 kg", "anniversary"),
        ("BK-7798", "Tess Ford", "66 kg", ""),
        ("BK-7799", "Ned Ford", "79 kg", ""),
    ),
    "2025-06-12": _lines(
        ("BK-7802", "Iris Bell", "61 kg", ""),
        ("BK-7803", "Carl Bell", "84 kg", ""),
        ("BK-7806", "Olu Adeyemi", "90 kg", "no ladder: knee brace"),
        ("BK-7807", "Zara Adeyemi", "63 kg", ""),
        ("BK-7810", "Finn Walsh", "75 kg", "proposal"),
        ("BK-7811", "Mia Walsh", "59 kg", ""),
        ("BK-7814", "Jon Pike", "95 kg", ""),
        ("BK-7815", "Lea Pike", "68 kg", ""),
        ("BK-7818", "Abe Stone", "83 kg", "step-free boarding"),
    ),
    "2025-06-13": _lines(
        ("BK-7821", "Rita Moss", "72 kg", ""),
        ("BK-7822", "Hugh Moss", "86 kg", ""),
        ("BK-7825", "Kim Soto", "55 kg", ""),
        ("BK-7826", "Dev Soto", "78 kg", ""),
        ("BK-7829", "Una Grey", "67 kg", "wheelchair user"),
        ("BK-7830", "Bo Grey", "80 kg", ""),
        ("BK-7833", "Liv Hart", "62 kg", ""),
        ("BK-7834", "Max Hart", "91 kg", ""),
        ("BK-7837", "Pat Quinn", "165 lb", ""),
        ("BK-7838", "Val Quinn", "128 lb", ""),
    ),
    "2025-06-14": _lines(
        ("BK-7841", "Gus Yates", "88 kg", ""),
        ("BK-7842", "Ivy Yates", "60 kg", ""),
        ("BK-7845", "Noor Aziz", "57 kg", ""),
        ("BK-7846", "Tariq Aziz", "82 kg", ""),
        ("BK-7849", "Cleo Marsh", "64 kg", ""),
        ("BK-7850", "Rob Marsh", "87 kg", ""),
        ("BK-7853", "Ola Berg", "71 kg", ""),
        ("BK-7854", "Leif Berg", "85 kg", ""),
        ("BK-7857", "Amy Tran", "54 kg", ""),
        ("BK-7858", "Kai Tran", "69 kg", ""),
        ("BK-7861", "Fay Lowe", "74 kg", "step-free boarding"),
        ("BK-7862", "Ben Lowe", "90 kg", ""),
    ),
    "2025-06-15": _lines(
        ("BK-7871", "Hana Sato", "52 kg", ""),
        ("BK-7872", "Ken Sato", "74 kg", ""),
        ("BK-7875", "Joy Okafor", "68 kg", "wheelchair user"),
        ("BK-7876", "Chidi Okafor", "93 kg", ""),
        ("BK-7879", "Lars Holm", "189 lb", ""),
        ("BK-7880", "Siv Holm", "134 lb", ""),
        ("BK-7883", "Ed Prior", "79 kg", ""),
        ("BK-7884", "Meg Prior", "62 kg", ""),
        ("BK-7887", "Ian Roe", "84 kg", ""),
        ("BK-7888", "Dot Roe", "66 kg", ""),
        ("BK-7891", "Cy Vance", "77 kg", ""),
        ("BK-7892", "Ava Vance", "61 kg", ""),
        ("BK-7895", "Ty Burke", "88 kg", ""),
    ),
}

# Hourly forecast for the launch site: surface wind, the 2,000 ft wind (from), temperature.
FORECASTS: dict[tuple[str, str], dict[str, Any]] = {
    ("Wolds Meadow", "2025-06-11"): {"issued": "2025-06-10T19:00Z", "hours": [
        {"t": "04:30", "sfc_kt": 3, "dir_2000ft": 250, "kt_2000ft": 12, "temp_c": 9},
        {"t": "05:30", "sfc_kt": 4, "dir_2000ft": 255, "kt_2000ft": 13, "temp_c": 10},
        {"t": "06:30", "sfc_kt": 7, "dir_2000ft": 260, "kt_2000ft": 15, "temp_c": 12}]},
    ("Tarn Hill", "2025-06-12"): {"issued": "2025-06-11T19:00Z", "hours": [
        {"t": "04:30", "sfc_kt": 2, "dir_2000ft": 240, "kt_2000ft": 10, "temp_c": 8},
        {"t": "05:30", "sfc_kt": 3, "dir_2000ft": 245, "kt_2000ft": 11, "temp_c": 9},
        {"t": "06:30", "sfc_kt": 6, "dir_2000ft": 250, "kt_2000ft": 14, "temp_c": 11}]},
    ("Kelby Park", "2025-06-13"): {"issued": "2025-06-12T19:00Z", "hours": [
        {"t": "04:30", "sfc_kt": 9, "dir_2000ft": 10, "kt_2000ft": 16, "temp_c": 11},
        {"t": "05:30", "sfc_kt": 5, "dir_2000ft": 5, "kt_2000ft": 14, "temp_c": 12},
        {"t": "06:30", "sfc_kt": 6, "dir_2000ft": 0, "kt_2000ft": 15, "temp_c": 13}]},
    ("Ashcombe Down", "2025-06-14"): {"issued": "2025-06-13T19:00Z", "hours": [
        {"t": "04:30", "sfc_kt": 4, "dir_2000ft": 275, "kt_2000ft": 11, "temp_c": 10},
        {"t": "05:30", "sfc_kt": 5, "dir_2000ft": 280, "kt_2000ft": 12, "temp_c": 11},
        {"t": "06:30", "sfc_kt": 8, "dir_2000ft": 285, "kt_2000ft": 16, "temp_c": 13}]},
    ("Fenmoor Green", "2025-06-15"): {"issued": "2025-06-14T19:00Z", "hours": [
        {"t": "04:30", "sfc_kt": 2, "dir_2000ft": 200, "kt_2000ft": 9, "temp_c": 7},
        {"t": "05:30", "sfc_kt": 3, "dir_2000ft": 205, "kt_2000ft": 10, "temp_c": 8},
        {"t": "06:30", "sfc_kt": 5, "dir_2000ft": 210, "kt_2000ft": 12, "temp_c": 10}]},
}

OBSERVED = {"Wolds Meadow": 4, "Tarn Hill": 3, "Kelby Park": 5, "Ashcombe Down": 5, "Fenmoor Green": 3}

INPUTS: list[dict[str, Any]] = [
    {"request_id": "DSP-0611-WM", "site": "Wolds Meadow", "flight_date": "2025-06-11", "slot": "dawn"},
    {"request_id": "DSP-0612-TH", "site": "Tarn Hill", "flight_date": "2025-06-12", "slot": "dawn"},
    {"request_id": "DSP-0613-KP", "site": "Kelby Park", "flight_date": "2025-06-13", "slot": "dawn"},
    {"request_id": "DSP-0614-AD", "site": "Ashcombe Down", "flight_date": "2025-06-14", "slot": "dawn"},
    {"request_id": "DSP-0615-FG", "site": "Fenmoor Green", "flight_date": "2025-06-15", "slot": "dawn"},
]

_forecast_calls: dict[str, int] = {}
_client: OpenAI | None = None
_model = "gpt-4o-mini"


# --- tools -------------------------------------------------------------------------------------------


@trajdebug.step(kind="input")
def receive_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def fetch_bookings(site: str, flight_date: str) -> dict:
    lines = list(BOOKINGS[flight_date])
    return {"site": site, "flight_date": flight_date, "lines": lines, "count": len(lines)}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_forecast(site: str, flight_date: str) -> dict:
    n = _forecast_calls[site] = _forecast_calls.get(site, 0) + 1
    if site == "Kelby Park" and n == 1:
        raise ConnectionError("met office point-forecast API: 503 Service Unavailable")
    return {"site": site, "flight_date": flight_date, **json.loads(json.dumps(FORECASTS[(site, flight_date)]))}


@trajdebug.step(kind="tool")
def fetch_fleet(site: str) -> list:
    return [dict(b) for b in SITES[site]["fleet"]]


@trajdebug.step(kind="agent")
def gather(site: str, flight_date: str) -> dict:
    with trajdebug.ContextThreadPoolExecutor(max_workers=3) as pool:
        b = pool.submit(fetch_bookings, site, flight_date)
        f = pool.submit(fetch_forecast, site, flight_date)
        fl = pool.submit(fetch_fleet, site)
        return {"bookings": b.result(), "forecast": f.result(), "fleet": fl.result()}


@trajdebug.step(kind="parse")
def parse_manifest(lines: list) -> list:
    pound_units = ("lbs",) if _on("manifest_units") else ("lb", "lbs")
    out = []
    for line in lines:
        ref, name, weight, notes = [p.strip() for p in line.split("|")]
        value, unit = weight.split()
        kg = float(value) * (LB_TO_KG if unit in pound_units else 1.0)
        out.append({"ref": ref, "name": name, "kg": round(kg, 1), "notes": notes})
    return out


@trajdebug.step(kind="llm")
def pilot_brief(messages: list) -> str:
    assert _client is not None
    reply = _client.chat.completions.create(model=_model, messages=messages, temperature=0)
    return reply.choices[0].message.content or ""


@trajdebug.step(kind="parse")
def parse_brief(text: str) -> dict:
    body = text.strip().removeprefix("```json").removesuffix("```").strip()
    brief = json.loads(body)
    for key in ("go", "launch", "drift_bearing", "temp_c", "max_surface_kt"):
        if key not in brief:
            raise ValueError(f"pilot brief lacks {key!r}")
    return brief


@trajdebug.step(kind="condition")
def route_passenger(passenger: dict) -> str:
    notes = passenger["notes"].lower()
    needs_door = "wheelchair" in notes if _on("access_route") else any(
        w in notes for w in ("wheelchair", "step-free", "no ladder")
    )
    return "door_basket" if needs_door else "standard"


@trajdebug.step(kind="other")
def seat_passengers(groups: dict, fleet: list) -> dict:
    seated: dict[str, list] = {b["reg"]: [] for b in fleet}
    door = [b for b in fleet if b["door"]]
    for p in groups["door_basket"]:
        seated[door[0]["reg"]].append(p)
    # standard passengers fill the plain baskets first, the door basket after
    order = [b for b in fleet if not b["door"]] + door
    queue = list(groups["standard"])
    for b in order:
        while queue:
            full = len(seated[b["reg"]]) > b["seats"] if _on("seat_fill") else len(seated[b["reg"]]) >= b["seats"]
            if full:
                break
            seated[b["reg"]].append(queue.pop(0))
    return {"seated": seated, "unseated": queue}


@trajdebug.step(kind="tool")
def load_chart(reg: str, envelope: str, temp_c: float) -> dict:
    base = {"Cameron Z-210": 905.0, "Lindstrand 150": 690.0}[envelope]
    return {"reg": reg, "envelope": envelope, "temp_c": temp_c, "max_payload_kg": round(base - 11.0 * (temp_c - 10), 1)}


@trajdebug.step(kind="condition")
def check_payload(reg: str, passengers: list, chart: dict) -> dict:
    payload = round(sum(p["kg"] for p in passengers) + PILOT_KG, 1)
    if payload > chart["max_payload_kg"]:
        raise ValueError(
            f"{reg} payload {payload} kg over its {chart['max_payload_kg']} kg limit at {chart['temp_c']} C "
            f"({len(passengers)} passengers + pilot)"
        )
    return {"reg": reg, "payload_kg": payload, "margin_kg": round(chart["max_payload_kg"] - payload, 1)}


@trajdebug.step(kind="state")
def record_loads(checks: list, seated: dict) -> dict:
    regs = [c["reg"] for c in checks]
    counts = [len(seated[r]) for r in regs]
    if _on("loads_memory"):
        regs = sorted(regs)
    loads = {reg: {"pax": n, "payload_kg": c["payload_kg"]} for reg, n, c in zip(regs, counts, checks)}
    trajdebug.current_run().state["loads"] = loads
    return loads


@trajdebug.step(kind="retrieval")
def search_landing_fields(site: str, drift_bearing: int, k: int = 3) -> list:
    hits = []
    for f in SITES[site]["fields"]:
        lo, hi = f["bearing"]
        if lo <= drift_bearing <= hi:
            score = 1.0 - abs((lo + hi) / 2 - drift_bearing) / 90
            hits.append({"field": f["field"], "farm": f["farm"], "agreement_id": f["agreement_id"],
                         "status": f["status"], "score": round(score, 2)})
    return sorted(hits, key=lambda h: -h["score"])[:k]


@trajdebug.step(kind="llm")
def choose_landing(messages: list, tools: list) -> dict:
    assert _client is not None
    reply = _client.chat.completions.create(model=_model, messages=messages, tools=tools, temperature=0)
    msg = reply.choices[0].message
    return {
        "role": "assistant",
        "content": msg.content,
        "tool_calls": [
            {"id": c.id, "name": c.function.name, "args": json.loads(c.function.arguments)} for c in msg.tool_calls or ()
        ],
    }


def _landowner_line(args: dict, site: str) -> dict:
    known = {f["agreement_id"]: f for f in SITES[site]["fields"]}
    f = known.get(args.get("agreement_id"))
    if f is None:
        raise LookupError(f"landowner line: no agreement {args.get('agreement_id')} on file for {args.get('field')}")
    if f["status"] != "active":
        raise PermissionError(f"landowner line: agreement {f['agreement_id']} ({f['field']}) is {f['status']}")
    return {"agreement_id": f["agreement_id"], "field": f["field"], "farm": f["farm"], "status": "acknowledged",
            "eta": args.get("eta")}


@trajdebug.step(kind="tool")
def send_chase_order(reg: str, seated: list) -> dict:
    loads = trajdebug.current_run().state["loads"]
    pax = loads[reg]["pax"]
    van = next(v for v in CHASE_VANS if v["seats"] >= pax)
    if len(seated) > van["seats"]:
        raise RuntimeError(
            f"chase dispatch: {van['van']} seats {van['seats']}, {reg} lands with {len(seated)} passengers"
        )
    return {"reg": reg, "van": van["van"], "driver": van["driver"], "pax": len(seated)}


@trajdebug.step(kind="tool")
def observe_surface_wind(site: str) -> dict:
    return {"site": site, "t": "05:20", "sfc_kt": OBSERVED[site]}


@trajdebug.step(kind="condition")
def final_check(request: dict, passengers: list, seating: dict, fleet: list, orders: list, brief: dict, obs: dict) -> dict:
    seats = {b["reg"]: b for b in fleet}
    seen: dict[str, str] = {}
    for reg, group in seating["seated"].items():
        if len(group) > seats[reg]["seats"]:
            raise ValueError(f"{reg} has {len(group)} passengers for {seats[reg]['seats']} basket places")
        for p in group:
            seen[p["ref"]] = reg
            notes = p["notes"].lower()
            if any(w in notes for w in ("wheelchair", "step-free", "no ladder")) and not seats[reg]["door"]:
                raise ValueError(f"{p['ref']} {p['name']} ({p['notes']}) is seated in {reg}, which has no door basket")
    missing = [p["ref"] for p in passengers if p["ref"] not in seen]
    if missing:
        raise ValueError(f"{len(passengers)} paid seats on {request['flight_date']}, not seated: {', '.join(missing)}")
    if obs["sfc_kt"] > brief["max_surface_kt"]:
        raise ValueError(f"surface wind {obs['sfc_kt']} kt at {obs['t']} above the briefed {brief['max_surface_kt']} kt")
    return {"request_id": request["request_id"], "balloons": len(orders), "passengers": len(seen), "status": "dispatched"}


# --- the agent ----------------------------------------------------------------------------------------

LANDING_TOOLS = [{
    "type": "function",
    "function": {
        "name": "notify_landowner",
        "description": "Tell a landowner a balloon will land on their field under an agreement.",
        "parameters": {"type": "object", "properties": {
            "agreement_id": {"type": "string"}, "field": {"type": "string"}, "eta": {"type": "string"}},
            "required": ["agreement_id", "field", "eta"]},
    },
}]


def _agent(req: dict) -> dict:
    site, date = req["site"], req["flight_date"]
    got = gather(site, date)
    passengers = parse_manifest(got["bookings"]["lines"])
    brief_text = pilot_brief([
        {"role": "system", "content": "You write the chief pilot's dawn brief. Answer JSON only: go, launch, "
         "drift_bearing (degrees the balloons drift towards), temp_c, max_surface_kt."},
        {"role": "user", "content": f"Site: {site}\nDate: {date}\nForecast: {json.dumps(got['forecast'])}"},
    ])
    brief = parse_brief(brief_text)
    groups: dict[str, list] = {"door_basket": [], "standard": []}
    for p in passengers:
        groups[route_passenger(p)].append(p)
    seating = seat_passengers(groups, got["fleet"])
    checks = []
    for b in got["fleet"]:
        chart = load_chart(b["reg"], b["envelope"], brief["temp_c"])
        checks.append(check_payload(b["reg"], seating["seated"][b["reg"]], chart))
    record_loads(checks, seating["seated"])
    fields = search_landing_fields(site, brief["drift_bearing"])
    convo: list[dict] = [
        {"role": "system", "content": "You are the retrieve coordinator. Pick one landing field from the list "
         "(active agreements only) and notify its landowner with notify_landowner. Then confirm in one line."},
        {"role": "user", "content": f"Launch {brief['launch']} from {site}, drift towards {brief['drift_bearing']} deg, "
         f"about 60 min flight.\nFields: {json.dumps(fields)}"},
    ]
    for _ in range(3):
        answer = choose_landing(list(convo), LANDING_TOOLS)
        if not answer["tool_calls"]:
            break
        convo.append({"role": "assistant", "content": answer["content"], "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
            for c in answer["tool_calls"]]})
        for call in answer["tool_calls"]:
            with trajdebug.step("notify_landowner", kind="tool", input=call["args"]) as s:
                s.output = _landowner_line(call["args"], site)
            convo.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(s.output)})
    orders = [send_chase_order(b["reg"], seating["seated"][b["reg"]]) for b in got["fleet"]]
    obs = observe_surface_wind(site)
    return final_check(req, passengers, seating, got["fleet"], orders, brief, obs)


def run(inp: dict, out: Path, env: Env) -> None:
    global _client, _model
    _client = openai_client(env)
    _model = env.model
    _forecast_calls.clear()
    with trajdebug.run(NAME, task=f"dawn dispatch {inp['site']} {inp['flight_date']}", path=str(out)):
        req = receive_request(inp)
        _agent(req)


# --- the model ----------------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system = system_text(request)
    user = last_user(request)
    if system.startswith("You write the chief pilot's"):
        fc = json.loads(between(user, "Forecast: "))
        hour = next(h for h in fc["hours"] if h["sfc_kt"] <= 6)
        brief = {"go": True, "launch": hour["t"], "drift_bearing": (hour["dir_2000ft"] + 180) % 360,
                 "temp_c": hour["temp_c"], "max_surface_kt": 8,
                 "note": f"{hour['kt_2000ft']} kt at 2,000 ft from {hour['dir_2000ft']}"}
        return "```json\n" + json.dumps(brief) + "\n```"
    if system.startswith("You are the retrieve coordinator"):
        msgs = messages(request)
        if msgs[-1]["role"] == "tool":
            done = json.loads(msgs[-1]["content"])
            return f"Landing at {done['field']} ({done['farm']}) confirmed, ETA {done['eta']}."
        fields = json.loads(between(user, "Fields: "))
        pick = next(f for f in fields if f["status"] == "active")
        launch = between(user, "Launch ", " ")
        h, m = (int(x) for x in launch.split(":"))
        eta = f"{h + 1:02d}:{m:02d}"
        agreement = pick["agreement_id"]
        if _on("landing_pick"):
            agreement = agreement[:-2] + agreement[-1] + agreement[-2]
        return Reply(tool_calls=(tool_call("notify_landowner", {"agreement_id": agreement, "field": pick["field"], "eta": eta}),))
    return "I can only help with dispatch."
