"""Sail maker's orders (LangGraph route).

A StateGraph: the model reads the order, the model plans the sails to cut, a loop measures each sail (the model
writes the dimension query, a dimensions tool and a cloth tool answer), a routing edge sends the order to the racing
or cruising finishing line, a rig sub-graph (model resolves the hull, rig tool, rig parser) checks the reefing, then
the order sheet is assembled and validated.
"""
import operator
from typing import Annotated, TypedDict

from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

import kit
from common import chat_brain
from lg_common import ask_json

NAME = "sail-orders"
ROUTE = "langgraph"
DOMAIN = "sail maker's orders"
SHAPE = "intake (llm) -> plan (llm) -> loop per sail: query (llm), dimensions tool, cloth tool -> loft routing -> finishing tool -> rig sub-graph (hull llm, rig tool, parse) -> assemble -> validate"
EXT = "jsonl"

HULLS = {"Blue Heron": ("H-2231", "Contessa 32"), "Kestrel": ("H-1187", "Sigma 33"),
         "Tern": ("H-3302", "J/80"), "Marram": ("H-0915", "Westerly 33"), "Skua": ("H-4410", "First 27"),
         "Petrel": ("H-2290", "Contessa 26"), "Gannet": ("H-3388", "J/70")}
OWNERS = {"Blue Heron": "Petrel", "Tern": "Gannet", "Kestrel": "Skua", "Marram": "Blue Heron",
          "Skua": "Kestrel", "Petrel": "Blue Heron", "Gannet": "Tern"}
AREAS = {  # m2 per class and sail
    "Contessa 32": {"main": 19.8, "genoa": 27.5, "jib": 16.0, "spinnaker": 58.0},
    "Sigma 33": {"main": 22.4, "genoa": 30.1, "jib": 17.9, "spinnaker": 64.0},
    "J/80": {"main": 18.6, "genoa": 17.0, "jib": 12.5, "spinnaker": 64.0},
    "Westerly 33": {"main": 21.0, "genoa": 31.4, "jib": 18.2, "spinnaker": 60.0},
    "First 27": {"main": 15.2, "genoa": 20.3, "jib": 12.0, "spinnaker": 42.0},
    "Contessa 26": {"main": 12.9, "genoa": 17.4, "jib": 10.1, "spinnaker": 36.0},
    "J/70": {"main": 13.0, "genoa": 11.0, "jib": 10.0, "spinnaker": 42.0},
}
REEFS = {"H-2231": 2, "H-1187": 2, "H-3302": 1, "H-0915": 3, "H-4410": 2, "H-2290": 2, "H-3388": 1}
CLOTH = {"racing": "laminate", "cruising": "dacron"}

INPUTS = {
    "so-801": {"boat": "Blue Heron", "use": "cruising", "sails": ["main", "genoa", "spinnaker"]},
    "so-802": {"boat": "Tern", "use": "racing", "sails": ["main", "jib", "spinnaker"]},
    "so-803": {"boat": "Marram", "use": "cruising", "sails": ["main", "genoa", "jib"]},
    "so-804": {"boat": "Kestrel", "use": "racing", "sails": ["main", "genoa", "spinnaker"]},
    "so-805": {"boat": "Skua", "use": "cruising", "sails": ["main", "jib", "genoa"]},
    "so-806": {"boat": "Gannet", "use": "racing", "sails": ["main", "jib", "spinnaker"]},
}

CASES = [
    dict(id="zzx-sail-01", input="so-801", kind="wrong_tool_args", root=("ChatOpenAI", 4),
         failure=("validate_order", 1), line="the model's dimension query for the genoa asks for the jib"),
    dict(id="zzx-sail-02", input="so-802", kind="wrong_routing", root=("pick_loft", 1),
         failure=("validate_order", 1), line="the loft router sends a racing order to the cruising finishing line"),
    dict(id="zzx-sail-03", input="so-803", kind="plan_error", root=("ChatOpenAI", 2),
         failure=("validate_order", 1), line="the model's cutting plan leaves the jib out"),
    dict(id="zzx-sail-04", input="so-803", kind="off_by_one", root=("parse_rig", 1),
         failure=("validate_order", 1), line="the rig parser builds the reef rows from one, one short"),
    dict(id="zzx-sail-05", input="so-804", kind="subagent_wrong_entity", root=("ChatOpenAI", 6),
         failure=("validate_order", 1), line="the rig sub-graph's model resolves the owner's other boat as the hull"),
]


def brain():
    def order(p):
        return {"boat": p["boat"], "use": p["use"], "sails": p["sails"]}

    def plan(p):
        sails = list(p["sails"])
        if kit.on("zzx-sail-03"):
            sails = sails[:-1]
        return {"cut": [{"sail": s, "order": i + 1} for i, s in enumerate(sails)]}

    def query(p):
        sail = p["sail"]
        if kit.on("zzx-sail-01") and sail == "genoa":
            sail = "jib"
        return {"class": p["class"], "sail": sail}

    def hull(p):
        boat = OWNERS[p["boat"]] if kit.on("zzx-sail-05") else p["boat"]
        return {"hull": HULLS[boat][0], "boat": boat}

    return chat_brain({"order": order, "plan": plan, "query": query, "hull": hull})


@tool
def sail_dimensions(boat_class: str, sail: str) -> dict:
    """Measured area of one sail for a boat class (m2)."""
    return {"class": boat_class, "sail": sail, "area_m2": AREAS[boat_class][sail]}


@tool
def cloth_price(area_m2: float, sail: str) -> dict:
    """Cloth needed for a sail, with 12% cutting allowance."""
    return {"sail": sail, "cloth_m2": round(area_m2 * 1.12, 1)}


@tool
def finishing_spec(line: str) -> dict:
    """Finishing line specification: cloth and hardware."""
    return {"line": line, "cloth": CLOTH[line], "hardware": "titanium rings" if line == "racing" else "steel rings"}


@tool
def rig_record(hull: str) -> str:
    """The rig record of a hull, as stored in the rig book."""
    return f"hull={hull}; reefs={REEFS[hull]}; furler=yes"


class State(TypedDict, total=False):
    request: dict
    order: dict
    plan: list
    idx: int
    sails: Annotated[list, operator.add]
    finish: dict
    hull: dict
    rig: dict
    sheet: dict


class Rig(TypedDict, total=False):
    order: dict
    hull: dict
    rig_text: str
    rig: dict


SYSTEM = "You are the loft manager of a sail maker. Answer with JSON only."


def build(server):
    def intake(s):
        o = ask_json(server, SYSTEM, "order", "Read this sail order.", s["request"])
        o["class"] = HULLS[o["boat"]][1]
        return {"order": o}

    def plan_cut(s):
        return {"plan": ask_json(server, SYSTEM, "plan", "Plan the sails to cut.", s["order"])["cut"], "idx": 0}

    def measure(s):
        item = s["plan"][s["idx"]]
        q = ask_json(server, SYSTEM, "query", "Write the dimension query for this sail.",
                     {"class": s["order"]["class"], "sail": item["sail"]})
        dims = sail_dimensions.invoke({"boat_class": q["class"], "sail": q["sail"]})
        cloth = cloth_price.invoke({"area_m2": dims["area_m2"], "sail": item["sail"]})
        return {"sails": [{"sail": item["sail"], "area_m2": dims["area_m2"], "cloth_m2": cloth["cloth_m2"]}],
                "idx": s["idx"] + 1}

    def more(s):
        return "measure" if s["idx"] < len(s["plan"]) else "choose_loft"

    def choose_loft(s):
        return {}

    def pick_loft(s):
        race = s["order"]["use"] == "racing"
        if kit.on("zzx-sail-02"):
            race = s["order"]["use"] == "racing" and s["order"]["class"].startswith("Sigma")
        return "racing_line" if race else "cruising_line"

    def racing_line(s):
        return {"finish": finishing_spec.invoke({"line": "racing"})}

    def cruising_line(s):
        return {"finish": finishing_spec.invoke({"line": "cruising"})}

    def resolve_hull(r):
        return {"hull": ask_json(server, SYSTEM, "hull", "Which hull is this order for?",
                                 {"boat": r["order"]["boat"]})}

    def fetch_rig(r):
        return {"rig_text": rig_record.invoke({"hull": r["hull"]["hull"]})}

    def parse_rig(r):
        fields = dict(kv.split("=") for kv in r["rig_text"].split("; "))
        n = int(fields["reefs"])
        rows = list(range(1, n)) if kit.on("zzx-sail-04") else list(range(1, n + 1))
        return {"rig": {"hull": fields["hull"], "reef_rows": rows, "furler": fields["furler"] == "yes"}}

    rg = StateGraph(Rig)
    for n, f in [("resolve_hull", resolve_hull), ("fetch_rig", fetch_rig), ("parse_rig", parse_rig)]:
        rg.add_node(n, f)
    rg.add_edge(START, "resolve_hull")
    rg.add_edge("resolve_hull", "fetch_rig")
    rg.add_edge("fetch_rig", "parse_rig")
    rg.add_edge("parse_rig", END)
    rig = rg.compile()

    def assemble(s):
        return {"sheet": {"boat": s["order"]["boat"], "class": s["order"]["class"], "use": s["order"]["use"],
                          "sails": s["sails"], "finish": s["finish"], "rig": s["rig"]}}

    def validate_order(s):
        sh = s["sheet"]
        made = [x["sail"] for x in sh["sails"]]
        if made != s["request"]["sails"]:
            raise ValueError(f"order sheet for {sh['boat']} cuts {made}; the customer ordered {s['request']['sails']}")
        for x in sh["sails"]:
            if x["area_m2"] != AREAS[sh["class"]][x["sail"]]:
                raise ValueError(f"{x['sail']} cut at {x['area_m2']} m2; the {sh['class']} measures "
                                 f"{AREAS[sh['class']][x['sail']]} m2")
        if sh["finish"]["cloth"] != CLOTH[sh["use"]]:
            raise ValueError(f"{sh['use']} order finished in {sh['finish']['cloth']}")
        if sh["rig"]["hull"] != HULLS[sh["boat"]][0]:
            raise ValueError(f"rig record {sh['rig']['hull']} is not the hull of {sh['boat']} ({HULLS[sh['boat']][0]})")
        if len(sh["rig"]["reef_rows"]) != REEFS[HULLS[sh["boat"]][0]]:
            raise ValueError(f"main has {len(sh['rig']['reef_rows'])} reef rows; the rig book says "
                             f"{REEFS[HULLS[sh['boat']][0]]}")
        return {}

    g = StateGraph(State)
    for n, f in [("intake", intake), ("plan_cut", plan_cut), ("measure", measure), ("choose_loft", choose_loft),
                 ("racing_line", racing_line), ("cruising_line", cruising_line), ("rig_check", rig),
                 ("assemble", assemble), ("validate_order", validate_order)]:
        g.add_node(n, f)
    g.add_edge(START, "intake")
    g.add_edge("intake", "plan_cut")
    g.add_edge("plan_cut", "measure")
    g.add_conditional_edges("measure", more, ["measure", "choose_loft"])
    g.add_conditional_edges("choose_loft", pick_loft, ["racing_line", "cruising_line"])
    g.add_edge("racing_line", "rig_check")
    g.add_edge("cruising_line", "rig_check")
    g.add_edge("rig_check", "assemble")
    g.add_edge("assemble", "validate_order")
    g.add_edge("validate_order", END)
    return g.compile()


def record(so_id, path, server):
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=path, name=NAME, task=f"cut sails for order {so_id}")
    build(server).invoke({"request": INPUTS[so_id], "sails": []}, config={"callbacks": [tracer], "recursion_limit": 60})
