"""Juggling school term planner: assesses every enrolled student and publishes the class timetable
(OpenInference + OpenTelemetry, exported as OTLP JSON).

Shape: enrolments tool -> per student: memory recall, model assessment (instrumented OpenAI call),
parse, memory write -> grouping into classes (reads memory back per student) -> instructor roster
tool -> hall booking tool -> fee collection tool -> timetable publication (asserts the school's rules).
"""

from __future__ import annotations

import json

from common import chat, otel, write_otlp
from opentelemetry import trace as otel_trace


NAME = "juggling-term-planner"
ROUTE = "otlp"
DOMAIN = "juggling school's classes"
SHAPE = "OTLP spans: per-student loop (memory recall, LLM, parse, memory write) then a second memory loop, roster, booking, fees, final assertions (~35-55 spans)"

SW = dict.fromkeys(("chunk_plus_one", "carry_notes", "last_term_key", "cached_export", "level_label"), False)

ROSTER = {
    "Mira Okafor": (9, "first time with balls, can throw one ball hand to hand"),
    "Tom Reyes": (15, "runs a 5-ball cascade and mills mess with three"),
    "Jun Park": (11, "keeps a 3-ball cascade for 40 catches"),
    "Lena Brandt": (8, "first time with balls"),
    "Ravi Menon": (13, "3-ball cascade, learning tennis and reverse cascade"),
    "Sofia Lindqvist": (16, "4-ball fountain and 5-ball flashes"),
    "Ade Bello": (7, "drops after a few throws, first term"),
    "Chloe Martin": (12, "3-ball cascade and columns, steady"),
    "Yusuf Kaya": (14, "5-ball cascade, club passing with a partner"),
    "Ines Duarte": (10, "first time, nervous about catching"),
    "Oskar Nowak": (12, "3-ball cascade for 100 catches, box pattern started"),
    "Hana Sato": (9, "two balls in one hand, starting the cascade"),
    "Leo Fischer": (17, "7-ball flashes, 5-club cascade"),
    "Nia Adeyemi": (11, "first time with balls"),
}
LAST_TERM = {
    "Jun Park": "beginner",
    "Ravi Menon": "intermediate",
    "Tom Reyes": "advanced",
    "Chloe Martin": "intermediate",
    "Yusuf Kaya": "advanced",
    "Oskar Nowak": "beginner",
    "Leo Fischer": "advanced",
    "Hana Sato": "beginner",
}
INSTRUCTORS = {"beginner": "Ana Ruiz", "intermediate": "Bo Chen", "advanced": "Cyril Ames"}
PAID = {}  # (term, venue) -> names, filled from INPUTS

INPUTS = [
    {
        "term": "spring-2027",
        "venue": "Canal Street Hall",
        "class_size": 4,
        "students": [
            "Sofia Lindqvist",
            "Tom Reyes",
            "Nia Adeyemi",
            "Mira Okafor",
            "Lena Brandt",
            "Ade Bello",
            "Ines Duarte",
        ],
    },
    {
        "term": "spring-2027",
        "venue": "Northside Gym",
        "class_size": 5,
        "students": ["Ravi Menon", "Chloe Martin", "Oskar Nowak", "Hana Sato", "Yusuf Kaya", "Leo Fischer"],
    },
    {
        "term": "summer-2027",
        "venue": "Canal Street Hall",
        "class_size": 3,
        "students": [
            "Mira Okafor",
            "Lena Brandt",
            "Ade Bello",
            "Ines Duarte",
            "Jun Park",
            "Chloe Martin",
            "Oskar Nowak",
            "Tom Reyes",
            "Yusuf Kaya",
            "Leo Fischer",
            "Sofia Lindqvist",
        ],
    },
    {
        "term": "summer-2027",
        "venue": "Northside Gym",
        "class_size": 6,
        "students": ["Hana Sato", "Nia Adeyemi", "Ravi Menon", "Tom Reyes"],
    },
    {
        "term": "autumn-2027",
        "venue": "Riverside Studio",
        "class_size": 4,
        "students": [
            "Tom Reyes",
            "Lena Brandt",
            "Jun Park",
            "Ravi Menon",
            "Ade Bello",
            "Sofia Lindqvist",
            "Oskar Nowak",
        ],
    },
]
for _i in INPUTS:
    PAID[(_i["term"], _i["venue"])] = set(_i["students"])
PREVIOUS_EXPORT = {
    ("spring-2027", "Northside Gym"): [
        "Ravi Menon",
        "Chloe Martin",
        "Oskar Nowak",
        "Hana Sato",
        "Yusuf Kaya",
        "Leo Fischer",
        "Nia Adeyemi",
    ]
}


def policy(request):
    msgs = request.body["messages"]
    notes = [m["content"] for m in msgs if m["role"] == "user" and m["content"].startswith("Student notes:")]
    if not notes:
        return "Send student notes to assess."
    first = notes[0]
    last = json.loads(first.split("Last term: ", 1)[1]) if "Last term: " in first else None
    text = first.lower()
    if "5-ball" in text or "7-ball" in text or "4-ball" in text:
        level = "advanced"
    elif "cascade" in text:
        level = "intermediate"
    else:
        level = "beginner"
    if last == "advanced" or (last == "intermediate" and level == "beginner"):
        level = last
    props = {"beginner": 3, "intermediate": 3, "advanced": 5}[level]
    label = level
    if SW["level_label"] and level == "intermediate":
        label = f"Intermediate ({props} balls)"
    return json.dumps({"level": label, "props": props, "comment": f"assessed as {level}"})


MEMORY: dict = {}


def _span(tracer, name, kind, inp=None):
    attrs = {"openinference.span.kind": kind}
    if inp is not None:
        attrs["input.value"] = json.dumps(inp)
        attrs["input.mime_type"] = "application/json"
    return tracer.start_as_current_span(name, attributes=attrs)


def _out(value):
    otel_trace.get_current_span().set_attribute("output.value", json.dumps(value))
    otel_trace.get_current_span().set_attribute("output.mime_type", "application/json")
    return value


def run_term(req, server, tracer):
    with _span(tracer, NAME, "AGENT", req):
        term, venue = req["term"], req["venue"]
        with _span(tracer, "load_enrolments", "TOOL", {"term": term, "venue": venue}):
            names = list(req["students"])
            if SW["cached_export"]:
                names = list(PREVIOUS_EXPORT[(term, venue)])
            students = _out([{"name": n, "age": ROSTER[n][0], "notes": ROSTER[n][1]} for n in names])
        history = []
        for st in students:
            with _span(tracer, "recall_student", "TOOL", {"name": st["name"], "key": "last_term"}):
                last = _out(MEMORY.get(("last_term", st["name"]), LAST_TERM.get(st["name"])))
            msg = {
                "role": "user",
                "content": f"Student notes: {st['name']}, age {st['age']}: {st['notes']}"
                + (f". Last term: {json.dumps(last)}" if last else ""),
            }
            messages = [
                {
                    "role": "system",
                    "content": "Assess a juggling student's level. Answer JSON: level, props, comment.",
                }
            ]
            if SW["carry_notes"]:
                messages += history[-2:]
            messages.append(msg)
            answer = chat(server, messages)
            history += [msg, {"role": "assistant", "content": answer}]
            with _span(tracer, "parse_assessment", "CHAIN", {"text": answer}):
                a = json.loads(answer)
                assessed = _out(
                    {"name": st["name"], "level": a["level"].strip().lower(), "props": a["props"]}
                )
            with _span(tracer, "remember_student", "TOOL", {"key": term, **assessed}):
                key = "last_term" if SW["last_term_key"] else term
                MEMORY[(key, st["name"])] = assessed["level"]
                _out({"stored": {"key": key, "name": st["name"], "level": assessed["level"]}})
        with _span(tracer, "group_classes", "CHAIN", {"term": term, "class_size": req["class_size"]}):
            by_level: dict = {}
            for st in students:
                with _span(tracer, "memory_lookup", "TOOL", {"key": term, "name": st["name"]}):
                    if (term, st["name"]) not in MEMORY:
                        raise LookupError(f"no {term} assessment on file for {st['name']}")
                    level = _out(MEMORY[(term, st["name"])])
                by_level.setdefault(level, []).append(st)
            size = req["class_size"] + 1 if SW["chunk_plus_one"] else req["class_size"]
            classes = []
            for level in sorted(by_level):
                group = by_level[level]
                for i in range(0, len(group), size):
                    classes.append(
                        {
                            "class": f"{level[:3].upper()}-{len(classes) + 1}",
                            "level": level,
                            "students": [s["name"] for s in group[i : i + size]],
                        }
                    )
            _out(classes)
        with _span(tracer, "assign_instructors", "TOOL", {"levels": sorted({c["level"] for c in classes})}):
            for c in classes:
                if c["level"] not in INSTRUCTORS:
                    raise LookupError(f"no instructor on the roster teaches level '{c['level']}'")
                c["instructor"] = INSTRUCTORS[c["level"]]
            _out({c["class"]: c["instructor"] for c in classes})
        with _span(tracer, "book_hall", "TOOL", {"venue": venue, "sessions": len(classes)}):
            _out({"venue": venue, "slots": [f"Sat {9 + i}:00" for i in range(len(classes))]})
        with _span(tracer, "collect_fees", "TOOL", {"term": term, "students": [s["name"] for s in students]}):
            for s in students:
                if s["name"] not in PAID[(term, venue)]:
                    raise LookupError(
                        f"no {term} enrolment for {s['name']} at {venue} on the payments ledger"
                    )
            _out({"charged": len(students), "gbp": 85 * len(students)})
        with _span(tracer, "publish_timetable", "CHAIN", {"classes": classes}):
            ages = {s["name"]: s["age"] for s in students}
            for c in classes:
                assert len(c["students"]) <= req["class_size"], (
                    f"class {c['class']} has {len(c['students'])} jugglers, the cap is {req['class_size']}"
                )
                if c["level"] == "advanced":
                    young = [n for n in c["students"] if ages[n] < 12]
                    assert not young, f"{', '.join(young)} under 12 placed in advanced class {c['class']}"
            _out({"published": [c["class"] for c in classes]})


def record(inp, server, dest: str) -> None:
    provider, spans = otel()
    spans.clear()
    for k in [k for k in MEMORY if k[0] == inp["term"] or k[0] == "last_term"]:
        del MEMORY[k]
    try:
        run_term(inp, server, provider.get_tracer("juggling-school"))
    except Exception:  # noqa: BLE001  (the recorded run keeps the failure; the generator checks it)
        pass
    write_otlp(spans, dest)


CASES = [
    {
        "id": "jug_class_cap",
        "input": 2,
        "switch": "chunk_plus_one",
        "fault_kind": "off_by_one",
        "root": ("group_classes", 1, "other"),
        "failure": ("publish_timetable", 1),
        "description": "Grouping cuts classes one student larger than the hall's class size.",
    },
    {
        "id": "jug_carried_notes",
        "input": 0,
        "switch": "carry_notes",
        "fault_kind": "context_pollution",
        "root": ("ChatCompletion", 3, "llm"),
        "failure": ("publish_timetable", 1),
        "description": "Each assessment prompt carries the previous student's notes, and the model grades Nia Adeyemi (11) from Tom Reyes's notes as advanced.",
    },
    {
        "id": "jug_memory_key",
        "input": 4,
        "switch": "last_term_key",
        "fault_kind": "bad_memory_write",
        "root": ("remember_student", 1, "tool"),
        "failure": ("memory_lookup", 1),
        "description": "The assessments are written to memory under last term's key instead of this term's.",
    },
    {
        "id": "jug_old_export",
        "input": 1,
        "switch": "cached_export",
        "fault_kind": "stale_data",
        "root": ("load_enrolments", 1, "tool"),
        "failure": ("collect_fees", 1),
        "description": "Enrolments come from the previous export, which still lists Nia Adeyemi, who has no place paid this term.",
    },
    {
        "id": "jug_level_label",
        "input": 3,
        "switch": "level_label",
        "fault_kind": "format_drift",
        "root": ("ChatCompletion", 3, "llm"),
        "failure": ("assign_instructors", 1),
        "description": "The model labels the level 'Intermediate (3 balls)' instead of 'intermediate', which no instructor on the roster matches.",
    },
]
