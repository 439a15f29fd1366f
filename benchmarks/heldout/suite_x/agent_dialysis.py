"""Dialysis chair scheduling (route: sdk): trajdebug's own run/step decorators and run.state."""
from __future__ import annotations

from contextlib import contextmanager

import trajdebug
from trajdebug.testing import deterministic

from benchmarks.heldout.suite_x import kit

ROUTE = "sdk"
NAME = "dialysis-scheduler"

# id: (surname, hours, dry_kg, anticoag, access, pre_kg)
PATIENTS = {
    "P-3301": ("Okafor", "4.0", "72.5", "heparin", "AVF-left", "74.6"),
    "P-3302": ("Lindqvist", "3.5", "64.0", "heparin", "AVG-right", "65.9"),
    "P-3303": ("Baptiste", "4.0", "58.2", "citrate", "CVC", "60.1"),
    "P-3304": ("Moreau", "4.5", "88.4", "heparin", "AVF-right", "91.0"),
    "P-3305": ("Nakamura", "3.5", "61.7", "heparin", "AVF-left", "63.2"),
    "P-3306": ("Haddad", "4.0", "79.9", "heparin", "AVF-left", "82.3"),
    "P-3307": ("Ferreira", "4.0", "69.3", "heparin-free", "CVC", "71.4"),
    "P-3308": ("Kowalczyk", "3.5", "71.0", "heparin", "AVG-left", "73.1"),
    "P-3309": ("Achterberg", "4.0", "83.6", "citrate", "AVF-right", "85.2"),
    "P-3310": ("Duarte", "4.5", "95.1", "heparin", "AVF-left", "97.9"),
    "P-3311": ("Ibsen", "3.5", "57.4", "heparin", "AVG-right", "59.0"),
}
ALERTS = {"P-3305": ["HIT"], "P-3310": ["latex"]}
UNITS = {"north": {"chairs": 6, "shifts": ["06:30", "11:30", "16:30"]},
         "south": {"chairs": 8, "shifts": ["07:00", "12:00", "17:00"]}}
OLD_UNITS = {"north": {"chairs": 6, "shifts": ["06:00", "11:00", "16:00"]},
             "south": {"chairs": 8, "shifts": ["06:45", "11:45", "16:45"]}}
MAX_UF_L = 4.0


def _req(unit, day, ids):
    return {"unit": unit, "day": day, "patients": ids}


REFS = [
    _req("north", "2026-12-01", ["P-3301", "P-3302", "P-3304", "P-3306"]),
    _req("south", "2026-12-01", ["P-3309", "P-3310", "P-3311", "P-3303"]),
    _req("north", "2026-12-03", ["P-3302", "P-3305", "P-3308", "P-3304", "P-3311"]),
    _req("south", "2026-12-03", ["P-3306", "P-3307", "P-3301"]),
]
CASES = [
    dict(case="dialysis_lossy_parsing", fault_kind="lossy_parsing", fault_id="dialysis.parse",
         input=_req("north", "2026-12-07", ["P-3301", "P-3307", "P-3302", "P-3309"]),
         root="parse_record", marker='"P-3307", "anticoag": "heparin"'),
    dict(case="dialysis_bad_memory_write", fault_kind="bad_memory_write", fault_id="dialysis.memory",
         input=_req("south", "2026-12-07", ["P-3304", "P-3303", "P-3308", "P-3306", "P-3311"]),
         root="remember_patient", marker='"P-3303", "dry_kg": 88.4'),
    dict(case="dialysis_off_by_one", fault_kind="off_by_one", fault_id="dialysis.capacity",
         input=_req("north", "2026-12-08", ["P-3301", "P-3302", "P-3303", "P-3304", "P-3306", "P-3308", "P-3309"]),
         root="assign_chairs", marker='"chair": 7'),
    dict(case="dialysis_swallowed_error", fault_kind="swallowed_error", fault_id="dialysis.alerts",
         input=_req("south", "2026-12-08", ["P-3302", "P-3305", "P-3310"]),
         root="screen_alerts", marker='"P-3305", "alerts": []'),
    dict(case="dialysis_stale_data", fault_kind="stale_data", fault_id="dialysis.config_cache",
         input=_req("north", "2026-12-09", ["P-3306", "P-3304", "P-3311", "P-3301", "P-3309", "P-3302", "P-3310"]),
         root="load_unit_config", marker="06:00"),
]


@contextmanager
def session():
    yield None


_calls: dict[str, int] = {}


@trajdebug.step(kind="input")
def read_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def load_unit_config(unit: str, day: str) -> dict:
    if kit.active("dialysis.config_cache"):
        cfg, as_of = OLD_UNITS[unit], "2026-11-30"
    else:
        cfg, as_of = UNITS[unit], day
    return {"unit": unit, "as_of": as_of, "chairs": cfg["chairs"], "shifts": list(cfg["shifts"])}


@trajdebug.step(kind="state")
def cache_unit(cfg: dict) -> dict:
    trajdebug.current_run().state["unit"] = cfg
    return {"cached": cfg["unit"], "shifts": len(cfg["shifts"])}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_record(patient: str) -> str:
    _calls[patient] = _calls.get(patient, 0) + 1
    if patient == "P-3304" and _calls[patient] == 1:
        raise ConnectionError("EHR gateway reset the connection")
    s, hours, dry, ac, access, _ = PATIENTS[patient]
    return f"{patient}|{s}|hours={hours}|dry_kg={dry}|anticoag={ac}|access={access}"


@trajdebug.step(kind="parse")
def parse_record(line: str) -> dict:
    pid, surname, *fields = line.split("|")
    kv = dict(f.split("=", 1) for f in fields)
    anticoag = kv["anticoag"]
    if kit.active("dialysis.parse"):
        anticoag = anticoag.split("-")[0]
    return {"patient": pid, "anticoag": anticoag, "surname": surname, "hours": float(kv["hours"]),
            "dry_kg": float(kv["dry_kg"]), "access": kv["access"]}


@trajdebug.step(kind="state")
def remember_patient(rec: dict, previous: dict | None) -> dict:
    dry = rec["dry_kg"]
    if kit.active("dialysis.memory") and previous is not None:
        dry = previous["dry_kg"]
    entry = {"patient": rec["patient"], "dry_kg": dry, "hours": rec["hours"], "anticoag": rec["anticoag"]}
    trajdebug.current_run().state[f"patient:{rec['patient']}"] = entry
    return entry


@trajdebug.step(kind="tool")
def fetch_alerts(patient: str) -> dict:
    if kit.active("dialysis.alerts") and patient == "P-3305":
        return {"patient": patient, "status": 504, "error": "alerts service timed out"}
    return {"patient": patient, "status": 200, "alerts": list(ALERTS.get(patient, []))}


@trajdebug.step(kind="parse")
def screen_alerts(payload: dict) -> dict:
    alerts = payload.get("alerts", [])
    return {"patient": payload["patient"], "alerts": alerts, "heparin_ok": "HIT" not in alerts}


@trajdebug.step(kind="other")
def assign_chairs(ids: list[str]) -> list[dict]:
    unit = trajdebug.current_run().state["unit"]
    plan, shift, used = [], 0, 0
    cap = unit["chairs"] + 1 if kit.active("dialysis.capacity") else unit["chairs"]
    for pid in ids:
        if used >= cap:
            shift, used = shift + 1, 0
        used += 1
        plan.append({"patient": pid, "shift": unit["shifts"][shift], "chair": used})
    return plan


@trajdebug.step(kind="tool")
def book_chair(unit: str, day: str, slot: dict) -> dict:
    real = UNITS[unit]
    if slot["shift"] not in real["shifts"]:
        raise ValueError(f"booking API 422: shift {slot['shift']} is not offered by unit {unit} on {day} "
                         f"(offered: {', '.join(real['shifts'])})")
    if not 1 <= slot["chair"] <= real["chairs"]:
        raise ValueError(f"booking API 409: chair {slot['chair']} is not in service in unit {unit} "
                         f"(chairs 1-{real['chairs']})")
    return {"booking": f"{unit}-{day}-{slot['shift']}-C{slot['chair']}", "patient": slot["patient"]}


@trajdebug.step(kind="tool")
def weigh_in(patient: str) -> dict:
    return {"patient": patient, "pre_kg": float(PATIENTS[patient][5])}


@trajdebug.step(kind="other")
def compute_uf_goal(patient: str, pre: dict) -> dict:
    entry = trajdebug.current_run().state[f"patient:{patient}"]
    return {"patient": patient, "uf_litres": round(pre["pre_kg"] - entry["dry_kg"], 1), "minutes": int(entry["hours"] * 60)}


@trajdebug.step(kind="tool")
def order_anticoag(patient: str, screen: dict) -> dict:
    entry = trajdebug.current_run().state[f"patient:{patient}"]
    drug = "heparin" if screen["heparin_ok"] and entry["anticoag"] == "heparin" else "citrate"
    on_file = PATIENTS[patient][3]
    if drug == "heparin" and "HIT" in ALERTS.get(patient, []):
        raise PermissionError(f"pharmacy rejected order for {patient}: heparin blocked by allergy list entry HIT")
    if drug == "heparin" and on_file != "heparin":
        raise PermissionError(f"pharmacy rejected order for {patient}: heparin conflicts with the active "
                              f"prescription ({on_file})")
    return {"patient": patient, "drug": drug, "order": f"RX-{patient[2:]}-{drug[:3].upper()}"}


@trajdebug.step(kind="tool")
def program_machine(patient: str, goal: dict) -> dict:
    if not 0 < goal["uf_litres"] <= MAX_UF_L:
        raise RuntimeError(f"dialysis machine refused program for {patient}: ultrafiltration goal "
                           f"{goal['uf_litres']} L outside 0-{MAX_UF_L} L per session")
    return {"patient": patient, "programmed": True, **goal}


@trajdebug.step(kind="condition")
def verify_staffing(bookings: list[dict], unit: dict) -> dict:
    per_shift: dict[str, int] = {}
    for b in bookings:
        key = b["booking"].rsplit("-C", 1)[0]
        per_shift[key] = per_shift.get(key, 0) + 1
    nurses = {k: -(-n // 4) for k, n in per_shift.items()}
    return {"ok": True, "nurses": nurses}


@trajdebug.step(kind="output")
def publish_schedule(day: str, bookings: list[dict], staffing: dict) -> str:
    return f"{day}: {len(bookings)} sessions booked; nurses per shift {staffing['nurses']}"


def record(_sess, path, request) -> None:
    _calls.clear()
    try:
        with deterministic(), trajdebug.run(NAME, path=str(path), task=f"schedule {request['unit']} unit for {request['day']}"):
            req = read_request(request)
            cfg = load_unit_config(req["unit"], req["day"])
            cache_unit(cfg)
            previous = None
            screens = {}
            for pid in req["patients"]:
                with trajdebug.step("patient_intake", kind="agent", input={"patient": pid}):
                    rec = parse_record(fetch_record(pid))
                    remember_patient(rec, previous)
                    previous = rec
                    screens[pid] = screen_alerts(fetch_alerts(pid))
            plan = assign_chairs(req["patients"])
            bookings = []
            for slot in plan:
                pid = slot["patient"]
                with trajdebug.step("chair_session", kind="agent", input={"patient": pid}):
                    bookings.append(book_chair(req["unit"], req["day"], slot))
                    goal = compute_uf_goal(pid, weigh_in(pid))
                    order_anticoag(pid, screens[pid])
                    program_machine(pid, goal)
            staffing = verify_staffing(bookings, cfg)
            publish_schedule(req["day"], bookings, staffing)
    except (ValueError, PermissionError, RuntimeError):
        pass
