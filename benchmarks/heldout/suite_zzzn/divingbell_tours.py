"""Diving-bell tour operator: a day's descents (route: otlp, OpenInference + OpenTelemetry)."""
import json

from openai import OpenAI

import zzzn_common
from trajdebug.testing import Reply

NAME = "divingbell-day-manifest"
ROUTE = "otlp"
DOMAIN = "diving-bell tour operator"
SHAPE = "traced spans: tide and weather lookups, loop over guests (medical form tool + screening router), notes memory, model descent plan, parse, bell manifest per descent, model briefing, supervisor sign-off"
SWITCH = None
SERVER = None

SITES = {"Porthkerris Reef": 16, "Manacles Wreck": 22, "Falmouth Roads": 12}
CABLE_M = 25
REGISTER = {"Ann Holt": True, "Bram Oyelaran": True, "Cass Pike": False, "Dara Quinn": True, "Eli Stroud": True,
            "Fenna Hart": True, "Gus Lowe": False, "Hal Price": True, "Isla Marr": True, "Joss Tran": True,
            "Kit Vale": True, "Lena Yusuf": True}
LOGBOOK = [f"{d} season note {i}: guest asked about the porthole gaskets, the winch, the lamp and the lunch menu"
           for i, d in enumerate(["2024", "2025", "2026"] * 60)]
INPUTS = [
    {"task": "descents 2027-06-12 Porthkerris Reef", "date": "2027-06-12", "site": "Porthkerris Reef",
     "guests": ["Ann Holt", "Bram Oyelaran", "Cass Pike", "Dara Quinn"]},
    {"task": "descents 2027-06-19 Manacles Wreck", "date": "2027-06-19", "site": "Manacles Wreck",
     "guests": ["Eli Stroud", "Fenna Hart", "Gus Lowe"]},
    {"task": "descents 2027-07-03 Falmouth Roads", "date": "2027-07-03", "site": "Falmouth Roads",
     "guests": ["Hal Price", "Isla Marr", "Joss Tran", "Kit Vale", "Lena Yusuf"]},
    {"task": "descents 2027-07-10 Porthkerris Reef", "date": "2027-07-10", "site": "Porthkerris Reef",
     "guests": ["Bram Oyelaran", "Fenna Hart", "Gus Lowe", "Isla Marr", "Ann Holt", "Joss Tran"]},
    {"task": "descents 2027-07-24 Manacles Wreck", "date": "2027-07-24", "site": "Manacles Wreck",
     "guests": ["Kit Vale", "Cass Pike", "Dara Quinn", "Eli Stroud"]},
]
CASES = [
    dict(id="zn36", input=2, switch="logbook", kind="context_pollution", root=("guest_notes", 1), failure=None,
         desc="The guest notes lookup returned three seasons of the whole logbook, and the briefing request outgrew the model's context window."),
    dict(id="zn37", input=1, switch="screen", kind="wrong_routing", root=("fitness_screen", 3), failure=None,
         desc="Screening sent Gus Lowe, not medically cleared, to the bell instead of the glass-bottom boat."),
    dict(id="zn38", input=4, switch="depth", kind="hallucinated_value", root=("ChatCompletion", 1), failure=None,
         desc="The model's descent plan put the Manacles Wreck at 32 m, a depth no input gave."),
    dict(id="zn39", input=0, switch="form", kind="swallowed_error", root=("medical_form", 3), failure=None,
         desc="The medical form service failed for Cass Pike; the error was caught and the form read as cleared."),
    dict(id="zn40", input=3, switch="seats", kind="plan_error", root=("ChatCompletion", 1), failure=None,
         desc="The model planned all four bell guests into a single descent of a three-seat bell."),
]


def policy(request):
    msgs = request.body["messages"]
    if sum(len(m.get("content") or "") for m in msgs) > 12000:
        return Reply(status=400, error="This model's maximum context length is 4096 tokens; the messages exceed it.")
    ask = json.loads(msgs[-1]["content"])
    if msgs[0]["content"].startswith("Plan"):
        bell = ask["bell_guests"]
        groups = [bell] if SWITCH == "seats" else [bell[i:i + 3] for i in range(0, len(bell), 3)]
        depth = 32 if SWITCH == "depth" else ask["site_depth_m"]
        slots = ask["tide_slots"]
        return json.dumps({"descents": [{"slot": slots[i % len(slots)], "guests": g, "depth_m": depth}
                                        for i, g in enumerate(groups)]})
    return "Briefing: " + ", ".join(ask["guests"]) + " report to the quay 30 minutes before their descent."


def _span(tracer, name, kind, inp):
    return tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind,
                                                           "input.value": json.dumps(inp),
                                                           "input.mime_type": "application/json"})


def _out(span, value):
    span.set_attribute("output.value", json.dumps(value))
    span.set_attribute("output.mime_type", "application/json")


def run_one(inp, path):
    tracer = zzzn_common.otlp_tracer(NAME)
    client = OpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0)
    try:
        with tracer.start_as_current_span(NAME, attributes={"openinference.span.kind": "AGENT",
                                                           "input.value": inp["task"]}) as top:
            with _span(tracer, "booking_request", "CHAIN", inp) as s:
                day = dict(inp)
                _out(s, day)
            with _span(tracer, "tide_table", "TOOL", {"date": day["date"]}) as s:
                slots = ["09:40", "11:10", "13:30"]
                _out(s, {"slack_water": slots})
            with _span(tracer, "weather_brief", "RETRIEVER", {"date": day["date"], "site": day["site"]}) as s:
                weather = {"swell_m": 0.6, "visibility_m": 9}
                _out(s, weather)
            bell, boat = [], []
            for guest in day["guests"]:
                with _span(tracer, "medical_form", "TOOL", {"guest": guest}) as s:
                    try:
                        if SWITCH == "form" and guest == "Cass Pike":
                            raise TimeoutError("medical forms service did not answer")
                        form = {"guest": guest, "cleared": REGISTER[guest]}
                    except TimeoutError:
                        form = {"guest": guest, "cleared": True}
                    _out(s, form)
                with _span(tracer, "fitness_screen", "CHAIN", form) as s:
                    to_bell = form["cleared"] or (SWITCH == "screen" and guest == "Gus Lowe")
                    (bell if to_bell else boat).append(guest)
                    _out(s, {"guest": guest, "vessel": "bell" if to_bell else "glass-bottom boat"})
            with _span(tracer, "guest_notes", "TOOL", {"guests": day["guests"]}) as s:
                notes = [f"{g}: first descent" for g in day["guests"]]
                if SWITCH == "logbook":
                    notes += LOGBOOK
                _out(s, notes[:5] + ([f"... {len(notes) - 5} more notes"] if len(notes) > 5 else []))
            reply = client.chat.completions.create(model=SERVER.model, messages=[
                {"role": "system", "content": "Plan the bell descents: three seats per descent, slack-water slots only. Answer JSON."},
                {"role": "user", "content": json.dumps({"site": day["site"], "site_depth_m": SITES[day["site"]],
                                                        "tide_slots": slots, "weather": weather, "bell_guests": bell})}])
            with _span(tracer, "parse_plan", "CHAIN", {"text": reply.choices[0].message.content}) as s:
                plan = json.loads(reply.choices[0].message.content)["descents"]
                _out(s, plan)
            for descent in plan:
                with _span(tracer, "bell_manifest", "TOOL", descent) as s:
                    if len(descent["guests"]) > 3:
                        raise ValueError(f"bell manifest: {len(descent['guests'])} guests for a three-seat bell at {descent['slot']}")
                    if descent["depth_m"] > CABLE_M:
                        raise ValueError(f"bell manifest: {descent['depth_m']} m is past the {CABLE_M} m winch cable")
                    _out(s, {"slot": descent["slot"], "seats_used": len(descent["guests"])})
            briefing = client.chat.completions.create(model=SERVER.model, messages=[
                {"role": "system", "content": "Write the guests' quay briefing."},
                {"role": "user", "content": json.dumps({"guests": day["guests"], "notes": notes, "plan": plan})}])
            with _span(tracer, "supervisor_signoff", "CHAIN", {"plan": plan, "boat": boat}) as s:
                for descent in plan:
                    for guest in descent["guests"]:
                        if not REGISTER[guest]:
                            raise ValueError(f"dive supervisor: {guest} has no medical clearance on the register")
                _out(s, {"signed": True, "briefing": briefing.choices[0].message.content})
            top.set_attribute("output.value", "manifest signed")
    except Exception as exc:  # the openai client's refusal surfaces as an exception too
        if not isinstance(exc, ValueError) and type(exc).__name__ != "BadRequestError":
            raise
    zzzn_common.otlp_write(path)
