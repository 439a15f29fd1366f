"""Ice sculpture studio (LangGraph): read an order, model design brief, freezer routing, block reservation tool,
carving loop, melt budget and a delivery scheduler."""
from __future__ import annotations

import json
import re
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, last_user_json, policy
from .kit import active

NAME, ROUTE, DOMAIN = "ice-sculpture-studio", "langgraph", "ice sculptures"
SHAPE = "StateGraph: read_order -> design_brief(LLM) -> parse_design -> choose_freezer -> pull_blocks(tool) -> carve loop -> assemble_check -> melt_budget -> schedule_delivery"

DESIGNS = {"swan": {"blocks": 3, "size": "jumbo"}, "logo": {"blocks": 2, "size": "standard"},
           "throne": {"blocks": 5, "size": "jumbo"}, "bar": {"blocks": 4, "size": "standard"}}
INPUTS = {
    "A": "Design swan for Grand Hall; event 2027-02-14 19:00; room 21 C; clarity clear",
    "B": "Design throne for Harbour Loft; event 2027-03-03 20:00; room 18 C; clarity clear",
    "R1": "Design logo for Mill House; event 2027-04-10 18:00; room 20 C; clarity white",
    "R2": "Design bar for Glass Pavilion; event 2027-05-01 21:00; room 22 C; clarity white",
    "R3": "Design swan for Rose Court; event 2027-06-12 19:30; room 19 C; clarity clear",
    "R4": "Design logo for Pier Nine; event 2027-07-07 17:00; room 24 C; clarity clear",
}
REFS = ["R1", "R2", "R3", "R4"]

CASES = [
    Case("zm_ice_1", "wrong_routing", "A", ("choose_freezer", 1, "other"), ("assemble_check", 1),
         "choose_freezer sends a clear-ice order to the white-ice freezer", "ice.route"),
    Case("zm_ice_2", "tool_ignores_argument", "B", ("reserve_blocks", 1, "tool"), ("assemble_check", 1),
         "reserve_blocks ignores the requested jumbo size and reserves standard blocks", "ice.ignore"),
    Case("zm_ice_3", "off_by_one", "B", ("carve_or_assemble", 4, "other"), ("assemble_check", 1),
         "the carving loop's continue test stops one block early", "ice.obo"),
    Case("zm_ice_4", "plan_error", "A", ("ChatOpenAI", 1, "llm"), ("assemble_check", 1),
         "the design brief plans one block fewer than the swan design needs", "ice.plan"),
    Case("zm_ice_5", "unit_error", "A", ("melt_budget", 1, "other"), ("schedule_delivery", 1),
         "melt_budget reads the room temperature in Celsius as Fahrenheit and allows a far longer display window", "ice.unit"),
]


@policy("ice_design")
def _design(msgs):
    q = last_user_json(msgs)
    d = DESIGNS[q["design"]]
    blocks = d["blocks"] - (1 if active("ice.plan") else 0)
    return json.dumps({"design": q["design"], "blocks": blocks, "size": d["size"], "hours_per_block": 2.5})


@tool
def reserve_blocks(freezer: str, count: int, size: str) -> dict:
    """Reserve ice blocks from a freezer."""
    if active("ice.ignore"):
        size = "standard"
    return {"freezer": freezer, "blocks": [{"id": f"{freezer}-{i}", "size": size,
                                            "clarity": "clear" if freezer == "F-CLEAR" else "white"} for i in range(count)]}


class S(TypedDict, total=False):
    text: str
    order: dict
    brief: str
    design: dict
    freezer: str
    blocks: list
    carved: list
    melt: dict
    result: dict


def build(base_url):
    llm = ChatOpenAI(base_url=base_url, api_key="local", model="studio-designer", max_retries=0)

    def read_order(s):
        m = re.match(r"Design (\w+) for ([\w ]+); event (\S+) (\S+); room (\d+) C; clarity (\w+)", s["text"])
        return {"order": {"design": m[1], "venue": m[2], "date": m[3], "time": m[4], "room_c": int(m[5]), "clarity": m[6]}}

    def design_brief(s):
        r = llm.invoke([SystemMessage("[desk:ice_design] You design ice sculptures. Answer JSON."),
                        HumanMessage(json.dumps({"design": s["order"]["design"], "venue": s["order"]["venue"]}))])
        return {"brief": r.content}

    def parse_design(s):
        return {"design": json.loads(s["brief"])}

    def choose_freezer(s):
        clear = s["order"]["clarity"] == "clear"
        if active("ice.route"):
            clear = not clear
        return {"freezer": "F-CLEAR" if clear else "F-WHITE"}

    def pull_blocks(s):
        r = reserve_blocks.invoke({"freezer": s["freezer"], "count": s["design"]["blocks"], "size": s["design"]["size"]})
        return {"blocks": r["blocks"], "carved": []}

    def carve_next(s):
        b = s["blocks"][len(s["carved"])]
        return {"carved": s["carved"] + [{"block": b["id"], "hours": s["design"]["hours_per_block"]}]}

    def carve_or_assemble(s):
        limit = len(s["blocks"]) - (1 if active("ice.obo") else 0)
        return "carve_next" if len(s["carved"]) < limit else "assemble_check"

    def assemble_check(s):
        spec = DESIGNS[s["order"]["design"]]
        problems = []
        if len(s["carved"]) != spec["blocks"]:
            problems.append(f"{s['order']['design']} needs {spec['blocks']} carved blocks, {len(s['carved'])} on the bench")
        if any(b["size"] != spec["size"] for b in s["blocks"]):
            problems.append(f"{s['order']['design']} needs {spec['size']} blocks")
        if any(b["clarity"] != s["order"]["clarity"] for b in s["blocks"]):
            problems.append(f"order asks for {s['order']['clarity']} ice, blocks from {s['freezer']}")
        if problems:
            raise ValueError("assembly inspection failed: " + "; ".join(problems))
        return {"result": {"assembled": True}}

    def melt_budget(s):
        c = s["order"]["room_c"]
        temp_c = (c - 32) / 1.8 if active("ice.unit") else c
        hours = round(max(1.0, 90.0 / max(temp_c, 1.0)), 1)
        return {"melt": {"display_hours": hours}}

    def schedule_delivery(s):
        hh = int(s["order"]["time"].split(":")[0])
        lead = min(s["melt"]["display_hours"] - 1.0, 6.0)
        deliver = hh - lead
        limit = round(90.0 / s["order"]["room_c"], 1)
        if hh - deliver + 1.0 > limit + 0.05:
            raise ValueError(f"delivery slot rejected: set-up at {deliver:.1f}h leaves the piece out {hh - deliver + 1.0:.1f} h; "
                             f"at {s['order']['room_c']} C it holds {limit} h")
        return {"result": {"deliver_at": f"{s['order']['date']} {deliver:.1f}h", "venue": s["order"]["venue"]}}

    g = StateGraph(S)
    for fn in (read_order, design_brief, parse_design, choose_freezer, pull_blocks, carve_next, assemble_check,
               melt_budget, schedule_delivery):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "read_order")
    g.add_edge("read_order", "design_brief")
    g.add_edge("design_brief", "parse_design")
    g.add_edge("parse_design", "choose_freezer")
    g.add_edge("choose_freezer", "pull_blocks")
    g.add_edge("pull_blocks", "carve_next")
    g.add_conditional_edges("carve_next", carve_or_assemble, ["carve_next", "assemble_check"])
    g.add_edge("assemble_check", "melt_budget")
    g.add_edge("melt_budget", "schedule_delivery")
    g.add_edge("schedule_delivery", END)
    return g.compile()


def record(key, out, base_url):
    tracer = TrajdebugTracer(path=str(out), name=NAME, task="deliver an ice sculpture")
    build(base_url).invoke({"text": INPUTS[key]}, config={"callbacks": [tracer]})
