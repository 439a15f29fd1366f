"""Music sync clearance for documentary films: cue sheet to quotes, checks and PRO filing (LangGraph route)."""

from __future__ import annotations

import json
import re
from typing import TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.output_parsers import BaseOutputParser, JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

import common
from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

RUN_NAME = "sync-clearance"
ROUTE = "langgraph"
DOMAIN = "music supervision: sync licence clearance for documentary cue sheets"
SHAPE = "StateGraph: cue-sheet parser, per-cue research sub-graph (retriever + picker LLM), rights tool loop, parallel quote tool calls, fee-summary LLM + JSON parser, budget/clearance checks, PRO filing tool, memo LLM"
SWITCH = None

RECORDINGS = [
    {"isrc": "GBAYE7100012", "title": "Lanterns", "artist": "The Vale Sisters", "duration_s": 220, "label": "Harbor Records",
     "publisher": "Northlight Music", "version": "original"},
    {"isrc": "NOXYZ2200341", "title": "Lanterns", "artist": "Kari Holm", "duration_s": 125, "label": "Fjell Live",
     "publisher": "Northlight Music", "version": "live cover"},
    {"isrc": "USRC18800421", "title": "Copper Sky", "artist": "Dune Cartel", "duration_s": 251, "label": "Mesa Sound",
     "publisher": "Red Clay Songs", "version": "original"},
    {"isrc": "FRZ039900777", "title": "Rue des Tanneurs", "artist": "Odile Marchand", "duration_s": 198, "label": "Bleu Nuit",
     "publisher": "Éditions Passage", "version": "original"},
    {"isrc": "GBKPL0500190", "title": "Slow Tide", "artist": "Mariner", "duration_s": 305, "label": "Lowland",
     "publisher": "Estuary Publishing", "version": "original"},
    {"isrc": "DEA621000555", "title": "Glasshouse", "artist": "Ilse Brandt", "duration_s": 176, "label": "Kiefer",
     "publisher": "Kiefer Edition", "version": "original"},
]
WRITERS = {"Lanterns": "J. Vale (50%) / R. Vale (50%)", "Copper Sky": "M. Ortiz (100%)",
           "Rue des Tanneurs": "O. Marchand (60%) / P. Ruel (40%)", "Slow Tide": "T. Mariner (100%)",
           "Glasshouse": "I. Brandt (70%) / K. Ross (30%)"}


def _sheet(film, cues):
    lines = [f"FILM: {film}"]
    for cid, title, artist, used in cues:
        lines.append(f"{cid} | {title} | {artist} | used {used // 60}:{used % 60:02d} | writers: {WRITERS[title]}")
    return "\n".join(lines)


INPUTS = [
    {"film": "Salt and Iron", "territory": "worldwide", "budget_usd": 14000,
     "sheet": _sheet("Salt and Iron", [("1M1", "Lanterns", "The Vale Sisters", 134), ("1M2", "Copper Sky", "Dune Cartel", 40),
                                       ("2M1", "Slow Tide", "Mariner", 95)])},
    {"film": "The Tanners' Quarter", "territory": "worldwide", "budget_usd": 12000,
     "sheet": _sheet("The Tanners' Quarter", [("1M1", "Rue des Tanneurs", "Odile Marchand", 75),
                                               ("1M3", "Glasshouse", "Ilse Brandt", 52), ("3M2", "Copper Sky", "Dune Cartel", 61)])},
    {"film": "Low Water", "territory": "UK and Ireland", "budget_usd": 7000,
     "sheet": _sheet("Low Water", [("1M2", "Slow Tide", "Mariner", 120), ("2M4", "Glasshouse", "Ilse Brandt", 33)])},
    {"film": "Northern Glass", "territory": "worldwide", "budget_usd": 16000,
     "sheet": _sheet("Northern Glass", [("1M1", "Glasshouse", "Ilse Brandt", 88), ("1M4", "Lanterns", "The Vale Sisters", 140),
                                        ("2M2", "Rue des Tanneurs", "Odile Marchand", 45), ("3M1", "Slow Tide", "Mariner", 70)])},
    {"film": "Copper Country", "territory": "North America", "budget_usd": 8000,
     "sheet": _sheet("Copper Country", [("1M1", "Copper Sky", "Dune Cartel", 150), ("2M1", "Rue des Tanneurs", "Odile Marchand", 30)])},
]


class CueSheetParser(BaseOutputParser[list]):
    """Reads the cue sheet lines: cue id, title, artist, seconds used, writers with shares."""

    def parse(self, text: str) -> list:
        cues = []
        for line in text.splitlines()[1:]:
            cid, title, artist, used, writers = [p.strip() for p in line.split("|")]
            m, s = used.removeprefix("used ").split(":")
            found = re.findall(r"([^/]+?) \((\d+)%\)", writers.removeprefix("writers: "))
            if SWITCH == "zk-sync-1":
                found = found[:1]
            cues.append({"cue": cid, "title": title, "artist": artist, "used_s": int(m) * 60 + int(s),
                         "writers": [{"name": n.strip(), "share": int(p)} for n, p in found]})
        return cues


class MusicCatalogue(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document(page_content=json.dumps(r), metadata={"isrc": r["isrc"]})
                for r in RECORDINGS if r["title"].lower() in query.lower()]


@tool
def lookup_rights(isrc: str) -> dict:
    """Rights holders of a recording: master owner and publisher."""
    r = next(x for x in RECORDINGS if x["isrc"] == isrc)
    return {"isrc": isrc, "master_owner": r["label"], "publisher": r["publisher"]}


@tool
def request_quote(isrc: str, cue: str, territory: str, term_years: int, seconds: int) -> dict:
    """Ask the rights holders for a sync fee (master + publishing)."""
    fee = 900 + 14 * seconds + (1500 if territory == "worldwide" else 0)
    return {"cue": cue, "isrc": isrc, "territory": territory, "term_years": term_years, "fee_usd": fee}


@tool
def register_cue_sheet(film: str, cues: list) -> dict:
    """File the cue sheet with the performing-rights organisation."""
    for c in cues:
        total = sum(w["share"] for w in c["writers"])
        if total != 100:
            raise ValueError(f"PRO filing for {film}: cue {c['cue']} writer shares sum to {total}%, must be 100%")
    return {"film": film, "filed": len(cues), "reference": "PRO-" + str(abs(hash(film)) % 100000)}


def brain(request):
    system = common.system_of(request)
    user = common.last_user(request)
    if system.startswith("Pick the recording"):
        ask = json.loads(user)
        cands = ask["candidates"]
        pick = next(c for c in cands if c["artist"] == ask["artist"])
        if SWITCH == "zk-sync-3" and len(cands) > 1:
            pick = next(c for c in cands if c["artist"] != ask["artist"])
        return json.dumps({"isrc": pick["isrc"], "reason": f"{pick['title']} by {pick['artist']}"})
    if system.startswith("Request sync quotes"):
        ask = json.loads(user)
        territory = ask["territory"]
        if SWITCH == "zk-sync-2":
            territory = "US"
        return Reply(tool_calls=tuple(tool_call("request_quote", {"isrc": c["isrc"], "cue": c["cue"], "territory": territory,
                                                                   "term_years": 10, "seconds": c["used_s"]})
                                      for c in ask["cues"]))
    if system.startswith("Summarise the fees"):
        quotes = json.loads(user)["quotes"]
        if SWITCH == "zk-sync-4":
            return json.dumps({"fees": [{"cue": q["cue"], "fee": f"USD {q['fee_usd']:,}"} for q in quotes]})
        return json.dumps({"fees": [{"cue": q["cue"], "fee": q["fee_usd"]} for q in quotes], "currency": "USD"})
    if system.startswith("Write the clearance memo"):
        return "Clearance memo: all cues quoted within budget; cue sheet filed."
    return "ok"


class Research(TypedDict, total=False):
    cue: dict
    pick: dict


class State(TypedDict, total=False):
    film: str
    territory: str
    budget_usd: int
    sheet: str
    cues: list
    recordings: dict
    rights: dict
    quotes: list
    fees: list
    filing: dict
    memo: str


def build(llm):
    catalogue = MusicCatalogue()
    json_parser = JsonOutputParser()

    def search_catalogue(st: Research):
        docs = catalogue.invoke(f"{st['cue']['title']} {st['cue']['artist']}")
        cands = [json.loads(d.page_content) for d in docs]
        answer = (llm | json_parser).invoke([
            SystemMessage("Pick the recording the cue sheet names. Answer JSON {isrc, reason}."),
            HumanMessage(json.dumps({"title": st["cue"]["title"], "artist": st["cue"]["artist"], "candidates": cands}))])
        return {"pick": next(c for c in cands if c["isrc"] == answer["isrc"])}

    sub = StateGraph(Research)
    sub.add_node("search_catalogue", search_catalogue)
    sub.add_edge(START, "search_catalogue")
    sub.add_edge("search_catalogue", END)
    researcher = sub.compile(name="track_researcher")

    def parse_cue_sheet(state):
        return {"cues": CueSheetParser().invoke(state["sheet"])}

    def research(state):
        found = {}
        for cue in state["cues"]:
            found[cue["cue"]] = researcher.invoke({"cue": cue})["pick"]
        return {"recordings": found}

    def rights(state):
        out = {}
        ids = [c["cue"] for c in state["cues"]]
        for k, cid in enumerate(ids):
            answer = lookup_rights.invoke({"isrc": state["recordings"][cid]["isrc"]})
            key = ids[k - 1] if SWITCH == "zk-sync-5" and k == len(ids) - 1 else cid
            out[key] = answer
        return {"rights": out}

    def quote(state):
        cues = [{"cue": c["cue"], "isrc": state["recordings"][c["cue"]]["isrc"], "used_s": c["used_s"]} for c in state["cues"]]
        ai = llm.bind_tools([request_quote]).invoke([
            SystemMessage("Request sync quotes for every cue, for the release territory, 10-year term."),
            HumanMessage(json.dumps({"film": state["film"], "territory": state["territory"], "cues": cues}))])
        quotes = []
        for call in ai.tool_calls:
            msg: ToolMessage = request_quote.invoke(call)
            quotes.append(json.loads(msg.content))
        return {"quotes": quotes}

    def summarize_fees(state):
        answer = (llm | json_parser).invoke([SystemMessage("Summarise the fees per cue as JSON."),
                                             HumanMessage(json.dumps({"quotes": state["quotes"]}))])
        return {"fees": answer["fees"]}

    def budget_check(state):
        total = 0
        for f in state["fees"]:
            if not isinstance(f["fee"], (int, float)):
                raise ValueError(f"fee for cue {f['cue']} is not a number: {f['fee']!r}")
            if f["cue"] not in state["rights"]:
                raise ValueError(f"no rights holders on file for cue {f['cue']}")
            total += f["fee"]
        if total > state["budget_usd"]:
            raise ValueError(f"music budget {state['budget_usd']} USD exceeded: {total} USD")
        return {}

    def validate_clearance(state):
        by_cue = {c["cue"]: c for c in state["cues"]}
        for q in state["quotes"]:
            if q["territory"] != state["territory"]:
                raise ValueError(f"cue {q['cue']}: quote covers {q['territory']}, the release is {state['territory']}")
            rec = state["recordings"][q["cue"]]
            if by_cue[q["cue"]]["used_s"] > rec["duration_s"]:
                raise ValueError(f"cue {q['cue']} uses {by_cue[q['cue']]['used_s']} s of {rec['title']} "
                                 f"({rec['artist']}), a {rec['duration_s']} s recording")
        return {}

    def register(state):
        return {"filing": register_cue_sheet.invoke({"film": state["film"], "cues": state["cues"]})}

    def memo(state):
        ai = llm.invoke([SystemMessage("Write the clearance memo."),
                         HumanMessage(json.dumps({"film": state["film"], "fees": state["fees"], "filing": state["filing"]}))])
        return {"memo": ai.content}

    g = StateGraph(State)
    names = ["parse_cue_sheet", "research", "rights", "quote", "summarize_fees", "budget_check",
             "validate_clearance", "register", "memo"]
    fns = [parse_cue_sheet, research, rights, quote, summarize_fees, budget_check, validate_clearance, register, memo]
    for n, fn in zip(names, fns):
        g.add_node(n, fn)
    g.add_edge(START, names[0])
    for a, b in zip(names, names[1:]):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile()


_GRAPH = None


def record(inp: dict, path: str) -> None:
    global _GRAPH
    if _GRAPH is None:
        llm = ChatOpenAI(base_url=common.SERVER.base_url, api_key="not-needed", model=common.MODEL, max_retries=0)
        _GRAPH = build(llm)
    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=f"clear music for {inp['film']} ({inp['territory']})")
    try:
        _GRAPH.invoke(dict(inp), config={"callbacks": [tracer]})
    except ValueError:
        pass


CASES = [
    {"case": "zk-sync-1", "input": 2, "switch": "zk-sync-1", "fault_kind": "lossy_parsing",
     "root": ("CueSheetParser", 1, "parse"), "failure": ("register_cue_sheet", 1),
     "description": "The cue-sheet parser keeps only the first writer of each cue, so Glasshouse in Low Water is "
                    "filed with I. Brandt at 70% alone and the PRO filing rejects the shares."},
    {"case": "zk-sync-2", "input": 0, "switch": "zk-sync-2", "fault_kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 4, "llm"), "failure": ("validate_clearance", 1),
     "description": "The quoting model calls request_quote with territory 'US' for a worldwide release, and the "
                    "clearance check finds the quotes do not cover the release."},
    {"case": "zk-sync-3", "input": 3, "switch": "zk-sync-3", "fault_kind": "subagent_wrong_entity",
     "root": ("ChatOpenAI", 2, "llm"), "failure": ("validate_clearance", 1),
     "description": "The track-research sub-graph picks Kari Holm's 125-second live cover of 'Lanterns' instead "
                    "of The Vale Sisters' recording, and the 140 s cue cannot be cleared against it."},
    {"case": "zk-sync-4", "input": 1, "switch": "zk-sync-4", "fault_kind": "format_drift",
     "root": ("ChatOpenAI", 5, "llm"), "failure": ("budget_check", 1),
     "description": "The fee summary comes back with fees as display strings ('USD 2,450') instead of numbers, "
                    "and the budget check cannot add them."},
    {"case": "zk-sync-5", "input": 1, "switch": "zk-sync-5", "fault_kind": "bad_memory_write",
     "root": ("rights", 1, "agent"), "failure": ("budget_check", 1),
     "description": "The rights node files the last cue's rights holders under the previous cue's id, "
                    "overwriting them, and the budget check finds no rights on file for cue 3M2."},
]
