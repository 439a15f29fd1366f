"""Fountain pen repair (otlp route): manual lookup, diagnosis, parts stock and reservation, prices, bench sub-agent, warranty, ticket."""
from __future__ import annotations

import json

from .common import Case, last_user, run_otlp
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "pen-repair-desk", "otlp", "fountain pen repair", "json"
SHAPE = "manual (retrieval) -> diagnose (llm) + parse -> per part: stock check, reserve or order -> prices + parse -> job write -> bench sub-agent -> warranty -> quote -> compose (llm) -> issue ticket"

MANUAL = {
    "Sailor 1911": {"filling": "cartridge/converter", "parts": {"scratchy nib": ["NIB-14K"], "leaking section": ["SEC-RING", "CONV-20"]}},
    "Pelikan M800": {"filling": "piston", "parts": {"stiff piston": ["PISTON-SEAL-P"], "scratchy nib": ["NIB-18C"]}},
    "Lamy 2000": {"filling": "piston", "parts": {"stiff piston": ["PISTON-SEAL-L"], "scratchy nib": ["NIB-14P"]}},
    "Pilot Custom 74": {"filling": "cartridge/converter", "parts": {"leaking section": ["SEC-RING-P", "CON-70"], "scratchy nib": ["NIB-14G"]}},
}
INV = {"NIB-14K/F": 0, "NIB-14K/M": 3, "NIB-14K/B": 1, "SEC-RING/-": 6, "CONV-20/-": 4, "PISTON-SEAL-P/-": 2, "PISTON-SEAL-L/-": 5,
       "NIB-18C/F": 1, "NIB-18C/M": 2, "NIB-14P/EF": 2, "NIB-14P/F": 0, "SEC-RING-P/-": 3, "CON-70/-": 0, "NIB-14G/M": 2, "NIB-14G/F": 1}
PRICE = {"NIB-14K": "48.00", "SEC-RING": "4.50", "CONV-20": "9.00", "PISTON-SEAL-P": "14.00", "PISTON-SEAL-L": "11.00", "NIB-18C": "95.00",
         "NIB-14P": "42.00", "SEC-RING-P": "5.00", "CON-70": "8.50", "NIB-14G": "39.00"}
WARRANTY = {"S-2231": "2027-05-31", "P-1187": None, "L-5502": None, "PC-0921": "2027-01-10"}
TODAY = "2026-12-05"
LABOUR = 35.0

INPUTS = {
    "sailor": {"ticket": "FP-7712", "customer": "E. Marsh", "pen": "Sailor 1911", "serial": "S-2231", "nib_size": "F",
               "issues": ["scratchy nib", "leaking section"], "ceiling": 120.0},
    "pelikan": {"ticket": "FP-7718", "customer": "G. Ruiz", "pen": "Pelikan M800", "serial": "P-1187", "nib_size": "M",
                "issues": ["stiff piston"], "ceiling": 80.0},
}
REFS = [
    {"ticket": "FP-7690", "customer": "H. Iqbal", "pen": "Lamy 2000", "serial": "L-5502", "nib_size": "EF", "issues": ["stiff piston", "scratchy nib"], "ceiling": 150.0},
    {"ticket": "FP-7701", "customer": "K. Doyle", "pen": "Pilot Custom 74", "serial": "PC-0921", "nib_size": "M", "issues": ["leaking section", "scratchy nib"], "ceiling": 90.0},
    {"ticket": "FP-7705", "customer": "A. Brandt", "pen": "Pelikan M800", "serial": "P-1187", "nib_size": "F", "issues": ["scratchy nib"], "ceiling": 200.0},
    {"ticket": "FP-7709", "customer": "N. Osei", "pen": "Sailor 1911", "serial": "S-2231", "nib_size": "M", "issues": ["scratchy nib"], "ceiling": 100.0},
]

CASES = [
    Case("pens_stock", "tool_ignores_argument", "sailor", "check_part_stock", 1, "tool", "reserve_part", 1,
         "The stock check ignores the nib size and reports the medium nib's count for a fine nib."),
    Case("pens_warranty", "swallowed_error", "sailor", "resolve_warranty", 1, "other", "issue_repair_ticket", 1,
         "A warranty registry error is caught and read as 'no warranty', so a covered pen is charged."),
    Case("pens_compose", "wrong_tool_args", "sailor", "compose_ticket", 1, "llm", "issue_repair_ticket", 1,
         "The ticket composer passes the default medium nib size instead of the fine nib on the intake."),
    Case("pens_manual", "wrong_retrieval", "pelikan", "search_repair_manual", 1, "retrieval", "issue_repair_ticket", 1,
         "The manual search returns the Lamy 2000 section for a Pelikan M800, so the diagnosis lists the Lamy piston seal."),
    Case("pens_prices", "format_drift", "pelikan", "fetch_parts_price", 1, "tool", "issue_repair_ticket", 1,
         "The price list starts answering in cents without a decimal point, and the quote reads them as euros."),
]


def policy(req):
    system, user = last_user(req)
    data = json.loads(user)
    if system.startswith("You diagnose fountain pens"):
        parts = [p for issue in data["issues"] for p in data["manual"]["parts"].get(issue, [])]
        return json.dumps({"parts": parts, "hours": 0.5 * len(parts)})
    if system.startswith("You assign bench"):
        return "Ana" if data["hours"] > 1 else "Jonas"
    if system.startswith("You compose repair tickets"):
        size = "M" if active("pens_compose") else data["nib_size"]
        return json.dumps({"ticket": data["ticket"], "serial": data["serial"], "nib_size": size, "parts": data["parts"],
                           "charge": data["quote"]["charge"], "technician": data["technician"]})
    return "ok"


def _reserve(part: str, size: str) -> dict:
    if INV[f"{part}/{size}"] <= 0:
        raise RuntimeError(f"HTTP 409 from parts store: {part} size {size} has 0 on hand")
    return {"reserved": f"{part}/{size}"}


def _warranty(serial: str) -> str | None:
    if active("pens_warranty"):
        raise ConnectionError("warranty registry returned HTTP 502")
    until = WARRANTY[serial]
    return until if until and until >= TODAY else None


def _issue(t: dict, inp: dict) -> dict:
    errs = []
    allowed = {p for ps in MANUAL[inp["pen"]]["parts"].values() for p in ps}
    for p in t["parts"]:
        if p["part"] not in allowed:
            errs.append(f"part {p['part']} is not listed for {inp['pen']}")
    if t["nib_size"] != inp["nib_size"]:
        errs.append(f"nib size {t['nib_size']} on the ticket differs from the intake ({inp['nib_size']})")
    until = WARRANTY[inp["serial"]]
    if until and until >= TODAY and t["charge"] > 0:
        errs.append(f"serial {inp['serial']} is under warranty until {until}; customer charge must be 0, got {t['charge']:.2f}")
    if t["charge"] > inp["ceiling"]:
        errs.append(f"charge {t['charge']:.2f} exceeds the approved ceiling {inp['ceiling']:.2f}")
    if errs:
        raise ValueError("repair ticket rejected: " + "; ".join(errs))
    return {"issued": t["ticket"], "technician": t["technician"]}


def flow(ctx, inp):
    tk = ctx.step("read_ticket", "input", inp, lambda: dict(inp))
    model = "Lamy 2000" if active("pens_manual") else tk["pen"]
    manual = ctx.step("search_repair_manual", "retrieval", {"query": f"{tk['pen']} {' '.join(tk['issues'])}"},
                      lambda: dict(MANUAL[model], model=model))
    text = ctx.llm("diagnose_pen", "You diagnose fountain pens. Answer JSON.", {"pen": tk["pen"], "issues": tk["issues"], "manual": manual})
    diag = ctx.step("parse_diagnosis", "parse", {"text": text}, lambda: json.loads(text))
    parts = []
    for part in diag["parts"]:
        size = tk["nib_size"] if part.startswith("NIB") else "-"
        stock = ctx.step("check_part_stock", "tool", {"part": part, "size": size},
                         lambda: {"part": part, "on_hand": INV[f"{part}/{'M' if (active('pens_stock') and size != '-') else size}"]})
        if stock["on_hand"] > 0:
            ctx.step("reserve_part", "tool", {"part": part, "size": size}, lambda: _reserve(part, size))
        else:
            ctx.step("order_part", "tool", {"part": part, "size": size}, lambda: {"ordered": f"{part}/{size}", "eta_days": 5})
        parts.append({"part": part, "size": size})
    raw = ctx.step("fetch_parts_price", "tool", {"parts": [p["part"] for p in parts]},
                   lambda: {p["part"]: (PRICE[p["part"]].replace(".", "") if active("pens_prices") else PRICE[p["part"]]) for p in parts})
    prices = ctx.step("parse_prices", "parse", {"raw": raw}, lambda: {k: float(v) for k, v in raw.items()})
    job = {}
    ctx.step("save_job", "state", {"ticket": tk["ticket"], "parts": parts}, lambda: job.update(ticket=tk["ticket"], parts=parts) or {"saved": tk["ticket"]})
    with ctx.agent("bench_scheduler", {"ticket": tk["ticket"], "hours": diag["hours"]}):
        tech = ctx.llm("assign_technician", "You assign bench technicians. Answer a name.", {"hours": diag["hours"], "pen": tk["pen"]})
        ctx.step("book_bench", "tool", {"technician": tech, "hours": diag["hours"]}, lambda: {"bench": f"B-{tech}", "hours": diag["hours"]})

    def warranty():
        try:
            return {"covered_until": _warranty(tk["serial"])}
        except ConnectionError:
            return {"covered_until": None}
    cover = ctx.step("resolve_warranty", "other", {"serial": tk["serial"]}, warranty)
    quote = ctx.step("compute_quote", "other", {"prices": prices, "hours": diag["hours"], "warranty": cover},
                     lambda: {"total": round(sum(prices.values()) + LABOUR * diag["hours"], 2),
                              "charge": 0.0 if cover["covered_until"] else round(sum(prices.values()) + LABOUR * diag["hours"], 2)})
    text = ctx.llm("compose_ticket", "You compose repair tickets. Answer JSON.",
                   {"ticket": tk["ticket"], "serial": tk["serial"], "nib_size": tk["nib_size"], "parts": parts, "quote": quote, "technician": tech})
    ticket = json.loads(text)
    return ctx.step("issue_repair_ticket", "tool", ticket, lambda: _issue(ticket, tk))


def record(server, inp, path):
    run_otlp(AGENT, flow, server, inp, path, task=f"repair ticket {inp['ticket']} ({inp['pen']})")
