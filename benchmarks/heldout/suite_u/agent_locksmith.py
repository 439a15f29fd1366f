"""Emergency locksmith dispatch (route: openai_agents): a triage agent looks the caller up and hands off
to the dispatcher (or the commercial desk); the dispatcher checks occupancy through a sub-agent run as a
tool, finds certified locksmiths, gets two ETAs in parallel, quotes, books and texts the customer."""

from __future__ import annotations

import json
from typing import Any

from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
    set_trace_processors,
)
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import FakeModelServer, Reply, tool_call

from . import kit


NAME = "locksmith-dispatch"
ROUTE = "openai_agents"
DOMAIN = "emergency locksmith dispatch"
SHAPE = "triage agent -> hand-off -> dispatcher (or commercial desk); occupancy sub-agent via as_tool; parallel ETA calls; quote, booking, SMS"

TECHS = [
    {"tech_id": "T-03", "name": "Priya Nair", "area": "LS6", "skills": ["euro cylinder", "uPVC multipoint", "mortice"]},
    {"tech_id": "T-07", "name": "Dan Cole", "area": "LS6", "skills": ["euro cylinder"]},
    {"tech_id": "T-11", "name": "Marek Wolny", "area": "LS7", "skills": ["mortice", "euro cylinder"]},
    {"tech_id": "T-15", "name": "Sade Okafor", "area": "LS7", "skills": ["uPVC multipoint", "euro cylinder"]},
    {"tech_id": "T-19", "name": "Huw Jenkins", "area": "LS8", "skills": ["mortice", "uPVC multipoint", "euro cylinder"]},
    {"tech_id": "T-22", "name": "Lena Marsh", "area": "LS8", "skills": ["euro cylinder"]},
]
TARIFF = {"euro cylinder": 85, "uPVC multipoint": 120, "mortice": 105}

CALLERS = {
    "07700 900112": {"name": "Ann Reid", "address": "14 Mill Lane, Leeds LS6 2QT", "billing": "7 Quarry Road, Leeds LS6 1AB", "lock": "uPVC multipoint", "premises": "home"},
    "07700 900245": {"name": "Tom Ashby", "address": "3 Vine Court, Leeds LS7 4HD", "billing": "3 Vine Court, Leeds LS7 4HD", "lock": "mortice", "premises": "home"},
    "07700 900318": {"name": "Jo Pryce", "address": "88 Elm Street, Leeds LS8 2PL", "billing": "88 Elm Street, Leeds LS8 2PL", "lock": "uPVC multipoint", "premises": "home"},
    "07700 900467": {"name": "Raj Mehta", "address": "21 Cross Row, Leeds LS6 3EE", "billing": "21 Cross Row, Leeds LS6 3EE", "lock": "mortice", "premises": "home"},
    "07700 900590": {"name": "Cara Boyd", "address": "5 Hill Top, Leeds LS7 1JR", "billing": "5 Hill Top, Leeds LS7 1JR", "lock": "euro cylinder", "premises": "home"},
    "07700 900631": {"name": "Ed Fenwick", "address": "40 Park View, Leeds LS8 3NX", "billing": "40 Park View, Leeds LS8 3NX", "lock": "mortice", "premises": "home"},
    "07700 900702": {"name": "Mia Lund", "address": "9 Ash Grove, Leeds LS6 4BT", "billing": "9 Ash Grove, Leeds LS6 4BT", "lock": "euro cylinder", "premises": "home"},
    "07700 900859": {"name": "Ola Berg", "address": "12 Kirk Gate, Leeds LS7 2AA", "billing": "12 Kirk Gate, Leeds LS7 2AA", "lock": "uPVC multipoint", "premises": "home"},
    "07700 900973": {"name": "Ivy Shaw", "address": "2 Beck Side, Leeds LS8 1RR", "billing": "2 Beck Side, Leeds LS8 1RR", "lock": "mortice", "premises": "home"},
}
REGISTER = {c["address"]: c["name"] for c in CALLERS.values()}
REGISTER["12 Mill Lane, Leeds LS6 2QT"] = "Quarry Road Lettings Ltd"
REGISTER["16 Mill Lane, Leeds LS6 2QT"] = "Hollis Family Trust"

INPUTS = {
    "l1": ("07700 900112", "18:30"),
    "l2": ("07700 900245", "21:10"),
    "l3": ("07700 900318", "07:45"),
    "l4": ("07700 900467", "23:20"),
    "l5": ("07700 900590", "12:05"),
    "r1": ("07700 900631", "19:00"),
    "r2": ("07700 900702", "06:40"),
    "r3": ("07700 900859", "16:25"),
    "r4": ("07700 900973", "02:15"),
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = {
    "locksmith_occupant": ("lock.occupant", "subagent_wrong_entity", "l1", "generation desk-model"),
    "locksmith_desk": ("lock.desk", "wrong_routing", "l2", "generation desk-model"),
    "locksmith_skill": ("lock.skill", "tool_ignores_argument", "l3", "find_locksmiths"),
    "locksmith_quote": ("lock.quote", "swallowed_error", "l4", "quote_job"),
    "locksmith_window": ("lock.window", "format_drift", "l5", "generation desk-model"),
}


class Declined(RuntimeError):
    pass


Declined.__module__ = "dispatch_desk"


def _postcode(address: str) -> str:
    return address.rsplit(" ", 2)[-2]


# ---- tools -------------------------------------------------------------------------------------

@function_tool(failure_error_function=None)
def lookup_customer(phone: str) -> str:
    """The customer record for a phone number."""
    c = CALLERS[phone]
    return json.dumps({"phone": phone, "name": c["name"], "address": c["address"], "billing_address": c["billing"],
                       "premises": c["premises"], "lock": c["lock"]})


@function_tool(failure_error_function=None)
def lookup_property_register(street: str, postcode: str) -> str:
    """Register entries on a street within a postcode, in register order."""
    rows = [{"address": a, "occupant": o} for a, o in sorted(REGISTER.items())
            if street.lower() in a.lower() and postcode in a]
    return json.dumps({"matches": rows})


@function_tool(failure_error_function=None)
def find_locksmiths(postcode: str, skill: str) -> str:
    """Locksmiths on shift near a postcode who are certified for a lock type, nearest first."""
    area = postcode.split()[0] if " " in postcode else postcode
    near = sorted(TECHS, key=lambda t: (t["area"] != area, abs(int(t["area"][2:]) - int(area[2:])), t["tech_id"]))
    if kit.active("lock.skill"):
        rows = near[:3]  # the skill filter is not applied
        kit.mark(next(t["tech_id"] for t in rows if skill not in t["skills"]))
    else:
        rows = [t for t in near if skill in t["skills"]][:3]
    return json.dumps({"postcode": postcode, "technicians": [{"tech_id": t["tech_id"], "name": t["name"], "area": t["area"]} for t in rows]})


@function_tool(failure_error_function=None)
def get_eta(tech_id: str, postcode: str) -> str:
    """Driving time of a technician to a postcode."""
    t = next(t for t in TECHS if t["tech_id"] == tech_id)
    minutes = 14 + 9 * abs(int(t["area"][2:]) - int(postcode.split()[0][2:])) + int(tech_id[2:]) % 5
    return json.dumps({"tech_id": tech_id, "eta_min": minutes})


def _pricing_service(job: str, lock: str, time: str) -> dict:
    base = TARIFF[lock]
    night = int(time[:2]) >= 22 or int(time[:2]) < 6
    if kit.active("lock.quote"):
        raise TimeoutError("pricing service timed out")
    return {"labour_gbp": base + (40 if night else 0), "callout_gbp": 45}


@function_tool(failure_error_function=None)
def quote_job(job_type: str, lock_type: str, call_time: str) -> str:
    """Fixed-price quote for a job."""
    try:
        p = _pricing_service(job_type, lock_type, call_time)
    except TimeoutError:
        p = {"labour_gbp": 0, "callout_gbp": 0}
        kit.mark('"price_gbp": 0')
    total = p["labour_gbp"] + p["callout_gbp"]
    return json.dumps({"job_type": job_type, "lock_type": lock_type, "price_gbp": total, **p})


@function_tool(failure_error_function=None)
def book_job(tech_id: str, address: str, occupant: str, lock_type: str, price_gbp: float, arrival_window: str) -> str:
    """Book the job with the technician and pre-authorise the customer's card."""
    if REGISTER.get(address) != occupant:
        raise Declined(f"booking API 403: {occupant} is not the registered occupant of {address}; photo ID check required before entry")
    t = next(t for t in TECHS if t["tech_id"] == tech_id)
    if lock_type not in t["skills"]:
        raise Declined(f"booking API 409: {tech_id} holds no certification for {lock_type} locks")
    if price_gbp <= 0:
        raise Declined(f"payments API 402: pre-authorisation of £{price_gbp:.2f} declined")
    return json.dumps({"job": f"J-{tech_id[2:]}{int(price_gbp)}", "window": arrival_window, "status": "booked"})


@function_tool(failure_error_function=None)
def send_customer_sms(phone: str, arrival_window: str, tech_name: str) -> str:
    """Text the customer the arrival window."""
    ok = len(arrival_window) == 11 and arrival_window[2] == ":" and arrival_window[5] == "-" and arrival_window[8] == ":"
    if not ok:
        raise Declined(f"SMS gateway 400: arrival_window '{arrival_window}' must be HH:MM-HH:MM")
    return json.dumps({"to": phone, "status": "queued"})


@function_tool(failure_error_function=None)
def lookup_business_account(postcode: str) -> str:
    """Business accounts registered at a postcode."""
    return json.dumps({"postcode": postcode, "accounts": []})


@function_tool(failure_error_function=None)
def book_commercial_job(account_no: str, address: str, lock_type: str) -> str:
    """Book a job on a commercial contract."""
    raise Declined(f"commercial bookings API 404: no contract '{account_no}' covers {address}")


# ---- the scripted model ---------------------------------------------------------------------------

def _calls(msgs: list[dict]) -> list[dict]:
    out = []
    for m in msgs:
        for c in m.get("tool_calls") or []:
            out.append({"name": c["function"]["name"], "args": json.loads(c["function"]["arguments"] or "{}"), "id": c["id"]})
    return out


def _result(msgs: list[dict], name: str) -> dict | None:
    ids = {c["id"] for c in _calls(msgs) if c["name"] == name}
    for m in reversed(msgs):
        if m["role"] == "tool" and m.get("tool_call_id") in ids:
            try:
                return json.loads(m["content"])
            except (TypeError, ValueError):
                return {"text": m["content"]}
    return None


def _hhmm(minutes: int) -> str:
    minutes %= 24 * 60
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def policy(request) -> Any:
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    user = next(m["content"] for m in msgs if m["role"] == "user")
    done = {c["name"] for c in _calls(msgs)}
    if system.startswith("You check occupancy"):
        ask = json.loads(user)
        number, street = ask["address"].split(",")[0].split(" ", 1)
        if "lookup_property_register" not in done:
            return Reply(tool_calls=(tool_call("lookup_property_register", {"street": street, "postcode": _postcode(ask["address"])}),))
        matches = _result(msgs, "lookup_property_register")["matches"]
        pick = next(r for r in matches if r["address"].startswith(number + " "))
        if kit.active("lock.occupant"):
            pick = matches[0]
            kit.mark(pick["occupant"])
        return json.dumps({"address": ask["address"], "occupant": pick["occupant"], "verified": True})
    call = json.loads(user)
    if system.startswith("You are the triage desk"):
        if "lookup_customer" not in done:
            return Reply(tool_calls=(tool_call("lookup_customer", {"phone": call["phone"]}),))
        cust = _result(msgs, "lookup_customer")
        target = "transfer_to_dispatcher" if cust["premises"] == "home" else "transfer_to_commercial_desk"
        if kit.active("lock.desk"):
            target = "transfer_to_commercial_desk"
            kit.mark(target)
        return Reply(tool_calls=(tool_call(target, {}),))
    cust = _result(msgs, "lookup_customer")
    pc = _postcode(cust["address"])
    if system.startswith("You handle commercial"):
        if "lookup_business_account" not in done:
            return Reply(tool_calls=(tool_call("lookup_business_account", {"postcode": pc}),))
        if "book_commercial_job" not in done:
            return Reply(tool_calls=(tool_call("book_commercial_job", {"account_no": "AD-HOC", "address": cust["address"], "lock_type": cust["lock"]}),))
        return "Booked on the commercial contract."
    # the dispatcher
    if "check_occupancy" not in done:
        ask = {"address": cust["address"], "caller": cust["name"]}
        return Reply(tool_calls=(tool_call("check_occupancy", {"input": json.dumps(ask)}),))
    if "find_locksmiths" not in done:
        return Reply(tool_calls=(tool_call("find_locksmiths", {"postcode": pc, "skill": cust["lock"]}),))
    techs = _result(msgs, "find_locksmiths")["technicians"]
    if "get_eta" not in done:
        return Reply(tool_calls=tuple(tool_call("get_eta", {"tech_id": t["tech_id"], "postcode": pc}) for t in techs[:2]))
    if "quote_job" not in done:
        return Reply(tool_calls=(tool_call("quote_job", {"job_type": "lockout", "lock_type": cust["lock"], "call_time": call["time"]}),))
    etas = [json.loads(m["content"]) for m in msgs if m["role"] == "tool" and '"eta_min"' in (m["content"] or "")]
    best = min(etas, key=lambda e: (e["eta_min"], e["tech_id"]))
    h, m = map(int, call["time"].split(":"))
    start = h * 60 + m + best["eta_min"]
    window = f"{_hhmm(start)}-{_hhmm(start + 30)}"
    if kit.active("lock.window"):
        s = start % (24 * 60)
        hh = s // 60 % 12 or 12
        window = f"{hh}.{s % 60:02d}{'pm' if s >= 720 else 'am'} to {(hh % 12) + 1 if s % 60 >= 30 else hh}.{(s + 30) % 60:02d}{'pm' if (s + 30) >= 720 else 'am'}"
        kit.mark(window)
    occ = json.loads(_result(msgs, "check_occupancy")["text"]) if "text" in (_result(msgs, "check_occupancy") or {}) else _result(msgs, "check_occupancy")
    quote = _result(msgs, "quote_job")
    tech = next(t for t in techs if t["tech_id"] == best["tech_id"])
    if "book_job" not in done:
        return Reply(tool_calls=(tool_call("book_job", {"tech_id": best["tech_id"], "address": cust["address"], "occupant": occ["occupant"],
                                                        "lock_type": cust["lock"], "price_gbp": quote["price_gbp"], "arrival_window": window}),))
    if "send_customer_sms" not in done:
        booked = _result(msgs, "book_job")
        return Reply(tool_calls=(tool_call("send_customer_sms", {"phone": cust["phone"], "arrival_window": booked["window"], "tech_name": tech["name"]}),))
    return f"{tech['name']} is on the way, arriving {window}; quote £{quote['price_gbp']}."


# ---- the agents ------------------------------------------------------------------------------------

_STATE: dict = {}


def _setup() -> dict:
    if not _STATE:
        server = FakeModelServer(policy, model="desk-model")
        server.start()
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
        settings = ModelSettings(parallel_tool_calls=True)
        checker = Agent(name="occupancy checker", model=model,
                        instructions="You check occupancy against the property register. Answer with JSON.",
                        tools=[lookup_property_register])
        dispatcher = Agent(name="dispatcher", model=model, model_settings=settings,
                           instructions="You dispatch emergency locksmiths: check occupancy, find a certified locksmith, quote, book, text the customer.",
                           tools=[checker.as_tool("check_occupancy", "Check that the caller occupies the address.", failure_error_function=None),
                                  find_locksmiths, get_eta, quote_job, book_job, send_customer_sms])
        commercial = Agent(name="commercial desk", model=model,
                           instructions="You handle commercial premises on business contracts.",
                           tools=[lookup_business_account, book_commercial_job])
        triage = Agent(name="triage", model=model, instructions="You are the triage desk for emergency lock calls.",
                       tools=[lookup_customer], handoffs=[dispatcher, commercial])
        _STATE.update(server=server, triage=triage)
    return _STATE


def record(key: str, out: str) -> None:
    st = _setup()
    phone, time = INPUTS[key]
    proc = TrajdebugProcessor(path=out, name=NAME, task=f"lockout call from {phone} at {time}")
    set_trace_processors([proc])
    try:
        Runner.run_sync(st["triage"], json.dumps({"phone": phone, "time": time, "issue": "locked out"}),
                        run_config=RunConfig(workflow_name=NAME, trace_include_sensitive_data=True), max_turns=20)
    except Declined:
        pass
    except Exception as e:  # the SDK may wrap a tool's exception
        if "Declined" not in type(e).__name__ and not isinstance(e.__cause__, Declined) and "API" not in str(e) and "gateway" not in str(e):
            raise
    finally:
        set_trace_processors([])
