"""Outage desk of an electric cooperative: ticket to crew dispatch (LangGraph + TrajdebugTracer)."""
from __future__ import annotations

import datetime as dt
import json
from typing import TypedDict

from . import common

RUN_NAME = "coop-outage-dispatch"
ROUTE = "langgraph"
DOMAIN = "electric cooperative outage desk: trouble tickets to line-crew dispatch"
SHAPE = ("LangGraph StateGraph: ticket reading (prompt | model | JSON parser), feeder lookups (two tools), "
         "shift-log search, triage with a conditional router, crew roster tool and a roster parser, crew choice, "
         "a crew brief by the model, a restoration estimate, dispatch and critical-customer notices (tools)")
SWITCH = None

FEEDERS = {
    "F-12": {"kv": 13.2, "substation": "Millbrook", "breaker": "open", "sites": ["44 Ridge Ln", "12 Ridge Ln", "7 Tanner Rd"]},
    "F-07": {"kv": 7.2, "substation": "Cold Spring", "breaker": "closed", "sites": ["310 Orchard Way", "5 Birch Ct"]},
    "F-21": {"kv": 13.2, "substation": "Harlan", "breaker": "open", "sites": ["88 Mill St", "90 Mill St", "2 Depot Sq"]},
    "F-03": {"kv": 4.16, "substation": "Ashby", "breaker": "lockout", "sites": ["17 Pond Rd", "19 Pond Rd"]},
    "F-15": {"kv": 13.2, "substation": "Millbrook", "breaker": "open", "sites": ["118 Quarry Rd", "120 Quarry Rd"]},
}
CUSTOMERS = {  # feeder -> accounts (life support flagged)
    "F-12": [{"acct": f"12-{i:04d}", "life_support": i in (7, 31)} for i in range(1, 41)],
    "F-07": [{"acct": f"07-{i:04d}", "life_support": i == 12} for i in range(1, 19)],
    "F-21": [{"acct": f"21-{i:04d}", "life_support": i in (3, 44)} for i in range(1, 52)],
    "F-03": [{"acct": f"03-{i:04d}", "life_support": False} for i in range(1, 12)],
    "F-15": [{"acct": f"15-{i:04d}", "life_support": i == 2} for i in range(1, 9)],
}
SHIFT_LOG = [
    {"feeder": "F-15", "time": "05:10", "note": "Crew C-3 on site at 118 Quarry Rd, pole 15-22 replaced, feeder back 05:55."},
    {"feeder": "F-12", "time": "04:20", "note": "Tree contact reported near Ridge Ln, patrol requested."},
    {"feeder": "F-21", "time": "03:45", "note": "Recloser 21-R2 operated twice, patrol found nothing."},
    {"feeder": "F-07", "time": "02:30", "note": "Customer at Orchard Way reports flicker, logged only."},
]
ROSTER_CSV = """crew,lead,distance_km,hv,status
C-2,Pavlik,3.1,Y,break until 14:00
C-4,Nunez,6.8,Y,available
C-5,Obi,9.5,N,available
C-7,Santos,4.4,Y,available"""

INPUTS = [
    {"task": "ticket 88412: lines down on Ridge Ln", "ticket": {"id": "88412", "text": "Caller at 44 Ridge Ln: wires down across the driveway after the storm, sparking. Power out since 6:40 on 14 March 2025. Feeder F-12 per map."}},
    {"task": "ticket 88419: outage Orchard Way", "ticket": {"id": "88419", "text": "310 Orchard Way reports no power since 7:05 on 14 March 2025, tree limb down on the service drop. Feeder F-07."}},
    {"task": "ticket 88433: transformer noise Mill St", "ticket": {"id": "88433", "text": "Loud bang from pole transformer at 88 Mill St, lights out since 8:12 on 14 March 2025. Feeder F-21."}},
    {"task": "ticket 88440: lockout Pond Rd", "ticket": {"id": "88440", "text": "Whole street dark on Pond Rd (17 Pond Rd calling) since 9:30 on 14 March 2025. Feeder F-03."}},
    {"task": "ticket 88452: tree on line Tanner Rd", "ticket": {"id": "88452", "text": "Tree leaning on primary at 7 Tanner Rd, line sagging, power out since 10:15 on 14 March 2025. Feeder F-12."}},
]

CASES = [
    {"id": "outage_time_format", "input": 2, "switch": "local_time_format", "fault_kind": "format_drift",
     "root": ("ChatOpenAI", 1), "failure": ("estimate_restoration", 1),
     "description": "Reading the ticket, the model gives reported_at as 03/14/2025 08:12 instead of the ISO time the other tickets got, and the restoration estimate cannot read it."},
    {"id": "outage_customer_page", "input": 0, "switch": "first_page_only", "fault_kind": "truncated_result",
     "root": ("customers_on_feeder", 1), "failure": ("notify_critical_customers", 1),
     "description": "The customer list for feeder F-12 comes back as its first 25 accounts with no next page, so one of the two life-support accounts is missing from the notice."},
    {"id": "outage_shift_notes", "input": 4, "switch": "whole_shift_log", "fault_kind": "context_pollution",
     "root": ("shift_log_search", 1), "failure": ("dispatch_crew", 1),
     "description": "The shift-log search returns the whole shift's notes, and the crew brief takes 118 Quarry Rd from another feeder's note as the site, which dispatch refuses for F-12."},
    {"id": "outage_hazard_route", "input": 0, "switch": "hazard_exact_match", "fault_kind": "wrong_routing",
     "root": ("route_by_hazard", 1), "failure": ("remote_switch", 1),
     "description": "The triage router matches the hazard text 'wires down' against 'downed line' only and sends a wire-down ticket to remote switching, which SCADA blocks."},
    {"id": "outage_roster_columns", "input": 1, "switch": "roster_four_columns", "fault_kind": "lossy_parsing",
     "root": ("parse_roster", 1), "failure": ("dispatch_crew", 1),
     "description": "The roster parser keeps the first four columns and drops status, so crew C-2, on break until 14:00, is read as available and chosen for Orchard Way."},
]

from langchain_core.tools import tool as _lc_tool


@_lc_tool
def feeder_status(feeder: str) -> dict:
    """SCADA status of a feeder."""
    f = FEEDERS[feeder]
    return {"feeder": feeder, "kv": f["kv"], "substation": f["substation"], "breaker": f["breaker"]}


@_lc_tool
def customers_on_feeder(feeder: str) -> dict:
    """Customer accounts served by a feeder."""
    accts = CUSTOMERS[feeder]
    if SWITCH == "first_page_only":
        accts = accts[:25]
    return {"feeder": feeder, "accounts": accts, "count": len(accts)}


@_lc_tool
def shift_log_search(feeder: str) -> list:
    """Shift log notes for a feeder."""
    if SWITCH == "whole_shift_log":
        return [dict(n) for n in SHIFT_LOG]
    return [dict(n) for n in SHIFT_LOG if n["feeder"] == feeder]


@_lc_tool
def remote_switch(feeder: str, hazard: str) -> dict:
    """Open the feeder's sectionalizer remotely and backfeed."""
    if any(w in hazard.lower() for w in ("wire", "line down", "downed", "sparking", "sagging")):
        raise RuntimeError(f"SCADA: remote switching on {feeder} blocked, wire-down hazard open ({hazard})")
    return {"feeder": feeder, "operation": "sectionalize", "backfed": True}


@_lc_tool
def crew_roster(depot: str) -> str:
    """Today's crew roster for a depot (CSV)."""
    return ROSTER_CSV


@_lc_tool
def dispatch_crew(crew: str, feeder: str, site: str, hazard: str) -> dict:
    """Dispatch a crew to a site."""
    if site not in FEEDERS[feeder]["sites"]:
        raise ValueError(f"dispatch: {site} is not served by feeder {feeder}")
    row = next(line for line in ROSTER_CSV.splitlines() if line.startswith(crew + ","))
    if not row.endswith("available"):
        raise RuntimeError(f"dispatch: crew {crew} is not available ({row.split(',')[-1]})")
    return {"order": f"D-{feeder[-2:]}{crew[-1]}", "crew": crew, "site": site}


@_lc_tool
def notify_critical_customers(feeder: str, accounts: list) -> dict:
    """Send outage notices to life-support accounts."""
    registry = [c["acct"] for c in CUSTOMERS[feeder] if c["life_support"]]
    if sorted(accounts) != sorted(registry):
        raise ValueError(f"medical registry lists {len(registry)} life-support accounts on {feeder} "
                         f"({', '.join(registry)}); notice covers {len(accounts)}")
    return {"feeder": feeder, "notified": len(accounts)}


class OutageState(TypedDict, total=False):
    ticket: dict
    fields: dict
    feeder: dict
    customers: dict
    notes: list
    route: str
    crews: list
    crew: dict
    brief: dict
    etr: str
    result: dict


def build_graph(llm):
    from langchain_core.output_parsers import JsonOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableLambda
    from langgraph.graph import END, START, StateGraph

    read_chain = ChatPromptTemplate.from_messages([
        ("system", "You read outage trouble tickets. Answer JSON with feeder, site, hazard, reported_at."),
        ("user", "{text}")]) | llm | JsonOutputParser()
    brief_chain = ChatPromptTemplate.from_messages([
        ("system", "You write the line-crew brief. Answer JSON with crew, site, hazard, instructions."),
        ("user", "{payload}")]) | llm | JsonOutputParser()

    def _parse_roster(text: str) -> list:
        lines = text.strip().splitlines()
        header = lines[0].split(",")
        width = 4 if SWITCH == "roster_four_columns" else len(header)
        crews = []
        for line in lines[1:]:
            cells = line.split(",")[:width]
            row = dict(zip(header[:width], cells))
            crews.append({"crew": row["crew"], "lead": row["lead"], "distance_km": float(row["distance_km"]),
                          "hv": row["hv"] == "Y", "status": row.get("status", "available")})
        return crews

    parse_roster = RunnableLambda(_parse_roster).with_config(run_name="parse_roster")

    def read_ticket(state):
        return {"fields": read_chain.invoke({"text": state["ticket"]["text"]})}

    def feeder_lookup(state):
        f = state["fields"]["feeder"]
        return {"feeder": feeder_status.invoke({"feeder": f}), "customers": customers_on_feeder.invoke({"feeder": f})}

    def recall_shift_notes(state):
        return {"notes": shift_log_search.invoke({"feeder": state["fields"]["feeder"]})}

    def triage(state):
        return {"route": "pending"}

    def route_by_hazard(state) -> str:
        hazard = state["fields"]["hazard"].lower()
        if SWITCH == "hazard_exact_match":
            danger = "downed line" in hazard
        else:
            danger = any(w in hazard for w in ("wire", "downed", "tree", "sagging", "transformer", "sparking"))
        return "load_roster" if danger else "switching"

    def switching(state):
        op = remote_switch.invoke({"feeder": state["fields"]["feeder"], "hazard": state["fields"]["hazard"]})
        return {"route": "switching", "result": op}

    def load_roster(state):
        return {"route": "crew", "crews": parse_roster.invoke(crew_roster.invoke({"depot": state["feeder"]["substation"]}))}

    def pick_crew(state):
        kv = state["feeder"]["kv"]
        ok = [c for c in state["crews"] if c["status"] == "available" and (c["hv"] or kv < 7)]
        return {"crew": min(ok, key=lambda c: c["distance_km"])}

    def draft_crew_brief(state):
        payload = json.dumps({"ticket": state["ticket"]["text"], "fields": state["fields"], "crew": state["crew"]["crew"],
                              "notes": state["notes"]})
        return {"brief": brief_chain.invoke({"payload": payload})}

    def estimate_restoration(state):
        start = dt.datetime.fromisoformat(state["fields"]["reported_at"])
        hours = 4 if state["feeder"]["kv"] > 10 else 2
        return {"etr": (start + dt.timedelta(hours=hours)).isoformat(timespec="minutes")}

    def dispatch(state):
        b = state["brief"]
        order = dispatch_crew.invoke({"crew": b["crew"], "feeder": state["fields"]["feeder"], "site": b["site"], "hazard": b["hazard"]})
        crit = [c["acct"] for c in state["customers"]["accounts"] if c["life_support"]]
        notice = notify_critical_customers.invoke({"feeder": state["fields"]["feeder"], "accounts": crit})
        return {"result": {"order": order, "notice": notice, "etr": state["etr"]}}

    g = StateGraph(OutageState)
    for name, node in [("read_ticket", read_ticket), ("feeder_lookup", feeder_lookup), ("recall_shift_notes", recall_shift_notes),
                       ("triage", triage), ("switching", switching), ("load_roster", load_roster), ("pick_crew", pick_crew),
                       ("draft_crew_brief", draft_crew_brief), ("estimate_restoration", estimate_restoration), ("dispatch", dispatch)]:
        g.add_node(name, node)
    g.add_edge(START, "read_ticket")
    g.add_edge("read_ticket", "feeder_lookup")
    g.add_edge("feeder_lookup", "recall_shift_notes")
    g.add_edge("recall_shift_notes", "triage")
    g.add_conditional_edges("triage", route_by_hazard, ["load_roster", "switching"])
    g.add_edge("switching", END)
    g.add_edge("load_roster", "pick_crew")
    g.add_edge("pick_crew", "draft_crew_brief")
    g.add_edge("draft_crew_brief", "estimate_restoration")
    g.add_edge("estimate_restoration", "dispatch")
    g.add_edge("dispatch", END)
    return g.compile()


GRAPHS: dict = {}


def record(server, inp: dict, path: str) -> None:
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    if server.base_url not in GRAPHS:
        llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
        GRAPHS[server.base_url] = build_graph(llm)
    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=inp["task"])
    GRAPHS[server.base_url].invoke({"ticket": inp["ticket"]}, config={"callbacks": [tracer]})


def brain(request):
    import re

    system = common.chat_system(request)
    user = common.chat_user(request)
    if "outage trouble tickets" in system:
        feeder = re.search(r"Feeder (F-\d+)", user).group(1)
        site = re.search(r"(\d+ [A-Z][a-z]+ (?:Ln|Rd|St|Way|Ct))", user).group(1)
        hh, mm = re.search(r"since (\d+):(\d+)", user).groups()
        hazard = {"wires down": "wires down, sparking", "limb down": "tree limb on service drop", "bang": "transformer failure",
                  "Whole street": "no visible damage", "Tree leaning": "tree on primary, line sagging"}
        h = next(v for k, v in hazard.items() if k in user)
        when = f"2025-03-14T{int(hh):02d}:{mm}"
        if SWITCH == "local_time_format":
            when = f"03/14/2025 {int(hh):02d}:{mm}"
        return json.dumps({"feeder": feeder, "site": site, "hazard": h, "reported_at": when})
    if "line-crew brief" in system:
        p = json.loads(user)
        site = p["fields"]["site"]
        for n in p["notes"]:
            m = re.search(r"on site at (\d+ [A-Z][a-z]+ (?:Ln|Rd|St|Way|Ct))", n["note"])
            if m:
                site = m.group(1)
        return json.dumps({"crew": p["crew"], "site": site, "hazard": p["fields"]["hazard"],
                           "instructions": f"Make safe at {site}, then patrol {p['fields']['feeder']} from the substation."})
    return "{}"
