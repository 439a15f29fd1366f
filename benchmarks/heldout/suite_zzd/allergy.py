"""Allergy testing lab (LangGraph, with an assay sub-graph).

A lab graph fetches a test order from the LIMS, retrieves the ordered allergen panel, hands the assay to a
sub-graph (the model picks the patient's tube from the rack, then the analyzer measures specific IgE per
allergen), lets the model interpret the results as report lines, parses them, and in the release step checks the plate's QC and
releases the report to the lab information system, which validates it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TypedDict

from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case
from .kit import active

AGENT = "allergy-lab-release"
ROUTE = "langgraph"
DOMAIN = "allergy testing lab"
SHAPE = "StateGraph: LIMS tool, panel retriever, assay sub-graph (llm tube pick + analyzer loop), llm interpretation, output parser, release node (QC tool, then LIS tool)"

PANELS = {
    "FP6": [("f1", "egg white"), ("f2", "cow's milk"), ("f13", "peanut"), ("f14", "soybean"), ("f3", "cod"),
            ("f4", "wheat")],
    "FP4": [("f1", "egg white"), ("f2", "cow's milk"), ("f13", "peanut"), ("f17", "hazelnut")],
    "IP5": [("d1", "house dust mite"), ("e1", "cat dander"), ("e5", "dog dander"), ("g6", "timothy grass"),
            ("t3", "birch")],
}
# order -> patient, panel, rack (tube -> patient), specific IgE per allergen (kUA/L; "<0.10" below detection)
ORDERS = {
    "OR-5510": ("P-20930", "FP4", {"S-4410": "P-20930", "S-4411": "P-20931"},
                {"f1": "3.52", "f2": "<0.10", "f13": "0.84", "f17": "12.60"}),
    "OR-5527": ("P-21102", "FP6", {"S-4502": "P-21101", "S-4503": "P-21102"},
                {"f1": "0.42", "f2": "1.95", "f13": "<0.10", "f14": "0.21", "f3": "<0.10", "f4": "6.70"}),
    "OR-5533": ("P-21240", "IP5", {"S-4560": "P-21240", "S-4561": "P-21241"},
                {"d1": "18.40", "e1": "2.30", "e5": "<0.10", "g6": "5.05", "t3": "0.66"}),
    "OR-5541": ("P-21377", "FP4", {"S-4610": "P-21376", "S-4611": "P-21377"},
                {"f1": "<0.10", "f2": "0.38", "f13": "25.10", "f17": "1.12"}),
    "OR-5549": ("P-21410", "FP6", {"S-4655": "P-21410", "S-4656": "P-21411"},
                {"f1": "1.10", "f2": "<0.10", "f13": "0.15", "f14": "<0.10", "f3": "3.40", "f4": "0.27"}),
    "OR-5552": ("P-21468", "IP5", {"S-4670": "P-21468", "S-4671": "P-21469"},
                {"d1": "0.55", "e1": "<0.10", "e5": "0.92", "g6": "31.00", "t3": "7.80"}),
}
INPUTS = {k: k for k in ORDERS}
REFS = ["OR-5533", "OR-5541", "OR-5549", "OR-5552"]

CASES = [
    Case("zzd-allergy-01", "wrong_retrieval", "allergy.panel_search", "OR-5510", "PanelRetriever", 1,
         "lis_release_report", 1, "The panel search returns the inhalant panel IP5 for a food-panel order, so "
         "the report's allergens do not match the ordered panel."),
    Case("zzd-allergy-02", "hallucinated_value", "allergy.extra_line", "OR-5510", "ChatOpenAI", 2,
         "lis_release_report", 1, "The interpretation model adds a wheat (f4) result the analyzer never measured "
         "on this order."),
    Case("zzd-allergy-03", "lossy_parsing", "allergy.drop_qualifier", "OR-5527", "InterpretationParser", 1,
         "lis_release_report", 1, "The report-line parser drops the '<' qualifier, so results below the "
         "detection limit are released as measured 0.10 kUA/L values."),
    Case("zzd-allergy-04", "swallowed_error", "allergy.qc_timeout", "OR-5527", "qc_controls", 1,
         "lis_release_report", 1, "The QC tool swallows a LIMS timeout and returns an accepted QC run with no "
         "control levels."),
    Case("zzd-allergy-05", "subagent_wrong_entity", "allergy.rack_neighbour", "OR-5527", "ChatOpenAI", 1,
         "lis_release_report", 1, "The assay sub-graph's model picks the neighbouring tube of another patient "
         "in the rack, and the analyzer measures that patient's serum."),
]


class LabState(TypedDict, total=False):
    order_id: str
    order: dict
    panel: list
    tube: str
    results: dict
    report_lines: list
    qc: dict
    release: dict


def _policy(request):
    messages = request.body["messages"]
    system, user = messages[0]["content"], json.loads(messages[-1]["content"])
    if system.startswith("You pick the tube"):
        rack = user["rack"]
        mine = [t for t in rack if t["patient"] == user["patient"]]
        pick = mine[0]["tube"]
        if active("allergy.rack_neighbour"):
            pick = [t for t in rack if t["patient"] != user["patient"]][0]["tube"]
        return json.dumps({"tube": pick})
    if system.startswith("You interpret specific IgE"):
        lines = []
        for code, value in user["results"].items():
            number = float(value.lstrip("<"))
            cls = 0 if number < 0.35 else 1 if number < 0.7 else 2 if number < 3.5 else 3 if number < 17.5 else 4
            lines.append(f"{code} {value} kUA/L class {cls}")
        if active("allergy.extra_line") and "f4" not in user["results"]:
            lines.append("f4 0.48 kUA/L class 1")
        return "\n".join(lines)
    raise ValueError("unexpected prompt")


class ReleaseRejected(RuntimeError):
    pass


class PanelRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager=None) -> list[Document]:
        panel = query.split()[-1]
        if active("allergy.panel_search"):
            panel = "IP5"
        return [Document(page_content=f"{code}: {name}", metadata={"panel": panel, "code": code})
                for code, name in PANELS[panel]]


class InterpretationParser(BaseOutputParser[list]):
    def parse(self, text: str) -> list:
        pattern = r"(\w+) <?([\d.]+) kUA/L class (\d)" if active("allergy.drop_qualifier") \
            else r"(\w+) (<?[\d.]+) kUA/L class (\d)"
        return [{"allergen": m.group(1), "value": m.group(2), "class": int(m.group(3))}
                for m in (re.match(pattern, line) for line in text.splitlines()) if m]


def build(server, key: str):
    patient, panel_code, rack, measured = ORDERS[key]
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="lab-model", max_retries=0)
    retriever = PanelRetriever()
    parser = InterpretationParser()

    @tool
    def lims_fetch_order(order_id: str) -> dict:
        """Fetch a test order from the LIMS."""
        return {"order_id": order_id, "patient": patient, "panel": panel_code, "plate": f"PL-{order_id[-2:]}",
                "rack": [{"tube": t, "patient": p} for t, p in rack.items()]}

    @tool
    def analyzer_run(tube: str, allergen: str) -> dict:
        """Measure specific IgE for one allergen on a serum tube."""
        values = measured if rack[tube] == patient else {c: "0.12" for c in measured}
        return {"tube": tube, "allergen": allergen, "ige": values.get(allergen, "<0.10"), "unit": "kUA/L"}

    @tool
    def qc_controls(plate: str) -> dict:
        """Fetch the plate's QC run (control levels and acceptance)."""
        levels = [{"level": n, "value": v, "in_range": True} for n, v in (("low", 0.41), ("mid", 3.2), ("high", 19.8))]
        try:
            if active("allergy.qc_timeout"):
                raise TimeoutError("LIMS QC endpoint timed out after 30 s")
            return {"qc_run": f"QC-{plate[3:]}", "accepted": True, "levels": levels}
        except TimeoutError:
            return {"qc_run": f"QC-{plate[3:]}", "accepted": True, "levels": []}

    @tool
    def lis_release_report(report: dict) -> dict:
        """Release the patient report to the laboratory information system."""
        ordered = {c for c, _ in PANELS[panel_code]}
        got = [line["allergen"] for line in report["lines"]]
        if report["tube_patient"] != patient:
            raise ReleaseRejected(f"HTTP 422: results are from tube {report['tube']} (patient "
                                  f"{report['tube_patient']}); order {key} is for patient {patient}")
        if not set(got) <= ordered:
            raise ReleaseRejected(f"HTTP 422: report allergens {sorted(set(got) - ordered)} are not on ordered "
                                  f"panel {panel_code} for order {key}")
        for line in report["lines"]:
            if line["allergen"] not in measured:
                raise ReleaseRejected(f"HTTP 422: result {line['allergen']} has no analyzer measurement for tube "
                                      f"{report['tube']}")
            if measured[line["allergen"]].startswith("<") and not line["value"].startswith("<"):
                raise ReleaseRejected(f"HTTP 422: {line['allergen']} reported as {line['value']} kUA/L but the "
                                      f"analyzer flagged it below the detection limit ({measured[line['allergen']]})")
        if len(report["qc"]["levels"]) < 3:
            raise ReleaseRejected(f"HTTP 409: plate {report['plate']} has no complete QC run "
                                  f"({report['qc']['qc_run']} has {len(report['qc']['levels'])} control levels, "
                                  f"3 required)")
        return {"status": 201, "report_id": f"RPT-{key}"}

    def receive_order(state: LabState) -> dict:
        return {"order": lims_fetch_order.invoke({"order_id": state["order_id"]})}

    def load_panel(state: LabState) -> dict:
        docs = retriever.invoke(f"allergen panel {state['order']['panel']}")
        return {"panel": [d.metadata["code"] for d in docs]}

    def select_tube(state: LabState) -> dict:
        reply = llm.invoke([SystemMessage("You pick the tube of the order's patient from the rack. Answer JSON."),
                            HumanMessage(json.dumps({"patient": state["order"]["patient"],
                                                     "rack": state["order"]["rack"]}))])
        return {"tube": json.loads(reply.content)["tube"]}

    def run_analyzer(state: LabState) -> dict:
        return {"results": {code: analyzer_run.invoke({"tube": state["tube"], "allergen": code})["ige"]
                            for code in state["panel"]}}

    sub = StateGraph(LabState)
    sub.add_node("select_tube", select_tube)
    sub.add_node("run_analyzer", run_analyzer)
    sub.add_edge(START, "select_tube")
    sub.add_edge("select_tube", "run_analyzer")
    sub.add_edge("run_analyzer", END)
    assay_runner = sub.compile()

    def interpret_results(state: LabState) -> dict:
        reply = llm.invoke([SystemMessage("You interpret specific IgE results as report lines "
                                          "'<code> <value> kUA/L class <n>'."),
                            HumanMessage(json.dumps({"patient": state["order"]["patient"],
                                                     "results": state["results"]}))])
        return {"report_lines": parser.invoke(reply)}

    def release_report(state: LabState) -> dict:
        qc = qc_controls.invoke({"plate": state["order"]["plate"]})
        report = {"order": state["order_id"], "plate": state["order"]["plate"], "tube": state["tube"],
                  "tube_patient": rack[state["tube"]], "lines": state["report_lines"], "qc": qc}
        return {"release": lis_release_report.invoke({"report": report})}

    g = StateGraph(LabState)
    g.add_node("receive_order", receive_order)
    g.add_node("load_panel", load_panel)
    g.add_node("assay_runner", assay_runner)
    g.add_node("interpret_results", interpret_results)
    g.add_node("release_report", release_report)
    names = ["receive_order", "load_panel", "assay_runner", "interpret_results", "release_report"]
    g.add_edge(START, names[0])
    for a, b in zip(names, names[1:]):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile()


def record(server, key: str, path: Path) -> None:
    server.use(_policy)
    graph = build(server, key)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"release allergy report for order {key}")
    try:
        graph.invoke({"order_id": key}, config={"callbacks": [tracer], "run_name": AGENT})
    except ReleaseRejected:
        pass
