"""hazmat-isolation-advisor: a fire service hazmat desk turns a crew's placard report into an
isolation / protective-action advisory (ERG-style tables), checks downwind sites, publishes to CAD."""
from __future__ import annotations

import json
import re

import trajdebug

from .common import client, last_user, system_text

NAME = "hazmat-isolation-advisor"
ROUTE = "sdk"
DOMAIN = "fire service hazmat desk: placard report to isolation and protective-action advisory"
SHAPE = "llm extract -> parse -> retrieval per material -> state -> weather tool -> zones -> receptor loop (llm per site) -> llm draft -> CAD publish check"
SWITCH = None

GUIDES = [
    {"un": "1005", "name": "Ammonia, anhydrous", "guide": 125,
     "small": {"isolate_m": 30, "day_km": 0.1, "night_km": 0.2}, "large": {"isolate_m": 150, "day_km": 0.8, "night_km": 2.0}},
    {"un": "2672", "name": "Ammonia solution", "guide": 154,
     "small": {"isolate_m": 50, "day_km": 0.1, "night_km": 0.1}, "large": {"isolate_m": 50, "day_km": 0.3, "night_km": 0.3}},
    {"un": "1017", "name": "Chlorine", "guide": 124,
     "small": {"isolate_m": 60, "day_km": 0.3, "night_km": 1.1}, "large": {"isolate_m": 500, "day_km": 3.0, "night_km": 7.9}},
    {"un": "1203", "name": "Gasoline", "guide": 128,
     "small": {"isolate_m": 50, "day_km": 0.3, "night_km": 0.3}, "large": {"isolate_m": 300, "day_km": 0.8, "night_km": 0.8}},
    {"un": "1830", "name": "Sulphuric acid", "guide": 137,
     "small": {"isolate_m": 50, "day_km": 0.1, "night_km": 0.1}, "large": {"isolate_m": 100, "day_km": 0.4, "night_km": 0.4}},
]
STATIONS = {
    "A14-J9": {"station": "Cambridge NIAB", "speed": 5.5, "units": "m/s", "from_deg": 225},
    "Whitemoor yard": {"station": "March AWS", "speed": 3.0, "units": "m/s", "from_deg": 270},
    "Histon Road": {"station": "Cambridge NIAB", "speed": 14.0, "units": "kt", "from_deg": 200},
    "Elm Farm": {"station": "Wisbech", "speed": 2.0, "units": "m/s", "from_deg": 45},
    "Brookfields estate": {"station": "Cambridge NIAB", "speed": 4.0, "units": "m/s", "from_deg": 315},
}
SITES = {
    "A14-J9": [("Girton Glebe Primary", "school", 1.4, 50), ("Oakington care home", "care_home", 3.2, 40),
               ("Dry Drayton village hall", "hall", 2.5, 30), ("Bar Hill Tesco", "retail", 0.6, 60), ("Lolworth farm", "farm", 5.0, 170)],
    "Whitemoor yard": [("March rail depot offices", "workplace", 0.2, 95), ("Whitemoor prison", "prison", 0.9, 80), ("Elm Road homes", "housing", 1.0, 100)],
    "Histon Road": [("Histon Road nursery", "school", 0.3, 15), ("Murketts garage", "workplace", 0.1, 25), ("Orchard Park flats", "housing", 0.7, 10), ("Arbury surgery", "clinic", 2.0, 20)],
    "Elm Farm": [("Elm Farm cottages", "housing", 0.1, 230), ("Friday Bridge school", "school", 1.5, 220), ("Coldham church", "hall", 0.15, 215)],
    "Brookfields estate": [("Brookfields offices", "workplace", 0.2, 140), ("Mill Road cemetery lodge", "housing", 0.35, 130), ("Coleridge college", "school", 1.2, 135)],
}
INPUTS = [
    {"task": "tanker rollover A14-J9, placards 1005 and 1017", "location": "A14-J9",
     "report": "Engine 21 at A14-J9: overturned tanker, placards 1005 and 1017 showing, large leak from the rear valve, vapour cloud drifting. Time 02:10. Crew estimate wind 20 km/h from SW."},
    {"task": "rail tank car leak Whitemoor yard, placard 1017", "location": "Whitemoor yard",
     "report": "Rescue 4 at Whitemoor yard: rail tank car, placard 1017, small leak at the dome cover. Time 14:30. Crew estimate wind 10 km/h from W."},
    {"task": "fuel lorry spill Histon Road, placard 1203", "location": "Histon Road",
     "report": "Engine 9 at Histon Road: delivery lorry holed, placard 1203, large spill running into drains. Time 11:05. Crew estimate wind 25 km/h from SSW."},
    {"task": "cylinder leak Elm Farm, placard 1005", "location": "Elm Farm",
     "report": "Engine 31 at Elm Farm: farm store, placard 1005, small leak from a cylinder valve. Time 22:40. Crew estimate wind 8 km/h from NE."},
    {"task": "acid drum spill Brookfields estate, placard 1830", "location": "Brookfields estate",
     "report": "Engine 12 at Brookfields estate: industrial unit yard, placard 1830, large spill from split drums. Time 09:15. Crew estimate wind 15 km/h from NW."},
]
CASES = [
    {"id": "zq_hazmat_1", "input": 0, "fault_kind": "lossy_parsing", "root": ("parse_incident", 1), "root_kind": "parse",
     "failure": ("publish_advisory", 1),
     "description": "The parser keeps only the first of the two placard numbers the model extracted, so the advisory covers ammonia and leaves chlorine out; CAD rejects it."},
    {"id": "zq_hazmat_2", "input": 2, "fault_kind": "unit_error", "root": ("normalise_wind", 1), "root_kind": "other",
     "failure": ("publish_advisory", 1),
     "description": "The station reports 14 knots but the wind is converted as if in m/s (50.4 km/h instead of 25.9 km/h), which CAD finds far above the crew's 25 km/h."},
    {"id": "zq_hazmat_3", "input": 3, "fault_kind": "wrong_retrieval", "root": ("lookup_guide", 1), "root_kind": "retrieval",
     "failure": ("publish_advisory", 1),
     "description": "The guide search matches by material name and returns Ammonia solution (UN2672, guide 154) for placard 1005, which CAD refuses for that placard."},
    {"id": "zq_hazmat_4", "input": 1, "fault_kind": "bad_memory_write", "root": ("store_material", 1), "root_kind": "state",
     "failure": ("publish_advisory", 1),
     "description": "The material record saved to run state takes the isolation figure of the large-spill column (500 m) for a small chlorine leak, so CAD finds the isolation 500 m against its 60 m."},
    {"id": "zq_hazmat_5", "input": 4, "fault_kind": "hallucinated_value", "root": ("draft_advisory", 1), "root_kind": "llm",
     "failure": ("publish_advisory", 1),
     "description": "The drafted advisory text tells crews to isolate 250 m around the acid spill, a figure no input holds (the computed zone is 100 m)."},
]


def brain(request):
    sys_ = system_text(request)
    user = last_user(request)
    if "extract" in sys_:
        placards = re.findall(r"\b(\d{4})\b(?! km)", user.split("Time")[0])
        spill = "large" if "large" in user else "small"
        t = re.search(r"Time (\d\d):(\d\d)", user)
        wind = re.search(r"wind (\d+) km/h", user)
        return json.dumps({"un_numbers": placards, "spill": spill, "time": f"{t.group(1)}:{t.group(2)}",
                           "crew_wind_kmh": int(wind.group(1))})
    if "classify" in sys_:
        site = json.loads(user)
        close = site["dist_km"] * 1000 <= site["isolate_m"] * 4
        vulnerable = site["type"] in ("school", "care_home", "clinic", "prison")
        action = "evacuate" if close and not site["type"] == "prison" else ("shelter in place" if vulnerable or close else "monitor")
        return json.dumps({"site": site["name"], "action": action})
    if "advisory" in sys_:
        z = json.loads(user)
        isolate = z["isolate_m"]
        if SWITCH == "zq_hazmat_5":
            isolate = 250
        mats = ", ".join(f"UN{m['un']} {m['name']} (guide {m['guide']})" for m in z["materials"])
        acts = "; ".join(f"{a['site']}: {a['action']}" for a in z["actions"])
        return (f"HAZMAT ADVISORY {z['location']}. Materials: {mats}. Isolate {isolate} m in all directions. "
                f"Protect downwind to {z['protect_km']} km towards {z['downwind_deg']} deg ({z['period']}). Sites: {acts}.")
    return "Noted."


def record(inp, server, path):
    llm_client = client(server)

    def chat(messages):
        r = llm_client.chat.completions.create(model=server.model, messages=messages)
        return r.choices[0].message.content

    @trajdebug.step(kind="input")
    def receive_report(report: str, location: str) -> dict:
        return {"report": report, "location": location}

    @trajdebug.step(kind="llm")
    def extract_incident(messages: list) -> str:
        return chat(messages)

    @trajdebug.step(kind="parse")
    def parse_incident(text: str) -> dict:
        data = json.loads(text)
        nums = data["un_numbers"]
        if SWITCH == "zq_hazmat_1":
            nums = nums[:1]  # one placard per vehicle is the usual CAD form
        hour = int(data["time"].split(":")[0])
        return {"un_numbers": [str(n) for n in nums], "spill": data["spill"],
                "period": "night" if hour >= 20 or hour < 7 else "day", "crew_wind_kmh": data["crew_wind_kmh"]}

    @trajdebug.step(kind="retrieval")
    def lookup_guide(un_number: str) -> dict:
        if SWITCH == "zq_hazmat_3":
            # search by the material family name, best match first
            family = next(g["name"] for g in GUIDES if g["un"] == un_number).split(",")[0]
            hits = [g for g in GUIDES if g["name"].startswith(family)]
            return sorted(hits, key=lambda g: -g["guide"])[0]
        return next(g for g in GUIDES if g["un"] == un_number)

    @trajdebug.step(kind="state")
    def store_material(entry: dict, spill: str, period: str) -> dict:
        col = entry[spill]
        if SWITCH == "zq_hazmat_4":
            col = entry["large"] if entry["large"]["isolate_m"] >= col["isolate_m"] else col
        rec = {"un": entry["un"], "name": entry["name"], "guide": entry["guide"], "isolate_m": col["isolate_m"],
               "protect_km": col[f"{period}_km"]}
        trajdebug.current_run().state[f"material:{entry['un']}"] = rec
        return rec

    @trajdebug.step(kind="tool")
    def fetch_wind(location: str) -> dict:
        return dict(STATIONS[location])

    @trajdebug.step(kind="other")
    def normalise_wind(obs: dict) -> dict:
        factor = {"m/s": 3.6, "kt": 1.852, "km/h": 1.0}[obs["units"]]
        if SWITCH == "zq_hazmat_2":
            factor = 3.6
        return {"speed_kmh": round(obs["speed"] * factor, 1), "from_deg": obs["from_deg"]}

    @trajdebug.step(kind="other")
    def compute_zones(materials: list, wind: dict, period: str) -> dict:
        recs = [trajdebug.current_run().state[f"material:{m}"] for m in materials]
        return {"isolate_m": max(r["isolate_m"] for r in recs), "protect_km": max(r["protect_km"] for r in recs),
                "downwind_deg": (wind["from_deg"] + 180) % 360, "wind_kmh": wind["speed_kmh"], "period": period}

    @trajdebug.step(kind="tool")
    def list_receptors(location: str, downwind_deg: int, protect_km: float) -> list:
        out = []
        for name, typ, dist, bearing in SITES[location]:
            off = abs((bearing - downwind_deg + 180) % 360 - 180)
            if off <= 60 or dist <= 0.3:
                out.append({"name": name, "type": typ, "dist_km": dist, "bearing": bearing})
        return out

    @trajdebug.step(kind="llm")
    def classify_receptor(messages: list) -> str:
        return chat(messages)

    @trajdebug.step(kind="parse")
    def parse_action(text: str) -> dict:
        return json.loads(text)

    @trajdebug.step(kind="llm")
    def draft_advisory(messages: list) -> str:
        return chat(messages)

    @trajdebug.step(kind="tool")
    def publish_advisory(advisory: str, zones: dict, materials: list, report: str) -> dict:
        # the CAD gateway checks the advisory against its own copy of the tables and the crew's message
        placards = set(re.findall(r"placards? (\d{4})(?: and (\d{4}))?", report)[0]) - {""}
        covered = {m["un"] for m in materials}
        for m in materials:
            if m["un"] not in placards:
                raise ValueError(f"CAD rejected advisory: guide {m['guide']} ({m['name']}, UN{m['un']}) is not for a placard on scene ({', '.join(sorted(placards))})")
        if placards - covered:
            raise ValueError(f"CAD rejected advisory: placard(s) {', '.join(sorted(placards - covered))} reported by the crew not covered")
        spill = "large" if "large" in report else "small"
        need = max(next(g for g in GUIDES if g["un"] == p)[spill]["isolate_m"] for p in placards)
        if zones["isolate_m"] != need:
            raise ValueError(f"CAD rejected advisory: isolation {zones['isolate_m']} m, table gives {need} m for a {spill} spill")
        crew = int(re.search(r"wind (\d+) km/h", report).group(1))
        if abs(zones["wind_kmh"] - crew) > 15:
            raise ValueError(f"CAD rejected advisory: wind {zones['wind_kmh']} km/h, crew observed {crew} km/h")
        said = int(re.search(r"Isolate (\d+) m", advisory).group(1))
        if said != zones["isolate_m"]:
            raise ValueError(f"CAD rejected advisory: text says isolate {said} m, zone is {zones['isolate_m']} m")
        return {"status": "published", "ref": f"HZ-{len(advisory) * 37 % 10000:04d}"}

    with trajdebug.run(NAME, task=inp["task"], path=str(path)) as run:
        rep = receive_report(inp["report"], inp["location"])
        text = extract_incident([{"role": "system", "content": "You extract hazmat incident facts as JSON."},
                                 {"role": "user", "content": rep["report"]}])
        inc = parse_incident(text)
        materials = []
        for un in inc["un_numbers"]:
            entry = lookup_guide(un)
            materials.append(store_material(entry, inc["spill"], inc["period"]))
        wind = normalise_wind(fetch_wind(rep["location"]))
        zones = compute_zones([m["un"] for m in materials], wind, inc["period"])
        sites = list_receptors(rep["location"], zones["downwind_deg"], zones["protect_km"])
        actions = []
        for site in sites:
            ans = classify_receptor([{"role": "system", "content": "You classify each site: evacuate, shelter in place or monitor."},
                                     {"role": "user", "content": json.dumps({**site, "isolate_m": zones["isolate_m"]})}])
            actions.append(parse_action(ans))
        with trajdebug.step("record_actions", kind="state", input=actions):
            run.state["actions"] = actions
        adv = draft_advisory([{"role": "system", "content": "You write the hazmat advisory for crews."},
                              {"role": "user", "content": json.dumps({**zones, "location": rep["location"],
                                                                      "materials": materials, "actions": actions})}])
        publish_advisory(adv, zones, materials, rep["report"])
