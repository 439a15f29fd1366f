"""Weekly scaffold inspection round and tagging (OpenTelemetry spans with OpenInference attributes, as OTLP JSON).

The round agent reads the site's scaffold register and checks each scaffold against the 7-day rule (a
guardrail); for each one due it retrieves its design record, reads the inspector's field notes and the
tie pull-out test log, and asks the model for a tag proposal (tag colour, load class, defects, tie tests relied on), which a parser reads and the
tagging rules (a guardrail) check before the tag is printed (the printer is retried when it jams).  The
model summarises the round and the site manager's handover certificate validates it.
"""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from openai import OpenAI

from suite_agents._common import Otlp, dumps, last_user, system_of


NAME = "scaffold-inspection-round"
ROUTE = "otlp"
DOMAIN = "weekly scaffold inspection and tagging on construction sites"
SHAPE = "site register tool -> loop over scaffolds (7-day rule guardrail; when due: design retriever, field-notes tool, tie-test tool, model tag proposal, parse, tagging guardrail, tag printer with retry) -> model summary -> handover certificate"

SWITCH: str | None = None


def switched(name: str) -> bool:
    """Whether the case ``name`` is on (the only place SWITCH is read)."""
    return SWITCH == name


TODAY = date(2026, 3, 11)

# site -> scaffolds: id, last inspected, design (class, ties required), today's notes, tie tests (id, date, kN)
SITES: dict[str, dict[str, dict[str, Any]]] = {
    "Dock St": {
        "SC-14": {"last": "2026-03-03", "class": 2, "ties": 8, "design": "D-SC-14 rev A", "notes": "Lifts 1-4 boarded, toe boards complete. Blockwork pallets stored on lift 3. All ties in place.",
                  "tests": [("T-0911", "2026-03-09", 6.5), ("T-0912", "2026-03-09", 6.1)]},
        "SC-41": {"last": "2026-03-01", "class": 4, "ties": 14, "design": "D-SC-41 rev B", "notes": "Loading bay scaffold, all boards and guardrails in place.",
                  "tests": [("T-0920", "2026-03-10", 7.2), ("T-0921", "2026-03-10", 6.9)]},
        "SC-07": {"last": "2026-03-02", "class": 3, "ties": 10, "design": "D-SC-07 rev A", "notes": "Brick guards fitted on lift 2. Ladder access tied.",
                  "tests": [("T-0901", "2026-03-08", 6.0), ("T-0902", "2026-03-08", 6.3)]},
        "SC-20": {"last": "2026-03-10", "class": 2, "ties": 6, "design": "D-SC-20 rev A", "notes": "", "tests": []},
    },
    "Mill Ln": {
        "SC-22": {"last": "2026-03-04", "class": 3, "ties": 12, "design": "D-SC-22 rev A", "notes": "East elevation, lifts 1-6. Guardrails complete. Two ties re-fixed after window removal.",
                  "tests": [("T-0861", "2026-01-20", 6.4), ("T-0862", "2026-01-20", 6.2), ("T-0940", "2026-03-09", 6.6), ("T-0941", "2026-03-09", 6.8)]},
        "SC-23": {"last": "2026-03-03", "class": 2, "ties": 8, "design": "D-SC-23 rev A", "notes": "Stair tower, handrails complete.",
                  "tests": [("T-0942", "2026-03-09", 6.1)]},
        "SC-24": {"last": "2026-03-02", "class": 3, "ties": 10, "design": "D-SC-24 rev A", "notes": "Chimney scaffold, boards complete, sheeting intact.",
                  "tests": [("T-0943", "2026-03-10", 6.4)]},
    },
    "Harbour Rd": {
        "SC-31": {"last": "2026-03-04", "class": 2, "ties": 8, "design": "D-SC-31 rev A", "notes": "Lifts 1-3, guardrails complete.",
                  "tests": [("T-0950", "2026-03-10", 6.2)]},
        "SC-32": {"last": "2026-03-02", "class": 2, "ties": 8, "design": "D-SC-32 rev A", "notes": "Gable end, toe boards complete.",
                  "tests": [("T-0951", "2026-03-10", 6.0)]},
        "SC-09": {"last": "2026-03-04", "class": 3, "ties": 10, "design": "D-SC-09 rev A", "notes": "Loading tower, gate closes, boards complete.",
                  "tests": [("T-0952", "2026-03-10", 7.1)]},
        "SC-33": {"last": "2026-03-09", "class": 2, "ties": 6, "design": "D-SC-33 rev A", "notes": "", "tests": []},
    },
    "Quay Rd": {
        "SC-51": {"last": "2026-03-03", "class": 3, "ties": 10, "design": "D-SC-51 rev A", "notes": "Lifts 1-5 boarded. One scaffold board split on lift 4, replaced.",
                  "tests": [("T-0960", "2026-03-09", 6.3)]},
        "SC-52": {"last": "2026-03-02", "class": 2, "ties": 8, "design": "D-SC-52 rev A", "notes": "Birdcage in atrium, heavy duty boards laid for plant access, guardrails complete.",
                  "tests": [("T-0961", "2026-03-09", 6.5)]},
        "SC-53": {"last": "2026-03-01", "class": 3, "ties": 10, "design": "D-SC-53 rev A", "notes": "Lift shaft scaffold, boards complete.",
                  "tests": [("T-0962", "2026-03-10", 6.7)]},
    },
    "Elm St": {
        "SC-61": {"last": "2026-03-03", "class": 2, "ties": 8, "design": "D-SC-61 rev A", "notes": "Front elevation, lifts 1-3 complete.",
                  "tests": [("T-0970", "2026-03-10", 6.2)]},
        "SC-62": {"last": "2026-03-04", "class": 3, "ties": 10, "design": "D-SC-62 rev A", "notes": "Rear elevation, loading bay gate fitted, lift 2 guardrail re-fixed.",
                  "tests": [("T-0971", "2026-03-10", 6.4)]},
        "SC-63": {"last": "2026-03-02", "class": 2, "ties": 6, "design": "D-SC-63 rev A", "notes": "Side return, boards complete.",
                  "tests": [("T-0972", "2026-03-09", 6.6)]},
    },
}
LAST_WEEK_NOTES = {("Elm St", "SC-62"): ("2026-03-04", "Rear elevation, lifts 1-3 complete, no loading bay yet.")}
_printer = {"jams": 0}

INPUTS = [
    {"key": "dock", "site": "Dock St", "task": "scaffold round Dock St 2026-03-11", "jams": 0},
    {"key": "mill", "site": "Mill Ln", "task": "scaffold round Mill Ln 2026-03-11", "jams": 1},
    {"key": "harbour", "site": "Harbour Rd", "task": "scaffold round Harbour Rd 2026-03-11", "jams": 0},
    {"key": "quay", "site": "Quay Rd", "task": "scaffold round Quay Rd 2026-03-11", "jams": 0},
    {"key": "elm", "site": "Elm St", "task": "scaffold round Elm St 2026-03-11", "jams": 1},
]

CASES = [
    {
        "case": "zzzzm_scaffold_digit_match", "input": "dock", "switch": "digit_search", "fault_kind": "wrong_retrieval",
        "root": {"name": "design_register", "occurrence": 1, "kind": "retrieval"}, "root_has": "SC-14",
        "failure": {"name": "handover_certificate", "occurrence": 1},
        "description": "The design register search for SC-14 returns SC-41's loading-bay design (class 4) first, so SC-14 is tagged green for class 4 with blockwork on lift 3, and the handover certificate finds SC-14 is a class 2 design.",
    },
    {
        "case": "zzzzm_scaffold_old_ties", "input": "mill", "switch": "since_dropped", "fault_kind": "tool_ignores_argument",
        "root": {"name": "tie_test_log", "occurrence": 1, "kind": "tool"}, "root_has": "SC-22",
        "failure": {"name": "handover_certificate", "occurrence": 1},
        "description": "The tie-test log ignores its 'since' argument and returns SC-22's January pull-out tests too, the tag relies on T-0861 and T-0862, and the certificate refuses tie tests older than the 7-day window.",
    },
    {
        "case": "zzzzm_scaffold_seven_days", "input": "harbour", "switch": "strictly_older", "fault_kind": "off_by_one",
        "root": {"name": "inspection_due", "occurrence": 1, "kind": "condition"}, "root_has": "SC-31",
        "failure": {"name": "handover_certificate", "occurrence": 1},
        "description": "The 7-day rule is checked as more than 7 days instead of 7 or more, so SC-31 and SC-09 (last inspected 2026-03-04, due today) are passed over and the handover certificate finds them missing from the round.",
    },
    {
        "case": "zzzzm_scaffold_heavy_duty", "input": "quay", "switch": "class_from_boards", "fault_kind": "hallucinated_value",
        "root": {"name": "ChatCompletion", "occurrence": 2, "kind": "llm"},
        "failure": {"name": "handover_certificate", "occurrence": 1},
        "description": "Reading 'heavy duty boards' in SC-52's notes, the model proposes load class 4 although the design record it was given says class 2, and the certificate refuses a tag with a class the design does not have.",
    },
    {
        "case": "zzzzm_scaffold_last_week_notes", "input": "elm", "switch": "notes_cache", "fault_kind": "stale_data",
        "root": {"name": "field_notes", "occurrence": 2, "kind": "tool"}, "root_has": "SC-62",
        "failure": {"name": "handover_certificate", "occurrence": 1},
        "description": "The field-notes tool answers SC-62 from its cache with last week's notes (2026-03-04), so the tag cites an inspection record that is not today's and the certificate refuses it.",
    },
]


class CertificateRefused(Exception):
    pass


class PrinterJam(Exception):
    pass


_otlp: Otlp | None = None
_client: OpenAI | None = None
_model = "fake-model"


def setup(env: dict) -> None:
    global _otlp, _client, _model
    _otlp = Otlp(NAME)
    _otlp.instrument()
    _client = OpenAI(base_url=env["server"].base_url, api_key="not-needed", max_retries=0)
    _model = env["server"].model


def teardown(env: dict) -> None:
    _otlp.uninstrument()


# -- tools ----------------------------------------------------------------------------------------

def site_register(site: str) -> dict:
    return {"site": site, "scaffolds": [{"scaffold": sid, "last_inspected": s["last"], "design": s["design"]}
                                        for sid, s in SITES[site].items()]}


def inspection_due(item: dict) -> dict:
    """The 7-day rule: a scaffold is inspected at least every 7 days."""
    age = (TODAY - date.fromisoformat(item["last_inspected"])).days
    due = (age > 7) if switched("strictly_older") else (age >= 7)
    return {"scaffold": item["scaffold"], "age_days": age, "due": due}


def design_register(site: str, scaffold: str) -> list[dict]:
    docs = []
    for sid, s in SITES[site].items():
        if switched("digit_search"):
            score = 1.0 if sorted(re.sub(r"\D", "", sid)) == sorted(re.sub(r"\D", "", scaffold)) else 0.0
            score -= 0.01 * (sid == scaffold)  # equal digits: the register lists the larger design first
        else:
            score = 1.0 if sid == scaffold else 0.0
        if score > 0:
            docs.append({"id": s["design"], "content": f"{sid}: load class {s['class']}, {s['ties']} ties required",
                         "score": round(score, 2), "metadata": {"scaffold": sid, "load_class": s["class"], "ties_required": s["ties"]}})
    return sorted(docs, key=lambda d: -d["score"])


def field_notes(site: str, scaffold: str) -> dict:
    if switched("notes_cache") and (site, scaffold) in LAST_WEEK_NOTES:
        day, text = LAST_WEEK_NOTES[(site, scaffold)]
        return {"scaffold": scaffold, "record": f"FN-{scaffold}-{day.replace('-', '')}", "date": day, "notes": text}
    s = SITES[site][scaffold]
    return {"scaffold": scaffold, "record": f"FN-{scaffold}-{TODAY.strftime('%Y%m%d')}", "date": TODAY.isoformat(), "notes": s["notes"]}


def tie_test_log(site: str, scaffold: str, since: str) -> dict:
    tests = SITES[site][scaffold]["tests"]
    if not switched("since_dropped"):
        tests = [t for t in tests if t[1] >= since]
    return {"scaffold": scaffold, "since": since, "tests": [{"test": t, "date": d, "kN": kn} for t, d, kn in tests]}


def print_tag(scaffold: str, tag: str, load_class: int, record: str) -> dict:
    if _printer["jams"] > 0:
        _printer["jams"] -= 1
        raise PrinterJam("tag printer TP-2 jammed: card not fed")
    return {"scaffold": scaffold, "tag": tag, "load_class": load_class, "printed": f"TAG-{scaffold}-{TODAY.strftime('%m%d')}", "record": record}


def handover_certificate(site: str, tags: list[dict], summary: str) -> dict:
    due = [sid for sid, s in SITES[site].items() if (TODAY - date.fromisoformat(s["last"])).days >= 7]
    tagged = {t["scaffold"] for t in tags}
    missing = [sid for sid in due if sid not in tagged]
    if missing:
        raise CertificateRefused(f"{site}: {', '.join(missing)} due for the 7-day inspection on {TODAY} and missing from the round")
    window = (TODAY - timedelta(days=7)).isoformat()
    for t in tags:
        s = SITES[site][t["scaffold"]]
        if t["load_class"] != s["class"]:
            raise CertificateRefused(f"{t['scaffold']} tag shows load class {t['load_class']}; design {s['design']} is class {s['class']}")
        dates = {x: d for x, d, _ in s["tests"]}
        old = [x for x in t["ties_tested"] if dates.get(x, "") < window]
        if old:
            raise CertificateRefused(f"{t['scaffold']} relies on tie tests {', '.join(old)} dated {dates[old[0]]}, outside the 7-day window from {window}")
        if not t["record"].endswith(TODAY.strftime("%Y%m%d")):
            raise CertificateRefused(f"{t['scaffold']} tag cites inspection record {t['record']}, not today's inspection")
    return {"certificate": f"HC-{site.split()[0].upper()}-{TODAY.strftime('%m%d')}", "tags": len(tags)}


# -- the agent ------------------------------------------------------------------------------------

TAG_SYSTEM = ("You are a scaffold inspector. From the design record, today's field notes and the tie tests, propose "
              "the tag as JSON {scaffold, tag: green|yellow|red, load_class, defects: [str], ties_tested: [test ids], record}.")
SUMMARY_SYSTEM = "Summarise the scaffold round for the site manager in two sentences."


def _tool(name: str, fn, **kwargs):
    with _otlp.span(name, "TOOL", input=kwargs, tool__name=name) as sp:
        return sp.output(fn(**kwargs))


def _chat(messages: list[dict]) -> str:
    reply = _client.chat.completions.create(model=_model, messages=messages)
    return reply.choices[0].message.content


def record(inp: dict, dest: Path, env: dict) -> None:
    site = inp["site"]
    _printer["jams"] = inp["jams"]
    try:
        with _otlp.span(NAME, "AGENT", input=f"Inspection round {site} {TODAY}", metadata=json.dumps({"task": inp["task"], "site": site})) as top:
            register = _tool("site_register", site_register, site=site)
            tags = []
            for item in register["scaffolds"]:
                with _otlp.span("inspection_due", "GUARDRAIL", input=item) as sp:
                    rule = sp.output(inspection_due(item))
                if not rule["due"]:
                    continue
                sid = item["scaffold"]
                with _otlp.span("design_register", "RETRIEVER", input={"site": site, "scaffold": sid}) as sp:
                    docs = design_register(site, sid)
                    sp.documents(docs)
                design = docs[0]["metadata"]
                notes = _tool("field_notes", field_notes, site=site, scaffold=sid)
                ties = _tool("tie_test_log", tie_test_log, site=site, scaffold=sid, since=(TODAY - timedelta(days=7)).isoformat())
                answer = _chat([{"role": "system", "content": TAG_SYSTEM},
                                {"role": "user", "content": dumps({"design": design, "notes": notes, "tie_tests": ties})}])
                with _otlp.span("read_findings", "CHAIN", input=answer) as sp:
                    proposal = json.loads(answer)
                    proposal["load_class"] = int(proposal["load_class"])
                    sp.output(proposal)
                with _otlp.span("tag_rules", "GUARDRAIL", input=proposal) as sp:
                    tag = proposal["tag"]
                    if proposal["defects"] and tag == "green":
                        tag = "yellow"
                    if len(proposal["ties_tested"]) == 0:
                        tag = "red"
                    sp.output({"scaffold": sid, "tag": tag})
                for attempt in (1, 2):
                    try:
                        printed = _tool("print_tag", print_tag, scaffold=sid, tag=tag, load_class=proposal["load_class"], record=proposal["record"])
                        break
                    except PrinterJam:
                        if attempt == 2:
                            raise
                tags.append({**printed, "ties_tested": proposal["ties_tested"]})
            summary = _chat([{"role": "system", "content": SUMMARY_SYSTEM}, {"role": "user", "content": dumps({"site": site, "tags": tags})}])
            cert = _tool("handover_certificate", handover_certificate, site=site, tags=tags, summary=summary)
            top.output(cert)
    except CertificateRefused:
        pass
    dest.write_text(json.dumps(_otlp.document()))


# -- the model ------------------------------------------------------------------------------------

def brain(request) -> str:
    messages = request.body["messages"]
    system = system_of(messages)
    data = json.loads(last_user(messages))
    if system == TAG_SYSTEM:
        design, notes, ties = data["design"], data["notes"], data["tie_tests"]
        text = notes["notes"]
        defects = [s.strip() for s in re.split(r"(?<=\.)\s", text) if re.search(r"split|missing|damaged|loose", s)]
        defects = [d for d in defects if "replaced" not in d]
        load_class = design["load_class"]
        if "heavy duty" in text and switched("class_from_boards"):
            load_class = 4
        tested = [t["test"] for t in ties["tests"]]
        tag = "green" if tested and not defects else ("red" if not tested else "yellow")
        return json.dumps({"scaffold": notes["scaffold"], "tag": tag, "load_class": load_class, "defects": defects,
                           "ties_tested": tested, "record": notes["record"]})
    if system == SUMMARY_SYSTEM:
        tags = data["tags"]
        greens = [t["scaffold"] for t in tags if t["tag"] == "green"]
        return (f"{len(tags)} scaffolds inspected at {data['site']}; {len(greens)} tagged green. "
                "Tags printed and fixed at each access point.")
    return "I only inspect scaffolds."
