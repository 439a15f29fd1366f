"""Ski jumping competition: scores a round and publishes the official results (LangGraph)."""

from __future__ import annotations

import json
import operator
import re
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from . import kit
from .common import Case, base_url, run_graph

AGENT, ROUTE, DOMAIN = "ski_jumping", "langgraph", "ski jumping competition"
RUN_NAME, MODEL = "ski-jump-results", "race-office-3"
SHAPE = "start list (tool) -> round router (llm) -> loop per jumper: jump data (tool), judges (llm), parse, points -> committee sub-graph -> rank -> results sheet (llm) -> publish (tool)"

HILLS = {"HS130": (116, 1.8, 8.0, 7.0), "HS137": (120, 1.8, 8.5, 7.4), "HS147": (130, 1.8, 9.0, 7.9),
         "HS140": (125, 1.8, 8.7, 7.6), "HS100": (90, 2.0, 7.0, 5.6)}
NAMES = ["Kobayashi R.", "Kraft S.", "Granerud H.E.", "Lanisek A.", "Geiger K.", "Wellinger A.", "Zajc T.",
         "Kubacki D.", "Tande D.A.", "Hoerl J.", "Eisenbichler M.", "Stoch K."]
EVENTS = {
    "lahti": {"event": "FIS WC Lahti, men's large hill", "hill": "HS130", "small_hill": "HS100", "gate": 12, "offset": 0},
    "oberstdorf": {"event": "FIS WC Oberstdorf, men's large hill", "hill": "HS137", "small_hill": "HS100", "gate": 14, "offset": 3},
    "willingen": {"event": "FIS WC Willingen, men's large hill", "hill": "HS147", "small_hill": "HS100", "gate": 10, "offset": 5},
    "zakopane": {"event": "FIS WC Zakopane, men's large hill", "hill": "HS140", "small_hill": "HS100", "gate": 16, "offset": 7},
    "engelberg": {"event": "FIS WC Engelberg, men's large hill", "hill": "HS140", "small_hill": "HS100", "gate": 11, "offset": 2},
    "klingenthal": {"event": "FIS WC Klingenthal, men's large hill", "hill": "HS140", "small_hill": "HS100", "gate": 13, "offset": 6},
}
INPUTS = EVENTS
REFS = ["willingen", "zakopane", "engelberg", "klingenthal"]

CASES = [
    Case("zx_ski_1", "ski.wind_units", "unit_error", "lahti", ("compute_points", 1, "other"),
         ("publish_results", 1), "compute_points multiplies the wind in m/s by 3.6 before applying the wind factor."),
    Case("zx_ski_2", "ski.totals_locale", "format_drift", "oberstdorf", ("ChatOpenAI", 8, "llm"),
         ("publish_results", 1), "The results-sheet model writes totals as text with decimal commas instead of numbers."),
    Case("zx_ski_3", "ski.round_router", "wrong_routing", "lahti", ("ChatOpenAI", 1, "llm"),
         ("publish_results", 1), "The round router model sends a competition round down the trial-round path, which skips the judges."),
    Case("zx_ski_4", "ski.committee_hill", "subagent_wrong_entity", "oberstdorf", ("brief_committee", 1, "other"),
         ("publish_results", 1), "brief_committee asks the wind and gate committee about the venue's small hill instead of the competition hill."),
    Case("zx_ski_5", "ski.start_page", "truncated_result", "lahti", ("fetch_start_list", 1, "tool"),
         ("publish_results", 1), "fetch_start_list returns only the first page of four jumpers out of five registered."),
]


def _jumps(ev: dict) -> list[dict]:
    k = HILLS[ev["hill"]][0]
    out = []
    for i in range(5):
        n = (i * 7 + ev["offset"] * 3) % 11
        out.append({"bib": i + 1, "name": NAMES[(i + ev["offset"]) % len(NAMES)], "distance_m": k + n * 1.5 - 4,
                    "wind_ms": round((n % 5 - 2) * 0.31, 2), "gate": ev["gate"], "landing": ["telemark", "two-footed", "telemark", "touch"][n % 4]})
    return out


def _marks(landing: str) -> list[float]:
    return {"telemark": [18.5, 18.0, 18.5, 18.0, 19.0], "two-footed": [17.0, 17.5, 17.0, 16.5, 17.0],
            "touch": [15.0, 15.5, 14.5, 15.0, 15.0]}[landing]


def _points(ev: dict, jump: dict, marks: list[float], wind_scale: float = 1.0) -> float:
    k, meter, wind_f, _gate_f = HILLS[ev["hill"]]
    style = sum(sorted(marks)[1:-1]) if len(marks) == 5 else sum(marks)
    return round(60 + (jump["distance_m"] - k) * meter + style - jump["wind_ms"] * wind_scale * wind_f, 1)


@tool
def fetch_start_list(event: str) -> str:
    """The registered start list of a round, as JSON."""
    ev = next(e for e in EVENTS.values() if e["event"] == event)
    entries = [{"bib": j["bib"], "name": j["name"]} for j in _jumps(ev)]
    if kit.active("ski.start_page"):
        entries = entries[:4]
    return json.dumps({"event": event, "entries": entries})


@tool
def fetch_jump_data(event: str, bib: int) -> str:
    """Distance, wind and gate of one jump from the measuring system."""
    ev = next(e for e in EVENTS.values() if e["event"] == event)
    return json.dumps(_jumps(ev)[bib - 1])


@tool
def hill_certificate(hill: str) -> str:
    """The hill certificate with K-point and factors."""
    k, meter, wind_f, gate_f = HILLS[hill]
    return json.dumps({"certificate": f"HC-{hill}", "hill": hill, "k_point": k, "meter_value": meter,
                       "wind_factor": wind_f, "gate_factor": gate_f})


@tool
def publish_results(event: str, round_type: str, certificate: str, results: str) -> str:
    """Publish the official round results to the results service."""
    ev = next(e for e in EVENTS.values() if e["event"] == event)
    rows = json.loads(results)
    official = {j["bib"]: _points(ev, j, _marks(j["landing"])) for j in _jumps(ev)}
    if round_type != "competition":
        raise ValueError(f"HTTP 409: round type '{round_type}' cannot be published as official results for {event}")
    if json.loads(certificate)["hill"] != ev["hill"]:
        raise ValueError(f"HTTP 422: certificate {json.loads(certificate)['certificate']} does not belong to hill "
                         f"{ev['hill']} of {event}")
    if len(rows) != len(official):
        missing = sorted(set(official) - {r["bib"] for r in rows})
        raise ValueError(f"HTTP 422: results list {len(rows)} jumpers, timing system registered {len(official)} "
                         f"(bib {', '.join(map(str, missing))} missing)")
    for r in rows:
        if r.get("style") is None:
            raise ValueError(f"HTTP 422: bib {r['bib']} has no judges' marks")
        if not isinstance(r["total"], (int, float)):
            raise ValueError(f"HTTP 422: field 'total' of bib {r['bib']} must be a number, got {r['total']!r}")
        if abs(r["total"] - official[r["bib"]]) > 0.05:
            raise ValueError(f"HTTP 422: total for bib {r['bib']} ({r['name']}) {r['total']} differs from the timing "
                             f"system's {official[r['bib']]}")
    return json.dumps({"published": True, "event": event, "rows": len(rows)})


def parse_marks(text: str) -> dict:
    try:
        return {"marks": [float(x) for x in json.loads(text)["marks"]]}
    except (ValueError, KeyError, TypeError):
        m = re.search(r"\d+(?:\.\d+)?", text)
        return {"marks": [float(m.group())] if m else []}


class State(TypedDict, total=False):
    event: str
    hill: str
    small_hill: str
    entries: list
    round_type: str
    idx: int
    jump: dict
    marks: list
    results: Annotated[list, operator.add]
    committee_request: dict
    certificate: str
    ranking: list
    receipt: str


class CommitteeState(TypedDict, total=False):
    committee_request: dict
    certificate: str


def policy(messages: list[dict]) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("You are the race director"):
        return "trial" if kit.active("ski.round_router") else "competition"
    if system.startswith("You are the judges' scribe"):
        jump = json.loads(user.split("JUMP:", 1)[1])
        marks = _marks(jump["landing"])
        return json.dumps({"bib": jump["bib"], "marks": marks})
    if system.startswith("You prepare the results sheet"):
        rows = json.loads(user.split("RANKING:", 1)[1])
        out = [{"rank": i + 1, "bib": r["bib"], "name": r["name"], "distance_m": r["distance_m"], "style": r["style"],
                "total": (f"{r['total']:.1f}".replace(".", ",") if kit.active("ski.totals_locale") else r["total"])}
               for i, r in enumerate(rows)]
        return json.dumps(out)
    return "Committee confirms gate and wind factors per certificate; no gate change requested."


def build(llm: ChatOpenAI) -> Any:
    def load_start_list(s: State) -> dict:
        data = json.loads(fetch_start_list.invoke({"event": s["event"]}))
        return {"entries": data["entries"], "idx": 0}

    def route_round(s: State) -> dict:
        msg = llm.invoke([("system", "You are the race director. Say 'competition' or 'trial' for the next round."),
                          ("user", f"Bulletin: {s['event']}, round 1 after trial round, {len(s['entries'])} jumpers")])
        return {"round_type": msg.content.strip()}

    def score_jump(s: State) -> dict:
        bib = s["entries"][s["idx"]]["bib"]
        jump = json.loads(fetch_jump_data.invoke({"event": s["event"], "bib": bib}))
        msg = llm.invoke([("system", "You are the judges' scribe. Return the five judges' marks as JSON."),
                          ("user", f"JUMP: {json.dumps(jump)}")])
        marks = RunnableLambda(parse_marks, name="parse_marks").invoke(msg.content)
        return {"jump": jump, "marks": marks["marks"]}

    def trial_jump(s: State) -> dict:
        bib = s["entries"][s["idx"]]["bib"]
        jump = json.loads(fetch_jump_data.invoke({"event": s["event"], "bib": bib}))
        return {"jump": jump, "marks": []}

    def compute_points(s: State) -> dict:
        jump, marks = s["jump"], s["marks"]
        k, meter, wind_f, _g = HILLS[s["hill"]]
        scale = 3.6 if kit.active("ski.wind_units") else 1.0
        style = round(sum(sorted(marks)[1:-1]) if len(marks) == 5 else sum(marks), 1) if marks else None
        total = round(60 + (jump["distance_m"] - k) * meter + (style or 0) - jump["wind_ms"] * scale * wind_f, 1)
        return {"results": [{"bib": jump["bib"], "name": jump["name"], "distance_m": jump["distance_m"],
                             "style": style, "total": total}], "idx": s["idx"] + 1}

    def brief_committee(s: State) -> dict:
        hill = s["small_hill"] if kit.active("ski.committee_hill") else s["hill"]
        return {"committee_request": {"event": s["event"], "hill": hill, "question": "confirm factors for round 1"}}

    def committee_certificate(s: CommitteeState) -> dict:
        return {"certificate": hill_certificate.invoke({"hill": s["committee_request"]["hill"]})}

    def committee_confirm(s: CommitteeState) -> dict:
        llm.invoke([("system", "You are the wind and gate committee."),
                    ("user", f"Certificate: {s['certificate']}. Request: {json.dumps(s['committee_request'])}")])
        return {}

    sub = StateGraph(CommitteeState)
    sub.add_node("committee_certificate", committee_certificate)
    sub.add_node("committee_confirm", committee_confirm)
    sub.add_edge(START, "committee_certificate")
    sub.add_edge("committee_certificate", "committee_confirm")
    sub.add_edge("committee_confirm", END)

    def rank(s: State) -> dict:
        return {"ranking": sorted(s["results"], key=lambda r: -r["total"])}

    def publish(s: State) -> dict:
        sheet = llm.invoke([("system", "You prepare the results sheet for the results service, as a JSON list."),
                            ("user", f"RANKING: {json.dumps(s['ranking'])}")])
        return {"receipt": publish_results.invoke({"event": s["event"], "round_type": s["round_type"],
                                                   "certificate": s["certificate"], "results": sheet.content})}

    g = StateGraph(State)
    for name, fn in [("load_start_list", load_start_list), ("route_round", route_round), ("score_jump", score_jump),
                     ("trial_jump", trial_jump), ("compute_points", compute_points), ("brief_committee", brief_committee),
                     ("rank", rank), ("publish", publish)]:
        g.add_node(name, fn)
    g.add_node("wind_gate_committee", sub.compile())
    g.add_edge(START, "load_start_list")
    g.add_edge("load_start_list", "route_round")
    g.add_conditional_edges("route_round", lambda s: "trial_jump" if s["round_type"] == "trial" else "score_jump")
    g.add_edge("score_jump", "compute_points")
    g.add_edge("trial_jump", "compute_points")
    g.add_node("next_jumper", lambda s: {})
    g.add_edge("compute_points", "next_jumper")
    g.add_conditional_edges("next_jumper", lambda s: "brief_committee" if s["idx"] >= len(s["entries"])
                            else ("trial_jump" if s["round_type"] == "trial" else "score_jump"))
    g.add_edge("brief_committee", "wind_gate_committee")
    g.add_edge("wind_gate_committee", "rank")
    g.add_edge("rank", "publish")
    g.add_edge("publish", END)
    return g.compile()


def record(key: str, path: Path) -> None:
    ev = EVENTS[key]
    llm = ChatOpenAI(base_url=base_url(), api_key="not-needed", model=MODEL, max_retries=0)
    run_graph(build(llm), {"event": ev["event"], "hill": ev["hill"], "small_hill": ev["small_hill"]}, path,
              RUN_NAME, f"score and publish round 1 of {ev['event']}")
