"""Pilates studio memberships: a member-services desk (route: openai_agents, Responses API).

A front-desk agent looks the member up, reads their message thread and hands off to a
specialist desk (upgrades, freezes or cancellations).  The specialist records a plan, then
carries it out with tools (plans, proration, class schedule, bookings, promotions, charges)
and runs the membership check, which raises when the change breaks the studio's rules.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import common
import kit
from agents import Agent, ModelSettings, OpenAIResponsesModel, RunConfig, Runner, function_tool
from openai import AsyncOpenAI


NAME = "pilates-membership-desk"
ROUTE = "openai_agents"
DOMAIN = "pilates studio memberships"
SHAPE = (
    "Agents SDK (Responses API): front desk (member lookup, thread tool) hands off to one of three "
    "specialist desks; the specialist records a plan and runs it (plans, proration, schedule, two bookings, "
    "promotion, charge) and calls the membership check (fatal)"
)

PLANS = {
    "Mat 4": (59.0, 0),
    "Mat Unlimited": (89.0, 0),
    "Reformer 4": (99.0, 1),
    "Reformer 8": (129.0, 2),
    "Reformer Unlimited": (169.0, 2),
}  # monthly price, intro classes included
STUDIOS = ["Clifton", "Redland", "Southville"]
DEFAULT_STUDIO = "Clifton"


def _classes(studio: str) -> list[dict[str, Any]]:
    code = studio[:3].upper()
    rows = [
        ("Mon", "07:00", "Reformer intro", 3),
        ("Tue", "18:30", "Mat flow", 8),
        ("Wed", "12:15", "Reformer intro", 2),
        ("Thu", "19:00", "Reformer intro", 4),
        ("Sat", "09:30", "Reformer flow", 6),
    ]
    return [
        {
            "class_id": f"{code}-W23-{d.upper()}{t.replace(':', '')}",
            "studio": studio,
            "day": d,
            "time": t,
            "type": kind,
            "spaces": spaces,
        }
        for d, t, kind, spaces in rows
    ]


MEMBERS: dict[str, dict[str, Any]] = {
    "M-2231": {"name": "Rosa Beaumont", "studio": "Redland", "plan": "Mat 4", "billing_day": 3, "promos": []},
    "M-2240": {
        "name": "Ian Okoro",
        "studio": "Southville",
        "plan": "Reformer 4",
        "billing_day": 10,
        "promos": [],
    },
    "M-2252": {
        "name": "Keira Walsh",
        "studio": "Redland",
        "plan": "Mat Unlimited",
        "billing_day": 1,
        "promos": [],
    },
    "M-2263": {
        "name": "Tomasz Nowak",
        "studio": "Southville",
        "plan": "Mat 4",
        "billing_day": 15,
        "promos": [],
    },
    "M-2270": {
        "name": "Abi Chandler",
        "studio": "Redland",
        "plan": "Reformer 4",
        "billing_day": 7,
        "promos": [],
    },
    "M-2204": {
        "name": "Leah Morgan",
        "studio": "Clifton",
        "plan": "Mat 4",
        "billing_day": 5,
        "promos": ["SPRING10"],
    },
    "M-2209": {
        "name": "Dev Mistry",
        "studio": "Southville",
        "plan": "Reformer 8",
        "billing_day": 20,
        "promos": [],
    },
    "M-2215": {
        "name": "Hana Sato",
        "studio": "Redland",
        "plan": "Mat Unlimited",
        "billing_day": 12,
        "promos": [],
    },
    "M-2219": {
        "name": "Carl Jennings",
        "studio": "Clifton",
        "plan": "Reformer 4",
        "billing_day": 28,
        "promos": [],
    },
}
THREADS: dict[str, list[str]] = {
    "M-2231": ["Member: Hi, I've been loving the mat classes."],
    "M-2240": ["Member: Thanks for sorting my direct debit last month."],
    "M-2252": ["Member: Is the Redland car park open on Sundays?", "Desk: Yes, from 8am."],
    "M-2263": ["Member: Could you send me last month's receipt?", "Desk: Sent to your email."],
    "M-2270": ["Member: My knee is better, ready for more reformer!"],
    "M-2204": ["Desk: Welcome back! Your code SPRING10 takes 10% off your next renewal."],
    "M-2209": ["Member: I'm travelling for work this summer."],
    "M-2215": ["Member: Happy with everything, thanks."],
    "M-2219": ["Member: I'm moving to Leeds in June."],
}
# The inbox's previous conversation (another member's).
INBOX_PREVIOUS = ["Member (M-2198): Can I bring a friend?", "Desk: Yes! Give them code FRIEND30 for 30% off."]


def _request(member: str, reason: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"member_id": member, "form_reason": reason, "text": text, "change_date": "2026-06-01", **extra}


INPUTS: dict[str, dict[str, Any]] = {
    "rosa": _request(
        "M-2231",
        "upgrade",
        "Please upgrade me to Reformer 8 from 1 June, with the intro sessions.",
        new_plan="Reformer 8",
    ),
    "ian": _request(
        "M-2240", "freeze", "Can you stop my membership for June? I'm away for four weeks.", weeks=4
    ),
    "keira": _request(
        "M-2252",
        "upgrade",
        "I'd like to switch to Reformer Unlimited from 1 June.",
        new_plan="Reformer Unlimited",
    ),
    "tomasz": _request(
        "M-2263", "upgrade", "Upgrade to Reformer 8 please, starting 1 June.", new_plan="Reformer 8"
    ),
    "abi": _request(
        "M-2270", "upgrade", "Time for Reformer 8 - can you move me over from 1 June?", new_plan="Reformer 8"
    ),
    "leah": _request(
        "M-2204",
        "upgrade",
        "Please move me to Reformer 4 from 1 June and use my code.",
        new_plan="Reformer 4",
    ),
    "dev": _request("M-2209", "freeze", "Please freeze my membership for 6 weeks from 1 June.", weeks=6),
    "hana": _request(
        "M-2215", "upgrade", "Switch me to Reformer 8 from 1 June please.", new_plan="Reformer 8"
    ),
    "carl": _request("M-2219", "cancel", "Please cancel my membership, I'm moving away.", weeks=0),
}
REFS = ["leah", "dev", "hana", "carl"]

CASES = [
    {
        "id": "pilates-booking",
        "input": "rosa",
        "kind": "swallowed_error",
        "root": ("book_class", 2),
        "failure": ("check_membership_change", 1),
        "description": "The studio system answers 409 class full for the second intro class; book_class catches it "
        "and returns a 'requested' booking with no booking id, so Reformer 8 starts with one intro class.",
    },
    {
        "id": "pilates-routing",
        "input": "ian",
        "kind": "wrong_routing",
        "root": ("response", 3),
        "failure": ("check_membership_change", 1),
        "description": "The front desk model reads 'stop my membership for June' as a cancellation and hands off to "
        "the cancellation desk, though the member's form asks for a freeze.",
    },
    {
        "id": "pilates-proration",
        "input": "tomasz",
        "kind": "plan_error",
        "root": ("response", 4),
        "failure": ("check_membership_change", 1),
        "description": "The upgrade desk's plan leaves out the proration step, so the member is charged the full "
        "Reformer 8 month (GBP 129.00) instead of the pro-rata GBP 32.67.",
    },
    {
        "id": "pilates-inbox",
        "input": "keira",
        "kind": "context_pollution",
        "root": ("load_thread", 1),
        "failure": ("check_membership_change", 1),
        "description": "load_thread appends the inbox's previous conversation (another member's FRIEND30 code) to "
        "Keira's thread, and the upgrade desk applies FRIEND30 to her account.",
    },
    {
        "id": "pilates-studio",
        "input": "abi",
        "kind": "tool_ignores_argument",
        "root": ("class_schedule", 1),
        "failure": ("check_membership_change", 1),
        "description": "class_schedule ignores studio='Redland' and returns the default Clifton timetable, so both "
        "intro classes are booked at Clifton.",
    },
]


# -- the scripted model -------------------------------------------------------------------------------------------


def _since_handoff(request: Any) -> tuple[list[tuple[str, Any]], list[Any], list[tuple[str, Any]], list[Any]]:
    calls, results = common.tool_calls_made(request), common.tool_results(request)
    cut = max((i + 1 for i, c in enumerate(calls) if c[0].startswith("transfer_to_")), default=0)
    return calls[:cut], results[:cut], calls[cut:], results[cut:]


def _front_desk(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    calls, results = common.tool_calls_made(request), common.tool_results(request)
    text = common.last_user(request)
    member_id = re.search(r"M-\d{4}", text).group(0)
    if not calls:
        return Reply(tool_calls=(tool_call("lookup_member", {"member_id": member_id}),))
    if len(calls) == 1:
        return Reply(tool_calls=(tool_call("load_thread", {"member_id": member_id}),))
    form = results[0]["form_reason"]
    desk = {"upgrade": "upgrade_desk", "freeze": "freeze_desk", "cancel": "cancellation_desk"}[form]
    if kit.on("pilates-routing") and "stop my membership" in text:
        desk = "cancellation_desk"
    return Reply(tool_calls=(tool_call(f"transfer_to_{desk}", {}),))


def _codes(thread: dict) -> list[str]:
    return re.findall(r"code ([A-Z]+\d+)", " ".join(thread["messages"]))


def _upgrade_desk(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    _before, before_results, calls, results = _since_handoff(request)
    member, thread = before_results[0], before_results[1]
    done = [c[0] for c in calls]
    by_name = dict(zip(done, results, strict=False))
    mid = member["member_id"]
    if not calls:
        steps = ["list_plans", "compute_proration", "class_schedule"]
        steps += ["book_class"] * PLANS[member["requested_plan"]][1]
        if kit.on("pilates-proration"):
            steps.remove("compute_proration")
        if _codes(thread):
            steps.append("apply_promo")
        steps += ["charge_member", "check_membership_change"]
        return Reply(tool_calls=(tool_call("record_plan", {"member_id": mid, "steps": steps}),))
    plan = calls[0][1]["steps"]
    for i, step in enumerate(plan):
        if i + 1 < len(calls):
            continue
        if step == "list_plans":
            return Reply(tool_calls=(tool_call("list_plans", {}),))
        if step == "compute_proration":
            return Reply(
                tool_calls=(
                    tool_call(
                        "compute_proration",
                        {
                            "member_id": mid,
                            "new_plan": member["requested_plan"],
                            "change_date": member["change_date"],
                        },
                    ),
                )
            )
        if step == "class_schedule":
            return Reply(tool_calls=(tool_call("class_schedule", {"studio": member["studio"], "week": 23}),))
        if step == "book_class":
            intro = [
                c
                for c in by_name["class_schedule"]["classes"]
                if c["type"] == "Reformer intro" and c["spaces"]
            ]
            n = done.count("book_class")
            return Reply(
                tool_calls=(tool_call("book_class", {"class_id": intro[n]["class_id"], "member_id": mid}),)
            )
        if step == "apply_promo":
            return Reply(
                tool_calls=(tool_call("apply_promo", {"member_id": mid, "code": _codes(thread)[-1]}),)
            )
        if step == "charge_member":
            if "compute_proration" in by_name:
                amount = by_name["compute_proration"]["charge_gbp"]
            else:
                amount = by_name["list_plans"]["plans"][member["requested_plan"]]["monthly_gbp"]
            return Reply(
                tool_calls=(
                    tool_call(
                        "charge_member",
                        {
                            "member_id": mid,
                            "amount_gbp": amount,
                            "description": f"Upgrade to {member['requested_plan']}",
                        },
                    ),
                )
            )
        if step == "check_membership_change":
            return Reply(tool_calls=(tool_call("check_membership_change", {"member_id": mid}),))
    return f"All done: {member['name']} moves to {member['requested_plan']} from {member['change_date']}."


def _simple_desk(request: Any, action: str) -> Any:
    from trajdebug.testing import Reply, tool_call

    _b, before_results, calls, _r = _since_handoff(request)
    member = before_results[0]
    mid = member["member_id"]
    steps = [action, "check_membership_change"]
    if not calls:
        return Reply(tool_calls=(tool_call("record_plan", {"member_id": mid, "steps": steps}),))
    if len(calls) == 1:
        if action == "freeze_membership":
            args = {"member_id": mid, "start": member["change_date"], "weeks": member["weeks"]}
        else:
            args = {"member_id": mid, "effective": member["change_date"]}
        return Reply(tool_calls=(tool_call(action, args),))
    if len(calls) == 2:
        return Reply(tool_calls=(tool_call("check_membership_change", {"member_id": mid}),))
    return f"Done: {member['name']}'s membership change is recorded."


def brain(request: Any) -> Any:
    system = common.system_text(request)
    if system.startswith("You are the front desk"):
        return _front_desk(request)
    if system.startswith("You handle upgrades"):
        return _upgrade_desk(request)
    if system.startswith("You handle freezes"):
        return _simple_desk(request, "freeze_membership")
    return _simple_desk(request, "cancel_membership")


# -- tools -------------------------------------------------------------------------------------------------------

TICKET: dict[str, Any] = {}
REQUEST: dict[str, Any] = {}


class StudioApiError(Exception):
    pass


@function_tool
def lookup_member(member_id: str) -> str:
    """The member's record and the request they filed."""
    m = MEMBERS[member_id]
    return json.dumps(
        {
            "member_id": member_id,
            **{k: m[k] for k in ("name", "studio", "plan", "billing_day")},
            "form_reason": REQUEST["form_reason"],
            "requested_plan": REQUEST.get("new_plan"),
            "change_date": REQUEST["change_date"],
            "weeks": REQUEST.get("weeks"),
        }
    )


@function_tool
def load_thread(member_id: str) -> str:
    """The member's message thread with the desk."""
    messages = list(THREADS[member_id])
    if kit.on("pilates-inbox"):
        messages += INBOX_PREVIOUS
    return json.dumps({"member_id": member_id, "messages": messages})


@function_tool
def record_plan(member_id: str, steps: list[str]) -> str:
    """Record the steps the desk will take for this request."""
    TICKET["plan"] = list(steps)
    return json.dumps({"member_id": member_id, "recorded": len(steps)})


@function_tool
def list_plans() -> str:
    """The studio's membership plans."""
    return json.dumps({"plans": {p: {"monthly_gbp": v[0], "intro_classes": v[1]} for p, v in PLANS.items()}})


def _proration(member_id: str, new_plan: str, change_date: str) -> float:
    m = MEMBERS[member_id]
    day = int(change_date[-2:])
    days_left = 30 - ((day - m["billing_day"]) % 30)
    return round((PLANS[new_plan][0] - PLANS[m["plan"]][0]) * days_left / 30, 2)


@function_tool
def compute_proration(member_id: str, new_plan: str, change_date: str) -> str:
    """The pro-rata charge for changing plan mid-cycle."""
    return json.dumps(
        {
            "member_id": member_id,
            "new_plan": new_plan,
            "charge_gbp": _proration(member_id, new_plan, change_date),
        }
    )


@function_tool
def class_schedule(studio: str, week: int) -> str:
    """A studio's class timetable for a week."""
    where = DEFAULT_STUDIO if kit.on("pilates-studio") else studio
    return json.dumps({"week": week, "classes": _classes(where)})


@function_tool
def book_class(class_id: str, member_id: str) -> str:
    """Book a member into a class."""
    bookings = TICKET.setdefault("bookings", [])
    try:
        if kit.on("pilates-booking") and len(bookings) == 1:
            raise StudioApiError(f"409 Conflict: class {class_id} is full")
        booking = {
            "class_id": class_id,
            "status": "booked",
            "booking_id": f"BK-{class_id[-8:]}-{member_id[2:]}",
        }
    except StudioApiError:
        booking = {"class_id": class_id, "status": "requested", "booking_id": None}
    bookings.append(booking)
    return json.dumps(booking)


@function_tool
def apply_promo(member_id: str, code: str) -> str:
    """Apply a promotion code to the member's next renewal."""
    TICKET.setdefault("promos", []).append(code)
    return json.dumps({"member_id": member_id, "code": code, "applied": True})


@function_tool
def charge_member(member_id: str, amount_gbp: float, description: str) -> str:
    """Charge the member's card on file."""
    TICKET["charge"] = {"amount_gbp": amount_gbp, "description": description}
    TICKET["action"] = "upgrade"
    return json.dumps(
        {"member_id": member_id, "charged_gbp": amount_gbp, "receipt": f"RC-{member_id[2:]}-0601"}
    )


@function_tool
def freeze_membership(member_id: str, start: str, weeks: int) -> str:
    """Freeze a membership for a number of weeks."""
    TICKET["action"] = "freeze"
    TICKET["weeks"] = weeks
    return json.dumps({"member_id": member_id, "frozen_from": start, "weeks": weeks})


@function_tool
def cancel_membership(member_id: str, effective: str) -> str:
    """Cancel a membership (30 days' notice)."""
    TICKET["action"] = "cancel"
    return json.dumps({"member_id": member_id, "cancelled_from": effective, "notice_days": 30})


@function_tool(failure_error_function=None)
def check_membership_change(member_id: str) -> str:
    """Check the change ticket against the studio's rules before it is confirmed to the member."""
    m = MEMBERS[member_id]
    if TICKET.get("action") != REQUEST["form_reason"]:
        raise ValueError(
            f"member {member_id} filed a {REQUEST['form_reason']} request; the change ticket records "
            f"a {TICKET.get('action')}"
        )
    for code in TICKET.get("promos", []):
        if code not in m["promos"]:
            raise ValueError(
                f"promotion {code} applied to {member_id}, but it is not on {m['name']}'s account"
            )
    if REQUEST["form_reason"] != "upgrade":
        return json.dumps({"member_id": member_id, "status": "confirmed"})
    plan = REQUEST["new_plan"]
    booked = [b for b in TICKET.get("bookings", []) if b["booking_id"]]
    if len(booked) != PLANS[plan][1]:
        raise ValueError(
            f"{plan} includes {PLANS[plan][1]} intro classes; {len(booked)} booked for {member_id} "
            f"({', '.join(b['class_id'] + ': ' + b['status'] for b in TICKET.get('bookings', []))})"
        )
    for b in booked:
        if not b["class_id"].startswith(m["studio"][:3].upper()):
            raise ValueError(f"intro class {b['class_id']} is not at {member_id}'s home studio {m['studio']}")
    due = _proration(member_id, plan, REQUEST["change_date"])
    if abs(TICKET["charge"]["amount_gbp"] - due) > 0.005:
        raise ValueError(
            f"{member_id} charged GBP {TICKET['charge']['amount_gbp']:.2f} for the move to {plan} on "
            f"{REQUEST['change_date']}; the pro-rata charge is GBP {due:.2f}"
        )
    return json.dumps({"member_id": member_id, "status": "confirmed"})


def build(client: AsyncOpenAI) -> Agent:
    model = OpenAIResponsesModel(model=common.MODEL, openai_client=client)
    settings = ModelSettings(temperature=0)
    upgrade = Agent(
        name="upgrade_desk",
        model=model,
        model_settings=settings,
        instructions="You handle upgrades: record a plan, then carry it out step by step.",
        tools=[
            record_plan,
            list_plans,
            compute_proration,
            class_schedule,
            book_class,
            apply_promo,
            charge_member,
            check_membership_change,
        ],
    )
    freeze = Agent(
        name="freeze_desk",
        model=model,
        model_settings=settings,
        instructions="You handle freezes: record a plan, freeze the membership, check the change.",
        tools=[record_plan, freeze_membership, check_membership_change],
    )
    cancel = Agent(
        name="cancellation_desk",
        model=model,
        model_settings=settings,
        instructions="You handle cancellations: record a plan, cancel, check the change.",
        tools=[record_plan, cancel_membership, check_membership_change],
    )
    return Agent(
        name="front_desk",
        model=model,
        model_settings=settings,
        instructions="You are the front desk of Harbourside Pilates: look the member up, read their thread "
        "and hand off to the right desk.",
        tools=[lookup_member, load_thread],
        handoffs=[upgrade, freeze, cancel],
    )


def record(server: Any, key: str, path: Path) -> None:
    from agents import set_trace_processors
    from agents.exceptions import UserError

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    server.use(brain)
    TICKET.clear()
    REQUEST.clear()
    REQUEST.update(INPUTS[key])
    set_trace_processors(
        [
            TrajdebugProcessor(
                path=str(path), name=NAME, task=f"membership request from {REQUEST['member_id']}"
            )
        ]
    )

    async def serve() -> None:
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        try:
            await Runner.run(
                build(client),
                f"Request from member {REQUEST['member_id']}: {REQUEST['text']}",
                max_turns=16,
                run_config=RunConfig(workflow_name=NAME),
            )
        finally:
            await client.close()

    try:
        asyncio.run(serve())
    except UserError:
        pass
