"""cycle-count: a store's back-room cycle count of one zone, variances explained or adjusted (otlp)."""
from __future__ import annotations

import json
from pathlib import Path

from common import OtlpRecorder, system_of, user_of

NAME, ROUTE = "cycle-count", "otlp"
DOMAIN = "store back room: zone cycle count, variance investigation and inventory adjustments"
SHAPE = "OpenTelemetry + OpenInference spans: model count plan -> parse, per bin: book tool, handheld scan tool, compare; per variance: transaction retrieval, model explanation -> parse; adjustment posting tool, approval check"
SWITCH = None


def _on(case):
    return SWITCH == case


# zone -> bin -> (sku, live book qty, counted qty)
ZONES = {
    "A": {"A-1": ("PAP-TWL", 30, 26), "A-2": ("DSH-LIQ", 24, 24), "A-3": ("SPG-6PK", 18, 18), "A-10": ("PAP-TWL", 12, 12)},
    "B": {"B-1": ("CER-OAT", 20, 20), "B-2": ("CER-BRN", 16, 16), "B-3": ("PST-PEN", 40, 40), "B-4": ("RIC-BAS", 22, 22), "B-5": ("OIL-OLV", 10, 10)},
    "C": {"C-1": ("SOD-CAN", 48, 48), "C-2": ("WTR-6PK", 36, 30), "C-3": ("JCE-ORG", 12, 12), "C-4": ("TEA-ICE", 18, 18), "C-5": ("COF-GRD", 14, 14)},
    "D": {"D-1": ("BAT-AA", 60, 60), "D-2": ("BAT-AAA", 48, 48), "D-3": ("BLB-LED", 24, 24), "D-4": ("TAP-DCT", 15, 15)},
    "E": {"E-1": ("DOG-KIB", 12, 12), "E-2": ("CAT-LIT", 10, 7), "E-3": ("CAT-FD", 30, 30), "E-4": ("BRD-SED", 8, 8), "E-5": ("DOG-TRT", 20, 20)},
}
SNAPSHOT = {"B-3": 28}  # last night's book for B-3, before this morning's receipt RC-7781 (+12)
TRANSACTIONS = [
    {"id": "TR-5510", "bin": "A-10", "type": "transfer_out", "qty": -4, "sku": "PAP-TWL"},
    {"id": "SL-2201", "bin": "A-1", "type": "sale_pick", "qty": -2, "sku": "PAP-TWL"},
    {"id": "TR-5520", "bin": "C-2", "type": "transfer_out", "qty": -6, "sku": "WTR-6PK"},
    {"id": "RC-7781", "bin": "B-3", "type": "receipt", "qty": 12, "sku": "PST-PEN"},
    {"id": "RT-0090", "bin": "E-2", "type": "return_to_shelf", "qty": 2, "sku": "CAT-LIT"},
    {"id": "SL-2231", "bin": "E-2", "type": "sale_pick", "qty": -1, "sku": "CAT-LIT"},
    {"id": "SL-2230", "bin": "E-2", "type": "sale_pick", "qty": -1, "sku": "CAT-LIT"},
    {"id": "DM-0412", "bin": "E-2", "type": "damage", "qty": -3, "sku": "CAT-LIT"},
]
# posted (already on the book) transactions: a variance is explained by a transaction not yet posted
UNPOSTED = {"TR-5510", "SL-2201", "TR-5520", "DM-0412", "SL-2230", "SL-2231", "RT-0090"}
AUTO_LIMIT = 3

INPUTS = [{"task": f"cycle count zone {z}", "zone": z, "bins": list(b)} for z, b in ZONES.items()]

CASES = [
    {"id": "zzzzp_cc_prefix_bins", "input": 0, "fault_kind": "wrong_retrieval",
     "root": ("get_transactions", 1, "retrieval"), "failure": ("approve_count", 1),
     "description": "get_transactions matches bins by prefix, so A-1's search returns A-10's unposted transfer TR-5510, the model explains A-1's -4 with it, and approval finds the explanation cites another bin."},
    {"id": "zzzzp_cc_night_book", "input": 1, "fault_kind": "stale_data",
     "root": ("get_book_qty", 3, "tool"), "failure": ("post_adjustments", 1),
     "description": "get_book_qty answers B-3 from last night's snapshot (28, before receipt RC-7781), so a +12 adjustment is proposed and the posting service refuses it against the live book of 40."},
    {"id": "zzzzp_cc_plan_skip", "input": 2, "fault_kind": "plan_error",
     "root": ("plan_count", 1, "llm"), "failure": ("approve_count", 1),
     "description": "the count-planning model plans zone C as C-1 to C-4 and leaves out C-5, and approval refuses a zone count with an uncounted bin."},
    {"id": "zzzzp_cc_upload_drop", "input": 3, "fault_kind": "swallowed_error",
     "root": ("scan_bin", 3, "tool"), "failure": ("post_adjustments", 1),
     "description": "scan_bin catches the handheld's failed upload for D-3 and answers a count of 0, so an adjustment of -24 LED bulbs is proposed and the posting service refuses it against the live book of 24."},
    {"id": "zzzzp_cc_txn_limit", "input": 4, "fault_kind": "truncated_result",
     "root": ("get_transactions", 1, "retrieval"), "failure": ("post_adjustments", 1),
     "description": "get_transactions returns the first 2 of E-2's 4 recent transactions, so the damage DM-0412 is never seen, the model leaves -4 unexplained, and the posting service refuses an adjustment that the day's unposted movements do not support."},
]

PLANNER = "Plan a zone cycle count: answer JSON {bins: [...]} listing every bin of the zone in walking order."
EXPLAINER = "Explain a bin's count variance from its recent transactions. Answer JSON {bin, explained_by: [ids], unexplained_qty, action}."


def brain(request):
    sysmsg, data = system_of(request), json.loads(user_of(request) or "{}")
    if sysmsg.startswith("Plan a zone cycle count"):
        bins = sorted(data["bins"], key=lambda b: int(b.split("-")[1]))
        if _on("zzzzp_cc_plan_skip"):
            bins = [b for b in bins if int(b.split("-")[1]) <= 4]  # 'four bays per zone'
        return json.dumps({"bins": bins})
    if sysmsg.startswith("Explain a bin's count variance"):
        left, used = data["variance"], []
        for t in data["transactions"]:
            if t["posted"]:
                continue
            if (left < 0 and t["qty"] < 0 and t["qty"] >= left) or (left > 0 and t["qty"] > 0 and t["qty"] <= left):
                used.append(t["id"])
                left -= t["qty"]
        for t in data["transactions"]:  # netting pairs
            if not t["posted"] and t["id"] not in used and left and (left - t["qty"]) * left >= 0:
                used.append(t["id"])
                left -= t["qty"]
        action = "none" if left == 0 else "adjust"
        return json.dumps({"bin": data["bin"], "explained_by": used, "unexplained_qty": left, "action": action})
    return "OK"


def run(inp: dict, path: str) -> None:
    rec = OtlpRecorder(NAME, inp["task"])
    zone = ZONES[inp["zone"]]
    try:
        with rec.root(inp):
            answer = rec.llm("plan_count", [{"role": "system", "content": PLANNER},
                                            {"role": "user", "content": json.dumps({"zone": inp["zone"], "bins": inp["bins"]})}])
            with rec.span("parse_plan", "parse", {"content": answer["content"]}) as s:
                s.output = plan = json.loads(answer["content"])["bins"]
            counted, explanations = {}, []
            for b in plan:
                sku, live, real = zone[b]
                with rec.span("get_book_qty", "tool", {"bin": b}) as s:
                    book = SNAPSHOT.get(b, live) if _on("zzzzp_cc_night_book") else live
                    s.output = {"bin": b, "sku": sku, "book_qty": book}
                book = s.output
                with rec.span("scan_bin", "tool", {"bin": b, "device": "HH-12"}) as s:
                    try:
                        if b == "D-3" and _on("zzzzp_cc_upload_drop"):
                            raise ConnectionError("handheld HH-12 upload failed: 0 of 24 scans received")
                        s.output = {"bin": b, "sku": sku, "counted": real}
                    except ConnectionError:
                        s.output = {"bin": b, "sku": sku, "counted": 0}
                scan = s.output
                with rec.span("compare", "other", {"book": book, "scan": scan}) as s:
                    s.output = cmp = {"bin": b, "sku": sku, "variance": scan["counted"] - book["book_qty"], "counted": scan["counted"]}
                counted[b] = cmp
                if cmp["variance"] == 0:
                    continue
                with rec.span("get_transactions", "retrieval", {"bin": b, "days": 2}) as s:
                    if _on("zzzzp_cc_prefix_bins"):
                        hits = [t for t in TRANSACTIONS if t["bin"].startswith(b)]
                    else:
                        hits = [t for t in TRANSACTIONS if t["bin"] == b]
                    if _on("zzzzp_cc_txn_limit"):
                        hits = hits[:2]
                    s.output = [{**t, "posted": t["id"] not in UNPOSTED} for t in hits]
                txns = s.output
                msg = rec.llm("explain_variance", [{"role": "system", "content": EXPLAINER}, {"role": "user", "content": json.dumps(
                    {"bin": b, "sku": sku, "variance": cmp["variance"], "transactions": txns})}])
                with rec.span("parse_explanation", "parse", {"content": msg["content"]}) as s:
                    s.output = ex = json.loads(msg["content"])
                explanations.append(ex)
            adjustments = [{"bin": e["bin"], "qty": e["unexplained_qty"]} for e in explanations if e["action"] == "adjust"]
            with rec.span("post_adjustments", "tool", {"adjustments": adjustments}) as s:
                for a in adjustments:
                    sku, live, real = zone[a["bin"]]
                    net = sum(t["qty"] for t in TRANSACTIONS if t["bin"] == a["bin"] and t["id"] in UNPOSTED)
                    if live + net + a["qty"] != real:
                        raise ValueError(f"inventory: adjusting {a['bin']} by {a['qty']:+d} leaves book {live + net + a['qty']}, counted {real}")
                    if a["qty"] < -AUTO_LIMIT:
                        raise ValueError(f"inventory: shrink of {-a['qty']} units of {sku} at {a['bin']} needs manager approval (auto limit {AUTO_LIMIT})")
                s.output = {"posted": len(adjustments), "doc": f"ADJ-{inp['zone']}-0320"}
            with rec.span("approve_count", "condition", {"zone": inp["zone"], "counted": list(counted), "explanations": explanations}) as s:
                missing = [b for b in zone if b not in counted]
                if missing:
                    raise ValueError(f"zone {inp['zone']}: bins {', '.join(missing)} not counted")
                for e in explanations:
                    for tid in e["explained_by"]:
                        t = next(t for t in TRANSACTIONS if t["id"] == tid)
                        if t["bin"] != e["bin"]:
                            raise ValueError(f"zone {inp['zone']}: {e['bin']} variance explained by {tid}, a movement of bin {t['bin']}")
                s.output = {"zone": inp["zone"], "approved": True}
    finally:
        Path(path).write_text(json.dumps(rec.document()))
