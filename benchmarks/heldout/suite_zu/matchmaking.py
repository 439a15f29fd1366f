"""Matchmaking agency (openai_agents): a coordinator shortlists candidates with a compatibility analyst agent-as-tool."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agents import Agent, function_tool
from agents.exceptions import AgentsException

from .common import Case, register_policy
from .kit import active
from .agutil import model, run

AGENT, ROUTE, DOMAIN, EXT = "matchmaking_coordinator", "openai_agents", "matchmaking agency", "jsonl"
SHAPE = "coordinator loop: profile -> recall notes -> search -> compatibility analyst (agent as tool, top 2 candidates, 2 lookups each) -> save shortlist -> read shortlist -> availability -> propose introduction"

CLIENTS = {
    "C-118": {"name": "Maya", "age": 34, "city": "Leicester", "range": [30, 38], "dealbreakers": ["smoking"], "seeks": "M"},
    "C-131": {"name": "Owen", "age": 41, "city": "Derby", "range": [36, 45], "dealbreakers": ["no pets"], "seeks": "F"},
    "C-140": {"name": "Priya", "age": 29, "city": "Leicester", "range": [27, 35], "dealbreakers": [], "seeks": "M"},
    "C-152": {"name": "Sam", "age": 38, "city": "Derby", "range": [33, 42], "dealbreakers": ["smoking"], "seeks": "F"},
    "C-163": {"name": "Lena", "age": 45, "city": "Leicester", "range": [40, 52], "dealbreakers": [], "seeks": "M"},
    "C-177": {"name": "Marcus", "age": 32, "city": "Derby", "range": [28, 36], "dealbreakers": ["smoking"], "seeks": "F"},
}
PEOPLE = {
    "C-207": {"age": 36, "sex": "M", "city": "Leicester", "smoker": True, "pets": True, "interests": ["climbing", "jazz"]},
    "C-214": {"age": 33, "sex": "M", "city": "Leicester", "smoker": False, "pets": False, "interests": ["jazz", "cooking"]},
    "C-222": {"age": 37, "sex": "M", "city": "Leicester", "smoker": False, "pets": True, "interests": ["running"]},
    "C-270": {"age": 35, "sex": "M", "city": "Leicester", "smoker": False, "pets": True, "interests": ["climbing", "jazz", "cooking"]},
    "C-233": {"age": 51, "sex": "M", "city": "Leicester", "smoker": False, "pets": False, "interests": ["jazz", "cooking", "climbing"]},
    "C-301": {"age": 39, "sex": "F", "city": "Derby", "smoker": False, "pets": True, "interests": ["hiking", "film"]},
    "C-305": {"age": 43, "sex": "F", "city": "Derby", "smoker": True, "pets": True, "interests": ["film"]},
    "C-318": {"age": 35, "sex": "F", "city": "Derby", "smoker": False, "pets": False, "interests": ["hiking"]},
    "C-322": {"age": 30, "sex": "F", "city": "Derby", "smoker": False, "pets": True, "interests": ["hiking", "film", "cooking"]},
    "C-327": {"age": 42, "sex": "M", "city": "Leicester", "smoker": False, "pets": True, "interests": ["cooking"]},
    "C-333": {"age": 28, "sex": "M", "city": "Leicester", "smoker": False, "pets": False, "interests": ["film", "jazz"]},
}
INTERESTS = {"C-118": ["climbing", "jazz", "cooking"], "C-131": ["hiking", "film"], "C-140": ["film", "jazz"],
             "C-152": ["hiking", "cooking"], "C-163": ["cooking", "jazz"], "C-177": ["film", "hiking"]}
INPUTS = {
    "maya": "Find an introduction for member C-118 this month.",
    "owen": "Find an introduction for member C-131 this month.",
    "r1": "Find an introduction for member C-140 this month.",
    "r2": "Find an introduction for member C-152 this month.",
    "r3": "Find an introduction for member C-163 this month.",
    "r4": "Find an introduction for member C-177 this month.",
}
REFS = ["r1", "r2", "r3", "r4"]
SHORTLIST: dict[str, list] = {}

CASES = [
    Case("zu_match_01", "match.analyst_entity", "subagent_wrong_entity", "maya", "generation gpt-4o-mini", 5, "llm", "propose_introduction", 1,
         "The compatibility analyst looks up candidate C-270 when asked about C-207, so a smoker is scored as a non-smoker."),
    Case("zu_match_02", "match.shared_notes", "context_pollution", "maya", "recall_notes", 1, "tool", "propose_introduction", 1,
         "The notes recall returns another member's age preference, which the coordinator then uses as the search range."),
    Case("zu_match_03", "match.swap_ids", "wrong_tool_args", "owen", "generation gpt-4o-mini", 15, "llm", "propose_introduction", 1,
         "The coordinator's last call passes the candidate id as the member and the member id as the candidate."),
    Case("zu_match_04", "match.shortlist_order", "bad_memory_write", "owen", "save_shortlist", 1, "tool", "propose_introduction", 1,
         "The shortlist memory is written in ascending score order, so the read-back puts the weakest candidate first."),
    Case("zu_match_05", "match.date_format", "format_drift", "maya", "check_availability", 1, "tool", "propose_introduction", 1,
         "The availability service answers the date as DD/MM/YYYY and it is copied into the proposal, which the API rejects."),
]


def _tool_msgs(msgs: list[dict]) -> list[Any]:
    out = []
    for m in msgs:
        if m.get("role") == "tool":
            try:
                out.append(json.loads(m["content"]))
            except (json.JSONDecodeError, TypeError):
                out.append(m["content"])
    return out


def _coordinator(body: dict) -> Any:
    from trajdebug.testing import Reply, tool_call

    msgs = body["messages"]
    client_id = re.search(r"C-\d+", msgs[1]["content"]).group(0)
    res = _tool_msgs(msgs)
    n = len(res)
    if n == 0:
        return Reply(tool_calls=(tool_call("load_client_profile", {"client_id": client_id}),))
    profile = res[0]
    if n == 1:
        return Reply(tool_calls=(tool_call("recall_notes", {"client_id": client_id}),))
    if n == 2:
        lo, hi = profile["range"]
        for note in res[1]["notes"]:
            m = re.search(r"age (\d+)-(\d+)", note)
            if m:
                lo, hi = int(m.group(1)), int(m.group(2))
        return Reply(tool_calls=(tool_call("search_candidates", {"city": profile["city"], "sex": profile["seeks"], "age_min": lo, "age_max": hi}),))
    cands = res[2]["candidates"][:2]
    if n < 3 + len(cands):
        c = cands[n - 3]
        return Reply(tool_calls=(tool_call("compat_analyst", {"input": f"Score candidate {c} for member {client_id}."}),))
    if n == 3 + len(cands):
        scores = []
        for c, r in zip(cands, res[3:3 + len(cands)]):
            scores.append({"candidate": c, "score": int(re.search(r"SCORE (\d+)", str(r)).group(1))})
        return Reply(tool_calls=(tool_call("save_shortlist", {"client_id": client_id, "entries": json.dumps(scores)}),))
    if n == 4 + len(cands):
        return Reply(tool_calls=(tool_call("read_shortlist", {"client_id": client_id}),))
    top = res[4 + len(cands)]["entries"][0]["candidate"]
    if n == 5 + len(cands):
        return Reply(tool_calls=(tool_call("check_availability", {"client_id": client_id, "candidate_id": top}),))
    if n == 6 + len(cands):
        date = res[-1]["first_free"]
        a, b = (top, client_id) if active("match.swap_ids") else (client_id, top)
        return Reply(tool_calls=(tool_call("propose_introduction", {"client_id": a, "candidate_id": b, "date": date, "venue": "Quarter Café"}),))
    return f"Introduction proposed: {res[-1]}"


def _analyst(body: dict) -> Any:
    from trajdebug.testing import Reply, tool_call

    msgs = body["messages"]
    user = next(m["content"] for m in msgs if m.get("role") == "user")
    cand, client = re.findall(r"C-\d+", user)[:2]
    res = _tool_msgs(msgs)
    if not res:
        look = "C-270" if (cand == "C-207" and active("match.analyst_entity")) else cand
        return Reply(tool_calls=(tool_call("get_preferences", {"person_id": look}),))
    if len(res) == 1:
        return Reply(tool_calls=(tool_call("get_preferences", {"person_id": client}),))
    p, c = res[0], res[1]
    if ("smoking" in c["dealbreakers"] and p["smoker"]) or ("no pets" in c["dealbreakers"] and not p["pets"]):
        return f"SCORE 0 for {cand}: dealbreaker"
    shared = len(set(p["interests"]) & set(c["interests"]))
    return f"SCORE {40 + 20 * shared} for {cand}"


def _policy(body: dict) -> Any:
    system = body["messages"][0]["content"]
    return _analyst(body) if system.startswith("[matchcompat]") else _coordinator(body)


register_policy("matchmaker", _policy)
register_policy("matchcompat", _policy)


@function_tool
def load_client_profile(client_id: str) -> str:
    """The member's profile."""
    return json.dumps({"client_id": client_id, **CLIENTS[client_id]})


@function_tool
def recall_notes(client_id: str) -> str:
    """Consultant notes kept for the member."""
    notes = [f"{client_id}: prefers quiet venues"]
    if active("match.shared_notes"):
        notes.append("C-163: wants age 45-55, cooking a must")
    return json.dumps({"notes": notes})


@function_tool
def search_candidates(city: str, sex: str, age_min: int, age_max: int) -> str:
    """Active candidates in a city and age range."""
    ids = sorted(i for i, p in PEOPLE.items() if p["city"] == city and p["sex"] == sex and age_min <= p["age"] <= age_max)
    return json.dumps({"candidates": ids})


@function_tool
def get_preferences(person_id: str) -> str:
    """A person's preferences and dealbreakers."""
    if person_id in CLIENTS:
        c = CLIENTS[person_id]
        return json.dumps({"person_id": person_id, "dealbreakers": c["dealbreakers"], "interests": INTERESTS[person_id]})
    return json.dumps({"person_id": person_id, **PEOPLE[person_id]})


@function_tool
def save_shortlist(client_id: str, entries: str) -> str:
    """Store the member's shortlist, best first."""
    rows = json.loads(entries)
    rows.sort(key=lambda r: (r["score"], r["candidate"]), reverse=not active("match.shortlist_order"))
    SHORTLIST[client_id] = rows
    return json.dumps({"saved": len(rows)})


@function_tool
def read_shortlist(client_id: str) -> str:
    """The member's stored shortlist."""
    return json.dumps({"entries": SHORTLIST[client_id]})


@function_tool
def check_availability(client_id: str, candidate_id: str) -> str:
    """First evening both are free."""
    if active("match.date_format"):
        return json.dumps({"first_free": "19/03/2026", "slot": "19:30"})
    return json.dumps({"first_free": "2026-03-19", "slot": "19:30"})


@function_tool(failure_error_function=None)
def propose_introduction(client_id: str, candidate_id: str, date: str, venue: str) -> str:
    """Send the introduction proposal to both members."""
    if client_id not in CLIENTS:
        raise ValueError(f"HTTP 422 introductions API: client_id {client_id} is not a member account")
    c, p = CLIENTS[client_id], PEOPLE[candidate_id]
    if not re.fullmatch(r"\d{4}-\d\d-\d\d", date):
        raise ValueError(f"HTTP 422 introductions API: date '{date}' is not an ISO 8601 date")
    if not c["range"][0] <= p["age"] <= c["range"][1]:
        raise ValueError(f"HTTP 409 introductions API: candidate {candidate_id} age {p['age']} outside member range {c['range'][0]}-{c['range'][1]}")
    if "smoking" in c["dealbreakers"] and p["smoker"]:
        raise ValueError(f"HTTP 409 introductions API: candidate {candidate_id} smokes; member {client_id} lists smoking as a dealbreaker")
    best = max(SHORTLIST[client_id], key=lambda r: r["score"])
    mine = next(r for r in SHORTLIST[client_id] if r["candidate"] == candidate_id)
    if mine["score"] < best["score"]:
        raise ValueError(f"HTTP 409 introductions API: candidate {candidate_id} scored {mine['score']}, shortlist has {best['candidate']} at {best['score']}")
    return json.dumps({"introduction": f"INT-{client_id[2:]}-{candidate_id[2:]}", "date": date, "venue": venue})


_AGENT = None


def _build():
    analyst = Agent(name="compat_analyst_model", instructions="[matchcompat] Score one candidate for one member. Look up both.",
                    model=model(), tools=[get_preferences])
    return Agent(name="coordinator_model", instructions="[matchmaker] Find the best introduction for the member.", model=model(),
                 tools=[load_client_profile, recall_notes, search_candidates,
                        analyst.as_tool(tool_name="compat_analyst", tool_description="Score a candidate for a member."),
                        save_shortlist, read_shortlist, check_availability, propose_introduction])


def record(key: str, path: Path) -> None:
    global _AGENT
    _AGENT = _AGENT or _build()
    SHORTLIST.clear()
    run(_AGENT, INPUTS[key], path, AGENT, (ValueError, AgentsException))
