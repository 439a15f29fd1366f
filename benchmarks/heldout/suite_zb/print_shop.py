"""Print shop job scheduler (trajdebug SDK): tickets, paper stock, press order, preflight, release."""
from __future__ import annotations

import json
import math

from .kit import active
from .routes import read_op

NAME = "print-shop-scheduler"
ROUTE = "sdk"
DOMAIN = "print shop job scheduling"
SHAPE = "order -> per-job ticket fetch/parse (retry) -> stock search -> press order LLM -> draft (state) -> preflight sub-agent -> sheet counts -> release"
SYSTEM = "You schedule the presses of a print shop. Answer in JSON only."


class PressReleaseRejected(Exception):
    pass


Rejected = PressReleaseRejected


def _j(jid, qty, stock, nup, due):
    return {"job": jid, "qty": qty, "stock": stock, "n_up": nup, "due": due}


INPUTS = {
    "monday": {"shop": "Kestrel Print", "day": "2026-10-12", "press": "SM74",
               "jobs": [_j("4411", 2500, "170gsm silk", 2, "11:00"), _j("4412", 1250, "300gsm uncoated", 4, "15:30"),
                        _j("4413", 5000, "130gsm gloss", 8, "12:30"), _j("4414", 800, "350gsm silk", 2, "16:00")]},
    "thursday": {"shop": "Kestrel Print", "day": "2026-10-15", "press": "SM74",
                 "jobs": [_j("4520", 3000, "170gsm silk", 4, "08:30"), _j("4521", 1500, "250gsm gloss", 2, "13:00"),
                          _j("4522", 900, "300gsm uncoated", 2, "16:30")]},
    "r1": {"shop": "Kestrel Print", "day": "2026-10-05", "press": "SM74",
           "jobs": [_j("4300", 1000, "130gsm gloss", 4, "12:00"), _j("4301", 600, "350gsm silk", 2, "15:00")]},
    "r2": {"shop": "Kestrel Print", "day": "2026-10-06", "press": "SM74",
           "jobs": [_j("4310", 2000, "170gsm silk", 2, "11:30"), _j("4311", 2400, "130gsm gloss", 8, "14:00"),
                    _j("4312", 500, "250gsm gloss", 2, "16:30")]},
    "r3": {"shop": "Kestrel Print", "day": "2026-10-07", "press": "SM74",
           "jobs": [_j("4330", 4000, "300gsm uncoated", 4, "13:00"), _j("4331", 700, "170gsm silk", 2, "16:00")]},
    "r4": {"shop": "Kestrel Print", "day": "2026-10-08", "press": "SM74",
           "jobs": [_j("4340", 1800, "250gsm gloss", 2, "10:45"), _j("4341", 3200, "130gsm gloss", 8, "12:15"),
                    _j("4342", 900, "350gsm silk", 2, "15:45")]},
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    dict(id="zb_print_1", fault="ps1", kind="off_by_one", input="monday", root=("compute_sheet_counts", 1),
         failure=("release_press_schedule", 1),
         description="The sheet count rounds copies per sheet down instead of up, one sheet short for an odd split."),
    dict(id="zb_print_2", fault="ps2", kind="wrong_retrieval", input="monday", root=("search_paper_stock", 2),
         failure=("release_press_schedule", 1),
         description="The paper-stock search returns the gloss stock of the same weight for a silk job, so nothing is reserved for it."),
    dict(id="zb_print_3", fault="ps3", kind="truncated_result", input="thursday", root=("fetch_job_ticket", 3),
         failure=("release_press_schedule", 1),
         description="The ticket service cuts the second ticket mid-field, so its quantity reads as a two-digit number."),
    dict(id="zb_print_4", fault="ps4", kind="plan_error", input="thursday", root=("plan_press_order", 1),
         failure=("release_press_schedule", 1),
         description="The press-order plan sorts jobs by stock weight instead of due time, so the first-due job finishes late."),
    dict(id="zb_print_5", fault="ps5", kind="swallowed_error", input="monday", root=("check_artwork", 3),
         failure=("release_press_schedule", 1),
         description="The preflight tool catches a preflight timeout and returns a result with no resolution, which goes unnoticed until release."),
]


def task(inp: dict) -> str:
    return f"schedule {len(inp['jobs'])} jobs on press {inp['press']} for {inp['day']}"


STOCK = {"170gsm silk": 9000, "170gsm gloss": 12000, "300gsm uncoated": 4000, "130gsm gloss": 15000,
         "350gsm silk": 2500, "250gsm gloss": 5000, "250gsm silk": 1800}


def _ticket_service(inp: dict):
    calls = {"n": 0, "flaky": True}

    def fetch(job: str) -> str:
        calls["n"] += 1
        if job == inp["jobs"][0]["job"] and calls["flaky"]:
            calls["flaky"] = False
            raise ConnectionError("ticket service: connection reset by peer")
        j = next(x for x in inp["jobs"] if x["job"] == job)
        text = f"JOB {job} | qty {j['qty']} | stock {j['stock']} | n-up {j['n_up']} | due {j['due']} | colours 4/4"
        if job == inp["jobs"][1]["job"] and active("ps3"):
            text = text[: text.index("| stock") - 3]
        return text
    return fetch


def _parse_ticket(ticket: str) -> dict:
    parts = [p.strip() for p in ticket.split("|")]
    out = {"job": parts[0].split()[1]}
    for p in parts[1:]:
        k, _, v = p.partition(" ")
        out[k] = v
    return {"job": out["job"], "qty": int(out["qty"]), "stock": out.get("stock"), "n_up": int(out.get("n-up", 1)),
            "due": out.get("due")}


def _stock_search(query: str) -> list:
    wanted = query.removeprefix("paper stock ")
    hits = sorted(STOCK, key=lambda s: (s != wanted, s))
    alike = [s for s in STOCK if s.split()[0] == wanted.split()[0] and s != wanted]
    if active("ps2") and alike:
        hits = alike + hits
    return [{"stock": s, "sheets_on_hand": STOCK[s]} for s in hits[:2]]


def _preflight(inp: dict):
    calls = {"n": 0}

    def check(job: str) -> dict:
        calls["n"] += 1
        try:
            if calls["n"] == 3 and active("ps5"):
                raise TimeoutError("preflight engine did not answer in 30 s")
            return {"job": job, "dpi": 300, "bleed_mm": 3.0, "fonts_embedded": True}
        except TimeoutError:
            return {"job": job, "dpi": None, "bleed_mm": None, "fonts_embedded": None}
    return check


def _sheet_counts(tickets: list) -> dict:
    out = {}
    for t in tickets:
        sheets = t["qty"] // t["n_up"] + (0 if active("ps1") else (1 if t["qty"] % t["n_up"] else 0))
        out[t["job"]] = {"sheets": sheets + 50, "make_ready_sheets": 50}
    return out


def _release(day: str, order: list, tickets: dict, requested: dict, sheets: dict, reserved: dict, preflight: dict) -> dict:
    for job, q in requested.items():
        if tickets[job]["qty"] != q:
            raise PressReleaseRejected(f"400 Bad Request: job {job} ticket quantity {tickets[job]['qty']} does not match "
                                       f"the order quantity {q}")
    for job in order:
        pf = preflight[job]
        if pf.get("dpi") is None or pf.get("bleed_mm") is None:
            raise PressReleaseRejected(f"409 Conflict: job {job} has no complete preflight report (dpi={pf.get('dpi')}, "
                                       f"bleed={pf.get('bleed_mm')})")
        need = math.ceil(tickets[job]["qty"] / tickets[job]["n_up"]) + 50
        if sheets[job]["sheets"] < need:
            raise PressReleaseRejected(f"422 Unprocessable Entity: job {job} plans {sheets[job]['sheets']} sheets, "
                                       f"{need} needed for {tickets[job]['qty']} copies at {tickets[job]['n_up']}-up")
        stock = tickets[job]["stock"]
        if reserved.get(stock, 0) < sheets[job]["sheets"]:
            raise PressReleaseRejected(f"422 Unprocessable Entity: stock {stock}: {reserved.get(stock, 0)} sheets reserved, "
                                       f"{sheets[job]['sheets']} needed for job {job}")
    clock = 7 * 60
    for job in order:
        clock += 20 + math.ceil(sheets[job]["sheets"] / 25)
        hh, mm = map(int, tickets[job]["due"].split(":"))
        if clock > hh * 60 + mm:
            raise PressReleaseRejected(f"422 Unprocessable Entity: job {job} finishes {clock // 60:02d}:{clock % 60:02d}, "
                                       f"after its due time {tickets[job]['due']}")
    return {"status": 201, "schedule": f"SM74-{day}", "jobs": order}


def policy(request):
    op, p = read_op(request)
    if op == "plan_press_order":
        jobs = p["jobs"]
        if active("ps4"):
            seq = sorted(jobs, key=lambda j: (-int((j["stock"] or "0gsm").split("gsm")[0]), j["job"]))
        else:
            seq = sorted(jobs, key=lambda j: j["due"] or "23:59")
        return json.dumps({"sequence": [j["job"] for j in seq], "reason": "minimise wash-ups, respect due times"})
    if op == "review_preflight":
        return json.dumps({"approved": [r["job"] for r in p["reports"]], "notes": "bleed and resolution within spec"})
    raise ValueError(op)


def flow(h, inp: dict) -> dict:
    order = h.step("intake_order", "input", lambda order: order,
                   order={"day": inp["day"], "jobs": [{"job": j["job"], "qty": j["qty"]} for j in inp["jobs"]]})
    fetch = _ticket_service(inp)
    tickets = {}
    for j in order["jobs"]:
        for attempt in (1, 2):
            try:
                text = h.tool("fetch_job_ticket", {"job": j["job"]}, fetch)
                break
            except ConnectionError:
                if attempt == 2:
                    raise
        tickets[j["job"]] = h.step("parse_job_ticket", "parse", _parse_ticket, ticket=text)
    reserved = {}
    for stock in sorted({t["stock"] for t in tickets.values() if t["stock"]}):
        hits = h.retrieve("search_paper_stock", f"paper stock {stock}", _stock_search)
        reserved[hits[0]["stock"]] = hits[0]["sheets_on_hand"]
    plan = h.llm("plan_press_order", {"jobs": list(tickets.values())}, SYSTEM)
    h.remember("save_schedule_draft", "draft", lambda plan: {"sequence": plan["sequence"], "press": inp["press"]}, plan=plan)
    check = _preflight(inp)
    with h.sub("prepress_checker", jobs=plan["sequence"]) as box:
        reports = [h.tool("check_artwork", {"job": job}, check) for job in plan["sequence"]]
        review = h.llm("review_preflight", {"reports": reports}, SYSTEM)
        box["result"] = review
    sheets = h.step("compute_sheet_counts", "other", _sheet_counts, tickets=list(tickets.values()))
    draft = h.recall("draft")
    return h.tool("release_press_schedule", {"day": inp["day"], "order": draft["sequence"], "tickets": tickets,
                                             "requested": {j["job"]: j["qty"] for j in order["jobs"]}, "sheets": sheets,
                                             "reserved": reserved, "preflight": {r["job"]: r for r in reports}}, _release)
