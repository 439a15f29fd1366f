"""Medical gases: the morning oxygen cylinder round and the bulk tank (route: otlp).

Traced with the OpenTelemetry SDK and OpenInference attributes (the OpenAI client instrumented by
openinference-instrumentation-openai), exported as OTLP JSON. The agent reads the round sheet and the
VIE (bulk liquid oxygen tank) telemetry, asks the model to order the round, parses the plan, then for
each ward reads the barcode census of its cylinders, asks the model what to deliver and collect, and
writes the ward into its round log. It works out the tank's days of supply, retrieves the cylinder
product from the supplier catalogue, places the order, and the estates pharmacist's sign-off check
reconciles the round before it is filed.
"""

from __future__ import annotations

import json
from typing import Any

from .common import dumps, last_user_json, otlp_chat, otlp_run, oi_attrs, set_output, system_text, traced

NAME = "medgas-cylinder-rounds"
ROUTE = "otlp"
DOMAIN = "medical gases: the morning ward oxygen-cylinder round and the bulk liquid-oxygen tank"
SHAPE = (
    "OTel/OpenInference: agent span; round-sheet and tank-telemetry tools, planning model call, plan parser, "
    "per-ward loop (census tool, assessing model call, round-log write), days-of-supply step, catalogue "
    "retriever, order tool, sign-off check; 21 steps per passing run"
)

SWITCH: str | None = None


def _case(key: str) -> bool:
    """The one place the case switch is read."""
    return SWITCH == key


WARDS = {
    "ED resus": {"points": 3, "min_full": 3},
    "Ward 4A": {"points": 4, "min_full": 4},
    "Ward 6C": {"points": 2, "min_full": 2},
    "Ward 9 (children)": {"points": 2, "min_full": 2},
    "Recovery": {"points": 3, "min_full": 3},
    "Ward 11": {"points": 2, "min_full": 2},
    "Endoscopy": {"points": 2, "min_full": 2},
}


def _c(full, in_use, empty, at):
    return {"full": full, "in_use": in_use, "empty": empty, "scanned_at": at}


# Today's barcode census per (date, ward) (the system of record).
CENSUS = {
    ("2025-03-10", "ED resus"): _c(1, 3, 2, "2025-03-10T07:31"),
    ("2025-03-10", "Ward 4A"): _c(2, 4, 3, "2025-03-10T07:44"),
    ("2025-03-10", "Ward 6C"): _c(2, 2, 0, "2025-03-10T07:52"),
    ("2025-03-10", "Recovery"): _c(3, 1, 1, "2025-03-10T08:03"),
    ("2025-03-11", "ED resus"): _c(2, 3, 1, "2025-03-11T07:29"),
    ("2025-03-11", "Ward 6C"): _c(1, 3, 2, "2025-03-11T07:40"),
    ("2025-03-11", "Ward 9 (children)"): _c(2, 1, 0, "2025-03-11T07:48"),
    ("2025-03-11", "Ward 11"): _c(0, 2, 2, "2025-03-11T07:58"),
    ("2025-03-12", "ED resus"): _c(3, 2, 1, "2025-03-12T07:35"),
    ("2025-03-12", "Ward 4A"): _c(1, 4, 4, "2025-03-12T07:46"),
    ("2025-03-12", "Endoscopy"): _c(2, 0, 1, "2025-03-12T07:55"),
    ("2025-03-12", "Ward 11"): _c(1, 2, 1, "2025-03-12T08:06"),
    ("2025-03-13", "ED resus"): _c(2, 2, 2, "2025-03-13T07:30"),
    ("2025-03-13", "Recovery"): _c(1, 2, 3, "2025-03-13T07:41"),
    ("2025-03-13", "Ward 6C"): _c(2, 1, 1, "2025-03-13T07:50"),
    ("2025-03-13", "Ward 9 (children)"): _c(1, 2, 1, "2025-03-13T08:01"),
    ("2025-03-14", "ED resus"): _c(2, 3, 1, "2025-03-14T07:33"),
    ("2025-03-14", "Ward 4A"): _c(3, 4, 1, "2025-03-14T07:45"),
    ("2025-03-14", "Ward 6C"): _c(0, 2, 3, "2025-03-14T07:53"),
    ("2025-03-14", "Endoscopy"): _c(1, 1, 1, "2025-03-14T08:02"),
}
# What the handheld last synced for Ward 6C before the 14th's round (the afternoon of the 13th).
LAST_SYNC = {("2025-03-14", "Ward 6C"): _c(2, 2, 1, "2025-03-13T16:05")}

# The tank: the supplier's telemetry portal (percent full) and the contents gauge's raw reading (inches H2O).
TANK = {
    "2025-03-10": {"pct": 70.0, "history": [100.0, 94.0, 88.0, 82.0, 76.0, 70.0], "gauge_inh2o": 166},
    "2025-03-11": {"pct": 64.0, "history": [94.0, 88.0, 82.0, 76.0, 70.0, 64.0], "gauge_inh2o": 152},
    "2025-03-12": {"pct": 31.0, "history": [62.0, 56.0, 50.0, 44.0, 37.0, 31.0], "gauge_inh2o": 78},
    "2025-03-13": {"pct": 49.0, "history": [91.0, 84.0, 77.0, 70.0, 63.0, 56.0, 49.0], "gauge_inh2o": 118},
    "2025-03-14": {"pct": 81.0, "history": [57.0, 51.0, 45.0, 97.0, 89.0, 81.0], "gauge_inh2o": 193},
}
REORDER_PCT = 35.0
LEAD_DAYS = 2

CATALOGUE = [
    {
        "id": "1002-O2-CD",
        "content": "Medical oxygen, CD integral-valve cylinder, 460 L, 137 bar, ward points",
        "metadata": {"gas": "oxygen", "size": "CD", "orders_90d": 1210},
    },
    {
        "id": "1011-AIR-CD",
        "content": "Medical air, CD integral-valve cylinder, 460 L, 137 bar",
        "metadata": {"gas": "air", "size": "CD", "orders_90d": 1840},
    },
    {
        "id": "1003-O2-HX",
        "content": "Medical oxygen, HX integral-valve cylinder, 2300 L, 230 bar, theatres",
        "metadata": {"gas": "oxygen", "size": "HX", "orders_90d": 310},
    },
    {
        "id": "1040-N2O-O2-ED",
        "content": "Nitrous oxide/oxygen 50:50, ED cylinder, 680 L",
        "metadata": {"gas": "nitrous oxide/oxygen", "size": "ED", "orders_90d": 95},
    },
]

INPUTS = [
    {
        "id": "mon",
        "task": "oxygen cylinder round and bulk tank check, Monday 10 March",
        "request": {
            "site": "St Bede's main site",
            "date": "2025-03-10",
            "wards": ["Ward 4A", "ED resus", "Ward 6C", "Recovery"],
        },
    },
    {
        "id": "tue",
        "task": "oxygen cylinder round and bulk tank check, Tuesday 11 March",
        "request": {
            "site": "St Bede's main site",
            "date": "2025-03-11",
            "wards": ["ED resus", "Ward 6C", "Ward 9 (children)", "Ward 11"],
        },
    },
    {
        "id": "wed",
        "task": "oxygen cylinder round and bulk tank check, Wednesday 12 March",
        "request": {
            "site": "St Bede's main site",
            "date": "2025-03-12",
            "wards": ["Ward 11", "ED resus", "Ward 4A", "Endoscopy"],
        },
    },
    {
        "id": "thu",
        "task": "oxygen cylinder round and bulk tank check, Thursday 13 March",
        "request": {
            "site": "St Bede's main site",
            "date": "2025-03-13",
            "wards": ["Recovery", "Ward 6C", "ED resus", "Ward 9 (children)"],
        },
    },
    {
        "id": "fri",
        "task": "oxygen cylinder round and bulk tank check, Friday 14 March",
        "request": {
            "site": "St Bede's main site",
            "date": "2025-03-14",
            "wards": ["Ward 6C", "ED resus", "Endoscopy", "Ward 4A"],
        },
    },
]

CASES = [
    {
        "case": "medgas_catalogue_air",
        "input": "mon",
        "switch": "popularity_ranking",
        "fault_kind": "wrong_retrieval",
        "root": ("supplier_catalogue", 1),
        "failure": ("place_order", 1),
        "description": "The catalogue retriever ranked CD cylinders by how often they are ordered, putting the "
        "medical-air CD above the oxygen one, and the agent ordered the top hit; the order service "
        "refuses air cylinders for ward oxygen points.",
    },
    {
        "case": "medgas_round_log_swap",
        "input": "tue",
        "switch": "log_in_use_as_full",
        "fault_kind": "bad_memory_write",
        "root": ("record_ward", 1),
        "failure": ("round_sign_off", 1),
        "description": "Writing each ward into the round log, the agent stored the in-use count as full cylinders and "
        "the full count as in use, starting with ED resus (3 in use logged as full); the order is right, "
        "but the sign-off's reconciliation with the barcode census finds the log does not match.",
    },
    {
        "case": "medgas_gauge_inches",
        "input": "wed",
        "switch": "gauge_reading",
        "fault_kind": "unit_error",
        "root": ("vie_telemetry", 1),
        "failure": ("round_sign_off", 1),
        "description": "The tank telemetry returned the contents gauge's raw reading, 78 inches of water, as the "
        "percentage full; the tank looks well stocked, no bulk delivery is booked, and the sign-off "
        "finds it at 31% against a 35% reorder point.",
    },
    {
        "case": "medgas_usage_fencepost",
        "input": "thu",
        "switch": "divide_by_readings",
        "fault_kind": "off_by_one",
        "root": ("days_of_supply", 1),
        "failure": ("round_sign_off", 1),
        "description": "The days-of-supply step divided the fall over seven daily readings by seven instead of six "
        "intervals, so usage reads 6%/day instead of 7 and the tank seems 2.3 days from its reorder "
        "point; no bulk delivery is booked and the sign-off catches it at exactly the 2-day lead time.",
    },
    {
        "case": "medgas_handheld_sync",
        "input": "fri",
        "switch": "last_synced_scan",
        "fault_kind": "stale_data",
        "root": ("cylinder_census", 2),
        "failure": ("round_sign_off", 1),
        "description": "The census tool answered Ward 6C with the handheld's last synced scan from the previous "
        "afternoon (2 full) instead of this morning's (0 full); the model plans no delivery there and "
        "the sign-off rejects a census not from today's round.",
    },
]


# --- tools and steps ------------------------------------------------------------------------------


def round_sheet(site: str, date: str, wards: list) -> dict:
    return {"site": site, "date": date, "points": [{"ward": w, **WARDS[w]} for w in wards]}


def vie_telemetry(site: str, date: str) -> dict:
    t = TANK[date]
    contents = float(t["gauge_inh2o"]) if _case("gauge_reading") else t["pct"]
    return {
        "tank": "VIE-1",
        "contents_pct": contents,
        "daily_pct": t["history"],
        "reorder_pct": REORDER_PCT,
        "delivery_lead_days": LEAD_DAYS,
    }


def parse_round_plan(text: str) -> list:
    plan = json.loads(text)
    return [w["ward"] for w in plan["round"]]


def cylinder_census(ward: str, date: str) -> dict:
    scan = CENSUS[(date, ward)]
    if _case("last_synced_scan") and (date, ward) in LAST_SYNC:
        scan = LAST_SYNC[(date, ward)]
    return {"ward": ward, "size": "CD", **scan}


def record_ward(log: dict, census: dict, decision: dict) -> dict:
    if _case("log_in_use_as_full"):
        counts = {"full": census["in_use"], "in_use": census["full"], "empty": census["empty"]}
    else:
        counts = {"full": census["full"], "in_use": census["in_use"], "empty": census["empty"]}
    entry = {
        "ward": census["ward"],
        **counts,
        "scanned_at": census["scanned_at"],
        "deliver_full": decision["deliver_full"],
        "collect_empty": decision["collect_empty"],
    }
    log[census["ward"]] = entry
    return entry


def days_of_supply(contents_pct: float, daily_pct: list, reorder_pct: float, lead_days: int) -> dict:
    falls = [a - b for a, b in zip(daily_pct, daily_pct[1:]) if a >= b]  # a refill day is not usage
    intervals = len(falls) + 1 if _case("divide_by_readings") else len(falls)
    usage = round(sum(falls) / intervals, 2)
    days = round((contents_pct - reorder_pct) / usage, 2)
    return {"usage_pct_per_day": usage, "days_to_reorder": days, "book_bulk": days <= lead_days}


def supplier_catalogue(query: str) -> list:
    words = set(query.lower().replace(",", " ").split())

    def score(doc: dict) -> float:
        text = set(doc["content"].lower().replace(",", " ").split())
        overlap = len(words & text) / len(words)
        if _case("popularity_ranking"):  # size match first, then how often the product is ordered
            return round(
                (doc["metadata"]["size"].lower() in words) + doc["metadata"]["orders_90d"] / 10000, 3
            )
        return round(overlap + (0.5 if doc["metadata"]["gas"] in query.lower() else 0.0), 3)

    ranked = sorted(CATALOGUE, key=score, reverse=True)[:3]
    return [
        {"id": d["id"], "content": d["content"], "score": score(d), "metadata": d["metadata"]} for d in ranked
    ]


def place_order(product_code: str, quantity: int, wards: list, bulk_delivery: bool, date: str) -> dict:
    doc = next(d for d in CATALOGUE if d["id"] == product_code)
    if doc["metadata"]["gas"] != "oxygen" or doc["metadata"]["size"] != "CD":
        raise ValueError(
            f"order refused: {product_code} ({doc['content'][:40]}) is not the CD oxygen cylinder the "
            f"ward points take"
        )
    return {
        "order": f"SO-{date.replace('-', '')}-07",
        "product_code": product_code,
        "quantity": quantity,
        "wards": wards,
        "bulk_delivery": bulk_delivery,
        "status": "accepted",
    }


def round_sign_off(date: str, log: dict, supply: dict, order: dict) -> dict:
    for ward, entry in log.items():
        if not entry["scanned_at"].startswith(date):
            raise ValueError(
                f"sign-off: {ward} census scanned {entry['scanned_at']}, not on today's round ({date})"
            )
    for ward, entry in log.items():
        live = CENSUS[(date, ward)]
        if (entry["full"], entry["in_use"], entry["empty"]) != (live["full"], live["in_use"], live["empty"]):
            raise ValueError(
                f"sign-off: round log for {ward} has {entry['full']} full / {entry['in_use']} in use / "
                f"{entry['empty']} empty; barcode census {live['scanned_at'][11:]} has {live['full']} / "
                f"{live['in_use']} / {live['empty']}"
            )
    t = TANK[date]
    falls = [a - b for a, b in zip(t["history"], t["history"][1:]) if a >= b]
    usage = sum(falls) / len(falls)
    days = (t["pct"] - REORDER_PCT) / usage
    if days <= 0 and not order["bulk_delivery"]:
        raise ValueError(
            f"sign-off: VIE-1 at {t['pct']}% is below its {REORDER_PCT}% reorder point; no bulk "
            f"delivery booked"
        )
    if days <= LEAD_DAYS and not order["bulk_delivery"]:
        raise ValueError(
            f"sign-off: VIE-1 at {t['pct']}% falling {usage:.1f}%/day reaches its {REORDER_PCT}% "
            f"reorder point in {days:.1f} days (lead time {LEAD_DAYS} days); no bulk delivery booked"
        )
    for ward, entry in log.items():
        if entry["full"] + entry["deliver_full"] < WARDS[ward]["min_full"]:
            raise ValueError(
                f"sign-off: {ward} below its minimum of {WARDS[ward]['min_full']} full cylinders"
            )
    return {"date": date, "signed_off": True, "wards": len(log), "order": order["order"]}


PLAN_SYSTEM = (
    "You plan the medical gas porter's morning oxygen round. Emergency areas first, then wards in "
    'the order given. Answer JSON {"round": [{"ward": name, "reason": text}]}.'
)
ASSESS_SYSTEM = (
    "You decide cylinder swaps for one ward. Deliver enough full CD cylinders to bring the ward up "
    'to its minimum, collect every empty. Answer JSON {"ward", "deliver_full", "collect_empty"}.'
)


def agent(req: dict, task: str, tracer: Any, client: Any, model: str) -> dict:
    with tracer.start_as_current_span(
        NAME, attributes=oi_attrs("AGENT", req, metadata=json.dumps({"task": task}), agent__name=NAME)
    ) as top:
        sheet = traced(tracer, "round_sheet", "TOOL", round_sheet, req)
        tank = traced(
            tracer, "vie_telemetry", "TOOL", vie_telemetry, {"site": req["site"], "date": req["date"]}
        )
        plan = otlp_chat(
            client,
            model,
            [{"role": "system", "content": PLAN_SYSTEM}, {"role": "user", "content": dumps(sheet)}],
        )
        wards = traced(tracer, "parse_round_plan", "CHAIN", parse_round_plan, {"text": plan["content"]})
        log: dict[str, dict] = {}
        for ward in wards:
            census = traced(
                tracer, "cylinder_census", "TOOL", cylinder_census, {"ward": ward, "date": req["date"]}
            )
            msg = otlp_chat(
                client,
                model,
                [
                    {"role": "system", "content": ASSESS_SYSTEM},
                    {
                        "role": "user",
                        "content": dumps({"census": census, "min_full": WARDS[ward]["min_full"]}),
                    },
                ],
            )
            decision = json.loads(msg["content"])
            with tracer.start_as_current_span(
                "record_ward", attributes=oi_attrs("CHAIN", {"census": census, "decision": decision})
            ) as span:
                set_output(span, record_ward(log, census, decision))
        supply = traced(
            tracer,
            "days_of_supply",
            "CHAIN",
            days_of_supply,
            {k: tank[k] for k in ("contents_pct", "daily_pct", "reorder_pct")}
            | {"lead_days": tank["delivery_lead_days"]},
        )
        with tracer.start_as_current_span(
            "supplier_catalogue",
            attributes=oi_attrs("RETRIEVER", "medical oxygen CD cylinder 460 L for ward points"),
        ) as span:
            docs = supplier_catalogue("medical oxygen CD cylinder 460 L for ward points")
            for i, d in enumerate(docs):
                span.set_attribute(f"retrieval.documents.{i}.document.id", d["id"])
                span.set_attribute(f"retrieval.documents.{i}.document.content", d["content"])
                span.set_attribute(f"retrieval.documents.{i}.document.score", d["score"])
                span.set_attribute(f"retrieval.documents.{i}.document.metadata", json.dumps(d["metadata"]))
        quantity = sum(e["deliver_full"] for e in log.values())
        order = traced(
            tracer,
            "place_order",
            "TOOL",
            place_order,
            {
                "product_code": docs[0]["id"],
                "quantity": quantity,
                "wards": [w for w, e in log.items() if e["deliver_full"]],
                "bulk_delivery": supply["book_bulk"],
                "date": req["date"],
            },
        )
        signed = traced(
            tracer,
            "round_sign_off",
            "EVALUATOR",
            round_sign_off,
            {"date": req["date"], "log": log, "supply": supply, "order": order},
        )
        return set_output(top, signed)


def record(inp: dict, path: str, ctx: Any) -> None:
    with otlp_run(NAME, path) as tracer:
        try:
            agent(inp["request"], inp["task"], tracer, ctx.client, ctx.model)
        except ValueError:
            pass


# --- the model --------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    system = system_text(request)
    data = last_user_json(request)
    if system == PLAN_SYSTEM:
        first = [p for p in data["points"] if p["ward"].startswith("ED")]
        rest = [p for p in data["points"] if not p["ward"].startswith("ED")]
        return json.dumps(
            {
                "round": [
                    {"ward": p["ward"], "reason": "emergency area first" if p in first else "round order"}
                    for p in first + rest
                ]
            }
        )
    if system == ASSESS_SYSTEM:
        c = data["census"]
        return json.dumps(
            {
                "ward": c["ward"],
                "deliver_full": max(0, data["min_full"] - c["full"]),
                "collect_empty": c["empty"],
            }
        )
    return "I cannot help with that."
