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
            spec, clinic, valid, _avail = PATIENTS[pid]
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



# ======================================================================================
# tenant-screening: rental applications for a property manager
# ======================================================================================

LISTINGS = {("Linden Court", "4D"): 1450, ("Linden Court", "4B"): 1090, ("Harbor View", "2A"): 980,
            ("Harbor View", "7C"): 1720, ("Elm Yard", "1F"): 860, ("Elm Yard", "3E"): 1240}
APPLICATIONS = {  # applicant, building, unit, gross monthly income, credit score, monthly debts
    "APP-501": ("Marta Silva", "Linden Court", "4D", 3600, 700, [("car loan", 210)]),
    "APP-502": ("Daniel Okafor", "Harbor View", "7C", 4700, 690, [("credit card", 150)]),
    "APP-503": ("Yuki Sato", "Elm Yard", "3E", 4100, 590, [("car loan", 200)]),
    "APP-504": ("Pavel Novak", "Harbor View", "2A", 3300, 705,
                [("car loan", 310), ("student loan", 240), ("credit card", 180), ("personal loan", 260)]),
    "APP-511": ("Lena Hoffmann", "Elm Yard", "1F", 3900, 745, [("credit card", 150)]),
    "APP-512": ("Omar Haddad", "Linden Court", "4B", 3500, 688, [("car loan", 400)]),
    "APP-513": ("Chloe Martin", "Harbor View", "7C", 4300, 720, []),
    "APP-514": ("Ravi Iyer", "Elm Yard", "3E", 5200, 702, [("car loan", 350), ("credit card", 120)]),
}
CACHED_SCORES = {"APP-503": (712, "2025-03-02")}
WRONG_UNIT = {"4D": "4B"}
SUMMARY_LIMIT = 38


def _listing_doc(building: str, unit: str) -> dict[str, Any]:
    rent = LISTINGS[(building, unit)]
    return {"id": f"listing-{''.join(w[0] for w in building.split())}-{unit}",
            "content": f"{building}, Unit {unit}: rent EUR {rent:,} per month, deposit 3 months."}


def _summary(app: str) -> str:
    debts = APPLICATIONS[app][5]
    return "Monthly debts: " + ("; ".join(f"{n} {a}" for n, a in debts) if debts else "none") + "."


def _ratio(rent: float, income: float) -> float:
    value = rent / income
    return round(value, 3) if active("rent.ratio") else round(100 * value, 1)  # a fraction, not a percent


def _summarize_brain(request: Any, msgs: list[dict[str, Any]]) -> Any:
    app = re.search(r"APP-\d+", msgs[-1]["content"]).group(0)
    text = _summary(app)
    if active("rent.truncated"):
        return Reply(text=text[:SUMMARY_LIMIT], finish_reason="length")  # cut by the max_tokens limit
    return text


def _decide_brain(request: Any, msgs: list[dict[str, Any]]) -> str:
    d = json.loads(msgs[-1]["content"])
    reasons = []
    if d["rent_to_income_pct"] > 35:
        reasons.append(f"rent is {d['rent_to_income_pct']} % of income (max 35 %)")
    if d["debt_to_income_pct"] > 50:
        reasons.append(f"debts and rent are {d['debt_to_income_pct']} % of income (max 50 %)")
    if d["credit_score"] < 620:
        reasons.append(f"credit score {d['credit_score']} (min 620)")
    return "DECLINE: " + "; ".join(reasons) if reasons else "APPROVE"


BRAINS["rent_summarize"] = _summarize_brain
BRAINS["rent_decide"] = _decide_brain


def _issue_lease(app: str) -> dict[str, Any]:
    _name, building, unit, income, score, debts = APPLICATIONS[app]
    rent = LISTINGS[(building, unit)]
    rti = round(100 * rent / income, 1)
    dti = round(100 * (rent + sum(a for _, a in debts)) / income, 1)
    if rti > 35:
        raise ValueError(f"{app}: underwriting rejects the lease: rent-to-income {rti} % for {building} {unit}")
    if dti > 50:
        raise ValueError(f"{app}: underwriting rejects the lease: debt-to-income {dti} %")
    if score < 620:
        raise ValueError(f"{app}: underwriting rejects the lease: credit score {score} below 620")
    return {"application": app, "lease": f"L-{app[-3:]}-{unit}", "status": "issued"}


def rental_body(inp: dict[str, Any]) -> Any:
    def body() -> Any:
        app = inp["application"]
        with span("load_application", "TOOL", {"application": app}) as s:
            name, building, unit, income, score, _ = APPLICATIONS[app]
            rec = s.out({"application": app, "applicant": name, "building": building, "unit": unit})
        with span("find_listing", "RETRIEVER", {"query": f"{building} unit {unit} listing"}) as s:
            shown = WRONG_UNIT.get(unit, unit) if active("rent.listing") else unit
            listing = s.out({"documents": [_listing_doc(building, shown)]})
        with span("credit_report", "TOOL", {"application": app}) as s:
            sc, date = CACHED_SCORES[app] if active("rent.stale") else (score, "2026-11-28")
            credit = s.out({"application": app, "score": sc, "report_date": date})
        with span("income_check", "TOOL", {"application": app}) as s:
            inc = s.out({"application": app, "gross_monthly_eur": income})
        summary = _chat("rent_summarize", "Summarize the applicant's recurring monthly debts as "
                        "'Monthly debts: name amount; ...'.", f"Bank statements of {app} (3 months) attached.")
        text = summary.choices[0].message.content
        with span("parse_debts", "CHAIN", text) as s:
            items = re.findall(r"([a-z ]+?) (\d+)(?:;|\.|$)", text.split(":", 1)[1])
            debts = s.out({"debts": [{"name": n.strip(), "eur": int(a)} for n, a in items],
                           "monthly_debts_eur": sum(int(a) for _, a in items)})
        with span("affordability", "CHAIN", {"listing": listing, "income": inc, "debts": debts}) as s:
            rent = int(re.search(r"rent EUR ([\d,]+)", listing["documents"][0]["content"]).group(1).replace(",", ""))
            income_eur = inc["gross_monthly_eur"]
            aff = s.out({"rent_eur": rent, "rent_to_income_pct": _ratio(rent, income_eur),
                         "debt_to_income_pct": round(100 * (rent + debts["monthly_debts_eur"]) / income_eur, 1),
                         "credit_score": credit["score"]})
        decision = _chat("rent_decide", "Apply the screening policy; answer APPROVE or DECLINE: reasons.",
                         json.dumps(aff)).choices[0].message.content
        if decision.startswith("APPROVE"):
            with span("issue_lease", "TOOL", {"application": app, "unit": unit}) as s:
                return s.out(_issue_lease(app))
        with span("send_decline", "TOOL", {"application": app, "reason": decision}) as s:
            return s.out({"application": rec["application"], "status": "declined", "letter": decision})

    return body


def record_rental(inp: dict[str, Any], path: Path) -> None:
    _record("tenant-screening", f"screen rental application {inp['application']}", rental_body(inp), path)


def _rent_marker_ratio(app: str) -> str:
    _, building, unit, income, _, _ = APPLICATIONS[app]
    return f'"rent_to_income_pct": {round(LISTINGS[(building, unit)] / income, 3)}'


RENTAL_AGENT = Agent(
    name="tenant-screening", route="otlp", domain="property management", ext="json",
    description="spans load the application, retrieve the listing, pull credit and income; a model summarizes "
                "debts; spans parse them and compute affordability; a model decides; a lease is issued or declined",
    ref_inputs=[{"application": a} for a in ("APP-511", "APP-512", "APP-513", "APP-514")],
    record=record_rental, setup=setup, teardown=teardown,
    cases=[
        Case("rent_ratio_fraction", "tenant-screening", {"application": "APP-502"}, "unit_error", "rent.ratio",
             "affordability", "other", _rent_marker_ratio("APP-502"),
             "affordability reports rent-to-income as a fraction (0.366) where the policy reads a percentage"),
        Case("rent_neighbouring_unit", "tenant-screening", {"application": "APP-501"}, "wrong_retrieval",
             "rent.listing", "find_listing", "retrieval", "listing-LC-4B",
             "the listing retriever returns unit 4B's listing (lower rent) for an application on unit 4D"),
        Case("rent_cached_credit", "tenant-screening", {"application": "APP-503"}, "stale_data", "rent.stale",
             "credit_report", "tool", '"report_date": "2025-03-02"',
             "credit_report serves a cached 2025 report (score 712) instead of today's (590)"),
        Case("rent_debt_summary_cut", "tenant-screening", {"application": "APP-504"}, "truncated_result",
             "rent.truncated", "ChatCompletion", "llm", _summary("APP-504")[:SUMMARY_LIMIT] + "\n",
             "the debt summary stops at the token limit after the first loan, hiding three debts"),
    ],
)

AGENTS = [CLINIC_AGENT, RENTAL_AGENT]
