"""Escalator maintenance: a metro operator's monthly escalator work-planning agent (OTLP route: the
OpenTelemetry SDK with OpenInference attributes, the `openai` client instrumented by OpenInference,
exported as OTLP/JSON).

For a station group and a month the agent reads the fleet register, inspects each escalator in a
sub-agent (asset resolution, condition telemetry, service history, thorough-examination due date,
the model's diagnosis, parse), routes the work to shifts, reserves parts for chain replacements, has
the model schedule the work, parses the schedule, builds the work orders and checks the plan
against the maintenance regime before it is issued.
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
from pathlib import Path
from typing import Any

import kit
from _shared import Case, OtlpTracing, chat_text, first_json, messages, system_text, user_text
from openai import OpenAI


AGENT = "escalator-maintenance"
ROUTE = "otlp"
DOMAIN = "escalator maintenance"
EXT = "json"
SHAPE = (
    "fleet register (retried) -> per unit sub-agent (resolve asset, telemetry, service history, exam due date, model "
    "diagnosis, parse) -> route work to shifts -> reserve parts -> model schedule -> parse -> work orders -> "
    "validator span"
)

CHAIN_LIMIT_PCT = 1.5
HANDRAIL_LIMIT_PCT = 2.0
VIBRATION_LIMIT = 4.5

# unit: station, direction, asset, controller, last thorough exam, chain elongation %, handrail dev %, vibration
UNITS = {
    "ESC-31": ("Waterloo", "up", "A-3031", "GEN2", "2024-10-14", 0.7, 0.8, 2.1),
    "ESC-32": ("Waterloo", "down", "A-3032", "GEN2", "2024-12-02", 1.1, 1.2, 2.4),
    "ESC-33": ("Waterloo", "up", "A-3033", "KCE-1", "2025-01-20", 0.5, 2.6, 1.9),
    "ESC-41": ("Kings Cross", "up", "A-4041", "KCE-2", "2024-12-09", 1.9, 0.9, 2.8),
    "ESC-42": ("Kings Cross", "down", "A-4042", "GEN2", "2024-11-18", 0.8, 1.1, 3.0),
    "ESC-43": ("Kings Cross", "up", "A-4043", "KCE-1", "2025-02-03", 0.6, 0.7, 5.2),
    "ESC-22": ("Oxford Circus", "down", "A-2022", "GEN2", "2024-12-16", 0.6, 1.0, 2.2),
    "ESC-21": ("Oxford Circus", "up", "A-2031", "GEN2", "2024-12-16", 1.8, 1.3, 3.1),
    "ESC-23": ("Oxford Circus", "up", "A-2023", "KCE-1", "2025-01-13", 0.9, 0.6, 2.0),
    "ESC-51": ("Bank", "up", "A-5051", "GEN2", "2024-11-25", 2.3, 1.0, 3.6),
    "ESC-52": ("Bank", "down", "A-5052", "GEN2", "2025-01-06", 0.9, 2.4, 2.2),
    "ESC-53": ("Bank", "up", "A-5053", "KCE-1", "2024-10-28", 0.4, 0.5, 1.8),
    "ESC-61": ("Victoria", "up", "A-6061", "GEN2", "2024-12-23", 1.7, 0.9, 2.9),
    "ESC-62": ("Victoria", "down", "A-6062", "KCE-1", "2025-01-27", 0.8, 1.4, 2.0),
    "ESC-63": ("Victoria", "down", "A-6063", "GEN2", "2024-11-11", 1.0, 0.7, 4.9),
    "ESC-71": ("Canary Wharf", "up", "A-7071", "KCE-2", "2024-10-21", 1.2, 0.8, 2.3),
    "ESC-72": ("Canary Wharf", "down", "A-7072", "KCE-2", "2025-02-10", 2.1, 1.1, 2.6),
    "ESC-73": ("Canary Wharf", "up", "A-7073", "GEN2", "2024-12-30", 0.6, 2.2, 2.0),
    "ESC-81": ("London Bridge", "up", "A-8081", "GEN2", "2024-11-04", 1.6, 1.0, 2.7),
    "ESC-82": ("London Bridge", "down", "A-8082", "GEN2", "2024-10-07", 0.7, 0.6, 2.1),
    "ESC-91": ("Euston", "up", "A-9091", "KCE-1", "2025-01-02", 0.9, 0.9, 4.8),
    "ESC-92": ("Euston", "down", "A-9092", "GEN2", "2024-10-30", 1.3, 2.8, 2.5),
    "ESC-93": ("Euston", "up", "A-9093", "KCE-2", "2024-12-12", 1.6, 1.0, 2.2),
    "ESC-11": ("Green Park", "up", "A-1011", "GEN2", "2024-11-19", 0.8, 1.0, 2.0),
    "ESC-12": ("Green Park", "down", "A-1012", "GEN2", "2024-12-05", 2.4, 1.2, 3.3),
    "ESC-13": ("Green Park", "up", "A-1013", "KCE-1", "2024-10-09", 0.5, 0.4, 1.7),
}
# The asset table as the historian lists it (by asset id).
ASSET_TABLE = sorted(
    ({"asset": v[2], "unit": k, "station": v[0], "direction": v[1]} for k, v in UNITS.items()),
    key=lambda a: a["asset"],
)

REQUESTS: dict[str, dict[str, Any]] = {
    "EM-0401": {"station": "Waterloo", "month": "2025-04"},
    "EM-0402": {"station": "Kings Cross", "month": "2025-05"},
    "EM-0403": {"station": "Oxford Circus", "month": "2025-05"},
    "EM-0404": {"station": "Bank", "month": "2025-05"},
    "EM-0405": {"station": "Victoria", "month": "2025-05"},
    "EM-0406": {"station": "Canary Wharf", "month": "2025-04"},
    "EM-0407": {"station": "London Bridge", "month": "2025-04"},
    "EM-0408": {"station": "Euston", "month": "2025-04"},
    "EM-0409": {"station": "Green Park", "month": "2025-04"},
}

CASES = [
    Case(
        "zzi-esc-1",
        "esc.due_month",
        "EM-0401",
        "off_by_one",
        ("compute_due", 1, "other"),
        ("validate_plan", 1),
        "The due-date step counts seven months from the last thorough examination instead of six, so ESC-31 "
        "(examined 2024-10-14, due by 2025-04-30) is left out of the April plan.",
    ),
    Case(
        "zzi-esc-2",
        "esc.kce2_fraction",
        "EM-0402",
        "unit_error",
        ("condition_telemetry", 1, "tool"),
        ("validate_plan", 1),
        "ESC-41's KCE-2 controller feed reports chain elongation as a fraction (0.019) in the percent field, "
        "so the diagnosis reads 0.019% and no chain replacement is planned for a 1.9% chain.",
    ),
    Case(
        "zzi-esc-3",
        "esc.asset_by_station",
        "EM-0403",
        "subagent_wrong_entity",
        ("resolve_asset", 2, "other"),
        ("validate_plan", 1),
        "The inspection sub-agent for ESC-21 resolves its historian asset by station name and gets ESC-22's "
        "(the down escalator), so ESC-21's 1.8% chain is inspected as a healthy 0.6%.",
    ),
    Case(
        "zzi-esc-4",
        "esc.erp_timeout",
        "EM-0404",
        "swallowed_error",
        ("reserve_part", 1, "tool"),
        ("validate_plan", 1),
        "The parts tool swallows the ERP's timeout when reserving ESC-51's step chain and returns a pending "
        "line with no reservation, and the chain replacement is scheduled without a part.",
    ),
    Case(
        "zzi-esc-5",
        "esc.route_priority",
        "EM-0405",
        "wrong_routing",
        ("route_work", 1, "other"),
        ("validate_plan", 1),
        "The shift router sends only priority-1 work to night possessions, so ESC-61's priority-2 chain "
        "replacement is routed to the day shift with the station open.",
    ),
]
REFERENCE_INPUTS = ["EM-0406", "EM-0407", "EM-0408", "EM-0409"]


class PlanRejected(ValueError):
    """The work plan breaks the maintenance regime."""


def _month_end(month: str) -> str:
    y, m = map(int, month.split("-"))
    return f"{month}-{calendar.monthrange(y, m)[1]:02d}"


# -- tools (each a span) ------------------------------------------------------------------------------------


_register_calls = {"n": 0, "flaky": False}


def fleet_register(station: str) -> dict:
    _register_calls["n"] += 1
    if _register_calls["flaky"] and _register_calls["n"] == 1:
        raise ConnectionError("Maximo REST: 504 Gateway Time-out")
    units = [
        {"unit": k, "station": v[0], "direction": v[1], "controller": v[3]}
        for k, v in UNITS.items()
        if v[0] == station
    ]
    return {"station": station, "units": units}


def condition_telemetry(asset: str) -> dict:
    unit = next(a["unit"] for a in ASSET_TABLE if a["asset"] == asset)
    _st, _dir, _a, controller, _last, chain, handrail, vib = UNITS[unit]
    reading = chain / 100 if kit.on("esc.kce2_fraction") and controller == "KCE-2" else chain
    return {
        "asset": asset,
        "controller": controller,
        "chain_elongation_pct": reading,
        "handrail_speed_dev_pct": handrail,
        "vibration_mm_s": vib,
        "reading_at": "2025-03-28T02:10:00Z",
    }


def service_history(unit: str) -> dict:
    return {
        "unit": unit,
        "last_thorough_exam": UNITS[unit][4],
        "interval_months": 6,
        "open_defects": ["comb plate tooth missing"] if unit in ("ESC-33", "ESC-92") else [],
    }


def _erp_reserve(part: str, unit: str) -> str:
    if kit.on("esc.erp_timeout") and unit == "ESC-51":
        raise TimeoutError("SAP PM: BAPI_RESERVATION_CREATE1 timed out after 30 s")
    return f"RSV-{unit[-2:]}{part[-3:]}"


def reserve_part(part: str, unit: str) -> dict:
    try:
        reservation = _erp_reserve(part, unit)
        status = "reserved"
    except TimeoutError:
        reservation, status = None, "pending"
    return {"part": part, "unit": unit, "reservation": reservation, "status": status}


# -- the agent --------------------------------------------------------------------------------------------------


SYS_DIAGNOSE = (
    "You are an escalator maintenance engineer. From the unit's telemetry, history and exam due date decide the "
    "work for this month. Limits: chain elongation 1.5%, handrail speed deviation 2%, vibration 4.5 mm/s. "
    'Answer JSON: {"unit", "condition" (ok|monitor|repair|replace_chain), "work": [tasks], "priority" (1-3)}.'
)
SYS_SCHEDULE = (
    "Schedule this month's escalator work orders. Night-possession work goes on weekend nights, day-shift work on "
    "weekdays; never take both directions at one station out on the same date. Answer JSON: "
    '{"schedule": [{"unit", "date", "queue"}]}.'
)


class Planner:
    def __init__(self, tracing: OtlpTracing, client: Any, key: str) -> None:
        self.t, self.client, self.key = tracing, client, key
        self.req = REQUESTS[key]

    def tool(self, name: str, args: dict, fn) -> Any:
        with self.t.span(name, "TOOL", input=args) as s:
            s.output = fn(**args)
        return s.output

    def chain(self, name: str, args: dict, fn) -> Any:
        with self.t.span(name, "CHAIN", input=args) as s:
            s.output = fn(**args)
        return s.output

    def inspect_unit(self, unit: dict) -> dict:
        with self.t.span("inspect_unit", "AGENT", input=unit) as s:
            asset = self.chain(
                "resolve_asset", {"unit": unit["unit"], "station": unit["station"]}, resolve_asset
            )
            tele = self.tool("condition_telemetry", {"asset": asset["asset"]}, condition_telemetry)
            hist = self.tool("service_history", {"unit": unit["unit"]}, service_history)
            due = self.chain(
                "compute_due",
                {
                    "last_exam": hist["last_thorough_exam"],
                    "months": hist["interval_months"],
                    "plan_month": self.req["month"],
                },
                compute_due,
            )
            raw = chat_text(
                self.client,
                SYS_DIAGNOSE,
                json.dumps({"unit": unit["unit"], "telemetry": tele, "history": hist, "exam": due}),
            )
            diag = self.chain("parse_diagnosis", {"raw": raw}, parse_diagnosis)
            s.output = {**diag, "station": unit["station"], "direction": unit["direction"]}
        return s.output


def resolve_asset(unit: str, station: str) -> dict:
    if kit.on("esc.asset_by_station"):
        hit = next(a for a in ASSET_TABLE if a["station"] == station)
    else:
        hit = next(a for a in ASSET_TABLE if a["unit"] == unit)
    return {"unit": unit, "asset": hit["asset"]}


def compute_due(last_exam: str, months: int, plan_month: str) -> dict:
    last = dt.date.fromisoformat(last_exam)
    span = months + 1 if kit.on("esc.due_month") else months
    m = last.month - 1 + span
    y, mo = last.year + m // 12, m % 12 + 1
    due = f"{y}-{mo:02d}-{calendar.monthrange(y, mo)[1]:02d}"
    return {"last_exam": last_exam, "due_by": due, "due_this_month": due <= _month_end(plan_month)}


def parse_diagnosis(raw: str) -> dict:
    d = first_json(raw)
    return {
        "unit": d["unit"],
        "condition": d["condition"],
        "work": list(d["work"]),
        "priority": int(d["priority"]),
    }


def route_work(diagnoses: list[dict]) -> list[dict]:
    orders = []
    for d in diagnoses:
        if not d["work"]:
            continue
        if kit.on("esc.route_priority"):
            night = d["priority"] == 1
        else:
            night = "replace step chain" in d["work"] or d["priority"] == 1
        orders.append(
            {
                "unit": d["unit"],
                "station": d["station"],
                "direction": d["direction"],
                "work": d["work"],
                "priority": d["priority"],
                "queue": "night possession" if night else "day shift",
            }
        )
    return orders


def parse_schedule(raw: str) -> list[dict]:
    return [{"unit": s["unit"], "date": s["date"], "queue": s["queue"]} for s in first_json(raw)["schedule"]]


def build_work_orders(orders: list[dict], schedule: list[dict], parts: list[dict], month: str) -> list[dict]:
    when = {s["unit"]: s for s in schedule}
    reserved = {p["unit"]: p for p in parts}
    out = []
    for i, o in enumerate(orders, start=1):
        p = reserved.get(o["unit"])
        out.append(
            {
                "wo": f"WO-{month.replace('-', '')}-{i:03d}",
                **o,
                "date": when[o["unit"]]["date"],
                "part_reservation": p["reservation"] if p else None,
            }
        )
    return out


def validate_plan(station: str, month: str, work_orders: list[dict]) -> dict:
    by_unit = {w["unit"]: w for w in work_orders}
    for unit, (st, _d, _a, _c, last, chain, _h, _v) in UNITS.items():
        if st != station:
            continue
        last_d = dt.date.fromisoformat(last)
        m = last_d.month - 1 + 6
        y, mo = last_d.year + m // 12, m % 12 + 1
        due = f"{y}-{mo:02d}-{calendar.monthrange(y, mo)[1]:02d}"
        w = by_unit.get(unit)
        if due <= _month_end(month) and not (w and "thorough exam" in w["work"]):
            raise PlanRejected(
                f"{unit} thorough examination due {due} (last {last}); no exam work order in the {month} plan"
            )
        if chain > CHAIN_LIMIT_PCT:
            if not (w and "replace step chain" in w["work"]):
                raise PlanRejected(
                    f"{unit} step chain elongation {chain}% exceeds the {CHAIN_LIMIT_PCT}% limit; "
                    f"no chain replacement planned"
                )
            if w["queue"] != "night possession":
                raise PlanRejected(
                    f"{w['wo']} chain replacement on {unit} routed to the {w['queue']}; it needs a "
                    f"night possession"
                )
            if not w["part_reservation"]:
                raise PlanRejected(f"{w['wo']} chain replacement on {unit} has no step chain reservation")
    seen: dict[tuple[str, str], str] = {}
    for w in work_orders:
        key = (w["station"], w["date"])
        if key in seen and UNITS[seen[key]][1] != w["direction"]:
            raise PlanRejected(f"{seen[key]} and {w['unit']} at {w['station']} are both out on {w['date']}")
        seen[key] = w["unit"]
    return {"ok": True, "orders": len(work_orders)}


# -- the fake model ------------------------------------------------------------------------------------------------


def brain(key: str):
    def policy(request):
        msgs = messages(request)
        system, user = system_text(msgs), user_text(msgs)
        if system == SYS_DIAGNOSE:
            d = first_json(user)
            t = d["telemetry"]
            work, condition, priority = [], "ok", 3
            if t["chain_elongation_pct"] > CHAIN_LIMIT_PCT:
                work.append("replace step chain")
                condition, priority = "replace_chain", 1 if t["chain_elongation_pct"] > 2.0 else 2
            if t["handrail_speed_dev_pct"] > HANDRAIL_LIMIT_PCT:
                work.append("adjust handrail drive")
                condition = condition if condition != "ok" else "repair"
                priority = min(priority, 2)
            if t["vibration_mm_s"] > VIBRATION_LIMIT:
                work.append("inspect step rollers and drive bearings")
                condition = condition if condition != "ok" else "repair"
                priority = min(priority, 2)
            if d["history"]["open_defects"]:
                work.append("replace comb plate")
            if d["exam"]["due_this_month"]:
                work.append("thorough exam")
            if condition == "ok" and work:
                condition = "monitor"
            return json.dumps({"unit": d["unit"], "condition": condition, "work": work, "priority": priority})
        if system == SYS_SCHEDULE:
            d = first_json(user)
            y, m = map(int, d["month"].split("-"))
            days = [dt.date(y, m, k) for k in range(1, calendar.monthrange(y, m)[1] + 1)]
            taken: dict[tuple[str, dt.date], str] = {}
            out = []
            for o in sorted(d["orders"], key=lambda o: (o["priority"], o["unit"])):
                want_weekend = o["queue"] == "night possession"
                for day in days:
                    if (day.weekday() >= 5) != want_weekend:
                        continue
                    if (o["station"], day) in taken:
                        continue
                    taken[(o["station"], day)] = o["unit"]
                    out.append({"unit": o["unit"], "date": day.isoformat(), "queue": o["queue"]})
                    break
            return json.dumps({"schedule": out})
        raise ValueError(f"unexpected prompt: {system[:60]}")

    return policy


# -- one run ---------------------------------------------------------------------------------------------------------

_tracing: OtlpTracing | None = None


def record(key: str, out: Path, server: Any) -> None:
    """Run the planner once on request `key`, writing its trace to the OTLP/JSON file `out`."""
    global _tracing
    if _tracing is None:
        _tracing = OtlpTracing("escalator-work-planner")
    server.use(brain(key))
    _register_calls.update(n=0, flaky=key in ("EM-0402", "EM-0406", "EM-0409"))
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    p = Planner(_tracing, client, key)
    req = p.req
    try:
        with (
            _tracing.traced(out),
            _tracing.span(
                AGENT,
                "AGENT",
                input=f"{req['month']} escalator work plan for {req['station']}",
                **{"agent.name": AGENT},
            ) as root,
        ):
            for attempt in (1, 2, 3):
                try:
                    fleet = p.tool("fleet_register", {"station": req["station"]}, fleet_register)
                    break
                except ConnectionError:
                    if attempt == 3:
                        raise
            diagnoses = [p.inspect_unit(u) for u in fleet["units"]]
            orders = p.chain("route_work", {"diagnoses": diagnoses}, route_work)
            parts = []
            for o in orders:
                if "replace step chain" in o["work"]:
                    parts.append(
                        p.tool("reserve_part", {"part": "step chain SC-135", "unit": o["unit"]}, reserve_part)
                    )
            raw = chat_text(client, SYS_SCHEDULE, json.dumps({"month": req["month"], "orders": orders}))
            schedule = p.chain("parse_schedule", {"raw": raw}, parse_schedule)
            work_orders = p.chain(
                "build_work_orders",
                {"orders": orders, "schedule": schedule, "parts": parts, "month": req["month"]},
                build_work_orders,
            )
            p.chain(
                "validate_plan",
                {"station": req["station"], "month": req["month"], "work_orders": work_orders},
                validate_plan,
            )
            root.output = {"work_orders": len(work_orders)}
    except PlanRejected:
        pass
