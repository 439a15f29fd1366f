"""ringing-station: a bird-ringing station's daily submission agent (LangGraph, recorded by TrajdebugTracer).

A day's capture sheet is transcribed by a model into records; the station's notes for the day are
gathered; a model plans the ring-history look-ups (tool calls, in parallel) for retraps and foreign
controls; the checks run the look-ups and a biometrics retriever per record; a routing function sends
records with measurements outside the station's ranges to a model review; a model writes the EURING
lines and the national ringing centre's submission tool validates them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser, StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from trajdebug.testing import Reply, tool_call

from .common import Case, first_json, last_user, system_of

RUN_NAME = "ringing-station"
ROUTE = "langgraph"
DOMAIN = "bird-ringing station: daily capture sheet to the national ringing centre"
SHAPE = "graph: transcribe (prompt > llm > json parser) -> gather_context -> plan_checks (llm, parallel tool calls) -> run_checks (tools + retriever per record) -> router -> [review (llm)] -> compose_submission (llm > parser) -> submit (tool)"

SWITCH: str | None = None


def _on(tag: str) -> bool:
    return SWITCH == tag  # the one place SWITCH is read


HOME = "SVS"

SPECIES = [
    # code, scientific name, English name, station wing range, centre wing range
    ("12510", "Acrocephalus scirpaceus", "Reed Warbler", (62, 70), (60, 72)),
    ("12430", "Acrocephalus schoenobaenus", "Sedge Warbler", (62, 70), (60, 72)),
    ("13110", "Phylloscopus collybita", "Chiffchaff", (54, 63), (52, 65)),
    ("13120", "Phylloscopus trochilus", "Willow Warbler", (62, 72), (60, 74)),
    ("12770", "Sylvia atricapilla", "Blackcap", (70, 80), (68, 82)),
    ("12750", "Sylvia borin", "Garden Warbler", (74, 84), (72, 86)),
    ("10990", "Erithacus rubecula", "Robin", (68, 76), (66, 78)),
    ("15080", "Regulus regulus", "Goldcrest", (50, 57), (48, 59)),
    ("11870", "Turdus merula", "Blackbird", (120, 136), (118, 139)),
    ("14620", "Cyanistes caeruleus", "Blue Tit", (62, 70), (60, 72)),
]
BY_NAME = {s[1]: s for s in SPECIES}
BY_CODE = {s[0]: s for s in SPECIES}

# The ringing centre's database: (scheme, ring) -> original ringing.
RINGS: dict[tuple[str, str], dict[str, Any]] = {
    ("SVS", "2K31877"): {"species": "Acrocephalus scirpaceus", "place": "Falsterbo", "date": "02082023", "age": "3"},
    ("SVS", "2K40512"): {"species": "Acrocephalus scirpaceus", "place": "Falsterbo", "date": "13092024", "age": "3"},
    ("SVS", "2K40519"): {"species": "Acrocephalus schoenobaenus", "place": "Falsterbo", "date": "13092024", "age": "3"},
    ("SVS", "8123456"): {"species": "Turdus merula", "place": "Ottenby", "date": "11102021", "age": "4"},
    ("NLA", "8123456"): {"species": "Sylvia borin", "place": "Castricum", "date": "18092022", "age": "3"},
    ("SVS", "CX20931"): {"species": "Erithacus rubecula", "place": "Ottenby", "date": "24042024", "age": "4"},
    ("DEW", "9H55012"): {"species": "Sylvia atricapilla", "place": "Helgoland", "date": "06092024", "age": "3"},
    ("SVS", "1T77420"): {"species": "Regulus regulus", "place": "Landsort", "date": "30092023", "age": "3"},
    ("SVS", "4A10883"): {"species": "Cyanistes caeruleus", "place": "Torhamn", "date": "15102023", "age": "3"},
    ("SVS", "2K51102"): {"species": "Phylloscopus trochilus", "place": "Falsterbo", "date": "21082024", "age": "3"},
}
SUBMITTED: dict[str, set[str]] = {"Falsterbo": {"2K40512", "2K40519"}}

# station notes by (station, date)
NOTES = {
    ("Falsterbo", "13092024"): "Nets 1-14 open 05:30-12:00, wind SW 4 m/s. Late entries: 2K40519 new Acrocephalus "
                               "schoenobaenus age 3 wing 66 mass 11.8; 2K40512 new Acrocephalus scirpaceus age 3 wing 65 mass 12.0.",
    ("Falsterbo", "14092024"): "Nets 1-14 open 05:30-12:30, wind W 3 m/s, light rain 09:10. Late entries: none.",
    ("Ottenby", "02102024"): "Nets A-K open 06:00-13:00, wind N 6 m/s. Late entries: none.",
    ("Landsort", "05102024"): "Nets open 06:15-11:00, fog until 08:00. Late entries: none.",
    ("Torhamn", "08102024"): "Nets open 06:30-12:00, wind NE 2 m/s. Late entries: none.",
    ("Falsterbo", "20092024"): "Nets 1-14 open 05:45-12:00, wind S 5 m/s. Late entries: none.",
}


def _sheet_line(n: int, ring: str, scheme: str, status: str, species: str, age: str, wing: int, mass: float) -> str:
    return f"{n:>2}  {scheme} {ring:<8} {status:<7} {species:<28} age {age}  wing {wing}  mass {mass}"


INPUTS: list[dict[str, Any]] = [
    {"task": "ringing sheet Falsterbo 14 Sep 2024", "station": "Falsterbo", "date": "14092024", "rows": [
        ("2K31877", "SVS", "retrap", "Acrocephalus scirpaceus", "4", 67, 12.4),
        ("2K51140", "SVS", "new", "Phylloscopus collybita", "3", 58, 7.6),
        ("2K51141", "SVS", "new", "Erithacus rubecula", "3", 71, 16.2),
        ("2K51142", "SVS", "new", "Sylvia atricapilla", "3", 74, 18.9),
        ("2K51143", "SVS", "new", "Acrocephalus schoenobaenus", "3", 65, 11.1),
    ]},
    {"task": "ringing sheet Ottenby 2 Oct 2024", "station": "Ottenby", "date": "02102024", "rows": [
        ("CX20931", "SVS", "retrap", "Erithacus rubecula", "4", 73, 17.5),
        ("8123456", "NLA", "control", "Sylvia borin", "4", 80, 21.3),
        ("CX21005", "SVS", "new", "Regulus regulus", "3", 54, 5.6),
        ("CX21006", "SVS", "new", "Turdus merula", "3", 131, 98.0),
    ]},
    {"task": "ringing sheet Landsort 5 Oct 2024", "station": "Landsort", "date": "05102024", "rows": [
        ("1T77420", "SVS", "retrap", "Regulus regulus", "4", 55, 5.9),
        ("1T80211", "SVS", "new", "Regulus regulus", "3", 53, 5.4),
        ("1T80212", "SVS", "new", "Erithacus rubecula", "3", 70, 15.8),
        ("9H55012", "DEW", "control", "Sylvia atricapilla", "3", 75, 19.6),
        ("1T80213", "SVS", "new", "Turdus merula", "5", 137, 104.0),
    ]},
    {"task": "ringing sheet Torhamn 8 Oct 2024", "station": "Torhamn", "date": "08102024", "rows": [
        ("4A10883", "SVS", "retrap", "Cyanistes caeruleus", "4", 66, 11.2),
        ("4A12001", "SVS", "new", "Cyanistes caeruleus", "3", 64, 10.9),
        ("4A12002", "SVS", "new", "Phylloscopus collybita", "3", 57, 7.2),
        ("4A12003", "SVS", "new", "Regulus regulus", "3", 52, 5.3),
    ]},
    {"task": "ringing sheet Falsterbo 20 Sep 2024", "station": "Falsterbo", "date": "20092024", "rows": [
        ("2K51102", "SVS", "retrap", "Phylloscopus trochilus", "3", 67, 9.1),
        ("2K52210", "SVS", "new", "Phylloscopus collybita", "3", 59, 7.4),
        ("2K52211", "SVS", "new", "Acrocephalus scirpaceus", "3", 64, 11.9),
        ("2K52212", "SVS", "new", "Erithacus rubecula", "3", 72, 16.9),
    ]},
]
for _inp in INPUTS:
    _inp["sheet"] = "\n".join([f"{_inp['station']} ringing sheet {_inp['date']}, ringer licence SVS-R-1142"] +
                              [_sheet_line(i + 1, *row) for i, row in enumerate(_inp["rows"])])

CASES = [
    Case("rs1", 4, "genus-match", "wrong_retrieval", ("Biometrics", 1), ("scheme_submit", 1),
         "The biometrics retriever ranked the Chiffchaff entry first for the retrapped Willow Warbler 2K51102, so it "
         "went to the centre under Chiffchaff's code with a wing the centre refuses for that species."),
    Case("rs2", 3, "iso-date", "format_drift", ("euring_writer", 1), ("scheme_submit", 1),
         "The EURING writer model gave the capture dates as 2024-10-08 instead of ddmmyyyy, and the centre's "
         "submission tool refused the lines."),
    Case("rs3", 1, "home-scheme", "tool_ignores_argument", ("ring_history", 2), ("scheme_submit", 1),
         "The ring-history tool ignored the scheme argument and returned the Swedish ring 8123456 (a Blackbird) "
         "for the Dutch control NLA 8123456, so the cited original ringing did not match the centre's record."),
    Case("rs4", 0, "notes-latest", "context_pollution", ("gather_context", 1), ("scheme_submit", 1),
         "The context step loaded the station's latest notes, the day before's, whose late entries the writer model "
         "then added to this day's lines, and the centre refused them as already received."),
    Case("rs5", 2, "plan-skip", "plan_error", ("ChatOpenAI", 2), ("scheme_submit", 1),
         "The planning model asked for the history of the German control only and left out retrap 1T77420, which "
         "then went to the centre without its original ringing reference."),
]

# --------------------------------------------------------------------------------------------------
# The model's side (Chat Completions requests from ChatOpenAI).
# --------------------------------------------------------------------------------------------------

_ROW = re.compile(r"^\s*\d+\s+(\w+)\s+(\w+)\s+(new|retrap|control)\s+(\w+ \w+)\s+age (\w)\s+wing (\d+)\s+mass ([\d.]+)")


def _late_entries(notes: str) -> list[dict[str, Any]]:
    m = re.search(r"Late entries: (.*)$", notes)
    if not m or m.group(1).strip(" .") == "none":
        return []
    out = []
    for part in m.group(1).split(";"):
        e = re.search(r"(\w+) (new|retrap) (\w+ \w+) age (\w) wing (\d+) mass (\d+(?:\.\d+)?)", part)
        if e:
            out.append({"ring": e.group(1), "scheme": HOME, "status": e.group(2), "species": e.group(3),
                        "age": e.group(4), "wing_mm": int(e.group(5)), "mass_g": float(e.group(6))})
    return out


def brain(request: Any) -> Any:
    messages = request.body["messages"]
    system = system_of(messages)
    user = last_user(messages)
    if system.startswith("Transcribe"):
        recs = []
        for line in user.splitlines():
            m = _ROW.match(line)
            if m:
                recs.append({"scheme": m.group(1), "ring": m.group(2), "status": m.group(3), "species": m.group(4),
                             "age": m.group(5), "wing_mm": int(m.group(6)), "mass_g": float(m.group(7))})
        return "```json\n" + json.dumps(recs) + "\n```"
    if system.startswith("You plan the ring checks"):
        data = first_json(user)
        todo = [r for r in data["records"] if r["status"] in ("retrap", "control")]
        if _on("plan-skip"):
            todo = [r for r in todo if r["status"] == "control"] or todo
        return Reply(tool_calls=tuple(tool_call("ring_history", {"ring": r["ring"], "scheme": r["scheme"]}) for r in todo))
    if system.startswith("You review measurements"):
        data = first_json(user)
        return " ".join(f"{f['ring']}: wing {f['wing_mm']} mm re-measured by the second ringer, record kept."
                        for f in data["flagged"])
    if system.startswith("You write EURING"):
        data = first_json(user)
        date = data["date"]
        if _on("iso-date"):
            date = f"{date[4:]}-{date[2:4]}-{date[:2]}"
        lines = []
        records = list(data["records"])
        for e in _late_entries(data.get("notes", "")):
            e["euring"] = next(s[0] for s in SPECIES if s[1] == e["species"])
            records.append(e)
        for r in records:
            status = {"new": "N", "retrap": "R", "control": "C"}[r["status"]]
            orig = "-"
            h = data["histories"].get(f"{r['scheme']} {r['ring']}")
            if h:
                orig = f"{r['scheme']} {r['ring']} {h['place']} {h['date']}"
            lines.append(f"{r['scheme']}|{r['ring']}|{status}|{r['euring']}|{date}|{r['age']}|{r['wing_mm']}|"
                         f"{r['mass_g']}|{data['station']}|orig:{orig}")
        return "\n".join(lines)
    return "?"


# --------------------------------------------------------------------------------------------------
# Tools, retriever, graph.
# --------------------------------------------------------------------------------------------------


@tool
def ring_history(ring: str, scheme: str) -> dict:
    """The original ringing of a ring: species, place, date and age at ringing."""
    key = (HOME, ring) if (_on("home-scheme") and (HOME, ring) in RINGS) else (scheme, ring)
    rec = RINGS.get(key)
    if rec is None:
        return {"ring": ring, "scheme": scheme, "found": False}
    return {"ring": ring, "scheme": scheme, "found": True, **rec}


@tool
def scheme_submit(station: str, lines: list[str]) -> dict:
    """Submit EURING capture lines to the national ringing centre."""
    for line in lines:
        scheme, ring, status, code, date, age, wing, mass, place, orig = line.split("|")
        if not re.fullmatch(r"\d{8}", date):
            raise ValueError(f"ring {scheme} {ring}: date {date!r} is not EURING ddmmyyyy")
        sp = BY_CODE.get(code)
        if sp is None:
            raise ValueError(f"ring {scheme} {ring}: unknown species code {code}")
        lo, hi = sp[4]
        if not lo <= int(wing) <= hi:
            raise ValueError(f"ring {scheme} {ring}: wing {wing} mm outside {lo}-{hi} mm for {sp[2]} ({code})")
        if status == "N" and ring in SUBMITTED.get(place, set()):
            raise ValueError(f"ring {scheme} {ring}: first ringing already received from {place}")
        if status in ("R", "C"):
            if orig == "orig:-":
                raise ValueError(f"ring {scheme} {ring}: {('retrap' if status == 'R' else 'control')} record lacks the "
                                 f"original ringing reference")
            rec = RINGS[(scheme, ring)]
            cited = orig.split()[-2:]
            if cited != [rec["place"], rec["date"]]:
                raise ValueError(f"ring {scheme} {ring}: cites ringing at {cited[0]} {cited[1]}; the centre's record is "
                                 f"{rec['place']} {rec['date']}")
    return {"station": station, "accepted": len(lines), "batch": f"{station[:3].upper()}-{len(lines)}-{lines[0].split('|')[4]}"}


class Biometrics(BaseRetriever):
    """Species reference entries (wing and mass ranges used at the station), ranked by name overlap."""

    k: int = 2

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        q = query.lower().split()
        scored = []
        for i, (code, sci, eng, station_range, _centre) in enumerate(SPECIES):
            words = sci.lower().split()
            score = sum(w in q for w in (words[:1] if _on("genus-match") else words)) / len(words)
            scored.append((-score, i, Document(page_content=f"{sci} ({eng}), EURING {code}: wing {station_range[0]}-"
                                                              f"{station_range[1]} mm",
                                               metadata={"euring": code, "species": sci, "wing_min": station_range[0],
                                                         "wing_max": station_range[1]})))
        scored.sort(key=lambda t: (t[0], t[1]))
        return [d for _, _, d in scored[: self.k]]


class RingState(TypedDict, total=False):
    station: str
    date: str
    sheet: str
    records: list[dict]
    context: str
    plan: list[dict]
    histories: dict
    flagged: list[dict]
    review_note: str
    lines: list[str]
    receipt: dict


_llm: ChatOpenAI | None = None
_graph: Any = None
_biometrics = Biometrics()


def _transcribe(state: RingState) -> dict:
    prompt = ChatPromptTemplate.from_messages([
        ("system", "Transcribe the ringing sheet into JSON records (ring, scheme, status, species, age, wing_mm, mass_g)."),
        ("human", "{sheet}"),
    ])
    records = (prompt | _llm | JsonOutputParser()).invoke({"sheet": state["sheet"]})
    return {"records": records}


class _NotesStore:
    def get(self, station: str, date: str) -> str:
        return NOTES[(station, date)]

    def latest_closed(self, station: str, date: str) -> str:
        """The newest notes the station has closed before the given day."""
        iso = lambda d: d[4:] + d[2:4] + d[:2]  # noqa: E731
        closed = sorted((iso(d), d) for (s, d) in NOTES if s == station and iso(d) < iso(date))
        return NOTES[(station, closed[-1][1])]


def _gather_context(state: RingState) -> dict:
    store = _NotesStore()
    if _on("notes-latest"):
        notes = store.latest_closed(state["station"], state["date"])
    else:
        notes = store.get(state["station"], state["date"])
    return {"context": notes}


def _plan_checks(state: RingState) -> dict:
    msgs = [SystemMessage("You plan the ring checks: call ring_history for every retrap and every control."),
            HumanMessage(json.dumps({"station": state["station"], "records": state["records"],
                                     "notes": state["context"]}))]
    ai = _llm.bind_tools([ring_history]).invoke(msgs)
    return {"plan": [dict(tc) for tc in ai.tool_calls]}


def _run_checks(state: RingState) -> dict:
    histories = {}
    for call in state["plan"]:
        msg = ring_history.invoke({**call, "type": "tool_call"})
        h = json.loads(msg.content)
        histories[f"{h['scheme']} {h['ring']}"] = h
    records, flagged = [], []
    for r in state["records"]:
        docs = _biometrics.invoke(r["species"])
        top = docs[0].metadata
        rec = {**r, "euring": top["euring"]}
        if not top["wing_min"] <= r["wing_mm"] <= top["wing_max"]:
            flagged.append({"ring": r["ring"], "wing_mm": r["wing_mm"], "range": [top["wing_min"], top["wing_max"]]})
        records.append(rec)
    return {"records": records, "histories": histories, "flagged": flagged}


def _route_after_checks(state: RingState) -> str:
    return "review" if state["flagged"] else "compose_submission"


def _review(state: RingState) -> dict:
    msgs = [SystemMessage("You review measurements outside the station's ranges and say whether to keep each record."),
            HumanMessage(json.dumps({"flagged": state["flagged"]}))]
    return {"review_note": _llm.invoke(msgs).content}


def _compose(state: RingState) -> dict:
    writer = _llm.with_config(run_name="euring_writer")
    msgs = [SystemMessage("You write EURING exchange lines, one per capture: scheme|ring|status|code|ddmmyyyy|age|wing|"
                          "mass|place|orig."),
            HumanMessage(json.dumps({"station": state["station"], "date": state["date"], "records": state["records"],
                                     "histories": {k: v for k, v in state["histories"].items() if v.get("found")},
                                     "notes": state["context"], "review": state.get("review_note", "")}))]
    text = (writer | StrOutputParser()).invoke(msgs)
    return {"lines": [l for l in text.splitlines() if l.strip()]}


def _submit(state: RingState) -> dict:
    msg = scheme_submit.invoke({"station": state["station"], "lines": state["lines"]})
    return {"receipt": msg}


def setup(server: Any) -> None:
    global _llm, _graph
    _llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
    g = StateGraph(RingState)
    g.add_node("transcribe", _transcribe)
    g.add_node("gather_context", _gather_context)
    g.add_node("plan_checks", _plan_checks)
    g.add_node("run_checks", _run_checks)
    g.add_node("review", _review)
    g.add_node("compose_submission", _compose)
    g.add_node("submit", _submit)
    g.add_edge(START, "transcribe")
    g.add_edge("transcribe", "gather_context")
    g.add_edge("gather_context", "plan_checks")
    g.add_edge("plan_checks", "run_checks")
    g.add_conditional_edges("run_checks", _route_after_checks, ["review", "compose_submission"])
    g.add_edge("review", "compose_submission")
    g.add_edge("compose_submission", "submit")
    g.add_edge("submit", END)
    _graph = g.compile()


def teardown() -> None:
    global _llm, _graph
    _llm = _graph = None


def run_once(inp: dict, path: Path) -> None:
    tracer = TrajdebugTracer(path=str(path), name=RUN_NAME, task=inp["task"])
    try:
        _graph.invoke({"station": inp["station"], "date": inp["date"], "sheet": inp["sheet"]},
                      config={"callbacks": [tracer]})
    except Exception:  # noqa: BLE001 - the tracer records it; the generator checks the outcome
        pass
