"""candidate_screener: screen a slate of candidates for a requisition and book interviews
(hand-built LangGraph StateGraph with a loop over candidates, a scorecard memory, and a
``reference_checker`` sub-agent built with ``create_react_agent``).

load_requisition -> per candidate: fetch_profile -> model scores -> ScorecardParser -> save_scorecard
-> reference_check (sub-agent on the top candidate) -> schedule (model calls book_interviews, the
applicant-tracking system, which re-checks every candidate against its live records).
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any, TypedDict

from fakellm import Reply, last_result, messages, system_prompt, text_of, user_text
from harness import FAULT, AgentSpec, Case
from routes import chat_model, install, invoke_graph


REQS = {
    "REQ-51": {"title": "Senior Platform Engineer", "must_have": ["Kubernetes", "Go"], "min_years": 5, "band": [150_000, 185_000]},
    "REQ-62": {"title": "Data Analyst II", "must_have": ["SQL", "Tableau"], "min_years": 2, "band": [85_000, 105_000]},
    "REQ-73": {"title": "Backend Engineer", "must_have": ["Python", "PostgreSQL"], "min_years": 3, "band": [120_000, 150_000]},
}

CANDIDATES = {
    "C-101": {"name": "Priya Shah", "skills": ["Kubernetes", "Go", "Terraform"], "years": 7, "expected_salary": 172_000, "status": "active"},
    "C-102": {"name": "Marcus Lee", "skills": ["Kubernetes", "Python"], "years": 6, "expected_salary": 160_000, "status": "active"},
    "C-103": {"name": "Elena Duarte", "skills": ["Go", "Kubernetes", "AWS"], "years": 5, "expected_salary": 168_000, "status": "active"},
    "C-104": {"name": "Tom Becker", "skills": ["Go", "Rust"], "years": 9, "expected_salary": 180_000, "status": "active"},
    "C-105": {"name": "Aisha Rahman", "skills": ["Kubernetes", "Go"], "years": 4, "expected_salary": 150_000, "status": "active"},
    "C-110": {"name": "Grace Okoye", "skills": ["Kubernetes", "Go", "Helm"], "years": 9, "expected_salary": 176_000, "status": "withdrawn", "status_date": "2026-02-03"},
    "C-201": {"name": "Luis Ortega", "skills": ["SQL", "Tableau", "Python"], "years": 4, "expected_salary": 95_000, "status": "active"},
    "C-202": {"name": "Hannah Cole", "skills": ["SQL", "Excel"], "years": 3, "expected_salary": 88_000, "status": "active"},
    "C-203": {"name": "Ben Adeyemi", "skills": ["SQL", "Tableau"], "years": 2, "expected_salary": 86_000, "status": "active"},
    "C-204": {"name": "Sofia Marin", "skills": ["SQL", "Tableau", "dbt"], "years": 6, "expected_salary": 104_000, "status": "active"},
    "C-205": {"name": "Kenji Ito", "skills": ["Tableau", "Power BI"], "years": 5, "expected_salary": 99_000, "status": "active"},
    "C-206": {"name": "Meera Kapoor", "skills": ["SQL", "Tableau"], "years": 5, "expected_salary": 101_000, "status": "active"},
    "C-301": {"name": "Omar Haddad", "skills": ["Python", "PostgreSQL", "Kafka"], "years": 6, "expected_salary": 140_000, "status": "active"},
    "C-302": {"name": "Julia Novak", "skills": ["Python", "Django"], "years": 4, "expected_salary": 125_000, "status": "active"},
    "C-303": {"name": "Wei Zhang", "skills": ["Python", "PostgreSQL"], "years": 3, "expected_salary": 122_000, "status": "active"},
}

# Profiles cached by the sourcing tool during last autumn's hiring round.
PROFILE_CACHE = {"C-110": {**CANDIDATES["C-110"], "status": "active", "cached_at": "2025-10-14"}}
PROFILE_CACHE["C-110"].pop("status_date")

# The reference-check vendor's directory (people, not candidates).
PEOPLE = {
    "P-10": {"name": "Elena Duarte", "candidate_id": "C-103", "verdict": "strong", "referees": 3},
    "P-20": {"name": "Omar Haddad", "candidate_id": "C-301", "verdict": "strong", "referees": 2},
    "P-30": {"name": "Grace Okoye", "candidate_id": "C-110", "verdict": "strong", "referees": 3},
    "P-40": {"name": "Sofia Marin", "candidate_id": "C-204", "verdict": "positive", "referees": 2},
    "P-41": {"name": "Daniel Marin", "candidate_id": None, "verdict": "mixed", "referees": 1},
    "P-50": {"name": "Tom Becker", "candidate_id": "C-104", "verdict": "positive", "referees": 2},
    "P-60": {"name": "Luis Ortega", "candidate_id": "C-201", "verdict": "positive", "referees": 2},
    "P-70": {"name": "Arjun Kapoor", "candidate_id": None, "verdict": "mixed", "referees": 2},
    "P-72": {"name": "Meera Kapoor", "candidate_id": "C-206", "verdict": "strong", "referees": 3},
    "P-88": {"name": "Rohan Shah", "candidate_id": None, "verdict": "positive", "referees": 2},
    "P-91": {"name": "Priya Shah", "candidate_id": "C-101", "verdict": "strong", "referees": 3},
}


class InterviewBookingError(Exception):
    """The applicant-tracking system refused to create interview loops."""


# -- tools --------------------------------------------------------------------------------------


def build_tools() -> dict[str, Any]:
    from langchain_core.tools import tool

    @tool
    def get_requisition(req_id: str) -> str:
        """Fetch an open requisition: title, must-have skills, minimum years, salary band."""
        FAULT.tick("get_requisition")
        return json.dumps({"req_id": req_id, **REQS[req_id]})

    @tool
    def fetch_profile(candidate_id: str) -> str:
        """Fetch a candidate's profile from the sourcing platform (cached for 30 days)."""
        FAULT.tick("fetch_profile")
        cached = PROFILE_CACHE.get(candidate_id)
        if cached is not None and FAULT.on("profile_cache_no_expiry"):
            # the 30-day freshness check compares against the cache's own clock, which never advances
            FAULT.fire_tool("fetch_profile", '"status": "active"')
            return json.dumps({"candidate_id": candidate_id, **cached})
        return json.dumps({"candidate_id": candidate_id, **CANDIDATES[candidate_id]})

    @tool
    def search_reference_contacts(surname: str) -> str:
        """Search the reference-check vendor's directory by surname."""
        FAULT.tick("search_reference_contacts")
        hits = [{"person_id": pid, "name": p["name"]} for pid, p in PEOPLE.items() if p["name"].split()[-1].lower() == surname.lower()]
        return json.dumps(hits)

    @tool
    def get_reference_report(person_id: str) -> str:
        """Fetch the completed reference report for one person in the vendor directory."""
        FAULT.tick("get_reference_report")
        p = PEOPLE[person_id]
        return json.dumps({"person_id": person_id, "name": p["name"], "verdict": p["verdict"], "referees_contacted": p["referees"]})

    @tool
    def book_interviews(req_id: str, candidates: list[dict], reference_person_id: str) -> str:
        """Create interview loops in the ATS for the shortlisted candidates (best first), attaching the
        reference report of the first one."""
        FAULT.tick("book_interviews")
        req = REQS[req_id]
        lo, hi = req["band"]
        for c in candidates:
            live = CANDIDATES[c["candidate_id"]]
            if live["status"] != "active":
                raise InterviewBookingError(
                    f"cannot schedule {live['name']} ({c['candidate_id']}): application status is '{live['status']}' since {live.get('status_date')}"
                )
            missing = [s for s in req["must_have"] if s not in live["skills"]]
            if missing:
                raise InterviewBookingError(
                    f"{c['candidate_id']} does not meet the {req['title']} bar: missing must-have {', '.join(missing)}"
                )
            if not lo <= c["expected_salary"] <= hi:
                raise InterviewBookingError(f"{c['candidate_id']} expects {c['expected_salary']:,}, outside the approved band {lo:,}-{hi:,}")
        lead = candidates[0]["candidate_id"]
        ref_for = PEOPLE[reference_person_id]["candidate_id"]
        if ref_for != lead:
            raise InterviewBookingError(
                f"reference report {reference_person_id} ({PEOPLE[reference_person_id]['name']}) does not belong to lead candidate "
                f"{lead} ({CANDIDATES[lead]['name']}); hiring-manager packet rejected"
            )
        return json.dumps({"booked": [c["candidate_id"] for c in candidates], "loop_ids": [f"IL-{req_id}-{i}" for i in range(1, len(candidates) + 1)]})

    return {"get_requisition": get_requisition, "fetch_profile": fetch_profile, "search": search_reference_contacts,
            "report": get_reference_report, "book": book_interviews}


# -- parser and memory --------------------------------------------------------------------------


def parse_scorecard(text: str) -> dict[str, Any]:
    FAULT.tick("ScorecardParser")
    m = re.search(r"```json\s*(\{.*?\})\s*```", text, flags=re.S)
    card = json.loads(m.group(1) if m else text)
    return {"candidate_id": card["candidate_id"], "score": int(card["score"]), "status": card["status"],
            "expected_salary": int(card["expected_salary"]), "matched": card.get("must_have_matched", [])}


def save_scorecard(args: dict[str, Any]) -> dict[str, Any]:
    """Write one scorecard into the shortlist memory (keyed by candidate id)."""
    FAULT.tick("save_scorecard")
    memory = dict(args["memory"])
    card, slate, i = args["card"], args["slate"], args["index"]
    key = slate[i]
    if FAULT.on("scorecard_key_lags") and i > 0:
        key = slate[i - 1]  # the key comes from the loop variable of the previous pass
        if not FAULT.fired:
            FAULT.fire_tool("save_scorecard", key, kind="other")
    memory[key] = {k: card[k] for k in ("score", "status", "expected_salary")}
    return memory


# -- the scripted models ---------------------------------------------------------------------------


def score(profile: dict[str, Any], req: dict[str, Any]) -> dict[str, Any]:
    matched = [s for s in req["must_have"] if s in profile["skills"]]
    val = round(60 * len(matched) / len(req["must_have"]) + 4 * min(profile["years"], 10))
    if profile["status"] != "active":
        val = 0
    return {"candidate_id": profile["candidate_id"], "score": val, "status": profile["status"],
            "expected_salary": profile["expected_salary"], "must_have_matched": matched}


def policy(body: dict[str, Any]) -> Reply:
    sp = system_prompt(body)
    if "reference" in sp.lower():
        return reference_policy(body)
    last = text_of(messages(body)[-1])
    if "Score this candidate" in last:
        req = json.loads(re.search(r"Requisition: (\{.*\})", last).group(1))
        prof = json.loads(re.search(r"Profile: (\{.*\})", last).group(1))
        card = score(prof, req)
        return Reply(content=f"Scorecard for {prof['name']}:\n```json\n{json.dumps(card)}\n```")
    # scheduling turn
    memory = json.loads(re.search(r"Shortlist memory: (\{.*\})", last).group(1))
    ref = json.loads(re.search(r"Reference check: (\{.*\})", last).group(1))
    req_id = re.search(r"(REQ-\d+)", last).group(1)
    ranked = sorted((kv for kv in memory.items() if kv[1]["status"] == "active"), key=lambda kv: -kv[1]["score"])[:2]
    return Reply(tool_calls=[("book_interviews", {
        "req_id": req_id,
        "candidates": [{"candidate_id": cid, "expected_salary": card["expected_salary"]} for cid, card in ranked],
        "reference_person_id": ref["person_id"],
    })])


def reference_policy(body: dict[str, Any]) -> Reply:
    ask = user_text(body)
    name = re.search(r"reference check for (.+?) \(", ask).group(1)
    hits = last_result(body, "search_reference_contacts")
    report = last_result(body, "get_reference_report")
    if hits is None:
        return Reply(tool_calls=[("search_reference_contacts", {"surname": name.split()[-1]})])
    if report is None:
        exact = [h for h in hits if h["name"] == name]
        pick = exact[0] if exact else hits[0]
        if FAULT.on("reference_first_hit") and hits[0] is not pick:
            pick = hits[0]  # takes the first directory hit for the surname
            FAULT.fire_llm(pick["person_id"])
        return Reply(tool_calls=[("get_reference_report", {"person_id": pick["person_id"]})])
    return Reply(content=json.dumps({"person_id": report["person_id"], "name": report["name"], "verdict": report["verdict"]}))


# -- graphs -----------------------------------------------------------------------------------------

SCORER = "You are a technical recruiter. Score candidates against the requisition and answer with a JSON scorecard."
SCHEDULER = "You are a recruiting coordinator. Book interview loops for the two best active candidates using book_interviews."
REFERENCE = "You are a reference-check assistant. Find the candidate in the vendor directory and summarise their reference report as JSON."


class ScreenState(TypedDict, total=False):
    req_id: str
    slate: list[str]
    requisition: dict[str, Any]
    cursor: int
    memory: dict[str, Any]
    reference: dict[str, Any]
    booking: dict[str, Any]


def build_graph() -> Any:
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.runnables import RunnableLambda
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import create_react_agent

    t = build_tools()
    scorer = chat_model("gpt-4o-mini")
    scheduler = chat_model("gpt-4o").bind_tools([t["book"]])
    parser = RunnableLambda(parse_scorecard, name="ScorecardParser")
    saver = RunnableLambda(save_scorecard, name="save_scorecard")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference_checker = create_react_agent(chat_model("gpt-4o-mini"), [t["search"], t["report"]], prompt=REFERENCE,
                                               name="reference_checker")

    def load_requisition(state: ScreenState) -> dict[str, Any]:
        return {"requisition": json.loads(t["get_requisition"].invoke({"req_id": state["req_id"]})), "cursor": 0, "memory": {}}

    def screen_candidate(state: ScreenState) -> dict[str, Any]:
        i = state["cursor"]
        profile = t["fetch_profile"].invoke({"candidate_id": state["slate"][i]})
        ai = scorer.invoke([SystemMessage(SCORER), HumanMessage(f"Score this candidate.\nRequisition: {json.dumps(state['requisition'])}\nProfile: {profile}")])
        card = parser.invoke(ai.content)
        memory = saver.invoke({"memory": state["memory"], "card": card, "slate": state["slate"], "index": i})
        return {"memory": memory, "cursor": i + 1}

    def next_step(state: ScreenState) -> str:
        return "screen_candidate" if state["cursor"] < len(state["slate"]) else "reference_check"

    def reference_check(state: ScreenState) -> dict[str, Any]:
        active = {k: v for k, v in state["memory"].items() if v["status"] == "active"}
        lead = max(active, key=lambda k: active[k]["score"])
        out = reference_checker.invoke({"messages": [HumanMessage(f"Run the reference check for {CANDIDATES[lead]['name']} ({lead}).")]})
        return {"reference": json.loads(out["messages"][-1].content)}

    def schedule(state: ScreenState) -> dict[str, Any]:
        prompt = (f"Requisition {state['req_id']} ({state['requisition']['title']}).\n"
                  f"Shortlist memory: {json.dumps(state['memory'])}\n"
                  f"Reference check: {json.dumps(state['reference'])}")
        ai = scheduler.invoke([SystemMessage(SCHEDULER), HumanMessage(prompt)])
        call = ai.tool_calls[0]
        res = t["book"].invoke({**call, "type": "tool_call"})
        return {"booking": json.loads(res.content)}

    g = StateGraph(ScreenState)
    for name, fn in (("load_requisition", load_requisition), ("screen_candidate", screen_candidate),
                     ("reference_check", reference_check), ("schedule", schedule)):
        g.add_node(name, fn)
    g.add_edge(START, "load_requisition")
    g.add_edge("load_requisition", "screen_candidate")
    g.add_conditional_edges("screen_candidate", next_step, ["screen_candidate", "reference_check"])
    g.add_edge("reference_check", "schedule")
    g.add_edge("schedule", END)
    return g.compile(name="candidate_screener")


def execute(inp: dict[str, Any], path: Path, key: str) -> str:
    install(policy)
    return invoke_graph(build_graph(), {"req_id": inp["req_id"], "slate": inp["slate"]}, path, run_name="candidate_screener", key=key)


SPEC = AgentSpec(
    name="candidate_screener",
    route="langgraph",
    domain="recruiting and candidate screening",
    summary="StateGraph: get_requisition -> loop (fetch_profile -> LLM score -> ScorecardParser -> save_scorecard) -> "
            "reference_checker sub-agent -> LLM -> book_interviews",
    execute=execute,
    passing=[
        {"req_id": "REQ-51", "slate": ["C-101", "C-102", "C-103"]},
        {"req_id": "REQ-62", "slate": ["C-201", "C-202", "C-203"]},
        {"req_id": "REQ-73", "slate": ["C-301", "C-302", "C-303"]},
        {"req_id": "REQ-51", "slate": ["C-105", "C-103", "C-104"]},
        {"req_id": "REQ-62", "slate": ["C-204", "C-201", "C-205"]},
    ],
    cases=[
        Case(
            slug="withdrawn_candidate_from_cache",
            input={"req_id": "REQ-51", "slate": ["C-110", "C-102", "C-103", "C-105"]},
            fault="profile_cache_no_expiry",
            fault_kind="stale_data",
            description="fetch_profile serves Grace Okoye's profile from last autumn's cache (status 'active'); she withdrew "
                        "in February. She scores highest, is shortlisted first, and the ATS refuses the interview loop.",
            failure="book_interviews",
            path=["ChatOpenAI", "ScorecardParser", "save_scorecard", "ChatOpenAI", "book_interviews"],
        ),
        Case(
            slug="scorecard_saved_under_previous_key",
            input={"req_id": "REQ-51", "slate": ["C-104", "C-101", "C-103"]},
            fault="scorecard_key_lags",
            fault_kind="bad_memory_write",
            description="save_scorecard keys each scorecard by the previous loop pass's candidate id: Priya Shah's 88 points "
                        "are stored under Tom Becker (C-104). The scheduler reads the memory, leads with C-104, and the ATS "
                        "refuses him for missing Kubernetes.",
            failure="book_interviews",
            path=["ChatOpenAI", "book_interviews"],
        ),
        Case(
            slug="reference_for_namesake",
            input={"req_id": "REQ-62", "slate": ["C-206", "C-202", "C-203"]},
            fault="reference_first_hit",
            fault_kind="subagent_wrong_entity",
            description="The reference_checker sub-agent's model takes the first directory hit for the surname Kapoor "
                        "(Arjun, P-70) instead of Meera; the sub-agent returns Arjun's report, the scheduler attaches it, "
                        "and the ATS rejects the packet.",
            failure="book_interviews",
            path=["get_reference_report", "ChatOpenAI", "ChatOpenAI", "book_interviews"],
        ),
    ],
)
