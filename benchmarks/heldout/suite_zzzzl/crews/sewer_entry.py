"""sewer-entry: a wastewater network crew's confined-space entry permit for manhole work (OpenTelemetry, OTLP).

Before a crew goes down a sewer manhole the agent reads the manhole record, classifies the chamber, finds
the entry procedure, reads and parses the pre-entry gas test, checks the storm alerts upstream, clears the
crew's certificates (swapping in the reserve when a card has lapsed), has the model write the method
statement, has a rescue sub-agent line up rescue cover, and asks the permit system for the permit. Every
step is an OpenTelemetry span with OpenInference attributes; the model calls are traced by
`openinference-instrumentation-openai`; the trace is written as OTLP JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ._common import Env, OtlpTrace, first_json, last_user, set_documents, set_output, system_of, tool_results

NAME = "sewer-entry"
ROUTE = "otlp"
DOMAIN = "wastewater network crew: confined-space entry, gas tests, storm alerts, rescue cover"
SHAPE = ("OTLP/OpenInference: tool spans, chamber classifier, procedure retriever, gas-text parser, crew "
         "guardrail with a reserve swap, instrumented OpenAI call + parser, rescue sub-agent (instrumented "
         "tool loop with ids), permit tool")

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


MANHOLES = {
    "MH-4471": {"depth_m": 4.2, "diameter_mm": 1200, "catchment": "CSO-17", "street": "Canal Street"},
    "MH-2290": {"depth_m": 2.6, "diameter_mm": 1050, "catchment": "CSO-09", "street": "Mere Lane"},
    "MH-7315": {"depth_m": 6.2, "diameter_mm": 1500, "catchment": "CSO-22", "street": "Tannery Road"},
    "MH-5108": {"depth_m": 3.4, "diameter_mm": 1200, "catchment": "CSO-17", "street": "Albion Way"},
    "MH-6602": {"depth_m": 2.9, "diameter_mm": 1050, "catchment": "CSO-31", "street": "Fold Street"},
}
GAS = {
    "MH-4471": "GM-204 2025-10-14 08:42 O2 20.9% | H2S 3 ppm (peak 14 ppm) | CO 2 ppm | LEL 0%",
    "MH-2290": "GM-118 2025-10-15 08:35 O2 20.8% | H2S 1 ppm (peak 2 ppm) | CO 0 ppm | LEL 0%",
    "MH-7315": "GM-204 2025-10-16 08:50 O2 20.6% | H2S 2 ppm (peak 4 ppm) | CO 3 ppm | LEL 1%",
    "MH-5108": "GM-118 2025-10-17 08:40 O2 20.9% | H2S 0 ppm (peak 1 ppm) | CO 1 ppm | LEL 0%",
    "MH-6602": "GM-311 2025-10-20 08:45 O2 20.7% | H2S 2 ppm (peak 3 ppm) | CO 0 ppm | LEL 0%",
}
ALERTS = {"CSO-09": [{"cso": "CSO-09", "type": "spill risk", "from": "06:00", "until": "11:00"}]}
CERTS = {"R. Patel": "2026-04-30", "D. Kerr": "2026-01-15", "S. Obi": "2025-12-31", "T. Lund": "2026-08-31",
         "M. Grey": "2025-07-31", "A. Novak": "2026-03-31", "J. Ferris": "2026-02-28", "K. Doyle": "2026-05-31",
         "L. Shah": "2026-06-30"}
SOPS = [
    {"id": "SOP-NC1-MH", "category": "NC1", "asset": "manhole",
     "content": "NC1 entry procedure, manhole under 1.5 m: gas detector, harness, top-man at the opening.",
     "equipment": ["gas detector", "harness"]},
    {"id": "SOP-NC2-MH", "category": "NC2", "asset": "manhole",
     "content": "NC2 entry procedure, manhole 1.5 m to 3.0 m: gas detector, tripod, harness, escape sets, top-man.",
     "equipment": ["gas detector", "tripod", "harness", "escape sets"]},
    {"id": "SOP-NC3-WW", "category": "NC3", "asset": "wet well",
     "content": "NC3 entry procedure, pumping station wet well: lock out duty and assist pumps, gas detector, "
                "harness on the fixed davit, escape sets, top-man and standby.",
     "equipment": ["gas detector", "harness", "fixed davit", "escape sets"]},
    {"id": "SOP-NC3-MH", "category": "NC3", "asset": "manhole",
     "content": "NC3 entry procedure, manhole 3.0 m or deeper: gas detector, tripod and winch, harness, escape "
                "sets, top-man and standby.",
     "equipment": ["gas detector", "tripod", "winch", "harness", "escape sets"]},
]
REQUIRED = {"NC1": {"gas detector", "harness"}, "NC2": {"gas detector", "tripod", "harness", "escape sets"},
            "NC3": {"gas detector", "tripod", "winch", "harness", "escape sets"}}

INPUTS = [
    {"job": "WO-88120", "manhole": "MH-4471", "work": "replace step irons", "date": "2025-10-14", "start": "09:00",
     "crew": ["R. Patel", "D. Kerr", "S. Obi"], "reserve": "T. Lund"},
    {"job": "WO-88207", "manhole": "MH-2290", "work": "remove fat deposit", "date": "2025-10-15", "start": "09:00",
     "crew": ["A. Novak", "J. Ferris", "K. Doyle"], "reserve": "L. Shah"},
    {"job": "WO-88311", "manhole": "MH-7315", "work": "survey benching", "date": "2025-10-16", "start": "09:30",
     "crew": ["R. Patel", "S. Obi", "T. Lund"], "reserve": "K. Doyle"},
    {"job": "WO-88340", "manhole": "MH-5108", "work": "repair chamber wall", "date": "2025-10-17", "start": "09:00",
     "crew": ["M. Grey", "A. Novak", "J. Ferris"], "reserve": "L. Shah"},
    {"job": "WO-88402", "manhole": "MH-6602", "work": "replace cover frame", "date": "2025-10-20", "start": "10:00",
     "crew": ["D. Kerr", "K. Doyle", "L. Shah"], "reserve": "T. Lund"},
]

CASES = [
    {"id": "sewer_gas_peak", "input": 0, "switch": "first_number", "fault_kind": "lossy_parsing",
     "root": ("parse_gas_readings", 1), "failure": ("issue_permit", 1),
     "description": "parse_gas_readings keeps the first H2S figure (3 ppm) and drops the peak of 14 ppm, so the "
                    "method statement plans no breathing apparatus and the permit system, reading the monitor's "
                    "peak, refuses the permit."},
    {"id": "sewer_radar_timeout", "input": 1, "switch": "radar_timeout", "fault_kind": "swallowed_error",
     "root": ("get_rainfall_alerts", 1), "failure": ("issue_permit", 1),
     "description": "get_rainfall_alerts catches a radar service timeout and answers no alerts, so the entry stays "
                    "at 09:00 inside CSO-09's spill-risk alert until 11:00 and the permit is refused."},
    {"id": "sewer_wet_well_procedure", "input": 2, "switch": "wet_well_doc", "fault_kind": "wrong_retrieval",
     "root": ("entry_procedures", 1), "failure": ("issue_permit", 1),
     "description": "entry_procedures returns the NC3 procedure for a pumping station wet well (fixed davit) for "
                    "the 6.2 m manhole MH-7315, so the method statement has no tripod and winch and the permit is "
                    "refused."},
    {"id": "sewer_first_card", "input": 3, "switch": "skip_first", "fault_kind": "off_by_one",
     "root": ("crew_gate", 1), "failure": ("issue_permit", 1),
     "description": "crew_gate checks the cards from the second crew member on, so M. Grey's card that lapsed on "
                    "2025-07-31 is not caught, the reserve is not called in and the permit is refused."},
    {"id": "sewer_duration_text", "input": 4, "switch": "duration_words", "fault_kind": "format_drift",
     "root": ("ChatCompletion", 1), "failure": ("issue_permit", 1),
     "description": "the method-statement model writes the entry duration as '2h30' instead of the HH:MM it was "
                    "asked for, the parser keeps it and the permit system rejects the permit."},
]


# -- the model ------------------------------------------------------------------------------------------

def _method_answer(ctx: dict) -> str:
    gas = ctx["gas"]
    peak = gas.get("h2s_peak_ppm", gas["h2s_ppm"])
    ba = peak >= 10 or gas["o2_pct"] < 19.5
    start_h, start_m = map(int, ctx["requested_start"].split(":"))
    start = start_h * 60 + start_m
    for a in ctx["alerts"]:
        uh, um = map(int, a["until"].split(":"))
        start = max(start, uh * 60 + um + 30)
    duration = "2h30" if _on("duration_words") else "02:30"
    return "```json\n" + json.dumps({
        "category": ctx["category"], "equipment": ctx["procedure"]["equipment"] + (["breathing apparatus"] if ba else []),
        "ba_required": ba, "start": f"{start // 60:02d}:{start % 60:02d}", "duration": duration,
        "roles": ctx["roles"], "notes": f"entry to {ctx['manhole']} for {ctx['work']}"}) + "\n```"


def _rescue_answer(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    ask = json.loads(last_user(request))
    results = tool_results(request)
    if not results:
        return Reply(tool_calls=(tool_call("get_rescue_cover", {"date": ask["date"], "catchment": ask["catchment"]}),))
    cover = results[0]["content"]
    return json.dumps({"rescue_team": cover["team"], "response_min": cover["response_min"],
                       "hospital": cover["hospital"], "category": ask["category"]})


def brain(request: Any) -> Any:
    system = system_of(request)
    if system.startswith("You write the method statement"):
        return _method_answer(json.loads(last_user(request)))
    if system.startswith("You arrange rescue cover"):
        return _rescue_answer(request)
    raise ValueError("unexpected prompt")


# -- steps ----------------------------------------------------------------------------------------------

def _tool(tr: OtlpTrace, name: str, args: dict, fn) -> Any:
    with tr.span(name, "TOOL", args) as sp:
        return set_output(sp, fn(**args))


def get_manhole_record(manhole: str) -> dict:
    return {"manhole": manhole, **MANHOLES[manhole]}


def get_gas_readings(manhole: str) -> str:
    return GAS[manhole]


def _radar(catchment: str) -> list[dict]:
    if _on("radar_timeout"):
        raise TimeoutError("rainfall radar service did not answer within 5 s")
    return [dict(a) for a in ALERTS.get(catchment, [])]


def get_rainfall_alerts(catchment: str) -> dict:
    try:
        alerts = _radar(catchment)
    except TimeoutError:
        alerts = []
    return {"catchment": catchment, "alerts": alerts}


def get_crew_certs(crew: list[str]) -> list[dict]:
    return [{"name": n, "confined_space_card_expires": CERTS[n]} for n in crew]


def get_rescue_cover(date: str, catchment: str) -> dict:
    return {"date": date, "team": "RT-North" if catchment in ("CSO-17", "CSO-09") else "RT-South",
            "response_min": 18, "hospital": "Royal Infirmary"}


def issue_permit(job: dict, statement: dict, rescue: dict) -> dict:
    mh = MANHOLES[job["manhole"]]
    depth = mh["depth_m"]
    category = "NC1" if depth < 1.5 else "NC2" if depth < 3.0 else "NC3"
    peak = int(re.search(r"peak (\d+) ppm", GAS[job["manhole"]]).group(1))
    if peak >= 10 and not statement["ba_required"]:
        raise ValueError(f"gas monitor log for {job['manhole']} shows an H2S peak of {peak} ppm: breathing "
                         f"apparatus required, the method statement has none")
    missing = REQUIRED[category] - set(statement["equipment"])
    if missing:
        raise ValueError(f"{job['manhole']} ({depth} m, {category}): the method statement has no "
                         f"{' and '.join(sorted(missing))}")
    if not re.fullmatch(r"\d\d:\d\d", statement["duration"]):
        raise ValueError(f"permit duration {statement['duration']!r} is not HH:MM")
    for a in ALERTS.get(mh["catchment"], []):
        if a["from"] <= statement["start"] < a["until"]:
            raise ValueError(f"{a['cso']} {a['type']} alert until {a['until']}: entry at {statement['start']} "
                             f"refused")
    people = [statement["roles"]["top_man"], statement["roles"]["standby"], *statement["roles"]["entrants"]]
    for p in people:
        if CERTS[p] < job["date"]:
            raise ValueError(f"{p}'s confined-space card expired {CERTS[p]}: not permitted on the entry")
    return {"permit": f"CSE-{job['job'][3:]}", "manhole": job["manhole"], "valid": f"{job['date']} {statement['start']}",
            "rescue_team": rescue["rescue_team"]}


# -- the agent ----------------------------------------------------------------------------------------

METHOD_SYSTEM = ("You write the method statement for a confined-space entry from the record, the procedure, "
                 "the gas test, storm alerts and the crew. Answer JSON: category, equipment, ba_required, start "
                 "(after any alert, with 30 minutes' margin), duration (HH:MM), roles, notes.")
RESCUE_SYSTEM = "You arrange rescue cover for a confined-space entry: check the rescue team on call, answer JSON."
RESCUE_TOOLS = [{"type": "function", "function": {
    "name": "get_rescue_cover", "description": "Rescue team on call for a date and catchment.",
    "parameters": {"type": "object", "properties": {"date": {"type": "string"}, "catchment": {"type": "string"}},
                   "required": ["date", "catchment"]}}}]


def _agent(tr: OtlpTrace, job: dict, env: Env) -> None:
    record = _tool(tr, "get_manhole_record", {"manhole": job["manhole"]}, get_manhole_record)
    with tr.span("classify_chamber", "CHAIN", {"depth_m": record["depth_m"]}) as sp:
        d = record["depth_m"]
        category = set_output(sp, {"category": "NC1" if d < 1.5 else "NC2" if d < 3.0 else "NC3"})["category"]
    query = f"{category} entry procedure manhole {record['depth_m']} m"
    with tr.span("entry_procedures", "RETRIEVER", query) as sp:
        hits = [s for s in SOPS if s["category"] == category]
        if not _on("wet_well_doc"):
            hits = [s for s in hits if s["asset"] == "manhole"]
        procedure = hits[0]
        set_documents(sp, [{"id": procedure["id"], "content": procedure["content"], "score": 0.91,
                            "metadata": {"equipment": procedure["equipment"], "asset": procedure["asset"]}}])
    raw = _tool(tr, "get_gas_readings", {"manhole": job["manhole"]}, get_gas_readings)
    with tr.span("parse_gas_readings", "CHAIN", raw) as sp:
        gas = {"monitor": raw.split()[0], "o2_pct": float(re.search(r"O2 ([\d.]+)%", raw).group(1))}
        if _on("first_number"):
            gas["h2s_ppm"] = int(re.search(r"H2S (\d+)", raw).group(1))
        else:
            m = re.search(r"H2S (\d+) ppm \(peak (\d+) ppm\)", raw)
            gas["h2s_ppm"], gas["h2s_peak_ppm"] = int(m.group(1)), int(m.group(2))
        gas["co_ppm"] = int(re.search(r"CO (\d+)", raw).group(1))
        gas["lel_pct"] = int(re.search(r"LEL (\d+)%", raw).group(1))
        set_output(sp, gas)
    alerts = _tool(tr, "get_rainfall_alerts", {"catchment": record["catchment"]}, get_rainfall_alerts)["alerts"]
    crew = list(job["crew"])
    certs = _tool(tr, "get_crew_certs", {"crew": crew}, get_crew_certs)
    with tr.span("crew_gate", "GUARDRAIL", {"certs": certs, "date": job["date"]}) as sp:
        start = 1 if _on("skip_first") else 0
        lapsed = [c["name"] for c in certs[start:] if c["confined_space_card_expires"] < job["date"]]
        set_output(sp, {"passed": not lapsed, "lapsed": lapsed})
    if lapsed:
        crew = [job["reserve"] if n in lapsed else n for n in crew]
    with tr.span("assign_roles", "CHAIN", {"crew": crew, "category": category}) as sp:
        roles = set_output(sp, {"top_man": crew[0], "standby": crew[1], "entrants": crew[2:]})
    ctx = {"manhole": job["manhole"], "work": job["work"], "record": record, "category": category,
           "procedure": {"id": procedure["id"], "text": procedure["content"], "equipment": procedure["equipment"]},
           "gas": gas, "alerts": alerts, "requested_start": job["start"], "roles": roles}
    reply = env.client.chat.completions.create(model=env.model, messages=[
        {"role": "system", "content": METHOD_SYSTEM}, {"role": "user", "content": json.dumps(ctx)}])
    with tr.span("parse_method_statement", "CHAIN", reply.choices[0].message.content) as sp:
        statement = set_output(sp, first_json(reply.choices[0].message.content))
    ask = {"date": job["date"], "catchment": record["catchment"], "category": category, "manhole": job["manhole"]}
    with tr.span("rescue_planner", "AGENT", ask, agent__name="rescue_planner") as sp:
        msgs = [{"role": "system", "content": RESCUE_SYSTEM}, {"role": "user", "content": json.dumps(ask)}]
        while True:
            r = env.client.chat.completions.create(model=env.model, messages=msgs, tools=RESCUE_TOOLS)
            msg = r.choices[0].message
            if not msg.tool_calls:
                break
            msgs.append(msg.model_dump(exclude_none=True))
            for call in msg.tool_calls:
                args = json.loads(call.function.arguments)
                with tr.span(call.function.name, "TOOL", args, tool__id=call.id) as tsp:
                    out = set_output(tsp, get_rescue_cover(**args))
                msgs.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(out)})
        rescue = set_output(sp, json.loads(msg.content))
    _tool(tr, "issue_permit", {"job": job, "statement": statement, "rescue": rescue}, issue_permit)


def run(inp: dict, path: str, env: Env) -> None:
    tr = OtlpTrace(NAME)
    task = f"entry permit {inp['manhole']} {inp['job']} {inp['date']}"
    try:
        with tr.span(NAME, "AGENT", inp, metadata=json.dumps({"task": task}), agent__name=NAME):
            _agent(tr, inp, env)
    except ValueError:
        pass  # the permit system refused: the trace records it
    finally:
        tr.write(path)
