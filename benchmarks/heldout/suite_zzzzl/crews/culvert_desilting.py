"""culvert-desilting: a highway drainage crew's weekly culvert desilting planner (trajdebug SDK).

The crew gets a road corridor and a week. The agent reads the culvert register and the rain
outlook, asks the model which culverts to visit on which day, reads each culvert's CCTV log,
has the model assess it, keeps the crew's actions in `run.state`, books lane closures for the
culverts under the carriageway and checks the worksheet against the structures hold list.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from typing import Any

import trajdebug

from ._common import Env, chat_step, first_json, last_user, system_of

NAME = "culvert-desilting"
ROUTE = "sdk"
DOMAIN = "highway drainage crew: culvert CCTV review, desilting and lane closures"
SHAPE = ("input, register retrieval, rain tool, planning LLM + parser, loop per culvert "
         "(CCTV tool, findings parser, assessment LLM + parser), run.state write, closure bookings, "
         "hold-list tool, final check")

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


def _c(cid, ch, dia, length, carriageway, cctv, silt, grade):
    return {"id": cid, "chainage_m": ch, "diameter_mm": dia, "length_m": length,
            "under_carriageway": carriageway, "last_cctv": cctv, "register_silt_pct": silt,
            "structural_grade": grade}


CORRIDORS: dict[str, dict[str, Any]] = {
    "R-214": {"road": "Hollins Moor Road", "extent_m": [0, 6400], "culverts": [
        _c("C214-01", 420, 450, 12, False, "2023-11-02", 30, 1),
        _c("C214-02", 1180, 600, 16, True, "2024-02-19", 35, 2),
        _c("C214-03", 2210, 900, 22, True, "2024-09-30", 10, 1),
        _c("C214-04", 3650, 600, 14, True, "2023-08-14", 20, 2),
        _c("C214-05", 5020, 450, 10, False, "2025-01-20", 40, 1)]},
    "R-309": {"road": "Cragg Lane", "extent_m": [0, 3400], "culverts": [
        _c("C309-01", 260, 600, 18, True, "2023-10-05", 25, 1),
        _c("C309-02", 940, 450, 9, False, "2024-11-12", 15, 1),
        _c("C309-03", 1720, 750, 20, True, "2024-01-15", 45, 2),
        _c("C309-04", 2890, 600, 12, False, "2023-05-22", 30, 2)]},
    "R-112": {"road": "Ashby Fell Road", "extent_m": [0, 8200], "culverts": [
        _c("C112-01", 640, 600, 15, True, "2023-12-01", 35, 1),
        _c("C112-02", 2075, 450, 10, False, "2024-08-08", 28, 1),
        _c("C112-03", 3980, 900, 24, True, "2024-02-02", 30, 2),
        _c("C112-04", 6120, 600, 13, True, "2025-03-03", 12, 1),
        _c("C112-05", 7460, 450, 8, False, "2023-09-14", 20, 1)]},
    "R-415": {"road": "Tarn Beck Road", "extent_m": [0, 5100], "culverts": [
        _c("C415-01", 330, 450, 9, False, "2023-07-07", 25, 1),
        _c("C415-02", 2160, 600, 17, True, "2024-03-18", 40, 2),
        _c("C415-03", 3305, 750, 19, True, "2023-10-30", 20, 1),
        _c("C415-04", 4710, 600, 11, False, "2025-02-11", 10, 3)]},
    "R-527": {"road": "Low Scar Road", "extent_m": [0, 4300], "culverts": [
        _c("C527-01", 510, 600, 14, True, "2024-01-09", 30, 1),
        _c("C527-02", 1490, 450, 8, False, "2023-06-30", 15, 1),
        _c("C527-03", 2630, 600, 16, True, "2024-05-21", 35, 2),
        _c("C527-04", 3770, 450, 10, False, "2025-04-02", 8, 1)]},
}

# Rain outlook per corridor, Monday to Friday (mm), as issued the morning the plan is made.
OUTLOOK = {
    "R-214": ("2025-10-05T05:00", [6, 3, 12, 2, 1]),
    "R-309": ("2025-10-12T05:00", [4, 9, 2, 15, 7]),
    "R-112": ("2025-10-19T05:00", [11, 3, 5, 8, 14]),
    "R-415": ("2025-10-26T05:00", [2, 5, 7, 9, 12]),
    "R-527": ("2025-11-02T05:00", [4, 8, 34, 10, 6]),
}
# The issue the outlook cache held from the week before (kept for the office's weekly report).
OUTLOOK_CACHED = {"R-527": ("2025-10-29T05:00", [9, 14, 2, 18, 11])}

STRUCTURES_HOLDS = {"R-309": [{"culvert": "C309-03", "raised": "2025-10-02",
                               "reason": "crown deformation 14% at 12.6 m, longitudinal crack"}],
                    "R-415": [{"culvert": "C415-04", "raised": "2025-09-11", "reason": "headwall movement"}]}

CCTV = {
    "C214-01": ["Survey 2025-09-03, 450 mm clay, upstream to downstream", "0.0 m: inlet, trash screen 30% blinded",
                "4.1 m: silt 30% of bore", "9.0 m: silt 20% of bore", "12.0 m: outlet clear"],
    "C214-02": ["Survey 2025-09-03, 600 mm concrete", "0.0 m: inlet clear", "5.5 m: silt 35% of bore",
                "8.2 m: root mass at joint, 10% of bore", "16.0 m: outlet, silt 25% of bore"],
    "C214-04": ["Survey 2025-09-04, 600 mm concrete", "0.0 m: inlet clear", "6.0 m: silt 25% of bore",
                "14.0 m: outlet clear"],
    "C214-05": ["Survey 2025-09-04, 450 mm clay", "0.0 m: inlet, debris", "3.0 m: silt 40% of bore",
                "7.5 m: silt 35% of bore", "10.0 m: outlet, silt 30% of bore"],
    "C309-01": ["Survey 2025-09-29, 600 mm concrete", "0.0 m: inlet clear",
                "11.5 m: root mass at joint, 15% of bore, silt 25% of bore", "18.0 m: outlet clear"],
    "C309-03": ["Survey 2025-09-30, 750 mm concrete", "0.0 m: inlet, trash screen 20% blinded",
                "4.2 m: silt 40% of bore", "8.8 m: silt 45% of bore",
                "12.6 m: crown deformation 14%, longitudinal crack", "15.1 m: silt 50% of bore",
                "20.0 m: outlet, silt 30% of bore"],
    "C309-04": ["Survey 2025-09-30, 600 mm clay", "0.0 m: inlet clear", "6.4 m: silt 30% of bore",
                "12.0 m: outlet clear"],
    "C112-01": ["Survey 2025-10-08, 600 mm concrete", "0.0 m: inlet clear", "5.0 m: silt 35% of bore",
                "10.5 m: silt 30% of bore", "15.0 m: outlet clear"],
    "C112-02": ["Survey 2025-10-08, 450 mm clay", "0.0 m: inlet clear", "4.4 m: root mass at joint, 20% of bore",
                "10.0 m: outlet clear"],
    "C112-03": ["Survey 2025-10-09, 900 mm concrete", "0.0 m: inlet, debris", "9.0 m: silt 30% of bore",
                "17.5 m: silt 35% of bore", "24.0 m: outlet clear"],
    "C112-05": ["Survey 2025-10-09, 450 mm clay", "0.0 m: inlet clear", "4.0 m: silt 20% of bore",
                "8.0 m: outlet clear"],
    "C415-01": ["Survey 2025-10-15, 450 mm clay", "0.0 m: inlet clear", "4.5 m: silt 25% of bore",
                "9.0 m: outlet clear"],
    "C415-02": ["Survey 2025-10-15, 600 mm concrete", "0.0 m: inlet clear", "6.0 m: silt 40% of bore",
                "11.0 m: root mass at joint, 10% of bore", "17.0 m: outlet, silt 30% of bore"],
    "C415-03": ["Survey 2025-10-16, 750 mm concrete", "0.0 m: inlet clear", "8.5 m: silt 35% of bore",
                "19.0 m: outlet clear"],
    "C527-01": ["Survey 2025-10-22, 600 mm concrete", "0.0 m: inlet clear", "5.0 m: silt 30% of bore",
                "14.0 m: outlet clear"],
    "C527-02": ["Survey 2025-10-22, 450 mm clay", "0.0 m: inlet clear", "3.5 m: silt 15% of bore",
                "8.0 m: outlet clear"],
    "C527-03": ["Survey 2025-10-23, 600 mm concrete", "0.0 m: inlet clear", "7.0 m: silt 35% of bore",
                "9.5 m: root mass at joint, 10% of bore", "16.0 m: outlet clear"],
}

INPUTS = [
    {"corridor": "R-214", "week_start": "2025-10-06", "crew": "DR2", "jetter": "JV-6000"},
    {"corridor": "R-309", "week_start": "2025-10-13", "crew": "DR2", "jetter": "JV-6000"},
    {"corridor": "R-112", "week_start": "2025-10-20", "crew": "DR4", "jetter": "JV-9000"},
    {"corridor": "R-415", "week_start": "2025-10-27", "crew": "DR2", "jetter": "JV-6000"},
    {"corridor": "R-527", "week_start": "2025-11-03", "crew": "DR4", "jetter": "JV-9000"},
]

CASES = [
    {"id": "culvert_day_numbering", "input": 0, "switch": "day_numbering", "fault_kind": "off_by_one",
     "root": ("parse_selection", 1), "failure": ("book_lane_closure", 2),
     "description": "parse_selection turns the model's 1-based day numbers into dates counting from day 0, so "
                    "every visit moves a day later and the Friday visit on C214-02 lands on Saturday 2025-10-11, "
                    "which the closure system refuses."},
    {"id": "culvert_cctv_first_page", "input": 1, "switch": "cctv_first_page", "fault_kind": "truncated_result",
     "root": ("read_cctv_log", 1), "failure": ("check_worksheet", 1),
     "description": "read_cctv_log returns only the first page of the C309-03 survey, so the crown deformation at "
                    "12.6 m never reaches the assessment, which plans jetting on a culvert under a structures hold."},
    {"id": "culvert_shared_entry", "input": 2, "switch": "shared_entry", "fault_kind": "bad_memory_write",
     "root": ("record_actions", 1), "failure": ("check_worksheet", 1),
     "description": "record_actions stores one reused dict for every culvert in run.state, so all entries carry "
                    "the last visit's date and access chainage and C112-01 at 640 m gets no lane closure."},
    {"id": "culvert_access_chainage", "input": 3, "switch": "access_chainage", "fault_kind": "hallucinated_value",
     "root": ("assess_culvert", 2), "failure": ("book_lane_closure", 2),
     "description": "the assessment of C415-03 gives an access chainage of 5305 m that no input holds (the "
                    "culvert is at 3305 m), beyond the end of R-415 at 5100 m, and the closure booking is refused."},
    {"id": "culvert_outlook_cache", "input": 4, "switch": "outlook_cache", "fault_kind": "stale_data",
     "root": ("fetch_rain_outlook", 1), "failure": ("book_lane_closure", 2),
     "description": "fetch_rain_outlook serves the R-527 outlook issued 2025-10-29 from its cache, which shows "
                    "Wednesday dry, so C527-01 is planned for 2025-11-05 when an amber rain warning stops closures."},
]


# -- the model ------------------------------------------------------------------------------------

def _plan_answer(req: dict) -> str:
    due = [c for c in req["culverts"] if c["register_silt_pct"] >= 25 or c["last_cctv"] < "2024-06-01"]
    due.sort(key=lambda c: c["chainage_m"])
    days = sorted(req["rain_outlook"]["days"], key=lambda d: (d["rain_mm"], d["date"]))
    day_no = {d["date"]: i + 1 for i, d in enumerate(req["rain_outlook"]["days"])}
    free = [d["date"] for d in days]
    visits = []
    for c in [c for c in due if c["under_carriageway"]]:
        date = free.pop(0)
        visits.append({"culvert": c["id"], "day": day_no[date]})
    free.sort()
    for c in [c for c in due if not c["under_carriageway"]]:
        date = free.pop(0)
        visits.append({"culvert": c["id"], "day": day_no[date]})
    visits.sort(key=lambda v: v["day"])
    return ("Visits for the week, carriageway culverts on the driest days (day 1 = Monday):\n"
            + json.dumps({"visits": visits}))


def _assess_answer(req: dict) -> str:
    c, f = req["culvert"], req["findings"]
    roots = f["roots"]
    if f["deformation_pct"] >= 10:
        action, hours, note = "refer_structures", 1.0, "deformation seen: photograph and refer, no jetting"
    elif f["max_silt_pct"] >= 30:
        action = "jet"
        hours = round(1.5 + c["length_m"] * 0.1 + (0.75 if roots else 0.0), 2)
        note = "jet to clear silt" + (", cut roots at joint" if roots else "")
    elif roots:
        action, hours, note = "root_cut", 2.0, "cut roots, re-survey next year"
    else:
        action, hours, note = "monitor", 0.5, "light silt, inspect inlet only"
    access = c["chainage_m"]
    if _on("access_chainage") and c["id"] == "C415-03":
        access = 5305
    return json.dumps({"culvert": c["id"], "action": action, "est_hours": hours,
                       "access_chainage_m": access, "notes": note})


def brain(request: Any) -> str:
    system = system_of(request)
    req = json.loads(last_user(request))
    if system.startswith("You plan"):
        return _plan_answer(req)
    if system.startswith("You assess"):
        return _assess_answer(req)
    raise ValueError("unexpected prompt")


# -- the tools and code steps -------------------------------------------------------------------

@trajdebug.step(kind="input")
def receive_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="retrieval")
def load_corridor_assets(corridor: str) -> dict:
    c = CORRIDORS[corridor]
    return {"corridor": corridor, "road": c["road"], "extent_m": list(c["extent_m"]),
            "culverts": [dict(x) for x in c["culverts"]]}


def _outlook_days(week_start: str, values: list[int]) -> list[dict]:
    start = dt.date.fromisoformat(week_start)
    return [{"date": (start + dt.timedelta(days=i)).isoformat(), "rain_mm": v} for i, v in enumerate(values)]


@trajdebug.step(kind="tool")
def fetch_rain_outlook(corridor: str, week_start: str) -> dict:
    issued, values = OUTLOOK[corridor]
    if _on("outlook_cache"):
        issued, values = OUTLOOK_CACHED[corridor]
    return {"corridor": corridor, "issued": issued, "days": _outlook_days(week_start, values)}


@trajdebug.step(kind="parse")
def parse_selection(answer: dict, week_start: str) -> list[dict]:
    data = first_json(answer["content"])
    start = dt.date.fromisoformat(week_start)
    visits = []
    for v in data["visits"]:
        offset = v["day"] if _on("day_numbering") else v["day"] - 1
        visits.append({"culvert": v["culvert"], "date": (start + dt.timedelta(days=offset)).isoformat()})
    return visits


@trajdebug.step(kind="tool")
def read_cctv_log(culvert_id: str) -> str:
    lines = CCTV[culvert_id]
    pages = [lines[i:i + 4] for i in range(0, len(lines), 4)]
    if _on("cctv_first_page"):
        pages = pages[:1]
    return "\n".join(line for page in pages for line in page)


@trajdebug.step(kind="parse")
def extract_findings(log: str) -> dict:
    silt = [int(x) for x in re.findall(r"silt (\d+)% of bore", log)]
    deform = [int(x) for x in re.findall(r"deformation (\d+)%", log)]
    return {"max_silt_pct": max(silt, default=0), "roots": "root mass" in log,
            "deformation_pct": max(deform, default=0), "lines": len(log.splitlines())}


@trajdebug.step(kind="parse")
def parse_assessment(answer: dict) -> dict:
    data = first_json(answer["content"])
    for key in ("culvert", "action", "est_hours", "access_chainage_m"):
        if key not in data:
            raise ValueError(f"assessment without {key}")
    return data


@trajdebug.step(kind="state")
def record_actions(visits: list[dict], assessments: list[dict], register: dict) -> dict:
    by_id = {c["id"]: c for c in register["culverts"]}
    actions: dict[str, dict] = {}
    entry: dict[str, Any] = {}
    for visit, a in zip(visits, assessments):
        if not _on("shared_entry"):
            entry = {}
        entry.update({"date": visit["date"], "action": a["action"], "hours": a["est_hours"],
                      "access_chainage_m": a["access_chainage_m"],
                      "under_carriageway": by_id[visit["culvert"]]["under_carriageway"]})
        actions[visit["culvert"]] = entry
    trajdebug.current_run().state["actions"] = actions
    return actions


@trajdebug.step(kind="other")
def plan_water_use(actions: dict, register: dict, jetter: str) -> dict:
    by_id = {c["id"]: c for c in register["culverts"]}
    capacity = {"JV-6000": 6000, "JV-9000": 9000}[jetter]
    litres = 0.0
    for cid, a in actions.items():
        if a["action"] == "jet":
            c = by_id[cid]
            litres += 180 * c["length_m"] * c["diameter_mm"] / 600
    return {"jetter": jetter, "litres": round(litres), "capacity_l": capacity,
            "refills": int(litres // capacity)}


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@trajdebug.step(kind="tool")
def book_lane_closure(corridor: str, chainage_m: int, date: str, crew: str) -> dict:
    c = CORRIDORS[corridor]
    lo, hi = c["extent_m"]
    if not lo <= chainage_m <= hi:
        raise ValueError(f"closure refused: chainage {chainage_m} m is outside {corridor} ({lo}-{hi} m)")
    day = dt.date.fromisoformat(date)
    if day.weekday() >= 5:
        raise ValueError(f"closure refused: no weekend lane closures on {corridor} ({date} is a {WEEKDAYS[day.weekday()]})")
    issued, values = OUTLOOK[corridor]
    week = {d["date"]: d["rain_mm"] for d in _outlook_days(INPUT_WEEK[corridor], values)}
    if week.get(date, 0) >= 30:
        raise ValueError(f"closure refused: amber rain warning on {corridor} for {date} "
                         f"({week[date]} mm forecast): closures suspended")
    ref = "TM-" + hashlib.sha1(f"{corridor}{chainage_m}{date}".encode()).hexdigest()[:6].upper()
    return {"closure": ref, "corridor": corridor, "chainage_m": chainage_m, "from_m": chainage_m - 50,
            "to_m": chainage_m + 50, "date": date, "crew": crew}


INPUT_WEEK = {i["corridor"]: i["week_start"] for i in INPUTS}


@trajdebug.step(kind="tool")
def get_structures_holds(corridor: str) -> list[dict]:
    return [dict(h) for h in STRUCTURES_HOLDS.get(corridor, [])]


@trajdebug.step(kind="other")
def compile_worksheet(crew: str, water: dict, closures: list[dict]) -> dict:
    actions = trajdebug.current_run().state["actions"]
    days: dict[str, float] = {}
    for a in actions.values():
        days[a["date"]] = days.get(a["date"], 0.0) + a["hours"]
    return {"crew": crew, "visits": actions, "hours_by_day": days, "water": water, "closures": closures}


@trajdebug.step(kind="condition", attributes={"final": True})
def check_worksheet(worksheet: dict, register: dict, holds: list[dict]) -> str:
    by_id = {c["id"]: c for c in register["culverts"]}
    held = {h["culvert"]: h for h in holds}
    for cid, a in worksheet["visits"].items():
        if cid in held and a["action"] != "refer_structures":
            raise ValueError(f"{cid} is on the structures hold list ({held[cid]['reason']}): "
                             f"'{a['action']}' is not permitted, refer to structures")
    for cid, a in worksheet["visits"].items():
        c = by_id[cid]
        if c["under_carriageway"]:
            covered = [x for x in worksheet["closures"]
                       if x["from_m"] <= c["chainage_m"] <= x["to_m"] and x["date"] == a["date"]]
            if not covered:
                at = ", ".join(f"{x['chainage_m']} m on {x['date']}" for x in worksheet["closures"])
                raise ValueError(f"{cid} under the carriageway at {c['chainage_m']} m has no lane closure "
                                 f"covering it on {a['date']} ({'closures booked at ' + at if at else 'no closures booked'})")
    for day, hours in worksheet["hours_by_day"].items():
        if hours > 9.5:
            raise ValueError(f"{day}: {hours} crew hours planned, above the 9.5 h day")
    return f"worksheet for {worksheet['crew']}: {len(worksheet['visits'])} visits, checks passed"


# -- the agent ----------------------------------------------------------------------------------

PLAN_SYSTEM = ("You plan a drainage crew's week. Visit culverts whose register silt is 25% or more or whose "
               "last CCTV survey is before 2024-06. One culvert a day. Put culverts under the carriageway on "
               "the driest days. Answer with JSON {\"visits\": [{\"culvert\", \"day\"}]}, day 1 = Monday.")
ASSESS_SYSTEM = ("You assess one culvert from its register entry and its CCTV findings. Answer JSON with "
                 "culvert, action (jet, root_cut, monitor or refer_structures), est_hours, "
                 "access_chainage_m (where the crew sets up) and notes.")


def run(inp: dict, path: str, env: Env) -> None:
    task = f"desilting plan {inp['corridor']} week of {inp['week_start']}"
    with trajdebug.run(NAME, task=task, path=path) as r:
        request = receive_request(inp)
        register = load_corridor_assets(request["corridor"])
        outlook = fetch_rain_outlook(request["corridor"], request["week_start"])
        plan_msgs = [{"role": "system", "content": PLAN_SYSTEM},
                     {"role": "user", "content": json.dumps({"corridor": register["corridor"],
                                                             "week_start": request["week_start"],
                                                             "culverts": register["culverts"],
                                                             "rain_outlook": outlook})}]
        plan = chat_step(env, "select_culverts", plan_msgs)
        visits = parse_selection(plan, request["week_start"])
        by_id = {c["id"]: c for c in register["culverts"]}
        assessments = []
        for visit in visits:
            log = read_cctv_log(visit["culvert"])
            findings = extract_findings(log)
            msgs = [{"role": "system", "content": ASSESS_SYSTEM},
                    {"role": "user", "content": json.dumps({"culvert": by_id[visit["culvert"]],
                                                            "visit_date": visit["date"],
                                                            "findings": findings})}]
            answer = chat_step(env, "assess_culvert", msgs)
            assessments.append(parse_assessment(answer))
        actions = record_actions(visits, assessments, register)
        water = plan_water_use(actions, register, request["jetter"])
        closures = []
        for cid, a in r.state["actions"].items():
            if a["under_carriageway"]:
                closures.append(book_lane_closure(request["corridor"], a["access_chainage_m"], a["date"],
                                                  request["crew"]))
        holds = get_structures_holds(request["corridor"])
        sheet = compile_worksheet(request["crew"], water, closures)
        check_worksheet(sheet, register, holds)
