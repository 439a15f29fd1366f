"""A parchment maker's skin lots: OpenInference-instrumented openai calls and spans of our own, exported as
OTLP JSON.  A long loop over the skins of a lot: each skin measured, graded by the model, its grade parsed.

Shape: skin_lot (AGENT) > receive_lot -> skin_register (TOOL) -> farm_contract (RETRIEVER) -> per skin:
thickness_reading (TOOL), ChatCompletion (LLM), parse_grade (CHAIN) -> sort_skins -> order_match (TOOL) ->
issue_certificate (CHAIN, the certificate check).  About 25-45 spans.
"""

from __future__ import annotations

import json
import re

from zd_common import client, last_user, otel, payload, span


NAME = "parchment-skinlots"
SHORT = "parchment"
ROUTE = "otlp"
DOMAIN = "parchment maker's skin lots"
SHAPE = "OTLP: per-skin loop (tool, model, parser) over 6-10 skins, retriever, order match tool, certificate check; 25-37 spans"

GRADE_FIRST_LETTER = False
REGISTER_FIRST_PAGE = False
SORT_FROM_SECOND_ID = False
CONTRACT_NEAREST_FARM = False
GRADE_DECIMAL_COMMA = False
SWITCHES = [
    "GRADE_FIRST_LETTER",
    "REGISTER_FIRST_PAGE",
    "SORT_FROM_SECOND_ID",
    "CONTRACT_NEAREST_FARM",
    "GRADE_DECIMAL_COMMA",
]

CONTRACTS = [
    {"id": "doc-hollin", "farm": "Hollin Farm", "species": "goat", "price_per_skin": 9.0},
    {"id": "doc-hollins", "farm": "Hollins Farm", "species": "calf", "price_per_skin": 22.0},
    {"id": "doc-braes", "farm": "Braeside", "species": "sheep", "price_per_skin": 7.5},
    {"id": "doc-tarn", "farm": "Tarnside", "species": "calf", "price_per_skin": 21.0},
    {"id": "doc-wold", "farm": "Wold End", "species": "goat", "price_per_skin": 9.5},
]


def _skins(lot, n, seed):
    out = []
    for i in range(1, n + 1):
        spread = [20, 40, 30, 70, 50, 20, 40, 60, 30, 20][(i + seed) % 10]
        base = 260 + ((i * seed) % 3) * 10
        microns = [base, base + spread // 2, base + spread, base + spread // 4, base + spread // 3]
        out.append(
            {
                "skin": f"{lot}-{i:02d}",
                "area_sqft": round(4.0 + ((seed + i * 3) % 7) * 0.5, 1),
                "marks": ["vein marks"] if (seed + i) % 4 == 0 else [],
                "microns": microns,
            }
        )
    return out


LOTS = {
    "PL-77": {"farm": "Hollins Farm", "species": "calf", "skins": _skins("PL-77", 10, 1)},
    "PL-78": {"farm": "Braeside", "species": "sheep", "skins": _skins("PL-78", 6, 2)},
    "PL-79": {"farm": "Tarnside", "species": "calf", "skins": _skins("PL-79", 8, 3)},
    "PL-80": {"farm": "Wold End", "species": "goat", "skins": _skins("PL-80", 7, 4)},
    "PL-81": {"farm": "Hollins Farm", "species": "calf", "skins": _skins("PL-81", 9, 5)},
}
ORDERS = {
    "PL-77": ("SC-10", 3),
    "PL-78": ("SC-11", 1),
    "PL-79": ("SC-12", 2),
    "PL-80": ("SC-13", 2),
    "PL-81": ("SC-14", 3),
}
FOLIO_MAX_MICRONS = 320

INPUTS = [
    {"manifest": f"Lot {lot}: {len(v['skins'])} {v['species']} skins from {v['farm']}, limed 9 days"}
    for lot, v in LOTS.items()
]

CASES = [
    {
        "input": 1,
        "switch": "GRADE_FIRST_LETTER",
        "fault_kind": "lossy_parsing",
        "root": ("parse_grade", 4, "other"),
        "failure": ("issue_certificate", 1),
        "description": "The grade parser kept only the first letter of the inspector's grade and read A- as A.",
    },
    {
        "input": 0,
        "switch": "REGISTER_FIRST_PAGE",
        "fault_kind": "truncated_result",
        "root": ("skin_register", 1, "tool"),
        "failure": ("issue_certificate", 1),
        "description": "The skin register answered its first page of 8 skins for a lot of 10.",
    },
    {
        "input": 4,
        "switch": "SORT_FROM_SECOND_ID",
        "fault_kind": "off_by_one",
        "root": ("sort_skins", 1, "other"),
        "failure": ("order_match", 1),
        "description": "Sorting paired each grade with the next skin's id, so every skin carried its "
        "neighbour's grade.",
    },
    {
        "input": 3,
        "switch": "CONTRACT_NEAREST_FARM",
        "fault_kind": "wrong_retrieval",
        "root": ("farm_contract", 1, "retrieval"),
        "failure": ("issue_certificate", 1),
        "description": "The contract search returned Braeside's sheep contract for Wold End's goat lot.",
    },
    {
        "input": 2,
        "switch": "GRADE_DECIMAL_COMMA",
        "fault_kind": "format_drift",
        "root": ("ChatCompletion", 5, "llm"),
        "failure": ("parse_grade", 5),
        "description": "The grading model wrote the usable area with a decimal comma for skin PL-79-05.",
    },
]


def policy(request):
    prompt = last_user(request)
    if prompt.startswith("Grade"):
        s = payload(prompt)
        thin, thick = min(s["microns"]), max(s["microns"])
        grade = "A" if thick - thin <= 40 and not s["marks"] else ("B" if thick - thin <= 60 else "C")
        if grade == "A" and thick - thin == 40:
            grade = "A-"
        area = s["area_sqft"] - (0.5 if s["marks"] else 0)
        area_text = str(area).replace(".", ",") if GRADE_DECIMAL_COMMA and s["skin"] == "PL-79-05" else area
        return json.dumps(
            {
                "skin": s["skin"],
                "grade": grade,
                "usable_area_sqft": area_text,
                "max_microns": thick,
                "note": "even nap" if grade.startswith("A") else "uneven",
            }
        )
    return "{}"


def record(inp, path, server):
    ot = otel()
    tr = ot.tracer("parchment-works")
    llm = client(server)
    try:
        with span(tr, NAME, "AGENT", inp["manifest"]) as top:
            with span(tr, "receive_lot", "CHAIN", inp["manifest"]) as s:
                m = re.match(r"Lot (\S+): (\d+) (\w+) skins from (.+?), limed (\d+) days", inp["manifest"])
                lot = s.out(
                    {
                        "lot": m.group(1),
                        "count": int(m.group(2)),
                        "species": m.group(3),
                        "farm": m.group(4),
                        "lime_days": int(m.group(5)),
                    }
                )
            with span(tr, "skin_register", "TOOL", {"lot": lot["lot"]}) as s:
                skins = LOTS[lot["lot"]]["skins"]
                skins = s.out(skins[:8] if REGISTER_FIRST_PAGE else skins)
            with span(tr, "farm_contract", "RETRIEVER", {"farm": lot["farm"]}) as s:
                if CONTRACT_NEAREST_FARM:
                    doc = min(CONTRACTS, key=lambda d: abs(len(d["farm"]) - len(lot["farm"])))
                else:
                    doc = next(d for d in CONTRACTS if d["farm"] == lot["farm"])
                s.sp.set_attribute("retrieval.documents.0.document.id", doc["id"])
                s.sp.set_attribute("retrieval.documents.0.document.content", json.dumps(doc))
                contract = s.out([doc])[0]
            grades, raw = [], {}
            for skin in skins:
                with span(tr, "thickness_reading", "TOOL", {"skin": skin["skin"]}) as s:
                    reading = s.out({"skin": skin["skin"], "microns": skin["microns"]})
                reply = (
                    llm.chat.completions.create(
                        model="fake-model",
                        messages=[
                            {
                                "role": "system",
                                "content": "You are the vellum inspector. Grade the skin A, A-, B or C and "
                                "give the usable area in square feet, as JSON.",
                            },
                            {
                                "role": "user",
                                "content": "Grade "
                                + json.dumps(
                                    {
                                        "skin": skin["skin"],
                                        "area_sqft": skin["area_sqft"],
                                        "marks": skin["marks"],
                                        "microns": reading["microns"],
                                    }
                                ),
                            },
                        ],
                    )
                    .choices[0]
                    .message.content
                )
                with span(tr, "parse_grade", "CHAIN", reply) as s:
                    g = json.loads(reply)
                    raw[g["skin"]] = g["grade"]
                    grade = g["grade"][0] if GRADE_FIRST_LETTER else g["grade"]
                    grades.append(
                        s.out(
                            {
                                "skin": g["skin"],
                                "grade": grade,
                                "usable_area_sqft": float(g["usable_area_sqft"]),
                                "max_microns": g["max_microns"],
                            }
                        )
                    )
            with span(tr, "sort_skins", "CHAIN", grades) as s:
                ids = [g["skin"] for g in grades]
                if SORT_FROM_SECOND_ID:
                    ids = ids[1:] + ids[:1]
                bins = {"A": [], "A-": [], "B": [], "C": []}
                for sid, g in zip(ids, grades):
                    bins[g["grade"]].append(
                        {
                            "skin": sid,
                            "max_microns": g["max_microns"],
                            "usable_area_sqft": g["usable_area_sqft"],
                        }
                    )
                bins = s.out(bins)
            order, wanted = ORDERS[lot["lot"]]
            with span(
                tr, "order_match", "TOOL", {"order": order, "folio_skins": wanted, "grade_a": bins["A"]}
            ) as s:
                picked = []
                for sk in (bins["A"] + bins["A-"])[:wanted]:
                    measured = next(x for x in skins if x["skin"] == sk["skin"])
                    if max(measured["microns"]) > FOLIO_MAX_MICRONS:
                        raise ValueError(
                            f"skin {sk['skin']} reserved for order {order} measures "
                            f"{max(measured['microns'])} microns, over the {FOLIO_MAX_MICRONS} folio limit"
                        )
                    picked.append(sk["skin"])
                s.out({"order": order, "skins": picked})
            with span(
                tr, "issue_certificate", "CHAIN", {"lot": lot, "contract": contract["id"], "bins": bins}
            ) as s:
                counted = sum(len(v) for v in bins.values())
                if counted != lot["count"]:
                    raise ValueError(
                        f"certificate covers {counted} skins; lot {lot['lot']} was received with {lot['count']}"
                    )
                if contract["species"] != lot["species"]:
                    raise ValueError(
                        f"certificate would read {contract['species']} vellum from the {contract['farm']} "
                        f"contract; lot {lot['lot']} was received as {lot['species']} from {lot['farm']}"
                    )
                for grade, items in bins.items():
                    for it in items:
                        if raw[it["skin"]] != grade:
                            raise ValueError(
                                f"skin {it['skin']} certified {grade}, inspected {raw[it['skin']]}"
                            )
                s.out({"certificate": f"CV-{lot['lot']}", "skins": counted, "species": contract["species"]})
            top.out({"lot": lot["lot"], "certificate": f"CV-{lot['lot']}"})
    except Exception:  # noqa: BLE001
        pass
    ot.write(path)
