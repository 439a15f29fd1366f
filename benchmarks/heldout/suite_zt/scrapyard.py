"""Scrap metal yard: weigh, grade and pay out a seller's visit (OpenTelemetry spans, OpenInference, OTLP/JSON)."""
from __future__ import annotations

import json

from .common import Case, Otlp, last_user, policy
from .kit import active, planted

AGENT, ROUTE, DOMAIN = "scrapyard-desk", "otlp", "scrap metal yard"
SHAPE = "seller -> price board -> loads -> per-load weighbridge (retry) + grade rules + LLM grading -> compliance sub-agent -> ticket -> payout"
MODEL = "zt-scrap"

VISITS = {
    "V-7101": {"seller": "S-11", "plate": "KX19 ABC", "loads": [("L1", "steel", 2140), ("L2", "copper", 186), ("L3", "aluminium", 412), ("L4", "brass", 95)]},
    "V-7188": {"seller": "S-24", "plate": "MV70 TRE", "loads": [("L1", "copper", 240), ("L2", "steel", 1810), ("L3", "lead", 130), ("L4", "aluminium", 77)]},
    "V-6001": {"seller": "S-02", "plate": "AB12 CDE", "loads": [("L1", "steel", 900), ("L2", "aluminium", 60)]},
    "V-6044": {"seller": "S-05", "plate": "GH61 JKL", "loads": [("L1", "copper", 55), ("L2", "brass", 40), ("L3", "steel", 1200)]},
    "V-6310": {"seller": "S-08", "plate": "NP15 QRS", "loads": [("L1", "lead", 80), ("L2", "steel", 640)]},
    "V-6522": {"seller": "S-09", "plate": "TU68 VWX", "loads": [("L1", "aluminium", 300), ("L2", "copper", 120), ("L3", "brass", 60)]},
}
REFS = ["V-6001", "V-6044", "V-6310", "V-6522"]
BOARD = {"steel": 210, "copper": 6100, "aluminium": 1150, "brass": 3900, "lead": 1500}  # EUR per tonne
GRADES = {"steel": "HMS 1", "copper": "copper #2", "aluminium": "mixed aluminium", "brass": "yellow brass", "lead": "soft lead"}


@policy(MODEL)
def _model(msgs):
    req = json.loads(last_user(msgs))
    rule = req["rules"][0]
    return json.dumps({"load": req["load"], "metal": rule["metal"], "grade": rule["grade"]})


def record(path, visit_id: str, fault_id: str | None) -> None:
    o = Otlp("scrapyard-desk")
    v = VISITS[visit_id]
    flaky = {"n": 0}
    with planted(fault_id):
        try:
            with o.span(AGENT, "AGENT", input=f"pay out visit {visit_id}", **{"agent.name": AGENT}) as top:
                with o.span("seller_lookup", "TOOL", input={"visit": visit_id}, **{"tool.name": "seller_lookup"}) as b:
                    seller = b.output = {"seller": v["seller"], "plate": v["plate"], "id_checked": True}
                with o.span("price_board", "TOOL", input={"yard": "south"}, **{"tool.name": "price_board"}) as b:
                    board = dict(BOARD)
                    day = "2026-12-05"
                    if active("scr_stale"):
                        board["copper"], day = 6450, "2026-12-04"
                    b.output = {"as_of": day, "eur_per_t": board}
                with o.span("list_loads", "TOOL", input={"visit": visit_id}, **{"tool.name": "list_loads"}) as b:
                    loads = [{"load": ld, "declared": m} for ld, m, _ in v["loads"]]
                    if active("scr_trunc"):
                        loads = loads[:3]
                    b.output = {"visit": visit_id, "loads": loads}
                lines = []
                for ld in loads:
                    while True:
                        try:
                            with o.span("weighbridge_read", "TOOL", input={"load": ld["load"]}, **{"tool.name": "weighbridge_read"}) as b:
                                if ld["load"] == "L2" and flaky["n"] == 0:
                                    flaky["n"] += 1
                                    raise ConnectionError("weighbridge indicator did not answer on COM3")
                                kg = next(k for x, _, k in v["loads"] if x == ld["load"])
                                b.output = {"load": ld["load"], "gross_kg": kg + 3400, "tare_kg": 3400}
                                w = b.output
                            break
                        except ConnectionError:
                            continue
                    with o.span("grade_rules", "RETRIEVER", input={"query": f"grading rules {ld['declared']}"}) as b:
                        metal = ld["declared"]
                        if active("scr_retr") and metal == "copper":
                            metal = "brass"
                        rules = [{"metal": metal, "grade": GRADES[metal], "text": f"{GRADES[metal]}: clean {metal}, no attachments"}]
                        b.sp.set_attribute("retrieval.documents.0.document.content", rules[0]["text"])
                        b.output = rules
                    grade = json.loads(o.llm("grade_classify", MODEL, [
                        {"role": "system", "content": "Grade the load using the grading rules. Answer JSON."},
                        {"role": "user", "content": json.dumps({"load": ld["load"], "declared": ld["declared"], "rules": rules})}]))
                    lines.append({"load": ld["load"], "metal": grade["metal"], "net_kg": w["gross_kg"] - w["tare_kg"]})
                with o.span("compliance_check", "AGENT", input={"seller": seller["seller"]}, **{"agent.name": "compliance"}) as comp:
                    with o.span("verify_id", "TOOL", input={"seller": seller["seller"]}, **{"tool.name": "verify_id"}) as b:
                        b.output = {"seller": seller["seller"], "id": "passport", "valid": True}
                    plate = seller["seller"] if active("scr_args") else seller["plate"]
                    with o.span("stolen_register_search", "TOOL", input={"plate": plate}, **{"tool.name": "stolen_register_search"}) as b:
                        b.output = {"query": plate, "matches": 0, "ref": f"SR-4471-{plate.replace(' ', '')}"}
                        reg = b.output
                    comp.output = {"cleared": True, "register_ref": reg["ref"]}
                with o.span("build_ticket", "CHAIN", input={"lines": lines, "board": board}) as b:
                    div = 100 if active("scr_unit") else 1000
                    priced = [dict(x, eur_per_t=board[x["metal"]], eur=round(x["net_kg"] / div * board[x["metal"]], 2)) for x in lines]
                    ticket = b.output = {"visit": visit_id, "lines": priced, "total_eur": round(sum(p["eur"] for p in priced), 2),
                                         "register_ref": comp.output["register_ref"]}
                with o.span("issue_payout", "TOOL", input=ticket, **{"tool.name": "issue_payout"}) as b:
                    if len(ticket["lines"]) != len(v["loads"]):
                        raise ValueError(f"payout API 422: ticket covers {len(ticket['lines'])} loads, gate log for {visit_id} shows {len(v['loads'])}")
                    if not ticket["register_ref"].endswith(v["plate"].replace(" ", "")):
                        raise ValueError(f"payout API 403: no stolen-goods register check on record for vehicle plate {v['plate']}")
                    for ln in ticket["lines"]:
                        truth = next(m for x, m, _ in v["loads"] if x == ln["load"])
                        if ln["metal"] != truth:
                            raise ValueError(f"payout API 422: load {ln['load']} graded {ln['metal']} but the yard assay says {truth}")
                        if ln["eur_per_t"] != BOARD[truth]:
                            raise ValueError(f"payout API 409: unit price {ln['eur_per_t']} EUR/t for {truth} differs from today's board {BOARD[truth]} EUR/t")
                    expect = round(sum(k / 1000 * BOARD[m] for _, m, k in v["loads"]), 2)
                    if abs(ticket["total_eur"] - expect) > 0.05:
                        raise ValueError(f"payout API 422: ticket total {ticket['total_eur']:.2f} EUR does not match weighbridge value {expect:.2f} EUR")
                    b.output = {"payout": f"PO-{visit_id}", "amount_eur": ticket["total_eur"]}
                top.output = b.output
        except Exception:
            pass
    _append(o, path)


def _append(o: Otlp, path) -> None:
    from pathlib import Path
    p = Path(path)
    tmp = p.with_suffix(".part.json")
    o.dump(tmp)
    doc = json.loads(tmp.read_text())
    tmp.unlink()
    if p.exists():
        old = json.loads(p.read_text())
        old["resourceSpans"].extend(doc.get("resourceSpans", []))
        doc = old
    p.write_text(json.dumps(doc))


CASES = [
    Case("zt_scrapyard_1", "scr_unit", "unit_error", "V-7101", "build_ticket", 1, "issue_payout", 1,
         "The ticket converts net kilograms to tonnes by dividing by 100, pricing every line ten times too high."),
    Case("zt_scrapyard_2", "scr_retr", "wrong_retrieval", "V-7101", "grade_rules", 2, "issue_payout", 1,
         "The grading-rules search for the copper load returns the yellow brass rule, and the load is graded brass."),
    Case("zt_scrapyard_3", "scr_args", "wrong_tool_args", "V-7188", "stolen_register_search", 1, "issue_payout", 1,
         "The compliance check searches the stolen-goods register by the seller id instead of the vehicle plate."),
    Case("zt_scrapyard_4", "scr_stale", "stale_data", "V-7188", "price_board", 1, "issue_payout", 1,
         "The price board answer is yesterday's, with copper at 6450 EUR/t instead of 6100."),
    Case("zt_scrapyard_5", "scr_trunc", "truncated_result", "V-7101", "list_loads", 1, "issue_payout", 1,
         "The load list for the visit comes back cut to its first three loads."),
]
