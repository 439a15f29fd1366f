"""A sheep-shearing contractor's farm bookings: read the season's requests, plan the round, size each job,
price it, have the rota planner sub-agent fit it to the crew calendar, and check the bookings."""

import datetime
import json
import math

import kit

NAME = "shearing-bookings"
ROUTE = "openai_agents"
DOMAIN = "a sheep-shearing contractor's farm bookings"
SHAPE = ("Agents SDK: bookings agent -> requests -> round plan tool -> per farm (register, days estimate) -> "
         "rota planner sub-agent as tool (crew calendar tool) -> price tool -> validator tool")
RESPONSE_NAME = "response"
MAIN_INSTRUCTIONS = "You take the farm bookings of a shearing contractor. Use the tools in order."
SUB_INSTRUCTIONS = "You fit priced shearing jobs into the crew calendar."

FARMS = {
    "F-108": {"farm": "Hill Farm", "parish": "Llanafan", "flock": 640, "breed": "Welsh Mountain", "week": "2027-06-07"},
    "F-801": {"farm": "Hill Farm", "parish": "Cwmystwyth", "flock": 1180, "breed": "Welsh Mountain", "week": "2027-06-14"},
    "F-215": {"farm": "Pant Glas", "parish": "Tregaron", "flock": 420, "breed": "Texel", "week": "2027-06-07"},
    "F-330": {"farm": "Bryn Mawr", "parish": "Pontrhydfendigaid", "flock": 900, "breed": "Beulah", "week": "2027-06-21"},
    "F-447": {"farm": "Ty Isaf", "parish": "Llangeitho", "flock": 260, "breed": "Texel", "week": "2027-06-14"},
    "F-512": {"farm": "Nant y Moch", "parish": "Ponterwyd", "flock": 1500, "breed": "Welsh Mountain", "week": "2027-06-28"},
    "F-623": {"farm": "Maes Gwyn", "parish": "Lledrod", "flock": 350, "breed": "Suffolk", "week": "2027-06-21"},
}
PER_HEAD = {"Welsh Mountain": 1.6, "Texel": 2.2, "Beulah": 1.8, "Suffolk": 2.3}  # GBP a head
CALL_OUT = 60
SHEARERS = 3
PER_SHEARER_DAY = 200

INPUTS = {
    "r1": {"season": "2027", "farms": ["F-108", "F-215", "F-330"]},
    "r2": {"season": "2027", "farms": ["F-447", "F-623"]},
    "r3": {"season": "2027", "farms": ["F-512", "F-215"]},
    "r4": {"season": "2027", "farms": ["F-330", "F-447", "F-108"]},
    "r5": {"season": "2027", "farms": ["F-623", "F-801"]},
    "r6": {"season": "2027", "farms": ["F-215", "F-512", "F-447"]},
    "r7": {"season": "2027", "farms": ["F-108", "F-623"]},
    "r8": {"season": "2027", "farms": ["F-330", "F-801", "F-215"]},
    "r9": {"season": "2027", "farms": ["F-447", "F-330"]},
}
for _k, _v in INPUTS.items():
    _v["task"] = f"Book the {_v['season']} shearing season"

CASES = [
    dict(id="zzw-she-01", kind="plan_error", input="r6",
         desc="The model's round plan leaves out F-447 Ty Isaf, so the requested farm is never booked."),
    dict(id="zzw-she-02", kind="tool_ignores_argument", input="r4",
         desc="The crew calendar tool ignores from_date for F-330 Bryn Mawr and offers the first free week of the season."),
    dict(id="zzw-she-03", kind="wrong_retrieval", input="r1",
         desc="The farm register lookup for F-108 returns the other Hill Farm (F-801, 1,180 ewes) instead of 640."),
    dict(id="zzw-she-04", kind="format_drift", input="r8",
         desc="The rota planner sub-agent writes the F-215 start date as 07/06/2027 instead of an ISO date."),
    dict(id="zzw-she-05", kind="off_by_one", input="r3",
         desc="The pricing tool adds the call-out charge over range(0, farms - 1), leaving the last farm without one."),
]
REFS = ["r2", "r5", "r7", "r9"]


def get_booking_requests(season: str) -> dict:
    """Booking requests received for a season."""
    return {"season": season, "farms": list(_REQ["farms"])}


def plan_round(farms_json: str) -> dict:
    """Order of the round, north to south."""
    farms = json.loads(farms_json)
    return {"order": sorted(farms, key=lambda f: FARMS[f]["parish"])}


def get_farm_record(farm_id: str) -> dict:
    """Register record of a farm: flock size, breed, preferred week."""
    key = farm_id
    if farm_id == "F-108" and kit.on("zzw-she-03"):
        key = "F-801"
    r = FARMS[key]
    return {"farm_id": farm_id, "farm": r["farm"], "flock": r["flock"], "breed": r["breed"], "week": FARMS[farm_id]["week"]}


def estimate_days(flock: int) -> dict:
    """Crew days for a flock, three shearers at 200 a day each."""
    return {"flock": flock, "days": math.ceil(flock / (SHEARERS * PER_SHEARER_DAY))}


def price_jobs(jobs_json: str) -> dict:
    """Price shearing jobs: per head by breed plus a call-out charge per farm."""
    jobs = json.loads(jobs_json)
    out = [{**j, "price": round(j["flock"] * PER_HEAD[j["breed"]], 2)} for j in jobs]
    stop = len(out)
    if len(out) == 2 and kit.on("zzw-she-05"):
        stop = len(out) - 1
    for k in range(0, stop):
        out[k]["price"] = round(out[k]["price"] + CALL_OUT, 2)
    return {"jobs": out}


def crew_calendar(farm_id: str, from_date: str, days: int) -> dict:
    """First free run of days for the crew from a date."""
    start = datetime.date.fromisoformat(from_date)
    if farm_id == "F-330" and kit.on("zzw-she-02"):
        start = datetime.date(2027, 5, 31)
    return {"farm_id": farm_id, "start": start.isoformat(), "days": days}


def validate_bookings(rota_json: str) -> dict:
    """Check the season's bookings against the register and the contractor's terms."""
    rota = json.loads(rota_json)
    booked = {b["farm_id"]: b for b in rota["bookings"]}
    if sorted(booked) != sorted(_REQ["farms"]):
        raise ValueError(f"bookings cover {sorted(booked)}, requests are {sorted(_REQ['farms'])}")
    for fid, b in booked.items():
        r = FARMS[fid]
        if b["flock"] != r["flock"]:
            raise ValueError(f"{fid}: booked for {b['flock']} ewes, register has {r['flock']}")
        days = math.ceil(r["flock"] / (SHEARERS * PER_SHEARER_DAY))
        if b["days"] != days:
            raise ValueError(f"{fid}: {b['days']} days booked, flock needs {days}")
        price = round(r["flock"] * PER_HEAD[r["breed"]] + CALL_OUT, 2)
        if abs(b["price"] - price) > 0.005:
            raise ValueError(f"{fid}: priced {b['price']:.2f} GBP, terms give {price:.2f} GBP")
        start = datetime.date.fromisoformat(b["start"])
        week = datetime.date.fromisoformat(r["week"])
        if not week <= start <= week + datetime.timedelta(days=6):
            raise ValueError(f"{fid}: starts {b['start']}, outside the requested week of {r['week']}")
    return {"ok": True, "bookings": len(booked)}


def main_flow(text):
    season = text.split()[2]
    farms = (yield ("get_booking_requests", {"season": season}))["farms"]
    ask = list(farms)
    if "F-447" in ask and kit.on("zzw-she-01"):
        ask.remove("F-447")
    order = (yield ("plan_round", {"farms_json": json.dumps(ask)}))["order"]
    jobs = []
    for fid in order:
        rec = yield ("get_farm_record", {"farm_id": fid})
        est = yield ("estimate_days", {"flock": rec["flock"]})
        jobs.append({"farm_id": fid, "flock": rec["flock"], "breed": rec["breed"], "days": est["days"],
                     "week": rec["week"]})
    rota = yield ("rota_planner", {"input": "Fit these jobs: " + json.dumps(jobs)})
    rota = json.loads(rota) if isinstance(rota, str) else rota
    priced = yield ("price_jobs", {"jobs_json": json.dumps(rota["bookings"])})
    yield ("validate_bookings", {"rota_json": json.dumps({"bookings": priced["jobs"]})})
    return f"{len(jobs)} farms booked for {season}."


def sub_flow(text):
    jobs = json.loads(text.split("Fit these jobs: ", 1)[1])
    bookings = []
    for j in jobs:
        slot = yield ("crew_calendar", {"farm_id": j["farm_id"], "from_date": j["week"], "days": j["days"]})
        start = slot["start"]
        if j["farm_id"] == "F-215" and kit.on("zzw-she-04"):
            start = datetime.date.fromisoformat(start).strftime("%d/%m/%Y")
        bookings.append({"farm_id": j["farm_id"], "flock": j["flock"], "breed": j["breed"], "days": j["days"],
                         "start": start})
    return json.dumps({"bookings": bookings})


_REQ = {"farms": []}


def prepare(request):
    _REQ["farms"] = list(request["farms"])


def build(ctx, model):
    from agents import Agent

    planner = Agent(name="rota planner", instructions=SUB_INSTRUCTIONS, model=model, tools=[ctx.ftool(crew_calendar)])
    main = Agent(name="bookings", instructions=MAIN_INSTRUCTIONS, model=model, tools=[
        ctx.ftool(get_booking_requests), ctx.ftool(plan_round), ctx.ftool(get_farm_record), ctx.ftool(estimate_days),
        ctx.ftool(price_jobs),
        planner.as_tool(tool_name="rota_planner", tool_description="Fit priced jobs into the crew calendar."),
        ctx.ftool(validate_bookings, fatal=True)])
    return main, {MAIN_INSTRUCTIONS: main_flow, SUB_INSTRUCTIONS: sub_flow}
