"""Mattress recycling: a recovery plant's intake-to-compliance agent (SDK route: decorators, `with`
steps, `run.state`, written to a JSONL file).

A collection arrives: the agent reads the weighbridge tickets (paged), has the model count the
mattresses from the driver's notes, parses the counts, looks up the composition table, has the
model plan the teardown lines, processes each batch in a sub-agent (line telemetry, grading prompt,
the model's foam grade, parse, state), fetches offtake prices (retried), allocates each output to a
buyer, compiles the mass balance, has the model write the summary and checks the report against
the permit's rules.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import kit
from _shared import Case, ask_model, first_json, messages, system_text, user_text
from openai import OpenAI

import trajdebug


AGENT = "mattress-recovery"
ROUTE = "sdk"
DOMAIN = "mattress recycling"
EXT = "jsonl"
SHAPE = (
    "manifest -> weighbridge tickets (paged) -> model counts items -> parse -> intake (state) -> composition "
    "table -> model line plan -> parse -> per batch sub-agent (line telemetry, grading prompt, model grade, "
    "parse, state) -> offtake prices (retried) -> allocation -> mass balance -> model summary -> validator"
)

# kg per double-size mattress, by construction; sizes scale it.
COMPOSITION = {
    "pocket sprung": {"steel": 9.5, "foam": 6.0, "textile": 4.0, "other": 1.5},
    "open coil": {"steel": 11.0, "foam": 3.5, "textile": 3.5, "other": 1.0},
    "memory foam": {"steel": 0.0, "foam": 14.0, "textile": 3.0, "other": 1.0},
    "latex": {"steel": 0.0, "foam": 16.0, "textile": 3.0, "other": 1.0},
}
SIZE = {"single": 0.6, "small double": 0.85, "double": 1.0, "king": 1.2, "super king": 1.4}
YIELD = {"steel": 0.97, "foam": 0.92, "textile": 0.85}
RECYCLING_TARGET = 0.70

JOBS: dict[str, dict[str, Any]] = {
    "MR-0311": {
        "client": "Oxford City Council bulky waste",
        "date": "2025-03-11",
        "trucks": ["KX21 BFD", "KX21 BFE", "YR19 TNA"],
        "items": {
            "pocket sprung": {"double": 14, "king": 6, "super king": 3},
            "open coil": {"single": 9, "double": 7},
            "memory foam": {"double": 5, "king": 2},
        },
        "contamination": {"pocket sprung": 1.4, "open coil": 3.1, "memory foam": 1.8},
        "notes": {"memory foam": "covers intact, vacuum-packed returns"},
    },
    "MR-0312": {
        "client": "Dreamwell Beds (retail returns)",
        "date": "2025-03-11",
        "trucks": ["LB70 HJK", "LB70 HJM"],
        "items": {
            "pocket sprung": {"double": 18, "king": 8},
            "memory foam": {"double": 6, "super king": 4},
            "latex": {"king": 3},
        },
        "contamination": {"pocket sprung": 1.2, "memory foam": 1.6, "latex": 0.9},
        "notes": {"latex": "returns in original wrap"},
    },
    "MR-0313": {
        "client": "Reading Borough HWRC",
        "date": "2025-03-12",
        "trucks": ["KX21 BFD", "YR19 TNA", "KX68 PLO"],
        "items": {
            "open coil": {"single": 12, "double": 10, "small double": 4},
            "pocket sprung": {"double": 8, "king": 5},
            "memory foam": {"single": 6, "double": 6},
            "latex": {"double": 4, "king": 2},
        },
        "contamination": {"open coil": 3.6, "pocket sprung": 2.4, "memory foam": 8.5, "latex": 1.1},
        "notes": {"memory foam": "six units rain-soaked in the skip, mould on covers"},
    },
    "MR-0314": {
        "client": "Hotel Group South (refurb)",
        "date": "2025-03-12",
        "trucks": ["LB70 HJK", "LB70 HJM"],
        "items": {
            "memory foam": {"double": 10, "king": 14},
            "latex": {"king": 12, "super king": 6},
            "pocket sprung": {"king": 6},
        },
        "contamination": {"memory foam": 1.3, "latex": 0.8, "pocket sprung": 1.5},
        "notes": {},
    },
    "MR-0315": {
        "client": "Swindon Furniture Reuse",
        "date": "2025-03-13",
        "trucks": ["KX21 BFE", "KX68 PLO"],
        "items": {"pocket sprung": {"double": 11, "king": 4}, "open coil": {"double": 9, "single": 5}},
        "contamination": {"pocket sprung": 1.9, "open coil": 2.7},
        "notes": {},
    },
    "MR-0316": {
        "client": "Banbury Student Lets",
        "date": "2025-03-13",
        "trucks": ["YR19 TNA", "KX21 BFD"],
        "items": {"open coil": {"single": 22}, "pocket sprung": {"single": 6, "double": 4}},
        "contamination": {"open coil": 4.2, "pocket sprung": 2.2},
        "notes": {},
    },
    "MR-0317": {
        "client": "Dreamwell Beds (retail returns)",
        "date": "2025-03-14",
        "trucks": ["LB70 HJK", "LB70 HJM", "KX68 PLO"],
        "items": {
            "pocket sprung": {"double": 12, "king": 10, "super king": 5},
            "latex": {"double": 4},
            "memory foam": {"king": 5},
        },
        "contamination": {"pocket sprung": 1.0, "latex": 0.7, "memory foam": 1.5},
        "notes": {},
    },
    "MR-0318": {
        "client": "West Berkshire bulky waste",
        "date": "2025-03-14",
        "trucks": ["KX21 BFE", "YR19 TNA"],
        "items": {
            "open coil": {"double": 8, "single": 6},
            "memory foam": {"double": 3},
            "pocket sprung": {"double": 7, "king": 3},
        },
        "contamination": {"open coil": 3.3, "memory foam": 6.2, "pocket sprung": 2.8},
        "notes": {"memory foam": "two units soaked with paint"},
    },
    "MR-0319": {
        "client": "Cotswold Holiday Parks",
        "date": "2025-03-17",
        "trucks": ["LB70 HJM", "KX68 PLO"],
        "items": {"pocket sprung": {"single": 10, "double": 16}, "memory foam": {"single": 8}},
        "contamination": {"pocket sprung": 1.7, "memory foam": 1.9},
        "notes": {},
    },
}

CASES = [
    Case(
        "zzi-mattress-1",
        "mattress.ticket_paging",
        "MR-0311",
        "truncated_result",
        ("read_weighbridge", 1, "tool"),
        ("validate_report", 1),
        "The weighbridge API's first page says there is no next page, so the third truck's ticket is never "
        "read and the net intake is a truck short of what the lines then recover.",
    ),
    Case(
        "zzi-mattress-2",
        "mattress.size_pattern",
        "MR-0312",
        "lossy_parsing",
        ("parse_counts", 1, "parse"),
        ("validate_report", 1),
        "The count parser's size pattern takes one word, so the four 'super king' memory-foam lines are "
        "dropped and the report covers 35 mattresses against a declared 39.",
    ),
    Case(
        "zzi-mattress-3",
        "mattress.notes_carryover",
        "MR-0313",
        "context_pollution",
        ("build_grading_prompt", 4, "other"),
        ("validate_report", 1),
        "The latex batch's grading prompt carries every earlier operator note, including the rain-soaked "
        "memory foam, so the model grades clean latex (1.1%) as contaminated.",
    ),
    Case(
        "zzi-mattress-4",
        "mattress.grade_condition",
        "MR-0314",
        "wrong_routing",
        ("allocate_offtakers", 1, "condition"),
        ("validate_report", 1),
        "The allocation's recycler branch takes only grade B foam, so every grade A foam batch (clean hotel "
        "stock) goes to RDF as if contaminated.",
    ),
    Case(
        "zzi-mattress-5",
        "mattress.scale_timeout",
        "MR-0315",
        "swallowed_error",
        ("line_telemetry", 2, "tool"),
        ("validate_report", 1),
        "The open-coil line's scale export times out and the telemetry tool returns zero weights instead of "
        "raising, so the batch recovers nothing on paper.",
    ),
]
REFERENCE_INPUTS = ["MR-0316", "MR-0317", "MR-0318", "MR-0319"]


class PermitBreach(ValueError):
    """The compliance report breaks the site permit's rules."""


SYS_COUNT = (
    "You read collection notes for a mattress recycling plant. List the mattresses collected, one line per "
    "construction and size, as 'construction / size: count'. Constructions: pocket sprung, open coil, memory "
    "foam, latex."
)
SYS_PLAN = (
    "Plan the teardown for the intake below. Spring units go to Line A (automated), foam and latex to the "
    'manual bench. Answer JSON: {"batches": [{"construction", "line", "units"}]} in processing order.'
)
SYS_GRADE = (
    "Grade the foam recovered from this batch for resale: A (clean, rebond or underlay), B (marked, rebond only) "
    'or C (contaminated: energy recovery). Answer JSON: {"grade", "reason"}.'
)
SYS_SUMMARY = (
    "Write a two-sentence compliance summary of the report below, stating the recycling rate as given."
)

_client: Any = None


def _units(sizes: dict) -> int:
    return sum(sizes.values())


def _weight(construction: str, sizes: dict) -> dict:
    comp = COMPOSITION[construction]
    return {m: round(sum(comp[m] * SIZE[s] * n for s, n in sizes.items()), 1) for m in comp}


def _net(job: dict) -> float:
    return round(sum(sum(_weight(c, sizes).values()) for c, sizes in job["items"].items()) * 1.03)


def _tickets(job_id: str) -> list[dict]:
    job = JOBS[job_id]
    net = _net(job)
    shares = [0.45, 0.35, 0.20] if len(job["trucks"]) == 3 else [0.55, 0.45]
    out, left = [], net
    for i, (reg, share) in enumerate(zip(job["trucks"], shares)):
        kg = left if i == len(shares) - 1 else round(net * share)
        left -= kg
        tare = 7480 + 35 * i
        out.append(
            {"ticket": f"WB-{job_id[-4:]}-{i + 1}", "vehicle": reg, "gross_kg": tare + kg, "tare_kg": tare}
        )
    return out


# -- tools and steps ----------------------------------------------------------------------------------


@trajdebug.step(kind="input")
def receive_manifest(job_id: str) -> dict:
    job = JOBS[job_id]
    lines = []
    for c, sizes in job["items"].items():
        for s, n in sizes.items():
            lines.append(f"{n} x {s} {c}")
    notes = "Collected: " + ", ".join(lines) + "."
    for c, note in job["notes"].items():
        notes += f" {c.capitalize()}: {note}."
    return {
        "job_id": job_id,
        "client": job["client"],
        "date": job["date"],
        "declared_count": sum(_units(s) for s in job["items"].values()),
        "driver_notes": notes,
    }


@trajdebug.step(kind="tool")
def read_weighbridge(job_id: str, page: int) -> dict:
    tickets = _tickets(job_id)
    size = 2
    chunk = tickets[(page - 1) * size : page * size]
    more = page * size < len(tickets)
    if kit.on("mattress.ticket_paging"):
        more = False
    return {"job_id": job_id, "page": page, "tickets": chunk, "next_page": page + 1 if more else None}


_COUNT_LINE = re.compile(r"^\s*([a-z ]+?)\s*/\s*([a-z ]+?)\s*:\s*(\d+)\s*$")
_COUNT_LINE_ONE_WORD = re.compile(r"^\s*([a-z ]+?)\s*/\s*(\w+)\s*:\s*(\d+)\s*$")


@trajdebug.step(kind="parse")
def parse_counts(raw: str) -> dict:
    pattern = _COUNT_LINE_ONE_WORD if kit.on("mattress.size_pattern") else _COUNT_LINE
    counts: dict[str, dict[str, int]] = {}
    for line in raw.lower().splitlines():
        m = pattern.match(line)
        if m:
            counts.setdefault(m.group(1), {})[m.group(2)] = int(m.group(3))
    return counts


@trajdebug.step(kind="state")
def record_intake(manifest: dict, tickets: list[dict], counts: dict) -> dict:
    net = sum(t["gross_kg"] - t["tare_kg"] for t in tickets)
    intake = {
        "job_id": manifest["job_id"],
        "tickets": [t["ticket"] for t in tickets],
        "net_kg": net,
        "units": sum(_units(s) for s in counts.values()),
        "counts": counts,
    }
    trajdebug.current_run().state["intake"] = intake
    return intake


@trajdebug.step(kind="retrieval")
def load_composition(constructions: list[str]) -> dict:
    return {
        "table": "WRAP mattress composition 2023 (kg per double)",
        "sizes": SIZE,
        "rows": {c: COMPOSITION[c] for c in constructions},
    }


@trajdebug.step(kind="parse")
def parse_plan(raw: str) -> list[dict]:
    return [
        {"construction": b["construction"], "line": b["line"], "units": int(b["units"])}
        for b in first_json(raw)["batches"]
    ]


def _scale_export(job_id: str, construction: str, sizes: dict) -> dict:
    """The line scales' export for one batch (kg per output stream)."""
    if kit.on("mattress.scale_timeout") and construction == "open coil":
        raise TimeoutError("scale export: no response from Line A weigh cell controller after 5.0 s")
    weight = _weight(construction, sizes)
    kg = {m: round(weight[m] * YIELD[m], 1) for m in YIELD}
    kg["residual"] = round(sum(weight.values()) - sum(kg.values()), 1)
    return kg


@trajdebug.step(kind="tool")
def line_telemetry(job_id: str, construction: str, line: str, sizes: dict) -> dict:
    job = JOBS[job_id]
    try:
        kg = _scale_export(job_id, construction, sizes)
    except TimeoutError:
        kg = {"steel": 0.0, "foam": 0.0, "textile": 0.0, "residual": 0.0}
    return {
        "batch": f"{job_id}/{construction}",
        "line": line,
        "units": _units(sizes),
        "steel_kg": kg["steel"],
        "foam_kg": kg["foam"],
        "textile_kg": kg["textile"],
        "residual_kg": kg["residual"],
        "contamination_pct": job["contamination"][construction],
        "operator_note": job["notes"].get(construction, "no issues"),
    }


@trajdebug.step(kind="other")
def build_grading_prompt(construction: str, reading: dict) -> str:
    if kit.on("mattress.notes_carryover"):
        notes = [*trajdebug.current_run().state.get("operator_notes", []), reading["operator_note"]]
    else:
        notes = [reading["operator_note"]]
    return json.dumps(
        {
            "batch": construction,
            "units": reading["units"],
            "foam_kg": reading["foam_kg"],
            "contamination_pct": reading["contamination_pct"],
            "operator_notes": notes,
        }
    )


@trajdebug.step(kind="parse")
def parse_grade(raw: str) -> dict:
    data = first_json(raw)
    return {"grade": str(data["grade"]).strip().upper()[:1], "reason": data.get("reason", "")}


@trajdebug.step(kind="state")
def record_batch(construction: str, reading: dict, grade: dict) -> None:
    state = trajdebug.current_run().state
    state[f"batch:{construction}"] = {**reading, "grade": grade["grade"]}
    state.setdefault("batches", []).append(construction)
    state.setdefault("operator_notes", []).append(f"{construction}: {reading['operator_note']}")


@trajdebug.step(kind="agent")
def process_batch(job_id: str, batch: dict, sizes: dict) -> dict:
    reading = line_telemetry(job_id, batch["construction"], batch["line"], sizes)
    prompt = build_grading_prompt(batch["construction"], reading)
    raw = ask_model(_client, "grade_foam", SYS_GRADE, prompt)
    grade = parse_grade(raw)
    record_batch(batch["construction"], reading, grade)
    return {"construction": batch["construction"], "grade": grade["grade"]}


_price_calls = {"n": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def get_offtake_prices(week: str) -> dict:
    _price_calls["n"] += 1
    if _price_calls["n"] == 1 and week.endswith(("11", "13")):
        raise ConnectionError("letsrecycle price feed: 503 Service Unavailable")
    return {
        "week": week,
        "gbp_per_t": {
            "steel": 145.0,
            "foam_A": 220.0,
            "foam_B": 90.0,
            "textile": 30.0,
            "rdf": -85.0,
            "landfill": -126.0,
        },
    }


@trajdebug.step(kind="condition")
def allocate_offtakers(batches: list[str]) -> list[dict]:
    state = trajdebug.current_run().state
    recycler_grades = ("B",) if kit.on("mattress.grade_condition") else ("A", "B")
    out = []
    for c in batches:
        b = state[f"batch:{c}"]
        foam_to = (
            ("Carpet underlay: Interfloor Ltd" if b["grade"] == "A" else "Rebond: Vita Foam Recycling")
            if b["grade"] in recycler_grades
            else "RDF: Ardley energy recovery"
        )
        out.append(
            {
                "batch": c,
                "grade": b["grade"],
                "steel": "Sheffield Metals",
                "foam": foam_to,
                "textile": "ReFibre Ltd",
                "residual": "Landfill: Sutton Courtenay",
            }
        )
    return out


@trajdebug.step(kind="other")
def compile_report(intake: dict, allocation: list[dict], prices: dict) -> dict:
    state = trajdebug.current_run().state
    outputs = {"steel": 0.0, "foam_recycled": 0.0, "foam_rdf": 0.0, "textile": 0.0, "residual": 0.0}
    batches = []
    for a in allocation:
        b = state[f"batch:{a['batch']}"]
        outputs["steel"] += b["steel_kg"]
        outputs["textile"] += b["textile_kg"]
        outputs["residual"] += b["residual_kg"]
        outputs["foam_rdf" if a["foam"].startswith("RDF") else "foam_recycled"] += b["foam_kg"]
        batches.append(
            {
                "batch": a["batch"],
                "units": b["units"],
                "grade": b["grade"],
                "contamination_pct": b["contamination_pct"],
                "foam_to": a["foam"],
            }
        )
    outputs = {k: round(v, 1) for k, v in outputs.items()}
    recycled = outputs["steel"] + outputs["foam_recycled"] + outputs["textile"]
    net = intake["net_kg"]
    return {
        "job_id": intake["job_id"],
        "net_kg": net,
        "units": sum(b["units"] for b in batches),
        "batches": batches,
        "outputs_kg": outputs,
        "recovered_kg": round(sum(outputs.values()), 1),
        "recycling_rate_pct": round(100 * recycled / net, 1) if net else 0.0,
        "price_week": prices["week"],
    }


@trajdebug.step(kind="condition")
def validate_report(report: dict, manifest: dict, summary: str) -> dict:
    if report["units"] != manifest["declared_count"]:
        raise PermitBreach(
            f"report covers {report['units']} mattresses, collection manifest declares "
            f"{manifest['declared_count']}"
        )
    net, recovered = report["net_kg"], report["recovered_kg"]
    if recovered > net * 1.01:
        raise PermitBreach(f"line outputs {recovered:,.1f} kg exceed the weighbridge net {net:,} kg")
    if recovered < net * 0.90:
        raise PermitBreach(
            f"line outputs {recovered:,.1f} kg are {100 * recovered / net:.1f}% of the weighbridge "
            f"net {net:,} kg (process loss above 10%)"
        )
    for b in report["batches"]:
        if b["grade"] == "C" and b["contamination_pct"] < 5.0:
            raise PermitBreach(
                f"{b['batch']} foam graded C (contaminated) but the line measured "
                f"{b['contamination_pct']}% contamination"
            )
        if b["grade"] == "A" and b["contamination_pct"] >= 2.0:
            raise PermitBreach(f"{b['batch']} foam graded A with {b['contamination_pct']}% contamination")
        if b["grade"] in ("A", "B") and b["foam_to"].startswith("RDF"):
            raise PermitBreach(
                f"{b['batch']} grade {b['grade']} foam allocated to energy recovery; "
                f"grade A/B foam must go to a recycler"
            )
    if report["recycling_rate_pct"] < RECYCLING_TARGET * 100:
        raise PermitBreach(
            f"recycling rate {report['recycling_rate_pct']}% below the permit's {RECYCLING_TARGET:.0%}"
        )
    if f"{report['recycling_rate_pct']}%" not in summary:
        raise PermitBreach(f"summary does not state the recycling rate {report['recycling_rate_pct']}%")
    return {"ok": True}


# -- the fake model ----------------------------------------------------------------------------------------


def brain(job_id: str):
    job = JOBS[job_id]

    def policy(request):
        msgs = messages(request)
        system, user = system_text(msgs), user_text(msgs)
        if system == SYS_COUNT:
            return "\n".join(f"{c} / {s}: {n}" for c, sizes in job["items"].items() for s, n in sizes.items())
        if system == SYS_PLAN:
            counts = first_json(user)["counts"]
            order = sorted(counts, key=lambda c: (COMPOSITION[c]["steel"] == 0, list(job["items"]).index(c)))
            return json.dumps(
                {
                    "batches": [
                        {
                            "construction": c,
                            "line": "bench" if COMPOSITION[c]["steel"] == 0 else "Line A",
                            "units": sum(counts[c].values()),
                        }
                        for c in order
                    ]
                }
            )
        if system == SYS_GRADE:
            data = json.loads(user)
            notes = " ".join(data["operator_notes"]).lower()
            if any(w in notes for w in ("soaked", "mould", "paint")):
                return json.dumps({"grade": "C", "reason": "operator notes report soiling; energy recovery"})
            pct = data["contamination_pct"]
            grade = "A" if pct < 2 else "B" if pct < 5 else "C"
            return json.dumps({"grade": grade, "reason": f"line reading {pct}%"})
        if system == SYS_SUMMARY:
            data = first_json(user)
            return (
                f"Job {data['job_id']}: {data['units']} mattresses processed from {data['net_kg']:,} kg intake. "
                f"Recycling rate {data['recycling_rate_pct']}% against the 70% permit target."
            )
        raise ValueError(f"unexpected prompt: {system[:60]}")

    return policy


# -- one run ----------------------------------------------------------------------------------------------


def record(job_id: str, out: Path, server: Any) -> None:
    """Run the agent once on `job_id`, recording into the JSONL file `out`."""
    global _client
    server.use(brain(job_id))
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _price_calls["n"] = 0
    job = JOBS[job_id]
    try:
        with trajdebug.run(AGENT, path=out, task=f"process collection {job_id} from {job['client']}") as run:
            manifest = receive_manifest(job_id)
            tickets, page = [], 1
            while page:
                sheet = read_weighbridge(job_id, page)
                tickets.extend(sheet["tickets"])
                page = sheet["next_page"]
            raw = ask_model(_client, "count_items", SYS_COUNT, manifest["driver_notes"])
            counts = parse_counts(raw)
            intake = record_intake(manifest, tickets, counts)
            load_composition(sorted(counts))
            raw_plan = ask_model(_client, "plan_lines", SYS_PLAN, json.dumps({"counts": counts}))
            plan = parse_plan(raw_plan)
            for batch in plan:
                process_batch(job_id, batch, counts[batch["construction"]])
            prices = get_offtake_prices(job["date"])
            allocation = allocate_offtakers(run.state["batches"])
            report = compile_report(intake, allocation, prices)
            summary = ask_model(_client, "write_summary", SYS_SUMMARY, json.dumps(report))
            validate_report(report, manifest, summary)
    except PermitBreach:
        pass
