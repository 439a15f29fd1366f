"""School photography (OpenTelemetry / OpenInference spans): gather class lists and parent orders, price them,
retouch, and send one print batch to the lab."""

from __future__ import annotations

import json
from pathlib import Path

from . import common
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "school-portrait-orders", "otlp", "school photography", "json"

JOBS = {
    "SP-HILL": {"school": "Hillcrest Primary", "classes": {"3A": 27, "4B": 29, "5C": 26}, "backdrop": "BK-02", "season": "2026-S"},
    "SP-OAKS": {"school": "Oakfield Juniors", "classes": {"Y3": 24, "Y4": 28}, "backdrop": "BK-05", "season": "2026-S"},
    "SP-BRKS": {"school": "Brookside Infants", "classes": {"R1": 22, "R2": 21}, "backdrop": "BK-02", "season": "2026-S"},
    "SP-MERE": {"school": "Mere Lane Academy", "classes": {"7N": 30, "7S": 29, "8N": 28}, "backdrop": "BK-07", "season": "2026-S"},
    "SP-FERN": {"school": "Fernhill Primary", "classes": {"2F": 25, "3F": 26}, "backdrop": "BK-05", "season": "2026-S"},
    "SP-ASHW": {"school": "Ashworth CE Primary", "classes": {"1A": 20, "6A": 27, "6B": 26}, "backdrop": "BK-02", "season": "2026-S"},
}
REFS = ["SP-BRKS", "SP-MERE", "SP-FERN", "SP-ASHW"]
PRICE_SHEETS = [
    {"sheet": "2026-S", "title": "Spring 2026 portrait packs", "packs": {"A": 12.0, "B": 16.5, "C": 22.0}},
    {"sheet": "2025-A", "title": "Autumn 2025 portrait packs", "packs": {"A": 11.0, "B": 14.0, "C": 19.5}},
]


def _orders(job_id: str) -> list[tuple[str, str, str, int]]:
    job = JOBS[job_id]
    rows = []
    for cls, n in job["classes"].items():
        for i in range(1, n + 1, 3):
            rows.append((f"{cls}-{i:02d}", cls, "ABC"[(i // 3) % 3], 1 + (i % 4 == 1)))
    return rows


def _paid_total(job_id: str) -> float:
    prices = PRICE_SHEETS[0]["packs"]
    return round(sum(prices[p] * q for _, _, p, q in _orders(job_id)), 2)


def record(job_id: str, path: Path) -> None:
    job = JOBS[job_id]
    sp = common.Spans(AGENT)
    try:
        with sp.span(AGENT, "AGENT", f"Prepare the print batch for {job['school']} ({job_id})", **{"agent.name": AGENT}) as top:
            with sp.span("load_job", "CHAIN", {"job_id": job_id}) as b:
                b["output"] = {"school": job["school"], "classes": list(job["classes"]), "backdrop": job["backdrop"]}
            registers = {}
            for cls, n in job["classes"].items():
                with sp.span("fetch_class_list", "TOOL", {"school": job["school"], "class": cls}, **{"tool.name": "fetch_class_list"}) as b:
                    pupils = [f"{cls}-{i:02d}" for i in range(1, n + 1)]
                    if active("photo_page_cut") and n > 28:
                        pupils = pupils[:25]
                    b["output"] = {"class": cls, "pupils": pupils, "count": len(pupils)}
                registers[cls] = pupils
            with sp.span("fetch_parent_orders", "TOOL", {"job_id": job_id}, **{"tool.name": "fetch_parent_orders"}) as b:
                csv = "pupil,class,pack,qty\n" + "\n".join(f"{p},{c},{k},{q}" for p, c, k, q in _orders(job_id))
                b["output"] = csv
            with sp.span("parse_orders", "CHAIN", csv) as b:
                orders = []
                for line in csv.splitlines()[1:]:
                    p, c, k, q = line.split(",")
                    orders.append({"pupil": p, "class": c, "pack": k, "qty": 1 if active("photo_qty_parse") else int(q)})
                b["output"] = orders
            with sp.span("find_price_sheet", "RETRIEVER", f"portrait pack prices {job['season']}") as b:
                sheet = PRICE_SHEETS[1] if active("photo_sheet_pick") else PRICE_SHEETS[0]
                b["output"] = [{"document": sheet["title"], "sheet": sheet["sheet"], "packs": sheet["packs"]}]
            with sp.span("price_orders", "CHAIN", {"orders": len(orders), "sheet": sheet["sheet"]}) as b:
                lines = [{**o, "price": sheet["packs"][o["pack"]] * o["qty"]} for o in orders]
                b["output"] = {"lines": len(lines), "total": round(sum(l["price"] for l in lines), 2)}
            with sp.span("retouch_agent", "AGENT", {"classes": list(job["classes"])}, **{"agent.name": "retouch_agent"}) as ra:
                plan = json.loads(sp.llm("plan_retouch", "[photo:retouch] Plan retouching per class. Answer JSON.",
                                         json.dumps({c: len(v) for c, v in registers.items()})))
                for cls, n in plan.items():
                    with sp.span("queue_retouch", "TOOL", {"class": cls, "frames": n}, **{"tool.name": "queue_retouch"}) as b:
                        b["output"] = {"class": cls, "queued": n, "queue_id": f"RQ-{cls}"}
                ra["output"] = {"queued": sum(plan.values())}
            note = json.loads(sp.llm("write_lab_note", "[photo:note] Write the lab instructions as JSON.",
                                     json.dumps({"school": job["school"], "backdrop": job["backdrop"], "lines": len(lines)})))
            with sp.span("check_payments", "TOOL", {"job_id": job_id}, **{"tool.name": "check_payments"}) as b:
                try:
                    if active("photo_pay_quiet"):
                        raise ConnectionError("payment gateway answered 503")
                    pay = {"job_id": job_id, "remitted": _paid_total(job_id), "reference": f"REM-{job_id}"}
                except ConnectionError:
                    pay = {"job_id": job_id, "remitted": round(sum(l["price"] for l in lines), 2), "reference": ""}
                b["output"] = pay
            with sp.span("submit_print_batch", "TOOL", {"job_id": job_id, "lines": len(lines), "note": note, "payment": pay},
                         **{"tool.name": "submit_print_batch"}) as b:
                for cls, n in job["classes"].items():
                    got = len(registers[cls])
                    if got != n:
                        raise RuntimeError(f"print lab 422: class {cls} batch has {got} portrait frames; school register lists {n} pupils")
                if note["backdrop"] != job["backdrop"]:
                    raise RuntimeError(f"print lab 409: backdrop {note['backdrop']} not on the job sheet (booked {job['backdrop']})")
                total = round(sum(l["price"] for l in lines), 2)
                expect = _paid_total(job_id)
                if total != expect:
                    raise RuntimeError(f"print lab 402: batch value {total:.2f} GBP does not match parent payments {expect:.2f} GBP")
                if not pay["reference"]:
                    raise RuntimeError(f"print lab 402: payment for {job_id} has no gateway remittance reference; batch held")
                b["output"] = {"batch": f"PB-{job_id}", "status": "queued"}
            top["output"] = "print batch queued"
    except RuntimeError:
        pass
    sp.write(path)


@common.handler("photo:retouch")
def _retouch(msgs, tools):
    counts = json.loads(common.last_user(msgs))
    return json.dumps({c: max(1, n // 9) for c, n in counts.items()})


@common.handler("photo:note")
def _note(msgs, tools):
    d = json.loads(common.last_user(msgs))
    return json.dumps({"school": d["school"], "backdrop": "BK-07" if active("photo_backdrop") else d["backdrop"],
                       "finish": "lustre", "lines": d["lines"]})


CASES = [
    dict(case="zr_photo_01", fault_id="photo_page_cut", kind="truncated_result", input="SP-HILL", root=("fetch_class_list", 2),
         failure=("submit_print_batch", 1), description="the class-list API returns only its first page of 25 pupils for a 29-pupil class."),
    dict(case="zr_photo_02", fault_id="photo_sheet_pick", kind="wrong_retrieval", input="SP-OAKS", root=("find_price_sheet", 1),
         failure=("submit_print_batch", 1), description="the price-sheet search returns the autumn 2025 sheet instead of spring 2026."),
    dict(case="zr_photo_03", fault_id="photo_pay_quiet", kind="swallowed_error", input="SP-HILL", root=("check_payments", 1),
         failure=("submit_print_batch", 1), description="the payment check swallows a gateway 503 and reports the batch value as remitted."),
    dict(case="zr_photo_04", fault_id="photo_qty_parse", kind="lossy_parsing", input="SP-OAKS", root=("parse_orders", 1),
         failure=("submit_print_batch", 1), description="the order parser drops the quantity column and counts every line as one pack."),
    dict(case="zr_photo_05", fault_id="photo_backdrop", kind="hallucinated_value", input="SP-HILL", root=("write_lab_note", 1),
         failure=("submit_print_batch", 1), description="the lab-note model names a backdrop code that the job sheet never gave."),
]
