"""Farrier yard visits (openai_agents): planner agent reads the yard, horse records and hoof measurements, orders shoes, books the round, hands off to a billing clerk."""

from __future__ import annotations

import json
import re
from typing import Any

from agents import Agent, Runner, function_tool
from agents.tracing import trace
from trajdebug.testing import Reply, tool_call

from .common import sdk_history, sdk_model, sdk_setup
from .kit import active

NAME = "farrier-visit-planner"
ROUTE = "openai_agents"
INPUTS = {
    "oakley": "Plan the farrier round for yard Y-OAK (Oakley Stables) on 2026-12-15",
    "fenwick": "Plan the farrier round for yard Y-FEN (Fenwick Livery) on 2026-12-16",
    "ref1": "Plan the farrier round for yard Y-ASH (Ashgrove Farm) on 2026-12-09",
    "ref2": "Plan the farrier round for yard Y-BRK (Brook End) on 2026-12-10",
    "ref3": "Plan the farrier round for yard Y-CLY (Clayhill Barns) on 2026-12-11",
    "ref4": "Plan the farrier round for yard Y-DUN (Dunmore Equestrian) on 2026-12-12",
}
YARDS = {
    "Y-OAK": [("Juniper", "reshoe", "egg-bar"), ("Bramble", "reshoe", "standard"), ("Pip", "trim", "none")],
    "Y-FEN": [("Maple", "reshoe", "standard"), ("Otto", "reshoe", "egg-bar"), ("Wren", "reshoe", "standard")],
    "Y-ASH": [("Basil", "trim", "none"), ("Clover", "reshoe", "standard")],
    "Y-BRK": [("Dancer", "reshoe", "egg-bar"), ("Echo", "trim", "none"), ("Fable", "reshoe", "standard")],
    "Y-CLY": [("Ginger", "reshoe", "standard"), ("Hazel", "reshoe", "standard")],
    "Y-DUN": [("Indigo", "reshoe", "egg-bar"), ("Jasper", "trim", "none"), ("Kestrel", "reshoe", "standard")],
}
SIZES = [(118, "0"), (126, "1"), (134, "2"), (142, "3")]
OTHER_YARD_NOTE = "Note copied from Duke (yard Y-HIL): shoes off for winter, barefoot trim only"


def _size(width_mm: float) -> str:
    return next((s for w, s in SIZES if width_mm <= w), "4")


def policy(request: Any) -> Any:
    system, user, res = sdk_history(request)
    msgs = request.body["messages"]
    if system.startswith("Billing clerk"):
        if "issue_visit_invoice" in res:
            return "Invoice issued."
        summary = json.loads(re.search(r"ROUND (\{.*\})", json.dumps([m.get("content") for m in msgs if m.get("role") in ("assistant", "user")])
                                       .replace('\\"', '"')).group(1))
        date = summary["date"]
        if active("fr_format") and date:
            y, m, d = date.split("-")
            date = f"{d}/{m}/{y}"
        return Reply(tool_calls=(tool_call("issue_visit_invoice", {"yard": summary["yard"], "visit_date": date, "lines": summary["lines"]}),))
    yard = re.search(r"yard (Y-\w+)", user).group(1)
    day = re.search(r"on (\S+)$", user).group(1)
    calls = [tc for m in msgs for tc in (m.get("tool_calls") or [])]
    done = [(tc["function"]["name"], json.loads(tc["function"]["arguments"])) for tc in calls]
    outputs = {m["tool_call_id"]: m["content"] for m in msgs if m.get("role") == "tool"}
    by_call = [(tc["function"]["name"], json.loads(tc["function"]["arguments"]), outputs.get(tc["id"])) for tc in calls]
    if not done:
        return Reply(tool_calls=(tool_call("get_yard_horses", {"yard": yard}),))
    if "record_plan" not in res:
        horses = res["get_yard_horses"]["horses"]
        work = [h["name"] for h in horses]
        if active("fr_plan"):
            work = [h["name"] for h in horses if h["service"] != "trim"][:-1] + [h["name"] for h in horses if h["service"] == "trim"]
        return Reply(tool_calls=(tool_call("record_plan", {"yard": yard, "horses": work}),))
    work = res["record_plan"]["horses"]
    from .common import _parse
    recs = {a["horse"]: _parse(o) for n, a, o in by_call if n == "get_horse_record"}
    meas = {a["horse"]: _parse(o) for n, a, o in by_call if n == "get_hoof_measurements"}
    orders = {a["horse"]: _parse(o) for n, a, o in by_call if n == "order_shoes"}
    for h in work:
        if h not in recs:
            return Reply(tool_calls=(tool_call("get_horse_record", {"horse": h}),))
    for h in work:
        if h not in meas:
            return Reply(tool_calls=(tool_call("get_hoof_measurements", {"horse": h}),))
    lines = []
    for h in work:
        rec = recs[h]
        barefoot = any("barefoot" in n for n in rec["notes"])
        service = "trim" if (rec["service"] == "trim" or barefoot) else "reshoe"
        if service == "reshoe" and h not in orders:
            width = meas[h].get("width_mm") or 0
            return Reply(tool_calls=(tool_call("order_shoes", {"horse": h, "size": _size(width), "style": rec["style"]}),))
        lines.append({"horse": h, "service": service, "shoes": orders[h]["style"] if h in orders else None,
                      "size": orders[h]["size"] if h in orders else None})
    if "schedule_visit" not in res:
        return Reply(tool_calls=(tool_call("schedule_visit", {"yard": yard, "date": day, "horses": work}),))
    if "transfer_to_billing_clerk" not in res:
        return Reply(text="ROUND " + json.dumps({"yard": yard, "date": res["schedule_visit"]["date"], "lines": lines}),
                     tool_calls=(tool_call("transfer_to_billing_clerk", {}),))
    return "Round handed to billing."


@function_tool
def get_yard_horses(yard: str) -> dict:
    """Horses on the yard's farriery contract."""
    return {"yard": yard, "horses": [{"name": n, "service": s} for n, s, _ in YARDS[yard]]}


@function_tool
def record_plan(yard: str, horses: list[str]) -> dict:
    """Save the round's work list."""
    return {"yard": yard, "horses": horses, "saved": True}


@function_tool
def get_horse_record(horse: str) -> dict:
    """A horse's farriery record: contract service, shoe style and notes."""
    for yard, rows in YARDS.items():
        for n, s, style in rows:
            if n == horse:
                notes = [f"{n}: last visit 6 weeks ago"]
                if active("fr_context") and s == "reshoe" and style == "standard":
                    notes.append(OTHER_YARD_NOTE)
                return {"horse": n, "service": s, "style": style, "notes": notes}
    return {"horse": horse, "service": "unknown", "style": "none", "notes": []}


@function_tool
def get_hoof_measurements(horse: str) -> dict:
    """Front hoof width from the last visit."""
    width = 120 + (sum(map(ord, horse)) % 20)
    return {"horse": horse, "width_mm": width}


@function_tool
def order_shoes(horse: str, size: str, style: str) -> dict:
    """Order a set of shoes from the forge supplier."""
    served = "standard" if active("fr_ignores") else style
    return {"horse": horse, "size": size, "style": served, "order": f"FS-{horse[:3].upper()}-{size}"}


@function_tool
def schedule_visit(yard: str, date: str, horses: list[str]) -> dict:
    """Book the round in the yard's calendar."""
    try:
        if active("fr_swallow"):
            raise ConnectionError("calendar API 502 Bad Gateway")
        return {"yard": yard, "date": date, "horses": horses, "status": "booked"}
    except ConnectionError:
        return {"yard": yard, "date": None, "horses": horses, "status": "booked"}


@function_tool(failure_error_function=None, strict_mode=False)
def issue_visit_invoice(yard: str, visit_date: str | None, lines: list[dict]) -> dict:
    """Issue the round's invoice (checked by the accounts API)."""
    errs = []
    contract = {n: (s, style) for n, s, style in YARDS[yard]}
    if not visit_date or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", visit_date):
        errs.append(f"visit_date {visit_date!r} is not an ISO date of a booked calendar slot")
    seen = {ln["horse"] for ln in lines}
    if seen != set(contract):
        errs.append(f"contract for {yard} covers {sorted(contract)}, invoice lines cover {sorted(seen)}")
    for ln in lines:
        s, style = contract[ln["horse"]]
        if ln["service"] != s:
            errs.append(f"{ln['horse']}: contract service {s}, line says {ln['service']}")
        elif s == "reshoe" and ln["shoes"] != style:
            errs.append(f"{ln['horse']}: prescribed {style} shoes, line shows {ln['shoes']}")
    if errs:
        raise ValueError("400 accounts API: " + "; ".join(errs))
    return {"invoice": f"INV-{yard}-{visit_date}", "lines": len(lines)}


def run_case(ctx: dict, inp: str, path: str) -> None:
    text = INPUTS[inp]
    model = sdk_model(ctx)
    clerk = Agent(name="billing_clerk", instructions="Billing clerk: invoice the farrier round described.", model=model, tools=[issue_visit_invoice])
    planner = Agent(name="round_planner", instructions="Round planner: plan the farrier round for the yard and hand off for billing.",
                    model=model, tools=[get_yard_horses, record_plan, get_horse_record, get_hoof_measurements, order_shoes, schedule_visit],
                    handoffs=[clerk])
    proc = sdk_setup(path, NAME, text)
    try:
        with trace(NAME):
            Runner.run_sync(planner, text, max_turns=30)
    except ValueError:
        pass
    except Exception as exc:
        if "400 accounts API" not in str(exc):
            raise
    proc.force_flush()


CASES = [
    ("fr_format", "format_drift", "oakley", "generation fake-model", 13, "llm", "issue_visit_invoice", 1,
     "The billing clerk model writes the visit date as 15/12/2026 instead of the ISO date the round carries."),
    ("fr_ignores", "tool_ignores_argument", "fenwick", "order_shoes", 2, "tool", "issue_visit_invoice", 1,
     "The shoe supplier ignores the egg-bar style asked for and ships standard shoes."),
    ("fr_plan", "plan_error", "fenwick", "generation fake-model", 2, "llm", "issue_visit_invoice", 1,
     "The planner model's work list leaves out one of the horses on the contract."),
    ("fr_context", "context_pollution", "oakley", "get_horse_record", 2, "tool", "issue_visit_invoice", 1,
     "Bramble's record comes back with a note copied from another yard's horse, and the planner switches Bramble to a barefoot trim."),
    ("fr_swallow", "swallowed_error", "oakley", "schedule_visit", 1, "tool", "issue_visit_invoice", 1,
     "A 502 from the yard calendar is caught and the booking reported as made with no date."),
]
REFS = ["ref1", "ref2", "ref3", "ref4"]
