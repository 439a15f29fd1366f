"""Firestop penetration register for a building's close-out (the OpenAI Agents SDK, recorded by TrajdebugProcessor).

The register clerk plans the floors to close, reads each floor's penetration survey (paged, the floors
at once), searches the tested-system listings for each kind of penetration (parallel calls), has a
listing-reader sub-agent (an agent run as a tool) read each chosen system's listing into its ratings in turn,
and writes the register, which the close-out register validates against the survey and the listings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agents import (Agent, ModelBehaviorError, RunConfig, Runner, UserError, function_tool, set_default_openai_api,
                    set_default_openai_client)
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from suite_agents._common import exchange


NAME = "firestop-register-clerk"
ROUTE = "openai_agents"
DOMAIN = "firestopping penetration register for building close-out"
SHAPE = "clerk agent: plan + parallel paged survey calls, parallel listing searches, a listing-reader sub-agent run as a tool for each chosen system in turn, register write validated by the close-out register"

SWITCH: str | None = None


def switched(name: str) -> bool:
    """Whether the case ``name`` is on (the only place SWITCH is read)."""
    return SWITCH == name


# (block, floor) -> penetrations: id, penetrant, size mm, substrate, rated assembly hours
SURVEY: dict[tuple[str, str], list[tuple[str, str, int, str, int]]] = {
    ("A", "2"): [("P-2-01", "PVC pipe", 110, "concrete floor", 2), ("P-2-02", "cable tray", 450, "concrete floor", 2),
                 ("P-2-03", "PVC pipe", 90, "gypsum shaft wall", 2)],
    ("A", "3"): [("P-3-01", "PVC pipe", 110, "concrete floor", 2), ("P-3-02", "PVC pipe", 75, "gypsum corridor wall", 1),
                 ("P-3-03", "PVC pipe", 90, "gypsum shaft wall", 2)],
    ("B", "5"): [("P-5-01", "steel duct", 350, "gypsum shaft wall", 2), ("P-5-02", "cable tray", 300, "concrete floor", 2)],
    ("B", "6"): [("P-6-01", "steel duct", 300, "gypsum shaft wall", 2), ("P-6-02", "PVC pipe", 110, "concrete floor", 2)],
    ("C", "3"): [("P-3-01", "PVC pipe", 110, "concrete floor", 2), ("P-3-02", "cable tray", 500, "concrete floor", 2)],
    ("C", "3M"): [("P-3M-01", "steel duct", 400, "gypsum shaft wall", 2), ("P-3M-02", "cable tray", 300, "concrete floor", 2)],
    ("C", "4"): [("P-4-01", "PVC pipe", 110, "concrete floor", 2)],
    ("D", "4"): [("P-4-01", "cable tray", 400, "concrete floor", 2), ("P-4-02", "copper pipe", 42, "concrete floor", 2),
                 ("P-4-03", "PVC pipe", 110, "concrete floor", 2)],
    ("D", "5"): [("P-5-01", "PVC pipe", 110, "concrete floor", 2), ("P-5-02", "copper pipe", 28, "concrete floor", 2)],
    ("E", "3"): [(f"P-3-{i:02d}", p, s, "concrete floor", 2) for i, (p, s) in enumerate(
        [("PVC pipe", 110), ("PVC pipe", 90), ("cable tray", 300), ("PVC pipe", 110), ("copper pipe", 35), ("cable tray", 450),
         ("PVC pipe", 160), ("copper pipe", 42)], start=1)],
}
SITE_DIARY = {  # field notes kept by floor number: (block, floor) -> notes
    ("B", "4"): ["P-4-03: 110 mm PVC sleeve cast in, use C-AJ-1330 per RFI-88 (approved)."],
    ("D", "4"): ["P-4-01: tray re-routed 2026-02-14, opening enlarged to 400 mm wide."],
}
LISTINGS = {
    "C-AJ-2109": {"substrate": "concrete floor", "penetrant": "PVC pipe", "max_mm": 160, "f_h": 2, "t_h": 0},
    "C-AJ-4035": {"substrate": "concrete floor", "penetrant": "cable tray", "max_mm": 600, "f_h": 2, "t_h": 0},
    "C-AJ-1330": {"substrate": "concrete floor", "penetrant": "copper pipe", "max_mm": 54, "f_h": 2, "t_h": 1},
    "W-L-1154": {"substrate": "gypsum wall", "penetrant": "PVC pipe", "max_mm": 110, "f_h": 1, "t_h": 0},
    "W-L-2078": {"substrate": "gypsum wall", "penetrant": "PVC pipe", "max_mm": 110, "f_h": 2, "t_h": 0},
    "W-L-5029": {"substrate": "gypsum wall", "penetrant": "steel duct", "max_mm": 400, "f_h": 2, "t_h": 0},
}
CLOSEOUT = {"A": ["2", "3"], "B": ["5", "6"], "C": ["3", "3M", "4"], "D": ["4", "5"], "E": ["3"]}
PAGE = 6

INPUTS = [
    {"key": "block-a", "block": "A", "task": "firestop register close-out, Block A levels 2-3",
     "ask": "Close out the firestop register for Block A, levels 2 and 3."},
    {"key": "block-b", "block": "B", "task": "firestop register close-out, Block B levels 5-6",
     "ask": "Close out the firestop register for Block B, levels 5 and 6."},
    {"key": "block-c", "block": "C", "task": "firestop register close-out, Block C levels 3-4 and mezzanine",
     "ask": "Close out the firestop register for Block C, levels 3 to 4 including the plant mezzanine 3M."},
    {"key": "block-d", "block": "D", "task": "firestop register close-out, Block D levels 4-5",
     "ask": "Close out the firestop register for Block D, levels 4 and 5."},
    {"key": "block-e", "block": "E", "task": "firestop register close-out, Block E level 3",
     "ask": "Close out the firestop register for Block E, level 3."},
]

CASES = [
    {
        "case": "zzzzm_firestop_corridor_rating", "input": "block-a", "switch": "corridor_rating", "fault_kind": "wrong_tool_args",
        "root": {"name": "response", "occurrence": 2, "kind": "llm"},
        "failure": {"name": "write_register", "occurrence": 1},
        "description": "The clerk searches the listings for PVC pipes through gypsum walls with a 1 h rating, the corridor wall's, for the whole group, so the 2 h shaft-wall pipes get the 1 h system W-L-1154 and the close-out register refuses it.",
    },
    {
        "case": "zzzzm_firestop_prose_ratings", "input": "block-b", "switch": "prose_reader", "fault_kind": "format_drift",
        "root": {"name": "response", "occurrence": 5, "kind": "llm"},
        "failure": {"name": "write_register", "occurrence": 1},
        "description": "The listing-reader sub-agent answers C-AJ-2109's ratings as prose ('F 2 Hr / T 0 Hr') instead of its JSON record, the clerk carries '2 Hr' into the register entries, and the register's schema refuses the call.",
    },
    {
        "case": "zzzzm_firestop_mezzanine", "input": "block-c", "switch": "plan_numbered_levels", "fault_kind": "plan_error",
        "root": {"name": "response", "occurrence": 1, "kind": "llm"},
        "failure": {"name": "write_register", "occurrence": 1},
        "description": "The clerk's plan covers the numbered levels 3 and 4 only and leaves out the plant mezzanine 3M, so the register written is short of Block C's close-out scope.",
    },
    {
        "case": "zzzzm_firestop_diary_note", "input": "block-d", "switch": "diary_by_floor", "fault_kind": "context_pollution",
        "root": {"name": "penetration_survey", "occurrence": 1, "kind": "tool"}, "root_has": "\"floor\": \"4\"",
        "failure": {"name": "write_register", "occurrence": 1},
        "description": "The level 4 survey comes back with Block B's site-diary notes (kept by floor number), one of which says to use C-AJ-1330 for P-4-03; the clerk follows it for Block D's 110 mm PVC pipe and the register refuses a copper-pipe system.",
    },
    {
        "case": "zzzzm_firestop_second_page", "input": "block-e", "switch": "page_offset", "fault_kind": "off_by_one",
        "root": {"name": "penetration_survey", "occurrence": 2, "kind": "tool"},
        "failure": {"name": "write_register", "occurrence": 1},
        "description": "The survey's second page starts one row late and skips P-3-07, so the register is written with 7 of level 3's 8 penetrations.",
    },
]


# -- tools ----------------------------------------------------------------------------------------

_current: dict[str, str] = {}


@function_tool
def penetration_survey(floor: str, page: int) -> str:
    """One page of a floor's surveyed penetrations (with the site diary's notes for the floor)."""
    block = _current["block"]
    rows = SURVEY[(block, floor)]
    start = (page - 1) * PAGE + (1 if (page > 1 and switched("page_offset")) else 0)
    got = rows[start:start + PAGE]
    out = {"block": block, "floor": floor, "page": page,
           "penetrations": [{"id": i, "penetrant": p, "size_mm": s, "substrate": sub, "rating_h": r} for i, p, s, sub, r in got]}
    if page * PAGE < len(rows):
        out["next_page"] = page + 1
    if switched("diary_by_floor"):
        notes = [n for (b, f), ns in SITE_DIARY.items() if f == floor for n in ns]
    else:
        notes = SITE_DIARY.get((block, floor), [])
    if notes and page == 1:
        out["diary_notes"] = notes
    return json.dumps(out)


@function_tool
def listing_search(penetrant: str, substrate: str, rating_h: int, size_mm: int) -> str:
    """Tested firestop systems for a penetrant through a substrate, at least the rating, for the size."""
    base = "gypsum wall" if substrate.startswith("gypsum") else substrate
    hits = [{"system": k, "f_h": v["f_h"], "max_mm": v["max_mm"]} for k, v in LISTINGS.items()
            if v["substrate"] == base and v["penetrant"] == penetrant and v["f_h"] >= rating_h and v["max_mm"] >= size_mm]
    return json.dumps({"penetrant": penetrant, "substrate": substrate, "rating_h": rating_h, "systems": sorted(hits, key=lambda h: h["f_h"])})


@function_tool
def listing_document(system: str) -> str:
    """The listing document of a tested system."""
    v = LISTINGS[system]
    return (f"System No. {system}. {v['substrate'].title()} assembly. Penetrating item: {v['penetrant']}, nominal size up to "
            f"{v['max_mm']} mm. F Ratings - {v['f_h']} Hr. T Ratings - {v['t_h']} Hr. Annular space 0 to 25 mm.")


class Entry(BaseModel):
    penetration: str
    floor: str
    system: str
    f_rating_h: int
    t_rating_h: int


class RegisterRejected(Exception):
    pass


@function_tool(failure_error_function=None)
def write_register(block: str, floors: list[str], entries: list[Entry]) -> str:
    """Write the firestop register for a block's floors to the close-out register."""
    need = CLOSEOUT[block]
    if sorted(floors) != sorted(need):
        raise RegisterRejected(f"close-out for Block {block} needs levels {', '.join(need)}; the register covers {', '.join(floors)}")
    by_id = {(e.floor, e.penetration): e for e in entries}
    for floor in floors:
        rows = SURVEY[(block, floor)]
        gone = [pid for pid, *_ in rows if (floor, pid) not in by_id]
        if gone:
            raise RegisterRejected(f"level {floor}: the survey lists {len(rows)} penetrations, the register has "
                                   f"{len(rows) - len(gone)} ({', '.join(gone)} missing)")
        for pid, penetrant, size, substrate, rating in rows:
            e = by_id[(floor, pid)]
            lst = LISTINGS.get(e.system)
            base = "gypsum wall" if substrate.startswith("gypsum") else substrate
            if lst is None or lst["penetrant"] != penetrant or lst["substrate"] != base or lst["max_mm"] < size:
                raise RegisterRejected(f"{pid}: {e.system} is not listed for a {size} mm {penetrant} through {substrate}")
            if lst["f_h"] < rating:
                raise RegisterRejected(f"{pid} in a {rating} h {substrate}: {e.system} has an F rating of {lst['f_h']} h")
    return json.dumps({"register": f"FSR-{block}-{'-'.join(floors)}", "entries": len(entries), "status": "accepted"})


# -- agents ---------------------------------------------------------------------------------------

CLERK_INSTRUCTIONS = ("You are the firestop register clerk. Plan the levels to close out, read every page of each "
                      "level's penetration survey, search the listings for each kind of penetration, have "
                      "read_listing read each chosen system, then write the register with every penetration.")
READER_INSTRUCTIONS = ("You read a tested firestop system's listing document and answer only JSON {system, f_rating_h, "
                       "t_rating_h, max_size_mm}.")

_agents: dict[str, Agent] = {}


def setup(env: dict) -> None:
    model = env["server"].model
    set_default_openai_client(AsyncOpenAI(base_url=env["server"].base_url, api_key="not-needed", max_retries=0))
    set_default_openai_api("responses")
    reader = Agent(name="listing_reader", instructions=READER_INSTRUCTIONS, model=model, tools=[listing_document])
    _agents["clerk"] = Agent(name="register_clerk", instructions=CLERK_INSTRUCTIONS, model=model,
                             tools=[penetration_survey, listing_search,
                                    reader.as_tool("read_listing", "Read a system's listing into its ratings."),
                                    write_register])


def teardown(env: dict) -> None:
    set_trace_processors([])


def record(inp: dict, dest: Path, env: dict) -> None:
    _current["block"] = inp["block"]
    set_trace_processors([TrajdebugProcessor(path=str(dest), name=NAME)])
    try:
        env["loop"].run_until_complete(Runner.run(
            _agents["clerk"], inp["ask"], run_config=RunConfig(workflow_name=NAME, trace_metadata={"task": inp["task"]}),
            max_turns=12))
    except UserError as exc:  # a tool that raised: the run's failure is in the trace
        if not isinstance(exc.__cause__, RegisterRejected):
            raise
    except ModelBehaviorError:  # a call the tool's schema refused: in the trace too
        pass
    finally:
        set_trace_processors([])


# -- the model ------------------------------------------------------------------------------------

def _plan(ask: str) -> list[str]:
    m = re.search(r"levels? (\d+) to (\d+)", ask)
    if m:
        floors = [str(n) for n in range(int(m.group(1)), int(m.group(2)) + 1)]
    else:
        floors = re.findall(r"\b(\d+)\b", ask.split("level")[1])
    extra = re.findall(r"mezzanine (\w+)", ask)
    if extra and not switched("plan_numbered_levels"):
        floors = sorted(floors + extra)
    return floors


def brain(request) -> Any:
    instructions, ask, outs = exchange(request.body)
    if instructions == READER_INSTRUCTIONS:
        system = ask.strip()
        docs = [v for n, _, v in outs if n == "listing_document"]
        if not docs:
            return Reply(tool_calls=(tool_call("listing_document", {"system": system}),))
        doc = docs[-1]
        f = int(re.search(r"F Ratings - (\d+) Hr", doc).group(1))
        t = int(re.search(r"T Ratings - (\d+) Hr", doc).group(1))
        size = int(re.search(r"up to (\d+) mm", doc).group(1))
        if system == "C-AJ-2109" and switched("prose_reader"):
            return f"{system}: F {f} Hr / T {t} Hr, penetrants up to {size} mm."
        return json.dumps({"system": system, "f_rating_h": f, "t_rating_h": t, "max_size_mm": size})

    floors = _plan(ask)
    surveys = [(a, v) for n, a, v in outs if n == "penetration_survey"]
    if not surveys:
        return Reply(text=f"Plan: close levels {', '.join(floors)}; survey, listings, listing reads, then the register.",
                     tool_calls=tuple(tool_call("penetration_survey", {"floor": f, "page": 1}) for f in floors))
    pending = [tool_call("penetration_survey", {"floor": v["floor"], "page": v["next_page"]}) for _, v in surveys
               if "next_page" in v and not any(a2["floor"] == v["floor"] and a2["page"] == v["next_page"] for a2, _ in surveys)]
    if pending:
        return Reply(tool_calls=tuple(pending))
    pens = [dict(p, floor=v["floor"]) for _, v in surveys for p in v["penetrations"]]
    notes = {}
    for _, v in surveys:
        for n in v.get("diary_notes", []):
            m = re.match(r"(P-[\w-]+): .*use ([A-Z]-[A-Z]+-\d+)", n)
            if m:
                notes[m.group(1)] = m.group(2)
    groups: dict[tuple, list[dict]] = {}
    for p in pens:
        kind = "gypsum wall" if p["substrate"].startswith("gypsum") else p["substrate"]
        groups.setdefault((p["penetrant"], kind), []).append(p)
    searches = [(a, v) for n, a, v in outs if n == "listing_search"]
    if not searches:
        calls = []
        for (penetrant, kind), ps in groups.items():
            rating = max(p["rating_h"] for p in ps)
            if switched("corridor_rating") and kind == "gypsum wall":
                rating = next((p["rating_h"] for p in ps if "corridor" in p["substrate"]), rating)
            calls.append(tool_call("listing_search", {"penetrant": penetrant, "substrate": ps[0]["substrate"],
                                                      "rating_h": rating, "size_mm": max(p["size_mm"] for p in ps)}))
        return Reply(tool_calls=tuple(calls))
    chosen: dict[str, str] = {}
    for a, v in searches:
        kind = "gypsum wall" if a["substrate"].startswith("gypsum") else a["substrate"]
        for p in groups[(a["penetrant"], kind)]:
            chosen[f"{p['floor']}/{p['id']}"] = notes.get(p["id"]) or v["systems"][0]["system"]
    reads = {a["input"]: v for n, a, v in outs if n == "read_listing"}
    unread = [s for s in sorted(set(chosen.values())) if s not in reads]
    if unread:  # one listing at a time: each read is checked before the next
        return Reply(tool_calls=(tool_call("read_listing", {"input": unread[0]}),))
    if not any(n == "write_register" for n, _, _ in outs):
        entries = []
        for key, system in chosen.items():
            floor, pid = key.split("/")
            r = reads[system]
            if isinstance(r, dict):
                f, t = r["f_rating_h"], r["t_rating_h"]
            else:  # a reader's prose answer: the ratings as written
                f = re.search(r"F ([\d.]+ Hr)", r).group(1)
                t = re.search(r"T ([\d.]+ Hr)", r).group(1)
            entries.append({"penetration": pid, "floor": floor, "system": system, "f_rating_h": f, "t_rating_h": t})
        block = re.search(r"Block (\w)", ask).group(1)
        return Reply(tool_calls=(tool_call("write_register", {"block": block, "floors": sorted({e["floor"] for e in entries} | set(floors)),
                                                              "entries": entries}),))
    done = next(v for n, _, v in outs if n == "write_register")
    return f"Register {done['register']} accepted with {done['entries']} entries."
