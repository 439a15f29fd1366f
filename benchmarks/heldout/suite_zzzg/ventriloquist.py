"""Ventriloquist booking agency: a planner model and a tool loop, recorded with trajdebug's own API.

Shape: enquiry -> model plans the actions -> plan parser -> e-mail thread retrieval -> for each planned
action: the model chooses the tool's arguments from its notes, the tool runs (a `with` step whose input
is the model's arguments dict); the fee service is retried after a dropped connection; the contract is
drafted by a sub-agent (model, clause parser, state write); the agency's contract desk checks the
contract when it is sent (raises).
"""

from __future__ import annotations

import json
import re

import trajdebug
from openai import OpenAI

NAME = "ventriloquist-bookings"
ROUTE = "sdk"
DOMAIN = "ventriloquist booking agency"
SHAPE = "planner + tool loop, 20 steps: llm plan -> parse -> retrieval -> (llm args -> tool) x6 with a retried fee call and a contract sub-agent (llm, parse, state) -> contract desk raises"
SWITCH = None

ROSTER = {
    "Rae Alder": {"home": "Leeds", "rate": 130, "partner": "Lord Fenwick"},
    "Ray Alder": {"home": "Bristol", "rate": 95, "partner": "Mabel"},
    "Cosmo Quill": {"home": "Glasgow", "rate": 150, "partner": "Sir Gusset"},
    "Dot Pennywhistle": {"home": "Norwich", "rate": 110, "partner": "Captain Crumb"},
    "Ibrahim Sallow": {"home": "Cardiff", "rate": 120, "partner": "Pip"},
}
DISTANCES = {("Leeds", "YO1"): 40, ("Leeds", "M4"): 70, ("Glasgow", "EH1"): 75, ("Norwich", "CB2"): 100,
             ("Cardiff", "BS1"): 72, ("Leeds", "NE1"): 160, ("Glasgow", "AB10"): 235}
BUSY = {("Cosmo Quill", "2027-05-08")}

INPUTS = [
    {"client": "York Guildhall Events", "performer": "Rae Alder", "dates": ["2027-04-17"], "hours": 2,
     "postcode": "YO1", "venue": "York Guildhall"},
    {"client": "The Salt Cellar Comedy Club", "performer": "Cosmo Quill", "dates": ["2027-05-08", "2027-05-15"],
     "hours": 3, "postcode": "EH1", "venue": "Salt Cellar, Edinburgh"},
    {"client": "Fenwick Primary PTA", "performer": "Rae Alder", "dates": ["2027-06-12"], "hours": 1,
     "postcode": "NE1", "venue": "Fenwick Primary hall"},
    {"client": "Granta Boat Club", "performer": "Dot Pennywhistle", "dates": ["2027-03-27"], "hours": 3,
     "postcode": "CB2", "venue": "Granta boathouse"},
    {"client": "Harbourside Arts Trust", "performer": "Ibrahim Sallow", "dates": ["2027-07-03"], "hours": 2,
     "postcode": "BS1", "venue": "Harbourside stage"},
]
OTHER_THREAD = [
    {"from": "bookings@kelpiefestival.example", "text": "Could Cosmo do 2027-06-19 instead? Same set, 3 hours."},
]

CASES = [
    {"id": "zzzg_ven_01", "input": 1, "switch": 1, "kind": "plan_error",
     "root": ("plan_booking", 1), "failure": ("hold_date", 1),
     "description": "The booking plan leaves out the calendar check, so the agent holds the first requested "
                    "date, which Cosmo Quill already has booked, instead of the client's second choice."},
    {"id": "zzzg_ven_02", "input": 3, "switch": 2, "kind": "wrong_tool_args",
     "root": ("choose_args", 3), "failure": ("send_contract", 1),
     "description": "The model asks the fee service for a 1-hour set where the enquiry is for 3 hours, so "
                    "the contract's fee is below the performer's minimum for the booked hours."},
    {"id": "zzzg_ven_03", "input": 2, "switch": 3, "kind": "swallowed_error",
     "root": ("travel_distance", 1), "failure": ("send_contract", 1),
     "description": "The route service times out and the travel step answers 0 km instead of reporting it, "
                    "so the fee carries no travel supplement for a venue 160 km from Leeds."},
    {"id": "zzzg_ven_04", "input": 0, "switch": 4, "kind": "subagent_wrong_entity",
     "root": ("draft_clauses", 1), "failure": ("send_contract", 1),
     "description": "The contract sub-agent drafts the contract for Ray Alder (Bristol) instead of the held "
                    "performer Rae Alder (Leeds)."},
    {"id": "zzzg_ven_05", "input": 1, "switch": 5, "kind": "context_pollution",
     "root": ("load_thread", 1), "failure": ("send_contract", 1),
     "description": "The e-mail thread loaded for the Salt Cellar enquiry also holds a Kelpie Festival "
                    "message, and the agent holds Cosmo Quill for that client's 2027-06-19 date."},
]

PLAN = ["check_calendar", "travel_distance", "quote_fee", "hold_date", "draft_contract", "send_contract"]
DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


# ---------------------------------------------------------------- model policy

def policy(request):
    messages = request.body["messages"]
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("Plan"):
        plan = [a for a in PLAN if not (SWITCH == 1 and a == "check_calendar")]
        return json.dumps({"actions": plan})
    if system.startswith("Choose"):
        tool = system.split(": ", 1)[1].strip()
        notes = json.loads(user)
        enq = notes["enquiry"]
        said = [d for m in notes["thread"] for d in DATE.findall(m["text"])]
        date = said[-1] if said else enq["dates"][0]
        cal = notes.get("check_calendar")
        if cal and not cal["free"]:
            date = cal["next_free"]
        if tool == "check_calendar":
            args = {"performer": enq["performer"], "date": date}
        elif tool == "travel_distance":
            args = {"performer": enq["performer"], "postcode": enq["postcode"]}
        elif tool == "quote_fee":
            hours = enq["hours"]
            if SWITCH == 2:
                hours = 1
            args = {"performer": enq["performer"], "hours": hours, "km": notes["travel_distance"]["km"]}
        elif tool == "hold_date":
            args = {"performer": enq["performer"], "date": date, "client": enq["client"]}
        elif tool == "draft_contract":
            args = {"hold": notes["hold_date"]["hold_id"], "fee_gbp": notes["quote_fee"]["fee_gbp"],
                    "venue": enq["venue"], "hours": enq["hours"]}
        else:
            args = {"contract_id": notes["draft_contract"]["contract_id"]}
        return json.dumps({"tool": tool, "args": args})
    if system.startswith("Draft"):
        job = json.loads(user)
        performer = job["performer"]
        if SWITCH == 4:
            performer = "Ray Alder"
        return (f"1. The Artist, {performer}, performs at {job['venue']} on {job['date']}.\n"
                f"2. The set runs {job['hours']} hours.\n3. The fee is {job['fee_gbp']} GBP.\n"
                f"4. The Client is {job['client']}.")
    return "Unknown request."


# ---------------------------------------------------------------- tools

class ContractDeskRejected(Exception):
    pass


_HOLDS: dict = {}
_CONTRACTS: dict = {}
_FEE_CALLS = {"n": 0}


def check_calendar(performer: str, date: str) -> dict:
    if (performer, date) in BUSY:
        return {"performer": performer, "date": date, "free": False, "next_free": "2027-05-15"}
    return {"performer": performer, "date": date, "free": True, "next_free": date}


class RouteServiceTimeout(Exception):
    pass


def _route_service(home: str, postcode: str) -> int:
    if SWITCH == 3:
        raise RouteServiceTimeout(f"route service did not answer for {home} -> {postcode}")
    return DISTANCES[(home, postcode)]


def travel_distance(performer: str, postcode: str) -> dict:
    home = ROSTER[performer]["home"]
    try:
        km = _route_service(home, postcode)
    except RouteServiceTimeout:
        km = 0
    return {"from": home, "postcode": postcode, "km": km}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def quote_fee(args: dict) -> dict:
    _FEE_CALLS["n"] += 1
    if _FEE_CALLS["n"] == 1:
        raise ConnectionError("fee service closed the connection")
    rate = ROSTER[args["performer"]]["rate"]
    supplement = round(max(0, args["km"] - 50) * 0.9, 2)
    return {"performer": args["performer"], "hours": args["hours"], "fee_gbp": rate * args["hours"] + supplement,
            "travel_supplement_gbp": supplement}


def hold_date(performer: str, date: str, client: str) -> dict:
    if (performer, date) in BUSY:
        raise ContractDeskRejected(f"{performer} is already booked on {date}")
    hold_id = f"H-{len(_HOLDS) + 301}"
    _HOLDS[hold_id] = {"performer": performer, "date": date, "client": client}
    return {"hold_id": hold_id, **_HOLDS[hold_id]}


def send_contract(contract_id: str, enquiry: dict) -> dict:
    c = _CONTRACTS[contract_id]
    hold = _HOLDS[c["hold"]]
    if c["performer"] != hold["performer"]:
        raise ContractDeskRejected(f"contract {contract_id} names {c['performer']}; hold {c['hold']} is for "
                                   f"{hold['performer']}")
    if hold["date"] not in enquiry["dates"]:
        raise ContractDeskRejected(f"hold {c['hold']} is for {hold['date']}; {enquiry['client']} asked for "
                                   f"{', '.join(enquiry['dates'])}")
    home = ROSTER[hold["performer"]]["home"]
    km = DISTANCES[(home, enquiry["postcode"])]
    minimum = ROSTER[hold["performer"]]["rate"] * enquiry["hours"] + round(max(0, km - 50) * 0.9, 2)
    if c["fee_gbp"] < minimum:
        raise ContractDeskRejected(f"fee {c['fee_gbp']} GBP is below the {minimum} GBP minimum for "
                                   f"{enquiry['hours']} hours at {km} km from {home}")
    return {"contract_id": contract_id, "sent_to": enquiry["client"]}


# ---------------------------------------------------------------- steps

@trajdebug.step(kind="input")
def take_enquiry(enquiry: dict) -> dict:
    return dict(enquiry)


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> list:
    return list(json.loads(text)["actions"])


@trajdebug.step(kind="retrieval")
def load_thread(client: str, performer: str, dates: list) -> list:
    thread = [{"from": client, "text": f"We would like {performer} on {' or '.join(dates)}."},
              {"from": "agency", "text": f"Thank you, we will confirm {dates[0]} shortly."}]
    if SWITCH == 5:
        thread = thread + OTHER_THREAD
    return thread


@trajdebug.step(kind="parse")
def clause_list(text: str) -> dict:
    clauses = [line.split(". ", 1)[1] for line in text.splitlines() if line[:1].isdigit()]
    artist = re.search(r"The Artist, (.+?), performs", clauses[0]).group(1)
    fee = float(re.search(r"The fee is ([0-9.]+) GBP", text).group(1))
    return {"clauses": clauses, "performer": artist, "fee_gbp": fee}


@trajdebug.step(kind="state")
def remember_contract(hold_id: str, parsed: dict) -> dict:
    contract_id = f"C-{hold_id[2:]}"
    contract = {"contract_id": contract_id, "hold": hold_id, **parsed}
    _CONTRACTS[contract_id] = contract
    trajdebug.current_run().state["contract"] = contract
    return contract


def record(inp: dict, path: str, server) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _FEE_CALLS["n"] = 0
    _HOLDS.clear()
    _CONTRACTS.clear()

    def ask(messages: list) -> str:
        return client.chat.completions.create(model=server.model, messages=messages).choices[0].message.content

    @trajdebug.step(kind="llm")
    def plan_booking(messages: list) -> str:
        return ask(messages)

    @trajdebug.step(kind="llm")
    def choose_args(messages: list) -> dict:
        return json.loads(ask(messages))

    @trajdebug.step(kind="llm")
    def draft_clauses(messages: list) -> str:
        return ask(messages)

    with trajdebug.run(NAME, task=f"book {inp['performer']} for {inp['client']}", path=path):
        enquiry = take_enquiry(inp)
        plan = parse_plan(plan_booking([
            {"role": "system", "content": "Plan the booking: list the actions to take, as JSON."},
            {"role": "user", "content": json.dumps(enquiry)},
        ]))
        notes = {"enquiry": enquiry, "thread": load_thread(enquiry["client"], enquiry["performer"], enquiry["dates"])}
        for action in plan:
            choice = choose_args([
                {"role": "system", "content": f"Choose the arguments for the next tool: {action}"},
                {"role": "user", "content": json.dumps(notes)},
            ])
            args = choice["args"]
            if action == "quote_fee":
                notes[action] = quote_fee(args)
            elif action == "draft_contract":
                with trajdebug.step("contract_writer", kind="agent", input=args) as sub:
                    hold = notes["hold_date"]
                    job = {"performer": hold["performer"], "client": hold["client"], "date": hold["date"], **args}
                    text = draft_clauses([
                        {"role": "system", "content": "Draft the performance contract clauses."},
                        {"role": "user", "content": json.dumps(job)},
                    ])
                    sub.output = notes[action] = remember_contract(args["hold"], clause_list(text))
            else:
                with trajdebug.step(action, kind="tool", input=args) as call:
                    if action == "check_calendar":
                        result = check_calendar(**args)
                    elif action == "travel_distance":
                        result = travel_distance(**args)
                    elif action == "hold_date":
                        result = hold_date(**args)
                    else:
                        result = send_contract(args["contract_id"], enquiry)
                    call.output = notes[action] = result
