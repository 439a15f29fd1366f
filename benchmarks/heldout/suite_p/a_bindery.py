"""Bindery job planner (sdk route): a hand bindery quotes and schedules an edition binding."""

from __future__ import annotations

import json
import re

from kit import Case, active

import trajdebug


AGENT = "bindery-job-planner"
ROUTE = "sdk"
DOMAIN = "edition bookbinding (hand bindery)"
SHAPE = "job ticket -> client archive + cover spec -> manuscript meta -> scripted model plans signatures -> per-material stock/price/state loop (x5) -> scripted model drafts quote -> folding loop -> gather state -> order materials -> press slot -> confirmation"

CLIENTS = {
    "Larkspur Press": "2024 edition: quarter binding; cloth: Buckram Navy 440; endpapers: Cockerell marble; foil die D-2040 on spine; head bands red/gold",
    "Old Mill Poetry": "2025 chapbooks: case binding; cloth: Arbelave Sand 12; endpapers: plain cream; foil die D-1185 on front board",
    "Weald Atlas Co": "2023 atlas: full cloth; cloth: Wibalin Forest 532; endpapers: printed map; foil die D-3302 on spine",
}
JOBS = {
    "BJ-40": {"job": "BJ-40", "client": "Larkspur Press", "title": "Salt Marsh Notebooks", "copies": 120, "pages": 192, "paper": "170gsm cotton"},
    "BJ-41": {"job": "BJ-41", "client": "Old Mill Poetry", "title": "Kestrel Hours", "copies": 300, "pages": 64, "paper": "120gsm offset"},
    "BJ-42": {"job": "BJ-42", "client": "Weald Atlas Co", "title": "Chalk Downs Atlas", "copies": 80, "pages": 96, "paper": "150gsm silk"},
    "BJ-43": {"job": "BJ-43", "client": "Old Mill Poetry", "title": "Winter Lamps", "copies": 250, "pages": 48, "paper": "120gsm offset"},
    "BJ-44": {"job": "BJ-44", "client": "Larkspur Press", "title": "Hedge Letters", "copies": 150, "pages": 128, "paper": "150gsm silk"},
    "BJ-45": {"job": "BJ-45", "client": "Weald Atlas Co", "title": "River Stour Atlas", "copies": 60, "pages": 80, "paper": "170gsm cotton"},
}
INPUTS = JOBS
REFS = ["BJ-42", "BJ-43", "BJ-44", "BJ-45"]
CASES = [
    Case("bind.archive", "truncated_result", "client_archive", "Buckram Na...", "BJ-40"),
    Case("bind.prices", "stale_data", "price_lookup", "PL-2025-Q3", "BJ-41"),
    Case("bind.stock", "tool_ignores_argument", "supplier_stock", "P-120-OFF", "BJ-40"),
    Case("bind.die", "hallucinated_value", "draft_quote", "D-7731", "BJ-40"),
    Case("bind.plan", "plan_error", "plan_signatures", "16pp", "BJ-40"),
]
SKUS = {"120gsm offset": "P-120-OFF", "150gsm silk": "P-150-SLK", "170gsm cotton": "P-170-COT"}
CLOTHS = {"Buckram Navy 440", "Arbelave Sand 12", "Wibalin Forest 532"}
DIES = {"D-2040", "D-1185", "D-3302"}


@trajdebug.step(kind="input")
def read_job(ticket: dict) -> dict:
    return dict(ticket)


@trajdebug.step(kind="tool")
def client_archive(client: str) -> dict:
    notes = CLIENTS[client]
    if active("bind.archive"):
        notes = notes[:48] + "..."  # the archive API's preview length
    return {"client": client, "notes": notes}


@trajdebug.step(kind="parse")
def read_cover_spec(notes: str) -> dict:
    cloth = re.search(r"cloth: ([^;]+)", notes)
    die = re.search(r"foil die (D-\d+)", notes)
    return {"cloth": cloth.group(1) if cloth else "Buckram Black 400", "die": die.group(1) if die else None}


@trajdebug.step(kind="tool")
def manuscript_meta(job: str, pages: int, paper: str) -> dict:
    return {"job": job, "pages": pages, "paper": paper, "gsm": int(paper[:3])}


@trajdebug.step(kind="llm")
def plan_signatures(messages: list) -> dict:
    meta = json.loads(messages[-1]["content"])
    per = 8 if meta["gsm"] >= 150 else 16
    if active("bind.plan"):
        per = 16
    n = -(-meta["pages"] // per)
    return {"role": "assistant", "content": f"Fold {per}pp signatures: {n} per book, French-groove sewing on tapes."}


@trajdebug.step(kind="parse")
def read_plan(message: dict) -> dict:
    m = re.search(r"Fold (\d+)pp signatures: (\d+) per book", message["content"])
    return {"pages_per_signature": int(m.group(1)), "signatures": int(m.group(2))}


@trajdebug.step(kind="tool")
def supplier_stock(material: str, grade: str, qty: int) -> dict:
    if material == "paper":
        g = "120gsm offset" if active("bind.stock") else grade
        return {"material": material, "sku": SKUS[g], "grade": g, "available": 5000}
    return {"material": material, "sku": f"{material[:3].upper()}-{len(grade):03d}",
            "grade": grade, "available": 900}


@trajdebug.step(kind="tool")
def price_lookup(sku: str) -> dict:
    plist = "PL-2025-Q3" if active("bind.prices") else "PL-2026-Q4"
    return {"sku": sku, "price_list": plist, "unit_eur": round(0.02 + len(sku) * 0.01, 2)}


@trajdebug.step(kind="state")
def remember_material(material: str, stock: dict, price: dict) -> None:
    trajdebug.current_run().state[f"material:{material}"] = {**stock, **price}


@trajdebug.step(kind="llm")
def draft_quote(messages: list) -> dict:
    ctx = json.loads(messages[-1]["content"])
    die = "D-7731" if active("bind.die") else ctx["cover"]["die"]
    total = round(sum(m["unit_eur"] for m in ctx["materials"]) * ctx["copies"] * 10 + 14 * ctx["copies"], 2)
    return {"role": "assistant", "content": json.dumps({"quote_eur": total, "cloth": ctx["cover"]["cloth"], "foil_die": die})}


@trajdebug.step(kind="parse")
def read_quote(message: dict) -> dict:
    return json.loads(message["content"])


@trajdebug.step(kind="tool")
def fold_batch(job: str, batch: int, pages_per_signature: int, gsm: int) -> dict:
    if pages_per_signature >= 16 and gsm >= 150:
        raise RuntimeError(f"folder F2: {gsm} gsm stock cannot take a third fold (batch {batch} of {job} stopped)")
    return {"job": job, "batch": batch, "folded": True}


@trajdebug.step(kind="tool")
def order_materials(job: str, paper_grade: str, lines: list, cloth: str) -> dict:
    for line in lines:
        if line["price_list"] != "PL-2026-Q4":
            raise RuntimeError(f"supplier portal: order {job} line {line['sku']} quotes price list {line['price_list']}, which is closed")
        if line["material"] == "paper" and line["sku"] != SKUS[paper_grade]:
            raise RuntimeError(f"supplier portal: line {line['sku']} does not match the ticket's paper grade for {job}")
    if cloth not in CLOTHS:
        raise LookupError(f"supplier portal: no cloth matching '{cloth}'")
    return {"job": job, "po": f"PO-{job}", "lines": len(lines)}


@trajdebug.step(kind="tool")
def book_press_slot(job: str, die: str | None) -> dict:
    if die is not None and die not in DIES:
        raise LookupError(f"die store: no brass die {die} on the shelf for {job}")
    return {"job": job, "slot": "2026-12-10 AM", "die": die}


@trajdebug.step(kind="output")
def confirm_job(job: str, quote: dict, po: dict, slot: dict) -> str:
    return f"{job}: quoted {quote['quote_eur']} EUR, {po['po']}, blocking {slot['slot']}."


def record(inp: str, path, server=None) -> None:
    try:
        with trajdebug.run(AGENT, task=f"quote and schedule {inp}", path=str(path)) as run:
            job = read_job(JOBS[inp])
            cover = read_cover_spec(client_archive(job["client"])["notes"])
            meta = manuscript_meta(job["job"], job["pages"], job["paper"])
            plan = read_plan(plan_signatures([{"role": "system", "content": "You plan signature folding for a bindery."},
                                              {"role": "user", "content": json.dumps(meta)}]))
            grades = {"paper": job["paper"], "board": "2.5mm grey", "cloth": cover["cloth"], "thread": "18/3 linen",
                      "endpaper": "140gsm laid"}
            for material, grade in grades.items():
                stock = supplier_stock(material, grade, job["copies"])
                remember_material(material, stock, price_lookup(stock["sku"]))
            with trajdebug.step("gather_materials", kind="state") as s:
                lines = [run.state[f"material:{m}"] for m in grades]
                s.output = lines
            quote = read_quote(draft_quote([{"role": "system", "content": "You draft bindery quotes as JSON."},
                                            {"role": "user", "content": json.dumps({"copies": job["copies"], "cover": cover, "materials": lines})}]))
            for batch in range(1, 4):
                fold_batch(job["job"], batch, plan["pages_per_signature"], meta["gsm"])
            po = order_materials(job["job"], job["paper"], lines, quote["cloth"])
            slot = book_press_slot(job["job"], quote["foil_die"])
            confirm_job(job["job"], quote, po, slot)
    except (RuntimeError, LookupError):
        pass
