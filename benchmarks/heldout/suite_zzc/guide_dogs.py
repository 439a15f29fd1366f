"""Guide dog training: client intake, assessment plan, candidate dog loop, vet clearance, match certification (sdk)."""

from __future__ import annotations

import json
from pathlib import Path

from openai import OpenAI

import trajdebug

from .common import Case, brain, last_user
from .kit import active

NAME = "guide-dog-matcher"
ROUTE = "sdk"
DOMAIN = "guide dog training"
SHAPE = "client intake, LLM assessment plan, per-dog record/parse/check loop, vet clearance, case notes, LLM summary, certify"

CLIENTS = {
    "CL-208": {"name": "Maren Holt", "walk_speed": "fast", "route": "city", "height_cm": 181, "address": "14 Quay Street"},
    "CL-215": {"name": "Idris Fenn", "walk_speed": "steady", "route": "suburban", "height_cm": 164, "address": "3 Larch Close"},
    "CL-190": {"name": "Ruth Okafor", "walk_speed": "steady", "route": "rural", "height_cm": 170, "address": "Brook Farm"},
    "CL-196": {"name": "Tomas Vidal", "walk_speed": "fast", "route": "suburban", "height_cm": 176, "address": "9 Mill Row"},
    "CL-201": {"name": "Aiko Brandt", "walk_speed": "slow", "route": "city", "height_cm": 158, "address": "22 Dock Lane"},
    "CL-204": {"name": "Paul Greer", "walk_speed": "steady", "route": "city", "height_cm": 188, "address": "5 Tower Yard"},
}
OLD_ADDRESS = {"CL-208": "7 Hill Terrace", "CL-215": "41 Station Road"}
DOGS = {
    "Bramble": "dog=Bramble;breed=Labrador;hours=1,240;pace=fast;traffic=pass;height_cm=58",
    "Juniper": "dog=Juniper;breed=Golden Retriever;hours=1,105;pace=steady;traffic=pass;height_cm=56",
    "Pepper": "dog=Pepper;breed=Labrador x Golden;hours=980;pace=steady;traffic=pass;height_cm=55",
    "Quill": "dog=Quill;breed=German Shepherd;hours=1,320;pace=fast;traffic=pass;height_cm=62",
}
VET = {"Bramble": "2026-11-18", "Juniper": "2026-11-02", "Pepper": "2026-10-21", "Quill": "2026-11-25"}
INPUTS = {k: {"client": k} for k in CLIENTS}
REFS = ["CL-190", "CL-196", "CL-201", "CL-204"]

CASES = [
    Case("gd_old_address", "gd1", "stale_data", "CL-208", ("get_client_profile", 1, "tool"),
         ("certify_match", 1),
         "The client profile comes from the pre-move cache, so the home route is planned from the old address."),
    Case("gd_hours_comma", "gd2", "lossy_parsing", "CL-215", ("parse_training_log", 1, "parse"),
         ("check_training_hours", 1),
         "parse_training_log cuts Bramble's '1,240' at the comma, so the logged hours read as 1."),
    Case("gd_plan_skips_traffic", "gd3", "plan_error", "CL-208", ("plan_assessments", 1, "llm"),
         ("certify_match", 1),
         "The assessment plan for a city client leaves out the traffic assessment the standard requires."),
    Case("gd_vet_lookup_timeout", "gd4", "swallowed_error", "CL-215", ("fetch_vet_clearance", 2, "tool"),
         ("verify_health", 2),
         "The vet system times out for Juniper and the tool returns an empty clearance instead of raising."),
    Case("gd_notes_other_client", "gd5", "context_pollution", "CL-208", ("load_case_notes", 1, "state"),
         ("certify_match", 1),
         "load_case_notes appends the previous client's notes, so the match summary names Idris Fenn's route."),
]


@brain("gd")
def _brain(body: dict) -> str:
    req = json.loads(last_user(body))
    if req["ask"] == "plan":
        plan = ["obedience", "pace_match", "height_match"]
        if req["route"] in ("city", "suburban"):
            plan.append("traffic")
        if active("gd3"):
            plan = [p for p in plan if p != "traffic"]
        return json.dumps({"assessments": plan, "candidates": ["Bramble", "Juniper", "Quill"]
                           if req["walk_speed"] == "fast" else ["Bramble", "Juniper", "Pepper"]})
    if req["ask"] == "rank":
        best = sorted(req["scores"], key=lambda d: (-req["scores"][d], d))[0]
        return json.dumps({"dog": best})
    notes = req["notes"]
    return json.dumps({"summary": f"{req['dog']} for {notes[-1]['client']}: route {notes[-1]['route']}",
                       "route": notes[-1]["route"], "client": notes[-1]["client"]})


def _chat(client: OpenAI, payload: dict) -> str:
    r = client.chat.completions.create(model="fake-model", messages=[
        {"role": "system", "content": "[agent:gd] You are a guide dog mobility instructor. Answer JSON."},
        {"role": "user", "content": json.dumps(payload)}])
    return r.choices[0].message.content


@trajdebug.step(kind="input")
def receive_application(app: dict) -> dict:
    return dict(app)


@trajdebug.step(kind="tool")
def get_client_profile(client_id: str) -> dict:
    prof = dict(CLIENTS[client_id])
    if active("gd1"):
        prof["address"] = OLD_ADDRESS[client_id]
    return {"client": client_id, **prof}


@trajdebug.step(kind="llm")
def plan_assessments(client: OpenAI, profile: dict) -> dict:
    return json.loads(_chat(client, {"ask": "plan", **profile}))


@trajdebug.step(kind="tool")
def get_dog_record(dog: str) -> str:
    return DOGS[dog]


@trajdebug.step(kind="parse")
def parse_training_log(text: str) -> dict:
    f = dict(kv.split("=") for kv in text.split(";"))
    hours = int(f["hours"].replace(",", ""))
    if active("gd2"):
        hours = int(f["hours"].split(",")[0])
    return {"dog": f["dog"], "hours": hours, "pace": f["pace"], "traffic": f["traffic"], "height_cm": int(f["height_cm"])}


@trajdebug.step(kind="condition")
def check_training_hours(rec: dict) -> bool:
    if rec["hours"] < 900:
        raise ValueError(f"training standard GD-4: {rec['dog']} logged {rec['hours']} h, minimum 900 h")
    return True


@trajdebug.step(kind="tool")
def fetch_vet_clearance(dog: str) -> dict:
    try:
        if dog == "Juniper" and active("gd4"):
            raise TimeoutError("vet records system did not answer in 10 s")
        return {"dog": dog, "cleared_on": VET[dog], "vet": "Dr. Anand"}
    except TimeoutError:
        return {"dog": dog}


@trajdebug.step(kind="condition")
def verify_health(clearance: dict) -> bool:
    if "cleared_on" not in clearance:
        raise KeyError(f"vet clearance for {clearance['dog']} has no 'cleared_on' date")
    return True


@trajdebug.step(kind="other")
def score_dog(rec: dict, profile: dict, plan: dict) -> float:
    s = 1.0 if rec["pace"] == profile["walk_speed"] else 0.5
    return round(s + rec["hours"] / 10000.0, 4)


@trajdebug.step(kind="llm")
def rank_candidates(client: OpenAI, scores: dict) -> dict:
    return json.loads(_chat(client, {"ask": "rank", "scores": scores}))


@trajdebug.step(kind="tool")
def plan_home_route(address: str) -> dict:
    return {"from": address, "legs": 4, "crossings": 3}


@trajdebug.step(kind="state")
def load_case_notes(profile: dict) -> list:
    run = trajdebug.current_run()
    notes = [{"client": profile["name"], "route": profile["route"]}]
    if active("gd5"):
        notes.append({"client": "Idris Fenn", "route": "suburban"})
    run.state["case_notes"] = notes
    return notes


@trajdebug.step(kind="llm")
def write_match_summary(client: OpenAI, dog: str, notes: list) -> dict:
    return json.loads(_chat(client, {"ask": "summary", "dog": dog, "notes": notes}))


@trajdebug.step(kind="tool")
def certify_match(profile: dict, plan: dict, dog: str, route: dict, summary: dict) -> dict:
    errs = []
    if profile["route"] in ("city", "suburban") and "traffic" not in plan["assessments"]:
        errs.append(f"{profile['route']} placement for {dog} lacks the mandatory traffic assessment")
    if route["from"] != CLIENTS[profile["client"]]["address"]:
        errs.append(f"home route starts at {route['from']}, client's registered address is "
                    f"{CLIENTS[profile['client']]['address']}")
    if summary["client"] != profile["name"] or summary["route"] != profile["route"]:
        errs.append(f"match summary names {summary['client']} ({summary['route']}), case is {profile['name']}")
    if errs:
        raise ValueError("placement board: certification refused: " + "; ".join(errs))
    return {"certificate": f"GDM-{profile['client']}-{dog}"}


def record(inp: dict, path: Path, server) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(NAME, task=f"match a guide dog for {inp['client']}", path=str(path)):
            app = receive_application(inp)
            profile = get_client_profile(app["client"])
            plan = plan_assessments(client, profile)
            scores = {}
            with trajdebug.step("assess_candidates", kind="agent", input=plan) as loop:
                for dog in plan["candidates"]:
                    rec = parse_training_log(get_dog_record(dog))
                    check_training_hours(rec)
                    verify_health(fetch_vet_clearance(dog))
                    scores[dog] = score_dog(rec, profile, plan)
                loop.output = scores
            pick = rank_candidates(client, scores)
            route = plan_home_route(profile["address"])
            notes = load_case_notes(profile)
            summary = write_match_summary(client, pick["dog"], notes)
            certify_match(profile, plan, pick["dog"], route, summary)
    except (ValueError, KeyError):
        pass
