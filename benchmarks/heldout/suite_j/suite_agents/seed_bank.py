"""Seed-bank germination testing (route: otlp): a viability test of stored accessions, end to end.

The openai client is instrumented by OpenInference; the agent's own steps are OpenTelemetry spans.
Parse the test request, read each accession's record, retrieve the ISTA protocol and the lab notes,
let a planner sub-agent (an AGENT span with its own model call) plan each accession's replicates
and withdraw the seeds, book a growth chamber, read the germination counts, compute viability, and
review the results against each accession's history before submitting them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..harness import AgentSpec, Fault, active, extract_json, last_user
from ..routes import openai_client, otlp_begin, otlp_chat, otlp_write, span


NAME = "seed-bank-germination-monitor"

ISTA = {"Zea mays": ("20<->30", 7), "Triticum aestivum": ("20", 8), "Hordeum vulgare": ("20", 7),
        "Phaseolus vulgaris": ("20<->30", 9), "Brassica napus": ("20<->30", 7)}
CHAMBER_FREE_DAYS = 12
# (species, seeds in store, last viability %, this test's germination rate)
ACCS = {
    "ACC-10418": ("Zea mays", 2400, 93, 0.90), "ACC-10419": ("Zea mays", 150, 88, 0.84),
    "ACC-10420": ("Zea mays", 1800, 91, 0.88), "ACC-10421": ("Zea mays", 2100, 95, 0.93),
    "ACC-10422": ("Zea mays", 1650, 90, 0.87),
    "ACC-20301": ("Triticum aestivum", 3000, 96, 0.94), "ACC-20302": ("Triticum aestivum", 2600, 92, 0.91),
    "ACC-20303": ("Triticum aestivum", 2900, 94, 0.92), "ACC-20304": ("Triticum aestivum", 2750, 89, 0.86),
    "ACC-20305": ("Triticum aestivum", 3100, 97, 0.95), "ACC-20306": ("Triticum aestivum", 2400, 90, 0.88),
    "ACC-10311": ("Hordeum vulgare", 900, 85, 0.80), "ACC-30410": ("Hordeum vulgare", 1900, 92, 0.90),
    "ACC-30411": ("Hordeum vulgare", 2200, 94, 0.91), "ACC-30412": ("Hordeum vulgare", 1700, 88, 0.85),
    "ACC-40101": ("Phaseolus vulgaris", 1200, 90, 0.87), "ACC-40102": ("Phaseolus vulgaris", 1400, 93, 0.92),
    "ACC-50201": ("Brassica napus", 5200, 95, 0.94), "ACC-50202": ("Brassica napus", 4800, 91, 0.90),
    "ACC-50203": ("Brassica napus", 5100, 89, 0.88),
}
NOTES = {"ACC-10311": "Dormant lot: pre-chill 7 days at 5 C before the test (2024 retest)."}


def request(test: str, species: str, accs: list[str], start: str) -> dict[str, Any]:
    return {"test": test, "species": species, "regime": ISTA[species][0], "accessions": accs, "start": start}


INPUTS = [
    request("GT-2026-014", "Zea mays", ["ACC-10418", "ACC-10420", "ACC-10421", "ACC-10422"], "2026-03-05"),
    request("GT-2026-015", "Zea mays", ["ACC-10418", "ACC-10420", "ACC-10422"], "2026-03-06"),
    request("GT-2026-016", "Phaseolus vulgaris", ["ACC-40101", "ACC-40102"], "2026-03-06"),
    request("GT-2026-017", "Hordeum vulgare", ["ACC-30410", "ACC-30411", "ACC-30412"], "2026-03-09"),
    request("GT-2026-018", "Triticum aestivum", ["ACC-20301", "ACC-20302", "ACC-20303", "ACC-20304", "ACC-20305",
                                                 "ACC-20306"], "2026-03-10"),
]
REFS = [
    request("GT-2026-010", "Brassica napus", ["ACC-50201", "ACC-50202", "ACC-50203"], "2026-03-02"),
    request("GT-2026-011", "Triticum aestivum", ["ACC-20301", "ACC-20303"], "2026-03-02"),
    request("GT-2026-012", "Hordeum vulgare", ["ACC-30410", "ACC-30412"], "2026-03-03"),
    request("GT-2026-013", "Zea mays", ["ACC-10421", "ACC-10418"], "2026-03-04"),
]


class InventoryRejected(RuntimeError):
    __module__ = "genebank.errors"


class ChamberUnavailable(RuntimeError):
    __module__ = "genebank.errors"


class ReviewHold(AssertionError):
    __module__ = "genebank.errors"


def policy(request_: Any) -> str:
    data = extract_json(last_user(request_))
    acc = data["accession"]
    if active("sb-sub") and acc == "ACC-10420":
        acc = "ACC-10419"  # the neighbouring accession in the store list
    prechill = 7 if any("pre-chill" in n["note"] for n in data["notes"]) else 0
    return json.dumps({"accession": acc, "replicates": 4, "seeds_per_replicate": 50, "prechill_days": prechill})


def text_of_request(item: dict[str, Any]) -> str:
    return (f"Viability test {item['test']}: {item['species']}, regime {item['regime']} C, start {item['start']}; "
            f"accessions {', '.join(item['accessions'])}")


def parse_test_request(text: str) -> dict[str, Any]:
    with span("parse_test_request", "CHAIN", text) as sp:
        head, accs = text.split("; accessions ")
        test = head.split()[2].rstrip(":")
        species = head.split(": ", 1)[1].split(",")[0]
        regime = head.split("regime ")[1].split(" C")[0]
        if active("sb-regime"):
            regime = regime.split("<->")[0]
        start = head.rsplit("start ", 1)[1]
        return sp.output({"test": test, "species": species, "regime": regime, "start": start,
                          "accessions": accs.split(", ")})


def get_accession_record(acc: str) -> dict[str, Any]:
    with span("get_accession_record", "TOOL", {"accession": acc}, tool__name="get_accession_record") as sp:
        species, seeds, last, _ = ACCS[acc]
        return sp.output({"accession": acc, "species": species, "seeds_in_store": seeds,
                          "last_viability_pct": last, "last_test": "2025-03"})


def retrieve_ista_protocol(species: str) -> dict[str, Any]:
    with span("retrieve_ista_protocol", "RETRIEVER", f"ISTA germination rules {species}") as sp:
        regime, days = ISTA[species]
        return sp.output({"species": species, "regime": regime, "final_count_day": days, "substrate": "between paper"})


def search_lab_notes(species: str, accs: list[str]) -> list[dict[str, str]]:
    with span("search_lab_notes", "RETRIEVER", {"species": species, "accessions": accs}) as sp:
        notes = [{"accession": a, "note": n} for a, n in NOTES.items() if a in accs]
        if active("sb-notes"):
            # matched on species rather than on accession
            notes = [{"accession": a, "note": n} for a, n in NOTES.items() if ACCS[a][0] == species]
        notes.append({"accession": "*", "note": f"Use the {species} substrate lot from the March delivery."})
        return sp.output(notes)


def plan_accession(client: Any, rec: dict[str, Any], protocol: dict[str, Any], notes: list[dict[str, str]]) -> dict[str, Any]:
    with span("germination_planner", "AGENT", rec, agent__name="germination_planner") as agent:
        reply = otlp_chat(client, [
            {"role": "system", "content": "You plan germination tests for a seed bank: replicates, seeds per "
                                          "replicate, pre-chill days. Answer JSON."},
            {"role": "user", "content": "Plan: " + json.dumps({"accession": rec["accession"], "protocol": protocol,
                                                                "notes": notes})}])
        with span("parse_test_plan", "CHAIN", reply.choices[0].message.content) as sp:
            plan = sp.output(json.loads(reply.choices[0].message.content))
        n = plan["replicates"] * plan["seeds_per_replicate"]
        with span("withdraw_seeds", "TOOL", {"accession": plan["accession"], "seeds": n}, tool__name="withdraw_seeds") as sp:
            stock = ACCS[plan["accession"]][1]
            if stock < n + 100:
                raise InventoryRejected(f"inventory: {plan['accession']} holds {stock} seeds; withdrawing {n} would "
                                        "leave less than the 100-seed safety reserve")
            sp.output({"accession": plan["accession"], "withdrawn": n, "remaining": stock - n})
        return agent.output(plan)


def book_chamber(regime: str, days: int, trays: int, start: str) -> dict[str, Any]:
    args = {"regime": regime, "days": days, "trays": trays, "start": start}
    with span("book_chamber", "TOOL", args, tool__name="book_chamber") as sp:
        if days > CHAMBER_FREE_DAYS:
            raise ChamberUnavailable(f"chamber GC-2 is free for {CHAMBER_FREE_DAYS} days from {start}; {days} requested")
        program = "20" if active("sb-ista") else regime
        return sp.output({"chamber": "GC-2", "program": f"{program} C", "days": days, "trays": trays})


def read_counts(acc: str, plan: dict[str, Any], day: int) -> dict[str, Any]:
    with span("read_germination_counts", "TOOL", {"accession": acc, "day": day}, tool__name="read_germination_counts") as sp:
        rate = ACCS[acc][3]
        per = plan["seeds_per_replicate"]
        counts = [round(per * rate) + d for d in (1, -1, 0, 0)]
        return sp.output({"accession": acc, "day": day, "germinated": counts, "seeds_per_replicate": per})


def compute_viability(counts: dict[str, Any]) -> dict[str, Any]:
    with span("compute_viability", "CHAIN", counts) as sp:
        n = counts["seeds_per_replicate"] * len(counts["germinated"])
        frac = sum(counts["germinated"]) / n
        value = round(frac, 3) if active("sb-units") and counts["accession"] == "ACC-20303" else round(frac * 100, 1)
        return sp.output({"accession": counts["accession"], "viability_pct": value})


def review_results(results: list[dict[str, Any]], records: dict[str, Any], protocol: dict[str, Any],
                   booking: dict[str, Any]) -> dict[str, Any]:
    with span("review_results", "CHAIN", results) as sp:
        if booking["program"] != f"{protocol['regime']} C":
            raise ReviewHold(f"chamber program {booking['program']} does not follow the ISTA regime "
                             f"{protocol['regime']} C for {protocol['species']}; test invalid")
        for r in results:
            last = records[r["accession"]]["last_viability_pct"]
            if last - r["viability_pct"] > 30:
                raise ReviewHold(f"{r['accession']} viability fell from {last}% to {r['viability_pct']}% in one "
                                 "year; results held for a retest")
        return sp.output({"reviewed": len(results), "status": "accepted"})


def run(server: Any, item: dict[str, Any], path: Path) -> None:
    server.use(policy)
    client = openai_client(server)
    otlp_begin()
    try:
        with span(NAME, "AGENT", item["test"], agent__name=NAME, session__id=item["test"]) as root:
            req = parse_test_request(text_of_request(item))
            records = {a: get_accession_record(a) for a in req["accessions"]}
            protocol = retrieve_ista_protocol(req["species"])
            notes = search_lab_notes(req["species"], req["accessions"])
            plans = [plan_accession(client, records[a], protocol, notes) for a in req["accessions"]]
            days = protocol["final_count_day"] + max(p["prechill_days"] for p in plans)
            booking = book_chamber(req["regime"], days, sum(p["replicates"] for p in plans), req["start"])
            results = []
            with span("score_tests", "CHAIN", {"accessions": req["accessions"]}):
                for a, plan in zip(req["accessions"], plans):
                    results.append(compute_viability(read_counts(a, plan, protocol["final_count_day"])))
            review_results(results, records, protocol, booking)
            with span("submit_results", "TOOL", results, tool__name="submit_results") as sp:
                sp.output({"test": req["test"], "status": "published"})
            root.output({"test": req["test"], "results": results})
    except (InventoryRejected, ChamberUnavailable, ReviewHold):
        pass
    otlp_write(path)


SPEC = AgentSpec(
    name=NAME, route="otlp", domain="seed-bank germination testing", inputs=INPUTS, ref_inputs=REFS, run=run,
    faults=[
        Fault("sb-regime", "lossy_parsing", 0, "parse_test_request", '"regime": "20"',
              "the alternating regime 20<->30 is parsed as 20; the review finds the chamber off protocol"),
        Fault("sb-sub", "subagent_wrong_entity", 1, "ChatCompletion", '"accession": "ACC-10419"',
              "the planner sub-agent plans the neighbouring accession; the inventory refuses the withdrawal"),
        Fault("sb-ista", "tool_ignores_argument", 2, "book_chamber", '"program": "20 C"',
              "the chamber booking keeps its running program and ignores the regime asked for"),
        Fault("sb-notes", "context_pollution", 3, "search_lab_notes", "ACC-10311",
              "another barley accession's pre-chill note joins the notes; the test no longer fits the chamber"),
        Fault("sb-units", "unit_error", 4, "compute_viability", '"viability_pct": 0.',
              "one accession's viability is written as a fraction; the review holds the results"),
    ],
)
