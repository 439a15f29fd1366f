"""Wheelchair repair service: triages a repair request, hands off to a technician who books the visit (Agents SDK)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agents import Agent, function_tool

from . import kit
from .common import Case, agents_model, run_agents, tool_results

AGENT, ROUTE, DOMAIN = "wheelchair_repair", "openai_agents", "wheelchair repair service"
RUN_NAME, MODEL = "wheelchair-repair-desk", "repair-desk-6"
SHAPE = "triage agent: client, chair, case notes -> hand-off to manual or powerchair technician: parts per issue, funding -> book repair visit"

CLIENTS = {
    "CL-3301": {"name": "M. Okafor", "address": "7 Weavers Row, Todmorden", "cap_gbp": 400.0},
    "CL-4410": {"name": "J. Lindqvist", "address": "22 Canal Street, Sowerby Bridge", "cap_gbp": 900.0},
    "CL-2207": {"name": "A. Haddad", "address": "3 Birch Close, Halifax", "cap_gbp": 350.0},
    "CL-5120": {"name": "R. Pearce", "address": "18 Moor Lane, Hebden Bridge", "cap_gbp": 700.0},
    "CL-1893": {"name": "S. Novak", "address": "41 Station Road, Elland", "cap_gbp": 500.0},
    "CL-6034": {"name": "K. Mensah", "address": "9 Hollins Way, Brighouse", "cap_gbp": 1200.0},
}
CHAIRS = {"KU-88213-K": ("Kuschall K-Series", "manual"), "QK-50077-Q": ("Quickie Q500 M", "power"),
          "RG-11902-A": ("RGK Argon", "manual"), "PR-30418-E": ("Permobil M3", "power"),
          "SR-77120-V": ("Sunrise Zippie", "manual"), "IN-60233-T": ("Invacare TDX SP2", "power")}
PARTS = {"push-rim": ("PR-1104", 38.50), "brakes": ("BK-2051", 42.90), "castor": ("CS-0730", 24.75),
         "joystick": ("JS-4402", 186.00), "battery": ("BT-2201", 214.00), "motor brushes": ("MB-0915", 42.50),
         "armrest pad": ("AP-0218", 19.90)}
LABOUR_GBP = 65.00
TECHS = {"manual": "T-7", "power": "T-3"}

INPUTS = {
    "okafor": {"client": "CL-3301", "serial": "KU-88213-K", "issues": ["push-rim", "brakes"]},
    "lindqvist": {"client": "CL-4410", "serial": "QK-50077-Q", "issues": ["joystick", "motor brushes"]},
    "haddad": {"client": "CL-2207", "serial": "RG-11902-A", "issues": ["castor", "armrest pad"]},
    "pearce": {"client": "CL-5120", "serial": "PR-30418-E", "issues": ["battery"]},
    "novak": {"client": "CL-1893", "serial": "SR-77120-V", "issues": ["brakes", "castor"]},
    "mensah": {"client": "CL-6034", "serial": "IN-60233-T", "issues": ["joystick", "battery", "armrest pad"]},
}
REFS = ["haddad", "pearce", "novak", "mensah"]

CASES = [
    Case("zx_wheel_1", "wheel.handoff", "wrong_routing", "okafor", ("generation repair-desk-6", 4, "llm"),
         ("book_repair_visit", 1), "The triage model hands a manual chair to the powerchair technician."),
    Case("zx_wheel_2", "wheel.part_id", "hallucinated_value", "lindqvist", ("generation repair-desk-6", 8, "llm"),
         ("book_repair_visit", 1), "The technician model books part JS-4420, a number no stock answer gave."),
    Case("zx_wheel_3", "wheel.funder_timeout", "swallowed_error", "okafor", ("check_funding", 1, "tool"),
         ("book_repair_visit", 1), "check_funding swallows the funder's timeout and answers an approved amount of zero."),
    Case("zx_wheel_4", "wheel.notes_pad", "context_pollution", "lindqvist", ("get_case_notes", 1, "tool"),
         ("book_repair_visit", 1), "get_case_notes returns the shared notes pad with another client's visit address at the end."),
    Case("zx_wheel_5", "wheel.price_units", "unit_error", "lindqvist", ("check_parts_stock", 2, "tool"),
         ("book_repair_visit", 1), "check_parts_stock gives the motor brushes price in pence under price_gbp."),
]


@function_tool
def lookup_client(client: str) -> str:
    """The client's file."""
    return json.dumps({"client": client, **{k: v for k, v in CLIENTS[client].items() if k != "cap_gbp"}})


@function_tool
def lookup_chair(serial: str) -> str:
    """The chair's model and drive type."""
    model, kind = CHAIRS[serial]
    return json.dumps({"serial": serial, "model": model, "drive": kind})


@function_tool
def get_case_notes(client: str) -> str:
    """Case notes for a client."""
    notes = [f"{client}: {CLIENTS[client]['name']} reports the issue by phone. Visit at {CLIENTS[client]['address']}."]
    if kit.active("wheel.notes_pad"):
        notes.append("Earlier call: chair collected last month. Visit at 14 Mill Lane, Hebden Bridge.")
    return "\n".join(notes)


@function_tool
def check_parts_stock(issue: str, model: str) -> str:
    """The part for an issue on a chair model, with its price."""
    part, price = PARTS[issue]
    if kit.active("wheel.price_units") and issue == "motor brushes":
        price = round(price * 100)
    return json.dumps({"issue": issue, "part": part, "model": model, "in_stock": 4, "price_gbp": price})


@function_tool
def check_funding(client: str, amount_gbp: float) -> str:
    """The funder's approval for a repair amount."""
    try:
        if kit.active("wheel.funder_timeout"):
            raise TimeoutError("funder gateway timed out")
        approved = min(amount_gbp, CLIENTS[client]["cap_gbp"])
    except TimeoutError:
        approved = 0.0
    return json.dumps({"client": client, "scheme": "NHS Wheelchair Service", "approved_gbp": approved})


def _book(client: str, serial: str, technician: str, address: str, parts: list[str], total_gbp: float, approved_gbp: float) -> str:
    model, drive = CHAIRS[serial]
    if technician != TECHS[drive]:
        raise ValueError(f"HTTP 422: technician {technician} is not certified for {drive} chair {model} ({serial})")
    known = {p for p, _ in PARTS.values()}
    for p in parts:
        if p not in known:
            raise ValueError(f"HTTP 404: part {p} not in the parts catalogue for {model}")
    if address != CLIENTS[client]["address"]:
        raise ValueError(f"HTTP 422: visit address '{address}' is not on file for client {client}")
    if total_gbp > approved_gbp + 0.005:
        raise ValueError(f"HTTP 402: repair total {total_gbp:.2f} GBP exceeds approved funding {approved_gbp:.2f} GBP for {client}")
    return json.dumps({"visit": f"RV-{client[3:]}-{serial[:2]}", "status": "booked"})


book_repair_visit = function_tool(_book, name_override="book_repair_visit", failure_error_function=None,
                                  description_override="Book the technician's home repair visit.")


def policy(messages: list[dict]):
    from trajdebug.testing import Reply, tool_call

    system = messages[0]["content"]
    user = next(m["content"] for m in messages if m["role"] == "user")
    req = json.loads(user.split("REQUEST:", 1)[1])
    res = tool_results(messages)
    got: dict = {}
    for n, c in res:
        got.setdefault(n, []).append(c)
    if system.startswith("You triage"):
        for name, args in (("lookup_client", {"client": req["client"]}), ("lookup_chair", {"serial": req["serial"]}),
                           ("get_case_notes", {"client": req["client"]})):
            if name not in got:
                return Reply(tool_calls=(tool_call(name, args),))
        drive = json.loads(got["lookup_chair"][0])["drive"]
        if kit.active("wheel.handoff"):
            drive = "power"
        return Reply(tool_calls=(tool_call("transfer_to_powerchair_technician" if drive == "power"
                                           else "transfer_to_manual_chair_technician", {}),))
    tech = re.search(r"\((T-\d)\)", system).group(1)
    model = json.loads(got["lookup_chair"][0])["model"]
    stock = [json.loads(c) for c in got.get("check_parts_stock", [])]
    if len(stock) < len(req["issues"]):
        return Reply(tool_calls=(tool_call("check_parts_stock", {"issue": req["issues"][len(stock)], "model": model}),))
    total = round(sum(s["price_gbp"] for s in stock) + LABOUR_GBP, 2)
    if "check_funding" not in got:
        return Reply(tool_calls=(tool_call("check_funding", {"client": req["client"], "amount_gbp": total}),))
    if "book_repair_visit" not in got:
        address = re.findall(r"Visit at ([^.]+)\.", got["get_case_notes"][0])[-1]
        parts = [s["part"] for s in stock]
        if kit.active("wheel.part_id"):
            parts[0] = parts[0][:-2] + parts[0][-1] + parts[0][-2]
        return Reply(tool_calls=(tool_call("book_repair_visit", {
            "client": req["client"], "serial": req["serial"], "technician": tech, "address": address, "parts": parts,
            "total_gbp": total, "approved_gbp": json.loads(got["check_funding"][0])["approved_gbp"]}),))
    return "Repair visit booked."


def build():
    manual = Agent(name="Manual Chair Technician", model=agents_model(MODEL),
                   instructions="You are the Manual Chair Technician (T-7). Price the parts, get funding, book the visit.",
                   tools=[check_parts_stock, check_funding, book_repair_visit])
    power = Agent(name="Powerchair Technician", model=agents_model(MODEL),
                  instructions="You are the Powerchair Technician (T-3). Price the parts, get funding, book the visit.",
                  tools=[check_parts_stock, check_funding, book_repair_visit])
    return Agent(name="Repair Triage", model=agents_model(MODEL), handoffs=[manual, power],
                 instructions="You triage wheelchair repair requests and hand them to the right technician.",
                 tools=[lookup_client, lookup_chair, get_case_notes])


def record(key: str, path: Path) -> None:
    inp = INPUTS[key]
    run_agents(build(), f"Repair request for {inp['client']}, chair {inp['serial']}: {', '.join(inp['issues'])}. "
                        f"REQUEST: {json.dumps(inp)}", path, RUN_NAME, f"repair {inp['serial']} for {inp['client']}")
