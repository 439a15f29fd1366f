"""Zip line park bookings: confirm a group's zip line booking (openai_agents route, Chat Completions)."""
import asyncio
import json
import re

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

import common
import kit
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME, ROUTE, DOMAIN = "zipline-bookings", "openai_agents", "a zip line park's bookings"
SHAPE = "Agent + Runner (Chat Completions), 5 turns: group list + booking -> safety officer sub-agent (agent as tool: rider limits, harness sizes) -> line capacity + waiver per rider -> price + forecast -> validate tool"

BOOKINGS = {}
WAIVERS = {}
PER_RIDER = {"canopy": 42.0, "valley": 58.0}


def _i(cid, ref, date, booked_on, course, riders):
    return {"id": cid, "ref": ref, "date": date, "booked_on": booked_on, "course": course, "riders": riders}


INPUTS = {
    "zip-1": _i("zip-1", "ZL-5101", "2027-07-10", "2027-06-02", "valley",
                [["Amira Haddad", 34, 62], ["Joe O'Neill", 41, 88], ["Priti Shah", 29, 57], ["Tom Reeve", 38, 93]]),
    "zip-2": _i("zip-2", "ZL-5102", "2027-07-11", "2027-06-20", "canopy",
                [["Lena Maier", 12, 41], ["Paul Maier", 45, 84], ["Ute Maier", 43, 66]]),
    "zip-3": _i("zip-3", "ZL-5103", "2027-07-17", "2027-07-01", "valley",
                [["Kofi Mensah", 27, 76], ["Ama Mensah", 25, 61], ["Yaw Boateng", 30, 99], ["Efua Ansah", 26, 58],
                 ["Kwame Owusu", 31, 82]]),
    "zip-4": _i("zip-4", "ZL-5104", "2027-07-18", "2027-05-30", "canopy",
                [["Rosa Ibarra", 52, 70], ["Luis Ibarra", 55, 91], ["Nico Ibarra", 16, 64]]),
    "zip-5": _i("zip-5", "ZL-5105", "2027-07-24", "2027-07-02", "valley",
                [["Hugh Penrose", 47, 95], ["Clare Penrose", 45, 68], ["Ivy Penrose", 14, 47], ["Seb Penrose", 11, 38]]),
}
REFS = [_i("zip-r1", "ZL-5201", "2027-07-25", "2027-06-11", "canopy",
           [["Mo Farid", 33, 79], ["Sara Farid", 31, 60], ["Dan Kerr", 35, 87]]),
        _i("zip-r2", "ZL-5202", "2027-07-31", "2027-07-05", "valley",
           [["Aoife Byrne", 24, 59], ["Cian Byrne", 27, 83], ["Nuala Byrne", 22, 55], ["Rory Byrne", 19, 72]]),
        _i("zip-r3", "ZL-5203", "2027-08-01", "2027-06-28", "canopy",
           [["Jan Novak", 40, 90], ["Eva Novak", 13, 44]]),
        _i("zip-r4", "ZL-5204", "2027-08-07", "2027-07-15", "valley",
           [["Bea Lund", 29, 63], ["Olle Lund", 32, 86], ["Siv Lund", 60, 71], ["Per Lund", 58, 97], ["Mia Lund", 17, 52]])]

for _inp in list(INPUTS.values()) + REFS:
    BOOKINGS[_inp["ref"]] = {"ref": _inp["ref"], "date": _inp["date"], "booked_on": _inp["booked_on"],
                             "course": _inp["course"], "party_size": len(_inp["riders"])}
    for _n, (_name, _, _) in enumerate(_inp["riders"]):
        WAIVERS[_name] = f"W-{_inp['ref'][3:]}-{_n + 1}"
del WAIVERS["Seb Penrose"]

CASES = [
    dict(id="zip-1", switch="zip_names", kind="lossy_parsing", root=("read_group_list", 1),
         failure=("validate_booking", 1),
         description="The group list reader only accepts names made of letters and spaces and drops a rider whose name has an apostrophe."),
    dict(id="zip-2", switch="zip_date", kind="wrong_tool_args", root=("generation fake-model", 6),
         failure=("validate_booking", 1),
         description="The model asks for the weather forecast of the day the booking was made instead of the ride date."),
    dict(id="zip-3", switch="zip_price", kind="off_by_one", root=("price_booking", 1),
         failure=("validate_booking", 1),
         description="The price tool counts riders from the second one on and charges for one rider fewer."),
    dict(id="zip-4", switch="zip_forecast", kind="stale_data", root=("weather_forecast", 1),
         failure=("validate_booking", 1),
         description="The forecast tool answers from a cached forecast issued days before the ride."),
    dict(id="zip-5", switch="zip_waiver", kind="swallowed_error", root=("waiver_status", 4),
         failure=("validate_booking", 1),
         description="The waiver lookup catches the missing-waiver error for one rider and answers that the waiver is signed, with no waiver id."),
]


@function_tool
def read_group_list(text: str) -> dict:
    """Read riders from the group list: 'Name, age, weight kg' separated by semicolons."""
    pat = r"^[A-Za-z ]+$" if kit.on("zip_names") else r"^[A-Za-z '\-]+$"
    riders = []
    for part in text.split(";"):
        name, age, kg = [x.strip() for x in part.split(",")]
        if re.match(pat, name):
            riders.append({"name": name, "age": int(age), "kg": int(kg.split()[0])})
    return {"riders": riders}


@function_tool
def lookup_booking(ref: str) -> dict:
    """The booking record."""
    return BOOKINGS[ref]


@function_tool
def rider_limits(course: str) -> dict:
    """Weight and age limits of a course."""
    return {"course": course, "min_kg": 35, "max_kg": 120, "min_age": 10 if course == "canopy" else 11}


@function_tool
def harness_sizes(weights: list[int]) -> dict:
    """Harness size for each rider weight."""
    return {"sizes": ["S" if w < 55 else "M" if w < 80 else "L" for w in weights]}


@function_tool
def line_capacity(date: str, course: str) -> dict:
    """Free places on a course on a date."""
    return {"date": date, "course": course, "free": 8}


@function_tool
def waiver_status(rider: str) -> dict:
    """The rider's signed waiver."""
    try:
        return {"rider": rider, "signed": True, "waiver_id": WAIVERS[rider]}
    except KeyError:
        if kit.on("zip_waiver"):
            return {"rider": rider, "signed": True, "waiver_id": None}
        return {"rider": rider, "signed": True, "waiver_id": f"W-DESK-{len(rider)}"}


@function_tool
def price_booking(course: str, riders: list[str]) -> dict:
    """Price of the booking."""
    counted = riders[1:] if kit.on("zip_price") else riders
    return {"per_rider": PER_RIDER[course], "riders": len(riders), "total": PER_RIDER[course] * len(counted)}


@function_tool
def weather_forecast(date: str, course: str) -> dict:
    """Wind forecast for a course on a date."""
    issued = "2027-06-01" if kit.on("zip_forecast") else date
    return {"date": date, "course": course, "issued": issued, "gust_mph": 18}


@function_tool(failure_error_function=None)
def validate_booking(sheet: str) -> dict:
    """Check the booking sheet against the park's rules."""
    s = json.loads(sheet)
    if len(s["riders"]) != s["party_size"]:
        raise ValueError(f"sheet lists {len(s['riders'])} riders, booking {s['ref']} is for {s['party_size']}")
    for w in s["waivers"]:
        if not w["waiver_id"]:
            raise ValueError(f"{w['rider']} has no waiver id on file")
    if abs(s["price"]["total"] - s["price"]["per_rider"] * len(s["riders"])) > 0.01:
        raise ValueError(f"total {s['price']['total']} for {len(s['riders'])} riders at {s['price']['per_rider']}")
    if s["forecast"]["date"] != s["date"]:
        raise ValueError(f"forecast for {s['forecast']['date']}, ride is on {s['date']}")
    if s["forecast"]["issued"] < s["date"]:
        raise ValueError(f"forecast issued {s['forecast']['issued']} is older than the ride day {s['date']}")
    return {"confirmed": True}


def brain(inp):
    def answer(request):
        got = {}
        for n, o in common.oa_outputs(request):
            got.setdefault(n, []).append(o)
        if "safety officer" in common.oa_instructions(request):
            d = json.loads(common.oa_user_text(request))
            if "rider_limits" not in got:
                return Reply(tool_calls=(tool_call("rider_limits", {"course": d["course"]}),
                                         tool_call("harness_sizes", {"weights": d["weights"]})))
            lim = got["rider_limits"][0]
            ok = all(lim["min_kg"] <= w <= lim["max_kg"] for w in d["weights"])
            return json.dumps({"cleared": ok, "sizes": got["harness_sizes"][0]["sizes"]})
        if "read_group_list" not in got:
            text = "; ".join(f"{n}, {a}, {k} kg" for n, a, k in inp["riders"])
            return Reply(tool_calls=(tool_call("read_group_list", {"text": text}), tool_call("lookup_booking", {"ref": inp["ref"]})))
        riders = got["read_group_list"][0]["riders"]
        bk = got["lookup_booking"][0]
        if "safety_officer" not in got:
            return Reply(tool_calls=(tool_call("safety_officer", {"input": json.dumps(
                {"course": bk["course"], "weights": [r["kg"] for r in riders]})}),))
        if "line_capacity" not in got:
            return Reply(tool_calls=(tool_call("line_capacity", {"date": bk["date"], "course": bk["course"]}),)
                         + tuple(tool_call("waiver_status", {"rider": r["name"]}) for r in riders))
        if "price_booking" not in got:
            day = bk["booked_on"] if kit.on("zip_date") else bk["date"]
            return Reply(tool_calls=(tool_call("price_booking", {"course": bk["course"], "riders": [r["name"] for r in riders]}),
                                     tool_call("weather_forecast", {"date": day, "course": bk["course"]})))
        if "validate_booking" not in got:
            sheet = {"ref": bk["ref"], "date": bk["date"], "party_size": bk["party_size"], "riders": riders,
                     "waivers": got["waiver_status"], "price": got["price_booking"][0],
                     "forecast": got["weather_forecast"][0], "safety": got["safety_officer"][0]}
            return Reply(tool_calls=(tool_call("validate_booking", {"sheet": json.dumps(sheet)}),))
        return f"Booking {inp['ref']} confirmed for {inp['date']}."
    return answer


def record(inp, path, seed):
    server = common.SERVER
    server.use(brain(inp))
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"confirm zip line booking {inp['id']}")])
    officer = Agent(name="safety officer", instructions="You are the safety officer. Check riders against the course limits.",
                    model=server.model, tools=[rider_limits, harness_sizes])
    desk = Agent(name="booking desk", model=server.model,
                 instructions="You are the booking desk of High Pines Zip Park. Use the tools, then validate the sheet.",
                 tools=[read_group_list, lookup_booking, officer.as_tool("safety_officer", "Ask the safety officer to clear the riders."),
                        line_capacity, waiver_status, price_booking, weather_forecast, validate_booking])
    text = f"Please confirm booking {inp['ref']} for {inp['date']}. Group list: " + "; ".join(
        f"{n} ({a}, {k} kg)" for n, a, k in inp["riders"])

    async def go():
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client, use_for_tracing=False)
        try:
            await Runner.run(desk, text, run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()
    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])
