"""Vaccine cold-chain dispatcher (recording SDK): turns a shipping manifest into a booked cold consignment.

Reads the manifest, looks up the product's stability, picks the handover notes of the destination, has the
model plan the route and size the cold box, checks the box's pre-conditioning log, keeps the shipment in
memory, drafts the handover, checks the hold time itself, then books the carrier (who validates again).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmarks.heldout.suite_l.kit import Case, active, openai_client

import trajdebug


AGENT = "coldchain-dispatcher"
ROUTE = "sdk"
DOMAIN = "vaccine cold-chain logistics"

PRODUCTS = {
    "Comirnaty": {"temp_c": [2, 8], "excursion_minutes": 30, "doses_per_vial": 6},
    "Spikevax": {"temp_c": [-25, -15], "excursion_minutes": 15, "doses_per_vial": 10},
    "Vaxigrip": {"temp_c": [2, 8], "excursion_minutes": 60, "doses_per_vial": 1},
    "Ervebo": {"temp_c": [-80, -60], "excursion_minutes": 10, "doses_per_vial": 1},
}
FACILITIES = {
    "Kisumu Clinic North": "KE-KSM-02",
    "Kisii Referral": "KE-KSI-04",
    "Eldoret Depot": "KE-ELD-01",
    "Nakuru County Store": "KE-NKU-03",
    "Kitale Health Centre": "KE-KTL-05",
}
NOTES = [
    {
        "facility": "KE-KSI-04",
        "site": "Kisii Referral",
        "note": "Receiving dock at rear; cold room B; sign with pharmacist on duty.",
    },
    {
        "facility": "KE-KSM-02",
        "site": "Kisumu Clinic North",
        "note": "Deliver before 16:00; cold room A; call ahead 30 min.",
    },
    {
        "facility": "KE-ELD-01",
        "site": "Eldoret Depot",
        "note": "Forklift available; freezer bay 3 for frozen goods.",
    },
    {
        "facility": "KE-NKU-03",
        "site": "Nakuru County Store",
        "note": "Gate closes 17:30; ultra-cold freezer on site.",
    },
    {
        "facility": "KE-KTL-05",
        "site": "Kitale Health Centre",
        "note": "Small dock; hand-carry boxes over 20 kg.",
    },
]
BOXES = [("CB-30", 30), ("CB-48", 48), ("CB-96", 96)]
BUFFER_H = 6


@trajdebug.step(kind="parse")
def read_manifest(line: str) -> dict[str, Any]:
    product, doses, site, temp, within = (part.strip() for part in line.split("|"))
    if active("coldchain.range_digits"):
        low, high = sorted(int(n) for n in re.findall(r"\d+", temp))
    else:
        low, high = (int(n) for n in re.findall(r"-?\d+", temp.replace("to", " ")))
    return {
        "product": product,
        "doses": int(doses.replace(",", "")),
        "site": site,
        "temp_c": [low, high],
        "deliver_within_h": int(within.rstrip("h")),
    }


@trajdebug.step(kind="retrieval")
def lookup_product(product: str) -> dict[str, Any]:
    return {"product": product, **PRODUCTS[product]}


@trajdebug.step(kind="other")
def select_notes(site: str, notes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if active("coldchain.notes_prefix"):
        return [n for n in notes if n["site"][:3] == site[:3]]
    return [n for n in notes if n["site"] == site]


@trajdebug.step(kind="parse")
def parse_route_plan(text: str) -> dict[str, Any]:
    plan = json.loads(text)
    return {"facility": plan["facility"], "legs": plan["legs"], "transit_hours": float(plan["transit_hours"])}


@trajdebug.step(kind="state")
def remember_shipment(
    manifest: dict[str, Any], plan: dict[str, Any], product: dict[str, Any]
) -> dict[str, Any]:
    vials = -(-manifest["doses"] // product["doses_per_vial"])
    doses = vials if active("coldchain.vials_as_doses") else manifest["doses"]
    shipment = {
        "product": manifest["product"],
        "doses": doses,
        "vials": vials,
        "facility": plan["facility"],
        "transit_hours": plan["transit_hours"],
        "temp_c": manifest["temp_c"],
    }
    trajdebug.current_run().state["shipment"] = shipment
    return shipment


@trajdebug.step(kind="tool")
def fetch_logger_readings(box: str, page_size: int = 48) -> dict[str, Any]:
    readings = [{"minute": 5 * i, "temp_c": round(4.6 - (0.3 if i % 4 == 0 else 0.0), 1)} for i in range(36)]
    if active("coldchain.logger_page"):
        return {"box": box, "readings": readings[:12], "complete": True}
    return {"box": box, "readings": readings[:page_size], "complete": True}


@trajdebug.step(kind="condition")
def check_precool(log: dict[str, Any]) -> dict[str, Any]:
    minutes = log["readings"][-1]["minute"] - log["readings"][0]["minute"] + 5
    if minutes < 120:
        raise ValueError(
            f"pre-conditioning log of {log['box']} covers {minutes} min; 120 min at 2-8 °C required before packing"
        )
    return {"box": log["box"], "precool_minutes": minutes, "ok": True}


@trajdebug.step(kind="state")
def update_shipment(box: str, hold_hours: int) -> dict[str, Any]:
    run = trajdebug.current_run()
    shipment = dict(run.state["shipment"]) | {"box": box, "hold_hours": hold_hours}
    run.state["shipment"] = shipment
    return shipment


@trajdebug.step(kind="condition")
def validate_cold_chain(shipment: dict[str, Any]) -> dict[str, Any]:
    need = shipment["transit_hours"] + BUFFER_H
    if shipment["hold_hours"] < need:
        raise ValueError(
            f"{shipment['box']} holds {shipment['hold_hours']} h; transit {shipment['transit_hours']:g} h plus the "
            f"{BUFFER_H} h buffer needs {need:g} h"
        )
    return {"ok": True, "margin_hours": shipment["hold_hours"] - need}


@trajdebug.step(kind="tool")
def book_carrier(manifest_doses: int, manifest_site: str, product: dict[str, Any]) -> dict[str, Any]:
    shipment = trajdebug.current_run().state["shipment"]
    if FACILITIES.get(manifest_site) != shipment["facility"]:
        raise ValueError(
            f"carrier API 422: consignee {shipment['facility']} is not the registered code of {manifest_site}"
        )
    if shipment["temp_c"] != product["temp_c"]:
        raise ValueError(
            f"carrier API 422: {product['product']} must travel at {product['temp_c'][0]}..{product['temp_c'][1]} °C; "
            f"booking declares {shipment['temp_c'][0]}..{shipment['temp_c'][1]} °C"
        )
    if shipment["doses"] != manifest_doses:
        raise ValueError(
            f"carrier API 409: booking declares {shipment['doses']} doses, packing list holds {manifest_doses}"
        )
    return {"booking": f"CC-{sum(map(ord, manifest_site)) * 37 % 90000 + 10000}", "status": "confirmed"}


PLAN_SYS = "You plan cold-chain routes to health facilities. Answer JSON with facility, legs, transit_hours."
SIZE_SYS = "You choose the passive cold box for a shipment. Answer the box code only."
HANDOVER_SYS = "You write the handover instructions for the receiving facility."


def policy(request: Any) -> str:
    messages = request.body["messages"]
    system, user = messages[0]["content"], messages[-1]["content"]
    if system == PLAN_SYS:
        brief = json.loads(user)
        facility = brief["notes"][0]["facility"] if brief["notes"] else "unknown"
        hours = {"Kisumu": 18, "Kisii": 20, "Eldoret": 14, "Nakuru": 9, "Kitale": 22}[
            brief["site"].split()[0]
        ]
        legs = [
            {"from": "Nairobi KEMSA", "to": "Kisumu hub", "mode": "air", "hours": 6},
            {"from": "Kisumu hub", "to": brief["site"], "mode": "road", "hours": hours - 6},
        ]
        if active("coldchain.road_plan"):
            legs = [{"from": "Nairobi KEMSA", "to": brief["site"], "mode": "road", "hours": hours + 26}]
        total = sum(leg["hours"] for leg in legs)
        return json.dumps({"facility": facility, "legs": legs, "transit_hours": total})
    if system == SIZE_SYS:
        hours = float(re.search(r"transit of ([\d.]+) h", user).group(1))
        return next(code for code, hold in BOXES if hold >= hours)
    if system == HANDOVER_SYS:
        data = json.loads(user)
        return (
            f"Consignment of {data['doses']} doses of {data['product']} in {data['box']} for {data['facility']}; "
            f"transit {data['transit_hours']:g} h; keep at {data['temp_c'][0]}..{data['temp_c'][1]} °C."
        )
    return "Unsupported request."


def _chat(client: Any, name: str, system: str, user: str) -> str:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        resp = client.chat.completions.create(model="gpt-4o-mini", messages=messages, temperature=0)
        text = resp.choices[0].message.content
        s.output = {"role": "assistant", "content": text, "tool_calls": []}
    return text


def _agent(client: Any, line: str) -> None:
    manifest = read_manifest(line)
    product = lookup_product(manifest["product"])
    notes = select_notes(manifest["site"], NOTES)
    brief = {
        "site": manifest["site"],
        "product": manifest["product"],
        "deliver_within_h": manifest["deliver_within_h"],
        "notes": notes,
    }
    plan = parse_route_plan(_chat(client, "plan_route", PLAN_SYS, json.dumps(brief)))
    shipment = remember_shipment(manifest, plan, product)
    box = _chat(
        client,
        "size_packaging",
        SIZE_SYS,
        f"{shipment['vials']} vials of {shipment['product']} at {shipment['temp_c'][0]}..{shipment['temp_c'][1]} °C, "
        f"transit of {shipment['transit_hours']:g} h. Boxes: " + ", ".join(f"{c} ({h} h)" for c, h in BOXES),
    ).strip()
    check_precool(fetch_logger_readings(box))
    shipment = update_shipment(box, dict(BOXES)[box])
    _chat(client, "draft_handover", HANDOVER_SYS, json.dumps(shipment))
    validate_cold_chain(shipment)
    book_carrier(manifest["doses"], manifest["site"], product)


def record(server: Any, path: Path, inp: dict[str, Any]) -> None:
    """Record one run of the agent on ``inp`` into ``path`` (a failure is recorded, not raised)."""
    client = openai_client(server)
    server.use(policy)
    try:
        with trajdebug.run(AGENT, path=str(path), task=f"dispatch: {inp['manifest']}"):
            _agent(client, inp["manifest"])
    except ValueError:
        pass


CASES = [
    Case(
        "coldchain_01",
        "coldchain.range_digits",
        "lossy_parsing",
        "read_manifest",
        '"temp_c": [15, 25]',
        {"manifest": "Spikevax | 2,400 | Eldoret Depot | -25 to -15 C | 36h"},
    ),
    Case(
        "coldchain_02",
        "coldchain.road_plan",
        "plan_error",
        "plan_route",
        '\\"mode\\": \\"road\\", \\"hours\\": 44',
        {"manifest": "Comirnaty | 1,200 | Kisumu Clinic North | 2 to 8 C | 24h"},
    ),
    Case(
        "coldchain_03",
        "coldchain.notes_prefix",
        "context_pollution",
        "select_notes",
        "KE-KSI-04",
        {"manifest": "Vaxigrip | 600 | Kisumu Clinic North | 2 to 8 C | 48h"},
    ),
    Case(
        "coldchain_04",
        "coldchain.vials_as_doses",
        "bad_memory_write",
        "remember_shipment",
        '"doses": 120,',
        {"manifest": "Comirnaty | 720 | Nakuru County Store | 2 to 8 C | 24h"},
    ),
    Case(
        "coldchain_05",
        "coldchain.logger_page",
        "truncated_result",
        "fetch_logger_readings",
        '"minute": 55, "temp_c": 4.6}]',
        {"manifest": "Vaxigrip | 300 | Kitale Health Centre | 2 to 8 C | 48h"},
    ),
]
REFS = [
    {"manifest": "Comirnaty | 900 | Eldoret Depot | 2 to 8 C | 24h"},
    {"manifest": "Spikevax | 1,000 | Nakuru County Store | -25 to -15 C | 24h"},
    {"manifest": "Vaxigrip | 450 | Kisii Referral | 2 to 8 C | 48h"},
    {"manifest": "Comirnaty | 1,800 | Kitale Health Centre | 2 to 8 C | 36h"},
]
