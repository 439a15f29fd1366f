"""Ward shift roster builder (trajdebug recording SDK, clinic scheduling).

For a ward and a week: load the nursing staff and the approved leave, let the
model draft the roster as CSV text, parse it, save the draft in the run's
state, load it back for the checks, and check coverage before publishing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trajdebug
from sb.harness import Case, failing, faulty, tick


AGENT = "ward-roster"
ROUTE = "trajdebug-sdk"
DOMAIN = "clinic scheduling"

DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
SHIFTS = ["early", "late", "night"]
WARDS = {
    "W3-cardio": [f"N-{i:02d}" for i in range(1, 9)],
    "W5-ortho": [f"N-{i:02d}" for i in range(11, 19)],
    "W7-paeds": [f"N-{i:02d}" for i in range(21, 28)],
    "W2-renal": [f"N-{i:02d}" for i in range(31, 39)],
}
LEAVE = {  # (ward, week) -> staff on approved leave that week
    ("W3-cardio", "2025-W24"): ["N-04"],
    ("W3-cardio", "2025-W25"): ["N-02", "N-07"],
    ("W3-cardio", "2025-W23"): ["N-05"],
    ("W5-ortho", "2025-W24"): ["N-13"],
    ("W5-ortho", "2025-W25"): [],
    ("W5-ortho", "2025-W23"): ["N-16", "N-18"],
    ("W7-paeds", "2025-W24"): ["N-22"],
    ("W7-paeds", "2025-W25"): ["N-25"],
    ("W7-paeds", "2025-W23"): [],
    ("W2-renal", "2025-W24"): ["N-33"],
    ("W2-renal", "2025-W25"): ["N-31", "N-36"],
    ("W2-renal", "2025-W23"): ["N-35"],
}
MAX_SHIFTS = 5


def _prev_week(week: str) -> str:
    y, w = week.split("-W")
    return f"{y}-W{int(w) - 1:02d}"


@trajdebug.step(kind="tool")
def load_staff(ward: str) -> list[dict[str, Any]]:
    tick("load_staff")
    return [{"staff_id": s, "ward": ward, "role": "RN"} for s in WARDS[ward]]


@trajdebug.step(kind="tool")
def fetch_leave(ward: str, week: str) -> dict[str, Any]:
    tick("fetch_leave")
    wk = week
    if faulty("leave_cache_last_week", "fetch_leave"):
        wk = _prev_week(week)  # the HR cache answered with the entry it already had for the ward
    return {"ward": ward, "week": week, "on_leave": list(LEAVE[(ward, wk)])}


@trajdebug.step(kind="llm", attributes={"model": "roster-drafter-v2"})
def draft_roster(prompt: str) -> str:
    """The fake model: a round-robin roster over the available nurses, as CSV with a blank line before the weekend."""
    tick("draft_roster")
    req = json.loads(prompt.split("INPUT:", 1)[1])
    pool = [s for s in req["staff"] if s not in req["on_leave"]]
    lines = ["day,shift,staff_id"]
    k = 0
    for d in DAYS:
        if d == "Sat":
            lines.append("")  # weekend block
        for sh in SHIFTS:
            lines.append(f"{d},{sh},{pool[k % len(pool)]}")
            k += 1
    return "\n".join(lines)


@trajdebug.step(kind="parse")
def parse_roster(text: str) -> list[dict[str, str]]:
    tick("parse_roster")
    rows = []
    for line in text.splitlines()[1:]:
        if not line.strip():
            if faulty("parser_stops_at_blank", "parse_roster"):
                break  # treats the blank line as the end of the table
            continue
        day, shift, staff = line.split(",")
        rows.append({"day": day, "shift": shift, "staff_id": staff})
    return rows


@trajdebug.step(kind="state")
def save_draft(week: str, rows: list[dict[str, str]]) -> dict[str, Any]:
    tick("save_draft")
    run = trajdebug.current_run()
    if faulty("draft_keyed_by_day", "save_draft"):
        by_day = {r["day"]: r for r in rows}  # one entry per day: later shifts overwrite earlier ones
        stored = list(by_day.values())
    else:
        stored = [dict(r) for r in rows]
    run.state[f"roster:{week}"] = stored
    return {"week": week, "saved_rows": len(rows)}


@trajdebug.step(kind="state")
def load_draft(week: str) -> list[dict[str, str]]:
    tick("load_draft")
    return list(trajdebug.current_run().state[f"roster:{week}"])


@trajdebug.step(kind="condition")
def check_coverage(
    rows: list[dict[str, str]], staff: list[dict[str, Any]], leave: dict[str, Any]
) -> dict[str, Any]:
    tick("check_coverage")
    real_leave = set(LEAVE[(staff[0]["ward"], leave["week"])])
    slots = {(r["day"], r["shift"]): r["staff_id"] for r in rows}
    gaps = [f"{d} {s}" for d in DAYS for s in SHIFTS if (d, s) not in slots]
    if gaps:
        failing("check_coverage")
        raise RuntimeError(f"roster leaves {len(gaps)} shift(s) without a nurse: {', '.join(gaps[:4])}")
    clash = [f"{who} on {d} {s}" for (d, s), who in slots.items() if who in real_leave]
    if clash:
        failing("check_coverage")
        raise RuntimeError(f"rostered during approved leave: {'; '.join(clash[:3])}")
    load: dict[str, int] = {}
    for who in slots.values():
        load[who] = load.get(who, 0) + 1
    over = {k: v for k, v in load.items() if v > MAX_SHIFTS}
    if over:
        failing("check_coverage")
        raise RuntimeError(f"working-time limit exceeded: {over}")
    return {"ok": True, "shifts": len(slots)}


@trajdebug.step(kind="tool")
def publish_roster(ward: str, week: str, rows: list[dict[str, str]]) -> str:
    tick("publish_roster")
    return f"published {ward} {week}: {len(rows)} shifts"


def run(task: dict[str, Any], path: Path) -> Any:
    ward, week = task["ward"], task["week"]
    with trajdebug.run(
        "ward-roster", path=path, task=f"roster {ward} {week}", agent=AGENT, metadata={"ward": ward}
    ):
        staff = load_staff(ward)
        leave = fetch_leave(ward, week)
        prompt = (
            "Draft the nursing roster (early/late/night, 7 days) as CSV day,shift,staff_id. Nobody on leave, "
            f"at most {MAX_SHIFTS} shifts each. INPUT:"
            + json.dumps(
                {
                    "ward": ward,
                    "week": week,
                    "staff": [s["staff_id"] for s in staff],
                    "on_leave": leave["on_leave"],
                }
            )
        )
        rows = parse_roster(draft_roster(prompt))
        save_draft(week, rows)
        draft = load_draft(week)
        check_coverage(draft, staff, leave)
        return publish_roster(ward, week, draft)


PASSING = [
    {"ward": "W3-cardio", "week": "2025-W23"},
    {"ward": "W5-ortho", "week": "2025-W25"},
    {"ward": "W7-paeds", "week": "2025-W23"},
    {"ward": "W2-renal", "week": "2025-W23"},
    {"ward": "W7-paeds", "week": "2025-W25"},
]

CASES = [
    Case(
        id="roster-leave-cache-last-week",
        task={"ward": "W3-cardio", "week": "2025-W25"},
        fault="leave_cache_last_week",
        fault_kind="stale_data",
        description="fetch_leave answers from the HR cache entry of the previous week (N-04 away) instead of this "
        "week's (N-02, N-07). The model drafts around the wrong absences; the draft is parsed, saved and reloaded, "
        "and the coverage check finds nurses rostered during approved leave.",
        root="fetch_leave",
        evidence="N-04",
        path=["fetch_leave", "draft_roster", "parse_roster", "save_draft", "load_draft", "check_coverage"],
        failure="check_coverage",
    ),
    Case(
        id="roster-parser-stops-at-weekend",
        task={"ward": "W5-ortho", "week": "2025-W24"},
        fault="parser_stops_at_blank",
        fault_kind="lossy_parsing",
        description="parse_roster stops at the blank line the model puts before the weekend block, silently dropping "
        "Saturday and Sunday; the saved and reloaded draft fails the coverage check with six empty shifts.",
        root="parse_roster",
        evidence="Fri",
        path=["parse_roster", "save_draft", "load_draft", "check_coverage"],
        failure="check_coverage",
    ),
    Case(
        id="roster-draft-keyed-by-day",
        task={"ward": "W2-renal", "week": "2025-W25"},
        fault="draft_keyed_by_day",
        fault_kind="bad_memory_write",
        description="save_draft indexes the rows by day before writing them to run state, so each day keeps only "
        "its night shift. The draft loaded back for checking has 7 of 21 shifts and coverage fails.",
        root="save_draft",
        evidence='"saved_rows": 21',
        path=["save_draft", "load_draft", "check_coverage"],
        failure="check_coverage",
    ),
    Case(
        id="roster-leave-cache-paeds",
        task={"ward": "W7-paeds", "week": "2025-W24"},
        fault="leave_cache_last_week",
        fault_kind="stale_data",
        description="For the paediatric ward, fetch_leave returns last week's (empty) leave list, so N-22 is drafted "
        "while on leave; the coverage check rejects the roster.",
        root="fetch_leave",
        evidence='"on_leave": []',
        path=["fetch_leave", "draft_roster", "parse_roster", "save_draft", "load_draft", "check_coverage"],
        failure="check_coverage",
    ),
]
