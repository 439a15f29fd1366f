"""Cattery boarding desk (openai_agents route, Responses endpoint)."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import kit
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool
from harness import CheckFailed, record_agents, tool_history
from openai import AsyncOpenAI


NAME = "cattery-bookings"
ROUTE = "openai_agents"
DOMAIN = "a cattery's boarding bookings"
SHAPE = ("Agents SDK Agent + Runner (Responses API): owner lookup, cat profile search, vaccination records, "
         "suite availability, suite hold, care-planner sub-agent (Agent.as_tool: vet notes, medication "
         "extraction per cat), care record write, stay pricing, validator tool")

OWNERS = {
    "janet.clarke@example.org": {"owner_id": "O-101", "name": "Janet Clarke"},
    "tom.clarke@example.org": {"owner_id": "O-214", "name": "Tom Clarke"},
    "priya.nair@example.org": {"owner_id": "O-133", "name": "Priya Nair"},
    "ade.bello@example.org": {"owner_id": "O-150", "name": "Ade Bello"},
    "sofia.rossi@example.org": {"owner_id": "O-162", "name": "Sofia Rossi"},
    "liam.walsh@example.org": {"owner_id": "O-177", "name": "Liam Walsh"},
}
CATS = [
    {"cat_id": "C-21", "owner_id": "O-214", "name": "Tofu", "surname": "Clarke", "diet": "standard"},
    {"cat_id": "C-22", "owner_id": "O-214", "name": "Miso", "surname": "Clarke", "diet": "standard"},
    {"cat_id": "C-11", "owner_id": "O-101", "name": "Pepper", "surname": "Clarke", "diet": "renal"},
    {"cat_id": "C-12", "owner_id": "O-101", "name": "Sage", "surname": "Clarke", "diet": "hypoallergenic"},
    {"cat_id": "C-31", "owner_id": "O-133", "name": "Mango", "surname": "Nair", "diet": "senior"},
    {"cat_id": "C-41", "owner_id": "O-150", "name": "Biscuit", "surname": "Bello", "diet": "standard"},
    {"cat_id": "C-42", "owner_id": "O-150", "name": "Juniper", "surname": "Bello", "diet": "weight control"},
    {"cat_id": "C-51", "owner_id": "O-162", "name": "Luna", "surname": "Rossi", "diet": "hypoallergenic"},
    {"cat_id": "C-52", "owner_id": "O-162", "name": "Olive", "surname": "Rossi", "diet": "standard"},
    {"cat_id": "C-61", "owner_id": "O-177", "name": "Murphy", "surname": "Walsh", "diet": "renal"},
]
VET_NOTES = {
    "C-11": "Stage 2 CKD. Meds: benazepril 2.5mg SID; Check weight weekly.",
    "C-12": "Food allergy. Meds: none; Hypoallergenic diet only.",
    "C-21": "Healthy. Meds: none;", "C-22": "Healthy. Meds: none;",
    "C-31": "Hyperthyroid, arthritis. Meds: methimazole 2.5mg BID, meloxicam 0.5mg SID; Soft bedding.",
    "C-41": "Healthy. Meds: none;", "C-42": "Overweight. Meds: none; Measured meals.",
    "C-51": "Asthma. Meds: fluticasone inhaler BID, prednisolone 1mg SID; Dust-free litter.",
    "C-52": "Healthy. Meds: none;",
    "C-61": "CKD. Meds: benazepril 2.5mg SID, mirtazapine 1.88mg q48h; Encourage water.",
}
VACCINES = {"C-11": "2027-11-02", "C-12": "2027-11-02", "C-21": "2028-01-10", "C-22": "2028-01-10",
            "C-31": "2027-09-30", "C-41": "2028-03-01", "C-42": "2028-03-01", "C-51": "2027-12-12",
            "C-52": "2027-12-12", "C-61": "2027-10-20"}
SUITES = [{"suite": "S1", "cats": 1, "rate": 24.0}, {"suite": "S2", "cats": 2, "rate": 36.0},
          {"suite": "S3", "cats": 2, "rate": 34.0}, {"suite": "S4", "cats": 3, "rate": 45.0}]
# the master calendar, and the availability snapshot the desk cached in the morning
CALENDAR = {"S3": [("2027-08-10", "2027-08-24", "B-118")], "S1": [("2027-07-01", "2027-07-05", "B-097")]}
MORNING_SNAPSHOT: dict[str, list] = {"S1": [("2027-07-01", "2027-07-05", "B-097")]}
HOLDS: dict[str, dict] = {}
CARE_DB: dict[str, dict] = {}
INVOICES: dict[str, dict] = {}

INPUTS = [
    {"email": "janet.clarke@example.org", "cats": ["Pepper", "Sage"], "check_in": "2027-08-12",
     "check_out": "2027-08-19"},
    {"email": "priya.nair@example.org", "cats": ["Mango"], "check_in": "2027-07-02", "check_out": "2027-07-09"},
    {"email": "ade.bello@example.org", "cats": ["Biscuit", "Juniper"], "check_in": "2027-08-14",
     "check_out": "2027-08-21"},
    {"email": "sofia.rossi@example.org", "cats": ["Luna", "Olive"], "check_in": "2027-09-03",
     "check_out": "2027-09-10"},
    {"email": "liam.walsh@example.org", "cats": ["Murphy"], "check_in": "2027-06-28", "check_out": "2027-07-03"},
    {"email": "tom.clarke@example.org", "cats": ["Tofu", "Miso"], "check_in": "2027-10-01",
     "check_out": "2027-10-04"},
    {"email": "janet.clarke@example.org", "cats": ["Pepper", "Sage"], "check_in": "2027-12-20",
     "check_out": "2027-12-27"},
]

CASES = [
    {"id": "zzl_cattery_1", "input": 0, "kind": "wrong_retrieval", "root": ("search_cat_profiles", 1),
     "failure": ("validate_booking", 1),
     "description": "The cat profile search ranks on the surname only and returns the other Clarke household's "
                    "cats, Tofu and Miso, for Janet Clarke's booking."},
    {"id": "zzl_cattery_2", "input": 2, "kind": "stale_data", "root": ("suite_availability", 1),
     "failure": ("validate_booking", 1),
     "description": "Suite availability answers from the morning's cached calendar, which does not show "
                    "booking B-118, so suite S3 is held over an existing stay."},
    {"id": "zzl_cattery_3", "input": 3, "kind": "lossy_parsing", "root": ("extract_medications", 1),
     "failure": ("validate_booking", 1),
     "description": "The medication extractor keeps only the first item of a comma-separated list, so Luna's "
                    "prednisolone is dropped from the care plan."},
    {"id": "zzl_cattery_4", "input": 2, "kind": "bad_memory_write", "root": ("save_care_plan", 1),
     "failure": ("validate_booking", 1),
     "description": "The care-record write stores the first cat's diet for every cat of the booking, so "
                    "Juniper's weight-control diet is replaced."},
    {"id": "zzl_cattery_5", "input": 4, "kind": "off_by_one", "root": ("price_stay", 1),
     "failure": ("validate_booking", 1),
     "description": "Stay pricing counts check-in and check-out days inclusively and bills one night more than "
                    "the stay."},
]

MAIN_INSTRUCTIONS = ("You are the front desk of a cattery. Book the stay: find the owner, the cats' profiles, "
                     "their vaccinations, a free suite, hold it, get a care plan from the care planner, save it, "
                     "price the stay and validate the booking.")
CARE_INSTRUCTIONS = ("You are the care planner. Read the vet notes of the cats in the brief, extract each cat's "
                     "medications, and answer with the care plan as JSON.")


def _call(name: str, args: dict):
    from trajdebug.testing import Reply, tool_call

    return Reply(tool_calls=(tool_call(name, args),))


def _overlaps(a0: str, a1: str, b0: str, b1: str) -> bool:
    return a0 < b1 and b0 < a1


def _brain(inp: dict):
    def policy(request):
        instr, done = tool_history(request)
        res = {name: json.loads(out) if out.startswith("{") else out for name, _, out in done}
        if instr.startswith("You are the care planner"):
            ids = re.findall(r"C-\d\d", instr)
            if not done:
                return _call("vet_notes", {"cat_ids": ",".join(ids)})
            notes = res["vet_notes"]["notes"]
            extracted = [json.loads(out) for name, _, out in done if name == "extract_medications"]
            if len(extracted) < len(ids):
                cid = ids[len(extracted)]
                return _call("extract_medications", {"cat_id": cid, "notes": notes[cid]})
            plan = {e["cat_id"]: {"meds": e["meds"]} for e in extracted}
            return "Care plan ready.\n" + json.dumps({"plan": plan})
        n = len(done)
        if n == 0:
            return _call("find_owner", {"email": inp["email"]})
        owner = res["find_owner"]
        if n == 1:
            return _call("search_cat_profiles", {"owner_id": owner["owner_id"],
                                                 "query": f"{owner['name']} {' '.join(inp['cats'])}"})
        cats = res["search_cat_profiles"]["cats"]
        ids = [c["cat_id"] for c in cats]
        if n == 2:
            return _call("vaccination_records", {"cat_ids": ",".join(ids)})
        if n == 3:
            return _call("suite_availability", {"check_in": inp["check_in"], "check_out": inp["check_out"],
                                                "cats": len(ids)})
        if n == 4:
            suite = res["suite_availability"]["free"][0]
            return _call("hold_suite", {"suite": suite["suite"], "check_in": inp["check_in"],
                                        "check_out": inp["check_out"], "owner_id": owner["owner_id"],
                                        "cat_ids": ",".join(ids)})
        hold = res["hold_suite"]
        if n == 5:
            names = ", ".join(f"{c['cat_id']} ({c['name']})" for c in cats)
            return _call("care_planner", {"input": f"Care plan for cats {names} staying {inp['check_in']} to "
                                                   f"{inp['check_out']}."})
        if n == 6:
            plan = json.loads(res["care_planner"].split("\n", 1)[1])["plan"]
            for c in cats:
                plan[c["cat_id"]]["diet"] = c["diet"]
            return _call("save_care_plan", {"booking_id": hold["booking_id"], "plan_json": json.dumps(plan)})
        if n == 7:
            return _call("price_stay", {"booking_id": hold["booking_id"], "check_in": inp["check_in"],
                                        "check_out": inp["check_out"], "rate": hold["rate"]})
        if n == 8:
            return _call("validate_booking", {"booking_id": hold["booking_id"]})
        inv = res["price_stay"]
        return f"Booking {hold['booking_id']} confirmed: {inv['nights']} nights, GBP {inv['total']:.2f}."

    return policy


@function_tool
def find_owner(email: str) -> str:
    """Find an owner account by e-mail."""
    return json.dumps(OWNERS[email])


@function_tool
def search_cat_profiles(owner_id: str, query: str) -> str:
    """Search the cat profiles; returns the best-matching household's cats."""
    words = set(query.lower().split())

    def score(c: dict) -> int:
        s = 3 if c["surname"].lower() in words else 0
        if not kit.on("zzl_cattery_1"):
            s += 2 if c["name"].lower() in words else 0
            s += 5 if c["owner_id"] == owner_id else 0
        return s

    best = max(score(c) for c in CATS)
    top = [c for c in CATS if score(c) == best]
    household = top[0]["owner_id"]
    return json.dumps({"cats": [dict(c) for c in CATS if c["owner_id"] == household]})


@function_tool
def vaccination_records(cat_ids: str) -> str:
    """FVRCP vaccination expiry dates for the cats."""
    return json.dumps({"records": {c: {"fvrcp_until": VACCINES[c]} for c in cat_ids.split(",")}})


@function_tool
def suite_availability(check_in: str, check_out: str, cats: int) -> str:
    """Suites free for the whole stay with room for the cats."""
    cal = MORNING_SNAPSHOT if kit.on("zzl_cattery_2") else CALENDAR
    free = [dict(s) for s in SUITES if s["cats"] >= cats
            and not any(_overlaps(check_in, check_out, a, b) for a, b, _ in cal.get(s["suite"], []))]
    free.sort(key=lambda s: s["rate"])
    return json.dumps({"free": free})


@function_tool
def hold_suite(suite: str, check_in: str, check_out: str, owner_id: str, cat_ids: str) -> str:
    """Hold a suite for the stay and open the booking."""
    bid = f"B-{owner_id[2:]}-{check_in.replace('-', '')[4:]}"
    rate = next(s["rate"] for s in SUITES if s["suite"] == suite)
    HOLDS[bid] = {"booking_id": bid, "suite": suite, "check_in": check_in, "check_out": check_out,
                  "owner_id": owner_id, "cat_ids": cat_ids.split(","), "rate": rate}
    return json.dumps(HOLDS[bid])


@function_tool
def vet_notes(cat_ids: str) -> str:
    """Vet notes on file for the cats."""
    return json.dumps({"notes": {c: VET_NOTES[c] for c in cat_ids.split(",")}})


@function_tool
def extract_medications(cat_id: str, notes: str) -> str:
    """Extract the medication list from a cat's vet notes."""
    m = re.search(r"Meds: ([^;]*);", notes)
    text = m.group(1).strip() if m else "none"
    meds = [] if text == "none" else [x.strip() for x in text.split(",")]
    if kit.on("zzl_cattery_3"):
        meds = meds[:1]
    return json.dumps({"cat_id": cat_id, "meds": meds})


@function_tool
def save_care_plan(booking_id: str, plan_json: str) -> str:
    """Write the care plan into the kennel system's care records."""
    plan = json.loads(plan_json)
    first = next(iter(plan.values()))
    CARE_DB[booking_id] = {}
    for cat_id, p in plan.items():
        diet = first["diet"] if kit.on("zzl_cattery_4") else p["diet"]
        CARE_DB[booking_id][cat_id] = {"meds": list(p["meds"]), "diet": diet}
    return json.dumps({"booking_id": booking_id, "saved": sorted(CARE_DB[booking_id])})


@function_tool
def price_stay(booking_id: str, check_in: str, check_out: str, rate: float) -> str:
    """Price the stay: nights at the suite's nightly rate."""
    nights = (dt.date.fromisoformat(check_out) - dt.date.fromisoformat(check_in)).days
    if kit.on("zzl_cattery_5"):
        nights += 1
    INVOICES[booking_id] = {"booking_id": booking_id, "nights": nights, "rate": rate,
                            "total": round(nights * rate, 2)}
    return json.dumps(INVOICES[booking_id])


def _validate(booking_id: str, wanted: list[str]) -> str:
    hold = HOLDS[booking_id]
    names = sorted(next(c["name"] for c in CATS if c["cat_id"] == i) for i in hold["cat_ids"])
    if names != sorted(wanted):
        raise CheckFailed(f"booking {booking_id} holds cats {names}, the owner asked for {sorted(wanted)}")
    for a, b, other in CALENDAR.get(hold["suite"], []):
        if _overlaps(hold["check_in"], hold["check_out"], a, b):
            raise CheckFailed(f"suite {hold['suite']} is already booked {a}..{b} by {other}")
    for cid in hold["cat_ids"]:
        rec = CARE_DB[booking_id][cid]
        m = re.search(r"Meds: ([^;]*);", VET_NOTES[cid]).group(1).strip()
        meds = [] if m == "none" else [x.strip() for x in m.split(",")]
        if sorted(rec["meds"]) != sorted(meds):
            raise CheckFailed(f"care record of {cid} lists {rec['meds']}, vet notes list {meds}")
        diet = next(c["diet"] for c in CATS if c["cat_id"] == cid)
        if rec["diet"] != diet:
            raise CheckFailed(f"care record of {cid} says diet '{rec['diet']}', profile says '{diet}'")
    inv = INVOICES[booking_id]
    nights = (dt.date.fromisoformat(hold["check_out"]) - dt.date.fromisoformat(hold["check_in"])).days
    if inv["nights"] != nights:
        raise CheckFailed(f"invoice bills {inv['nights']} nights, stay {hold['check_in']}..{hold['check_out']} "
                          f"is {nights}")
    return json.dumps({"booking_id": booking_id, "valid": True})


def record(server, inp: dict, path: Path) -> None:
    server.use(_brain(inp))
    for d in (HOLDS, CARE_DB, INVOICES):
        d.clear()
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIResponsesModel(model="fake-model", openai_client=client)

    @function_tool(failure_error_function=None)
    def validate_booking(booking_id: str) -> str:
        """Check the booking against the cattery's rules before confirming it."""
        return _validate(booking_id, inp["cats"])

    care = Agent(name="care_planner_agent", instructions=CARE_INSTRUCTIONS, model=model,
                 tools=[vet_notes, extract_medications])
    desk = Agent(name="front_desk", instructions=MAIN_INSTRUCTIONS, model=model,
                 tools=[find_owner, search_cat_profiles, vaccination_records, suite_availability, hold_suite,
                        care.as_tool(tool_name="care_planner", tool_description="Draft the cats' care plan."),
                        save_care_plan, price_stay, validate_booking])
    request = (f"From {inp['email']}: please board {' and '.join(inp['cats'])} from {inp['check_in']} to "
               f"{inp['check_out']}.")

    def go():
        Runner.run_sync(desk, request, max_turns=20, run_config=RunConfig(workflow_name=NAME))

    record_agents(go, NAME, f"boarding for {', '.join(inp['cats'])}", path)
