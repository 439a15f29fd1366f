"""Port berth allocation (recording SDK): a planner model lays out the shift's steps, the agent runs
them (arrivals, tides, berths), then for each arriving vessel reads its profile, retrieves candidate
berths, chooses one against length and under-keel clearance, reserves it with the harbour master
(moving to the next window on a conflict) and notes it in the shift's memory; the schedule is then
published to the port community system."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.heldout.suite_i._kit import Case, active, last_user
from openai import OpenAI

import trajdebug
from trajdebug.testing import FakeModelServer


NAME = "berth-planner"
ROUTE = "sdk"

# Tide height above chart datum (m) for each hour of the day.
TIDES = [1.6, 1.2, 0.8, 0.5, 0.3, 0.4, 0.7, 1.1, 1.5, 1.9, 2.2, 2.3, 2.1, 1.7, 1.2, 0.8, 0.5, 0.4, 0.6,
         1.0, 1.4, 1.8, 2.0, 1.9]
BERTHS = {  # berth -> (terminal, depth at chart datum m, length m)
    "B1": ("container", 13.0, 300), "B2": ("container", 14.0, 350), "B3": ("container", 15.5, 400),
    "B5": ("container", 16.0, 420), "B7": ("bulk", 14.5, 280), "B8": ("bulk", 12.0, 220),
    "B9": ("bulk", 16.5, 320), "T1": ("tanker", 17.0, 330),
}
VESSELS = {  # vessel -> (type, length m, draft m)
    "MSC ALBA": ("container", 366, 14.2), "EVER LUMEN": ("container", 334, 13.8), "CMA RHONE": ("container", 294, 12.1),
    "MAERSK TAGUS": ("container", 299, 13.1), "ONE CRANE": ("container", 260, 11.2), "HMM ARIA": ("container", 330, 14.6),
    "NORD GRAIN": ("bulk", 229, 12.4), "STAR ORE": ("bulk", 292, 14.8), "PACIFIC COAL": ("bulk", 210, 10.9),
    "NAVE ORION": ("tanker", 250, 13.5),
}
# A shift's arrivals: (vessel, hour of arrival).
INPUTS = {
    "shift-mon": [("HMM ARIA", 4), ("CMA RHONE", 6), ("NORD GRAIN", 7), ("ONE CRANE", 9)],
    "shift-tue": [("CMA RHONE", 2), ("MAERSK TAGUS", 5), ("PACIFIC COAL", 6), ("EVER LUMEN", 9), ("ONE CRANE", 11),
                  ("NAVE ORION", 12)],
    "shift-wed": [("PACIFIC COAL", 1), ("HMM ARIA", 3), ("ONE CRANE", 5), ("CMA RHONE", 8), ("STAR ORE", 10)],
    "shift-thu": [("NORD GRAIN", 3), ("ONE CRANE", 4), ("MAERSK TAGUS", 5), ("HMM ARIA", 6), ("CMA RHONE", 13),
                  ("EVER LUMEN", 16), ("PACIFIC COAL", 18)],
    "shift-fri": [("CMA RHONE", 1), ("NAVE ORION", 3), ("ONE CRANE", 6), ("NORD GRAIN", 9)],
    "ref-1": [("ONE CRANE", 2), ("NAVE ORION", 5), ("CMA RHONE", 9)],
    "ref-2": [("MSC ALBA", 10), ("PACIFIC COAL", 12), ("MAERSK TAGUS", 13), ("NORD GRAIN", 15)],
    "ref-3": [("STAR ORE", 11), ("ONE CRANE", 14), ("EVER LUMEN", 20), ("CMA RHONE", 21), ("NAVE ORION", 22)],
    "ref-4": [("HMM ARIA", 10), ("CMA RHONE", 12)],
}
REFS = ("ref-1", "ref-2", "ref-3", "ref-4")
# Windows other lines booked already: (berth, hour).
TAKEN = {("B2", 9), ("B3", 12), ("B1", 13)}
STEPS = ["load_arrivals", "fetch_tides", "load_berths", "allocate", "publish"]

CASES = (
    Case("berths-plan", "bp_plan", "plan_error", "shift-mon", "plan_shift", "load_arrivals, load_berths",
         "The planner leaves fetch_tides out of the shift plan, so berths are chosen on the assumed mean high water."),
    Case("berths-hold", "bp_hold", "swallowed_error", "shift-tue", "reserve_berth", "HOLD-B2-09",
         "A conflict on B2 at 09:00 is swallowed and a provisional hold is kept as if it were a booking."),
    Case("berths-page", "bp_page", "truncated_result", "shift-fri", "load_berths", '"length_m": 280, "terminal": "bulk"}]',
         "The berth registry returns its first page only (five of eight berths), without the tanker berth T1."),
    Case("berths-index", "bp_index", "wrong_retrieval", "shift-wed", "candidate_berths", '[{"berth": "B7"',
         "For ONE CRANE the candidate search reads the bulk terminal's index, so a bulk berth is chosen for a container ship."),
    Case("berths-tide", "bp_tide", "off_by_one", "shift-thu", "choose_berth", '"tide_m": 1.1, "vessel": "HMM ARIA"',
         "Choosing HMM ARIA's berth reads the tide of the hour after its 06:00 arrival (1.1 m instead of 0.7 m), so B2 looks deep enough."),
)


class HarbourRejected(RuntimeError):
    """The harbour master's system refused a request."""

    __module__ = "portcall.harbour"


class BerthConflict(RuntimeError):
    """The window is booked already (HTTP 409)."""

    __module__ = "portcall.harbour"


# -- the scripted model ----------------------------------------------------------------------------


def policy(request: Any) -> str:
    shift = json.loads(last_user(request).split(":", 1)[1])
    steps = [s for s in STEPS if not (s == "fetch_tides" and active("bp_plan"))]
    return f"Plan for {shift['arrivals']} arrivals: " + ", ".join(steps)


# -- the agent's steps -----------------------------------------------------------------------------


@trajdebug.step(kind="llm")
def plan_shift(client: OpenAI, messages: list[dict[str, str]]) -> str:
    reply = client.chat.completions.create(model="port-planner", messages=messages)
    trajdebug.current_step().usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                                   completion_tokens=reply.usage.completion_tokens)
    return reply.choices[0].message.content or ""


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> list[str]:
    return [s.strip() for s in text.split(":", 1)[1].split(",")]


@trajdebug.step(kind="tool")
def load_arrivals(shift: str) -> list[dict[str, Any]]:
    return [{"vessel": v, "eta_hour": h} for v, h in INPUTS[shift]]


@trajdebug.step(kind="tool")
def fetch_tides(port: str, day: str) -> dict[str, Any]:
    return {"port": port, "day": day, "hourly_m": TIDES}


@trajdebug.step(kind="retrieval")
def load_berths(port: str) -> list[dict[str, Any]]:
    rows = [{"berth": b, "terminal": t, "depth_m": d, "length_m": n} for b, (t, d, n) in BERTHS.items()]
    return rows[:5] if active("bp_page") and port == "Leixoes" else rows


@trajdebug.step(kind="tool")
def vessel_profile(vessel: str) -> dict[str, Any]:
    kind, length, draft = VESSELS[vessel]
    return {"vessel": vessel, "type": kind, "length_m": length, "draft_m": draft}


@trajdebug.step(kind="retrieval")
def candidate_berths(profile: dict[str, Any], berths: list[dict[str, Any]]) -> list[dict[str, Any]]:
    terminal = profile["type"]
    if active("bp_index") and profile["vessel"] == "ONE CRANE":
        terminal = "bulk"
    fits = [b for b in berths if b["terminal"] == terminal and b["length_m"] >= profile["length_m"]]
    return sorted(fits, key=lambda b: b["depth_m"])


@trajdebug.step(kind="condition")
def choose_berth(profile: dict[str, Any], eta: int, candidates: list[dict[str, Any]], tides: dict[str, Any] | None,
                 booked: list[list[Any]]) -> dict[str, Any]:
    hour = eta + 1 if active("bp_tide") and profile["vessel"] == "HMM ARIA" else eta
    tide = tides["hourly_m"][hour] if tides else 1.8  # mean high water when no table was read
    for berth in candidates:
        if berth["depth_m"] + tide - profile["draft_m"] >= 0.5 and [berth["berth"], eta] not in booked:
            return {"vessel": profile["vessel"], "berth": berth["berth"], "hour": eta, "tide_m": tide}
    raise HarbourRejected(f"no berth takes {profile['vessel']} at {eta:02d}:00")


def _harbour_reserve(vessel: str, berth: str, hour: int) -> str:
    kind, _, draft = VESSELS[vessel]
    terminal, depth, _ = BERTHS[berth]
    if terminal != kind:
        raise HarbourRejected(f"{berth} is a {terminal} berth: {vessel} ({kind}) cannot be worked there")
    clearance = depth + TIDES[hour] - draft
    if clearance < 0.5:
        raise HarbourRejected(f"{vessel} at {berth} {hour:02d}:00: under-keel clearance {clearance:.1f} m, "
                              f"the port requires 0.5 m")
    if (berth, hour) in TAKEN:
        raise BerthConflict(f"409 Conflict: {berth} is booked at {hour:02d}:00")
    return f"CNF-{berth}-{hour:02d}-{vessel.split()[0][:3]}"


@trajdebug.step(kind="tool")
def reserve_berth(choice: dict[str, Any]) -> dict[str, Any]:
    try:
        booking = _harbour_reserve(choice["vessel"], choice["berth"], choice["hour"])
        return {**choice, "booking": booking}
    except BerthConflict:
        if active("bp_hold") and choice["vessel"] == "EVER LUMEN":
            return {**choice, "booking": f"HOLD-{choice['berth']}-{choice['hour']:02d}"}
        later = choice["hour"] + 1
        return {**choice, "hour": later, "booking": _harbour_reserve(choice["vessel"], choice["berth"], later)}


@trajdebug.step(kind="state")
def note_schedule(booking: dict[str, Any]) -> int:
    memory = trajdebug.current_run().state
    memory["schedule"] = [*memory.get("schedule", []), booking]
    memory["booked"] = [*memory.get("booked", []), [booking["berth"], booking["hour"]]]
    return len(memory["schedule"])


@trajdebug.step(kind="tool")
def publish_schedule(schedule: list[dict[str, Any]]) -> dict[str, Any]:
    for row in schedule:
        if not row["booking"].startswith("CNF-"):
            raise HarbourRejected(f"{row['vessel']}: {row['booking']} is not a confirmed booking reference")
    return {"published": len(schedule), "notice": "PCS-NOTICE-0417"}


def _allocate(arrivals: list[dict[str, Any]], berths: list[dict[str, Any]], tides: dict[str, Any] | None) -> None:
    memory = trajdebug.current_run().state
    for arrival in arrivals:
        profile = vessel_profile(arrival["vessel"])
        candidates = candidate_berths(profile, berths)
        choice = choose_berth(profile, arrival["eta_hour"], candidates, tides, memory.get("booked", []))
        note_schedule(reserve_berth(choice))


def record(server: FakeModelServer, input_id: str, path: Path) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    messages = [{"role": "system", "content": "You plan a port shift: list the steps to run, comma separated."},
                {"role": "user", "content": "Shift: " + json.dumps({"shift": input_id,
                                                                      "arrivals": len(INPUTS[input_id])})}]
    try:
        with trajdebug.run(NAME, path=str(path), task=f"berth allocation {input_id}") as run:
            plan = parse_plan(plan_shift(client, messages))
            arrivals, berths, tides = [], [], None
            for step in plan:
                if step == "load_arrivals":
                    arrivals = load_arrivals(input_id)
                elif step == "fetch_tides":
                    tides = fetch_tides("Leixoes", input_id)
                elif step == "load_berths":
                    berths = load_berths("Leixoes")
                elif step == "allocate":
                    _allocate(arrivals, berths, tides)
                elif step == "publish":
                    publish_schedule(run.state.get("schedule", []))
    except HarbourRejected:
        pass
