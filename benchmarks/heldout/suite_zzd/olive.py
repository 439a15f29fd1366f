"""Olive oil pressing mill (LangGraph).

A mill's intake graph reads a grower's delivery note with the model, weighs every lot on the weighbridge,
runs the acidity test per lot, lets the model grade the lots, routes the delivery to the press or to the
refining queue, books a press line, works out the oil yield and issues the grower's certificate through the
mill's certification API, which cross-checks it against the lab, the press log and the weighbridge.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case
from .kit import active

AGENT = "olive-mill-intake"
ROUTE = "langgraph"
DOMAIN = "olive oil pressing mill"
SHAPE = "StateGraph: llm note reader + registry tool, weighbridge and acidity tool loops, llm grading, conditional route, press booking, yield node, certificate"

DELIVERIES = {
    "G-118-1103": ("Grower G-118 (Finca Alta) harvested 2026-11-03: lot L-1 Picual 640 kg, lot L-2 Hojiblanca "
                   "410 kg, lot L-3 Picual 520 kg.", {"L-1": 0.31, "L-2": 0.55, "L-3": 0.42}),
    "G-204-1104": ("Grower G-204 (Cortijo Sur) harvested 2026-11-04: lot L-1 Arbequina 380 kg, lot L-2 Picual "
                   "455 kg, lot L-3 Picual 300 kg, lot L-4 Cornicabra 275 kg.",
                   {"L-1": 0.28, "L-2": 0.64, "L-3": 2.40, "L-4": 0.37}),
    "G-031-1102": ("Grower G-031 (Olivar Viejo) harvested 2026-11-02: lot L-1 Picual 700 kg, lot L-2 Picual "
                   "350 kg.", {"L-1": 0.45, "L-2": 0.52}),
    "G-077-1105": ("Grower G-077 (Los Almendros) harvested 2026-11-05: lot L-1 Hojiblanca 290 kg, lot L-2 "
                   "Arbequina 310 kg, lot L-3 Picual 505 kg.", {"L-1": 0.38, "L-2": 1.45, "L-3": 0.29}),
    "G-142-1103": ("Grower G-142 (Huerta Baja) harvested 2026-11-03: lot L-1 Cornicabra 610 kg, lot L-2 "
                   "Picual 220 kg.", {"L-1": 3.10, "L-2": 0.47}),
    "G-009-1104": ("Grower G-009 (Cerro Blanco) harvested 2026-11-04: lot L-1 Picual 480 kg.", {"L-1": 0.33}),
}
INPUTS = {k: k for k in DELIVERIES}
REFS = ["G-031-1102", "G-077-1105", "G-142-1103", "G-009-1104"]
YIELD_PCT = {"Picual": 21.0, "Hojiblanca": 18.5, "Arbequina": 19.0, "Cornicabra": 20.0}
DENSITY = 0.916  # kg per litre

CASES = [
    Case("zzd-olive-01", "unit_error", "olive.kg_as_litres", "G-118-1103", "compute_yield", 1,
         "issue_certificate", 1, "The yield node reports kilograms of oil as litres without the density "
         "conversion, so the certificate declares fewer litres than the press log."),
    Case("zzd-olive-02", "wrong_routing", "olive.route_first_lot", "G-204-1104", "route_after_grading", 1,
         "issue_certificate", 1, "The router looks only at the first lot's grade and sends a delivery with a "
         "lampante lot to the press instead of the refining queue."),
    Case("zzd-olive-03", "format_drift", "olive.date_dmy", "G-118-1103", "ChatOpenAI", 1,
         "issue_certificate", 1, "The note reader answers the harvest date as 03/11/2026 instead of ISO, which the "
         "graph passes on unchanged and the certificate API rejects."),
    Case("zzd-olive-04", "stale_data", "olive.cached_schedule", "G-118-1103", "press_schedule_lookup", 1,
         "issue_certificate", 1, "The press schedule comes from yesterday's cache and offers line P2, which is out "
         "of service today, so the certificate names a press run the press log does not have."),
    Case("zzd-olive-05", "tool_ignores_argument", "olive.acidity_lot", "G-118-1103", "acidity_test", 2,
         "issue_certificate", 1, "The acidity test ignores its lot argument and returns lot L-1's reading for "
         "every lot, so the certificate's acidity for L-2 disagrees with the lab record."),
]


class MillState(TypedDict, total=False):
    note: str
    delivery: dict
    weights: dict
    acidity: dict
    grades: dict
    press: dict
    oil: dict
    certificate: dict


def _policy(request):
    messages = request.body["messages"]
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("You read delivery notes"):
        grower = re.search(r"Grower (G-\d+)", user).group(1)
        date = re.search(r"harvested (\d{4})-(\d\d)-(\d\d)", user)
        iso = "-".join(date.groups())
        if active("olive.date_dmy"):
            iso = f"{date.group(3)}/{date.group(2)}/{date.group(1)}"
        lots = [{"lot": m.group(1), "variety": m.group(2), "declared_kg": int(m.group(3))}
                for m in re.finditer(r"lot (L-\d) (\w+) (\d+) kg", user)]
        return json.dumps({"grower": grower, "harvest_date": iso, "lots": lots})
    if system.startswith("You grade olive oil"):
        readings = json.loads(user)["acidity_pct"]
        grades = {}
        for lot, pct in readings.items():
            grades[lot] = "extra_virgin" if pct <= 0.8 else "virgin" if pct <= 2.0 else "lampante"
        return json.dumps({"grades": grades})
    raise ValueError("unexpected prompt")


class CertificateRejected(RuntimeError):
    pass


def build(server, key: str):
    note, lab = DELIVERIES[key]
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="mill-model", max_retries=0)

    @tool
    def weighbridge_read(lot: str) -> dict:
        """Read the weighbridge ticket for one lot (net kg)."""
        declared = int(re.search(rf"lot {lot} \w+ (\d+) kg", note).group(1))
        return {"lot": lot, "ticket": f"WB-{key[2:5]}-{lot[-1]}", "net_kg": declared - 6}

    @tool
    def grower_registry(grower: str) -> dict:
        """Look up a grower in the cooperative's registry."""
        return {"grower": grower, "member": True, "cooperative": "Coop. San Isidro", "payment": "oil share"}

    @tool
    def acidity_test(lot: str, sample: str) -> dict:
        """Run the free acidity titration for a lot's sample (% oleic acid)."""
        which = "L-1" if active("olive.acidity_lot") else lot
        return {"lot": lot, "sample": sample, "acidity_pct": lab[which], "method": "ISO 660"}

    @tool
    def press_schedule_lookup(day: str, kg: float) -> dict:
        """Find a free press line for the day."""
        if active("olive.cached_schedule"):
            return {"as_of": "2026-11-05T18:00", "line": "P2", "slot": "14:00", "capacity_kg": 2500}
        return {"as_of": "2026-11-06T07:30", "line": "P1", "slot": "15:30", "capacity_kg": 3000}

    def post_certificate(certificate: dict) -> dict:
        """POST the grower certificate to the mill's certification API (a plain HTTP client call)."""
        if not re.fullmatch(r"\d{4}-\d\d-\d\d", certificate["harvest_date"]):
            raise CertificateRejected(f"HTTP 400 Bad Request: field 'harvest_date' value "
                                      f"'{certificate['harvest_date']}' is not an ISO 8601 date")
        if certificate["route"] == "press" and certificate["press_line"] != "P1":
            raise CertificateRejected(f"HTTP 409 Conflict: press line {certificate['press_line']} has no run in "
                                      f"the press log for 2026-11-06 (line out of service, cleaning log CL-77)")
        for lot in certificate["lots"]:
            if abs(lot["acidity_pct"] - lab[lot["lot"]]) > 0.005:
                raise CertificateRejected(f"HTTP 422 Unprocessable Entity: lot {lot['lot']} acidity "
                                          f"{lot['acidity_pct']}% differs from laboratory record "
                                          f"{lab[lot['lot']]}%")
            if certificate["route"] == "press" and lot["grade"] == "lampante":
                raise CertificateRejected(f"HTTP 422 Unprocessable Entity: lot {lot['lot']} graded lampante "
                                          f"({lot['acidity_pct']}%) cannot be certified for direct sale; "
                                          f"refining route required")
            net = int(re.search(rf"lot {lot['lot']} \w+ (\d+) kg", note).group(1)) - 6
            logged = round(net * YIELD_PCT[lot["variety"]] / 100 / DENSITY, 1)
            if abs(lot["oil_litres"] - logged) > 0.5:
                raise CertificateRejected(f"HTTP 422 Unprocessable Entity: lot {lot['lot']} declares "
                                          f"{lot['oil_litres']} l, press log records {logged} l")
        return {"status": 201, "certificate_no": f"CERT-{certificate['grower']}-{len(certificate['lots'])}"}

    def read_delivery_note(state: MillState) -> dict:
        reply = llm.invoke([SystemMessage("You read delivery notes into JSON: grower, harvest_date, lots."),
                            HumanMessage(state["note"])])
        delivery = json.loads(reply.content)
        member = grower_registry.invoke({"grower": delivery["grower"]})
        return {"delivery": {**delivery, "cooperative": member["cooperative"]}}

    def weigh_lots(state: MillState) -> dict:
        return {"weights": {lot["lot"]: weighbridge_read.invoke({"lot": lot["lot"]})["net_kg"]
                            for lot in state["delivery"]["lots"]}}

    def test_acidity(state: MillState) -> dict:
        out = {}
        for i, lot in enumerate(state["delivery"]["lots"]):
            out[lot["lot"]] = acidity_test.invoke({"lot": lot["lot"], "sample": f"S{i + 1}"})["acidity_pct"]
        return {"acidity": out}

    def grade_lots(state: MillState) -> dict:
        reply = llm.invoke([SystemMessage("You grade olive oil lots by free acidity. Answer JSON."),
                            HumanMessage(json.dumps({"acidity_pct": state["acidity"]}))])
        return {"grades": json.loads(reply.content)["grades"]}

    def route_after_grading(state: MillState) -> str:
        grades = list(state["grades"].values())
        if active("olive.route_first_lot"):
            grades = grades[:1]
        return "queue_refining" if "lampante" in grades else "book_press"

    def book_press(state: MillState) -> dict:
        slot = press_schedule_lookup.invoke({"day": "2026-11-06", "kg": float(sum(state["weights"].values()))})
        return {"press": {"route": "press", **slot}}

    def queue_refining(state: MillState) -> dict:
        return {"press": {"route": "refining", "line": "R-queue", "slot": "next tanker"}}

    def compute_yield(state: MillState) -> dict:
        oil = {}
        for lot in state["delivery"]["lots"]:
            kg_oil = state["weights"][lot["lot"]] * YIELD_PCT[lot["variety"]] / 100
            litres = kg_oil if active("olive.kg_as_litres") else kg_oil / DENSITY
            oil[lot["lot"]] = round(litres, 1)
        return {"oil": oil}

    def issue_certificate(state: MillState) -> dict:
        d = state["delivery"]
        cert = {"grower": d["grower"], "harvest_date": d["harvest_date"], "route": state["press"]["route"],
                "press_line": state["press"]["line"],
                "lots": [{"lot": lot["lot"], "variety": lot["variety"], "acidity_pct": state["acidity"][lot["lot"]],
                          "grade": state["grades"][lot["lot"]], "oil_litres": state["oil"][lot["lot"]]}
                         for lot in d["lots"]]}
        return {"certificate": post_certificate(cert)}

    g = StateGraph(MillState)
    for fn in (read_delivery_note, weigh_lots, test_acidity, grade_lots, book_press, queue_refining,
               compute_yield, issue_certificate):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "read_delivery_note")
    g.add_edge("read_delivery_note", "weigh_lots")
    g.add_edge("weigh_lots", "test_acidity")
    g.add_edge("test_acidity", "grade_lots")
    g.add_conditional_edges("grade_lots", route_after_grading, ["book_press", "queue_refining"])
    g.add_edge("book_press", "compute_yield")
    g.add_edge("queue_refining", "compute_yield")
    g.add_edge("compute_yield", "issue_certificate")
    g.add_edge("issue_certificate", END)
    return g.compile(), note


def record(server, key: str, path: Path) -> None:
    server.use(_policy)
    graph, note = build(server, key)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"certify delivery {key}")
    try:
        graph.invoke({"note": note}, config={"callbacks": [tracer], "run_name": AGENT})
    except CertificateRejected:
        pass
