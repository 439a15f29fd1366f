"""A dendrochronology lab dating the timbers of a historic building: read the submission, plan the
measurements, read each core's ring-width file, crossdate it against the regional master chronology,
estimate felling dates from sapwood and bark edge, draft the report and validate it before issue.

Route: a LangGraph StateGraph (ChatOpenAI, a tool, a retriever, output parsers, lambdas, a conditional
edge) recorded with trajdebug's LangChain callback handler, JSONL.
"""

from __future__ import annotations

import json
import math
import random
import re
import zlib
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.output_parsers import BaseOutputParser, JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from .common import RT, json_block, last_user

NAME = "dendro-lab"
ROUTE = "langgraph"
DOMAIN = "dendrochronology lab (dating building timbers)"
SHAPE = (
    "intake node (llm + JSON parser) -> plan node (llm + parser) -> measure node (loop: ring-width tool + "
    "Tucson parser) -> master node (retriever) -> crossdate node (loop: correlate lambda) -> conditional edge "
    "-> [mark_undated] -> felling node (code) -> report node (llm + parser) -> validate node"
)
SWITCH: str | None = None

T_MIN = 5.0  # the lab's threshold for accepting a crossdate

MASTERS = [  # the order of the lab's index
    {"id": "baltic-oak", "species": "oak", "start": 1150, "end": 1650,
     "text": "Baltic oak, Gdansk and Vistula export timber (panels, barrels), 1150-1650",
     "sapwood": [9, 24]},
    {"id": "rhine-main-oak", "species": "oak", "start": 1180, "end": 1950,
     "text": "Lowland oak, Rhine-Main region (Hesse, Palatinate), 1180-1950", "sapwood": [10, 30]},
    {"id": "engadin-larch", "species": "larch", "start": 1050, "end": 2000,
     "text": "Alpine larch, Engadin and Val Mustair, 1050-2000", "sapwood": [15, 45]},
    {"id": "thames-oak", "species": "oak", "start": 1200, "end": 1900,
     "text": "Oak, Thames valley and the Weald (south-east England), 1200-1900", "sapwood": [9, 41]},
]


def _master_index(mid: str, start: int, end: int) -> dict[int, float]:
    rng = random.Random(zlib.crc32(mid.encode()))
    out, prev = {}, 0.0
    for y in range(start, end + 1):
        prev = 0.45 * prev + rng.gauss(0.0, 0.28)
        out[y] = round(max(0.2, 1.0 + prev), 3)
    return out


MASTER_INDEX = {m["id"]: _master_index(m["id"], m["start"], m["end"]) for m in MASTERS}

# building -> samples (true end year, rings, sapwood, bark edge, phase) and the submission's facts
BUILDINGS = {
    "zehntscheune": {
        "building": "Zehntscheune, Ober-Moerlen (tithe barn)", "region": "Rhine-Main", "species": "oak",
        "master": "rhine-main-oak", "documented": 1489, "documented_note": "roof recorded as complete in 1489 "
        "(manorial accounts)",
        "samples": [("ZOM-01", 1489, 118, 21, True, "roof"), ("ZOM-02", 1489, 96, 17, True, "roof"),
                    ("ZOM-03", 1471, 84, 6, False, "roof"), ("ZOM-04", 1480, 102, 12, False, "roof")],
    },
    "st-jakob": {
        "building": "St. Jakob, Mainz-Hechtsheim (tower floor)", "region": "Rhine-Main", "species": "oak",
        "master": "rhine-main-oak", "documented": None, "documented_note": "",
        "samples": [("SJH-01", 1543, 131, 19, True, "tower floor"), ("SJH-02", 1542, 110, 18, True, "tower floor"),
                    ("SJH-03", 1530, 88, 9, False, "tower floor")],
    },
    "godalming": {
        "building": "Hall house, Church Street, Godalming", "region": "Thames valley", "species": "oak",
        "master": "thames-oak", "documented": None, "documented_note": "",
        "samples": [("GOD-01", 1488, 87, 22, True, "open hall"), ("GOD-02", 1488, 120, 25, True, "open hall"),
                    ("GOD-03", 1476, 90, 7, False, "open hall"), ("GOD-04", 1487, 110, 26, True, "open hall")],
    },
    "chesa-planta": {
        "building": "Chesa Planta, Zuoz (stable roof)", "region": "Engadin", "species": "larch",
        "master": "engadin-larch", "documented": 1650, "documented_note": "date carved on the door lintel: 1650",
        "samples": [("CPZ-01", 1647, 140, 33, True, "stable roof"), ("CPZ-02", 1647, 126, 30, True, "stable roof"),
                    ("CPZ-03", 1640, 100, 20, False, "stable roof")],
    },
    "kelterhaus": {
        "building": "Kelterhaus, Bensheim (press house)", "region": "Rhine-Main", "species": "oak",
        "master": "rhine-main-oak", "documented": None, "documented_note": "",
        "samples": [("KBH-01", 1612, 114, 14, False, "ground floor"), ("KBH-02", 1609, 70, 11, False, "ground floor"),
                    ("KBH-03", 1617, 96, 19, True, "ground floor"), ("KBH-04", 1566, 46, 0, False, "ground floor")],
    },
}


def _submission(key: str) -> str:
    b = BUILDINGS[key]
    lines = [f"Building: {b['building']}", f"Region: {b['region']}", f"Timber: {b['species']}"]
    if b["documented"]:
        lines.append(f"Documentary evidence: {b['documented_note']}")
    lines.append("Cores:")
    for sid, _end, n, sap, bark, phase in b["samples"]:
        lines.append(f"- {sid}: {phase}, {n} rings counted in the field, {sap} sapwood rings, "
                     f"bark edge {'present' if bark else 'absent'}")
    return "\n".join(lines)


INPUTS = {k: {"task": f"date the timbers of {BUILDINGS[k]['building']}", "submission": _submission(k)}
          for k in BUILDINGS}


def _widths(sid: str, master: str, end: int, n: int) -> list[int]:
    rng = random.Random(zlib.crc32(sid.encode()))
    idx = MASTER_INDEX[master]
    out = []
    for age, year in enumerate(range(end - n + 1, end + 1)):
        trend = 1.8 * math.exp(-age / 70.0) + 0.6
        out.append(max(5, int(round(100 * trend * idx[year] * math.exp(rng.gauss(0.0, 0.10))))))
    return out


RWL = {}
for _b in BUILDINGS.values():
    for _sid, _end, _n, *_rest in _b["samples"]:
        RWL[_sid] = _widths(_sid, _b["master"], _end, _n)


def _tucson(sid: str, widths: list[int]) -> str:
    lines, year = [], 1001  # undated series: relative years from 1001
    values = [*widths, 999]
    for i in range(0, len(values), 10):
        chunk = values[i:i + 10]
        lines.append(f"{sid:<8}{year + i:>4}" + "".join(f"{v:>6}" for v in chunk))
    return "\n".join(lines)


CASES = [
    {"n": 1, "input": "st-jakob", "kind": "wrong_retrieval", "root": ("MasterChronologies", 1),
     "failure": ("validate_report", 1),
     "description": "The master-chronology search for Rhine-Main oak returns the Baltic oak chronology (first "
                    "oak in the index), so none of the St. Jakob cores crossdates.",
     "what": "Baltic oak master retrieved for Rhine-Main oak"},
    {"n": 2, "input": "zehntscheune", "kind": "off_by_one", "root": ("correlate", 1),
     "failure": ("validate_report", 1),
     "description": "The crossdating step counts the end year as start year plus ring count, one year past the "
                    "last ring, so the bark-edge cores give a felling year of 1490.",
     "what": "end year = start + n instead of start + n - 1"},
    {"n": 3, "input": "chesa-planta", "kind": "format_drift", "root": ("ChatOpenAI", 3),
     "failure": ("validate_report", 1),
     "description": "The report model writes the felling year as the phrase 'winter 1647/48' where the report "
                    "schema takes a year number.",
     "what": "felling_year given as text"},
    {"n": 4, "input": "godalming", "kind": "lossy_parsing", "root": ("TucsonParser", 1),
     "failure": ("validate_report", 1),
     "description": "The ring-width parser skips every line with fewer than ten values, so GOD-01 loses its last "
                    "seven rings, bark edge included, and dates seven years early.",
     "what": "last partial decade line dropped"},
    {"n": 5, "input": "kelterhaus", "kind": "plan_error", "root": ("ChatOpenAI", 2),
     "failure": ("validate_report", 1),
     "description": "The measurement plan leaves out KBH-03 as having fewer than 50 rings although 96 were "
                    "counted, and KBH-03 is the only core with bark edge.",
     "what": "plan skips the bark-edge core"},
]


# ---------------------------------------------------------------- the model


def brain(request):
    prompt = last_user(request)
    if prompt.startswith("Extract the submission"):
        text = prompt.split("\n", 1)[1]
        info: dict[str, Any] = {"samples": []}
        for line in text.splitlines():
            if line.startswith("Building: "):
                info["building"] = line[10:]
            elif line.startswith("Region: "):
                info["region"] = line[8:]
            elif line.startswith("Timber: "):
                info["species"] = line[8:]
            elif line.startswith("Documentary evidence: "):
                info["documented"] = int(re.search(r"\b1\d{3}\b", line).group(0))
            elif line.startswith("- "):
                sid, rest = line[2:].split(": ", 1)
                phase, rings, sap, bark = [p.strip() for p in rest.split(", ")]
                info["samples"].append({"id": sid, "phase": phase, "rings": int(rings.split()[0]),
                                        "sapwood": int(sap.split()[0]), "bark_edge": bark.endswith("present")})
        info.setdefault("documented", None)
        return "```json\n" + json.dumps(info, indent=1) + "\n```"
    if prompt.startswith("Plan the measurements"):
        meta = json_block(prompt)
        measure, skip = [], []
        for s in meta["samples"]:
            short = s["rings"] < 50 or (SWITCH == "zze_dendro_5" and s["id"] == "KBH-03")
            if short:
                skip.append({"id": s["id"], "reason": "fewer than 50 rings"})
            else:
                measure.append(s["id"])
        return json.dumps({"measure": measure, "skip": skip,
                           "master_query": f"{meta['species']} {meta['region']}"})
    if prompt.startswith("Draft the dating report"):
        res = json_block(prompt)
        fy = res["felling_year"]
        year_field: Any = fy
        if fy is not None and res["winter"] and SWITCH == "zze_dendro_3":
            year_field = f"winter {fy}/{str(fy + 1)[-2:]}"
        text = (f"{len(res['dated'])} of {len(res['dated']) + len(res['not_dated'])} cores dated. "
                + (f"Felled in the winter of {fy}/{fy + 1}." if fy and res["winter"] else
                   f"Felling range {res['range']}." if res["range"] else "No felling date."))
        return json.dumps({"felling_year": year_field, "felling_range": res["range"], "dated": res["dated"],
                           "not_dated": res["not_dated"], "summary": text})
    return "Please send the submission."


# ---------------------------------------------------------------- tools, parsers, retriever


@tool
def read_ring_widths(sample_id: str) -> str:
    """Read the measurement file (Tucson format, 0.01 mm) of one core from the measuring stage."""
    return _tucson(sample_id, RWL[sample_id])


class TucsonParser(BaseOutputParser[dict]):
    """Ring widths out of a Tucson decadal file."""

    def parse(self, text: str) -> dict:
        sid, widths = None, []
        for line in text.splitlines():
            sid = line[:8].strip()
            values = [int(line[i:i + 6]) for i in range(12, len(line), 6)]
            if SWITCH == "zze_dendro_4" and len(values) < 10:
                continue  # a header or note line
            for v in values:
                if v == 999:
                    break
                widths.append(v)
        return {"id": sid, "n": len(widths), "widths": widths}

    @property
    def _type(self) -> str:
        return "tucson"


def _words(text: str) -> set[str]:
    for ch in ",-()":
        text = text.replace(ch, " ")
    return set(text.lower().split())


class MasterChronologies(BaseRetriever):
    """The lab's index of regional master chronologies."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        words = _words(query)
        scored = []
        for i, m in enumerate(MASTERS):
            if SWITCH == "zze_dendro_1":
                score = len(words & {m["species"]})
            else:
                score = len(words & _words(m["text"]))
            scored.append((-score, i, m))
        scored.sort(key=lambda t: (t[0], t[1]))
        return [Document(page_content=m["text"],
                         metadata={"id": m["id"], "start": m["start"], "end": m["end"], "sapwood": m["sapwood"]})
                for _, _, m in scored[:2]]


def _correlate(args: dict) -> dict:
    import numpy as np

    series, master = args["series"], args["master"]
    w = np.asarray(series["widths"], dtype=float)
    n = len(w)
    kernel = np.ones(11)
    counts = np.convolve(np.ones(n), kernel, mode="same")
    idx = w / (np.convolve(w, kernel, mode="same") / counts)  # width over its 11-year running mean
    years = MASTER_INDEX[master["id"]]
    first = master["start"]
    m = np.asarray([years[y] for y in range(first, master["end"] + 1)], dtype=float)
    windows = np.lib.stride_tricks.sliding_window_view(m, n)
    wc = windows - windows.mean(axis=1, keepdims=True)
    ic = idx - idx.mean()
    r = (wc @ ic) / np.sqrt((wc * wc).sum(axis=1) * (ic @ ic))
    t = r * np.sqrt(n - 2) / np.sqrt(np.maximum(1e-9, 1 - r * r))
    k = int(np.argmax(t))
    start = first + k
    end = start + n - (0 if SWITCH == "zze_dendro_2" else 1)
    return {"id": series["id"], "t": round(float(t[k]), 2), "r": round(float(r[k]), 3), "start_year": start,
            "end_year": end, "overlap": n}


correlate = RunnableLambda(_correlate, name="correlate")


# ---------------------------------------------------------------- the graph


class LabState(TypedDict, total=False):
    submission: str
    meta: dict
    plan: dict
    series: list
    master: dict
    dating: list
    felling: dict
    report: dict
    verdict: str


def build_graph(llm):
    parser = JsonOutputParser()
    rwl = TucsonParser()
    index = MasterChronologies()

    def intake(state: LabState) -> dict:
        msg = llm.invoke([("system", "You are the lab's intake clerk. Answer with JSON."),
                          ("user", "Extract the submission as JSON (building, region, species, documented, "
                                   "samples):\n" + state["submission"])])
        return {"meta": parser.invoke(msg)}

    def plan(state: LabState) -> dict:
        msg = llm.invoke([("system", "You plan the lab's measurements. Answer with JSON."),
                          ("user", "Plan the measurements for this submission (cores with fewer than 50 rings "
                                   "cannot be dated): " + json.dumps(state["meta"]))])
        return {"plan": parser.invoke(msg)}

    def measure(state: LabState) -> dict:
        series = []
        for sid in state["plan"]["measure"]:
            text = read_ring_widths.invoke({"sample_id": sid})
            series.append(rwl.invoke(text))
        return {"series": series}

    def master(state: LabState) -> dict:
        docs = index.invoke(state["plan"]["master_query"])
        top = docs[0]
        return {"master": {"name": top.page_content, **top.metadata}}

    def crossdate(state: LabState) -> dict:
        return {"dating": [correlate.invoke({"series": s, "master": state["master"]}) for s in state["series"]]}

    def route_after_crossdate(state: LabState) -> str:
        return "mark_undated" if any(d["t"] < T_MIN for d in state["dating"]) else "felling"

    def mark_undated(state: LabState) -> dict:
        return {"dating": [{**d, "undated": d["t"] < T_MIN} for d in state["dating"]]}

    def felling(state: LabState) -> dict:
        samples = {s["id"]: s for s in state["meta"]["samples"]}
        sap_lo, sap_hi = state["master"]["sapwood"]
        per, bark_years = {}, []
        for d in state["dating"]:
            if d.get("undated") or d["t"] < T_MIN:
                continue
            s = samples[d["id"]]
            if s["bark_edge"]:
                per[d["id"]] = {"felled": d["end_year"], "phase": s["phase"]}
                bark_years.append(d["end_year"])
            else:
                per[d["id"]] = {"range": [d["end_year"] + max(0, sap_lo - s["sapwood"]),
                                          d["end_year"] + max(0, sap_hi - s["sapwood"])], "phase": s["phase"]}
        if bark_years:
            year, rng, winter = max(bark_years), None, True
        elif per:
            lo = max(p["range"][0] for p in per.values())
            hi = min(p["range"][1] for p in per.values())
            year, rng, winter = None, [lo, max(lo, hi)], False
        else:
            year, rng, winter = None, None, False
        return {"felling": {"felling_year": year, "range": rng, "winter": winter, "per_sample": per}}

    def report(state: LabState) -> dict:
        dated = [d["id"] for d in state["dating"] if d["t"] >= T_MIN]
        not_dated = [{"id": d["id"], "reason": f"t = {d['t']} against {state['master']['id']}"}
                     for d in state["dating"] if d["t"] < T_MIN]
        not_dated += state["plan"]["skip"]
        facts = {**state["felling"], "dated": dated, "not_dated": not_dated}
        msg = llm.invoke([("system", "You draft dendrochronology reports as JSON."),
                          ("user", "Draft the dating report from these results: " + json.dumps(facts))])
        return {"report": parser.invoke(msg)}

    def validate(state: LabState) -> dict:
        rep, meta = state["report"], state["meta"]
        fy = rep["felling_year"]
        if fy is not None and not isinstance(fy, int):
            raise ValueError(f"report field felling_year must be a year, got {fy!r}")
        rings = {s["id"]: s["rings"] for s in meta["samples"]}
        accounted = set(rep["dated"]) | {d["id"] for d in rep["not_dated"]}
        missing = sorted(set(rings) - accounted)
        if missing:
            raise ValueError(f"cores {missing} were submitted but the report does not account for them")
        for d in rep["not_dated"]:
            if d["reason"] == "fewer than 50 rings" and rings[d["id"]] >= 50:
                raise ValueError(f"{d['id']} is reported as not measured for having fewer than 50 rings, but "
                                 f"{rings[d['id']]} rings were counted in the field")
        if not rep["dated"]:
            reasons = "; ".join(f"{d['id']}: {d['reason']}" for d in rep["not_dated"])
            raise ValueError(f"no core could be dated, so no report can be issued ({reasons})")
        per = state["felling"]["per_sample"]
        by_phase: dict[str, list[tuple[str, int]]] = {}
        for sid, p in per.items():
            if "felled" in p:
                by_phase.setdefault(p["phase"], []).append((sid, p["felled"]))
        for phase, dates in by_phase.items():
            years = [y for _, y in dates]
            if max(years) - min(years) > 2:
                listing = ", ".join(f"{sid} {y}" for sid, y in sorted(dates))
                raise ValueError(f"bark-edge cores of the {phase} give felling years {listing}: "
                                 f"more than 2 years apart within one phase")
        doc = meta.get("documented")
        if doc and fy and fy > doc:
            raise ValueError(f"felling year {fy} is later than the documented completion in {doc}")
        return {"verdict": "issued"}

    g = StateGraph(LabState)
    for name, fn in [("intake", intake), ("plan", plan), ("measure", measure), ("master", master),
                     ("crossdate", crossdate), ("mark_undated", mark_undated), ("felling", felling),
                     ("report", report), ("validate_report", validate)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "plan")
    g.add_edge("plan", "measure")
    g.add_edge("measure", "master")
    g.add_edge("master", "crossdate")
    g.add_conditional_edges("crossdate", route_after_crossdate, {"mark_undated": "mark_undated", "felling": "felling"})
    g.add_edge("mark_undated", "felling")
    g.add_edge("felling", "report")
    g.add_edge("report", "validate_report")
    g.add_edge("validate_report", END)
    return g.compile()


_GRAPH: dict[str, Any] = {}


def setup() -> None:
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=RT.base_url, api_key="not-needed", model=RT.model, max_retries=0, temperature=0)
    _GRAPH["app"] = build_graph(llm)


def execute(key: str, path: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=path, name=NAME, task=INPUTS[key]["task"])
    try:
        _GRAPH["app"].invoke({"submission": INPUTS[key]["submission"]}, config={"callbacks": [tracer]})
    except ValueError:
        pass
