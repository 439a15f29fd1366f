"""Hollow Log Foley: plans a recording session for a reel, traced with OpenInference + OpenTelemetry (OTLP JSON).

Shape: a cue-sheet retriever, then per cue a classifier model call (instrumented OpenAI client), a
parse span and a foley-pit lookup tool; a stage booking tool retried once on a busy calendar for
some reels; a session-plan model call, its parse, time blocks, an artists' scheduling tool, a
coverage check and the export.  ~25-55 spans.
"""

from __future__ import annotations

import json

from opentelemetry.trace import Status, StatusCode

from suite_common import complete, last_user, otlp, payload_after, system_of, write_otlp

NAME = "hollow-log-foley"
ROUTE = "otlp"
DOMAIN = "foley studio recording sessions"
SHAPE = "OTLP: retriever -> loop over cues (classifier model, parse, pit tool) -> stage tool with a retry -> plan model -> parse -> blocks -> scheduling tool -> coverage check -> export"

CUE_PAGE_ONLY = False
PLAN_TIMES_DRIFT = False
BLOCKS_EXTRA_SLOT = False
STAGE_BUSY_DEFAULTED = False
PIT_LOOKUP_WITHOUT_PROP = False

ACTIONS = [
    ("walks across gravel drive", "footsteps", "gravel", None),
    ("coat brushes doorframe", "cloth", "wool coat", None),
    ("drops keys on table", "props", "wood", "keys"),
    ("runs up wooden stairs", "footsteps", "wood stairs", None),
    ("pours tea into cup", "props", "ceramic", "teapot"),
    ("horse trots on cobbles", "footsteps", "cobbles", "coconut shells"),
    ("unfolds a newspaper", "props", "paper", "newspaper"),
    ("kneels in wet grass", "footsteps", "wet grass", None),
    ("zips a leather bag", "props", "leather", "holdall"),
    ("door creaks open", "props", "wood", "door rig"),
    ("splashes through puddle", "footsteps", "water", None),
    ("strikes a match", "props", "paper", "matches"),
    ("leather jacket rustle", "cloth", "leather jacket", None),
    ("walks on snow", "footsteps", "snow", "cornflour pouch"),
]
PIT = {"gravel": "P1", "wood": "P2", "wood stairs": "P2", "cobbles": "P3", "wet grass": "P4", "water": "P5",
       "snow": "P4", "ceramic": "bench", "paper": "bench", "leather": "bench", "wool coat": "rail", "leather jacket": "rail"}
PROPS = {"keys": "shelf K2", "teapot": "shelf T1", "coconut shells": "shelf H4", "newspaper": "shelf N1",
         "holdall": "shelf B3", "door rig": "door rig 1", "matches": "shelf M2", "cornflour pouch": "shelf C1"}


def _cues(reel: int, n: int) -> list[dict]:
    out = []
    t = 12 + reel * 3
    for i in range(n):
        action = ACTIONS[(reel * 5 + i * 3) % len(ACTIONS)][0]
        dur = 4 + (reel + i * 7) % 9
        out.append({"cue": i + 1, "tc_in": f"0{reel}:{t // 60:02d}:{t % 60:02d}:00", "dur_s": dur, "action": action})
        t += dur + 11
    return out


INPUTS = [
    {"film": "Low Tide", "reel": 1, "cue_count": 9, "stage": "A", "date": "2026-12-14", "booked_min": 160},
    {"film": "Low Tide", "reel": 2, "cue_count": 12, "stage": "A", "date": "2026-12-15", "booked_min": 300},
    {"film": "The Orchard", "reel": 3, "cue_count": 11, "stage": "B", "date": "2026-12-15", "booked_min": 300},
    {"film": "The Orchard", "reel": 4, "cue_count": 14, "stage": "A", "date": "2026-12-16", "booked_min": 300},
    {"film": "Northbound", "reel": 5, "cue_count": 7, "stage": "B", "date": "2026-12-17", "booked_min": 300},
]
CASES = [
    {"id": "zzzc-foley-page", "input": 3, "switch": "CUE_PAGE_ONLY", "fault_kind": "truncated_result",
     "root": {"name": "fetch_cue_sheet", "occurrence": 1, "kind": "retrieval"},
     "failure": {"name": "check_coverage", "occurrence": 1},
     "description": "The cue-sheet lookup for reel 4 returns only its first page of 10 cues out of 14, and the session is planned without cues 11 to 14."},
    {"id": "zzzc-foley-times", "input": 1, "switch": "PLAN_TIMES_DRIFT", "fault_kind": "format_drift",
     "root": {"name": "ChatCompletion", "occurrence": 13, "kind": "llm"},
     "failure": {"name": "schedule_artists", "occurrence": 1},
     "description": "The session-plan model writes its block start times as 9h00 rather than the HH:MM the studio's scheduler reads."},
    {"id": "zzzc-foley-blocks", "input": 0, "switch": "BLOCKS_EXTRA_SLOT", "fault_kind": "off_by_one",
     "root": {"name": "time_blocks", "occurrence": 1, "kind": "other"},
     "failure": {"name": "schedule_artists", "occurrence": 1},
     "description": "The time blocks add one changeover too many, a 15-minute reset after the last surface, pushing reel 1's session to 11:49, past the stage's booking until 11:40."},
    {"id": "zzzc-foley-stage", "input": 4, "switch": "STAGE_BUSY_DEFAULTED", "fault_kind": "swallowed_error",
     "root": {"name": "book_stage", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "schedule_artists", "occurrence": 1},
     "description": "The stage booking meets a busy calendar, keeps quiet about it and answers with the house default of stage B from 09:00 to 09:30."},
    {"id": "zzzc-foley-pit", "input": 2, "switch": "PIT_LOOKUP_WITHOUT_PROP", "fault_kind": "wrong_tool_args",
     "root": {"name": "find_in_pit", "occurrence": 2, "kind": "tool"},
     "failure": {"name": "export_session", "occurrence": 1},
     "description": "The pit lookup for reel 3's cue 2 is called with its surface only and no prop, so the keys it needs get no shelf."},
]
FPS = 24
STAGE_OPENS = {"A": "09:00", "B": "10:00"}


# ---------------------------------------------------------------- the fake model's behaviour
def policy(request):
    system = system_of(request)
    prompt = last_user(request)
    if system.startswith("Classify the foley"):
        action = prompt.split("Action:", 1)[1].strip()
        for text, category, surface, prop in ACTIONS:
            if text == action:
                return f"category: {category}\nsurface: {surface}\nprop: {prop or 'none'}"
        return "category: unknown\nsurface: unknown\nprop: none"
    if system.startswith("Order the cues"):
        cues = payload_after(prompt, "Cues:")
        start = payload_after(prompt, "Stage from:")
        order = sorted(cues, key=lambda c: (c["surface"], c["cue"]))
        blocks, current = [], None
        for c in order:
            if current is None or current["surface"] != c["surface"]:
                current = {"surface": c["surface"], "cues": []}
                blocks.append(current)
            current["cues"].append(c["cue"])
        h, m = map(int, start.split(":"))
        first = f"{h}h{m:02d}" if PLAN_TIMES_DRIFT else start
        return json.dumps({"start": first, "blocks": blocks})
    return "I only plan foley sessions."


# ---------------------------------------------------------------- the agent
def _minutes(t: str) -> int:
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def _clock(m: int) -> str:
    return f"{m // 60:02d}:{m % 60:02d}"


def _span(tracer, name, kind, inp):
    return tracer.start_as_current_span(name, attributes={
        "openinference.span.kind": kind, "input.value": json.dumps(inp), "input.mime_type": "application/json"})


def _out(span, value):
    span.set_attribute("output.value", json.dumps(value))
    span.set_attribute("output.mime_type", "application/json")
    return value


def session(server, tracer, inp):
    with tracer.start_as_current_span(NAME, attributes={"openinference.span.kind": "AGENT", "agent.name": NAME,
                                                         "input.value": json.dumps(inp)}) as top:
        with _span(tracer, "fetch_cue_sheet", "RETRIEVER", {"reel": inp["reel"], "film": inp["film"]}) as s:
            cues = _cues(inp["reel"], inp["cue_count"])
            if CUE_PAGE_ONLY:
                cues = cues[:10]
            _out(s, {"reel": inp["reel"], "cues": cues})
        classified = []
        for cue in cues:
            text = complete(server, [
                {"role": "system", "content": "Classify the foley need of a cue: category, surface, prop."},
                {"role": "user", "content": f"Cue {cue['cue']} at {cue['tc_in']}. Action: {cue['action']}"}])
            with _span(tracer, "parse_cue_class", "CHAIN", {"cue": cue["cue"], "text": text}) as s:
                fields = dict(line.split(": ", 1) for line in text.splitlines())
                item = {"cue": cue["cue"], "dur_s": cue["dur_s"], "category": fields["category"],
                        "surface": fields["surface"], "prop": None if fields["prop"] == "none" else fields["prop"]}
                _out(s, item)
            ask = {"surface": item["surface"], "prop": item["prop"]}
            if PIT_LOOKUP_WITHOUT_PROP and cue["cue"] == 2:
                ask = {"surface": item["surface"]}
            with _span(tracer, "find_in_pit", "TOOL", ask) as s:
                item["pit"] = _out(s, {"surface": PIT[ask["surface"]], "prop": PROPS.get(ask.get("prop") or "")})
            classified.append(item)
        stage = None
        for attempt in (1, 2):
            try:
                with _span(tracer, "book_stage", "TOOL", {"stage": inp["stage"], "date": inp["date"], "attempt": attempt}) as s:
                    busy = attempt == 1 and inp["reel"] % 2 == 1
                    if busy and STAGE_BUSY_DEFAULTED:
                        stage = _out(s, {"stage": "B", "from": "09:00", "until": "09:30"})
                    elif busy:
                        raise TimeoutError(f"stage calendar busy for {inp['date']}, try again")
                    else:
                        a = STAGE_OPENS[inp["stage"]]
                        stage = _out(s, {"stage": inp["stage"], "from": a, "until": _clock(_minutes(a) + inp["booked_min"])})
                break
            except TimeoutError:
                continue
        plan_text = complete(server, [
            {"role": "system", "content": "Order the cues into blocks by surface to keep pit changes few."},
            {"role": "user", "content": f"Stage from: {json.dumps(stage['from'])}\nCues: {json.dumps([{k: c[k] for k in ('cue', 'surface', 'dur_s')} for c in classified])}"}])
        with _span(tracer, "parse_session_plan", "CHAIN", {"text": plan_text}) as s:
            plan = _out(s, json.loads(plan_text))
        with _span(tracer, "time_blocks", "CHAIN", {"plan": plan}) as s:
            by_cue = {c["cue"]: c for c in classified}
            t = _minutes(plan["start"]) if ":" in plan["start"] else None
            blocks = []
            changeovers = len(plan["blocks"]) if BLOCKS_EXTRA_SLOT else len(plan["blocks"]) - 1
            for i, block in enumerate(plan["blocks"]):
                takes = sum(by_cue[n]["dur_s"] * 3 + 60 for n in block["cues"]) // 60 + 5
                blocks.append({"surface": block["surface"], "cues": block["cues"], "start": plan["start"] if t is None else _clock(t), "minutes": takes})
                if t is not None:
                    t += takes + (15 if i < changeovers else 0)
            end = _clock(t) if t is not None else None
            _out(s, {"blocks": blocks, "end": end})
        with _span(tracer, "schedule_artists", "TOOL", {"stage": stage, "blocks": blocks, "end": end}) as s:
            for b in blocks:
                if len(b["start"]) != 5 or b["start"][2] != ":":
                    raise ValueError(f"scheduler: cannot read start time {b['start']!r}")
            if end > stage["until"]:
                raise ValueError(f"scheduler: session ends {end}, stage {stage['stage']} is booked until {stage['until']}")
            _out(s, {"artists": ["Ines", "Marek"], "from": blocks[0]["start"], "until": end})
        with _span(tracer, "check_coverage", "CHAIN", {"cue_count": inp["cue_count"], "blocks": blocks}) as s:
            planned = sorted(n for b in blocks for n in b["cues"])
            if planned != list(range(1, inp["cue_count"] + 1)):
                missing = sorted(set(range(1, inp["cue_count"] + 1)) - set(planned))
                raise AssertionError(f"reel {inp['reel']}: cues {missing} have no block in the session")
            _out(s, {"covered": len(planned)})
        with _span(tracer, "export_session", "TOOL", {"film": inp["film"], "reel": inp["reel"], "cues": classified}) as s:
            for c in classified:
                if c["prop"] and not c["pit"]["prop"]:
                    raise LookupError(f"session export: cue {c['cue']} needs {c['prop']} and no shelf holds it")
            result = _out(s, {"session": f"{inp['film']} R{inp['reel']}", "blocks": len(blocks)})
        top.set_attribute("output.value", json.dumps(result))
        top.set_status(Status(StatusCode.OK))


def run_once(server, inp: dict, path: str) -> None:
    provider, exporter = otlp()
    exporter.clear()
    tracer = provider.get_tracer("hollow-log-foley")
    try:
        session(server, tracer, inp)
    except (ValueError, AssertionError, LookupError, KeyError):
        pass
    write_otlp(exporter, path)
