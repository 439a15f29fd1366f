"""Drone light show planner (OpenTelemetry + OpenInference, exported as OTLP/JSON): site survey, templates, a sequencing model,
formation compiles, a safety-officer sub-agent for the permit, forecast, timeline, a filing model, then the flight plan filing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .common import Case, chat, role_and_payload
from .kit import active
from .otlp_common import Tracing

NAME = "drone-show-planner"
ROUTE = "otlp"
DOMAIN = "drone light shows"
SHAPE = "read brief -> site survey -> template search -> sequence llm -> parse -> compile loop -> battery -> safety sub-agent (llm, permit) -> forecast -> timeline -> filing llm -> file flight plan"

BRIEFS = {
    "newyear": "Show DS-19 at site S-CP (backup S-RF): 300 drones, 2026-12-31 23:50, formations: countdown, fireworks, city_logo.",
    "lantern": "Show DS-22 at site S-RF (backup S-CP): 200 drones, 2027-01-15 19:00, formations: lantern, dragon, heart.",
    "expo": "Show DS-23 at site S-EX (backup S-CP): 150 drones, 2027-02-02 20:30, formations: logo, globe.",
    "gala": "Show DS-24 at site S-CP (backup S-EX): 250 drones, 2027-03-08 21:00, formations: heart, fireworks, star.",
    "derby": "Show DS-25 at site S-RF (backup S-EX): 300 drones, 2027-04-11 21:15, formations: countdown, globe, star, heart.",
    "solstice": "Show DS-26 at site S-EX (backup S-RF): 120 drones, 2027-06-21 22:30, formations: sun, lantern.",
}
SITES = {"S-CP": {"ceiling_m": 120, "wind_limit_ms": 9}, "S-RF": {"ceiling_m": 100, "wind_limit_ms": 8}, "S-EX": {"ceiling_m": 150, "wind_limit_ms": 10}}
PERMITS = {"S-CP": "PX-4471", "S-RF": "PX-3902", "S-EX": "PX-5120"}
TEMPLATES = {"countdown": 70, "fireworks": 90, "city_logo": 60, "lantern": 80, "dragon": 100, "heart": 50, "logo": 60, "globe": 75, "star": 45, "sun": 65}
TODAY = "2026-12-04"

CASES = [
    Case("ze_drone_1", "drone_last", "off_by_one", "newyear", ("assemble_timeline", 1), ("file_flight_plan", 1),
         "The timeline loop stops one formation early, so a formation in the brief has no slot in the filed flight plan."),
    Case("ze_drone_2", "drone_alt", "swallowed_error", "newyear", ("compile_formation", 3), ("file_flight_plan", 1),
         "A formation compile's altitude error is caught and the uncapped frames are kept, so the filed plan flies above the site ceiling."),
    Case("ze_drone_3", "drone_site", "subagent_wrong_entity", "lantern", ("ChatCompletion", 2), ("file_flight_plan", 1),
         "The safety-officer sub-agent's model asks for the backup site's permit, so the filing carries a permit for another site."),
    Case("ze_drone_4", "drone_permit", "hallucinated_value", "lantern", ("ChatCompletion", 3), ("file_flight_plan", 1),
         "The filing model writes a permit number that appears in none of its inputs, and the authority's permit check refuses it."),
    Case("ze_drone_5", "drone_date", "wrong_tool_args", "newyear", ("prepare_forecast_query", 1), ("file_flight_plan", 1),
         "The forecast query is built with today's date instead of the show date, so the attached forecast does not cover the show."),
]
REF_INPUTS = ["expo", "gala", "derby", "solstice"]


class FilingRejected(RuntimeError):
    pass


def policy(request: Any) -> str:
    role, p = role_and_payload(request)
    if role == "sequence":
        seq = [{"template": t["id"], "altitude_m": min(p["ceiling_m"] - 10, 110)} for t in p["templates"]]
        return json.dumps({"sequence": seq, "transition_s": 8})
    if role == "permit":
        site = p["backup_site"] if active("drone_site") else p["site"]
        return json.dumps({"fetch_permit_for": site})
    if role == "filing":
        permit = p["permit"]["permit"]
        if active("drone_permit"):
            permit = "PX-" + str(int(permit[3:]) + 17)
        return json.dumps({"show": p["show"], "permit": permit, "site": p["site"], "window": p["window"], "drones": p["drones"]})
    return "{}"


def record(main_input: str, path: Path) -> None:
    text = BRIEFS[main_input]
    t = Tracing(NAME, path)
    try:
        with t.span(NAME, "AGENT", input=text, agent__name=NAME) as top:
            with t.span("read_brief", "CHAIN", input=text) as s:
                m = re.match(r"Show (DS-\d+) at site (S-\w+) \(backup (S-\w+)\): (\d+) drones, (\S+) (\S+), formations: (.+)\.", text)
                brief = t.out(s, {"show": m[1], "site": m[2], "backup_site": m[3], "drones": int(m[4]), "date": m[5], "time": m[6], "formations": [f.strip() for f in m[7].split(",")]})
            with t.span("get_site_survey", "TOOL", input={"site": brief["site"]}, tool__name="get_site_survey") as s:
                survey = t.out(s, {"site": brief["site"], **SITES[brief["site"]]})
            with t.span("find_formation_templates", "RETRIEVER", input={"formations": brief["formations"]}) as s:
                templates = [{"id": f, "seconds": TEMPLATES[f], "min_drones": 100} for f in brief["formations"]]
                for i, d in enumerate(templates):
                    s.set_attribute(f"retrieval.documents.{i}.document.id", d["id"])
                    s.set_attribute(f"retrieval.documents.{i}.document.content", json.dumps(d))
                t.out(s, templates)
            with t.span("choose_sequence", "CHAIN", input={"templates": templates}):
                answer = chat("show-designer", "ROLE: sequence\nOrder the formations and pick altitudes. Answer JSON.", {"templates": templates, "ceiling_m": survey["ceiling_m"], "drones": brief["drones"]})
            with t.span("parse_sequence", "CHAIN", input=answer) as s:
                seq = t.out(s, json.loads(answer)["sequence"])
            compiled = []
            for step in seq:
                with t.span("compile_formation", "TOOL", input={"template": step["template"], "drones": brief["drones"], "altitude_m": step["altitude_m"]}, tool__name="compile_formation") as s:
                    top_alt = step["altitude_m"] + (40 if step["template"] in ("city_logo", "dragon") else 10)
                    result = {"template": step["template"], "frames": TEMPLATES[step["template"]] * 24, "max_alt_m": top_alt}
                    try:
                        if top_alt > survey["ceiling_m"]:
                            raise ValueError(f"{step['template']}: top row at {top_alt} m above ceiling {survey['ceiling_m']} m")
                    except ValueError:
                        if not active("drone_alt"):
                            result["max_alt_m"] = survey["ceiling_m"]
                            result["compressed"] = True
                    compiled.append(t.out(s, result))
            with t.span("battery_plan", "TOOL", input={"drones": brief["drones"], "seconds": sum(TEMPLATES[x["template"]] for x in seq)}, tool__name="battery_plan") as s:
                t.out(s, {"packs": brief["drones"] * 2, "swap": "none needed", "reserve_pct": 35})
            with t.span("safety_officer", "AGENT", input={"site": brief["site"], "backup_site": brief["backup_site"]}, agent__name="safety_officer") as so:
                pick = json.loads(chat("safety-officer", "ROLE: permit\nDecide which site's permit to fetch. Answer JSON.", {"site": brief["site"], "backup_site": brief["backup_site"], "show": brief["show"]}))
                with t.span("fetch_permit", "TOOL", input={"site_id": pick["fetch_permit_for"]}, tool__name="fetch_permit") as s:
                    permit = t.out(s, {"permit": PERMITS[pick["fetch_permit_for"]], "site": pick["fetch_permit_for"], "valid": "2026-12-01/2027-12-31"})
                t.out(so, permit)
            with t.span("prepare_forecast_query", "CHAIN", input={"site": brief["site"], "date": brief["date"]}) as s:
                query = t.out(s, {"site": brief["site"], "date": TODAY if active("drone_date") else brief["date"], "hour": brief["time"][:2]})
            with t.span("weather_forecast", "TOOL", input=query, tool__name="weather_forecast") as s:
                forecast = t.out(s, {"date": query["date"], "hour": query["hour"], "wind_ms": 4.5, "gust_ms": 7.0})
            with t.span("assemble_timeline", "CHAIN", input={"compiled": compiled}) as s:
                n = len(compiled) - 1 if active("drone_last") else len(compiled)
                clock, slots = 0, []
                for i in range(n):
                    slots.append({"template": compiled[i]["template"], "start_s": clock, "max_alt_m": compiled[i]["max_alt_m"]})
                    clock += compiled[i]["frames"] // 24 + 8
                timeline = t.out(s, {"slots": slots, "total_s": clock})
            with t.span("compose_filing", "CHAIN", input={"permit": permit, "timeline": timeline}):
                filing = json.loads(chat("filing-writer", "ROLE: filing\nWrite the flight-plan filing as JSON.", {"show": brief["show"], "permit": permit, "site": brief["site"], "window": f"{brief['date']}T{brief['time']}/{timeline['total_s']}s", "drones": brief["drones"]}))
            with t.span("file_flight_plan", "TOOL", input={"filing": filing, "timeline": timeline, "forecast": forecast}, tool__name="file_flight_plan") as s:
                if permit["site"] != brief["site"]:
                    raise FilingRejected(f"aviation authority 409: permit {permit['permit']} is issued for site {permit['site']}, flight plan is for {brief['site']}")
                if filing["permit"] not in PERMITS.values():
                    raise FilingRejected(f"aviation authority 404: permit {filing['permit']} not found")
                if forecast["date"] != brief["date"]:
                    raise FilingRejected(f"aviation authority 422: attached forecast is for {forecast['date']}, the show flies on {brief['date']}")
                missing = [f for f in brief["formations"] if f not in {x["template"] for x in timeline["slots"]}]
                if missing:
                    raise FilingRejected(f"aviation authority 422: formations {missing} have no slot in the timeline")
                high = max(x["max_alt_m"] for x in timeline["slots"])
                if high > survey["ceiling_m"]:
                    raise FilingRejected(f"aviation authority 422: max altitude {high} m exceeds the {survey['ceiling_m']} m ceiling of {brief['site']}")
                t.out(s, {"reference": f"FP-{brief['show'][3:]}", "status": "accepted"})
            t.out(top, f"{brief['show']} filed")
    except FilingRejected:
        pass
    finally:
        t.close()
