"""Chandelier restorer (langgraph route): a tool-calling survey loop (the model asks for every arm's
condition in one turn, run in parallel by a ToolNode), a parse node, a router that picks the
restoration track, a parts loop inside one node, and a circuit load test tool that raises."""
import json
from typing import Annotated, TypedDict

NAME = "chandelier-restoration"
ROUTE = "langgraph"
DOMAIN = "chandelier restorer"
SHAPE = "graph: survey llm <-> ToolNode (parallel arm_condition calls + bulb_spec) -> read_findings -> router (rewire | clean) -> parts node looping parts_catalogue -> wiring plan -> circuit_load_test tool raises"
MODE = None

INPUTS = [
    {"job": "CH-401", "owner": "Hotel Amsel", "arms": 6, "volts": 230, "circuit_w": 400},
    {"job": "CH-402", "owner": "St. Brigid's", "arms": 8, "volts": 110, "circuit_w": 600},
    {"job": "CH-403", "owner": "Palais Roth", "arms": 12, "volts": 230, "circuit_w": 700},
    {"job": "CH-404", "owner": "Mr. Ng", "arms": 5, "volts": 110, "circuit_w": 300},
    {"job": "CH-405", "owner": "Opera Foyer", "arms": 10, "volts": 230, "circuit_w": 500},
]
FRAYED = {"CH-401": [2, 6], "CH-402": [1], "CH-403": [3, 7, 11], "CH-404": [4], "CH-405": [6, 9]}

CASES = [
    {"input": 0, "mode": "c1", "kind": "wrong_tool_args", "root": ("ChatOpenAI", 1),
     "description": "the model's survey asks for arms 0 to 5 instead of 1 to 6, so arm 6's frayed flex is never inspected"},
    {"input": 1, "mode": "c2", "kind": "tool_ignores_argument", "root": ("parts_catalogue", 1),
     "description": "the parts catalogue ignores the 110 V argument and returns a 230 V lamp holder"},
    {"input": 2, "mode": "c3", "kind": "stale_data", "root": ("bulb_spec", 1),
     "description": "the bulb register answers with the 40 W incandescent bulbs fitted before last year's LED refit"},
    {"input": 3, "mode": "c4", "kind": "wrong_routing", "root": ("choose_track", 1),
     "description": "the track router sends a job with frayed flex down the cleaning track, which skips the rewiring parts"},
    {"input": 4, "mode": "c5", "kind": "truncated_result", "root": ("arm_condition", {"arm": 9}),
     "description": "the condition report for arm 9 comes back cut after the finish field, without its flex condition"},
]


def task(inp):
    return f"restore chandelier {inp['job']} for {inp['owner']}"


def policy(request):
    msgs = request.body["messages"]
    first = next(m["content"] for m in msgs if m["role"] == "user")
    inp = next(i for i in INPUTS if i["job"] in first)
    results = [m for m in msgs if m["role"] == "tool"]
    if not results:
        lo = 0 if MODE == "c1" else 1
        calls = [("arm_condition", {"job": inp["job"], "arm": a}) for a in range(lo, lo + inp["arms"])]
        calls.append(("bulb_spec", {"job": inp["job"]}))
        from trajdebug.testing import Reply
        return Reply(tool_calls=tuple(calls))
    findings = {"job": inp["job"], "frayed_arms": [], "bulbs": None}
    for m in results:
        d = json.loads(m["content"])
        if "arm" in d and d.get("flex") == "frayed":
            findings["frayed_arms"].append(d["arm"])
        if "watts" in d:
            findings["bulbs"] = {"count": d["count"], "watts": d["watts"]}
    return "Survey findings:\n```json\n" + json.dumps(findings) + "\n```"


class Job(TypedDict, total=False):
    messages: Annotated[list, None]
    job: dict
    findings: dict
    track: str
    parts: list
    plan: dict
    result: dict


def build(llm):
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition

    @tool
    def arm_condition(job: str, arm: int) -> str:
        """Condition report of one arm of the chandelier: finish and flex."""
        report = {"job": job, "arm": arm, "finish": "tarnished", "flex": "frayed" if arm in FRAYED[job] else "sound"}
        if MODE == "c5" and arm == 9:
            return json.dumps(report)[: json.dumps(report).index(', "flex"')] + "}"
        return json.dumps(report)

    @tool
    def bulb_spec(job: str) -> str:
        """Bulbs fitted on the chandelier: count and watts each."""
        arms = next(i for i in INPUTS if i["job"] == job)["arms"]
        watts = 40 if MODE == "c3" else 6
        return json.dumps({"job": job, "count": arms * 2, "watts": watts, "type": "candle E14"})

    @tool
    def parts_catalogue(part: str, volts: int) -> str:
        """Catalogue entry for a part at the fixture's voltage."""
        v = 230 if MODE == "c2" else volts
        return json.dumps({"part": part, "volts": v, "sku": f"{part[:4].upper()}-{v}"})

    @tool
    def circuit_load_test(job: str, load_w: float, circuit_w: float, volts: int, parts: list, frayed: list) -> str:
        """Bench test of the rewired chandelier on its circuit."""
        if load_w > circuit_w:
            raise RuntimeError(f"{job}: load {load_w} W trips the {circuit_w} W circuit")
        bad = [p for p in parts if p["volts"] != volts]
        if bad:
            raise RuntimeError(f"{job}: {bad[0]['sku']} rated {bad[0]['volts']} V on a {volts} V supply")
        leaking = [a for a in FRAYED[job] if a not in frayed]
        if leaking or len([p for p in parts if p["part"] == "silk flex"]) < len(FRAYED[job]):
            raise RuntimeError(f"{job}: insulation test failed on arm {(leaking or FRAYED[job])[0]}, leakage 2.4 mA")
        return json.dumps({"job": job, "passed": True, "load_w": load_w})

    model = llm.bind_tools([arm_condition, bulb_spec])

    class S(TypedDict, total=False):
        messages: Annotated[list, add_messages]
        job: dict
        findings: dict
        track: str
        parts: list
        plan: dict

    def survey(state: S) -> dict:
        if not state.get("messages"):
            j = state["job"]
            msgs = [SystemMessage("You survey chandeliers with the inspection tools."),
                    HumanMessage(f"Survey chandelier {j['job']} ({j['arms']} arms) for {j['owner']}")]
            return {"messages": msgs + [model.invoke(msgs)]}
        return {"messages": [model.invoke(state["messages"])]}

    def read_findings(state: S) -> dict:
        text = state["messages"][-1].content
        return {"findings": json.loads(text.split("```json")[1].split("```")[0])}

    def choose_track(state: S) -> dict:
        f = state["findings"]
        track = "rewire" if f["frayed_arms"] else "clean"
        if MODE == "c4":
            track = "clean" if len(f["frayed_arms"]) < 2 else track
        return {"track": track}

    def rewire_parts(state: S) -> dict:
        j, f = state["job"], state["findings"]
        parts = [json.loads(parts_catalogue.invoke({"part": "silk flex", "volts": j["volts"]})) for _ in f["frayed_arms"]]
        parts.append(json.loads(parts_catalogue.invoke({"part": "lamp holder", "volts": j["volts"]})))
        return {"parts": parts}

    def clean_parts(state: S) -> dict:
        return {"parts": [{"part": "polish", "volts": state["job"]["volts"], "sku": "POL-0"}]}

    def wiring_plan(state: S) -> dict:
        b = state["findings"]["bulbs"]
        return {"plan": {"load_w": b["count"] * b["watts"], "frayed": state["findings"]["frayed_arms"]}}

    def bench_test(state: S) -> dict:
        j, p = state["job"], state["plan"]
        circuit_load_test.invoke({"job": j["job"], "load_w": p["load_w"], "circuit_w": j["circuit_w"], "volts": j["volts"],
                                  "parts": [x for x in state["parts"] if x["part"] != "polish"], "frayed": p["frayed"]})
        return {}

    g = StateGraph(S)
    g.add_node("survey", survey)
    g.add_node("tools", ToolNode([arm_condition, bulb_spec]))
    for fn in (read_findings, choose_track, rewire_parts, clean_parts, wiring_plan, bench_test):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "survey")
    g.add_conditional_edges("survey", tools_condition, {"tools": "tools", "__end__": "read_findings"})
    g.add_edge("tools", "survey")
    g.add_edge("read_findings", "choose_track")
    g.add_conditional_edges("choose_track", lambda s: s["track"], {"rewire": "rewire_parts", "clean": "clean_parts"})
    g.add_edge("rewire_parts", "wiring_plan")
    g.add_edge("clean_parts", "wiring_plan")
    g.add_edge("wiring_plan", "bench_test")
    g.add_edge("bench_test", END)
    return g.compile()


def run(inp, server, tracer):
    from langchain_openai import ChatOpenAI
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    build(llm).invoke({"job": dict(inp)}, config={"callbacks": [tracer], "recursion_limit": 40})
