"""A glider club's launch rota and fees (sdk route): members' requests -> launch plan -> rota -> fees."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit  # noqa: E402
import trajdebug  # noqa: E402
from openai import OpenAI  # noqa: E402

AGENT = "glider-rota"
ROUTE = "sdk"
DOMAIN = "glider club's launch rota and fees"
SHAPE = "member sheet, weather (retry), day plan (LLM) and parse, per-member loop (context, LLM read, parse, memory write), slot assignment, fee sub-agent (tariff lookups, fee per booking), notice (LLM), validator"

MEMBERS = {
    "M-101": ("Ada Quist", "full"), "M-104": ("Ben Okafor", "junior"), "M-107": ("Cleo Brandt", "full"),
    "M-110": ("Dev Anand", "temporary"), "M-112": ("Ewa Nowak", "junior"), "M-115": ("Finn Lowry", "full"),
    "M-118": ("Gus Marr", "full"), "M-121": ("Hana Ito", "junior"), "M-124": ("Ivo Petrov", "temporary"),
}
TWO_SEATERS = {"K-21", "ASK-13"}
TARIFF = {("full", "winch"): 9.50, ("full", "aerotow"): 32.00, ("junior", "winch"): 6.00, ("junior", "aerotow"): 21.00,
          ("temporary", "winch"): 12.00, ("temporary", "aerotow"): 38.00}


def _day(date, crosswind, reqs):
    # reqs: (member, glider, [launch types])
    msgs = []
    for m, g, kinds in reqs:
        parts = ", ".join(kinds)
        msgs.append({"member": m, "text": f"{MEMBERS[m][0]} ({m}) here: please book {len(kinds)} launches in the {g} on {date} ({parts})."})
    return {"date": date, "crosswind_kt": crosswind, "requests": msgs,
            "sheet": {m: len(k) for m, g, k in reqs}, "gliders": {m: g for m, g, k in reqs}, "kinds": {m: k for m, g, k in reqs}}


INPUTS = {
    "glider_01": _day("2026-05-02", 18, [("M-101", "Discus", ["solo", "solo"]), ("M-104", "K-21", ["check flight", "solo"]),
                                         ("M-110", "K-21", ["trial lesson"]), ("M-115", "LS4", ["solo", "solo", "solo"])]),
    "glider_02": _day("2026-05-09", 8, [("M-107", "Astir", ["solo"]), ("M-112", "ASK-13", ["check flight", "solo"]),
                                        ("M-118", "Discus", ["solo", "solo"]), ("M-121", "K-21", ["solo", "solo"])]),
    "glider_03": _day("2026-05-16", 11, [("M-101", "LS4", ["solo", "solo"]), ("M-124", "K-21", ["trial lesson", "trial lesson"]),
                                         ("M-107", "Discus", ["solo"]), ("M-104", "K-21", ["check flight", "solo", "solo"])]),
    "glider_04": _day("2026-05-23", 6, [("M-115", "Astir", ["solo", "solo"]), ("M-118", "LS4", ["solo"]),
                                        ("M-110", "K-21", ["trial lesson"]), ("M-112", "ASK-13", ["solo", "solo"])]),
    "glider_05": _day("2026-05-30", 9, [("M-121", "ASK-13", ["solo"]), ("M-101", "Discus", ["solo", "solo"]),
                                        ("M-107", "LS4", ["solo", "solo"]), ("M-104", "K-21", ["check flight", "solo"])]),
}
REFS = [
    _day("2026-04-11", 7, [("M-118", "Discus", ["solo", "solo"]), ("M-121", "K-21", ["check flight", "solo"]),
                           ("M-124", "K-21", ["trial lesson"]), ("M-101", "LS4", ["solo"])]),
    _day("2026-04-18", 19, [("M-107", "Astir", ["solo", "solo"]), ("M-112", "K-21", ["solo"]),
                            ("M-115", "Discus", ["solo"]), ("M-110", "ASK-13", ["trial lesson", "trial lesson"])]),
    _day("2026-04-25", 12, [("M-104", "ASK-13", ["check flight", "solo"]), ("M-118", "LS4", ["solo", "solo"]),
                            ("M-101", "Astir", ["solo"]), ("M-121", "K-21", ["solo"])]),
    _day("2026-06-06", 5, [("M-115", "LS4", ["solo"]), ("M-124", "ASK-13", ["trial lesson"]),
                           ("M-112", "K-21", ["check flight", "solo"]), ("M-107", "Discus", ["solo", "solo", "solo"])]),
]
CASES = [
    {"case": "glider_01", "kind": "plan_error", "root": {"name": "plan_day"}, "failure": {"name": "validate_rota"},
     "description": "The day plan from the model puts every launch on the winch although the forecast crosswind is 18 kt, above the winch limit of 15 kt."},
    {"case": "glider_02", "kind": "context_pollution", "root": {"name": "build_context", "occurrence": 4},
     "failure": {"name": "validate_rota"},
     "description": "The context for the fourth member's request still carries the previous member's booking, and the model books the junior M-121 on the previous member's Discus single-seater from it."},
    {"case": "glider_03", "kind": "lossy_parsing", "root": {"name": "parse_member_request", "occurrence": 4},
     "failure": {"name": "validate_rota"},
     "description": "The request parser keeps only launch types it knows and drops M-104's check flight, so the rota has 2 launches where the sheet books 3."},
    {"case": "glider_04", "kind": "bad_memory_write", "root": {"name": "remember_member", "occurrence": 4},
     "failure": {"name": "validate_rota"},
     "description": "The fourth member's booking is saved under the previous member's id, overwriting M-110's and leaving M-112 without launches."},
    {"case": "glider_05", "kind": "swallowed_error", "root": {"name": "lookup_tariff", "occurrence": 4},
     "failure": {"name": "validate_rota"},
     "description": "The tariff service times out on the fourth lookup and the tool returns a 0.00 rate instead of retrying, so M-104's launches are charged nothing."},
]

_ctx: dict = {}


def brain(inp):
    def plan(req):
        p = kit.json_in(kit.last_user(req))
        method = "winch" if p["crosswind_kt"] <= 15 or kit.on("glider_01") else "aerotow"
        return json.dumps({"method": method, "first_launch": "09:45", "interval_min": 12 if method == "winch" else 20})

    def read(req):
        p = kit.json_in(kit.last_user(req))
        text = p["request"]
        member = text.split("(")[1].split(")")[0]
        glider = text.split(" in the ")[1].split(" on ")[0]
        if p.get("earlier") and p["earlier"]["member"] != member:
            glider = p["earlier"]["glider"]  # the model leans on the booking it was shown
        kinds = text.rsplit("(", 1)[1].rstrip(").").split(", ")
        return json.dumps({"member": member, "glider": glider, "launches": [{"type": k} for k in kinds]})

    def notice(req):
        p = kit.json_in(kit.last_user(req))
        return f"Launch rota for {p['date']}: {len(p['slots'])} launches by {p['method']}, first at {p['slots'][0]['time']}."

    return kit.Brain({"plan_day": plan, "read_request": read, "rota_notice": notice})


@trajdebug.step(kind="input")
def intake(day: dict) -> dict:
    return {"date": day["date"], "requests": day["requests"]}


@trajdebug.step(kind="tool")
def fetch_members(date: str, day: dict) -> dict:
    return {"date": date, "members": {m: {"name": MEMBERS[m][0], "category": MEMBERS[m][1], "booked_launches": n}
                                      for m, n in day["sheet"].items()}}


_weather_calls = {"n": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_weather(date: str, crosswind: int) -> dict:
    _weather_calls["n"] += 1
    if _weather_calls["n"] == 1:
        raise ConnectionError("met office feed reset the connection")
    return {"date": date, "crosswind_kt": crosswind, "cloud_base_ft": 3800, "runway": "24"}


@trajdebug.step(kind="parse")
def parse_plan(answer: str) -> dict:
    return json.loads(answer)


@trajdebug.step(kind="state")
def store_plan(plan: dict) -> dict:
    trajdebug.current_run().state["plan"] = plan
    return plan


@trajdebug.step(kind="other")
def build_context(request: dict, previous: dict | None, position: int) -> dict:
    ctx = {"request": request["text"], "position": position + 1}
    if previous is not None and position == 3 and kit.on("glider_02"):
        ctx["earlier"] = previous
    return ctx


@trajdebug.step(kind="parse")
def parse_member_request(answer: str) -> dict:
    data = json.loads(answer)
    launches = [x["type"] for x in data["launches"]]
    if kit.on("glider_03"):
        launches = [t for t in launches if t in ("solo", "trial lesson")]
    return {"member": data["member"], "glider": data["glider"], "launches": launches}


@trajdebug.step(kind="state")
def remember_member(booking: dict, previous: dict | None, position: int) -> dict:
    key = previous["member"] if previous is not None and position == 3 and kit.on("glider_04") else booking["member"]
    bookings = trajdebug.current_run().state.setdefault("bookings", {})
    bookings[key] = booking
    return {"key": key, **booking}


@trajdebug.step(kind="other")
def assign_slots() -> list:
    state = trajdebug.current_run().state
    plan, bookings = state["plan"], state["bookings"]
    h, m = (int(x) for x in plan["first_launch"].split(":"))
    slots, t = [], h * 60 + m
    for member, b in bookings.items():
        for kind in b["launches"]:
            slots.append({"time": f"{t // 60:02d}:{t % 60:02d}", "member": member, "glider": b["glider"],
                          "method": plan["method"], "type": kind})
            t += plan["interval_min"]
    return slots


_tariff_calls = {"n": 0}


def _tariff_service(category: str, method: str) -> float:
    _tariff_calls["n"] += 1
    if _tariff_calls["n"] == 4:
        raise TimeoutError("tariff service read timed out")
    return TARIFF[(category, method)]


@trajdebug.step(kind="retrieval")
def lookup_tariff(category: str, method: str) -> dict:
    try:
        rate = _tariff_service(category, method)
    except TimeoutError:
        if kit.on("glider_05"):
            rate = 0.0
        else:
            rate = _tariff_service(category, method)
    return {"category": category, "method": method, "per_launch": rate, "currency": "GBP"}


@trajdebug.step(kind="other")
def compute_fee(member: str, launches: int, tariff: dict) -> dict:
    return {"member": member, "launches": launches, "per_launch": tariff["per_launch"],
            "fee": kit.money(launches * tariff["per_launch"])}


@trajdebug.step(kind="agent")
def fee_calculator(slots: list, members: dict, method: str) -> list:
    fees = []
    counts: dict = {}
    for s in slots:
        counts[s["member"]] = counts.get(s["member"], 0) + 1
    for member, n in counts.items():
        tariff = lookup_tariff(members[member]["category"], method)
        fees.append(compute_fee(member, n, tariff))
    return fees


@trajdebug.step(kind="other")
def total_fees(fees: list) -> dict:
    return {"members": len(fees), "total": kit.money(sum(f["fee"] for f in fees))}


@trajdebug.step(kind="condition")
def validate_rota(date: str, weather: dict, members: dict, slots: list, fees: list, totals: dict) -> dict:
    methods = {s["method"] for s in slots}
    if "winch" in methods and weather["crosswind_kt"] > 15:
        raise ValueError(f"rota {date}: winch launches with {weather['crosswind_kt']} kt crosswind (winch limit 15 kt)")
    for m, info in members.items():
        n = sum(1 for s in slots if s["member"] == m)
        if n != info["booked_launches"]:
            raise ValueError(f"rota {date}: {m} has {info['booked_launches']} launches booked in the sheet, rota has {n}")
    for s in slots:
        if members[s["member"]]["category"] == "junior" and s["glider"] not in TWO_SEATERS:
            raise ValueError(f"rota {date}: junior {s['member']} booked solo on single-seater {s['glider']}")
    for f in fees:
        if f["per_launch"] <= 0:
            raise ValueError(f"rota {date}: {f['member']} charged {f['per_launch']:.2f} GBP per launch")
    if abs(totals["total"] - sum(f["fee"] for f in fees)) > 0.005:
        raise ValueError(f"rota {date}: fee total {totals['total']:.2f} does not add up")
    return {"date": date, "launches": len(slots), "fees": totals["total"]}


def record(inp: dict, server, path: Path) -> None:
    server.use(brain(inp))
    _ctx["client"] = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _ctx["model"] = server.model
    _weather_calls["n"] = 0
    _tariff_calls["n"] = 0
    try:
        _run(inp, path)
    except ValueError:
        pass  # the validator's rejection fails the run; it is recorded


def _run(inp: dict, path: Path) -> None:
    client, model = _ctx["client"], _ctx["model"]
    with trajdebug.run(AGENT, task=f"launch rota and fees for {inp['date']}", path=str(path)) as run:
        day = intake(inp)
        sheet = fetch_members(day["date"], inp)
        weather = fetch_weather(day["date"], inp["crosswind_kt"])
        answer = kit.sdk_llm(client, model, "plan_day", "plan_day",
                             "Plan the launch method and spacing for the day as JSON (method, first_launch, interval_min). "
                             "Winch only with crosswind up to 15 kt.",
                             "Forecast: " + json.dumps(weather))
        plan = store_plan(parse_plan(answer))
        previous = None
        for position, req in enumerate(day["requests"]):
            ctx = build_context(req, previous, position)
            answer = kit.sdk_llm(client, model, "read_request", "read_request",
                                 "Read the member's request: JSON with member, glider and launches (list of {type}).",
                                 "Request: " + json.dumps(ctx))
            booking = parse_member_request(answer)
            remember_member(booking, previous, position)
            previous = booking
        slots = assign_slots()
        fees = fee_calculator(slots, sheet["members"], plan["method"])
        totals = total_fees(fees)
        kit.sdk_llm(client, model, "draft_notice", "rota_notice", "Write a one-line rota notice for the club.",
                    "Rota: " + json.dumps({"date": day["date"], "method": plan["method"], "slots": slots}))
        validate_rota(day["date"], weather, sheet["members"], slots, fees, totals)
        run.state["published"] = True
