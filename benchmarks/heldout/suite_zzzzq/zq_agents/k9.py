"""k9-search-deployment: a search and rescue team's coordinator agent turns a missing-person report
into lost-person-behaviour rings, search segments and dog-team assignments, briefs the teams by radio
and confirms the deployment with police search control (traced with OpenTelemetry + OpenInference)."""
from __future__ import annotations

import json
import re

from .common import OtlpRecorder, client, last_user, system_text

NAME = "k9-search-deployment"
ROUTE = "otlp"
DOMAIN = "search and rescue dog section: missing-person profile to search segments and dog-team assignments"
SHAPE = "OTLP: input -> llm profile extraction -> parse -> lost-person-behaviour retriever -> wind tool -> llm plan -> segment builder -> team tool -> loop (assign + fitness tool per segment) -> memory write -> notes retriever -> llm radio brief -> confirmation check"
SWITCH = None

LPB = {"dementia": [0.8, 1.9, 3.2], "hiker": [2.0, 4.8, 8.1], "child 7-9": [0.7, 1.6, 2.9], "despondent": [0.9, 2.4, 5.0],
       "mountain biker": [3.1, 6.4, 11.0]}
TEAMS = [{"team": "K9 Bracken", "dog": "air-scent"}, {"team": "K9 Moss", "dog": "trailing"}, {"team": "K9 Skye", "dog": "air-scent"},
         {"team": "K9 Tarn", "dog": "air-scent"}, {"team": "K9 Fell", "dog": "trailing"}, {"team": "K9 Heather", "dog": "air-scent"},
         {"team": "K9 Nab", "dog": "air-scent"}]
STOOD_DOWN = {"K9 Skye": "paw injury, vet until Friday"}
NOTES = {"K9 Bracken": "Callout 0412 (last week): LKP NY 2345 0712, found at 1.2 km by K9 Bracken."}
INPUTS = [
    {"task": "missing man 81 with dementia, Keswick, LKP NY 2660 2330, 5 h", "incident": "KES-0519",
     "report": "Police request: man aged 81 with dementia walked from care home, LKP NY 2660 2330, missing 5 hours."},
    {"task": "overdue hiker Helvellyn, LKP NY 3420 1510, 9 h", "incident": "GLE-0520",
     "report": "Police request: overdue hiker aged 34, LKP NY 3420 1510 on Swirral Edge, missing 9 hours."},
    {"task": "missing child 8 Ambleside, LKP NY 3760 0440, 2 h", "incident": "AMB-0521",
     "report": "Police request: child 8 lost at campsite, LKP NY 3760 0440, missing 2 hours."},
    {"task": "despondent woman 45 Wasdale, LKP NY 1520 0680, 30 h", "incident": "WAS-0522",
     "report": "Police request: despondent woman aged 45, car found, LKP NY 1520 0680, missing 30 hours."},
    {"task": "mountain biker Whinlatter, LKP NY 2050 2440, 6 h", "incident": "WHI-0523",
     "report": "Police request: mountain biker aged 52 not returned, LKP NY 2050 2440, missing 6 hours."},
]
CASES = [
    {"id": "zq_k9_1", "input": 3, "fault_kind": "plan_error", "root": ("ChatCompletion", 2), "root_kind": "llm",
     "failure": ("confirm_deployment", 1),
     "description": "The planning model leads with trailing dogs on a 30 hour old track in Wasdale, which search control refuses past 24 hours."},
    {"id": "zq_k9_2", "input": 1, "fault_kind": "swallowed_error", "root": ("check_fitness", 4), "root_kind": "tool",
     "failure": ("confirm_deployment", 1),
     "description": "The fitness lookup for K9 Skye times out and the tool answers fit, so a dog stood down with a paw injury is assigned to a Helvellyn segment."},
    {"id": "zq_k9_3", "input": 0, "fault_kind": "bad_memory_write", "root": ("save_assignments", 1), "root_kind": "state",
     "failure": ("confirm_deployment", 1),
     "description": "The assignments saved to memory are built from one template record, so every segment carries K9 Moss and search control finds one team on four segments."},
    {"id": "zq_k9_4", "input": 4, "fault_kind": "context_pollution", "root": ("load_team_notes", 1), "root_kind": "retrieval",
     "failure": ("confirm_deployment", 1),
     "description": "The notes retriever returns K9 Bracken's notes from last week's callout, the radio brief takes that callout's grid reference NY 2345 0712 as the start point, and search control refuses it."},
    {"id": "zq_k9_5", "input": 2, "fault_kind": "off_by_one", "root": ("build_segments", 1), "root_kind": "other",
     "failure": ("confirm_deployment", 1),
     "description": "The segment builder starts from the second ring, so the 25% ring (0.7 km) around the campsite is never searched."},
]


def brain(request):
    sys_ = system_text(request)
    user = last_user(request)
    if "profile" in sys_:
        age = re.search(r"aged (\d+)|man (\d+)|child (\d+)", user)
        cat = ("dementia" if "dementia" in user else "child 7-9" if "child" in user else "despondent" if "despondent" in user
               else "mountain biker" if "biker" in user else "hiker")
        return json.dumps({"category": cat, "age": int(next(g for g in age.groups() if g)),
                           "lkp": re.search(r"NY \d{4} \d{4}", user).group(0), "hours_missing": int(re.search(r"missing (\d+) hours", user).group(1))})
    if "plan" in sys_:
        p = json.loads(user)
        dog = "trailing" if p["hours_missing"] <= 24 else "air-scent"
        if SWITCH == "zq_k9_1":
            dog = "trailing"
        return json.dumps({"lead_dog": dog, "then": "air-scent", "approach": f"work the rings from the LKP, wind {p['wind']['from']}"})
    if "radio" in sys_:
        grid = re.search(r"NY \d{4} \d{4}", user).group(0)
        return f"All K9 teams: start point {grid}. " + "; ".join(re.findall(r'"team": "([^"]+)"', user)) + " deploy."
    return "Noted."


def record(inp, server, path):
    rec = OtlpRecorder(NAME)
    try:
        _run(inp, server, rec, client(server))
    finally:
        rec.write(path)


def _run(inp, server, rec, llm):
    memory = {}

    def chat(system, payload):
        return llm.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": payload}]).choices[0].message.content

    with rec.instrumented(), rec.step(NAME, "agent", input=inp["task"], metadata={"task": inp["task"]}):
        with rec.step("intake_report", "input", input=inp["report"]) as s:
            s.output = report = inp["report"]
        raw = chat("You extract the missing person profile as JSON.", report)
        with rec.step("parse_profile", "parse", input=raw) as s:
            s.output = profile = json.loads(raw)
        with rec.step("lpb_lookup", "retrieval", input={"category": profile["category"]}) as s:
            s.output = rings = {"category": profile["category"], "rings_km": LPB[profile["category"]], "percentiles": [25, 50, 75]}
        with rec.step("get_wind", "tool", input={"grid": profile["lkp"]}) as s:
            s.output = wind = {"from": "SW", "speed_mph": 9}
        plan = json.loads(chat("You plan the dog search as JSON.", json.dumps({**profile, "wind": wind})))
        with rec.step("build_segments", "other", input={"rings": rings, "plan": plan}) as s:
            radii = rings["rings_km"]
            start = 1 if SWITCH == "zq_k9_5" else 0
            inner = [0.0] + radii
            segs = []
            for i in range(start, len(radii)):
                for half in (("N", "S") if i == 0 else ("",)):
                    segs.append({"segment": f"R{i + 1}{half}", "from_km": inner[i], "to_km": radii[i],
                                 "dog": plan["lead_dog"] if i == 0 else plan["then"]})
            s.output = segs
        with rec.step("list_teams", "tool", input={"incident": inp["incident"]}) as s:
            s.output = teams = [dict(t) for t in TEAMS]
        assignments = []
        used = set()
        for seg in segs:
            with rec.step("assign_team", "other", input={"segment": seg, "used": sorted(used)}) as s:
                pool = [t for t in teams if t["team"] not in used and t["dog"] == seg["dog"]] or \
                       [t for t in teams if t["team"] not in used]
                s.output = pick = {**seg, "team": pool[0]["team"], "dog": pool[0]["dog"]}
            with rec.step("check_fitness", "tool", input={"team": pick["team"]}) as s:
                try:
                    if SWITCH == "zq_k9_2" and pick["team"] in STOOD_DOWN:
                        raise TimeoutError("team register timed out")
                    status = {"team": pick["team"], "fit": pick["team"] not in STOOD_DOWN,
                              "note": STOOD_DOWN.get(pick["team"], "")}
                except TimeoutError:
                    status = {"team": pick["team"], "fit": True, "note": ""}
                s.output = status
            used.add(pick["team"])
            if status["fit"]:
                assignments.append(pick)
            else:
                with rec.step("assign_team", "other", input={"segment": seg, "used": sorted(used)}) as s:
                    pool = [t for t in teams if t["team"] not in used and t["dog"] == seg["dog"]] or \
                           [t for t in teams if t["team"] not in used]
                    s.output = pick = {**seg, "team": pool[0]["team"], "dog": pool[0]["dog"]}
                used.add(pick["team"])
                assignments.append(pick)
        with rec.step("save_assignments", "state", input=assignments) as s:
            if SWITCH == "zq_k9_3":
                base = dict(assignments[0])
                memory["assignments"] = [dict(base, segment=a["segment"], from_km=a["from_km"], to_km=a["to_km"]) for a in assignments]
            else:
                memory["assignments"] = [dict(a) for a in assignments]
            s.output = memory["assignments"]
        with rec.step("load_team_notes", "retrieval", input={"incident": inp["incident"]}) as s:
            notes = [f"{inp['incident']}: {t['team']} briefed" for t in memory["assignments"][:1]]
            if SWITCH == "zq_k9_4":
                notes = [NOTES[t["team"]] for t in memory["assignments"] if t["team"] in NOTES] + notes
            s.output = notes
        brief = chat("You write the radio brief for the K9 teams.",
                     "\n".join(notes) + "\n" + json.dumps({"lkp": profile["lkp"], "assignments": memory["assignments"]}))
        with rec.step("confirm_deployment", "tool", input={"assignments": memory["assignments"], "brief": brief}) as s:
            a = memory["assignments"]
            hours = int(re.search(r"missing (\d+) hours", inp["report"]).group(1))
            teams_used = [x["team"] for x in a]
            dup = {t for t in teams_used if teams_used.count(t) > 1}
            if dup:
                raise RuntimeError(f"search control refused: {', '.join(sorted(dup))} assigned to {teams_used.count(sorted(dup)[0])} segments")
            if hours > 24 and any(x["dog"] == "trailing" for x in a):
                raise RuntimeError(f"search control refused: trailing dog on a {hours} h old track (limit 24 h)")
            down = [x["team"] for x in a if x["team"] in STOOD_DOWN]
            if down:
                raise RuntimeError(f"search control refused: {down[0]} is stood down ({STOOD_DOWN[down[0]]})")
            first = LPB[next(c for c in LPB if c == json.loads(raw)["category"])][0]
            if not any(x["from_km"] == 0.0 for x in a):
                raise RuntimeError(f"search control refused: the 25% ring ({first} km) around the LKP has no team")
            lkp = re.search(r"NY \d{4} \d{4}", inp["report"]).group(0)
            if lkp not in brief.split("start point ")[1][:13]:
                raise RuntimeError(f"search control refused: brief start point {brief.split('start point ')[1][:12]} is not the LKP {lkp}")
            s.output = {"status": "confirmed", "teams": teams_used}
