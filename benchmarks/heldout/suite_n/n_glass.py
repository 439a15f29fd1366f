"""Stained-glass restoration quotes (openai_agents route): plan, survey, a glass-matching sub-agent per panel, leading, heritage portal."""

from __future__ import annotations

import json
import re
from typing import Any

import nkit
from agents import Agent, function_tool

from trajdebug.testing import Reply, tool_call


NAME = "glass-restorer"
ROUTE = "openai_agents"
DOMAIN = "stained-glass restoration quotes"
SHAPE = "plan tool, survey, per-panel glass matcher sub-agent (as_tool: panel record, catalogue search), lead pricing, heritage portal submission"

# window -> panels (id, colour, texture, width mm, height mm)
WINDOWS = {
    "W-07": [("W-07-A", "ruby", "seedy", 457, 610), ("W-07-B", "cobalt", "seedy", 457, 610), ("W-07-C", "amber", "streaky", 380, 520)],
    "W-12": [("W-12-A", "emerald", "reamy", 300, 900), ("W-12-B", "cobalt", "seedy", 300, 900)],
    "W-15": [("W-15-A", "amber", "streaky", 420, 640), ("W-15-B", "opal", "reamy", 420, 640), ("W-15-C", "ruby", "seedy", 420, 640),
             ("W-15-D", "emerald", "reamy", 300, 300)],
    "W-17": [("W-17-A", "opal", "reamy", 500, 500), ("W-17-B", "emerald", "reamy", 500, 500)],
    "W-21": [("W-21-A", "cobalt", "seedy", 350, 700), ("W-21-B", "amber", "streaky", 350, 700)],
    "W-24": [("W-24-A", "ruby", "seedy", 600, 600)],
    "W-30": [("W-30-A", "opal", "reamy", 250, 800), ("W-30-B", "ruby", "seedy", 250, 800), ("W-30-C", "cobalt", "seedy", 250, 800)],
}
CATALOGUE = [
    ("R-114", "ruby", "seedy"), ("R-102", "ruby", "cathedral"),
    ("C-220", "cobalt", "cathedral"), ("C-231", "cobalt", "seedy"),
    ("A-305", "amber", "streaky"), ("E-410", "emerald", "reamy"), ("O-512", "opal", "reamy"),
]
PANELS = {p[0]: p for rows in WINDOWS.values() for p in rows}
INPUTS = {w: {"window": w, "church": "St Aldhelm"} for w in WINDOWS}
REFS = ["W-17", "W-21", "W-24", "W-30"]
FAULTS = [
    {"id": "gr-panel", "kind": "subagent_wrong_entity", "input": "W-07", "root": "generation fake-model", "marker": "W-17-B"},
    {"id": "gr-came", "kind": "wrong_tool_args", "input": "W-12", "root": "generation fake-model", "marker": "round 4 mm"},
    {"id": "gr-texture", "kind": "tool_ignores_argument", "input": "W-12", "root": "search_catalogue", "marker": "C-220"},
    {"id": "gr-inches", "kind": "format_drift", "input": "W-15", "root": "survey_window", "marker": "16.5 x 25.2 in"},
    {"id": "gr-plan", "kind": "plan_error", "input": "W-15", "root": "generation fake-model", "marker": "survey, match glass, submit"},
]


@function_tool
def record_plan(plan: str) -> str:
    """Record the job plan before starting."""
    return f"plan recorded: {plan}"


@function_tool
def survey_window(window: str) -> str:
    """The condition survey of a window: its panels with colour, texture and size."""
    parts = []
    for pid, colour, texture, w, h in WINDOWS[window]:
        size = f"{w} x {h} mm"
        if nkit.active("gr-inches") and pid == "W-15-B":
            size = f"{w / 25.4:.1f} x {h / 25.4:.1f} in"
        parts.append(f"{pid}: {colour} {texture}, {size}")
    return "; ".join(parts)


@function_tool
def panel_record(panel_id: str) -> str:
    """The conservation record of one panel."""
    pid, colour, texture, _, _ = PANELS[panel_id]
    return f"{pid}: original glass {colour}, texture {texture}"


@function_tool
def search_catalogue(colour: str, texture: str) -> str:
    """Find mouth-blown glass in the supplier catalogue by colour and texture."""
    for code, c, t in CATALOGUE:
        if c == colour and (t == texture or nkit.active("gr-texture")):
            return f"{code} {c} {t} antique"
    return "no match"


@function_tool
def price_lead(profile: str, metres: float) -> str:
    """Price lead came by profile and length."""
    rate = {"H-section 10 mm": 7.4, "round 4 mm": 3.1}.get(profile, 6.0)
    return f"{metres:.1f} m of {profile} at {rate} GBP/m = {metres * rate:.2f} GBP"


@function_tool(failure_error_function=None)
def submit_quote(window: str, lines: list[str], lead: str, area_m2: float) -> str:
    """Submit the quote to the diocesan heritage portal. lines: 'PANEL=CODE' per panel."""
    given = dict(line.split("=") for line in lines)
    for pid, colour, texture, _w, _h in WINDOWS[window]:
        code = given.get(pid)
        if code is None:
            raise RuntimeError(f"Heritage portal 422: panel {pid} has no glass line")
        match = next(c for c in CATALOGUE if c[0] == code)
        if (match[1], match[2]) != (colour, texture):
            raise RuntimeError(f"Heritage portal 422: {pid} specifies {code} ({match[1]} {match[2]}), not like-for-like with the surveyed {colour} {texture}")
    if not lead:
        raise RuntimeError("Heritage portal 422: no leading line on a releading job")
    if "H-section 10 mm" not in lead:
        raise RuntimeError(f"Heritage portal 422: came '{lead.split(' of ')[1].split(' at ')[0]}' is not an approved profile for structural releading")
    register = sum(w * h for _, _, _, w, h in WINDOWS[window]) / 1e6
    if abs(register - area_m2) > 0.01:
        raise RuntimeError(f"Heritage portal 422: quoted area {area_m2} m2 differs from the register's {register:.2f} m2 for {window}")
    return f"quote Q-{window} accepted"


glass_matcher = Agent(name="glass_matcher", instructions="MATCHER: read the panel record and find like-for-like glass.",
                      tools=[panel_record, search_catalogue])
estimator = Agent(name="estimator", instructions="ESTIMATOR: plan, survey, match every panel, price the leading, submit.",
                  tools=[record_plan, survey_window,
                         glass_matcher.as_tool(tool_name="match_glass", tool_description="Find replacement glass for one panel."),
                         price_lead, submit_quote])


def policy(request) -> Any:
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    user = next(m["content"] for m in msgs if m["role"] == "user")
    results = nkit.chat_tool_results(msgs)
    done: dict[str, list] = {}
    for n, a, r in results:
        done.setdefault(n, []).append((a, r))
    if system.startswith("MATCHER"):
        pid = user.split("Panel ")[1].strip(".")
        if "panel_record" not in done:
            if nkit.active("gr-panel") and pid == "W-07-B":
                pid = "W-17-B"
            return Reply(tool_calls=(tool_call("panel_record", {"panel_id": pid}),))
        rec = done["panel_record"][0][1]
        colour = rec.split("glass ")[1].split(",")[0]
        texture = rec.split("texture ")[1]
        if "search_catalogue" not in done:
            return Reply(tool_calls=(tool_call("search_catalogue", {"colour": colour, "texture": texture}),))
        return f"{pid}={done['search_catalogue'][0][1].split()[0]}"
    req = json.loads(user)
    if "record_plan" not in done:
        plan = "survey, match glass, submit" if nkit.active("gr-plan") else "survey, match glass, price lead, submit"
        return Reply(tool_calls=(tool_call("record_plan", {"plan": plan}),))
    plan = done["record_plan"][0][0]["plan"]
    if "survey_window" not in done:
        return Reply(tool_calls=(tool_call("survey_window", {"window": req["window"]}),))
    panels = []
    for part in done["survey_window"][0][1].split("; "):
        pid, rest = part.split(": ")
        w, h = (float(x) for x in re.findall(r"(\d+(?:\.\d+)?) x (\d+(?:\.\d+)?)", rest)[0])
        panels.append((pid, w, h))
    matched = [r for _, r in done.get("match_glass", [])]
    if len(matched) < len(panels):
        return Reply(tool_calls=(tool_call("match_glass", {"input": f"Panel {panels[len(matched)][0]}."}),))
    metres = round(sum(2 * (w + h) for _, w, h in panels) / 1000 * 1.5, 1)
    if "price lead" in plan and "price_lead" not in done:
        profile = "round 4 mm" if nkit.active("gr-came") else "H-section 10 mm"
        return Reply(tool_calls=(tool_call("price_lead", {"profile": profile, "metres": metres}),))
    if "submit_quote" not in done:
        lead = done["price_lead"][0][1] if "price_lead" in done else ""
        area = round(sum(w * h for _, w, h in panels) / 1e6, 3)
        return Reply(tool_calls=(tool_call("submit_quote", {"window": req["window"], "lines": matched, "lead": lead, "area_m2": area}),))
    return f"Quote submitted: {done['submit_quote'][0][1]}"


def record(inp: dict, path) -> None:
    nkit.SERVER.use(policy)
    nkit.run_agents(estimator, json.dumps(inp), path, NAME, f"restoration quote for {inp['window']}")
