"""Agents traced with OpenTelemetry: the `openai` client instrumented by OpenInference plus the agent's own
spans (OpenInference span kinds), exported as OTLP/JSON (`resourceSpans`)."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trajdebug.testing import Reply, tool_call

from .common import BRAINS, Agent, Case, Model, active


class _Otel:
    provider: Any = None
    exporter: Any = None
    instrumentor: Any = None


def setup() -> None:
    if _Otel.provider is not None:
        return
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    _Otel.exporter = InMemorySpanExporter()
    _Otel.provider = TracerProvider(resource=Resource.create({"service.name": "suite-f-agents"}))
    _Otel.provider.add_span_processor(SimpleSpanProcessor(_Otel.exporter))
    _Otel.instrumentor = OpenAIInstrumentor()
    _Otel.instrumentor.instrument(tracer_provider=_Otel.provider)


def teardown() -> None:
    if _Otel.instrumentor is not None:
        _Otel.instrumentor.uninstrument()
    _Otel.provider = _Otel.exporter = _Otel.instrumentor = None


def _dump(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


class _Span:
    def __init__(self, span: Any) -> None:
        self.span = span

    def out(self, value: Any) -> Any:
        self.span.set_attribute("output.value", _dump(value))
        self.span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value


@contextlib.contextmanager
def span(name: str, kind: str, inp: Any, **attrs: Any) -> Iterator[_Span]:
    tracer = _Otel.provider.get_tracer("suite_f")
    attributes = {"openinference.span.kind": kind, "input.value": _dump(inp),
                  "input.mime_type": "text/plain" if isinstance(inp, str) else "application/json", **attrs}
    if kind == "TOOL":
        attributes.setdefault("tool.name", name)
    with tracer.start_as_current_span(name, attributes=attributes) as s:
        yield _Span(s)


def _record(agent: str, task: str, body: Any, path: Path) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    _Otel.exporter.clear()
    try:
        with span(agent, "AGENT", task, **{"agent.name": agent}) as root:
            root.out(body())
    except ValueError:
        pass
    spans = _Otel.exporter.get_finished_spans()
    path.write_text(json.dumps(MessageToDict(encode_spans(spans))))
    _Otel.exporter.clear()


def _chat(tag: str, system: str, user: str, tools: list[dict[str, Any]] | None = None) -> Any:
    from .common import Model as _M

    messages = [{"role": "system", "content": f"[{tag}] {system}"}, {"role": "user", "content": user}]
    kwargs: dict[str, Any] = {"tools": tools} if tools else {}
    return _M.client().chat.completions.create(model=Model.name, messages=messages, temperature=0, **kwargs)


def _fn(name: str, props: dict[str, str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": list(props)}}}


# ======================================================================================
# clinic-scheduler: outpatient appointment booking
# ======================================================================================

PATIENTS = {  # referral specialty, clinic, referral valid until, available from
    "P-2201": ("cardiology", "Riverdale", "2026-12-31", "09:00"),
    "P-2202": ("dermatology", "Hillcrest", "2026-12-12", "09:00"),
    "P-2203": ("physiotherapy", "Hillcrest", "2026-12-31", "13:00"),
    "P-2204": ("dermatology", "Riverdale", "2026-12-31", "09:00"),
    "P-2210": ("cardiology", "Hillcrest", "2026-12-31", "13:00"),
    "P-2211": ("physiotherapy", "Riverdale", "2026-12-20", "09:00"),
    "P-2212": ("dermatology", "Hillcrest", "2026-12-31", "10:00"),
    "P-2213": ("cardiology", "Riverdale", "2026-12-18", "09:00"),
}
CLINIC_NAMES = {"Riverdale": "Riverside", "Hillcrest": "Hillside"}  # the neighbouring clinic with a similar name
PROTOCOLS = {
    "cardiology": "Booking protocol - cardiology. New patients: slot length 60 minutes (consultation plus ECG). "
                  "Bring the referral letter.",
    "dermatology": "Booking protocol - dermatology. New patients: slot length 30 minutes. Full skin check on "
                   "request.",
    "physiotherapy": "Booking protocol - physiotherapy. First assessment: slot length 60 minutes. Wear "
                     "comfortable clothing.",
}
WRONG_PROTOCOL = {"cardiology": "dermatology"}
MEMORY_NOTES = {"P-3381": "P-3381: can only come in the morning, before 11:00."}
NOTES = {p: f"{p}: available from {v[3]}." for p, v in PATIENTS.items()}


def _monday(year: int, week: int) -> dt.date:
    if active("clinic.week"):
        return dt.datetime.strptime(f"{year}-W{week}-1", "%Y-W%W-%w").date()  # %W weeks, not ISO weeks
    return dt.date.fromisocalendar(year, week, 1)


def _slots(specialty: str, clinic: str, monday: dt.date) -> list[dict[str, Any]]:
    out = []
    for d in range(5):
        day = monday + dt.timedelta(days=d)
        for time, length in (("09:00", 30), ("10:00", 60), ("14:00", 30), ("15:00", 60)):
            if (d + len(specialty) + len(clinic)) % 3 == 0 and time == "09:00":
                continue  # a little variety: some mornings are taken
            out.append({"slot": f"{clinic[:2].upper()}-{day:%m%d}-{time[:2]}", "date": day.isoformat(),
                        "time": time, "minutes": length, "clinic": clinic})
    return out


def _intake_brain(request: Any, msgs: list[dict[str, Any]]) -> Any:
    user = msgs[-1]["content"]
    pid = re.search(r"P-\d+", user).group(0)
    clinic = re.search(r"at (\w+)", user).group(1)
    if active("clinic.args"):
        clinic = CLINIC_NAMES[clinic]
    week = int(re.search(r"week (\d+)", user).group(1))
    spec = PATIENTS[pid][0]
    return Reply(tool_calls=(tool_call("list_slots", {"patient_id": pid, "specialty": spec, "clinic": clinic,
                                                      "week": week}),))


def _choose_brain(request: Any, msgs: list[dict[str, Any]]) -> str:
    data = json.loads(msgs[-1]["content"])
    length = int(re.search(r"slot length (\d+) minutes", data["protocol"]).group(1))
    earliest, latest = "00:00", "23:59"
    for note in data["notes"]:
        if m := re.search(r"before (\d\d:\d\d)", note):
            latest = m.group(1)  # an exclusive constraint wins
            break
        if m := re.search(r"from (\d\d:\d\d)", note):
            earliest = m.group(1)
    for s in data["slots"]:
        if s["minutes"] == length and earliest <= s["time"] < latest:
            return f"Book {s['slot']} ({s['date']} {s['time']}, {s['minutes']} min)."
    return "No suitable slot."


BRAINS["clinic_intake"] = _intake_brain
BRAINS["clinic_choose"] = _choose_brain


def _book(patient_id: str, slot: dict[str, Any]) -> dict[str, Any]:
    spec, clinic, valid, avail = PATIENTS[patient_id]
    need = int(re.search(r"slot length (\d+)", PROTOCOLS[spec]).group(1))
    if slot["clinic"] != clinic:
        raise ValueError(f"{patient_id}: the referral is valid at {clinic} only, not {slot['clinic']}")
    if slot["minutes"] != need:
        raise ValueError(f"{patient_id}: a new {spec} patient needs a {need}-minute slot, "
                         f"{slot['slot']} is {slot['minutes']} minutes")
    if slot["date"] > valid:
        raise ValueError(f"{patient_id}: the referral expires {valid}, slot {slot['slot']} is on {slot['date']}")
    if slot["time"] < avail:
        raise ValueError(f"{patient_id}: the patient is not available before {avail}")
    return {"patient": patient_id, "slot": slot["slot"], "status": "booked"}


def clinic_body(inp: dict[str, Any]) -> Any:
    def body() -> Any:
        request = inp["request"]
        first = _chat("clinic_intake", "Find appointment slots for the patient.", request,
                      [_fn("list_slots", {"patient_id": "string", "specialty": "string", "clinic": "string",
                                          "week": "integer"})])
        args = json.loads(first.choices[0].message.tool_calls[0].function.arguments)
        pid = args["patient_id"]
        with span("patient_record", "TOOL", {"patient_id": pid}) as s:
            spec, clinic, valid, avail = PATIENTS[pid]
            rec = s.out({"patient_id": pid, "referral": spec, "clinic": clinic, "referral_valid_until": valid})
        with span("find_protocol", "RETRIEVER", {"query": f"booking protocol {args['specialty']}"}) as s:
            name = WRONG_PROTOCOL.get(args["specialty"], args["specialty"]) if active("clinic.protocol") \
                else args["specialty"]
            doc = s.out({"documents": [{"id": f"protocol-{name}", "content": PROTOCOLS[name]}]})
        with span("week_dates", "CHAIN", {"year": 2026, "week": args["week"]}) as s:
            monday = _monday(2026, args["week"])
            s.out({"monday": monday.isoformat(), "friday": (monday + dt.timedelta(days=4)).isoformat()})
        with span("list_slots", "TOOL", args) as s:
            slots = s.out(_slots(args["specialty"], args["clinic"], monday))
        with span("build_context", "CHAIN", {"patient_id": pid}) as s:
            notes = [NOTES[pid]]
            if active("clinic.memory"):
                notes = [MEMORY_NOTES["P-3381"], *notes]  # the previous caller's note left in the buffer
            ctx = s.out({"protocol": doc["documents"][0]["content"], "notes": notes, "slots": slots})
        second = _chat("clinic_choose", "Pick the earliest slot that fits the protocol and the patient.",
                       json.dumps(ctx))
        text = second.choices[0].message.content
        m = re.search(r"Book (\S+)", text)
        if not m:
            raise ValueError(f"{pid}: no slot found ({text})")
        slot = next(x for x in slots if x["slot"] == m.group(1))
        with span("book_slot", "TOOL", {"patient_id": pid, "slot": slot}) as s:
            booked = s.out(_book(pid, slot))
        return {"patient": rec["patient_id"], "booked": booked["slot"]}

    return body


def record_clinic(inp: dict[str, Any], path: Path) -> None:
    _record("clinic-scheduler", inp["request"], clinic_body(inp), path)


def _clinic_req(pid: str, week: int, text: str = "") -> dict[str, Any]:
    clinic = PATIENTS[pid][1]
    return {"request": f"Patient {pid} needs a first {PATIENTS[pid][0]} appointment at {clinic} in week {week}. "
                       f"{text}".strip()}


CLINIC_AGENT = Agent(
    name="clinic-scheduler", route="otlp", domain="outpatient scheduling", ext="json",
    description="a model turns the request into a slot search; spans fetch the patient record and the booking "
                "protocol, compute the week, list slots and build the context; a model picks a slot; it is booked",
    ref_inputs=[_clinic_req("P-2210", 50), _clinic_req("P-2211", 51), _clinic_req("P-2212", 49),
                _clinic_req("P-2213", 50, "Any time is fine.")],
    record=record_clinic, setup=setup, teardown=teardown,
    cases=[
        Case("clinic_wrong_protocol", "clinic-scheduler", _clinic_req("P-2201", 50), "wrong_retrieval",
             "clinic.protocol", "find_protocol", "retrieval", "protocol-dermatology",
             "the protocol retriever returns the dermatology protocol (30-minute slots) for a cardiology referral"),
        Case("clinic_week_numbering", "clinic-scheduler", _clinic_req("P-2202", 50), "off_by_one",
             "clinic.week", "week_dates", "other", '"monday": "2026-12-14"',
             "week_dates uses %W week numbers instead of ISO weeks, landing one week late"),
        Case("clinic_other_callers_note", "clinic-scheduler", _clinic_req("P-2203", 51), "context_pollution",
             "clinic.memory", "build_context", "other", "P-3381",
             "build_context keeps the previous caller's 'mornings only' note in the slot-picking context"),
        Case("clinic_similar_clinic_name", "clinic-scheduler", _clinic_req("P-2204", 49), "wrong_tool_args",
             "clinic.args", "ChatCompletion", "llm", '"clinic": "Riverside"',
             "the intake model calls list_slots with clinic 'Riverside' instead of 'Riverdale'"),
    ],
)

AGENTS = [CLINIC_AGENT]
