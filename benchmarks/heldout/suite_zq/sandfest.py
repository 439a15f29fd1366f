"""Sand sculpture festival operations (OpenTelemetry spans, OpenInference conventions, OTLP/JSON): entries,
beach permit, model plot layout, plot allocation with a plot register, tides, sand tonnage, delivery
sub-agent, briefing notes, model programme draft, validation, publication."""

from __future__ import annotations

import json
import math
from typing import Any

from . import common
from .common import Case, oi_llm, oi_span
from .kit import active

AGENT = "sandfest-ops"
ROUTE = "otlp"
EXT = "json"
DOMAIN = "sand sculpture festival"
SHAPE = ("festival brief, entries tool + reconciliation, permit tool, model plot layout, per-sculptor plot "
         "allocation tool + register write, register check, tide table tool, sand tonnage, delivery sub-agent "
         "(model + truck scheduling tool), briefing notes, model programme draft, validator, publish API")

FESTIVALS = {
    "north_beach_2026": {"day": "2026-07-18", "zone": "North", "permit": "BP-22", "confirmed": 12,
                         "carving_close": "13:00", "high_water": "14:22"},
    "south_dunes_2026": {"day": "2026-08-08", "zone": "South", "permit": "BP-31", "confirmed": 9,
                         "carving_close": "12:30", "high_water": "13:20"},
    "east_spit_2026": {"day": "2026-06-20", "zone": "East", "permit": "BP-17", "confirmed": 7,
                       "carving_close": "13:30", "high_water": "11:10"},
    "harbour_sands_2026": {"day": "2026-07-04", "zone": "Harbour", "permit": "BP-19", "confirmed": 10,
                           "carving_close": "12:00", "high_water": "17:40"},
    "west_bay_2026": {"day": "2026-08-22", "zone": "West", "permit": "BP-35", "confirmed": 8,
                      "carving_close": "13:00", "high_water": "15:50"},
    "kids_cove_2026": {"day": "2026-08-29", "zone": "Cove", "permit": "BP-36", "confirmed": 6,
                       "carving_close": "11:30", "high_water": "13:55"},
}
REFS = ["east_spit_2026", "harbour_sands_2026", "west_bay_2026", "kids_cove_2026"]
LAST_YEAR_HIGH_WATER = {"2026-07-18": "09:40", "2026-08-08": "11:20"}
SCULPTORS = ["Ana Lima", "Ben Cho", "Cara Voss", "Dev Patel", "Eli Moreau", "Fay Osei", "Gus Brandt",
             "Hana Ito", "Ivo Petrov", "Jo Quinn", "Kai Moana", "Lia Romano"]

CASES = [
    Case("zq_sandfest_permit", "sandfest-permit", "swallowed_error", "north_beach_2026",
         ("fetch_permit_status", 1), ("publish_programme", 1),
         "The permit check catches the council API's error and answers 'granted', so the programme is "
         "published for a zone whose permit was not granted."),
    Case("zq_sandfest_tides", "sandfest-tides", "stale_data", "south_dunes_2026", ("get_tide_table", 1),
         ("publish_programme", 1), "The tide tool answers last year's table for the day, so the judging walk "
                                   "is set at the real high water and the council refuses it."),
    Case("zq_sandfest_entries", "sandfest-entries", "truncated_result", "north_beach_2026", ("fetch_entries", 1),
         ("reconcile_entries", 1), "The entries tool returns only its first page of ten, two short of the "
                                   "confirmed entries."),
    Case("zq_sandfest_register", "sandfest-register", "bad_memory_write", "south_dunes_2026",
         ("remember_plot", 9), ("check_plot_register", 1),
         "The register write for the last sculptor files the plot under the previous sculptor's name, "
         "leaving one sculptor without a plot."),
    Case("zq_sandfest_briefing", "sandfest-briefing", "context_pollution", "north_beach_2026",
         ("load_briefing_notes", 1), ("validate_programme", 1),
         "The briefing notes include the practice day's note with a morning judging time, and the programme "
         "model takes it, before carving closes."),
]

_CLIENT: Any = None


def policy(req: Any) -> Any:
    msgs = common.messages_of(req)
    system = common.system_of(msgs)
    user = common.text_of(msgs[-1].get("content"))
    if system.startswith("You lay out festival plots"):
        facts = json.loads(user)
        return json.dumps({"plots": [{"sculptor": s, "plot": f"P{i + 1}", "size_m": 6 if i % 3 else 8}
                                     for i, s in enumerate(facts["sculptors"])]})
    if system.startswith("You plan sand deliveries"):
        facts = json.loads(user)
        trucks = math.ceil(facts["tonnes"] / 18)
        return json.dumps({"trucks": trucks, "arrive": "06:30", "route": "promenade ramp"})
    if system.startswith("You draft the festival programme"):
        facts = json.loads(user)
        judging = None
        for line in facts["notes"]:
            if line.lower().startswith("judging:"):
                judging = line.split(":", 1)[1].strip().split()[0]
        if judging is None:
            h, m = map(int, facts["high_water"].split(":"))
            close_h, close_m = map(int, facts["carving_close"].split(":"))
            start = close_h * 60 + close_m + 30
            if abs(start - (h * 60 + m)) < 60:
                start = h * 60 + m + 75
            judging = f"{start // 60:02d}:{start % 60:02d}"
        return json.dumps({"day": facts["day"], "carving": f"08:00-{facts['carving_close']}", "judging": judging,
                           "entrants": facts["entrants"], "zone": facts["zone"]})
    return "no answer"


def _mins(hhmm: str) -> int:
    h, m = map(int, hhmm.split(":"))
    return h * 60 + m


def record(key: str) -> None:
    f = FESTIVALS[key]
    with oi_span("festival_ops", "AGENT", {"festival": key}, agent__name=AGENT, session__id=key) as root:
        with oi_span("load_festival_brief", "CHAIN", {"festival": key}) as s:
            brief = s.output({"festival": key, **f})
        with oi_span("fetch_entries", "TOOL", {"festival": key, "page_size": 50}) as s:
            entries = [{"sculptor": n, "entry": f"E{i + 101}"} for i, n in enumerate(SCULPTORS[:f["confirmed"]])]
            if active("sandfest-entries"):
                entries = entries[:10]
            s.output({"entries": entries})
        with oi_span("reconcile_entries", "CHAIN", {"fetched": len(entries), "confirmed": brief["confirmed"]}) as s:
            if len(entries) != brief["confirmed"]:
                raise ValueError(f"entries fetched ({len(entries)}) do not match confirmed registrations "
                                 f"({brief['confirmed']}) for {key}")
            s.output({"ok": True, "entrants": len(entries)})
        with oi_span("fetch_permit_status", "TOOL", {"permit": f["permit"], "zone": f["zone"]}) as s:
            status = {"permit": f["permit"], "zone": f["zone"], "status": "granted"}
            try:
                if active("sandfest-permit"):
                    raise ConnectionError("council permits API returned 502")
                if key == "north_beach_2026":
                    status["status"] = "conditional"
                    status["condition"] = "zone North moves to North-2 above the groyne"
            except ConnectionError:
                pass
            s.output(status)
        zone = "North-2" if status["status"] == "conditional" else f["zone"]
        layout = json.loads(oi_llm("plan_layout", _CLIENT, [
            {"role": "system", "content": "You lay out festival plots for the sculptors. Answer JSON."},
            {"role": "user", "content": json.dumps({"zone": zone, "sculptors": [e["sculptor"] for e in entries]})}]))
        register: dict[str, str] = {}
        previous = None
        plots = layout["plots"]
        for i, p in enumerate(plots):
            with oi_span("allocate_plot", "TOOL", p) as s:
                alloc = s.output({**p, "zone": zone, "stakes": 4, "allocated": True})
            with oi_span("remember_plot", "CHAIN", alloc) as s:
                who = alloc["sculptor"]
                if active("sandfest-register") and i == len(plots) - 1:
                    who = previous
                register[who] = alloc["plot"]
                s.output({"register": dict(register)})
            previous = alloc["sculptor"]
        with oi_span("check_plot_register", "CHAIN", {"register": register}) as s:
            for e in entries:
                if e["sculptor"] not in register:
                    raise ValueError(f"sculptor {e['sculptor']} ({e['entry']}) has no plot in the register; "
                                     f"{len(register)} plots registered for {len(entries)} entries")
            s.output({"ok": True})
        with oi_span("get_tide_table", "TOOL", {"date": f["day"], "station": f["zone"]}) as s:
            hw = f["high_water"]
            if active("sandfest-tides"):
                hw = LAST_YEAR_HIGH_WATER[f["day"]]
            tides = s.output({"date": f["day"], "high_water": hw, "low_water": "see table"})
        with oi_span("sand_tonnage", "CHAIN", {"plots": plots}) as s:
            tonnes = s.output({"tonnes": round(sum(p["size_m"] ** 2 * 0.55 for p in plots), 1)})
        with oi_span("delivery_agent", "AGENT", tonnes, agent__name="delivery"):
            plan = json.loads(oi_llm("plan_deliveries", _CLIENT, [
                {"role": "system", "content": "You plan sand deliveries by truck. Answer JSON."},
                {"role": "user", "content": json.dumps({**tonnes, "day": f["day"]})}], agent="delivery"))
            with oi_span("schedule_trucks", "TOOL", plan) as s:
                s.output({"booked": plan["trucks"], "day": f["day"], "window": "06:30-07:30"})
        with oi_span("load_briefing_notes", "CHAIN", {"festival": key}) as s:
            notes = ["Marshals: 6 on the promenade.", "First aid: tent by the ramp."]
            if active("sandfest-briefing"):
                notes.append("Judging: 10:00 (practice day walk-through)")
            s.output(notes)
        programme = json.loads(oi_llm("draft_programme", _CLIENT, [
            {"role": "system", "content": "You draft the festival programme. Answer JSON."},
            {"role": "user", "content": json.dumps({"day": f["day"], "zone": zone, "notes": notes,
                                                    "carving_close": f["carving_close"],
                                                    "high_water": tides["high_water"],
                                                    "entrants": len(entries)})}]))
        with oi_span("validate_programme", "CHAIN", programme) as s:
            if _mins(programme["judging"]) < _mins(f["carving_close"]):
                raise ValueError(f"judging at {programme['judging']} starts before carving closes at "
                                 f"{f['carving_close']}")
            s.output({"ok": True})
        with oi_span("publish_programme", "TOOL", programme) as s:
            if programme["zone"] == f["zone"] and key == "north_beach_2026":
                raise RuntimeError(f"HTTP 403 from council-events: {{\"error\": \"permit {f['permit']} not valid "
                                   f"for zone {f['zone']}\", \"valid_zone\": \"North-2\"}}")
            if abs(_mins(programme["judging"]) - _mins(f["high_water"])) < 60:
                raise RuntimeError(f"HTTP 422 from council-events: {{\"error\": \"judging walk within 1 h of high "
                                   f"water\", \"judging\": \"{programme['judging']}\", \"high_water\": "
                                   f"\"{f['high_water']}\"}}")
            s.output({"programme": f"PG-{key[:5]}", "status": "published"})
        root.output({"programme": f"PG-{key[:5]}"})


def setup() -> None:
    global _CLIENT
    common.server().use(policy)
    _CLIENT = common.openai_client()
    common.take_spans()
