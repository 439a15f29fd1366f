"""Carbon offset registry: project status, vintage balances, allocation sub-agent, serial parsing, retirement (otlp)."""

from __future__ import annotations

import json
from pathlib import Path

from openai import OpenAI

from .common import Case, Otel, brain, last_user
from .kit import active

NAME = "offset-retirement-clerk"
ROUTE = "otlp"
DOMAIN = "carbon offset registry"
SHAPE = "project status tool, vintage balance loop, vintage-picking LLM, allocation sub-agent, serial parse and range check, retirement"

PROJECTS = {"VCS-1748": {"name": "Rimba Peat Restoration", "status": "active", "vintages": {"2019": 4200, "2020": 1800, "2021": 950}},
            "GS-3310": {"name": "Kisumu Cookstoves", "status": "active", "vintages": {"2021": 3000, "2022": 2600}},
            "VCS-1902": {"name": "Andes Hydro", "status": "active", "vintages": {"2020": 800, "2021": 700}},
            "GS-2871": {"name": "Ganga Biogas", "status": "active", "vintages": {"2022": 5000}}}
INPUTS = {
    "acme": {"buyer": "Acme Freight Ltd", "account": "ACC-7781", "project": "VCS-1748", "tonnes": 2500},
    "nord": {"buyer": "Nordlys Foods AS", "account": "ACC-4410", "project": "GS-3310", "tonnes": 2400},
    "r1": {"buyer": "Pelham Events", "account": "ACC-1203", "project": "VCS-1902", "tonnes": 900},
    "r2": {"buyer": "Ostwind GmbH", "account": "ACC-5521", "project": "GS-2871", "tonnes": 1200},
    "r3": {"buyer": "Corvid Studios", "account": "ACC-3390", "project": "GS-3310", "tonnes": 400},
    "r4": {"buyer": "Halden Paper", "account": "ACC-6602", "project": "VCS-1748", "tonnes": 4000},
}
REFS = ["r1", "r2", "r3", "r4"]
ACCOUNTS = {v["account"]: v["buyer"] for v in INPUTS.values()}

CASES = [
    Case("offset_cached_balances", "or1", "stale_data", "acme", ("get_project", 1, "tool"),
         ("retire_credits", 1),
         "The project lookup serves a cached September record without the 2,300 t retired from vintage 2019 since."),
    Case("offset_kg_quantity", "or2", "unit_error", "nord", ("to_registry_units", 1, "other"),
         ("retire_credits", 1),
         "to_registry_units passes the quantity in kilograms where the registry counts whole tonnes."),
    Case("offset_serial_vintage", "or3", "lossy_parsing", "nord", ("parse_serial_block", 1, "other"),
         ("check_serial_range", 1),
         "parse_serial_block keeps the serial numbers but drops the block's vintage year, so the range check finds no vintage."),
    Case("offset_allocation_account", "or4", "subagent_wrong_entity", "nord", ("prepare_allocation", 1, "other"),
         ("retire_credits", 1),
         "The allocation sub-agent is briefed with the previous buyer's account, so serials are reserved to ACC-7781."),
    Case("offset_balance_timeout", "or5", "swallowed_error", "nord", ("get_vintage_balance", 1, "tool"),
         ("retire_credits", 1),
         "The balance service times out for vintage 2021 and the tool answers the full issued amount instead of reporting it."),
]
SYSTEM = "[agent:offset] You are a registry clerk. Answer JSON."
RETIRED = {"GS-3310/2022": 2100, "GS-3310/2021": 1000, "VCS-1748/2019": 2300}
SLOW_PARTITIONS = {"GS-3310/2021"}
_last = {"account": "ACC-7781"}


@brain("offset")
def _brain(body: dict) -> str:
    req = json.loads(last_user(body))
    if req["ask"] == "pick":
        need, pick = req["tonnes"], []
        for v in sorted(req["balances"]):
            take = min(need, req["balances"][v])
            if take > 0:
                pick.append({"vintage": v, "tonnes": take})
                need -= take
        return json.dumps({"pick": pick, "short": need})
    return json.dumps({"confirmed": True, "account": req["account"], "blocks": req["blocks"]})


def record(inp: dict, path: Path, server) -> None:
    ot = Otel("offset-registry")
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    pid = inp["project"]
    try:
        with ot.span(NAME, "AGENT", inp, **{"agent.name": NAME}) as root:
            with ot.span("get_project", "TOOL", {"project": pid}, **{"tool.name": "get_project"}) as sp:
                p = PROJECTS[pid]
                retired = {v: RETIRED.get(f"{pid}/{v}", 0) for v in p["vintages"]}
                as_of = "2026-12-05"
                if active("or1"):
                    retired, as_of = {v: 0 for v in p["vintages"]}, "2026-09-30"
                proj = ot.out(sp, {"project": pid, "name": p["name"], "status": p["status"], "as_of": as_of,
                                   "issued": p["vintages"], "retired": retired})
            balances = {}
            for v, issued in proj["issued"].items():
                with ot.span("get_vintage_balance", "TOOL", {"project": pid, "vintage": v},
                             **{"tool.name": "get_vintage_balance"}) as sp:
                    key = f"{pid}/{v}"
                    try:
                        if key in SLOW_PARTITIONS and active("or5"):
                            raise TimeoutError("balance service timed out")
                        bal = issued - proj["retired"][v]
                    except TimeoutError:
                        bal = issued
                    balances[v] = ot.out(sp, {"vintage": v, "available": bal})["available"]
            plan = json.loads(ot.llm("pick_vintages", client, SYSTEM,
                                     {"ask": "pick", "tonnes": inp["tonnes"], "balances": balances}))
            with ot.span("prepare_allocation", "CHAIN", {"buyer": inp["buyer"], "plan": plan}) as sp:
                account = inp["account"]
                if active("or4"):
                    account = _last["account"]
                brief = ot.out(sp, {"account": account, "blocks": plan["pick"]})
            with ot.span("serial_allocator", "AGENT", brief, **{"agent.name": "serial_allocator"}) as sub:
                blocks_text = []
                for b in brief["blocks"]:
                    with ot.span("reserve_serials", "TOOL", {"account": brief["account"], **b},
                                 **{"tool.name": "reserve_serials"}) as sp:
                        start = 1 + sum(x["tonnes"] for x in brief["blocks"] if x["vintage"] < b["vintage"])
                        txt = f"{pid}-{b['vintage']}-{start:06d}-{start + b['tonnes'] - 1:06d}@{brief['account']}"
                        blocks_text.append(ot.out(sp, txt))
                conf = json.loads(ot.llm("confirm_reservation", client, SYSTEM,
                                         {"ask": "confirm", "account": brief["account"], "blocks": blocks_text}))
                ot.out(sub, conf)
            with ot.span("parse_serial_block", "CHAIN", blocks_text) as sp:
                parsed = []
                for t in blocks_text:
                    serial, acct = t.split("@")
                    parts = serial.split("-")
                    rec = {"project": f"{parts[0]}-{parts[1]}", "vintage": parts[2], "first": int(parts[3]),
                           "last": int(parts[4]), "account": acct}
                    if active("or3"):
                        rec.pop("vintage")
                    parsed.append(rec)
                ot.out(sp, parsed)
            with ot.span("check_serial_range", "TOOL", parsed, **{"tool.name": "check_serial_range"}) as sp:
                for rec in parsed:
                    if "vintage" not in rec:
                        raise KeyError(f"serial block {rec['first']}-{rec['last']} of {rec['project']} has no vintage; "
                                       "registry range lookup requires project, vintage, first, last")
                ot.out(sp, {"ranges_ok": len(parsed)})
            with ot.span("to_registry_units", "CHAIN", {"tonnes": inp["tonnes"]}) as sp:
                qty = inp["tonnes"]
                if active("or2"):
                    qty = inp["tonnes"] * 1000
                units = ot.out(sp, {"quantity": qty, "unit": "tCO2e"})
            with ot.span("retire_credits", "TOOL", {"units": units, "blocks": parsed, "buyer": inp["buyer"]},
                         **{"tool.name": "retire_credits"}) as sp:
                errs = []
                if units["quantity"] != inp["tonnes"]:
                    errs.append(f"quantity {units['quantity']} tCO2e does not equal serials reserved {inp['tonnes']}")
                for rec in parsed:
                    if rec["account"] != inp["account"]:
                        errs.append(f"serials {rec['first']}-{rec['last']} held by {rec['account']}, "
                                    f"retiring account is {inp['account']}")
                    avail = PROJECTS[pid]["vintages"][rec["vintage"]] - RETIRED.get(f"{pid}/{rec['vintage']}", 0)
                    if rec["last"] - rec["first"] + 1 > avail:
                        errs.append(f"vintage {rec['vintage']} has {avail} t available, block asks "
                                    f"{rec['last'] - rec['first'] + 1} t")
                if errs:
                    raise ValueError("registry rejected retirement (409): " + "; ".join(errs))
                ot.out(root, ot.out(sp, {"retirement": f"RET-{pid}-{inp['account']}", "quantity": inp["tonnes"]}))
    except (ValueError, KeyError):
        pass
    ot.write(path)
