"""Semiconductor lot dispatch (route: otlp): one dispatch cycle of a lithography bay.

The openai client is instrumented by OpenInference; the agent's own steps are OpenTelemetry spans
(AGENT, CHAIN, TOOL, RETRIEVER). Read the WIP queue and the tool states, retrieve each product's
layer constraints, let the model plan lot -> tool assignments, parse the plan, track every lot into
the MES (reticle check first), write the dispatch log, and reconcile the log with the MES at the end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..harness import AgentSpec, Fault, active, extract_json, last_user
from ..routes import openai_client, otlp_begin, otlp_chat, otlp_write, span


NAME = "fab-lot-dispatcher"

TOOLS = {"LTH-01": ["M1", "M2"], "LTH-02": ["M2", "V1"], "LTH-03": ["M1", "V1"], "LTH-04": ["M1", "M2", "V1"],
         "LTH-05": ["M2"], "LTH-06": ["V1", "M1"]}
RETICLES = {("P88", "M1"): "RT-P88-M1", ("P88", "M2"): "RT-P88-M2", ("P88", "V1"): "RT-P88-V1",
            ("Q12", "M1"): "RT-Q12-M1", ("Q12", "M2"): "RT-Q12-M2", ("Q12", "V1"): "RT-Q12-V1"}


def cycle(cid: str, bay_tools: list[str], down: list[str], lots: list[tuple[str, str, str, int]]) -> dict[str, Any]:
    return {"cycle": cid, "bay": "LITHO-2", "tools": bay_tools, "down": down,
            "lots": [{"lot": lot, "product": p, "layer": layer, "qtime_left_min": q} for lot, p, layer, q in lots]}


INPUTS = [
    cycle("DC-0301", ["LTH-01", "LTH-02", "LTH-03", "LTH-05"], [],
          [("L4410", "P88", "M1", 50), ("L4411", "Q12", "V1", 95), ("L4412", "P88", "M2", 120),
           ("L4413", "Q12", "M2", 30), ("L4414", "P88", "V1", 200)]),
    cycle("DC-0302", ["LTH-01", "LTH-02", "LTH-04"], [],
          [("L4420", "Q12", "M2", 40), ("L4421", "P88", "M1", 80), ("L4422", "Q12", "V1", 150)]),
    cycle("DC-0303", ["LTH-01", "LTH-02", "LTH-03"], [],
          [("L4430", "P88", "M2", 25), ("L4431", "Q12", "M1", 70), ("L4432", "P88", "V1", 90)]),
    cycle("DC-0304", ["LTH-04", "LTH-05", "LTH-06"], ["LTH-04"],
          [("L4440", "P88", "M1", 35), ("L4441", "Q12", "M2", 60), ("L4442", "P88", "V1", 140)]),
    cycle("DC-0305", ["LTH-01", "LTH-04", "LTH-05", "LTH-06"], [],
          [("L4450", "Q12", "M2", 45), ("L4451", "P88", "M1", 75)]),
]
REFS = [
    cycle("DC-0296", ["LTH-01", "LTH-02", "LTH-05"], [], [("L4380", "P88", "M2", 55), ("L4381", "Q12", "M1", 90)]),
    cycle("DC-0297", ["LTH-03", "LTH-04", "LTH-06"], ["LTH-03"],
          [("L4390", "Q12", "V1", 20), ("L4391", "P88", "M1", 100)]),
    cycle("DC-0298", ["LTH-01", "LTH-02", "LTH-04", "LTH-05"], [],
          [("L4395", "P88", "M1", 30), ("L4396", "Q12", "V1", 65), ("L4397", "P88", "M2", 160)]),
    cycle("DC-0299", ["LTH-02", "LTH-05", "LTH-06"], [], [("L4399", "Q12", "M2", 15), ("L4400", "P88", "V1", 85)]),
]


class MesRejected(RuntimeError):
    __module__ = "litho_dispatch.errors"


class ToolStateTimeout(TimeoutError):
    __module__ = "litho_dispatch.errors"


class DispatchLogMismatch(AssertionError):
    __module__ = "litho_dispatch.errors"


MES: dict[str, Any] = {"track_ins": []}


def policy(request: Any) -> str:
    data = extract_json(last_user(request))
    free = [t for t in data["tools"] if t["state"] == "idle"]
    out = []
    for lot in sorted(data["lots"], key=lambda x: x["qtime_left_min"]):
        tool = next((t for t in free if lot["layer"] in t["qualified"]), None)
        if tool is None:
            continue
        free.remove(tool)
        name = tool["tool"]
        if active("ld-tool") and lot["lot"] == "L4431":
            name = "LTH-07"
        out.append({"lot": lot["lot"], "tool": name, "reticle": lot["reticle"]})
    return json.dumps({"assignments": out, "rule": "shortest remaining queue time first"})


def _tool_state(tool: str, down: list[str]) -> str:
    if tool in down:
        raise ToolStateTimeout(f"equipment automation did not report {tool} within 3 s")
    return "idle"


def get_tool_states(item: dict[str, Any]) -> list[dict[str, Any]]:
    with span("get_tool_states", "TOOL", {"bay": item["bay"]}, tool__name="get_tool_states") as sp:
        states = []
        for tool in item["tools"]:
            try:
                state = _tool_state(tool, item["down"])
            except ToolStateTimeout:
                # an unanswered tool reads as the state it had when it last answered
                state = "idle" if active("ld-states") else "down: scheduled maintenance"
            states.append({"tool": tool, "state": state, "qualified": TOOLS[tool]})
        return sp.output(states)


def retrieve_constraints(lot: dict[str, Any]) -> dict[str, Any]:
    query = f"litho constraints product {lot['product']} layer {lot['layer']}"
    with span("retrieve_layer_constraints", "RETRIEVER", query) as sp:
        layer = lot["layer"]
        if active("ld-constraints") and lot["product"] == "Q12" and layer == "M2":
            layer = "M1"  # nearest document by embedding
        doc = {"document": f"{lot['product']}-{layer} litho spec rev C", "reticle": RETICLES[(lot["product"], layer)],
               "dose_mj": 24 if layer == "M1" else 27}
        sp.set_attribute("retrieval.documents.0.document.content", json.dumps(doc))
        return sp.output(doc)


def parse_dispatch_plan(text: str, lots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with span("parse_dispatch_plan", "CHAIN", text) as sp:
        plan = json.loads(text)["assignments"]
        by_lot = {x["lot"]: x for x in lots}
        out = []
        for k, a in enumerate(plan):
            seq = k + 2 if active("ld-seq") else k + 1
            out.append({"seq": seq, "lot": a["lot"], "tool": a["tool"], "reticle": a["reticle"],
                        "layer": by_lot[a["lot"]]["layer"]})
        return sp.output(out)


def mes_track_in(a: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    with span("mes_track_in", "TOOL", a, tool__name="mes_track_in") as sp:
        if a["tool"] not in item["tools"]:
            raise MesRejected(f"MES: equipment {a['tool']} is not in bay {item['bay']}")
        if a["tool"] in item["down"]:
            raise MesRejected(f"MES: {a['tool']} is down for scheduled maintenance; track-in refused for {a['lot']}")
        lot = next(x for x in item["lots"] if x["lot"] == a["lot"])
        expect = RETICLES[(lot["product"], lot["layer"])]
        if a["reticle"] != expect:
            raise MesRejected(f"MES: reticle {a['reticle']} does not match {lot['product']} layer {lot['layer']} "
                              f"({expect}) for {a['lot']}")
        if a["seq"] != len(MES["track_ins"]) + 1:
            raise MesRejected(f"MES: dispatch sequence {a['seq']} out of order for {a['lot']} "
                              f"(next expected {len(MES['track_ins']) + 1})")
        MES["track_ins"].append({"lot": a["lot"], "tool": a["tool"]})
        return sp.output({"lot": a["lot"], "tool": a["tool"], "status": "tracked in"})


def record_dispatch_log(log: list[dict[str, Any]], a: dict[str, Any], prev: dict[str, Any] | None) -> dict[str, Any]:
    with span("record_dispatch_log", "CHAIN", a) as sp:
        tool = prev["tool"] if active("ld-log") and prev is not None and a["lot"] == "L4410" else a["tool"]
        entry = {"lot": a["lot"], "tool": tool, "cycle_seq": a["seq"]}
        log.append(entry)
        return sp.output(entry)


def reconcile_dispatch_log(log: list[dict[str, Any]]) -> dict[str, Any]:
    with span("reconcile_dispatch_log", "CHAIN", log) as sp:
        mes = {t["lot"]: t["tool"] for t in MES["track_ins"]}
        for e in log:
            if mes.get(e["lot"]) != e["tool"]:
                raise DispatchLogMismatch(f"dispatch log puts {e['lot']} on {e['tool']}; MES tracked it into "
                                          f"{mes.get(e['lot'])}")
        return sp.output({"entries": len(log), "status": "reconciled"})


def run(server: Any, item: dict[str, Any], path: Path) -> None:
    server.use(policy)
    client = openai_client(server)
    MES["track_ins"] = []
    otlp_begin()
    try:
        with span(NAME, "AGENT", item, agent__name=NAME, session__id=item["cycle"]) as root:
            with span("get_wip_queue", "TOOL", {"bay": item["bay"]}, tool__name="get_wip_queue") as sp:
                lots = sp.output([dict(x) for x in item["lots"]])
            states = get_tool_states(item)
            for lot in lots:
                lot["reticle"] = retrieve_constraints(lot)["reticle"]
            ask = {"lots": lots, "tools": states}
            reply = otlp_chat(client, [
                {"role": "system", "content": "You dispatch lots in a lithography bay: one lot per idle tool, "
                                              "qualified layers only, shortest queue time first. Answer JSON."},
                {"role": "user", "content": "Dispatch cycle: " + json.dumps(ask)}])
            plan = parse_dispatch_plan(reply.choices[0].message.content, lots)
            log: list[dict[str, Any]] = []
            prev = None
            with span("track_in_lots", "CHAIN", {"count": len(plan)}):
                for a in plan:
                    mes_track_in(a, item)
                    record_dispatch_log(log, a, prev)
                    prev = a
            root.output(reconcile_dispatch_log(log))
    except (MesRejected, DispatchLogMismatch):
        pass
    otlp_write(path)


SPEC = AgentSpec(
    name=NAME, route="otlp", domain="semiconductor lot dispatch", inputs=INPUTS, ref_inputs=REFS, run=run,
    faults=[
        Fault("ld-log", "bad_memory_write", 0, "record_dispatch_log", '"lot": "L4410", "tool": "LTH-01"',
              "the log entry of the second lot takes the previous lot's tool; the reconciliation catches it"),
        Fault("ld-constraints", "wrong_retrieval", 1, "retrieve_layer_constraints", "Q12-M1 litho spec",
              "the constraint search returns the M1 spec for an M2 lot; the MES refuses the reticle"),
        Fault("ld-tool", "hallucinated_value", 2, "ChatCompletion", "LTH-07",
              "the model dispatches a lot to a scanner that is not in the bay"),
        Fault("ld-states", "swallowed_error", 3, "get_tool_states", '"tool": "LTH-04", "state": "idle"',
              "a tool-state timeout is read as idle; the MES refuses the scanner in maintenance"),
        Fault("ld-seq", "off_by_one", 4, "parse_dispatch_plan", '"seq": 2, "lot": "L4450"',
              "the parser numbers the dispatch sequence from 2; the MES refuses it out of order"),
    ],
)
