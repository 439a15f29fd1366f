"""River clean-up day run by a volunteer rivers trust: crew reports are tallied, checked against the skip's
weighbridge ticket and submitted to the national litter survey.

Route: otlp (the OpenTelemetry SDK with OpenInference attributes; the model calls traced by
openinference-instrumentation-openai; exported as one OTLP JSON document). Shape: input, site retriever, a loop
over crews (report tool, parser, memory write), a categorising model call, weighbridge tool, reconciliation
guardrail, survey submission tool, a thank-you model call and a newsletter tool.
"""

from __future__ import annotations

import json
import re

import _common
from _common import chat, last_user_json, set_output, span_attrs, system_of, write_otlp

NAME = "river-cleanup-tally"
ROUTE = "otlp"
DOMAIN = "volunteer rivers-trust clean-up day tally"
SHAPE = "input, retriever, per-crew tool/parse/memory loop, llm categoriser, weighbridge tool, guardrail, submit tool, llm note, tool"
SWITCH = None

SITES = {  # the survey's current site register
    "TB-4": "Tannery Beck (footbridge to weir)", "EW-1": "Eden Walk north bank", "EW-2": "Eden Walk south bank",
    "MR-3": "Mill Race culvert", "PK-1": "Petteril confluence", "PK-2": "Petteril allotments",
}
SITE_CACHE_2024 = {"TB-2": "Tannery Beck (footbridge to weir)", "EW-1": "Eden Walk north bank",
                   "EW-2": "Eden Walk south bank", "MR-3": "Mill Race culvert"}
REPORTS = {
    "C1": "Crew 1 EW-1: 11 bags, 42 kg, tyre x1, trolley x0, bottles 160",
    "C2": "Crew 2 TB-4: 9 bags, 61.5 lb, tyre x0, trolley x1, bottles 95",
    "C3": "Crew 3 MR-3: 6 bags, 27 kg, tyre x2, trolley x0, bottles 40",
    "C4": "Crew 4 EW-2: 8 bags, 30 kg, tyre x0, trolley x0, bottles 120",
    "C5": "Crew 5 PK-1: 7 bags, 25 kg, tyre x1, trolley x1, bottles 60",
    "C6": "Crew 6 PK-2: 5 bags, 39.5 lb, tyre x0, trolley x0, bottles 35",
}
WEIGHBRIDGE = {"WB-5501": 102.0, "WB-5502": 60.0, "WB-5503": 88.0, "WB-5504": 78.0, "WB-5505": 127.0}

INPUTS = [
    {"task": "Eden clean-up 2025-09-20, north reach", "event": "Eden clean 2025-09-20 N", "area": "Eden north",
     "crews": ["C1", "C2", "C3"], "ticket": "WB-5501"},
    {"task": "Eden clean-up 2025-09-20, Tannery Beck and walk", "event": "Eden clean 2025-09-20 TB",
     "area": "Eden north", "crews": ["C2", "C4"], "ticket": "WB-5502"},
    {"task": "Petteril clean-up 2025-09-27", "event": "Petteril clean 2025-09-27", "area": "Petteril",
     "crews": ["C5", "C6", "C1"], "ticket": "WB-5503"},
    {"task": "Eden clean-up 2025-10-04, walk and culvert", "event": "Eden clean 2025-10-04", "area": "Eden south",
     "crews": ["C4", "C3", "C6"], "ticket": "WB-5504"},
    {"task": "Eden clean-up 2025-10-11, whole reach", "event": "Eden clean 2025-10-11", "area": "Eden north",
     "crews": ["C1", "C3", "C4", "C5"], "ticket": "WB-5505"},
]
AREAS = {"Eden north": ["TB-4", "EW-1", "EW-2", "MR-3"], "Eden south": ["EW-2", "MR-3", "PK-2"],
         "Petteril": ["PK-1", "PK-2", "EW-1"]}

CASES = [
    {"id": "cleanup_tally-1", "input": 0, "kind": "unit_error",
     "root": ("parse_crew_report", 2, "parse"), "failure": ("reconcile_weights", 1),
     "what": "Crew 2's '61.5 lb' is parsed as 61.5 kg (27.9 kg)",
     "description": "The crew-report parser read Tannery Beck's 61.5 lb as 61.5 kg, so the crews' total is 33 kg "
                    "over the skip's weighbridge ticket and the reconciliation fails."},
    {"id": "cleanup_tally-2", "input": 1, "kind": "stale_data",
     "root": ("fetch_site_list", 1, "retrieval"), "failure": ("submit_survey", 1),
     "what": "the site list came from the 2024 cache, where Tannery Beck is TB-2 (retired; now TB-4)",
     "description": "The site retriever served last year's cached register, in which Tannery Beck is still TB-2, "
                    "and the national survey refuses the retired site code."},
    {"id": "cleanup_tally-3", "input": 2, "kind": "bad_memory_write",
     "root": ("save_tally", 3, "state"), "failure": ("reconcile_weights", 1),
     "what": "Crew 1's tally is saved under PK-2, replacing Crew 6's entry",
     "description": "The tally memory stored Crew 1's numbers under the previous crew's site key, replacing the "
                    "Petteril allotments entry, so the day's weights no longer match the weighbridge."},
    {"id": "cleanup_tally-4", "input": 3, "kind": "format_drift",
     "root": ("ChatCompletion", 1, "llm"), "failure": ("submit_survey", 1),
     "what": "the categoriser answered item lines like 'Tyres (2)' instead of {category: count} objects",
     "description": "The categorising model returned its survey categories as text lines instead of the "
                    "category-to-count object it normally gives, and the survey's schema check refuses them."},
    {"id": "cleanup_tally-5", "input": 4, "kind": "swallowed_error",
     "root": ("fetch_weighbridge", 1, "tool"), "failure": ("reconcile_weights", 1),
     "what": "the weighbridge API answered 502 and the tool returned the depot's default ticket of 0 kg",
     "description": "The weighbridge tool hid a 502 from the skip firm's API and returned an empty ticket of 0 kg, "
                    "which the reconciliation of crew weights against the skip then rejects."},
]

CATEGORIES = {"tyre": "Tyres", "trolley": "Shopping trolleys", "bottles": "Bottles and cans"}


def _kg(text: str, convert: bool = True) -> float:
    m = re.search(r"([\d.]+) (kg|lb)", text)
    value = float(m.group(1))
    return round(value * 0.4536, 1) if m.group(2) == "lb" and convert else value


def execute(inp: dict, out_path: str) -> None:
    tracer = _common.otlp_tracer(NAME)
    try:
        _run(tracer, inp)
    except (ValueError, RuntimeError):
        pass
    write_otlp(out_path)


def _run(tracer, inp: dict) -> None:
    with tracer.start_as_current_span(NAME, attributes=span_attrs(
            "AGENT", inp, metadata=json.dumps({"task": inp["task"]}))) as top:
        with tracer.start_as_current_span("load_event", attributes=span_attrs("CHAIN", inp, td_kind="input")) as s:
            event = dict(inp)
            set_output(s, event)
        with tracer.start_as_current_span("fetch_site_list", attributes=span_attrs(
                "RETRIEVER", {"area": event["area"]})) as s:
            register = SITES
            if SWITCH == "cleanup_tally-2":
                register = SITE_CACHE_2024  # the register as cached at last year's event
            wanted = AREAS[event["area"]]
            sites = {c: n for c, n in register.items() if c in wanted or n in {SITES[w] for w in wanted}}
            set_output(s, {"sites": sites, "register_as_of": "2024-09-14" if register is SITE_CACHE_2024 else "2025-08-30"})
        memory: dict[str, dict] = {}
        previous = None
        for crew in event["crews"]:
            with tracer.start_as_current_span("fetch_crew_report", attributes=span_attrs(
                    "TOOL", {"crew": crew}, **{"tool.name": "fetch_crew_report"})) as s:
                text = REPORTS[crew]
                set_output(s, text)
            with tracer.start_as_current_span("parse_crew_report", attributes=span_attrs(
                    "CHAIN", text, td_kind="parse")) as s:
                code = text.split()[2].rstrip(":")
                name = SITES.get(code)
                site = next((c for c, n in sites.items() if n == name), code)
                parsed = {"crew": crew, "site": site, "bags": int(re.search(r"(\d+) bags", text).group(1)),
                          "kg": _kg(text, convert=not (SWITCH == "cleanup_tally-1" and crew == "C2")),
                          "items": {k: int(re.search(k + r" x?(\d+)", text).group(1)) for k in CATEGORIES}}
                set_output(s, parsed)
            with tracer.start_as_current_span("save_tally", attributes=span_attrs(
                    "CHAIN", parsed, td_kind="state")) as s:
                key = parsed["site"]
                if SWITCH == "cleanup_tally-3" and previous is not None and crew == "C1":
                    key = previous
                memory[key] = parsed
                previous = parsed["site"]
                set_output(s, {"key": key, "sites_in_memory": sorted(memory)})
        totals = {k: sum(m["items"][k] for m in memory.values()) for k in CATEGORIES}
        reply = chat([
            {"role": "system", "content": "Map clean-up item counts to the national litter survey's categories. "
                                          "Answer JSON {\"categories\": {category: count}}."},
            {"role": "user", "content": json.dumps({"counts": totals})},
        ])
        with tracer.start_as_current_span("read_categories", attributes=span_attrs(
                "CHAIN", reply["content"], td_kind="parse")) as s:
            categories = json.loads(reply["content"])["categories"]
            set_output(s, categories)
        with tracer.start_as_current_span("fetch_weighbridge", attributes=span_attrs(
                "TOOL", {"ticket": event["ticket"]}, **{"tool.name": "fetch_weighbridge"})) as s:
            try:
                if SWITCH == "cleanup_tally-5":
                    raise ConnectionError("skip firm API answered 502 Bad Gateway")
                ticket = {"ticket": event["ticket"], "net_kg": WEIGHBRIDGE[event["ticket"]]}
            except ConnectionError:
                ticket = {"ticket": event["ticket"], "net_kg": 0.0}
            set_output(s, ticket)
        with tracer.start_as_current_span("reconcile_weights", attributes=span_attrs(
                "GUARDRAIL", {"crews_kg": [m["kg"] for m in memory.values()], "ticket": ticket})) as s:
            crews_kg = round(sum(m["kg"] for m in memory.values()), 1)
            if abs(crews_kg - ticket["net_kg"]) > 0.1 * max(crews_kg, 1):
                raise ValueError(f"crew reports total {crews_kg} kg; weighbridge ticket {ticket['ticket']} shows "
                                 f"{ticket['net_kg']} kg")
            set_output(s, {"crews_kg": crews_kg, "ticket_kg": ticket["net_kg"]})
        with tracer.start_as_current_span("submit_survey", attributes=span_attrs(
                "TOOL", {"event": event["event"], "sites": sorted(memory), "categories": categories},
                **{"tool.name": "submit_survey"})) as s:
            for code in memory:
                if code not in SITES:
                    raise ValueError(f"litter survey: site code {code} is retired; the register has "
                                     f"{', '.join(sorted(SITES))}")
            if not isinstance(categories, dict) or not all(isinstance(v, int) for v in categories.values()):
                raise ValueError("litter survey: categories must be an object of category -> integer count")
            set_output(s, {"submission": f"LS-{event['ticket'][3:]}", "sites": len(memory)})
        note = chat([
            {"role": "system", "content": "Write a two-line thank-you for the volunteers."},
            {"role": "user", "content": json.dumps({"event": event["event"], "kg": crews_kg,
                                                    "bags": sum(m["bags"] for m in memory.values())})},
        ])
        with tracer.start_as_current_span("post_newsletter", attributes=span_attrs(
                "TOOL", note["content"], **{"tool.name": "post_newsletter"})) as s:
            set_output(s, {"posted": True})
        set_output(top, {"submitted": True, "kg": crews_kg})


def brain(request):
    system = system_of(request)
    if system.startswith("Map clean-up"):
        counts = last_user_json(request)["counts"]
        if SWITCH == "cleanup_tally-4":
            return json.dumps({"categories": [f"{CATEGORIES[k]} ({v})" for k, v in counts.items()]})
        return json.dumps({"categories": {CATEGORIES[k]: v for k, v in counts.items()}})
    if system.startswith("Write a two-line"):
        d = last_user_json(request)
        return f"Thank you all for {d['event']}! {d['bags']} bags and {d['kg']} kg out of the river."
    return "Unknown request."
