"""Orchid nursery export order (openai client instrumented by OpenInference, own OpenInference spans, OTLP/JSON).

An AGENT span around the order: a model loop gathers the order, the care sheets (RETRIEVER) and the stock
(parallel calls); code CHAIN spans parse each care sheet and allocate stock from the benches; TOOL spans
reserve plants and run the phytosanitary pre-inspection; a second model loop applies for CITES permits and
books the cold-chain courier; the export documents are submitted last.
"""

from __future__ import annotations

import json
import re
from typing import Any

from benchmarks.heldout.suite_o import kit


NAME = "orchid-nursery"
ROUTE = "otlp"
DOMAIN = "orchid nursery export orders"
SHAPE = "OTLP: AGENT root; model loop (order, RETRIEVER care sheets, stock; parallel calls); per line CHAIN parse + CHAIN allocate; TOOL reserve per pick; TOOL inspection; model loop (permits, courier); TOOL submission"

CARE = {
    "Phalaenopsis amabilis": (
        "cs-phal-021",
        "Phalaenopsis amabilis. Shipping min 16°C, max 30°C. CITES Appendix II.",
    ),
    "Paphiopedilum rothschildianum": (
        "cs-paph-307",
        "Paphiopedilum rothschildianum. Shipping min 14.5°C, max 28°C. CITES Appendix I.",
    ),
    "Phragmipedium longifolium": (
        "cs-phrag-114",
        "Phragmipedium longifolium. Shipping min 14°C, max 28°C. CITES Appendix II.",
    ),
    "Dendrobium kingianum": (
        "cs-dend-058",
        "Dendrobium kingianum. Shipping min 8°C, max 27°C. CITES Appendix II.",
    ),
    "Masdevallia veitchiana": (
        "cs-masd-212",
        "Masdevallia veitchiana. Shipping min 10.5°C, max 22°C. CITES Appendix II.",
    ),
    "Cattleya labiata": ("cs-catt-090", "Cattleya labiata. Shipping min 15°C, max 30°C. CITES Appendix II."),
}

BENCHES = {  # species -> [(bench, plants)], oldest first; B-07 is the quarantine bench
    "Phalaenopsis amabilis": [("B-03", 24), ("B-05", 30), ("B-07", 40)],
    "Paphiopedilum rothschildianum": [("B-11", 12), ("B-12", 10), ("B-07", 9)],
    "Dendrobium kingianum": [("B-02", 30), ("B-04", 25), ("B-07", 20)],
    "Masdevallia veitchiana": [("B-14", 18), ("B-15", 16), ("B-07", 12)],
    "Cattleya labiata": [("B-08", 22), ("B-09", 20), ("B-10", 18), ("B-07", 15)],
}
SOLD_SINCE_SNAPSHOT = {"B-09": 19}

ORDERS = {
    "ON-7781": {
        "ship_to": "Australia",
        "bill_to": "New Zealand",
        "ship_date": "2026-04-14",
        "lines": [("Phalaenopsis amabilis", 40), ("Dendrobium kingianum", 25)],
    },
    "ON-7790": {
        "ship_to": "Japan",
        "bill_to": "Japan",
        "ship_date": "2026-04-16",
        "lines": [("Paphiopedilum rothschildianum", 15), ("Cattleya labiata", 20)],
    },
    "ON-7802": {
        "ship_to": "Canada",
        "bill_to": "United States",
        "ship_date": "2026-04-20",
        "lines": [("Masdevallia veitchiana", 20), ("Dendrobium kingianum", 30)],
    },
    "ON-7815": {
        "ship_to": "Norway",
        "bill_to": "Norway",
        "ship_date": "2026-04-22",
        "lines": [("Cattleya labiata", 25), ("Phalaenopsis amabilis", 20)],
    },
    "ON-7823": {
        "ship_to": "Singapore",
        "bill_to": "Malaysia",
        "ship_date": "2026-04-24",
        "lines": [("Dendrobium kingianum", 18), ("Masdevallia veitchiana", 12)],
    },
    "ON-7831": {
        "ship_to": "Chile",
        "bill_to": "Chile",
        "ship_date": "2026-04-27",
        "lines": [("Phalaenopsis amabilis", 22), ("Paphiopedilum rothschildianum", 14)],
    },
}

INPUTS = {k.lower().replace("on-", "o"): {"order": k} for k in ORDERS}

FAULTS = [
    {
        "id": "orchid.care_search",
        "kind": "wrong_retrieval",
        "input": "o7790",
        "root": "search_care_sheets",
        "marker": "cs-phrag-114",
        "note": "the care-sheet search returns the Phragmipedium sheet for a Paphiopedilum",
    },
    {
        "id": "orchid.courier_country",
        "kind": "wrong_tool_args",
        "input": "o7781",
        "root": "ChatCompletion",
        "marker": "New Zealand",
        "note": "the model books the courier to the billing country",
    },
    {
        "id": "orchid.bench_loop",
        "kind": "off_by_one",
        "input": "o7831",
        "root": "allocate_stock",
        "marker": "B-07",
        "note": "the allocation loop starts at the second bench",
    },
    {
        "id": "orchid.stock_snapshot",
        "kind": "stale_data",
        "input": "o7815",
        "root": "get_stock",
        "marker": "2026-04-06T18:00",
        "note": "the stock service answers from last night's snapshot",
    },
    {
        "id": "orchid.temp_digits",
        "kind": "lossy_parsing",
        "input": "o7823",
        "root": "parse_care_sheet",
        "marker": "105.0",
        "note": "the care-sheet parser keeps only the digits of the minimum temperature",
    },
]

_RUN: dict[str, Any] = {}


def task(inp: dict) -> str:
    o = ORDERS[inp["order"]]
    return f"Fulfil export order {inp['order']} to {o['ship_to']} for {o['ship_date']}"


# -- the outside world -------------------------------------------------------------------------


def lookup_order(order: str) -> dict:
    o = ORDERS[order]
    return {
        "order": order,
        "ship_to": o["ship_to"],
        "bill_to": o["bill_to"],
        "ship_date": o["ship_date"],
        "lines": [{"species": s, "qty": q} for s, q in o["lines"]],
    }


def search_care_sheets(query: str) -> dict:
    species = query
    if kit.active("orchid.care_search") and query.startswith("Paphiopedilum"):
        species = "Phragmipedium longifolium"
    doc_id, text = CARE[species]
    return {"query": query, "documents": [{"id": doc_id, "content": text, "score": 0.91}]}


def get_stock(species: str) -> dict:
    date = _RUN["order"]["ship_date"]
    benches = BENCHES[species]
    if kit.active("orchid.stock_snapshot"):
        return {
            "species": species,
            "as_of": "2026-04-06T18:00",
            "benches": [{"bench": b, "plants": n} for b, n in benches],
        }
    return {
        "species": species,
        "as_of": f"{date[:8]}{int(date[8:]) - 7:02d}T07:30",
        "benches": [{"bench": b, "plants": n - SOLD_SINCE_SNAPSHOT.get(b, 0)} for b, n in benches],
    }


def reserve_plants(species: str, bench: str, plants: int) -> dict:
    live = dict(BENCHES[species])[bench] - SOLD_SINCE_SNAPSHOT.get(bench, 0)
    if plants > live:
        raise RuntimeError(f"inventory: 409 cannot hold {plants} plants on {bench}, {live} available")
    return {"species": species, "bench": bench, "held": plants, "hold": f"H-{bench[2:]}-{plants}"}


def phyto_preinspection(picks: list) -> dict:
    for p in picks:
        if p["bench"] == "B-07":
            raise RuntimeError(
                "plant health inspector: consignment includes plants from a bench under movement restriction"
            )
    return {"result": "pass", "benches": sorted({p["bench"] for p in picks})}


def apply_cites_permit(species: str, appendix: str, destination: str, qty: int) -> dict:
    return {
        "species": species,
        "appendix": appendix,
        "permit": f"CITES-{appendix}-{4400 + qty}",
        "destination": destination,
    }


def book_courier(destination: str, min_c: float, max_c: float, ship_date: str) -> dict:
    if not 0 <= min_c < max_c <= 35:
        raise RuntimeError(f"courier: 422 no service for a {min_c}-{max_c} C band")
    return {
        "courier": "ColdLink",
        "destination": destination,
        "band": f"{min_c}-{max_c} C",
        "awb": f"CL-{ship_date.replace('-', '')}",
    }


def submit_export_docs(order: str, destination: str, permits: list, courier: dict) -> dict:
    o = ORDERS[order]
    if courier["destination"] != o["ship_to"] or destination != o["ship_to"]:
        raise RuntimeError(
            "export portal: 422 air waybill destination differs from the phytosanitary certificate"
        )
    for p in permits:
        true_app = CARE[p["species"]][1].split("Appendix ")[1].rstrip(".")
        if p["appendix"] != true_app:
            raise RuntimeError(
                f"export portal: 422 permit class for {p['species']} does not match the CITES listing"
            )
    return {"status": "lodged", "ref": f"EXP-{order[3:]}"}


GATHER = {"lookup_order": lookup_order, "search_care_sheets": search_care_sheets, "get_stock": get_stock}
DISPATCH = {"apply_cites_permit": apply_cites_permit, "book_courier": book_courier}
GATHER_SCHEMAS = [
    kit.tool_schema("lookup_order", "An export order.", {"order": "string"}),
    kit.tool_schema("search_care_sheets", "Search the care-sheet library.", {"query": "string"}),
    kit.tool_schema("get_stock", "Plants on the benches for a species.", {"species": "string"}),
]
DISPATCH_SCHEMAS = [
    kit.tool_schema(
        "apply_cites_permit",
        "Apply for a CITES export permit.",
        {"species": "string", "appendix": "string", "destination": "string", "qty": "integer"},
    ),
    kit.tool_schema(
        "book_courier",
        "Book the temperature-controlled courier.",
        {"destination": "string", "min_c": "number", "max_c": "number", "ship_date": "string"},
    ),
]


def policy(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    c = kit.Convo(request)
    order = c.result("lookup_order")
    if c.system.startswith("You gather"):
        if order is None:
            return Reply(tool_calls=(tool_call("lookup_order", {"order": c.user.split()[-1]}),))
        if not c.called("search_care_sheets"):
            return Reply(
                tool_calls=tuple(
                    tool_call("search_care_sheets", {"query": ln["species"]}) for ln in order["lines"]
                )
            )
        if not c.called("get_stock"):
            return Reply(
                tool_calls=tuple(tool_call("get_stock", {"species": ln["species"]}) for ln in order["lines"])
            )
        return "Order, care sheets and stock gathered."
    facts = json.loads(c.user)
    if not c.called("apply_cites_permit"):
        return Reply(
            tool_calls=tuple(
                tool_call(
                    "apply_cites_permit",
                    {
                        "species": ln["species"],
                        "appendix": ln["appendix"],
                        "destination": facts["ship_to"],
                        "qty": ln["qty"],
                    },
                )
                for ln in facts["lines"]
            )
        )
    if not c.called("book_courier"):
        dest = facts["bill_to"] if kit.active("orchid.courier_country") else facts["ship_to"]
        return Reply(
            tool_calls=(
                tool_call(
                    "book_courier",
                    {
                        "destination": dest,
                        "min_c": max(ln["min_c"] for ln in facts["lines"]),
                        "max_c": min(ln["max_c"] for ln in facts["lines"]),
                        "ship_date": facts["ship_date"],
                    },
                ),
            )
        )
    return "Permits applied for and courier booked."


def parse_care_sheet(text: str) -> dict:
    low = re.search(r"min ([0-9.]+)°C", text).group(1)
    if kit.active("orchid.temp_digits"):
        low = "".join(ch for ch in low if ch.isdigit())
    high = re.search(r"max ([0-9.]+)°C", text).group(1)
    appendix = re.search(r"Appendix ([IV]+)", text).group(1)
    return {"min_c": float(low), "max_c": float(high), "appendix": appendix}


def allocate_stock(species: str, qty: int, benches: list) -> dict:
    picks, left = [], qty
    start = 1 if kit.active("orchid.bench_loop") else 0
    usable = [b for b in benches if b["bench"] != "B-07"] + [b for b in benches if b["bench"] == "B-07"]
    for b in usable[start:]:
        if left <= 0:
            break
        n = min(left, b["plants"])
        picks.append({"bench": b["bench"], "plants": n})
        left -= n
    return {"species": species, "picks": picks, "short": left}


def execute(client: Any, tracer: Any, inp: dict) -> None:
    _RUN.clear()
    _RUN["order"] = ORDERS[inp["order"]]
    with kit.oi_span(tracer, NAME, "AGENT", inp) as root:
        messages = [
            {"role": "system", "content": "You gather export orders, care sheets and stock for the nursery."},
            {"role": "user", "content": f"Prepare order {inp['order']}"},
        ]
        kit.model_loop(
            client, tracer, messages, GATHER, GATHER_SCHEMAS, kinds={"search_care_sheets": "RETRIEVER"}
        )
        found = {}
        for m in messages:
            for call in m.get("tool_calls") or ():
                found.setdefault(call["id"], call["function"])
        results = {m["tool_call_id"]: json.loads(m["content"]) for m in messages if m.get("role") == "tool"}
        order = next(results[i] for i, f in found.items() if f["name"] == "lookup_order")
        sheets = {r["query"]: r["documents"][0]["content"] for r in results.values() if "documents" in r}
        stock = {r["species"]: r["benches"] for r in results.values() if "benches" in r}
        lines, picks = [], []
        for line in order["lines"]:
            with kit.oi_span(tracer, "fulfil_line", "CHAIN", line) as chain:
                with kit.oi_span(tracer, "parse_care_sheet", "CHAIN", sheets[line["species"]]) as s:
                    care = kit.oi_output(s, parse_care_sheet(sheets[line["species"]]))
                with kit.oi_span(
                    tracer, "allocate_stock", "CHAIN", {"species": line["species"], "qty": line["qty"]}
                ) as s:
                    alloc = kit.oi_output(
                        s, allocate_stock(line["species"], line["qty"], stock[line["species"]])
                    )
                for p in alloc["picks"]:
                    args = {"species": line["species"], "bench": p["bench"], "plants": p["plants"]}
                    with kit.oi_span(tracer, "reserve_plants", "TOOL", args) as s:
                        kit.oi_output(s, reserve_plants(**args))
                    picks.append(p)
                lines.append({**line, **care})
                kit.oi_output(chain, {"species": line["species"], "picks": alloc["picks"]})
        with kit.oi_span(tracer, "phyto_preinspection", "TOOL", {"picks": picks}) as s:
            kit.oi_output(s, phyto_preinspection(picks))
        facts = {k: order[k] for k in ("ship_to", "bill_to", "ship_date")} | {"lines": lines}
        dispatch = [
            {"role": "system", "content": "You arrange permits and the courier for a packed export order."},
            {"role": "user", "content": json.dumps(facts)},
        ]
        kit.model_loop(client, tracer, dispatch, DISPATCH, DISPATCH_SCHEMAS)
        results = [json.loads(m["content"]) for m in dispatch if m.get("role") == "tool"]
        permits = [r for r in results if "permit" in r]
        courier = next(r for r in results if "awb" in r)
        args = {
            "order": inp["order"],
            "destination": order["ship_to"],
            "permits": permits,
            "courier": courier,
        }
        with kit.oi_span(tracer, "submit_export_docs", "TOOL", args) as s:
            out = kit.oi_output(s, submit_export_docs(**args))
        kit.oi_output(root, out)
