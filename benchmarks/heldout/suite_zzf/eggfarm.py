"""Organic egg farm (openai_agents): order desk -> hand-off to packing manager -> lay counts, grading, certificate, reservations -> delivery note."""
from __future__ import annotations

import json

from agents import Agent, function_tool
from trajdebug.testing import Reply, tool_call

from ._agents_rt import history, model_for, run_agent
from .kit import active

AGENT = "organic-egg-packing"
ROUTE = "openai_agents"
DOMAIN = "organic egg farm"

HOUSES = {"H1": 4200, "H2": 3900, "H3": 4500, "H4": 3600}
YESTERDAY = {"H1": 4100, "H2": 3300, "H3": 4460, "H4": 3650}
ORDERS = {
    "EO-3301": {"customer": "Greenleaf Grocers", "delivery": "2026-07-02", "lines": [["large", 300], ["medium", 420]]},
    "EO-3317": {"customer": "Hartwell Co-op", "delivery": "2026-06-24", "lines": [["medium", 380], ["large", 310], ["small", 60]]},
    "EO-3320": {"customer": "Brook Lane Deli", "delivery": "2026-06-20", "lines": [["large", 120]]},
    "EO-3324": {"customer": "Mossgate Bakery", "delivery": "2026-07-05", "lines": [["medium", 200], ["small", 90]]},
    "EO-3329": {"customer": "The Corner Larder", "delivery": "2026-06-28", "lines": [["large", 250], ["medium", 150]]},
    "EO-3335": {"customer": "Fieldfare Foods", "delivery": "2026-07-09", "lines": [["large", 90], ["small", 40]]},
}
CERTS = [{"cert": "OC-55", "valid_from": "2025-07-01", "valid_to": "2026-06-30"},
         {"cert": "OC-56", "valid_from": "2026-07-01", "valid_to": "2027-06-30"}]
TODAY = "2026-06-18"

INPUTS = {"A": "EO-3301", "B": "EO-3317", "R1": "EO-3320", "R2": "EO-3324", "R3": "EO-3329", "R4": "EO-3335"}

CASES = [
    {"id": "zzf-egg-01", "kind": "stale_data", "input": "B", "root": ("lay_count", 2),
     "failure": ("create_delivery_note", 1),
     "desc": "lay_count serves yesterday's cached collection for house H2, so the graded totals on the note disagree with the packhouse ledger."},
    {"id": "zzf-egg-02", "kind": "wrong_tool_args", "input": "A", "root": ("generation fake-model", 10),
     "failure": ("create_delivery_note", 1),
     "desc": "The packing manager's model reserves the medium line under size large, so the reservations do not cover the order lines."},
    {"id": "zzf-egg-03", "kind": "format_drift", "input": "B", "root": ("grade_eggs", 3),
     "failure": ("create_delivery_note", 1),
     "desc": "grade_eggs answers house H3 with abbreviated size keys (L/M/S), which the manager reads as zero large and medium eggs."},
    {"id": "zzf-egg-04", "kind": "plan_error", "input": "A", "root": ("generation fake-model", 3),
     "failure": ("create_delivery_note", 1),
     "desc": "The packing manager's collection plan covers houses H1-H3 only, so house H4's eggs are never graded."},
    {"id": "zzf-egg-05", "kind": "tool_ignores_argument", "input": "A", "root": ("check_certificate", 1),
     "failure": ("create_delivery_note", 1),
     "desc": "check_certificate ignores on_date and returns the certificate valid today, which lapses before the delivery date."},
]


@function_tool
def read_order(order_id: str) -> str:
    """A customer's egg order."""
    return json.dumps({"order": order_id, **ORDERS[order_id]})


@function_tool
def lay_count(house: str) -> str:
    """Today's egg collection count of a laying house."""
    if active("zzf-egg-01") and house == "H2":
        return json.dumps({"house": house, "eggs": YESTERDAY[house], "collected": "2026-06-17"})
    return json.dumps({"house": house, "eggs": HOUSES[house], "collected": TODAY})


def _grades(eggs: int) -> dict:
    dozens = eggs // 12
    large = dozens * 45 // 100
    medium = dozens * 40 // 100
    return {"large": large, "medium": medium, "small": dozens - large - medium}


@function_tool
def grade_eggs(house: str, eggs: int) -> str:
    """Candle and weigh a house's eggs; dozens per size."""
    g = _grades(eggs)
    if active("zzf-egg-03") and house == "H3":
        return json.dumps({"house": house, "dozens": {"L": g["large"], "M": g["medium"], "S": g["small"]}})
    return json.dumps({"house": house, "dozens": g})


@function_tool
def check_certificate(farm_id: str, on_date: str) -> str:
    """The organic certificate valid for the farm on a date."""
    day = TODAY if active("zzf-egg-05") else on_date
    cert = next(c for c in CERTS if c["valid_from"] <= day <= c["valid_to"])
    return json.dumps({"farm": farm_id, **cert})


@function_tool
def reserve_stock(order_id: str, size: str, dozens: int) -> str:
    """Reserve graded dozens of one size for an order."""
    return json.dumps({"reservation": f"RS-{order_id[3:]}-{size[0].upper()}", "size": size, "dozens": dozens})


def _note(order_id: str, certificate: str, graded: dict, reservations: list[dict]) -> str:
    order = ORDERS[order_id]
    cert = next(c for c in CERTS if c["cert"] == certificate)
    if not cert["valid_from"] <= order["delivery"] <= cert["valid_to"]:
        raise ValueError(f"Soil Association check failed: certificate {certificate} valid to {cert['valid_to']} "
                         f"does not cover delivery on {order['delivery']}")
    ledger = {"large": 0, "medium": 0, "small": 0}
    for eggs in HOUSES.values():
        for k, v in _grades(eggs).items():
            ledger[k] += v
    for size, n in ledger.items():
        if graded.get(size, 0) != n:
            raise ValueError(f"packhouse ledger mismatch: note declares {graded.get(size, 0)} dozen {size} graded on "
                             f"{TODAY}, ledger shows {n}")
    held = {}
    for r in reservations:
        held[r["size"]] = held.get(r["size"], 0) + r["dozens"]
    for size, n in order["lines"]:
        if held.get(size, 0) != n:
            raise ValueError(f"delivery note {order_id} rejected: line {size} x {n} dozen has {held.get(size, 0)} "
                             "dozen reserved")
    return json.dumps({"note": f"DN-{order_id[3:]}", "status": "issued"})


create_delivery_note = function_tool(_note, name_override="create_delivery_note", failure_error_function=None,
                                     strict_mode=False)


def _text(m):
    c = m.get("content")
    if isinstance(c, list):
        c = "".join(p.get("text", "") for p in c)
    return c or ""


def policy(request):
    msgs = request.body["messages"]
    system = _text(msgs[0])
    done = history(msgs)
    got = {}
    for name, args, res in done:
        got.setdefault(name, []).append((args, res))
    order_id = [_text(m) for m in msgs if m.get("role") == "user"][0].split()[-1]
    if system.startswith("Order desk"):
        if "read_order" not in got:
            return Reply(tool_calls=(tool_call("read_order", {"order_id": order_id}),))
        return Reply(tool_calls=(tool_call("transfer_to_packing_manager", {}),))
    order = got["read_order"][0][1]
    if "lay_count" not in got:
        houses = ["H1", "H2", "H3"] if active("zzf-egg-04") else list(HOUSES)
        return Reply(tool_calls=tuple(tool_call("lay_count", {"house": h}) for h in houses))
    counts = [res for _, res in got["lay_count"]]
    graded = [res for _, res in got.get("grade_eggs", [])]
    if len(graded) < len(counts):
        c = counts[len(graded)]
        return Reply(tool_calls=(tool_call("grade_eggs", {"house": c["house"], "eggs": c["eggs"]}),))
    if "check_certificate" not in got:
        return Reply(tool_calls=(tool_call("check_certificate", {"farm_id": "FARM-0412", "on_date": order["delivery"]}),))
    res = got.get("reserve_stock", [])
    if len(res) < len(order["lines"]):
        size, n = order["lines"][len(res)]
        if active("zzf-egg-02") and size == "medium":
            size = "large"
        return Reply(tool_calls=(tool_call("reserve_stock", {"order_id": order_id, "size": size, "dozens": n}),))
    if "create_delivery_note" not in got:
        totals = {"large": 0, "medium": 0, "small": 0}
        for g in graded:
            for k in totals:
                totals[k] += g["dozens"].get(k, 0)
        return Reply(tool_calls=(tool_call("create_delivery_note", {
            "order_id": order_id, "certificate": got["check_certificate"][0][1]["cert"], "graded": totals,
            "reservations": [r for _, r in res]}),))
    return f"Delivery note {got['create_delivery_note'][0][1]['note']} issued for {order_id}."


def build(server):
    model = model_for(server)
    manager = Agent(name="Packing manager", model=model,
                    tools=[lay_count, grade_eggs, check_certificate, reserve_stock, create_delivery_note],
                    instructions="Packing manager: collect, grade, certify, reserve and issue the delivery note.")
    return Agent(name="Order desk", model=model, tools=[read_order], handoffs=[manager],
                 instructions="Order desk: read the order and hand it to the packing manager.")


def record(inp: str, out, server) -> None:
    server.use(policy)
    run_agent(build(server), f"Fulfil egg order {inp}", out, AGENT, f"fulfil order {inp}", catch=(Exception,))
