"""Ski rental shop desk (OpenAI Agents SDK): per skier profile, a binding-technician sub-agent for DIN, stock checks, price, then the rental contract."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agents import Agent, function_tool
from trajdebug.testing import Reply, tool_call

from .common import Case
from .kit import active
from .oa_common import history, model, run_recorded

NAME = "ski-rental-desk"
ROUTE = "openai_agents"
DOMAIN = "ski rental shop"
SHAPE = "desk agent loops over skiers: profile -> binding technician (agent as tool: fitting, DIN) -> ski and boot stock -> price -> issue contract"

BOOKINGS = {
    "shah": "Booking BK-311 from 2026-12-20 for 5 days. Skiers: K-204 (lead), K-205. Package: performance.",
    "vogt": "Booking BK-312 from 2026-12-22 for 3 days. Skiers: K-118 (lead). Package: sport.",
    "moreau": "Booking BK-313 from 2026-12-19 for 4 days. Skiers: K-330 (lead). Package: sport.",
    "okafor": "Booking BK-314 from 2026-12-27 for 2 days. Skiers: K-412 (lead), K-413. Package: performance.",
    "lind": "Booking BK-315 from 2026-12-21 for 6 days. Skiers: K-520 (lead). Package: performance.",
    "ito": "Booking BK-316 from 2026-12-23 for 3 days. Skiers: K-618 (lead), K-619. Package: sport.",
}
PROFILES = {
    "K-204": {"name": "Ravi", "height_cm": 180, "weight_kg": 82, "ability": 3, "age": 44, "boot_mondo": 28.5, "sole_mm": 325},
    "K-205": {"name": "Mia", "height_cm": 138, "weight_kg": 32, "ability": 1, "age": 10, "boot_mondo": 22.5, "sole_mm": 265},
    "K-118": {"name": "Lena", "height_cm": 165, "weight_kg": 58, "ability": 2, "age": 31, "boot_mondo": 25.0, "sole_mm": 295},
    "K-330": {"name": "Hugo", "height_cm": 175, "weight_kg": 74, "ability": 2, "age": 52, "boot_mondo": 27.5, "sole_mm": 315},
    "K-412": {"name": "Ada", "height_cm": 170, "weight_kg": 66, "ability": 3, "age": 38, "boot_mondo": 26.0, "sole_mm": 305},
    "K-413": {"name": "Obi", "height_cm": 150, "weight_kg": 41, "ability": 2, "age": 13, "boot_mondo": 24.0, "sole_mm": 285},
    "K-520": {"name": "Saga", "height_cm": 168, "weight_kg": 61, "ability": 3, "age": 27, "boot_mondo": 25.5, "sole_mm": 300},
    "K-618": {"name": "Ken", "height_cm": 172, "weight_kg": 70, "ability": 1, "age": 45, "boot_mondo": 27.0, "sole_mm": 310},
    "K-619": {"name": "Yui", "height_cm": 142, "weight_kg": 36, "ability": 1, "age": 11, "boot_mondo": 23.0, "sole_mm": 275},
}
LAST_SEASON_BOOT = {"K-205": 21.0}
DAILY = {"performance": 38.0, "sport": 29.0}


def din_for(p: dict) -> float:
    base = 1.5 + (p["weight_kg"] - 20) * 0.08
    base += {1: -0.5, 2: 0.0, 3: 1.0}[p["ability"]]
    if p["age"] < 12 or p["age"] > 49:
        base -= 0.5
    base -= (p["sole_mm"] - 300) / 100
    return round(base * 2) / 2


CASES = [
    Case("ze_ski_1", "ski_dates", "wrong_tool_args", "shah", ("generation desk_model", 3), ("check_stock", 1),
         "The desk model calls the stock tool for the lead skier's skis with the start and end dates swapped, and the stock API refuses the hold."),
    Case("ze_ski_2", "ski_length", "tool_ignores_argument", "vogt", ("check_stock", 1), ("issue_rental_contract", 1),
         "The stock tool ignores the requested ski length and reserves its default 170 cm pair, too long for the skier's height."),
    Case("ze_ski_3", "ski_din", "subagent_wrong_entity", "shah", ("generation binding_model", 4), ("issue_rental_contract", 1),
         "The binding technician sub-agent fetches the lead skier's fitting when asked about the child, so the child's DIN setting is an adult's."),
    Case("ze_ski_4", "ski_boot", "stale_data", "shah", ("lookup_customer", 2), ("issue_rental_contract", 1),
         "The customer profile comes back with last season's boot size for the child, which the contract's fitting check refuses."),
    Case("ze_ski_5", "ski_price", "format_drift", "vogt", ("price_rental", 1), ("issue_rental_contract", 1),
         "The pricing service answers its total with a decimal comma, the desk reads 87,00 as 8700, and the contract's total check fails."),
]
REF_INPUTS = ["moreau", "okafor", "lind", "ito"]


class ContractRefused(RuntimeError):
    pass


def _booking(text: str) -> dict:
    m = re.search(r"Booking (BK-\d+) from (\S+) for (\d+) days\. Skiers: (.+)\. Package: (\w+)\.", text)
    assert m
    return {"booking": m[1], "start": m[2], "days": int(m[3]), "skiers": re.findall(r"K-\d+", m[4]), "package": m[5]}


def _end(start: str, days: int) -> str:
    y, mth, d = (int(x) for x in start.split("-"))
    d += days - 1
    if d > 31:
        d, mth = d - 31, mth % 12 + 1
        y += mth == 1
    return f"{y:04d}-{mth:02d}-{d:02d}"


def policy(request: Any) -> Any:
    role, user, done = history(request)
    if role == "binding":
        ask = json.loads(user)
        names = [d[0] for d in done]
        if "fetch_fitting" not in names:
            cid = ask["customer_id"]
            if active("ski_din") and cid != ask["lead"]:
                cid = ask["lead"]
            return Reply(tool_calls=(tool_call("fetch_fitting", {"customer_id": cid}),))
        if "compute_din" not in names:
            fit = done[-1][2]
            return Reply(tool_calls=(tool_call("compute_din", {k: fit[k] for k in ("weight_kg", "height_cm", "ability", "age", "sole_mm")}),))
        return json.dumps({"customer_id": ask["customer_id"], "din": done[-1][2]["din"]})
    b = _booking(user)
    calls = [(n, a, r) for n, a, r in done]
    per: dict[str, dict] = {c: {} for c in b["skiers"]}
    for n, a, r in calls:
        if n == "lookup_customer":
            per[a["customer_id"]]["profile"] = r
        elif n == "binding_technician":
            per[json.loads(a["input"])["customer_id"]]["din"] = (json.loads(r) if isinstance(r, str) else r)["din"]
        elif n == "check_stock":
            per[a["customer_id"]][a["item"]] = r
    end = _end(b["start"], b["days"])
    for i, c in enumerate(b["skiers"]):
        s = per[c]
        if "profile" not in s:
            return Reply(tool_calls=(tool_call("lookup_customer", {"customer_id": c}),))
        if "din" not in s:
            return Reply(tool_calls=(tool_call("binding_technician", {"input": json.dumps({"customer_id": c, "lead": b["skiers"][0]})}),))
        if "ski" not in s:
            frm, to = b["start"], end
            if active("ski_dates") and i == 0:
                frm, to = end, b["start"]
            return Reply(tool_calls=(tool_call("check_stock", {"customer_id": c, "item": "ski", "size": float(s["profile"]["height_cm"] - 12), "date_from": frm, "date_to": to}),))
        if "boot" not in s:
            return Reply(tool_calls=(tool_call("check_stock", {"customer_id": c, "item": "boot", "size": s["profile"]["boot_mondo"], "date_from": b["start"], "date_to": end}),))
    names = [n for n, _, _ in calls]
    if "price_rental" not in names:
        return Reply(tool_calls=(tool_call("price_rental", {"package": b["package"], "skiers": len(b["skiers"]), "days": b["days"]}),))
    if "issue_rental_contract" not in names:
        price = next(r for n, _, r in calls if n == "price_rental")
        total = float(str(price["total"]).replace(",", ""))
        lines = [{"customer_id": c, "din": per[c]["din"], "ski_cm": per[c]["ski"]["size"], "boot_mondo": per[c]["boot"]["size"],
                  "reserved": [per[c]["ski"]["date_from"], per[c]["ski"]["date_to"]]} for c in b["skiers"]]
        return Reply(tool_calls=(tool_call("issue_rental_contract", {"booking": b["booking"], "days": b["days"], "package": b["package"], "total_eur": total, "lines": lines}),))
    return f"Contract issued for {b['booking']}."


@function_tool
def lookup_customer(customer_id: str) -> dict:
    """The shop's customer profile (height, weight, ability, boot size)."""
    p = dict(PROFILES[customer_id])
    if active("ski_boot") and customer_id in LAST_SEASON_BOOT:
        p["boot_mondo"] = LAST_SEASON_BOOT[customer_id]
    return {"customer_id": customer_id, **p}


@function_tool
def fetch_fitting(customer_id: str) -> dict:
    """Binding workshop fitting record of a customer."""
    p = PROFILES[customer_id]
    return {"customer_id": customer_id, **{k: p[k] for k in ("weight_kg", "height_cm", "ability", "age", "sole_mm")}}


@function_tool
def compute_din(weight_kg: float, height_cm: float, ability: int, age: int, sole_mm: int) -> dict:
    """DIN release value from the ISO 11088 chart."""
    return {"din": din_for({"weight_kg": weight_kg, "height_cm": height_cm, "ability": ability, "age": age, "sole_mm": sole_mm})}


@function_tool(failure_error_function=None)
def check_stock(customer_id: str, item: str, size: float, date_from: str, date_to: str) -> dict:
    """Hold a ski or boot of a size for a date range."""
    if date_to < date_from:
        raise ContractRefused(f"stock API 422: hold period ends {date_to}, before it starts {date_from}")
    held = size
    if active("ski_length") and item == "ski":
        held = 170.0
    return {"customer_id": customer_id, "item": item, "size": held, "sku": f"{item[:1].upper()}-{int(held * 10)}", "date_from": date_from, "date_to": date_to}


@function_tool
def price_rental(package: str, skiers: int, days: int) -> dict:
    """Price a rental."""
    total = DAILY[package] * skiers * days
    if active("ski_price"):
        return {"package": package, "total": f"{total:.2f}".replace(".", ","), "currency": "EUR"}
    return {"package": package, "total": round(total, 2), "currency": "EUR"}


@function_tool(failure_error_function=None, strict_mode=False)
def issue_rental_contract(booking: str, days: int, package: str, total_eur: float, lines: list[dict]) -> str:
    """Issue the rental contract; the contract service validates every line."""
    for line in lines:
        p = PROFILES[line["customer_id"]]
        if not (p["height_cm"] - 20 <= line["ski_cm"] <= p["height_cm"] - 5):
            raise ContractRefused(f"contracts 422: ski length {line['ski_cm']:.0f} cm outside {p['height_cm'] - 20}-{p['height_cm'] - 5} cm for {line['customer_id']} ({p['height_cm']} cm)")
        if line["boot_mondo"] != p["boot_mondo"]:
            raise ContractRefused(f"contracts 409: boot {line['boot_mondo']} mondo does not match the fitting record {p['boot_mondo']} for {line['customer_id']}")
        if abs(line["din"] - din_for(p)) > 0.5:
            raise ContractRefused(f"contracts 422: DIN {line['din']} outside the chart value {din_for(p)} +/- 0.5 for {line['customer_id']} ({p['weight_kg']} kg)")
        d0, d1 = line["reserved"]
        span = int(d1[8:]) - int(d0[8:]) + 1 if d1[5:7] == d0[5:7] else days
        if span != days:
            raise ContractRefused(f"contracts 409: hold for {line['customer_id']} covers {span} day(s), the contract is for {days}")
    expected = DAILY[package] * len(lines) * days
    if abs(total_eur - expected) > 0.01:
        raise ContractRefused(f"contracts 422: total {total_eur:.2f} EUR does not match {len(lines)} x {days} days x {DAILY[package]:.2f}")
    return json.dumps({"contract": f"RC-{booking[3:]}", "status": "issued"})


def build() -> Agent:
    tech = Agent(name="binding technician", instructions="ROLE: binding\nLook up the skier's fitting and compute the binding DIN.", model=model("binding_model"), tools=[fetch_fitting, compute_din])
    return Agent(name="rental desk", instructions="ROLE: desk\nPrepare each skier's equipment, price the rental and issue the contract.", model=model("desk_model"),
                 tools=[lookup_customer, tech.as_tool("binding_technician", "Compute a skier's DIN from their fitting."), check_stock, price_rental, issue_rental_contract])


def record(main_input: str, path: Path) -> None:
    run_recorded(build(), BOOKINGS[main_input], path, NAME, "prepare a ski rental contract", max_turns=30)
