"""Semiconductor fab: disposition of a lot held by an SPC alarm (hold, release, rework) before it moves on.

Route: trajdebug's own recorder (sdk). A triage model asks for three tools at once (lot history, SPC chart,
tool PM log), run in parallel; the chart is parsed, sampled wafers' metrology is read one by one, Western
Electric rules are checked, a router sends the lot to an engineering-review sub-agent (retriever of the
out-of-control action plan, model, parser) or to auto-release; the disposition is kept in run.state and
posted to the MES, which validates it.
"""

from __future__ import annotations

import json

import trajdebug
from common import calls_of, chat, rnd

RUN_NAME = "wafer-lot-disposition"
ROUTE = "sdk"
DOMAIN = "semiconductor fab: SPC alarm lot disposition"
SHAPE = "input, model with 3 parallel tool calls (thread pool), chart parser, wafer loop, rules check, router, sub-agent (retriever, model, parser), state write, MES tool, model summary"
SWITCH = None


def _chart(lot, center, sigma, tail):
    pts = [round(center + (-1) ** i * (0.1 + rnd(lot, "pt", i) * 0.7) * sigma, 3) for i in range(25 - len(tail))]
    return pts + [round(center + t * sigma, 3) for t in tail]


LOTS = {
    "N3K-4472": {"tool": "ETCH-07", "layer": "POLY", "parameter": "gate CD", "unit": "nm", "center": 45.0, "sigma": 0.6,
                 "tail": [0.3, -0.2, 3.4], "prev": "N3K-4471", "pm": [{"pm": "PM-2291", "hours_before_start": 5, "type": "chamber wet clean"}],
                 "wafers": [3, 13, 23]},
    "P8M-1190": {"tool": "LITHO-03", "layer": "M1", "parameter": "overlay X", "unit": "nm", "center": 0.0, "sigma": 1.0,
                 "tail": [-0.4, 0.6, -3.4], "prev": "P8M-1189", "pm": [], "wafers": [1, 12, 24]},
    "Q2A-0558": {"tool": "CVD-12", "layer": "ILD", "parameter": "film thickness", "unit": "A", "center": 5200.0, "sigma": 18.0,
                 "tail": [2.3, 0.4, 2.5], "prev": "Q2A-0557", "pm": [], "wafers": [2, 9, 17, 25]},
    "R7T-3301": {"tool": "CMP-02", "layer": "W", "parameter": "dishing", "unit": "A", "center": 120.0, "sigma": 9.0,
                 "tail": [0.5, 0.9, 3.3], "prev": "R7T-3300", "pm": [{"pm": "PM-0917", "hours_before_start": 30, "type": "pad change"}],
                 "wafers": [5, 15]},
    "S5D-7720": {"tool": "IMP-05", "layer": "NWELL", "parameter": "sheet resistance", "unit": "ohm/sq", "center": 410.0, "sigma": 4.0,
                 "tail": [0.7, -0.9, 1.1], "prev": "S5D-7719", "pm": [{"pm": "PM-3310", "hours_before_start": 9, "type": "source change"}],
                 "wafers": [4, 20, 24]},
}
OCAPS = [
    {"id": "OCAP-POLY-CD-02", "layer": "POLY", "parameter": "gate CD", "text": "Gate CD beyond 3 sigma: hold lot, check etch chamber seasoning, re-measure 5 sites."},
    {"id": "OCAP-M1-OVL-05", "layer": "M1", "parameter": "overlay X", "text": "Overlay beyond 3 sigma: hold for engineering, verify alignment marks; rework only for a mean shift beyond 1.5 nm."},
    {"id": "OCAP-ILD-THK-01", "layer": "ILD", "parameter": "film thickness", "text": "ILD thickness trend: hold for engineering, check deposition rate log."},
    {"id": "OCAP-W-DISH-03", "layer": "W", "parameter": "dishing", "text": "Tungsten CMP dishing beyond 3 sigma: hold lot, verify pad life and slurry flow."},
    {"id": "OCAP-M1-DISH-06", "layer": "M1", "parameter": "dishing", "text": "Copper CMP dishing on M1: release with monitor when the pad was changed in the last 48 h."},
]

INPUTS = [
    {"task": "SPC alarm SPC-88120, lot N3K-4472 on ETCH-07", "alarm": "SPC-88120", "lot": "N3K-4472"},
    {"task": "SPC alarm SPC-88131, lot P8M-1190 on LITHO-03", "alarm": "SPC-88131", "lot": "P8M-1190"},
    {"task": "SPC alarm SPC-88145, lot Q2A-0558 on CVD-12", "alarm": "SPC-88145", "lot": "Q2A-0558"},
    {"task": "SPC alarm SPC-88152, lot R7T-3301 on CMP-02", "alarm": "SPC-88152", "lot": "R7T-3301"},
    {"task": "SPC alarm SPC-88160, lot S5D-7720 on IMP-05", "alarm": "SPC-88160", "lot": "S5D-7720"},
]

CASES = [
    {"id": "wafer_sibling_lot", "input": 0, "kind": "subagent_wrong_entity",
     "root": ("engineering_review", 1, "agent"), "failure": ("mes_transaction", 1),
     "what": "the review sub-agent reviews N3K-4471, the first lot in the tool history, instead of N3K-4472",
     "description": "The engineering-review sub-agent took the first lot of the tool's history as its subject and dispositioned the previous lot N3K-4471, which the MES refuses for alarm SPC-88120."},
    {"id": "wafer_overlay_sign", "input": 1, "kind": "lossy_parsing",
     "root": ("parse_chart", 1, "parse"), "failure": ("mes_transaction", 1),
     "what": "the chart parser reads overlay values without their minus sign",
     "description": "The chart parser read the overlay values without their sign, so the rules saw a mean shift that is not there and the review asked for a rework the MES rejects."},
    {"id": "wafer_rule_window", "input": 2, "kind": "off_by_one",
     "root": ("check_we_rules", 1, "condition"), "failure": ("mes_transaction", 1),
     "what": "the 2-of-3 window stops one triple short and misses points 23-25",
     "description": "The 2-of-3-beyond-2-sigma scan stopped one window short of the last three points, so the lot was routed to auto-release and the MES holds it."},
    {"id": "wafer_ocap_layer", "input": 3, "kind": "wrong_retrieval",
     "root": ("retrieve_ocap", 1, "retrieval"), "failure": ("mes_transaction", 1),
     "what": "the action plan retrieved is the M1 copper dishing one, not tungsten dishing",
     "description": "The action-plan search returned the copper M1 dishing plan for a tungsten CMP alarm, and the review released the lot under a plan the MES says does not apply."},
    {"id": "wafer_pm_log_timeout", "input": 4, "kind": "swallowed_error",
     "root": ("get_tool_pm_log", 1, "tool"), "failure": ("mes_transaction", 1),
     "what": "the PM log call timed out and answered an empty list",
     "description": "The tool PM log call timed out and the client answered an empty event list, so the release did not acknowledge the source change PM-3310 and the MES blocks it."},
]


def _switch(case_id: str) -> bool:
    return SWITCH == case_id


# ----------------------------------------------------------------------------------------------- the model
def brain(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    if system.startswith("You triage"):
        alarm = json.loads(msgs[1]["content"])
        lot = alarm["lot"]
        from trajdebug.testing import Reply, tool_call

        return Reply(tool_calls=(
            tool_call("get_lot_history", {"lot": lot, "steps": 5}),
            tool_call("get_spc_chart", {"chart": alarm["chart"], "points": 25}),
            tool_call("get_tool_pm_log", {"tool": alarm["tool"], "hours": 72}),
        ))
    if system.startswith("You are the engineering reviewer"):
        data = json.loads(msgs[1]["content"])
        rules = {v["rule"] for v in data["violations"]}
        mean_shift = "8 on one side" in rules
        decision = "rework" if mean_shift else ("release_with_monitor" if "release" in data["ocap"]["text"].lower() else "hold_engineering")
        return json.dumps({"lot": data["lot"], "decision": decision, "ocap": data["ocap"]["id"],
                           "pm_ack": [p["pm"] for p in data["pm_events"] if p["hours_before_start"] <= 48],
                           "reason": f"{len(data['violations'])} rule violation(s) on {data['parameter']}; wafer means {data['wafer_means']}"})
    if system.startswith("You summarize"):
        return "Disposition posted to the MES: " + msgs[1]["content"][:120]
    return "No action."


# ----------------------------------------------------------------------------------------------- tools
def t_get_lot_history(lot: str, steps: int) -> dict:
    info = LOTS[lot]
    return {"tool": info["tool"], "lots": [{"lot": info["prev"], "status": "complete"}, {"lot": lot, "status": "on hold"}][:steps]}


def t_get_spc_chart(chart: str, points: int) -> str:
    lot = chart.split(":")[1]
    info = LOTS[lot]
    pts = _chart(lot, info["center"], info["sigma"], info["tail"])[-points:]
    head = f"chart={chart} center={info['center']} sigma={info['sigma']} unit={info['unit']}\n"
    return head + "\n".join(f"{i + 1},{v:.3f}" for i, v in enumerate(pts))


def t_get_tool_pm_log(tool: str, hours: int) -> list:
    lot = next(k for k, v in LOTS.items() if v["tool"] == tool)
    if _switch("wafer_pm_log_timeout"):
        try:
            raise TimeoutError(f"PM log service did not answer for {tool} within 5 s")
        except TimeoutError:
            return []
    return [dict(p, tool=tool) for p in LOTS[lot]["pm"]]


TOOLS = {"get_lot_history": t_get_lot_history, "get_spc_chart": t_get_spc_chart, "get_tool_pm_log": t_get_tool_pm_log}


# ----------------------------------------------------------------------------------------------- steps
@trajdebug.step(kind="input")
def receive_alarm(alarm: dict) -> dict:
    return dict(alarm)


@trajdebug.step(kind="llm")
def triage(messages: list[dict]) -> dict:
    return chat(ENV, messages, tools=list(TOOLS))


def run_tool(call: dict):
    with trajdebug.step(call["name"], kind="tool", input=call["args"]) as s:
        s.output = TOOLS[call["name"]](**call["args"])
    return s.output


@trajdebug.step(kind="parse")
def parse_chart(raw: str) -> dict:
    head, *rows = raw.strip().split("\n")
    meta = dict(kv.split("=") for kv in head.split())
    values = []
    for row in rows:
        _, v = row.split(",")
        values.append(float(v.lstrip("-")) if _switch("wafer_overlay_sign") else float(v))
    return {"chart": meta["chart"], "center": float(meta["center"]), "sigma": float(meta["sigma"]), "unit": meta["unit"], "points": values}


@trajdebug.step(kind="tool")
def get_wafer_metrology(lot: str, wafer: int) -> dict:
    info = LOTS[lot]
    last = _chart(lot, info["center"], info["sigma"], info["tail"])[-1]
    sites = [round(last + (rnd(lot, wafer, s) - 0.5) * info["sigma"] * 0.4, 3) for s in range(5)]
    return {"lot": lot, "wafer": wafer, "sites": sites, "mean": round(sum(sites) / 5, 3)}


@trajdebug.step(kind="condition")
def check_we_rules(chart: dict) -> list[dict]:
    p, c, s = chart["points"], chart["center"], chart["sigma"]
    out = []
    for i, v in enumerate(p):
        if abs(v - c) > 3 * s:
            out.append({"rule": "beyond 3 sigma", "points": [i + 1]})
    stop = len(p) - 3 if _switch("wafer_rule_window") else len(p) - 2
    for i in range(stop):
        w = p[i:i + 3]
        for sign in (1, -1):
            if sum(1 for v in w if sign * (v - c) > 2 * s) >= 2:
                out.append({"rule": "2 of 3 beyond 2 sigma", "points": [i + 1, i + 3]})
    for i in range(len(p) - 7):
        w = p[i:i + 8]
        if all(v > c for v in w) or all(v < c for v in w):
            out.append({"rule": "8 on one side", "points": [i + 1, i + 8]})
            break
    return out


@trajdebug.step(kind="condition")
def route_disposition(violations: list[dict]) -> str:
    return "engineering_review" if violations else "auto_release"


@trajdebug.step(kind="retrieval")
def retrieve_ocap(query: str, layer: str, parameter: str) -> list[dict]:
    def score(d):
        return (d["layer"] == layer) * 2 + (d["parameter"] == parameter) * 2 + sum(w in d["text"].lower() for w in query.lower().split())

    hits = sorted(OCAPS, key=score, reverse=True)
    if _switch("wafer_ocap_layer"):
        hits = sorted(OCAPS, key=lambda d: (d["parameter"] == parameter) * 2 + ("release" in d["text"].lower()), reverse=True)
    return [dict(h) for h in hits[:3]]


@trajdebug.step(kind="llm")
def review_llm(messages: list[dict]) -> dict:
    return chat(ENV, messages)


@trajdebug.step(kind="parse")
def parse_review(answer: dict) -> dict:
    return json.loads(answer["content"])


@trajdebug.step(kind="agent")
def engineering_review(alarm: dict, history: dict, chart: dict, violations: list, pm_events: list, wafers: list) -> dict:
    lot = history["lots"][0]["lot"] if _switch("wafer_sibling_lot") else alarm["lot"]
    info = LOTS[alarm["lot"]]
    hits = retrieve_ocap(f"{info['layer']} {info['parameter']} out of control", info["layer"], info["parameter"])
    answer = review_llm([
        {"role": "system", "content": "You are the engineering reviewer of SPC holds. Answer JSON: lot, decision, ocap, pm_ack, reason."},
        {"role": "user", "content": json.dumps({"lot": lot, "parameter": info["parameter"], "violations": violations, "ocap": hits[0],
                                                "pm_events": pm_events, "wafer_means": [w["mean"] for w in wafers]})},
    ])
    return parse_review(answer)


@trajdebug.step(kind="other")
def auto_disposition(alarm: dict, pm_events: list) -> dict:
    return {"lot": alarm["lot"], "decision": "release", "ocap": None,
            "pm_ack": [p["pm"] for p in pm_events if p["hours_before_start"] <= 48], "reason": "no rule violation on the chart"}


@trajdebug.step(kind="state")
def remember_disposition(disposition: dict) -> dict:
    trajdebug.current_run().state["disposition"] = dict(disposition)
    return dict(disposition)


@trajdebug.step(kind="tool")
def mes_transaction(alarm: str, disposition: dict) -> dict:
    lot = next(i["lot"] for i in INPUTS if i["alarm"] == alarm)
    info = LOTS[lot]
    if disposition["lot"] != lot:
        raise RuntimeError(f"MES-409: disposition for lot {disposition['lot']} submitted against alarm {alarm} for lot {lot}")
    pts = _chart(lot, info["center"], info["sigma"], info["tail"])
    c, s = info["center"], info["sigma"]
    if disposition["decision"] == "release":
        for i in range(len(pts) - 2):
            w = pts[i:i + 3]
            if any(sum(1 for v in w if sg * (v - c) > 2 * s) >= 2 for sg in (1, -1)):
                raise RuntimeError(f"MES-423: lot {lot} held by SPC: 2 of 3 beyond 2 sigma at points {i + 1}-{i + 3}; engineering disposition required")
    if disposition["ocap"] is not None:
        doc = next(d for d in OCAPS if d["id"] == disposition["ocap"])
        if (doc["layer"], doc["parameter"]) != (info["layer"], info["parameter"]):
            raise RuntimeError(f"MES-412: {doc['id']} does not apply to layer {info['layer']} {info['parameter']}")
    if disposition["decision"] == "rework":
        mean = sum(pts[-8:]) / 8
        if abs(mean - c) < 1.5:
            raise RuntimeError(f"MES-431: rework for lot {lot} rejected: {info['parameter']} mean {mean:.2f} {info['unit']} within 1.5 of target")
    for p in info["pm"]:
        if p["hours_before_start"] <= 48 and p["pm"] not in disposition["pm_ack"]:
            raise RuntimeError(f"MES-440: release of lot {lot} blocked: {p['pm']} ({p['type']}) on {info['tool']} {p['hours_before_start']} h before lot start not acknowledged")
    return {"transaction": f"TX-{alarm[-5:]}-{disposition['decision'][:4].upper()}", "lot": lot, "state": disposition["decision"]}


@trajdebug.step(kind="llm")
def summarize(messages: list[dict]) -> dict:
    return chat(ENV, messages)


ENV = None


def execute(inp: dict, env, run) -> None:
    global ENV
    ENV = env
    alarm = receive_alarm(inp)
    info = LOTS[alarm["lot"]]
    answer = triage([
        {"role": "system", "content": "You triage SPC alarms in the fab. Ask for the lot history, the chart and the tool PM log."},
        {"role": "user", "content": json.dumps({"alarm": alarm["alarm"], "lot": alarm["lot"], "tool": info["tool"], "chart": f"{info['layer']}:{alarm['lot']}"})},
    ])
    with trajdebug.ContextThreadPoolExecutor(max_workers=3) as pool:
        history, raw_chart, pm_events = list(pool.map(run_tool, calls_of(answer)))
    chart = parse_chart(raw_chart)
    wafers = [get_wafer_metrology(alarm["lot"], w) for w in info["wafers"]]
    violations = check_we_rules(chart)
    route = route_disposition(violations)
    if route == "engineering_review":
        disposition = engineering_review(alarm, history, chart, violations, pm_events, wafers)
    else:
        disposition = auto_disposition(alarm, pm_events)
    kept = remember_disposition(disposition)
    tx = mes_transaction(alarm["alarm"], kept)
    summarize([{"role": "system", "content": "You summarize MES transactions for the shift log."},
               {"role": "user", "content": json.dumps(tx)}])
