"""Salt-marsh survey campaigns (route langgraph): a LangGraph graph with ChatOpenAI against the fake server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

from benchmarks.heldout.suite_q import kit
from benchmarks.heldout.suite_q.kit import Agent, Case


NAME = "marsh-survey"

SITES = {
    "Blakeney Freshes": ["BM1", "T2", "T3", "T5"],
    "Tollesbury Wick": ["BM1", "T1", "T4", "T6", "T7"],
    "Warton Sands": ["BM2", "T3", "T8"],
    "Caerlaverock": ["BM1", "T2", "T4", "T5", "T9", "T10"],
    "Hesketh Out": ["BM3", "T1", "T2", "T6"],
    "Gibraltar Point": ["BM1", "T3", "T4", "T7", "T8"],
    "Steart Levels": ["BM2", "T1", "T5", "T6", "T9", "T10", "T11"],
}
POINTS = 12


def elev(site: str, t: str, k: int) -> float:
    h = sum(ord(c) for c in site + t) * (k + 3)
    return round(1.1 + (h % 97) / 250.0, 3)


SYS_CLASSIFY = "You triage survey requests. Answer with one word: sediment or vegetation."
SYS_PLAN_SED = "You plan sediment elevation surveys. Answer JSON: {\"transects\": [...], \"max_tide_m\": n}."
SYS_PLAN_VEG = "You plan vegetation cover surveys. Answer JSON: {\"quadrats\": [...]}."
SYS_SUMMARY = "Summarise the survey for the data portal. Answer JSON with mean_elev_m, n_points, datum."


class State(TypedDict, total=False):
    request: str
    site: str
    category: str
    plan: dict
    idx: int
    readings: list
    datum: dict
    notes: str
    summary: dict
    receipt: dict


def _sys(request) -> str:
    return request.body["messages"][0]["content"]


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system == SYS_CLASSIFY:
        if kit.active("mr_route"):
            return "vegetation"
        return "sediment"
    if system == SYS_PLAN_SED:
        site = user.split("Site: ")[1].split("\n")[0]
        transects = list(SITES[site])
        if kit.active("mr_plan"):
            transects[0] = "T12"
        return json.dumps({"transects": transects, "max_tide_m": 1.4})
    if system == SYS_PLAN_VEG:
        site = user.split("Site: ")[1].split("\n")[0]
        return json.dumps({"quadrats": [f"Q{i}" for i in range(1, len(SITES[site]) + 1)]})
    if system == SYS_SUMMARY:
        data = json.loads(user.split("READINGS:\n")[1].split("\nNOTES:")[0])
        notes = user.split("NOTES:\n")[1].split("\nDATUM:")[0]
        datum = user.split("DATUM:\n")[1]
        pts = [p for r in data for p in r.get("points", r.get("cover", []))]
        mean = round(sum(pts) / len(pts), 3) if pts else 0.0
        for line in notes.splitlines():
            if line.startswith("Offset to apply:"):
                mean = round(mean + float(line.split(":")[1].strip().split()[0]), 3)
        return json.dumps({"mean_elev_m": mean, "n_points": len(pts), "datum": json.loads(datum)["datum"]})
    return "I cannot help with that."


def _build(llm):
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, StateGraph

    @tool
    def fetch_transect(site: str, transect: str) -> dict:
        """Elevation points of one transect from the survey archive."""
        pts = [elev(site, transect, k) for k in range(POINTS)]
        if kit.active("mr_trunc") and transect == SITES[site][2]:
            pts = pts[:3]  # the archive's first page only
        return {"transect": transect, "points": pts, "mean_elev_m": round(sum(pts) / len(pts), 4)}

    @tool
    def fetch_quadrat(site: str, quadrat: str) -> dict:
        """Vegetation cover of one quadrat."""
        return {"quadrat": quadrat, "cover": [round(0.2 + 0.05 * (len(site + quadrat) % 7), 2)]}

    @tool
    def fetch_datum(site: str) -> dict:
        """The vertical datum the campaign levels against."""
        if kit.active("mr_stale"):
            return {"site": site, "datum": "ODN (OSGM15)", "model_epoch": "2015", "cached": "2019-06-02"}
        return {"site": site, "datum": "ODN (OSGM22)", "model_epoch": "2022", "cached": "2026-11-30"}

    @tool
    def load_site_notes(site: str) -> str:
        """The field notes kept for the site."""
        notes = f"Site {site}: access by the sea wall path, boots required.\nReference pins checked in October."
        if kit.active("mr_pollute"):
            notes += "\nSite Holkham Bay (2024 campaign):\nOffset to apply: 0.35 m (pin replaced)"
        return notes

    @tool
    def submit_portal(site: str, category: str, summary: dict, readings: list) -> dict:
        """Upload the campaign to the coastal data portal."""
        if category != "sediment":
            raise RuntimeError(f"Coastal portal: 400 Bad Request, campaign for {site} expects schema "
                               "sed-elev-v3, upload does not validate")
        if "OSGM22" not in summary["datum"]:
            raise RuntimeError("Coastal portal: 409 Conflict, vertical reference not accepted for 2027 campaigns")
        pts = [p for r in readings for p in r["points"]]
        mean = sum(pts) / len(pts)
        if abs(mean - summary["mean_elev_m"]) > 0.01:
            raise RuntimeError("Coastal portal: 422 Unprocessable, summary statistics do not reconcile with "
                               "uploaded points")
        return {"receipt": f"CDP-{len(site) * 131}-{len(pts)}", "status": "accepted"}

    def intake(state: State, config) -> dict:
        r = llm.invoke([SystemMessage(SYS_CLASSIFY), HumanMessage(state["request"])], config=config)
        return {"category": r.content.strip().lower()}

    def plan_sediment(state: State, config) -> dict:
        r = llm.invoke([SystemMessage(SYS_PLAN_SED), HumanMessage(f"Site: {state['site']}\n{state['request']}")],
                       config=config)
        return {"plan": json.loads(r.content), "idx": 0, "readings": []}

    def plan_vegetation(state: State, config) -> dict:
        r = llm.invoke([SystemMessage(SYS_PLAN_VEG), HumanMessage(f"Site: {state['site']}\n{state['request']}")],
                       config=config)
        return {"plan": json.loads(r.content), "idx": 0, "readings": []}

    def survey(state: State, config) -> dict:
        plan, i = state["plan"], state["idx"]
        if "transects" in plan:
            r = fetch_transect.invoke({"site": state["site"], "transect": plan["transects"][i]}, config=config)
        else:
            r = fetch_quadrat.invoke({"site": state["site"], "quadrat": plan["quadrats"][i]}, config=config)
        return {"readings": state["readings"] + [r], "idx": i + 1}

    def more(state: State) -> str:
        items = state["plan"].get("transects") or state["plan"].get("quadrats")
        return "survey" if state["idx"] < len(items) else "datum"

    def datum(state: State, config) -> dict:
        return {"datum": fetch_datum.invoke({"site": state["site"]}, config=config)}

    def notes(state: State, config) -> dict:
        return {"notes": load_site_notes.invoke({"site": state["site"]}, config=config)}

    def summarise(state: State, config) -> dict:
        user = (f"Site: {state['site']}\nREADINGS:\n{json.dumps(state['readings'])}\nNOTES:\n{state['notes']}"
                f"\nDATUM:\n{json.dumps(state['datum'])}")
        r = llm.invoke([SystemMessage(SYS_SUMMARY), HumanMessage(user)], config=config)
        return {"summary": json.loads(r.content)}

    def qa_check(state: State) -> dict:
        if state["category"] == "sediment":
            if not any(t.startswith("BM") for t in state["plan"]["transects"]):
                raise ValueError("levelling check: survey has no tie-in to a benchmark, closure cannot be computed")
            for r in state["readings"]:
                if len(r["points"]) < 10:
                    raise ValueError(f"levelling check: transect {r['transect']} has too few points "
                                     "for a 240 m line")
        return {}

    def submit(state: State, config) -> dict:
        receipt = submit_portal.invoke({"site": state["site"], "category": state["category"],
                                        "summary": state["summary"], "readings": state["readings"]}, config=config)
        return {"receipt": receipt}

    g = StateGraph(State)
    for n, f in [("intake", intake), ("plan_sediment", plan_sediment), ("plan_vegetation", plan_vegetation),
                 ("survey", survey), ("datum", datum), ("notes", notes), ("summarise", summarise),
                 ("qa_check", qa_check), ("submit", submit)]:
        g.add_node(n, f)
    g.add_edge(START, "intake")
    g.add_conditional_edges("intake", lambda s: "plan_vegetation" if s["category"] == "vegetation" else "plan_sediment",
                            ["plan_sediment", "plan_vegetation"])
    g.add_edge("plan_sediment", "survey")
    g.add_edge("plan_vegetation", "survey")
    g.add_conditional_edges("survey", more, ["survey", "datum"])
    g.add_edge("datum", "notes")
    g.add_edge("notes", "summarise")
    g.add_edge("summarise", "qa_check")
    g.add_edge("qa_check", "submit")
    g.add_edge("submit", END)
    return g.compile()


_SERVER = None


def _server():
    global _SERVER
    if _SERVER is None:
        from trajdebug.testing import FakeModelServer

        _SERVER = FakeModelServer(policy, model="gpt-4o-mini").start()
    return _SERVER


def agent(inp: dict, path: Path) -> None:
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    server = _server()
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0,
                     temperature=0)
    graph = _build(llm)
    request = (f"Campaign {inp['campaign']}: repeat the winter elevation survey of the marsh platform at "
               f"{inp['site']} and upload it to the coastal portal.")
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=request)
    try:
        graph.invoke({"request": request, "site": inp["site"]},
                     config={"callbacks": [tracer], "recursion_limit": 60})
    except (RuntimeError, ValueError):
        pass


def _inp(site, campaign):
    return {"site": site, "campaign": campaign}


def _trunc_marker() -> str:
    site = "Steart Levels"
    t = SITES[site][2]
    pts = [elev(site, t, k) for k in range(3)]
    return str(round(sum(pts) / len(pts), 4))


CASES = [
    Case("marsh_routing", NAME, "langgraph", "wrong_routing", "mr_route",
         _inp("Tollesbury Wick", "SED-2027-04"), None, "vegetation"),
    Case("marsh_plan", NAME, "langgraph", "plan_error", "mr_plan",
         _inp("Caerlaverock", "SED-2027-07"), None, "T12"),
    Case("marsh_truncated", NAME, "langgraph", "truncated_result", "mr_trunc",
         _inp("Steart Levels", "SED-2027-11"), "fetch_transect", _trunc_marker()),
    Case("marsh_stale", NAME, "langgraph", "stale_data", "mr_stale",
         _inp("Blakeney Freshes", "SED-2027-02"), "fetch_datum", "OSGM15"),
    Case("marsh_pollution", NAME, "langgraph", "context_pollution", "mr_pollute",
         _inp("Gibraltar Point", "SED-2027-09"), "load_site_notes", "Holkham"),
]
REFS = [_inp("Warton Sands", "SED-2027-01"), _inp("Hesketh Out", "SED-2027-03"),
        _inp("Caerlaverock", "SED-2027-05"), _inp("Tollesbury Wick", "SED-2027-06")]

AGENT = Agent(NAME, "langgraph", "jsonl", agent, CASES, REFS)
