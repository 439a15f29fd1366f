"""Hot air balloon operator: plans a morning flight (otlp route: OpenTelemetry SDK spans with OpenInference
attributes, the OpenAI client instrumented, exported as OTLP/JSON)."""

from __future__ import annotations

import json
import math
import re

import kit
from common import Spans, ask, chat_brain, client_for

NAME, ROUTE, DOMAIN = "balloon-flight-planner", "otlp", "a hot air balloon operator's flights"
SHAPE = "manifest (retried after a timeout), crew and NOTAM tools, load-calculator sub-agent (basket manifest, weigh-in loop, load sum), met briefing retrieval, launch-plan llm + parse, fuel and lift tools, offload branch, pilot brief llm, notice tool, validator"

SITES = {
    "Ashton Court": {"surface_wind_kt": 6, "wind_2000ft_kt": 14, "temp_c": 16,
                     "landing_fields": ["Long Ashton Farm", "Failand Meadow", "Barrow Court Field"]},
    "Ashton Keynes": {"surface_wind_kt": 4, "wind_2000ft_kt": 9, "temp_c": 14,
                      "landing_fields": ["Waterhay Field", "Cricklade Common"]},
    "Longleat": {"surface_wind_kt": 5, "wind_2000ft_kt": 12, "temp_c": 22,
                 "landing_fields": ["Horningsham Down", "Corsley Heath"]},
    "Castle Combe": {"surface_wind_kt": 7, "wind_2000ft_kt": 16, "temp_c": 18,
                     "landing_fields": ["Nettleton Shrub", "Grittleton Park"]},
}
FLIGHTS = {
    "BF-701": {"site": "Ashton Court", "envelope": 3400, "duration_min": 60,
               "passengers": {"P-11": 82, "P-12": 64, "P-13": 95, "P-14": 71}},
    "BF-702": {"site": "Ashton Court", "envelope": 3400, "duration_min": 60,
               "passengers": {"P-21": 77, "P-22": 58, "P-23": 88, "P-24": 69, "P-25": 90}},
    "BF-703": {"site": "Longleat", "envelope": 3100, "duration_min": 75,
               "passengers": {"P-31": 91, "P-32": 86, "P-33": 79, "P-34": 102, "P-35": 84}},
    "BF-704": {"site": "Castle Combe", "envelope": 3400, "duration_min": 90,
               "passengers": {"P-41": 66, "P-42": 72, "P-43": 59}},
    "BF-705": {"site": "Ashton Court", "envelope": 3100, "duration_min": 60,
               "passengers": {"P-51": 70, "P-52": 81, "P-53": 76}},
}
TWIN = {"BF-701": "BF-702"}  # same site, same morning
PILOT_KG, KIT_KG = 85, 660  # kit: envelope, basket, burners, full cylinders
INPUTS = [f"Plan flight {f} from {v['site']} tomorrow at dawn." for f, v in FLIGHTS.items()]
CASES = [
    {"case": "zzp_balloon_1", "input": 0, "kind": "subagent_wrong_entity", "root": ("fetch_basket_manifest", 1),
     "failure": ("validate_flight", 1),
     "description": "The load-calculator sub-agent fetches the basket manifest of the twin flight BF-702 and weighs its passengers."},
    {"case": "zzp_balloon_2", "input": 4, "kind": "wrong_retrieval", "root": ("fetch_met_briefing", 1),
     "failure": ("validate_flight", 1),
     "description": "The met briefing search returns the Ashton Keynes briefing for an Ashton Court launch."},
    {"case": "zzp_balloon_3", "input": 3, "kind": "swallowed_error", "root": ("fuel_plan", 1),
     "failure": ("validate_flight", 1),
     "description": "The fuel tool swallows the burn-rate service's error and answers the fleet default of 3 cylinders for a 90-minute flight."},
    {"case": "zzp_balloon_4", "input": 2, "kind": "wrong_tool_args", "root": ("lift_table", 1),
     "failure": ("validate_flight", 1),
     "description": "The lift lookup is called with the surface wind (5) as the temperature instead of 22 C, overstating lift so nobody is offloaded."},
    {"case": "zzp_balloon_5", "input": 1, "kind": "hallucinated_value", "root": ("ChatCompletion", 2),
     "failure": ("validate_flight", 1),
     "description": "The pilot brief model names a landing field, Dundry Hill, that is in neither the plan nor the briefing."},
]


def _plan(text: str) -> str:
    b = json.loads(text)
    return json.dumps({"landing_field": b["landing_fields"][0], "launch": "06:10",
                       "duration_min": b["duration_min"], "drift_heading": 70})


def _brief(text: str) -> str:
    f = json.loads(text)
    field = "Dundry Hill" if kit.on("zzp_balloon_5") else f["landing_field"]
    return (f"Pilot brief {f['flight']}: launch {f['site']} {f['launch']}, {f['passengers']} passengers, "
            f"{f['cylinders']} cylinders, expect {f['wind']} kt at 2000 ft. Landing: {field}.")


BRAIN = chat_brain({"Plan": _plan, "Brief": _brief})


def _required_cylinders(duration: int, wind: int) -> int:
    return math.ceil(duration / 30 * (1 + wind / 40)) + 1


def _burn_service(duration: int, wind: int) -> int:
    if kit.on("zzp_balloon_3"):
        raise ConnectionError("burn-rate service unavailable")
    return _required_cylinders(duration, wind)


def _lift(envelope: int, temp_c: float) -> int:
    return round(envelope * 0.42 * (1 - 0.012 * (temp_c - 10)))


def record(server, inp: str, path: str) -> None:
    server.use(BRAIN)
    client = client_for(server)
    sp = Spans(NAME)
    flight_id = re.search(r"BF-\d+", inp).group(0)
    try:
        with sp.span(NAME, "AGENT", inp) as top:
            manifest = None
            for attempt in (1, 2, 3):  # the booking system is slow to wake at dawn
                try:
                    with sp.span("load_manifest", "TOOL", {"flight": flight_id}, attempt=attempt) as o:
                        if attempt == 1:
                            raise TimeoutError("booking system did not answer within 5 s")
                        f = FLIGHTS[flight_id]
                        manifest = o.set({"flight": flight_id, "site": f["site"], "envelope": f["envelope"],
                                          "duration_min": f["duration_min"],
                                          "passengers": [{"id": p, "declared_kg": kg}
                                                         for p, kg in f["passengers"].items()]})
                    break
                except TimeoutError:
                    continue
            with sp.span("crew_roster", "TOOL", {"date": "tomorrow", "site": manifest["site"]}) as o:
                o.set({"pilot": "Capt. R. Hale", "chase_crew": ["Dee", "Marek"], "vehicle": "Land Rover 4"})
            with sp.span("check_notams", "TOOL", {"site": manifest["site"], "radius_nm": 15}) as o:
                o.set({"site": manifest["site"], "notams": [], "checked": "05:30"})
            with sp.span("load_calculator", "AGENT", {"flight": flight_id}) as calc:
                with sp.span("fetch_basket_manifest", "TOOL", {"flight": flight_id}) as o:
                    which = TWIN.get(flight_id, flight_id) if kit.on("zzp_balloon_1") else flight_id
                    basket = o.set({"flight": flight_id, "passengers": list(FLIGHTS[which]["passengers"])})
                weights = []
                for pid in basket["passengers"]:
                    with sp.span("weigh_in", "TOOL", {"passenger": pid}) as o:
                        declared = next(v["passengers"][pid] for v in FLIGHTS.values() if pid in v["passengers"])
                        weights.append(o.set({"passenger": pid, "kg": declared + 1}))
                with sp.span("basket_load", "CHAIN", {"weights": weights}) as o:
                    load = o.set({"passengers": [w["passenger"] for w in weights],
                                  "payload_kg": sum(w["kg"] for w in weights) + PILOT_KG + KIT_KG})
                calc.set(load)
            with sp.span("fetch_met_briefing", "RETRIEVER", {"query": f"dawn briefing {manifest['site']}"}) as o:
                site = "Ashton Keynes" if kit.on("zzp_balloon_2") else manifest["site"]
                briefing = o.set({"site": site, **SITES[site]})
            plan_text = ask(client, "fake-model", "Plan: choose a landing field and the launch time as JSON.",
                            json.dumps({"site": manifest["site"], "duration_min": manifest["duration_min"],
                                        "landing_fields": briefing["landing_fields"],
                                        "wind_2000ft_kt": briefing["wind_2000ft_kt"]}))
            with sp.span("parse_launch_plan", "CHAIN", plan_text) as o:
                plan = o.set(json.loads(plan_text))
            with sp.span("fuel_plan", "TOOL", {"duration_min": plan["duration_min"],
                                               "wind_kt": briefing["wind_2000ft_kt"]}) as o:
                try:
                    cylinders = _burn_service(plan["duration_min"], briefing["wind_2000ft_kt"])
                except Exception:
                    cylinders = 3  # fleet default
                fuel = o.set({"cylinders": cylinders})
            temp = briefing["surface_wind_kt"] if kit.on("zzp_balloon_4") else briefing["temp_c"]
            with sp.span("lift_table", "TOOL", {"envelope_m3": manifest["envelope"], "temp_c": temp}) as o:
                lift = o.set({"max_payload_kg": _lift(manifest["envelope"], temp)})
            passengers = list(load["passengers"])
            payload = load["payload_kg"]
            while payload > lift["max_payload_kg"]:
                with sp.span("offload_passenger", "TOOL", {"flight": flight_id, "passenger": passengers[-1]}) as o:
                    pid = passengers.pop()
                    payload -= next(w["kg"] for w in weights if w["passenger"] == pid)
                    o.set({"passenger": pid, "rebooked": "next dawn flight"})
            facts = json.dumps({"flight": flight_id, "site": manifest["site"], "launch": plan["launch"],
                                "passengers": len(passengers), "cylinders": fuel["cylinders"],
                                "wind": briefing["wind_2000ft_kt"], "landing_field": plan["landing_field"]})
            brief = ask(client, "fake-model", "Brief: write the pilot brief.", facts)
            with sp.span("file_flight_notice", "TOOL", {"brief": brief}) as o:
                notice = o.set({"flight": flight_id, "landing": re.search(r"Landing: (.+)\.$", brief).group(1),
                                "notice": f"N-{flight_id[3:]}"})
            with sp.span("validate_flight", "CHAIN", {"flight": flight_id}):
                f = FLIGHTS[flight_id]
                if set(load["passengers"]) != set(f["passengers"]):
                    raise ValueError(f"weighed passengers {sorted(load['passengers'])} are not the manifest of {flight_id}")
                if briefing["site"] != f["site"]:
                    raise ValueError(f"met briefing is for {briefing['site']}, {flight_id} launches from {f['site']}")
                fields = SITES[f["site"]]["landing_fields"]
                if notice["landing"] not in fields:
                    raise ValueError(f"filed landing field {notice['landing']} is not approved for {f['site']}")
                need = _required_cylinders(f["duration_min"], SITES[f["site"]]["wind_2000ft_kt"])
                if fuel["cylinders"] < need:
                    raise ValueError(f"{fuel['cylinders']} cylinders for {f['duration_min']} min, {need} needed")
                true_lift = _lift(f["envelope"], SITES[f["site"]]["temp_c"])
                if payload > true_lift:
                    raise ValueError(f"payload {payload} kg over the {true_lift} kg lift at {SITES[f['site']]['temp_c']} C")
            top.set({"flight": flight_id, "notice": notice["notice"], "passengers": passengers})
    except ValueError:
        pass
    with open(path, "w") as fh:
        json.dump(sp.envelope(), fh)
