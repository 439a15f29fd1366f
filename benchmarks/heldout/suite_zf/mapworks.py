"""Antique map restoration work orders, recorded with the trajdebug SDK."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug
from openai import OpenAI

from .common import Case
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "map-restoration-studio", "sdk", "antique map restoration", "jsonl"
SHAPE = "rate card -> catalogue -> measure -> damage model -> parse -> per-damage treatment lookup/approve/log -> planner sub-agent -> quote -> reserve -> submit"

JOBS = {
    "homann_bohemia": {"map": "MAP-1753-B", "client_budget": 2200.0, "damage": "foxing 14 spots; tear 6 cm lower margin; grime overall"},
    "blaeu_scotia": {"map": "MAP-1654-S", "client_budget": 1900.0, "damage": "tear 9 cm centre fold; loss 3 cm corner; grime overall"},
    "speed_wales": {"map": "MAP-1610-W", "client_budget": 1500.0, "damage": "foxing 6 spots; grime overall"},
    "jansson_gallia": {"map": "MAP-1640-G", "client_budget": 1800.0, "damage": "tear 4 cm top edge; foxing 9 spots"},
    "seutter_tyrol": {"map": "MAP-1740-T", "client_budget": 2400.0, "damage": "loss 2 cm margin; tear 5 cm fold; grime overall"},
    "cary_kent": {"map": "MAP-1787-K", "client_budget": 1200.0, "damage": "grime overall; foxing 4 spots"},
}
REFS = ["speed_wales", "jansson_gallia", "seutter_tyrol", "cary_kent"]
CATALOGUE = {
    "MAP-1753-B": {"substrate": "laid paper", "history": ["1890 hinged", "1921 trimmed", "1962 lined with synthetic adhesive", "1988 reframed"]},
    "MAP-1654-S": {"substrate": "laid paper", "history": ["1801 bound in atlas", "1902 disbound"]},
    "MAP-1610-W": {"substrate": "laid paper", "history": ["1955 framed"]},
    "MAP-1640-G": {"substrate": "laid paper", "history": ["1930 hinged"]},
    "MAP-1740-T": {"substrate": "wove paper", "history": ["1899 framed", "1970 hinged"]},
    "MAP-1787-K": {"substrate": "wove paper", "history": []},
}
SIZES = {"MAP-1753-B": (58, 49), "MAP-1654-S": (54, 42), "MAP-1610-W": (51, 38), "MAP-1640-G": (55, 46),
         "MAP-1740-T": (57, 49), "MAP-1787-K": (52, 46)}
PROTOCOLS = {
    ("foxing", "paper"): {"id": "TR-PAP-01", "substrate": "paper", "hours_per_unit": 0.25, "materials": ["sodium borohydride"]},
    ("tear", "paper"): {"id": "TR-PAP-04", "substrate": "paper", "hours_per_unit": 0.5, "materials": ["wheat starch paste", "tengujo tissue"]},
    ("tear", "vellum"): {"id": "TR-VEL-04", "substrate": "vellum", "hours_per_unit": 0.6, "materials": ["gelatin", "goldbeater skin"]},
    ("loss", "paper"): {"id": "TR-PAP-07", "substrate": "paper", "hours_per_unit": 1.0, "materials": ["toned infill paper", "wheat starch paste"]},
    ("grime", "paper"): {"id": "TR-PAP-02", "substrate": "paper", "hours_per_unit": 3.0, "materials": ["smoke sponge"]},
    ("lining", "paper"): {"id": "TR-PAP-11", "substrate": "paper", "hours_per_unit": 6.0, "materials": ["acetone"]},
}
RATE_NOW, RATE_CACHED = {"card": "2026-02", "bench_eur_h": 62.0}, {"card": "2025-01", "bench_eur_h": 45.0}
STOCK = {"tengujo tissue": 0}

CASES = [
    Case("zf_mw_1", "stale_data", "homann_bohemia", "fetch_rate_card", 1, "submit_work_order", 1,
         "fetch_rate_card serves last year's cached bench rate, so the quote is priced below the current rate."),
    Case("zf_mw_2", "wrong_retrieval", "blaeu_scotia", "lookup_treatment", 1, "submit_work_order", 1,
         "lookup_treatment returns the vellum tear protocol for a laid-paper map."),
    Case("zf_mw_3", "swallowed_error", "blaeu_scotia", "reserve_materials", 1, "submit_work_order", 1,
         "reserve_materials catches the stock service's out-of-stock answer and returns a reservation without tengujo tissue."),
    Case("zf_mw_4", "truncated_result", "homann_bohemia", "fetch_catalogue_record", 1, "submit_work_order", 1,
         "fetch_catalogue_record returns only the first two history entries, so the 1962 synthetic lining is never planned for."),
    Case("zf_mw_5", "format_drift", "homann_bohemia", "assess_damage", 1, "submit_work_order", 1,
         "the damage model switches to millimetres for extents, which the parser reads as centimetres and the quote exceeds the budget."),
]


class OrderRejected(RuntimeError):
    pass


def policy(request: Any) -> str:
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Assess"):
        notes = json.loads(user)["condition_notes"]
        lines = []
        for part in notes.split("; "):
            kind, rest = part.split(" ", 1)
            if active("zf_mw_5") and rest.split()[1:2] == ["cm"]:
                n = int(rest.split()[0]) * 10
                rest = f"{n} mm {' '.join(rest.split()[2:])}"
            lines.append(f"- {kind}: {rest}")
        return "Damage found:\n" + "\n".join(lines)
    if system.startswith("Order"):
        steps = json.loads(user)["treatments"]
        order = sorted(steps, key=lambda t: ["TR-PAP-11", "TR-PAP-02", "TR-PAP-01", "TR-PAP-04", "TR-VEL-04", "TR-PAP-07"].index(t))
        return json.dumps({"sequence": order, "note": "dry cleaning before aqueous work"})
    return "ok"


def record(server: Any, key: str, path: Path) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    job = JOBS[key]

    def chat(system: str, user: str) -> str:
        r = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": user}])
        return r.choices[0].message.content

    @trajdebug.step(kind="input")
    def intake(job: dict) -> dict:
        return {"map": job["map"], "budget_eur": job["client_budget"], "notes": job["damage"]}

    @trajdebug.step(kind="tool")
    def fetch_rate_card(studio: str) -> dict:
        return dict(RATE_CACHED if active("zf_mw_1") else RATE_NOW, studio=studio)

    @trajdebug.step(kind="retrieval")
    def fetch_catalogue_record(map_id: str) -> dict:
        rec = CATALOGUE[map_id]
        history = rec["history"][:2] if active("zf_mw_4") else list(rec["history"])
        return {"map": map_id, "substrate": rec["substrate"], "history": history}

    @trajdebug.step(kind="tool")
    def measure_sheet(map_id: str) -> dict:
        w, h = SIZES[map_id]
        return {"width_cm": w, "height_cm": h}

    @trajdebug.step(kind="llm")
    def assess_damage(order: dict, record: dict) -> str:
        return chat("Assess the damage of the sheet; one line per damage.",
                    json.dumps({"map": order["map"], "condition_notes": order["notes"], "substrate": record["substrate"]}))

    @trajdebug.step(kind="parse")
    def parse_assessment(text: str, record: dict) -> list:
        out = []
        for m in re.finditer(r"- (\w+): (\d+|overall) ?(\w*)", text):
            units = 1.0 if m.group(2) == "overall" else float(m.group(2))
            out.append({"type": m.group(1), "units": units})
        if any("synthetic adhesive" in h for h in record["history"]):
            out.insert(0, {"type": "lining", "units": 1.0})
        return out

    @trajdebug.step(kind="retrieval")
    def lookup_treatment(damage: str, substrate: str) -> dict:
        material = "vellum" if active("zf_mw_2") and damage == "tear" else "paper"
        return dict(PROTOCOLS[(damage, material)])

    @trajdebug.step(kind="condition")
    def approve_treatment(protocol: dict, damage: dict) -> dict:
        return {"protocol": protocol["id"], "approved": True, "hours": protocol["hours_per_unit"] * damage["units"]}

    @trajdebug.step(kind="state")
    def log_treatment(approval: dict, protocol: dict) -> None:
        plan = trajdebug.current_run().state.setdefault("plan", [])
        plan.append({"protocol": approval["protocol"], "hours": approval["hours"], "materials": protocol["materials"]})

    @trajdebug.step(kind="tool")
    def check_materials_stock(material: str) -> dict:
        return {"material": material, "on_hand": STOCK.get(material, 5)}

    @trajdebug.step(kind="llm")
    def sequence_steps(plan: list) -> str:
        return chat("Order the treatments for the bench; answer JSON.", json.dumps({"treatments": [p["protocol"] for p in plan]}))

    @trajdebug.step(kind="agent")
    def conservation_planner(plan: list) -> dict:
        materials = sorted({m for p in plan for m in p["materials"]})
        stock = [check_materials_stock(m) for m in materials]
        order = json.loads(sequence_steps(plan))
        return {"sequence": order["sequence"], "materials": materials, "stock": stock}

    @trajdebug.step(kind="other")
    def quote_price(plan: list, rate: dict, size: dict) -> dict:
        hours = sum(p["hours"] for p in plan)
        area_fee = round(size["width_cm"] * size["height_cm"] * 0.05, 2)
        return {"hours": hours, "rate": rate["bench_eur_h"], "card": rate["card"], "total": round(hours * rate["bench_eur_h"] + area_fee, 2)}

    @trajdebug.step(kind="tool")
    def reserve_materials(materials: list) -> dict:
        held, missing = [], []
        for m in materials:
            (missing if STOCK.get(m, 5) <= 0 else held).append(m)
        if missing and not active("zf_mw_3"):
            held = held + [f"{m} (backorder)" for m in missing]
        return {"reservation": "RSV-" + job["map"][-6:], "items": held}

    @trajdebug.step(kind="tool")
    def submit_work_order(order: dict) -> dict:
        if order["quote"]["rate"] < RATE_NOW["bench_eur_h"]:
            raise OrderRejected(f"HTTP 409 {{\"error\": \"quote priced at {order['quote']['rate']:.2f} EUR/h; current bench rate "
                                f"is {RATE_NOW['bench_eur_h']:.2f} EUR/h\"}}")
        if order["quote"]["total"] > order["budget_eur"]:
            raise OrderRejected(f"HTTP 402 {{\"error\": \"quote {order['quote']['total']:.2f} EUR exceeds the client's approved "
                                f"budget {order['budget_eur']:.2f} EUR\"}}")
        cat = CATALOGUE[order["map"]]
        if any("synthetic adhesive" in h for h in cat["history"]) and "TR-PAP-11" not in order["sequence"]:
            raise OrderRejected(f"HTTP 422 {{\"error\": \"work order for {order['map']} omits solvent reversal of the lining "
                                "recorded in the catalogue\"}")
        for t in order["sequence"]:
            if t.startswith("TR-VEL") and cat["substrate"] != "vellum":
                raise OrderRejected(f"HTTP 422 {{\"error\": \"treatment {t} is for vellum; {order['map']} is {cat['substrate']}\"}}")
        reserved = " ".join(order["reservation"]["items"])
        for m in order["materials"]:
            if m not in reserved:
                raise OrderRejected(f"HTTP 409 {{\"error\": \"reservation {order['reservation']['reservation']} does not "
                                    f"cover {m}\"}}")
        return {"work_order": "WO-" + order["map"][4:], "status": "scheduled"}

    try:
        with trajdebug.run(AGENT, path=str(path), task=f"restore {job['map']}") as run:
            order = intake(job)
            rate = fetch_rate_card("north-bench")
            rec = fetch_catalogue_record(order["map"])
            size = measure_sheet(order["map"])
            damages = parse_assessment(assess_damage(order, rec), rec)
            for d in damages:
                proto = lookup_treatment(d["type"], rec["substrate"])
                log_treatment(approve_treatment(proto, d), proto)
            plan = list(run.state["plan"])
            planned = conservation_planner(plan)
            quote = quote_price(plan, rate, size)
            reservation = reserve_materials(planned["materials"])
            submit_work_order({"map": order["map"], "budget_eur": order["budget_eur"], "quote": quote,
                               "sequence": planned["sequence"], "materials": planned["materials"],
                               "reservation": reservation})
    except OrderRejected:
        pass
