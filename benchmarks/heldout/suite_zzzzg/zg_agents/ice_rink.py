"""ice-rink-ops: an ice centre's daily ice plan (OpenTelemetry + OpenInference, exported as OTLP JSON).

For one rink and day: the bookings are retrieved and parsed; the ice-thickness gate reads the probes;
an ice-conditions sub-agent reads the clubs' ice specs, converts them to chiller setpoints and has the
model write the crew's note; the resurfacing cuts are planned between sessions; the staffing model
reads the driver roster (a tool call) and assigns a driver to every cut; the chiller is set for each
session, the model writes the public notice, the schedule is published and the clubs' sessions are
confirmed with the ice report.
"""

from __future__ import annotations

import json
import re
from typing import Any

from . import otlp_util as ot
from .common import chat_call, fn_tool, json_in, system_text, tagged_json, tool_results, user_texts


NAME = "ice-rink-ops"
ROUTE = "otlp"
DOMAIN = "ice centre: sessions, resurfacing cuts, chiller setpoints, ice-thickness checks"
SHAPE = "OTLP: retriever, parse chain, guardrail, sub-agent (tool + LLM), planning chain, staffing LLM with a tool call (tool-call id), loop of chiller tools, LLM notice, publish and confirm tools"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


BOOKINGS = {
    ("Rink 1", "2025-12-06"): [("RB-1201", "06:30-08:00 Riverside Minor Hockey [hockey]"),
                               ("RB-1202", "08:30-10:00 Public Skate [public]"),
                               ("RB-1203", "10:20-11:20 Learn to Skate [lessons]"),
                               ("RB-1204", "6:45 PM-8:00 PM Silver Blades [figure]")],
    ("Rink 1", "2025-12-07"): [("RB-1211", "07:00-08:30 Glenmore Figure Club [figure]"),
                               ("RB-1212", "09:00-10:30 Public Skate [public]"),
                               ("RB-1213", "11:00-12:30 Ravens Rec Hockey [hockey]"),
                               ("RB-1214", "13:00-14:00 Learn to Skate [lessons]")],
    ("Rink 1", "2025-12-08"): [("RB-1221", "06:00-07:30 Hawks U13 Hockey [hockey]"),
                               ("RB-1222", "16:00-17:30 Public Skate [public]"),
                               ("RB-1223", "6:00 PM-7:15 PM Silver Blades [figure]")],
    ("Rink 1", "2025-12-09"): [("RB-1231", "17:00-18:00 Learn to Skate [lessons]"),
                               ("RB-1232", "18:30-19:30 Public Skate [public]"),
                               ("RB-1233", "20:00-21:30 Ravens Rec Hockey [hockey]")],
    ("Rink 2", "2025-12-09"): [("RB-2231", "08:00-09:30 Glenmore Ringette [hockey]"),
                               ("RB-2232", "10:00-11:00 Public Skate [public]"),
                               ("RB-2233", "17:00-18:00 Adult Figure [figure]")],
    ("Rink 1", "2025-12-10"): [("RB-1241", "06:15-07:45 Hawks U13 Hockey [hockey]"),
                               ("RB-1242", "08:15-09:15 Learn to Skate [lessons]"),
                               ("RB-1243", "7:00 PM-8:30 PM Silver Blades [figure]")],
}
SPECS_F = {"hockey": 19.4, "figure": 24.8, "public": 22.1, "lessons": 23.0}  # the federation sheet, surface in F
CHILLER_RANGE_C = (-9.0, -2.0)
PROBES = {"2025-12-06": {"centre": 41, "goal_north": 39, "goal_south": 40, "boards": 38},
          "2025-12-07": {"centre": 42, "goal_north": 40, "goal_south": 41, "boards": 39},
          "2025-12-08": {"centre": 40, "goal_north": 39, "goal_south": 39, "boards": 38},
          "2025-12-09": {"centre": 41, "goal_north": 40, "goal_south": 40, "boards": 39},
          "2025-12-10": {"centre": 43, "goal_north": 41, "goal_south": 40, "boards": 39}}
MIN_ICE_MM = 38
DRIVERS = [{"name": "Gus", "from": "05:30", "to": "14:00"}, {"name": "Mae", "from": "13:30", "to": "22:30"}]
CLUB_TYPES = ("hockey", "figure", "lessons")
LINE = re.compile(r"(\d{1,2}:\d\d(?: [AP]M)?)-(\d{1,2}:\d\d(?: [AP]M)?) (.+) \[(\w+)\]$")

INPUTS = [
    {"request_id": "ICE-1206", "rink": "Rink 1", "day": "2025-12-06"},
    {"request_id": "ICE-1207", "rink": "Rink 1", "day": "2025-12-07"},
    {"request_id": "ICE-1208", "rink": "Rink 1", "day": "2025-12-08"},
    {"request_id": "ICE-1209", "rink": "Rink 1", "day": "2025-12-09"},
    {"request_id": "ICE-1210", "rink": "Rink 1", "day": "2025-12-10"},
]

CASES = [
    {"id": "ice_rink_1", "switch": "cut_range", "input": 0, "kind": "off_by_one",
     "root": ("plan_resurfacing", 1), "failure": ("confirm_club_sessions", 1),
     "description": "plan_resurfacing stops its loop one session early, so no resurface is planned before "
                    "Silver Blades at 18:45 and the figure club's confirmation is refused for lack of fresh ice."},
    {"id": "ice_rink_2", "switch": "probe_timeout", "input": 1, "kind": "swallowed_error",
     "root": ("ice_thickness_gate", 1), "failure": ("confirm_club_sessions", 1),
     "description": "the probe service times out and ice_thickness_gate passes the ice with no reading instead "
                    "of failing; the club confirmations need a thickness of at least 38 mm on record."},
    {"id": "ice_rink_3", "switch": "pm_suffix", "input": 2, "kind": "lossy_parsing",
     "root": ("parse_bookings", 1), "failure": ("publish_schedule", 1),
     "description": "parse_bookings drops the PM of '6:00 PM-7:15 PM Silver Blades', placing the figure "
                    "session at 06:00-07:15, and publishing finds it does not match booking RB-1223."},
    {"id": "ice_rink_4", "switch": "rink_key", "input": 3, "kind": "wrong_retrieval",
     "root": ("booking_search", 1), "failure": ("publish_schedule", 1),
     "description": "booking_search answers Rink 2's bookings for 2025-12-09, so the day is planned around "
                    "Glenmore Ringette and Adult Figure and publishing finds Rink 1's bookings missing."},
    {"id": "ice_rink_5", "switch": "setpoint_units", "input": 4, "kind": "unit_error",
     "root": ("ice_conditions_planner", 1), "failure": ("set_chiller", 1),
     "description": "the ice-conditions sub-agent passes the federation's Fahrenheit surface temperatures on "
                    "as Celsius setpoints, and the chiller refuses 19.4 C for the hockey session."},
]


# --------------------------------------------------------------------------- helpers

def _m(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def _t(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _clock(text: str) -> str:
    """'6:45 PM' -> '18:45'; '06:30' stays."""
    m = re.fullmatch(r"(\d{1,2}):(\d\d)(?:\s*([AP]M))?", text.strip())
    h, mm, half = int(m.group(1)), int(m.group(2)), m.group(3)
    if half == "PM" and h < 12:
        h += 12
    return f"{h:02d}:{mm:02d}"


def _record_of(rink: str, day: str) -> list:
    out = []
    for bid, line in BOOKINGS[(rink, day)]:
        m = LINE.match(line)
        out.append({"booking": bid, "start": _clock(m.group(1)), "end": _clock(m.group(2)), "who": m.group(3),
                    "type": m.group(4)})
    return out


# --------------------------------------------------------------------------- the model's behaviour

def brain(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system = system_text(request)
    user = user_texts(request)[0]
    if system.startswith("You write the ice crew's conditions note"):
        plan = json_in(user)
        parts = [f"{p['session']}: {p['setpoint_c']} C from {p['at']}" for p in plan]
        return "Crew note: " + "; ".join(parts) + ". Edge the boards after the hockey floods."
    if system.startswith("You staff the resurfacing cuts"):
        cuts = tagged_json(user, "CUTS")
        results = tool_results(request)
        if not results:
            return Reply(tool_calls=(tool_call("driver_roster", {"day": tagged_json(user, "DAY")}),))
        roster = results[-1][1]["drivers"]
        out = []
        for c in cuts:
            d = next(d for d in roster if _m(d["from"]) <= _m(c["start"]) and _m(d["to"]) >= _m(c["end"]))
            out.append({"cut": c["start"], "driver": d["name"]})
        return json.dumps({"assignments": out})
    if system.startswith("You write the public ice notice"):
        sched = json_in(user)
        lines = [f"{s['start']}-{s['end']} {s['who']}" for s in sched["sessions"]]
        return f"Ice on {sched['day']} ({sched['rink']}): " + "; ".join(lines) + "."
    return "Ice plan ready."


# --------------------------------------------------------------------------- the agent

TOOLS = [fn_tool("driver_roster", "Resurfacer drivers on shift for a day.", {"day": "string"})]


def record(inp: dict, path: str, server: Any) -> None:
    from openai import OpenAI

    tracer = ot.setup(NAME)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = server.model
    rink, day = inp["rink"], inp["day"]
    try:
        with ot.span(tracer, NAME, "AGENT", input=inp, metadata=json.dumps({"task": f"ice plan {inp['request_id']}"}),
                     agent__name=NAME) as root:
            with ot.span(tracer, "booking_search", "RETRIEVER", input=f"bookings {rink} {day}") as h:
                key = ("Rink 2" if _on("rink_key") else rink, day)  # the index's rink field
                ot.documents(h, [{"id": bid, "content": line, "metadata": {"rink": key[0], "day": day}}
                                 for bid, line in BOOKINGS.get(key, [])])
                docs = h.output
            with ot.span(tracer, "parse_bookings", "CHAIN", input=[d["content"] for d in docs]) as h:
                sessions = []
                for d in docs:
                    m = LINE.match(d["content"])
                    start, end = m.group(1), m.group(2)
                    if _on("pm_suffix"):
                        start, end = (re.sub(r"\s*[AP]M$", "", x) for x in (start, end))
                    sessions.append({"booking": d["id"], "start": _clock(start), "end": _clock(end),
                                     "who": m.group(3), "type": m.group(4)})
                sessions.sort(key=lambda s: s["start"])
                h.output = sessions
            with ot.span(tracer, "ice_thickness_gate", "GUARDRAIL", input={"rink": rink, "day": day}) as h:
                try:
                    if _on("probe_timeout"):
                        raise TimeoutError("probe service did not answer within 3 s")
                    zones = dict(PROBES[day])
                except TimeoutError:
                    zones = {}
                low = min(zones.values()) if zones else None
                if low is not None and low < MIN_ICE_MM:
                    raise ValueError(f"ice at {low} mm, below {MIN_ICE_MM} mm")
                h.output = {"passed": True, "min_mm": low, "zones": zones}
                ice_report = h.output
            with ot.span(tracer, "ice_conditions_planner", "AGENT", input={"sessions": sessions},
                         agent__name="ice_conditions_planner") as agent:
                with ot.span(tracer, "club_ice_specs", "TOOL", input={"types": sorted({s["type"] for s in sessions})},
                             tool__name="club_ice_specs") as h:
                    h.output = {"units": "F", "surface": {t: SPECS_F[t] for t in sorted({s["type"] for s in sessions})}}
                    specs = h.output
                setpoints = []
                for s in sessions:
                    f = specs["surface"][s["type"]]
                    c = f if _on("setpoint_units") else round((f - 32) * 5 / 9, 1)
                    setpoints.append({"session": s["who"], "at": _t(max(0, _m(s["start"]) - 60)), "setpoint_c": c})
                note = chat_call(client, model, [
                    {"role": "system", "content": "You write the ice crew's conditions note."},
                    {"role": "user", "content": json.dumps(setpoints)}])
                agent.output = {"setpoints": setpoints, "note": note["content"]}
            with ot.span(tracer, "plan_resurfacing", "CHAIN", input={"sessions": sessions}) as h:
                cuts = []
                first = sessions[0]
                cuts.append({"before": first["who"], "start": _t(_m(first["start"]) - 20), "end": _t(_m(first["start"]) - 5),
                             "kind": "morning flood"})
                last = len(sessions) - 1 if _on("cut_range") else len(sessions)
                for i in range(1, last):
                    prev, nxt = sessions[i - 1], sessions[i]
                    minutes = 20 if prev["type"] == "hockey" else 15
                    end = _m(nxt["start"]) - 5
                    cuts.append({"before": nxt["who"], "start": _t(end - minutes), "end": _t(end),
                                 "kind": "full flood" if minutes == 20 else "standard"})
                h.output = cuts
            msgs: list = [
                {"role": "system", "content": "You staff the resurfacing cuts: one driver on shift for each cut, "
                                              "answered as JSON."},
                {"role": "user", "content": f"DAY: {json.dumps(day)}\nCUTS: {json.dumps(cuts)}"},
            ]
            while True:
                answer = chat_call(client, model, msgs, TOOLS)
                if not answer["tool_calls"]:
                    break
                msgs.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                    for c in answer["tool_calls"]]})
                for c in answer["tool_calls"]:
                    with ot.span(tracer, "driver_roster", "TOOL", input=c["arguments"], tool__name="driver_roster",
                                 tool__id=c["id"]) as h:
                        h.output = {"day": c["arguments"]["day"], "drivers": [dict(d) for d in DRIVERS]}
                    msgs.append({"role": "tool", "tool_call_id": c["id"], "content": json.dumps(h.output)})
            staffing = json.loads(answer["content"])
            with ot.span(tracer, "assign_drivers", "TOOL", input=staffing, tool__name="assign_drivers") as h:
                shifts = {d["name"]: d for d in DRIVERS}
                for a in staffing["assignments"]:
                    d = shifts[a["driver"]]
                    if not _m(d["from"]) <= _m(a["cut"]) <= _m(d["to"]):
                        raise ValueError(f"{a['driver']} is not on shift at {a['cut']}")
                h.output = {"assigned": len(staffing["assignments"])}
            for sp in agent.output["setpoints"]:
                with ot.span(tracer, "set_chiller", "TOOL", input=sp, tool__name="set_chiller") as h:
                    lo, hi = CHILLER_RANGE_C
                    if not lo <= sp["setpoint_c"] <= hi:
                        raise ValueError(f"chiller setpoint {sp['setpoint_c']} C for {sp['session']} is outside "
                                         f"{lo} to {hi} C")
                    h.output = {"scheduled": sp["at"], "setpoint_c": sp["setpoint_c"]}
            schedule = {"rink": rink, "day": day, "sessions": sessions, "cuts": cuts}
            notice = chat_call(client, model, [
                {"role": "system", "content": "You write the public ice notice."},
                {"role": "user", "content": json.dumps({"rink": rink, "day": day, "sessions": sessions})}])
            with ot.span(tracer, "publish_schedule", "TOOL", input={**schedule, "notice": notice["content"]},
                         tool__name="publish_schedule") as h:
                record_ = {b["booking"]: b for b in _record_of(rink, day)}
                for s in sessions:
                    b = record_.get(s["booking"])
                    if b is None:
                        missing = ", ".join(f"{x['booking']} {x['who']}" for x in record_.values())
                        raise ValueError(f"{s['booking']} ({s['who']}) is not a {rink} booking on {day}; "
                                         f"the schedule leaves out {missing}")
                    if (b["start"], b["end"]) != (s["start"], s["end"]):
                        raise ValueError(f"{s['who']} is listed {s['start']}-{s['end']}, booking {b['booking']} "
                                         f"is {b['start']}-{b['end']}")
                h.output = {"published": f"https://glenmore-ice.example/{rink.replace(' ', '').lower()}/{day}"}
            clubs = [s for s in sessions if s["type"] in CLUB_TYPES]
            with ot.span(tracer, "confirm_club_sessions", "TOOL", input={"clubs": clubs, "ice": ice_report, "cuts": cuts},
                         tool__name="confirm_club_sessions") as h:
                if ice_report["min_mm"] is None:
                    raise ValueError(f"ice report for {rink} on {day} has no thickness reading; club sessions need "
                                     f"{MIN_ICE_MM} mm or more on record")
                for s in clubs:
                    if s["type"] == "figure":
                        fresh = [c for c in cuts if c["before"] == s["who"]]
                        if not fresh:
                            raise ValueError(f"{s['who']} (figure) at {s['start']} needs fresh ice; no resurface is "
                                             f"planned before it")
                h.output = {"confirmed": [s["booking"] for s in clubs]}
            root.output = {"published": True, "sessions": len(sessions), "cuts": len(cuts)}
    except Exception:  # noqa: BLE001 - the spans record the failure
        pass
    finally:
        ot.finish(NAME, path)
