"""Pension transfer-out desk of an occupational pension scheme (OpenAI Agents SDK + TrajdebugProcessor)."""
from __future__ import annotations

import json

from agents import Agent, ModelSettings, RunConfig, Runner, function_tool

from . import common

RUN_NAME = "pension-transfer-desk"
ROUTE = "openai_agents"
DOMAIN = "occupational pension scheme administration: overseas transfer-out requests"
SHAPE = ("Agents SDK: a desk agent whose first turn makes two parallel tool calls (member record, CETV), a "
         "scheme-verifier sub-agent run as a tool (register search, its own model turns), currency conversion, "
         "transfer submission (a business check that raises), a closing answer")
SWITCH = None

MEMBERS = {
    "48213": {"member_id": "48213", "name": "Eilidh MacRae", "status": "deferred", "left_service": "2024-11-30"},
    "50977": {"member_id": "50977", "name": "Tomasz Wierzbicki", "status": "deferred", "left_service": "2023-06-30"},
    "31540": {"member_id": "31540", "name": "Aoife Brennan", "status": "deferred", "left_service": "2022-02-28"},
    "62018": {"member_id": "62018", "name": "Henrik Dahl", "status": "deferred", "left_service": "2025-01-31"},
    "27765": {"member_id": "27765", "name": "Sofia Marchetti", "status": "deferred", "left_service": "2021-09-30"},
}
SNAPSHOT_2024 = {"62018": {"member_id": "62018", "name": "Henrik Dahl", "status": "active", "left_service": None}}
CETV = {"48213": 6125000, "50977": 18840250, "31540": 9310000, "62018": 4477500, "27765": 12095075}  # pence
REGISTER = [
    {"ref": "QR-40112", "name": "Rhein-Main Pensionskasse II", "country": "DE", "rops": False},
    {"ref": "QR-40107", "name": "Rhein-Main Pensionskasse", "country": "DE", "rops": True},
    {"ref": "QR-51230", "name": "Stichting Pensioenfonds Zuidhaven", "country": "NL", "rops": True},
    {"ref": "QR-33018", "name": "Irish Life Retirement Trust", "country": "IE", "rops": True},
    {"ref": "QR-33019", "name": "Irish Life Retirement Trust (Closed Fund)", "country": "IE", "rops": False},
    {"ref": "QR-70444", "name": "Fondo Pensione Alpi", "country": "IT", "rops": True},
    {"ref": "QR-60221", "name": "Norsk Tjenestepensjon Vest", "country": "NO", "rops": True},
]
RATES = {"EUR": 1.1841, "NOK": 13.612}
RATE_SERVICE = {"up": True}

INPUTS = [
    {"task": "transfer 48213 to Rhein-Main Pensionskasse",
     "message": "Member 48213 asks to transfer to Rhein-Main Pensionskasse (DE), paid in EUR. CETV statement issued 2025-02-03, guaranteed until 2025-05-03."},
    {"task": "transfer 50977 to Stichting Pensioenfonds Zuidhaven",
     "message": "Member 50977 asks to transfer to Stichting Pensioenfonds Zuidhaven (NL), paid in EUR. CETV statement issued 2025-01-20, guaranteed until 2025-04-20."},
    {"task": "transfer 31540 to Irish Life Retirement Trust",
     "message": "Member 31540 asks to transfer to Irish Life Retirement Trust (IE), paid in EUR. CETV statement issued 2025-02-17, guaranteed until 2025-05-17."},
    {"task": "transfer 62018 to Norsk Tjenestepensjon Vest",
     "message": "Member 62018 asks to transfer to Norsk Tjenestepensjon Vest (NO), paid in NOK. CETV statement issued 2025-03-01, guaranteed until 2025-06-01."},
    {"task": "transfer 27765 to Fondo Pensione Alpi",
     "message": "Member 27765 asks to transfer to Fondo Pensione Alpi (IT), paid in EUR. CETV statement issued 2025-01-27, guaranteed until 2025-04-27."},
]

CASES = [
    {"id": "pension_scheme_match", "input": 0, "switch": "first_name_match", "fault_kind": "subagent_wrong_entity",
     "root": ("scheme_verifier", 1), "failure": ("submit_transfer", 1),
     "description": "The scheme-verifier sub-agent settles on Rhein-Main Pensionskasse II (QR-40112) for Rhein-Main Pensionskasse, a scheme that is not a recognised overseas scheme."},
    {"id": "pension_pence_amount", "input": 1, "switch": "amount_in_pence", "fault_kind": "unit_error",
     "root": ("response", 5), "failure": ("submit_transfer", 1),
     "description": "The desk model passes the CETV in pence (18840250) as a pound amount to the conversion, so the transfer asks for a hundred times the member's value."},
    {"id": "pension_guarantee_date", "input": 4, "switch": "issue_date_arg", "fault_kind": "wrong_tool_args",
     "root": ("response", 1), "failure": ("submit_transfer", 1),
     "description": "The desk model asks for the CETV as at the statement's issue date 2025-01-27 instead of its guarantee date 2025-04-27, and submission refuses a value whose guarantee has run out."},
    {"id": "pension_member_snapshot", "input": 3, "switch": "nightly_snapshot", "fault_kind": "stale_data",
     "root": ("get_member", 1), "failure": ("submit_transfer", 1),
     "description": "The member lookup answers from the 2024 nightly snapshot, where member 62018 is still active, and submission refuses an active member's transfer form for a member who left service on 2025-01-31."},
    {"id": "pension_rate_fallback", "input": 2, "switch": "rate_service_down", "fault_kind": "swallowed_error",
     "root": ("convert_currency", 1), "failure": ("submit_transfer", 1),
     "description": "The conversion tool catches the rate service's timeout and converts at a rate of 1.0, so 93,100.00 GBP goes out as 93,100.00 EUR."},
]


@function_tool(failure_error_function=None)
def get_member(member_id: str) -> dict:
    """Member record from the administration system."""
    if SWITCH == "nightly_snapshot" and member_id in SNAPSHOT_2024:
        return {**SNAPSHOT_2024[member_id], "as_of": "2024-12-31"}
    return {**MEMBERS[member_id], "as_of": "2025-03-31"}


@function_tool(failure_error_function=None)
def get_cetv(member_id: str, guarantee_date: str) -> dict:
    """Cash equivalent transfer value of a member, guaranteed to a date."""
    return {"member_id": member_id, "value_pence": CETV[member_id], "currency": "GBP", "guarantee_date": guarantee_date}


@function_tool(failure_error_function=None)
def search_scheme_register(name: str, country: str) -> list:
    """Search the register of recognised overseas pension schemes."""
    words = set(name.lower().split())
    hits = [r for r in REGISTER if r["country"] == country and words <= set(r["name"].lower().split())]
    return sorted(hits, key=lambda r: r["ref"], reverse=True)


@function_tool(failure_error_function=None)
def convert_currency(amount: float, from_ccy: str, to_ccy: str) -> dict:
    """Convert an amount at today's reference rate."""
    try:
        if not RATE_SERVICE["up"]:
            raise TimeoutError("ECB reference rate service timed out")
        rate = RATES[to_ccy]
    except TimeoutError:
        rate = 1.0
    return {"amount": round(amount * rate, 2), "currency": to_ccy, "from": from_ccy, "rate": rate}


@function_tool(failure_error_function=None)
def submit_transfer(member_id: str, member_status: str, scheme_ref: str, amount: float, currency: str, guarantee_date: str) -> dict:
    """Submit the transfer-out instruction to the payments team."""
    scheme = next((r for r in REGISTER if r["ref"] == scheme_ref), None)
    if scheme is None or not scheme["rops"]:
        raise ValueError(f"transfer: scheme {scheme_ref} is not on the recognised overseas pension scheme list")
    live = MEMBERS[member_id]
    if member_status != live["status"]:
        raise ValueError(f"transfer: member {member_id} left service on {live['left_service']} ({live['status']}); "
                         f"instruction was prepared for an {member_status} member")
    if guarantee_date < "2025-04-01":
        raise ValueError(f"transfer: CETV for {member_id} guaranteed to {guarantee_date}, past the processing date 2025-04-01")
    expected = round(CETV[member_id] / 100 * RATES[currency], 2)
    if abs(amount - expected) > 1.0:
        raise ValueError(f"transfer: {amount:,.2f} {currency} for {member_id} does not match the CETV of "
                         f"{CETV[member_id] / 100:,.2f} GBP at {RATES[currency]} ({expected:,.2f} {currency})")
    return {"instruction": f"TO-{member_id}-{scheme_ref[-5:]}", "amount": amount, "currency": currency, "status": live["status"]}


scheme_verifier = Agent(
    name="scheme_verifier",
    instructions="You verify a receiving pension scheme against the overseas scheme register and answer JSON with ref, name, rops.",
    model="fake-model",
    tools=[search_scheme_register],
)


def _desk(model: str) -> Agent:
    scheme_verifier.model = model
    return Agent(
        name="transfer_desk",
        instructions="You process pension transfer-out requests: check the member, value, receiving scheme, convert and submit.",
        model=model,
        model_settings=ModelSettings(parallel_tool_calls=True),
        tools=[get_member, get_cetv,
               scheme_verifier.as_tool("verify_receiving_scheme", "Verify the receiving scheme against the register"),
               convert_currency, submit_transfer],
    )


def record(server, inp: dict, path: str) -> None:
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    RATE_SERVICE["up"] = SWITCH != "rate_service_down"
    try:
        common.run_agents(server, lambda: Runner.run(_desk(server.model), inp["message"],
                                                     run_config=RunConfig(workflow_name=RUN_NAME), max_turns=12),
                          TrajdebugProcessor(path=path, name=RUN_NAME, task=inp["task"]))
    finally:
        RATE_SERVICE["up"] = True


def brain(request):
    import re

    from trajdebug.testing import Reply, tool_call

    instructions = common.resp_instructions(request)
    user = common.resp_user(request)
    seen = common.resp_outputs(request)
    if "overseas scheme register" in instructions:
        req = json.loads(user) if user.strip().startswith("{") else {"name": user, "country": ""}
        if "search_scheme_register" not in seen:
            return Reply(tool_calls=(tool_call("search_scheme_register", {"name": req["name"], "country": req["country"]}),))
        hits = seen["search_scheme_register"][-1]
        pick = hits[0] if SWITCH == "first_name_match" else next(h for h in hits if h["name"] == req["name"])
        return json.dumps({"ref": pick["ref"], "name": pick["name"], "rops": pick["rops"]})
    if "transfer-out requests" in instructions:
        m = re.search(r"Member (\d+) asks to transfer to (.+?) \((\w\w)\), paid in (\w+)\. CETV statement issued "
                      r"(\S+), guaranteed until (\S+)\.", user)
        member_id, scheme, country, ccy, issued, guaranteed = m.groups()
        if "get_member" not in seen:
            date = issued if SWITCH == "issue_date_arg" else guaranteed
            return Reply(tool_calls=(tool_call("get_member", {"member_id": member_id}),
                                     tool_call("get_cetv", {"member_id": member_id, "guarantee_date": date})))
        if "verify_receiving_scheme" not in seen:
            return Reply(tool_calls=(tool_call("verify_receiving_scheme", {"input": json.dumps({"name": scheme, "country": country})}),))
        cetv = seen["get_cetv"][-1]
        if "convert_currency" not in seen:
            amount = cetv["value_pence"] if SWITCH == "amount_in_pence" else cetv["value_pence"] / 100
            return Reply(tool_calls=(tool_call("convert_currency", {"amount": amount, "from_ccy": "GBP", "to_ccy": ccy}),))
        if "submit_transfer" not in seen:
            verified = seen["verify_receiving_scheme"][-1]
            verified = json.loads(verified) if isinstance(verified, str) else verified
            conv = seen["convert_currency"][-1]
            return Reply(tool_calls=(tool_call("submit_transfer", {"member_id": member_id, "scheme_ref": verified["ref"],
                                                                   "member_status": seen["get_member"][-1]["status"],
                                                                   "amount": conv["amount"], "currency": ccy,
                                                                   "guarantee_date": cetv["guarantee_date"]}),))
        done = seen["submit_transfer"][-1]
        return (f"Transfer instruction {done['instruction']} submitted: {done['amount']:,.2f} {done['currency']} "
                f"for member {member_id}.")
    return "I cannot help with that."
