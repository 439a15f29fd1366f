"""Mural painting commissions (openai_agents route): a coordinator surveys, plans and hands off to a permit agent that files."""
from __future__ import annotations

import json
import math
import re

from agents import Agent, function_tool

from trajdebug.testing import Reply, tool_call

from .common import Case, agents_model, run_agents, tool_results
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "mural-commissions", "openai_agents", "mural painting commissions", "jsonl"
SHAPE = "coordinator: survey wall -> style references -> site notes -> paint calculator -> remember palette -> save plan -> hand-off -> permit agent: recall palette -> file permit and schedule"

WALLS = {
    ("Dock St depot", "east"): {"width_m": 20, "height_m": 8, "surface": "brick"},
    ("Dock St depot", "north"): {"width_m": 12, "height_m": 6, "surface": "brick"},
    ("Linden school", "south"): {"width_m": 15, "height_m": 5, "surface": "render"},
    ("Linden school", "west"): {"width_m": 9, "height_m": 4, "surface": "render"},
    ("Orchard underpass", "north"): {"width_m": 30, "height_m": 3, "surface": "concrete"},
    ("Hythe library annex", "east"): {"width_m": 10, "height_m": 7, "surface": "brick"},
}
STYLES = {"botanical": ["ferns-12", "seedheads-03"], "maritime": ["gulls-07", "rigging-02"], "geometric": ["tessel-11"]}
NOTES = {"Dock St depot": "Access from the yard gate; scissor lift fits.", "Linden school": "Paint only at weekends.",
         "Orchard underpass": "Night closures need 2 weeks notice.", "Hythe library annex": "Listed neighbour; muted palette."}
PHASES = {"brick": ["clean", "prime", "base", "detail", "seal"], "render": ["clean", "base", "detail", "seal"],
          "concrete": ["clean", "prime", "base", "detail", "seal"]}
COVER_M2_PER_L = 10.0
MEMORY: dict = {}

INPUTS = {
    "dock": {"site": "Dock St depot", "wall": "east", "theme": "botanical", "palette": ["moss", "ochre", "slate"]},
    "linden": {"site": "Linden school", "wall": "south", "theme": "geometric", "palette": ["coral", "teal"]},
}
REFS = [
    {"site": "Orchard underpass", "wall": "north", "theme": "maritime", "palette": ["navy", "sand"]},
    {"site": "Hythe library annex", "wall": "east", "theme": "botanical", "palette": ["sage", "cream"]},
    {"site": "Linden school", "wall": "west", "theme": "maritime", "palette": ["navy", "white", "red"]},
    {"site": "Dock St depot", "wall": "north", "theme": "geometric", "palette": ["black", "yellow"]},
]

CASES = [
    Case("mural_survey", "tool_ignores_argument", "dock", "survey_wall", 1, "tool", "file_permit_and_schedule", 1,
         "The survey service ignores the wall argument and returns the north wall, so paint is ordered for a smaller wall."),
    Case("mural_styles", "wrong_retrieval", "dock", "search_style_references", 1, "tool", "file_permit_and_schedule", 1,
         "The style reference search returns the maritime set for a botanical commission."),
    Case("mural_notes", "context_pollution", "dock", "load_site_notes", 1, "tool", "file_permit_and_schedule", 1,
         "The site notes carry a leftover line from another site's file, and the permit agent takes its lift height."),
    Case("mural_plan", "plan_error", "dock", "generation fake-model", 6, "llm", "file_permit_and_schedule", 1,
         "The coordinator's plan for a brick wall leaves out the prime phase."),
    Case("mural_palette", "bad_memory_write", "linden", "remember_palette", 1, "tool", "file_permit_and_schedule", 1,
         "The palette memory write stores the colours under the previous commission's site key."),
]


def _job(user: str) -> dict:
    return json.loads(user[user.index("{"):])


def policy(req):
    msgs = req.body.get("messages") or []
    system = next((m["content"] for m in msgs if m.get("role") == "system"), "")
    user = next((m["content"] for m in msgs if m.get("role") == "user"), "")
    job = _job(user)
    got = {}
    for name, args, res in tool_results(req):
        got.setdefault(name, []).append((args, res))
    if system.startswith("You file mural permits"):
        if "recall_palette" not in got:
            return Reply(tool_calls=(tool_call("recall_palette", {"site": job["site"]}),))
        if "file_permit_and_schedule" not in got:
            wall = json.loads(got["survey_wall"][0][1])
            notes = got["load_site_notes"][0][1]
            lift = re.findall(r"height (\d+) m", notes)
            plan = json.loads(got["save_plan"][0][1])
            return Reply(tool_calls=(tool_call("file_permit_and_schedule", {
                "site": job["site"], "wall": job["wall"], "height_m": int(lift[0]) if lift else wall["height_m"],
                "paint_l": json.loads(got["paint_calculator"][0][1])["litres"], "palette": json.loads(got["recall_palette"][0][1])["palette"],
                "phases": plan["phases"], "references": json.loads(got["search_style_references"][0][1])["references"]}),))
        return "Permit filed: " + got["file_permit_and_schedule"][0][1]
    if "survey_wall" not in got:
        return Reply(tool_calls=(tool_call("survey_wall", {"site": job["site"], "wall": job["wall"]}),))
    if "search_style_references" not in got:
        return Reply(tool_calls=(tool_call("search_style_references", {"theme": job["theme"]}),))
    if "load_site_notes" not in got:
        return Reply(tool_calls=(tool_call("load_site_notes", {"site": job["site"]}),))
    wall = json.loads(got["survey_wall"][0][1])
    phases = list(PHASES[wall["surface"]])
    if "paint_calculator" not in got:
        return Reply(tool_calls=(tool_call("paint_calculator", {"area_m2": wall["width_m"] * wall["height_m"], "coats": 2}),))
    if "remember_palette" not in got:
        return Reply(tool_calls=(tool_call("remember_palette", {"site": job["site"], "colours": job["palette"]}),))
    if "save_plan" not in got:
        if active("mural_plan"):
            phases = [p for p in phases if p != "prime"]
        return Reply(tool_calls=(tool_call("save_plan", {"site": job["site"], "phases": phases}),))
    return Reply(tool_calls=(tool_call("transfer_to_permit_agent", {}),))


@function_tool
def survey_wall(site: str, wall: str) -> str:
    """Survey a wall: width, height, surface."""
    key = (site, "north") if active("mural_survey") and (site, "north") in WALLS else (site, wall)
    return json.dumps(WALLS[key])


@function_tool
def search_style_references(theme: str) -> str:
    """Approved reference images for a theme."""
    t = "maritime" if active("mural_styles") else theme
    return json.dumps({"theme": theme, "references": STYLES[t]})


@function_tool
def load_site_notes(site: str) -> str:
    """Access notes on file for a site."""
    text = NOTES[site]
    if active("mural_notes"):
        text += "\nScaffold: cherry picker to height 14 m (Orchard underpass file)."
    return text


@function_tool
def paint_calculator(area_m2: float, coats: int) -> str:
    """Litres of paint for an area and number of coats."""
    return json.dumps({"litres": math.ceil(area_m2 * coats / COVER_M2_PER_L)})


@function_tool
def remember_palette(site: str, colours: list[str]) -> str:
    """Store the agreed palette for a site."""
    key = MEMORY.get("_last_site", site) if active("mural_palette") else site
    MEMORY[key] = list(colours)
    MEMORY["_last_site"] = site
    return json.dumps({"saved": True, "colours": len(colours)})


@function_tool
def save_plan(site: str, phases: list[str]) -> str:
    """Store the painting plan for a site."""
    MEMORY[f"plan:{site}"] = list(phases)
    return json.dumps({"site": site, "phases": list(phases)})


@function_tool
def recall_palette(site: str) -> str:
    """The stored palette for a site."""
    return json.dumps({"site": site, "palette": MEMORY.get(site, ["white"])})


def _file(site: str, wall: str, height_m: int, paint_l: int, palette: list[str], phases: list[str], references: list[str]) -> str:
    w = WALLS[(site, wall)]
    theme = next(j for j in [*INPUTS.values(), *REFS] if j["site"] == site and j["wall"] == wall)["theme"]
    errs = []
    if height_m != w["height_m"]:
        errs.append(f"declared working height {height_m} m does not match the surveyed wall ({w['height_m']} m)")
    need = math.ceil(w["width_m"] * w["height_m"] * 2 / COVER_M2_PER_L)
    if paint_l < need:
        errs.append(f"paint order {paint_l} L is short of {need} L for {w['width_m'] * w['height_m']} m2 at 2 coats")
    if any(r not in STYLES[theme] for r in references):
        errs.append(f"references {references} are not from the approved '{theme}' set")
    if w["surface"] in ("brick", "concrete") and "prime" not in phases:
        errs.append(f"{w['surface']} surfaces need a prime phase before the base coat")
    if len(palette) < 2:
        errs.append(f"palette {palette} has fewer than the 2 colours in the commission")
    if errs:
        raise ValueError("council permit portal: " + "; ".join(errs))
    return json.dumps({"permit": f"MP-{len(site)}{wall[0].upper()}", "crew_days": len(phases) * 2})


file_permit_and_schedule = function_tool(_file, name_override="file_permit_and_schedule", failure_error_function=None,
                                         description_override="File the council permit and schedule the crew.")


def build(server):
    model = agents_model(server)
    permits = Agent(name="permit_agent", instructions="You file mural permits and schedule crews.", model=model,
                    tools=[recall_palette, file_permit_and_schedule])
    return Agent(name="mural_coordinator", instructions="You coordinate mural commissions.", model=model,
                 tools=[survey_wall, search_style_references, load_site_notes, paint_calculator, remember_palette, save_plan],
                 handoffs=[permits])


def record(server, inp, path):
    MEMORY.clear()
    MEMORY["_last_site"] = "Orchard underpass"
    run_agents(AGENT, build(server), server, "Prepare this mural commission: " + json.dumps(inp), path,
               task=f"mural at {inp['site']} ({inp['wall']} wall)")
