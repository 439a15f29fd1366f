"""Dance school recitals (OpenAI Agents SDK, hand-offs): a front desk hands a recital to the stage manager,
who times every routine and publishes the running order."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agents import Agent, function_tool
from trajdebug.testing import Reply, tool_call

from . import common
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "recital-office", "openai_agents", "dance school recitals", "jsonl"

RECITALS = {
    "R-WIN26": {"date": "2026-12-18", "venue": "Corn Exchange", "classes": ["Ballet Minis", "Jazz Teens", "Contemporary Adults"]},
    "R-SPR27": {"date": "2027-03-27", "venue": "St Jude Hall", "classes": ["Tap Juniors", "Ballet Grade 3", "Street Crew", "Lyrical Seniors"]},
    "R-SUM27": {"date": "2027-07-10", "venue": "Corn Exchange", "classes": ["Ballet Minis", "Tap Juniors"]},
    "R-GALA": {"date": "2027-01-30", "venue": "Riverside Theatre", "classes": ["Lyrical Seniors", "Jazz Teens", "Street Crew"]},
    "R-SHOW": {"date": "2027-05-15", "venue": "St Jude Hall", "classes": ["Contemporary Adults", "Ballet Grade 3"]},
    "R-AUT26": {"date": "2026-11-28", "venue": "Riverside Theatre", "classes": ["Street Crew", "Ballet Minis", "Jazz Teens"]},
}
REFS = ["R-SUM27", "R-GALA", "R-SHOW", "R-AUT26"]
TRACKS = {"Ballet Minis": ("Snowdrop Polka", 154), "Jazz Teens": ("Brass Alley", 212), "Contemporary Adults": ("Undertow", 265),
          "Tap Juniors": ("Tin Roof Rain", 143), "Ballet Grade 3": ("Lark Ascending (edit)", 198), "Street Crew": ("Night Bus", 187),
          "Lyrical Seniors": ("Paper Lanterns", 231)}
NOTES = {
    "R-WIN26": ["Parent of Ruby (Ballet Minis): can she sit with her group before the show?", "Jazz Teens need the quick-change room."],
    "R-SPR27": ["Street Crew would like haze off for their routine.", "Ballet Grade 3: two dancers away that week."],
}


def _cue_text(cls: str, recital_id: str) -> str:
    track, secs = TRACKS[cls]
    if active("dance_cue_format") and cls == "Jazz Teens":
        return f"CUE v2 | class={cls} | track={track} | len={secs // 60:02d}m{secs % 60:02d}s"
    return f"Class: {cls}\nTrack: {track}\nLength: {secs // 60}:{secs % 60:02d}"


@function_tool
def get_class_roster(recital_id: str) -> str:
    """The classes taking part in a recital."""
    r = RECITALS[recital_id]
    return json.dumps({"recital_id": recital_id, "date": r["date"], "venue": r["venue"], "classes": r["classes"]})


@function_tool
def get_parent_notes(recital_id: str) -> str:
    """Recent notes from parents and teachers about a recital."""
    notes = list(NOTES.get(recital_id, ["No new notes."]))
    if active("dance_notes_mix"):
        notes.append("From the spring recital thread: Add Tap Juniors to the running order after the interval.")
    return json.dumps({"recital_id": recital_id, "notes": notes})


@function_tool
def get_cue_sheet(class_name: str, recital_id: str) -> str:
    """The music cue sheet of one class's routine."""
    return _cue_text(class_name, recital_id)


@function_tool
def parse_cue_sheet(text: str) -> str:
    """Turn a cue sheet into JSON (class, track, seconds)."""
    f = {}
    for part in re.split(r"\n| \| ", text):
        if "=" in part:
            k, v = part.split("=", 1)
        elif ": " in part:
            k, v = part.split(": ", 1)
        else:
            continue
        f[k.strip().lower()] = v.strip()
    length = f.get("length") or f.get("len", "0")
    m = re.match(r"(\d+):(\d+)", length)
    if m is None:  # a bare number of seconds
        return json.dumps({"class": f["class"], "track": f["track"], "seconds": int(re.match(r"\d+", length).group(0))})
    mins, secs = int(m.group(1)), int(m.group(2))
    if active("dance_cue_round"):
        secs = 0
    return json.dumps({"class": f["class"], "track": f["track"], "seconds": mins * 60 + secs})


@function_tool
def get_venue_slot(venue: str, date: str) -> str:
    """Reserve the venue's evening slot for a date."""
    if active("dance_venue_date"):
        date = "2026-12-12"
    return json.dumps({"venue": venue, "date": date, "slot": "18:30-20:00", "booking_ref": f"VB-{venue[:3].upper()}-{date.replace('-', '')}"})


@function_tool
def get_costume_fittings(recital_id: str) -> str:
    """Costume fitting appointments for a recital."""
    return json.dumps({"recital_id": recital_id, "fittings": [{"class": c, "day": "Tuesday"} for c in RECITALS[recital_id]["classes"]]})


def _publish(recital_id: str, venue_booking_ref: str, running_order: str) -> str:
    r = RECITALS[recital_id]
    order = json.loads(running_order)
    if not order:
        raise RuntimeError(f"programme service 422: running order for {recital_id} lists no routines")
    names = [o["class"] for o in order]
    extra = [n for n in names if n not in r["classes"]]
    if extra:
        raise RuntimeError(f"programme service 409: {', '.join(extra)} not enrolled in recital {recital_id}")
    if venue_booking_ref != f"VB-{r['venue'][:3].upper()}-{r['date'].replace('-', '')}":
        raise RuntimeError(f"programme service 409: venue booking {venue_booking_ref} is not for {r['venue']} on {r['date']}")
    for o in order:
        if o["seconds"] != TRACKS[o["class"]][1]:
            raise RuntimeError(f"programme service 422: {o['class']} timed at {o['seconds']} s; licensed track {TRACKS[o['class']][0]} runs {TRACKS[o['class']][1]} s")
    return json.dumps({"programme": f"PG-{recital_id}", "routines": len(order)})


publish_programme = function_tool(_publish, name_override="publish_programme", description_override="Publish the running order.",
                                  failure_error_function=None)


@common.handler("dance:desk")
def _desk(msgs, tools):
    rid = common.first_user(msgs).split()[-1]
    names = [n for n, _, _ in common.calls_and_results(msgs)]
    if "get_class_roster" not in names:
        return Reply(tool_calls=(tool_call("get_class_roster", {"recital_id": rid}),))
    if "get_parent_notes" not in names:
        return Reply(tool_calls=(tool_call("get_parent_notes", {"recital_id": rid}),))
    target = "transfer_to_costume_coordinator" if active("dance_route") else "transfer_to_stage_manager"
    return Reply(tool_calls=(tool_call(target, {}),))


@common.handler("dance:costume")
def _costume(msgs, tools):
    rid = common.first_user(msgs).split()[-1]
    done = common.calls_and_results(msgs)
    names = [n for n, _, _ in done]
    if "get_costume_fittings" not in names:
        return Reply(tool_calls=(tool_call("get_costume_fittings", {"recital_id": rid}),))
    if "publish_programme" not in names:
        return Reply(tool_calls=(tool_call("publish_programme", {"recital_id": rid, "venue_booking_ref": "", "running_order": "[]"}),))
    return "Fittings published."


@common.handler("dance:stage")
def _stage(msgs, tools):
    rid = common.first_user(msgs).split()[-1]
    done = common.calls_and_results(msgs)
    res = {n: r for n, _, r in done}
    roster = json.loads(res["get_class_roster"])
    classes = list(roster["classes"])
    for note in json.loads(res["get_parent_notes"])["notes"]:
        m = re.search(r"Add (.+?) to the running order", note)
        if m and m.group(1) not in classes:
            classes.append(m.group(1))
    sheets = [a["class_name"] for n, a, _ in done if n == "get_cue_sheet"]
    parsed = [json.loads(r) for n, _, r in done if n == "parse_cue_sheet"]
    if len(parsed) < len(sheets):
        return Reply(tool_calls=(tool_call("parse_cue_sheet", {"text": done[-1][2]}),))
    if len(sheets) < len(classes):
        return Reply(tool_calls=(tool_call("get_cue_sheet", {"class_name": classes[len(sheets)], "recital_id": rid}),))
    if "get_venue_slot" not in res:
        return Reply(tool_calls=(tool_call("get_venue_slot", {"venue": roster["venue"], "date": roster["date"]}),))
    if "publish_programme" not in res:
        slot = json.loads(res["get_venue_slot"])
        order = [{"class": p["class"], "track": p["track"], "seconds": p["seconds"]} for p in parsed]
        return Reply(tool_calls=(tool_call("publish_programme", {"recital_id": rid, "venue_booking_ref": slot["booking_ref"],
                                                                 "running_order": json.dumps(order)}),))
    return f"Running order published: {json.loads(res['publish_programme'])['programme']}."


def _agents() -> Agent:
    m = common.agents_model()
    stage = Agent(name="stage_manager", instructions="[dance:stage] You time routines and publish the running order.", model=m,
                  tools=[get_cue_sheet, parse_cue_sheet, get_venue_slot, publish_programme])
    costume = Agent(name="costume_coordinator", instructions="[dance:costume] You organise costume fittings.", model=m,
                    tools=[get_costume_fittings, publish_programme])
    return Agent(name="front_desk", instructions="[dance:desk] You take recital requests and hand them to the right person.", model=m,
                 tools=[get_class_roster, get_parent_notes], handoffs=[stage, costume])


def record(recital_id: str, path: Path) -> None:
    common.run_agents(_agents(), f"Prepare and publish the running order for recital {recital_id}", path, AGENT, f"running order for {recital_id}")


G = "generation gpt-4o-mini"
CASES = [
    dict(case="zr_dance_01", fault_id="dance_cue_round", kind="lossy_parsing", input="R-WIN26", root=("parse_cue_sheet", 1),
         failure=("publish_programme", 1), description="the cue-sheet parser drops the seconds of each track length."),
    dict(case="zr_dance_02", fault_id="dance_cue_format", kind="format_drift", input="R-WIN26", root=("get_cue_sheet", 2),
         failure=("publish_programme", 1), description="one cue sheet arrives in a new v2 layout whose length field the parser reads as zero seconds."),
    dict(case="zr_dance_03", fault_id="dance_route", kind="wrong_routing", input="R-SPR27", root=(G, 3),
         failure=("publish_programme", 1), description="the front desk hands the running order to the costume coordinator instead of the stage manager."),
    dict(case="zr_dance_04", fault_id="dance_notes_mix", kind="context_pollution", input="R-WIN26", root=("get_parent_notes", 1),
         failure=("publish_programme", 1), description="the notes tool mixes in a note from another recital's thread asking to add a class."),
    dict(case="zr_dance_05", fault_id="dance_venue_date", kind="tool_ignores_argument", input="R-SPR27", root=("get_venue_slot", 1),
         failure=("publish_programme", 1), description="the venue tool ignores the date it is given and reserves a default date."),
]
