"""Endoscope decontamination unit (route: sdk).

A procedure list needs its flexible endoscopes by a set time. The desk agent reads every scope's
tracking history (in parallel), asks the model for a batch plan, parses it, then for each scope to
reprocess runs a leak test, lets the model start an automated endoscope reprocessor (AER) cycle by a
tool call (the AER controller is retried when it drops a start), writes the cycle into `run.state` and
racks the scope in a drying cabinet. Every scope then passes a release check, the traceability
system issues the set to the list, and the model writes the handover note.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import trajdebug

from .common import chat_step, dumps, last_user_json, system_text, tool_calls, tool_spec
from trajdebug.testing import Reply, tool_call

NAME = "endoscope-decon-desk"
ROUTE = "sdk"
DOMAIN = "endoscope decontamination unit: reprocess returned flexible endoscopes and release them to a list"
SHAPE = (
    "input, 3-4 parallel history retrievals, planning model call, plan parser, per-scope loop "
    "(leak test tool, model picks the AER program by tool call, AER start with retry, run.state write, "
    "drying-cabinet tool), release checks, traceability issue tool, summary model call, output; 23-26 steps per passing run"
)

SWITCH: str | None = None


def _case(key: str) -> bool:
    """The one place the case switch is read."""
    return SWITCH == key


# --- the unit's systems -----------------------------------------------------------------------

MODELS = {
    "GIF-H190": "gastroscope",
    "GIF-XP190N": "gastroscope",
    "CF-HQ190L": "colonoscope",
    "CF-H185L": "colonoscope",
    "TJF-Q190V": "duodenoscope",
    "BF-1TH190": "bronchoscope",
    "BF-UC190F": "bronchoscope",
    "BF-P190": "bronchoscope",
}
PROGRAM_FOR = {"duodenoscope": "DUO-PAA-EXT"}  # every other type: STD-PAA-25
MAX_STORAGE_H = 72
MIN_HOLD_S = 60


def _model(serial: str) -> str:
    return serial.rsplit("-", 1)[0]


def _hist(serial, use_list, use_end, cycle_id, cycle_end, program, stored_at=None, slot=None):
    return {
        "serial": serial,
        "model": _model(serial),
        "type": MODELS[_model(serial)],
        "last_use": {"list": use_list, "ended_at": use_end},
        "last_cycle": {"cycle_id": cycle_id, "ended_at": cycle_end, "program": program},
        "location": slot or "decon return trolley",
        "stored_at": stored_at,
    }


# Live tracking records, keyed by (date, serial).
TRACKING = {
    ("2025-05-13", "GIF-H190-2203"): _hist(
        "GIF-H190-2203", "GI-0513-AM", "2025-05-13T11:48", "C-44087", "2025-05-12T17:10", "STD-PAA-25"
    ),
    ("2025-05-13", "CF-HQ190L-5521"): _hist(
        "CF-HQ190L-5521",
        "GI-0512-AM",
        "2025-05-12T11:05",
        "C-44071",
        "2025-05-12T13:02",
        "STD-PAA-25",
        "2025-05-12T13:30",
        "DC-1/05",
    ),
    ("2025-05-13", "GIF-XP190N-4102"): _hist(
        "GIF-XP190N-4102", "GI-0513-EARLY", "2025-05-13T10:40", "C-44090", "2025-05-12T17:55", "STD-PAA-25"
    ),
    ("2025-05-14", "CF-H185L-5602"): _hist(
        "CF-H185L-5602", "GI-0513-PM", "2025-05-13T17:45", "C-44101", "2025-05-13T08:20", "STD-PAA-25"
    ),
    ("2025-05-14", "GIF-H190-2291"): _hist(
        "GIF-H190-2291", "GI-0513-PM", "2025-05-13T16:30", "C-44096", "2025-05-13T07:55", "STD-PAA-25"
    ),
    ("2025-05-14", "CF-HQ190L-5530"): _hist(
        "CF-HQ190L-5530",
        "GI-0513-AM",
        "2025-05-13T12:10",
        "C-44099",
        "2025-05-13T14:40",
        "STD-PAA-25",
        "2025-05-13T15:10",
        "DC-2/02",
    ),
    ("2025-05-14", "GIF-H190-2203"): _hist(
        "GIF-H190-2203",
        "GI-0513-AM",
        "2025-05-13T11:48",
        "C-44098",
        "2025-05-13T13:55",
        "STD-PAA-25",
        "2025-05-13T14:20",
        "DC-1/03",
    ),
    ("2025-05-14", "BF-1TH190-3318"): _hist(
        "BF-1TH190-3318", "BR-0514-AM", "2025-05-14T11:20", "C-44160", "2025-05-13T15:30", "STD-PAA-25"
    ),
    ("2025-05-14", "BF-UC190F-3350"): _hist(
        "BF-UC190F-3350", "BR-0514-AM", "2025-05-14T11:55", "C-44162", "2025-05-13T16:05", "STD-PAA-25"
    ),
    ("2025-05-14", "BF-P190-3402"): _hist(
        "BF-P190-3402",
        "BR-0513-PM",
        "2025-05-13T14:10",
        "C-44163",
        "2025-05-13T15:35",
        "STD-PAA-25",
        "2025-05-13T16:00",
        "DC-3/01",
    ),
    ("2025-05-15", "CF-HQ190L-5530"): _hist(
        "CF-HQ190L-5530", "GI-0514-PM", "2025-05-14T17:20", "C-44171", "2025-05-14T08:15", "STD-PAA-25"
    ),
    ("2025-05-15", "CF-H185L-5602"): _hist(
        "CF-H185L-5602", "GI-0514-PM", "2025-05-14T16:50", "C-44170", "2025-05-14T08:05", "STD-PAA-25"
    ),
    ("2025-05-15", "GIF-H190-2291"): _hist(
        "GIF-H190-2291",
        "GI-0514-AM",
        "2025-05-14T11:10",
        "C-44168",
        "2025-05-14T15:05",
        "STD-PAA-25",
        "2025-05-14T15:30",
        "DC-1/02",
    ),
    ("2025-05-15", "TJF-Q190V-7731"): _hist(
        "TJF-Q190V-7731", "ERCP-0515-AM", "2025-05-15T11:40", "C-44175", "2025-05-14T17:30", "DUO-PAA-EXT"
    ),
    ("2025-05-15", "GIF-H190-2203"): _hist(
        "GIF-H190-2203", "GI-0515-AM", "2025-05-15T10:15", "C-44176", "2025-05-14T17:45", "STD-PAA-25"
    ),
    ("2025-05-15", "TJF-Q190V-7740"): _hist(
        "TJF-Q190V-7740",
        "ERCP-0514-PM",
        "2025-05-14T15:20",
        "C-44174",
        "2025-05-14T17:25",
        "DUO-PAA-EXT",
        "2025-05-14T18:00",
        "DC-4/01",
    ),
}

# The reporting replica the tracking system syncs every 30 minutes (last sync 11:30 on the 13th).
REPLICA = dict(TRACKING)
REPLICA[("2025-05-13", "GIF-H190-2203")] = _hist(
    "GIF-H190-2203",
    "GI-0512-PM",
    "2025-05-12T16:20",
    "C-44087",
    "2025-05-12T17:10",
    "STD-PAA-25",
    "2025-05-12T17:40",
    "DC-1/03",
)

# Each AER's last cycle of the day before the desk's first batch.
AER_LAST = {
    "2025-05-13": {
        "AER-1": {
            "cycle_id": "C-44091",
            "serial": "CF-HQ190L-5521",
            "ended_at": "2025-05-13T08:02",
            "program": "STD-PAA-25",
            "paa_ppm": 1720,
            "result": "pass",
            "aer": "AER-1",
        },
        "AER-2": {
            "cycle_id": "C-44092",
            "serial": "GIF-H190-2188",
            "ended_at": "2025-05-13T08:31",
            "program": "STD-PAA-25",
            "paa_ppm": 1690,
            "result": "pass",
            "aer": "AER-2",
        },
    },
    "2025-05-14": {
        "AER-1": {
            "cycle_id": "C-44180",
            "serial": "GIF-H190-2291",
            "ended_at": "2025-05-14T07:58",
            "program": "STD-PAA-25",
            "paa_ppm": 1745,
            "result": "pass",
            "aer": "AER-1",
        },
        "AER-2": {
            "cycle_id": "C-44183",
            "serial": "CF-H185L-5602",
            "ended_at": "2025-05-14T08:10",
            "program": "STD-PAA-25",
            "paa_ppm": 1702,
            "result": "pass",
            "aer": "AER-2",
        },
    },
    "2025-05-15": {
        "AER-1": {
            "cycle_id": "C-44190",
            "serial": "GIF-H190-2188",
            "ended_at": "2025-05-15T07:40",
            "program": "STD-PAA-25",
            "paa_ppm": 1733,
            "result": "pass",
            "aer": "AER-1",
        },
        "AER-2": {
            "cycle_id": "C-44191",
            "serial": "TJF-Q190V-7740",
            "ended_at": "2025-05-15T08:05",
            "program": "DUO-PAA-EXT",
            "paa_ppm": 1810,
            "result": "pass",
            "aer": "AER-2",
        },
    },
}

INPUTS = [
    {
        "id": "gi0513pm",
        "task": "reprocess and issue the scopes for list GI-0513-PM (Endo 2, needed 13:30)",
        "request": {
            "list_id": "GI-0513-PM",
            "room": "Endo 2",
            "date": "2025-05-13",
            "requested_at": "2025-05-13T12:05",
            "needed_by": "2025-05-13T13:30",
            "scopes": ["GIF-H190-2203", "CF-HQ190L-5521", "GIF-XP190N-4102"],
        },
    },
    {
        "id": "gi0514am",
        "task": "reprocess and issue the scopes for list GI-0514-AM (Endo 1, needed 08:30)",
        "request": {
            "list_id": "GI-0514-AM",
            "room": "Endo 1",
            "date": "2025-05-14",
            "requested_at": "2025-05-14T07:20",
            "needed_by": "2025-05-14T08:30",
            "scopes": ["CF-H185L-5602", "GIF-H190-2291", "CF-HQ190L-5530", "GIF-H190-2203"],
        },
    },
    {
        "id": "br0514pm",
        "task": "reprocess and issue the scopes for bronchoscopy list BR-0514-PM (Endo 3, needed 14:00)",
        "request": {
            "list_id": "BR-0514-PM",
            "room": "Endo 3",
            "date": "2025-05-14",
            "requested_at": "2025-05-14T12:30",
            "needed_by": "2025-05-14T14:00",
            "scopes": ["BF-1TH190-3318", "BF-UC190F-3350", "BF-P190-3402"],
        },
    },
    {
        "id": "gi0515am",
        "task": "reprocess and issue the scopes for list GI-0515-AM (Endo 1, needed 08:15)",
        "request": {
            "list_id": "GI-0515-AM",
            "room": "Endo 1",
            "date": "2025-05-15",
            "requested_at": "2025-05-15T07:05",
            "needed_by": "2025-05-15T08:15",
            "scopes": ["CF-HQ190L-5530", "CF-H185L-5602", "GIF-H190-2291"],
        },
    },
    {
        "id": "ercp0515pm",
        "task": "reprocess and issue the scopes for list ERCP-0515-PM (Endo 4, needed 13:45)",
        "request": {
            "list_id": "ERCP-0515-PM",
            "room": "Endo 4",
            "date": "2025-05-15",
            "requested_at": "2025-05-15T12:10",
            "needed_by": "2025-05-15T13:45",
            "scopes": ["TJF-Q190V-7731", "GIF-H190-2203", "TJF-Q190V-7740"],
        },
    },
]

CASES = [
    {
        "case": "endo_replica_history",
        "input": "gi0513pm",
        "switch": "replica_history",
        "fault_kind": "stale_data",
        "root": ("scope_history", None, {"serial": "GIF-H190-2203"}),
        "failure": ("issue_to_list", 1),
        "description": "The tracking lookup for GIF-H190-2203 read the reporting replica synced at 11:30, which still "
        "shows the scope racked in cabinet DC-1 since yesterday, so the plan issues it from the cabinet "
        "although it came back from the 11:48 list; the traceability system refuses the issue.",
    },
    {
        "case": "endo_plan_numbering",
        "input": "gi0514am",
        "switch": "zero_based_numbers",
        "fault_kind": "off_by_one",
        "root": ("parse_plan", 1),
        "failure": ("issue_to_list", 1),
        "description": "The plan parser maps the model's 1-based scope numbers through a 0-based index, so CF-H185L-5602 "
        "(number 1) is never reprocessed and the last cabinet scope drops out; the list issue finds no "
        "release for it.",
    },
    {
        "case": "endo_cycle_record",
        "input": "br0514pm",
        "switch": "record_previous_cycle",
        "fault_kind": "bad_memory_write",
        "root": ("record_cycle", 1),
        "failure": ("release_check", 1),
        "description": "Recording BF-1TH190-3318's cycle, the state write stores AER-1's previous cycle record "
        "(C-44180, a gastroscope) under the bronchoscope's key; the release check finds the cycle on "
        "file processed another scope.",
    },
    {
        "case": "endo_leak_timeout",
        "input": "gi0515am",
        "switch": "tester_link_drop",
        "fault_kind": "swallowed_error",
        "root": ("leak_test", 2),
        "failure": ("release_check", 2),
        "description": "The leak tester's serial link timed out on CF-H185L-5602 and the leak_test tool caught the "
        "timeout and answered a pass with a 0 s hold; the release check rejects a leak test with no hold.",
    },
    {
        "case": "endo_duodeno_program",
        "input": "ercp0515pm",
        "switch": "standard_program_for_duodenoscope",
        "fault_kind": "wrong_tool_args",
        "root": ("choose_cycle", 1),
        "failure": ("issue_to_list", 1),
        "description": "The model started TJF-Q190V-7731 on the standard STD-PAA-25 program instead of the extended "
        "duodenoscope program DUO-PAA-EXT; the cycle ran and the scope was racked, but the traceability "
        "system refuses to issue it.",
    },
]


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _hours(a: str, b: str) -> float:
    return round((_t(b) - _t(a)).total_seconds() / 3600, 1)


# --- per-run device state -----------------------------------------------------------------------


class _Unit:
    def __init__(self, date: str) -> None:
        self.date = date
        self.cycles: list[dict] = []
        self.next_cycle = {"2025-05-13": 44110, "2025-05-14": 44200, "2025-05-15": 44230}[date]
        self.aer2_dropped = False
        self.leak_reads = 0
        self.cabinet_next = 4


UNIT: _Unit | None = None


def _tester_read(serial: str) -> dict:
    """The leak tester's reading over its serial link."""
    assert UNIT is not None
    UNIT.leak_reads += 1
    if _case("tester_link_drop") and UNIT.leak_reads == 2:
        raise TimeoutError(f"leak tester LT-2 did not answer within 20 s ({serial})")
    drop = {"GIF": 0.3, "CF-": 0.5, "TJF": 0.4, "BF-": 0.2}[serial[:3]]
    return {"pressure_drop_kpa": drop, "hold_s": 60}


# --- steps ------------------------------------------------------------------------------------


@trajdebug.step(kind="input")
def receive_request(request: dict) -> dict:
    return {**request, "scope_count": len(request["scopes"])}


@trajdebug.step(kind="retrieval")
def scope_history(serial: str, date: str) -> dict:
    source = REPLICA if _case("replica_history") else TRACKING
    return dict(source[(date, serial)])


@trajdebug.step(kind="tool")
def aer_status(date: str) -> dict:
    status = {aer: dict(rec) for aer, rec in AER_LAST[date].items()}
    trajdebug.current_run().state["aer_last"] = status
    return status


@trajdebug.step(kind="parse")
def parse_plan(plan_message: dict, scopes: list) -> list[dict]:
    plan = json.loads(plan_message["content"])
    if _case("zero_based_numbers"):
        by_number = dict(enumerate(scopes))
    else:
        by_number = dict(enumerate(scopes, start=1))
    items = [{"serial": by_number[n], "action": "reprocess"} for n in plan["reprocess"] if n in by_number]
    items += [
        {"serial": by_number[n], "action": "issue_from_cabinet"}
        for n in plan["issue_from_cabinet"]
        if n in by_number
    ]
    return items


@trajdebug.step(kind="tool")
def leak_test(serial: str) -> dict:
    try:
        reading = _tester_read(serial)
    except TimeoutError:
        reading = {"pressure_drop_kpa": 0.0, "hold_s": 0}
    result = "pass" if reading["pressure_drop_kpa"] < 1.0 else "fail"
    return {"serial": serial, "tester": "LT-2", "result": result, **reading}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
def start_aer_cycle(call: dict) -> dict:
    with trajdebug.step("start_aer_cycle", kind="tool", input=call) as s:
        assert UNIT is not None
        if call["aer"] == "AER-2" and UNIT.date == "2025-05-14" and not UNIT.aer2_dropped:
            UNIT.aer2_dropped = True
            raise ConnectionError("AER-2 controller did not acknowledge the start command")
        UNIT.next_cycle += 1
        minutes = 38 if call["program"] == "DUO-PAA-EXT" else 27
        cycle = {
            "cycle_id": f"C-{UNIT.next_cycle}",
            "serial": call["serial"],
            "aer": call["aer"],
            "program": call["program"],
            "minutes": minutes,
            "paa_ppm": 1700 + 10 * (UNIT.next_cycle % 7),
            "result": "pass",
        }
        UNIT.cycles.append(cycle)
        s.output = cycle
    return cycle


@trajdebug.step(kind="state")
def record_cycle(serial: str, cycle: dict) -> dict:
    state = trajdebug.current_run().state
    last = state["aer_last"]
    if _case("record_previous_cycle"):
        entry = dict(last[cycle["aer"]])
        last[cycle["aer"]] = cycle
    else:
        last[cycle["aer"]] = cycle
        entry = dict(cycle)
    state[f"cycle:{serial}"] = entry
    return entry


@trajdebug.step(kind="tool")
def dry_and_store(serial: str, cycle_id: str) -> dict:
    assert UNIT is not None
    UNIT.cabinet_next += 1
    return {
        "serial": serial,
        "cabinet": "DC-2",
        "slot": UNIT.cabinet_next,
        "after_cycle": cycle_id,
        "dry_minutes": 10,
    }


@trajdebug.step(kind="condition")
def release_check(item: dict, history: dict, leak: dict | None, requested_at: str) -> dict:
    serial = item["serial"]
    if item["action"] == "reprocess":
        if leak is None or leak["result"] != "pass" or leak["hold_s"] < MIN_HOLD_S:
            held = 0 if leak is None else leak["hold_s"]
            raise ValueError(f"leak test for {serial} held {held} s; a pass needs a {MIN_HOLD_S} s hold")
        cycle = trajdebug.current_run().state.get(f"cycle:{serial}")
        if cycle is None:
            raise ValueError(f"no AER cycle on file for {serial}")
        if cycle["serial"] != serial:
            raise ValueError(f"cycle {cycle['cycle_id']} on file for {serial} processed {cycle['serial']}")
        if cycle["result"] != "pass":
            raise ValueError(f"cycle {cycle['cycle_id']} for {serial} did not pass")
        return {"serial": serial, "release": True, "basis": cycle["cycle_id"]}
    hours = _hours(history["stored_at"], requested_at)
    if hours > MAX_STORAGE_H:
        raise ValueError(f"{serial} has been in storage {hours} h (limit {MAX_STORAGE_H} h)")
    return {"serial": serial, "release": True, "basis": f"cabinet {history['location']}, {hours} h"}


@trajdebug.step(kind="tool")
def issue_to_list(list_id: str, date: str, booked: list, released: list) -> dict:
    assert UNIT is not None
    have = {r["serial"]: r for r in released}
    for serial in booked:
        if serial not in have:
            raise RuntimeError(
                f"traceability: {list_id} is booked with {serial}, which has no release record"
            )
        live = TRACKING[(date, serial)]
        cycles = [c for c in UNIT.cycles if c["serial"] == serial]
        if cycles:
            newest = {
                "cycle_id": cycles[-1]["cycle_id"],
                "ended_at": "this batch",
                "program": cycles[-1]["program"],
            }
        elif live["last_use"]["ended_at"] < live["last_cycle"]["ended_at"]:
            newest = live["last_cycle"]
        else:
            raise RuntimeError(
                f"traceability: {serial} was used on {live['last_use']['list']} until "
                f"{live['last_use']['ended_at'][11:]} and has no decontamination cycle since "
                f"(newest {live['last_cycle']['cycle_id']}, {live['last_cycle']['ended_at']})"
            )
        need = PROGRAM_FOR.get(live["type"], "STD-PAA-25")
        if newest["program"] != need:
            raise RuntimeError(
                f"traceability: {serial} ({live['model']}) needs program {need}; "
                f"cycle {newest['cycle_id']} ran {newest['program']}"
            )
    return {"list_id": list_id, "issued": list(booked), "status": "issued"}


@trajdebug.step(kind="output")
def handover(note: str, issue: dict) -> dict:
    return {"list_id": issue["list_id"], "note": note}


PLAN_SYSTEM = (
    "You plan the decontamination batch for a procedure list. Scopes are numbered from 1 in the order "
    "given. A scope used since its last cycle, or stored longer than 72 h, is reprocessed; the others are "
    'issued from the drying cabinet. Answer JSON: {"reprocess": [numbers], '
    '"issue_from_cabinet": [numbers], "note": text}.'
)
CYCLE_SYSTEM = (
    "You operate the automated endoscope reprocessors AER-1 and AER-2. Start one cycle for the scope "
    "with start_aer_cycle, choosing the program its type requires."
)
SUMMARY_SYSTEM = "Write a two-line handover note for the endoscopy nurse in charge."

CYCLE_TOOL = tool_spec(
    "start_aer_cycle",
    "Start a cycle on an AER.",
    {
        "aer": {"type": "string", "enum": ["AER-1", "AER-2"]},
        "serial": {"type": "string"},
        "program": {"type": "string", "enum": ["STD-PAA-25", "DUO-PAA-EXT"]},
    },
)


def agent(request: dict, client: Any, model: str) -> dict:
    global UNIT
    UNIT = _Unit(request["date"])
    req = receive_request(request)
    with trajdebug.ContextThreadPoolExecutor(max_workers=4) as pool:
        histories = list(pool.map(lambda s: scope_history(s, req["date"]), req["scopes"]))
    aer_status(req["date"])
    plan_msg = chat_step(
        client,
        model,
        "plan_batch",
        [
            {"role": "system", "content": PLAN_SYSTEM},
            {"role": "user", "content": dumps({"request": req, "histories": histories})},
        ],
    )
    items = parse_plan(plan_msg, req["scopes"])
    hist_by = {h["serial"]: h for h in histories}
    leaks: dict[str, dict] = {}
    for i, item in enumerate(items):
        if item["action"] != "reprocess":
            continue
        serial = item["serial"]
        leak = leaks[serial] = leak_test(serial)
        msg = chat_step(
            client,
            model,
            "choose_cycle",
            [
                {"role": "system", "content": CYCLE_SYSTEM},
                {
                    "role": "user",
                    "content": dumps(
                        {
                            "scope": {k: hist_by[serial][k] for k in ("serial", "model", "type")},
                            "leak_test": leak,
                            "aer": "AER-1" if i % 2 == 0 else "AER-2",
                        }
                    ),
                },
            ],
            tools=[CYCLE_TOOL],
        )
        [call] = tool_calls(msg)
        cycle = start_aer_cycle(call["args"])
        record_cycle(serial, cycle)
        dry_and_store(serial, cycle["cycle_id"])
    released = [
        release_check(item, hist_by[item["serial"]], leaks.get(item["serial"]), req["requested_at"])
        for item in items
    ]
    issue = issue_to_list(req["list_id"], req["date"], req["scopes"], released)
    note = chat_step(
        client,
        model,
        "summarize",
        [
            {"role": "system", "content": SUMMARY_SYSTEM},
            {"role": "user", "content": dumps({"issue": issue, "released": released})},
        ],
    )
    return handover(note["content"], issue)


def record(inp: dict, path: str, ctx: Any) -> None:
    try:
        with trajdebug.run(NAME, task=inp["task"], path=path):
            agent(inp["request"], ctx.client, ctx.model)
    except (RuntimeError, ValueError):
        pass


# --- the model --------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    system = system_text(request)
    data = last_user_json(request)
    if system == PLAN_SYSTEM:
        req = data["request"]
        reprocess, cabinet = [], []
        for n, h in enumerate(data["histories"], start=1):
            used_since = h["last_use"]["ended_at"] > h["last_cycle"]["ended_at"]
            too_long = h["stored_at"] is None or _hours(h["stored_at"], req["requested_at"]) > MAX_STORAGE_H
            (reprocess if used_since or too_long else cabinet).append(n)
        return json.dumps(
            {
                "reprocess": reprocess,
                "issue_from_cabinet": cabinet,
                "note": f"{len(reprocess)} to reprocess before {req['needed_by'][11:]}, "
                f"{len(cabinet)} from the cabinet",
            }
        )
    if system == CYCLE_SYSTEM:
        scope = data["scope"]
        program = PROGRAM_FOR.get(scope["type"], "STD-PAA-25")
        if _case("standard_program_for_duodenoscope"):
            program = "STD-PAA-25"
        return Reply(
            tool_calls=(
                tool_call(
                    "start_aer_cycle", {"aer": data["aer"], "serial": scope["serial"], "program": program}
                ),
            )
        )
    if system == SUMMARY_SYSTEM:
        issue = data["issue"]
        return (
            f"{issue['list_id']}: {len(issue['issued'])} scopes issued ({', '.join(issue['issued'])}). "
            f"All leak tests passed and cycles are logged."
        )
    return "I cannot help with that."
