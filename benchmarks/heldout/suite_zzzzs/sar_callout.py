"""Volunteer mountain and water search-and-rescue team: turning a police request into a paged, tasked callout.

Route: langgraph (a real StateGraph with ChatOpenAI, ToolNode and a retriever, recorded by trajdebug's LangChain
callback, JSONL). Shape: page parser, a classifying model call with a JSON parser, a conditional edge to one of
three roster nodes (duty-rota and roster tools), a tool-calling dispatcher loop (parallel availability checks,
then a paging call), a sector retriever and an assigning model call, a tasking tool, a final acknowledgement check.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, TypedDict

from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.output_parsers import BaseOutputParser, JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

import _common
from _common import messages_of, system_of
from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

NAME = "sar-callout"
ROUTE = "langgraph"
DOMAIN = "volunteer search-and-rescue team callout"
SHAPE = ("parser, llm + JSON parser, conditional edge to 3 roster nodes (tools), tool-calling dispatcher loop with "
         "parallel calls, retriever + llm assignment, tasking tool, final check")
SWITCH = None

MEMBERS = {
    "M-01": ("Ana Birkett", ["hill party", "swiftwater"], "west"), "M-02": ("Ben Ollerton", ["hill party"], "west"),
    "M-03": ("Cat Irving", ["hill party", "k9"], "west"), "M-04": ("Dev Sharma", ["hill party"], "west"),
    "M-05": ("Eli Moss", ["swiftwater", "boat"], "east"), "M-06": ("Fay Noble", ["swiftwater"], "east"),
    "M-07": ("Gus Tyson", ["hill party", "boat"], "east"), "M-08": ("Hal Yeats", ["swiftwater", "boat"], "east"),
    "M-09": ("Isla Kerr", ["tracker"], "east"), "M-10": ("Jon Pratt", ["tracker", "hill party"], "east"),
    "M-11": ("Kit Ross", ["k9", "tracker"], "east"), "M-12": ("Lee Fell", ["hill party"], "east"),
    "M-13": ("Mo Aziz", ["swiftwater"], "west"), "M-14": ("Nia Orr", ["hill party", "tracker"], "west"),
}
ROTA_ORDER = ["M-01", "M-02", "M-03", "M-04", "M-05", "M-06", "M-07", "M-08", "M-09", "M-10", "M-12", "M-13",
              "M-14", "M-11"]
UNAVAILABLE = {"M-04", "M-12"}
SECTORS = {
    "west": [("W1", "NY 2105 0730", "west face screes"), ("W2", "NY 2150 0790", "Lord's Rake"),
             ("W3", "NY 2080 0810", "Hollow Stones")],
    "east": [("E1", "NY 4700 2010", "shore path north"), ("E2", "NY 4750 2080", "island bay"),
             ("E3", "NY 5140 2990", "town centre and station")],
}

INPUTS = [
    {"task": "callout SAR-25-0612, missing walker on Scafell",
     "page": "CALLOUT SAR-25-0612 | missing walker, male 61, overdue since 18:00 | LOC Scafell Pike west face | "
             "NEED hill party x3, k9 x1 | REGION west | NOTE follows SAR-25-0598 stand-down"},
    {"task": "callout SAR-25-0613, overdue kayaker on Ullswater",
     "page": "CALLOUT SAR-25-0613 | overdue kayaker, female 34, lake crossing | LOC Ullswater near island bay | "
             "NEED swiftwater x2, boat x1 | REGION east | NOTE none"},
    {"task": "callout SAR-25-0614, person in river at Eamont",
     "page": "CALLOUT SAR-25-0614 | person seen in river, shore path walkers called it in | LOC Eamont riverbank "
             "path | NEED swiftwater x2 | REGION east | NOTE none"},
    {"task": "callout SAR-25-0615, missing man with dementia in Penrith",
     "page": "CALLOUT SAR-25-0615 | missing man with dementia, 80, left care home 14:00 | LOC Penrith town centre | "
             "NEED tracker x2, k9 x1 | REGION east | NOTE none"},
    {"task": "callout SAR-25-0616, injured climber on Lord's Rake",
     "page": "CALLOUT SAR-25-0616 | injured climber, ankle, group of three | LOC Lord's Rake, Scafell | "
             "NEED hill party x2 | REGION west | NOTE none"},
]

CASES = [
    {"id": "sar_callout-1", "input": 0, "kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 3, "llm"), "failure": ("final_check", 1),
     "what": "the dispatcher model paged the team under SAR-25-0598 (the stood-down callout in the note)",
     "description": "The dispatcher model called page_members with the callout code from the page's note, "
                    "SAR-25-0598, so nobody acknowledges SAR-25-0612 and the final check fails."},
    {"id": "sar_callout-2", "input": 1, "kind": "tool_ignores_argument",
     "root": ("search_roster", 1, "tool"), "failure": ("final_check", 1),
     "what": "search_roster(certification='swiftwater') returned every east-region member, certified or not, by surname",
     "description": "The roster search ignored its certification filter and returned the whole east region, so "
                    "a hill-only member is paged as a swiftwater technician and the callout comes up short."},
    {"id": "sar_callout-3", "input": 2, "kind": "wrong_routing",
     "root": ("route_incident", 1, "other"), "failure": ("final_check", 1),
     "what": "the river incident was routed to hill_roster because its location says 'path'",
     "description": "The incident router matched the word path in the Eamont riverbank location and sent a water "
                    "incident to the hill roster, so no swiftwater technician is paged."},
    {"id": "sar_callout-4", "input": 3, "kind": "truncated_result",
     "root": ("fetch_duty_rota", 1, "tool"), "failure": ("final_check", 1),
     "what": "the duty rota came back with its first page only (12 of 14 rows), without the k9 handler M-11",
     "description": "The duty-rota tool returned only its first page of twelve rows, dropping the only on-call "
                    "dog handler, so the urban search is paged without the k9 team it needs."},
    {"id": "sar_callout-5", "input": 4, "kind": "format_drift",
     "root": ("ChatOpenAI", 5, "llm"), "failure": ("post_tasking", 1),
     "what": "the sector assignment gives grids as decimal lat/lon instead of OS grid references",
     "description": "The sector-assignment model wrote its grids as decimal latitude and longitude instead of the "
                    "OS grid references it gave before, and the tasking board rejects them."},
]

PAGED: dict[str, list[str]] = {}  # callout code -> members paged under it (the paging service's view)


class IncidentPageParser(BaseOutputParser[dict]):
    """Reads the police request's pipe-separated page."""

    def parse(self, text: str) -> dict:
        parts = [p.strip() for p in text.split("|")]
        fields = {p.split(" ", 1)[0]: p.split(" ", 1)[1] for p in parts[2:]}
        needs = {m.group(1).strip(): int(m.group(2)) for m in re.finditer(r"([a-z0-9 ]+?) x(\d+)", fields["NEED"])}
        return {"callout": parts[0].split()[1], "summary": parts[1], "location": fields["LOC"], "needs": needs,
                "region": fields["REGION"].lower(), "note": fields["NOTE"]}


class SectorMapRetriever(BaseRetriever):
    """Search sectors of the team's planning maps for a region."""

    def _get_relevant_documents(self, query: str, *, run_manager=None) -> list[Document]:
        region = query.split(":", 1)[0]
        return [Document(page_content=desc, metadata={"sector": s, "grid": g}) for s, g, desc in SECTORS[region]]


@tool
def fetch_duty_rota(week: str) -> dict:
    """The team's on-call rota for a week."""
    rows = [{"member": m, "name": MEMBERS[m][0]} for m in ROTA_ORDER]
    if SWITCH == "sar_callout-4":
        return {"week": week, "rows": rows[:12]}  # the rota API's first page
    return {"week": week, "rows": rows}


@tool
def search_roster(certification: str, region: str) -> list[dict]:
    """Members of a region holding a certification."""
    out = []
    for mid, (name, certs, reg) in MEMBERS.items():
        if reg != region:
            continue
        if certification in certs or SWITCH == "sar_callout-2":
            out.append({"member": mid, "name": name, "certs": certs})
    return sorted(out, key=lambda r: r["name"].split()[-1])


@tool
def check_availability(member_id: str) -> dict:
    """Ask a member's phone app whether they can respond now."""
    return {"member": member_id, "available": member_id not in UNAVAILABLE}


@tool
def page_members(member_ids: list[str], callout: str) -> dict:
    """Page members to a callout."""
    PAGED.setdefault(callout, []).extend(member_ids)
    return {"callout": callout, "paged": member_ids}


@tool
def post_tasking(callout: str, sectors: list[dict]) -> dict:
    """Publish sector taskings to the team's tasking board."""
    for s in sectors:
        if not re.fullmatch(r"[A-Z]{2} \d{4} \d{4}", str(s.get("grid", ""))):
            raise ValueError(f"tasking board rejects sector {s.get('sector')}: grid {s.get('grid')!r} is not an "
                             f"OS grid reference")
    return {"callout": callout, "posted": [s["sector"] for s in sectors]}


@tool
def fetch_acks(callout: str) -> dict:
    """Acknowledgements received by the paging service for a callout."""
    return {"callout": callout, "acked": list(PAGED.get(callout, []))}


class S(TypedDict, total=False):
    page: str
    incident: dict
    kind: str
    candidates: list
    messages: Annotated[list, add_messages]
    sectors: list


def build(llm):
    dispatcher_tools = [check_availability, page_members]
    dispatcher_llm = llm.bind_tools(dispatcher_tools)

    def intake(state: S) -> dict:
        return {"incident": IncidentPageParser().invoke(state["page"])}

    def classify(state: S) -> dict:
        out = (llm | JsonOutputParser()).invoke([
            SystemMessage("Classify the search-and-rescue incident as hill, water or urban. Answer JSON "
                          "{\"type\": ...}."),
            HumanMessage(json.dumps({k: state["incident"][k] for k in ("summary", "location")})),
        ])
        return {"kind": out["type"]}

    def route_incident(state: S) -> str:
        location = state["incident"]["location"].lower()
        if SWITCH == "sar_callout-3" and any(w in location for w in ("path", "fell", "pike")):
            return "hill_roster"
        return {"hill": "hill_roster", "water": "water_roster", "urban": "urban_roster"}[state["kind"]]

    def roster_node(certs: list[str]):
        def node(state: S) -> dict:
            rota = {r["member"] for r in fetch_duty_rota.invoke({"week": "2025-W24"})["rows"]}
            seen, cands = set(), []
            for cert in certs:
                for row in search_roster.invoke({"certification": cert, "region": state["incident"]["region"]}):
                    if row["member"] in rota and row["member"] not in seen:
                        seen.add(row["member"])
                        cands.append(dict(row, listed_for=cert))
            return {"candidates": cands}
        return node

    def dispatcher(state: S) -> dict:
        brief = {"callout": state["incident"]["callout"], "needs": state["incident"]["needs"],
                 "note": state["incident"]["note"], "candidates": state["candidates"]}
        msg = dispatcher_llm.invoke([
            SystemMessage("You dispatch a volunteer SAR callout: check each candidate's availability, then page the "
                          "available ones that cover the needs, then confirm."),
            HumanMessage(json.dumps(brief)),
        ] + state.get("messages", []))
        return {"messages": [msg]}

    def assign_sectors(state: S) -> dict:
        docs = SectorMapRetriever().invoke(f"{state['incident']['region']}: {state['incident']['location']}")
        paged = _paged(state)
        out = (llm | JsonOutputParser()).invoke([
            SystemMessage("Assign paged SAR members to search sectors in pairs. Answer JSON {\"sectors\": "
                          "[{\"sector\", \"grid\", \"members\"}]}."),
            HumanMessage(json.dumps({"location": state["incident"]["location"], "paged": paged,
                                     "sectors": [dict(d.metadata, area=d.page_content) for d in docs]})),
        ])
        return {"sectors": out["sectors"]}

    def publish(state: S) -> dict:
        post_tasking.invoke({"callout": state["incident"]["callout"], "sectors": state["sectors"]})
        return {}

    def final_check(state: S) -> dict:
        inc = state["incident"]
        paged = _paged(state)
        acked = set(fetch_acks.invoke({"callout": inc["callout"]})["acked"])
        if not acked >= set(paged):
            raise RuntimeError(f"{inc['callout']}: {len(set(paged) - acked)} of {len(paged)} paged members have "
                               f"not acknowledged")
        for need, count in inc["needs"].items():
            have = [m for m in paged if need in MEMBERS[m][1]]
            if len(have) < count:
                raise RuntimeError(f"{inc['callout']} short: needs {count} {need}, paged {len(have)}")
        return {}

    g = StateGraph(S)
    g.add_node("intake", intake)
    g.add_node("classify", classify)
    g.add_node("hill_roster", roster_node(["k9", "hill party"]))
    g.add_node("water_roster", roster_node(["swiftwater", "boat"]))
    g.add_node("urban_roster", roster_node(["k9", "tracker"]))
    g.add_node("dispatcher", dispatcher)
    g.add_node("tools", ToolNode(dispatcher_tools))
    g.add_node("assign_sectors", assign_sectors)
    g.add_node("publish", publish)
    g.add_node("final_check", final_check)
    g.add_edge(START, "intake")
    g.add_edge("intake", "classify")
    g.add_conditional_edges("classify", route_incident, ["hill_roster", "water_roster", "urban_roster"])
    for n in ("hill_roster", "water_roster", "urban_roster"):
        g.add_edge(n, "dispatcher")
    g.add_conditional_edges("dispatcher", tools_condition, {"tools": "tools", "__end__": "assign_sectors"})
    g.add_edge("tools", "dispatcher")
    g.add_edge("assign_sectors", "publish")
    g.add_edge("publish", "final_check")
    g.add_edge("final_check", END)
    return g.compile()


def _paged(state: S) -> list[str]:
    for m in state.get("messages", []):
        if isinstance(m, ToolMessage) and m.name == "page_members":
            return json.loads(m.content)["paged"]
    return []


_graph = None


def execute(inp: dict, out_path: str) -> None:
    global _graph
    if _graph is None:
        _graph = build(ChatOpenAI(model=_common.MODEL, base_url=_common.BASE_URL, api_key="not-needed",
                                  max_retries=0))
    PAGED.clear()
    tracer = TrajdebugTracer(path=out_path, name=NAME, task=inp["task"])
    try:
        _graph.invoke({"page": inp["page"]}, config={"callbacks": [tracer]})
    except (RuntimeError, ValueError):
        pass


def brain(request):
    system = system_of(request)
    msgs = messages_of(request)
    if system.startswith("Classify"):
        inc = json.loads(msgs[-1]["content"])
        text = (inc["summary"] + " " + inc["location"]).lower()
        if any(w in text for w in ("river", "lake", "kayak", "water")):
            return json.dumps({"type": "water"})
        if any(w in text for w in ("town", "dementia", "care home")):
            return json.dumps({"type": "urban"})
        return json.dumps({"type": "hill"})
    if system.startswith("You dispatch"):
        brief = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))
        results = [json.loads(m["content"]) for m in msgs if m["role"] == "tool"]
        if not results:
            return Reply(tool_calls=tuple(tool_call("check_availability", {"member_id": c["member"]})
                                          for c in brief["candidates"]))
        if "paged" in results[-1]:
            return f"Paged {len(results[-1]['paged'])} members to {results[-1]['callout']}."
        free = {r["member"] for r in results if r.get("available")}
        pick, got = [], {}
        for c in brief["candidates"]:
            need = c["listed_for"]
            if c["member"] in free and got.get(need, 0) < brief["needs"].get(need, 0):
                pick.append(c["member"])
                got[need] = got.get(need, 0) + 1
        code = brief["callout"]
        if SWITCH == "sar_callout-1":
            code = re.search(r"SAR-\d\d-\d{4}", brief["note"]).group(0)
        return Reply(tool_calls=(tool_call("page_members", {"member_ids": pick, "callout": code}),))
    if system.startswith("Assign paged"):
        req = json.loads(msgs[-1]["content"])
        paged, sectors = req["paged"], req["sectors"]
        out = []
        for k, sec in enumerate(sectors):
            members = paged[2 * k: 2 * k + 2]
            if not members:
                break
            grid = sec["grid"]
            if SWITCH == "sar_callout-5":
                e, n = int(grid.split()[1]), int(grid.split()[2])
                grid = f"{54.40 + n / 100000:.4f}, {-3.30 + e / 100000:.4f}"
            out.append({"sector": sec["sector"], "grid": grid, "members": members})
        return json.dumps({"sectors": out})
    return "Unknown request."
