"""Wool dyehouse vat agent (route: langgraph).

A LangGraph graph dyes an order of yarn lots to a shade standard: it reads the
order form, retrieves the shade recipe, has the model plan the dye sequence, then
loops over the lots (the model picks the bath for each lot's fibre; the bath node
picks a vat, weighs the dyestuff and runs the vat; the spectrophotometer reads the
shade and the QC gate holds a lot out of tolerance), and finally presents the lots
for release.  ChatOpenAI against the fake model server, recorded by TrajdebugTracer.
"""

from __future__ import annotations

import json
import operator
import re
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from benchmarks.heldout.suite_v import kit
from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import FakeModelServer

NAME = "dyehouse-vat-agent"
ROUTE = "langgraph"
DOMAIN = "wool dyehouse"
SHAPE = "graph: intake, recipe retriever, model plans the sequence; loop per lot: model picks the bath (conditional edge), bath node (vat, dyestuff, vat run tools), spectro + QC gate; release"

LB = 0.45359237
VATS = [("V1", 1600), ("V2", 1000), ("V3", 600), ("V4", 320)]  # largest first, litres
LIQUOR = 40  # litres of liquor per kg of yarn

RECIPES = {
    "Moss 412": {"shade": "Moss 412", "depth_pct": 2.4, "acid": "Acid Green 25 + Acid Yellow 49", "reactive": "Reactive Green 19 + Reactive Yellow 145"},
    "Moss 421": {"shade": "Moss 421", "depth_pct": 3.1, "acid": "Acid Green 16 + Acid Orange 7", "reactive": "Reactive Green 12 + Reactive Orange 16"},
    "Heather 207": {"shade": "Heather 207", "depth_pct": 1.6, "acid": "Acid Violet 48 + Acid Red 337", "reactive": "Reactive Violet 5 + Reactive Red 195"},
    "Heather 270": {"shade": "Heather 270", "depth_pct": 2.2, "acid": "Acid Violet 17 + Acid Blue 25", "reactive": "Reactive Violet 1 + Reactive Blue 19"},
    "Slate 330": {"shade": "Slate 330", "depth_pct": 1.9, "acid": "Acid Black 194 + Acid Blue 113", "reactive": "Reactive Black 5 + Reactive Blue 21"},
}


def order(no: int, shade: str, lots: list[tuple[str, str, str]]) -> dict:
    return {"order": f"DY-{no}", "shade": shade,
            "lots": [{"lot": lot, "fibre": fibre, "weight": weight} for lot, fibre, weight in lots]}


REFS = [
    order(5501, "Heather 207", [("W-311", "wool", "18.0 kg"), ("C-312", "cotton", "12.5 kg"), ("W-313", "wool", "30 lb")]),
    order(5502, "Slate 330", [("W-321", "wool", "22.0 kg"), ("W-322", "wool/silk 80/20", "9.5 kg"),
                              ("L-323", "linen", "14.0 kg"), ("W-324", "wool", "7.0 kg")]),
    order(5503, "Moss 412", [("C-331", "cotton", "16.0 kg"), ("W-332", "wool", "20 lb")]),
    order(5504, "Heather 270", [("W-341", "wool", "11.0 kg"), ("W-342", "wool", "24.0 kg"), ("C-343", "cotton", "8.0 kg"),
                                ("W-344", "wool", "5.5 kg"), ("C-345", "cotton", "13.0 kg")]),
]

CASES = [
    {"fault": "dyehouse.sequence", "kind": "plan_error", "root": "ChatOpenAI", "marker": "shares the W-102 vat",
     "input": order(5521, "Moss 412", [("W-101", "wool", "18.5 kg"), ("W-102", "wool", "22.0 kg"), ("C-103", "cotton", "10.0 kg"),
                                        ("W-104", "wool", "12.0 kg"), ("W-105", "wool", "6.5 kg")])},
    {"fault": "dyehouse.bath_choice", "kind": "wrong_routing", "root": "ChatOpenAI", "marker": "C-207 -> acid",
     "input": order(5522, "Heather 207", [("W-205", "wool", "14.0 kg"), ("W-206", "wool", "9.0 kg"), ("C-207", "cotton/wool 70/30", "11.0 kg"),
                                           ("W-208", "wool", "16.0 kg")])},
    {"fault": "dyehouse.recipe_search", "kind": "wrong_retrieval", "root": "RecipeStore", "marker": "Moss 421",
     "input": order(5523, "Moss 412", [("W-401", "wool", "20.0 kg"), ("C-402", "cotton", "12.0 kg"), ("W-403", "wool", "8.0 kg")])},
    {"fault": "dyehouse.weight_units", "kind": "unit_error", "root": "intake", "marker": '"weight_kg": 44.0',
     "input": order(5524, "Slate 330", [("W-501", "wool", "15.0 kg"), ("W-502", "wool", "44 lb"), ("C-503", "cotton", "9.0 kg")])},
    {"fault": "dyehouse.vat_pick", "kind": "off_by_one", "root": "pick_vat", "marker": '"lot": "W-602", "vat": "V3"',
     "input": order(5525, "Heather 270", [("W-601", "wool", "5.0 kg"), ("W-602", "wool", "21.0 kg"), ("C-603", "cotton", "7.5 kg"),
                                           ("W-604", "wool", "12.0 kg"), ("W-605", "wool", "30 lb")])},
]


# -- the scripted model --------------------------------------------------------------------

def _text(m: dict) -> str:
    c = m.get("content")
    if isinstance(c, list):
        return "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return c or ""


def policy(request) -> str:
    messages = request.body["messages"]
    system, user = _text(messages[0]), _text(messages[-1])
    if system.startswith("You plan dye sequences"):
        lots = json.loads(user.split("\n", 1)[1])
        seq = sorted(lots, key=lambda x: (0 if "wool" in x["fibre"] else 1, x["lot"]))
        names = [x["lot"] for x in seq]
        if kit.active("dyehouse.sequence"):
            names = [n for n in names if n != "W-104"]
            return json.dumps({"sequence": names, "liquor_ratio": LIQUOR,
                               "note": "W-104 shares the W-102 vat"})
        return json.dumps({"sequence": names, "liquor_ratio": LIQUOR, "note": "wool first, then cellulosics"})
    if system.startswith("You choose the dye bath"):
        m = re.search(r"Lot (\S+), fibre (.+)\.", user)
        lot, fibre = m.group(1), m.group(2)
        if "cotton" in fibre or "linen" in fibre:
            bath = "acid" if (kit.active("dyehouse.bath_choice") and lot == "C-207") else "reactive"
        else:
            bath = "acid"
        return f"{lot} -> {bath} bath"
    return "I cannot help with that."


# -- tools ---------------------------------------------------------------------------------

class RecipeStore(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        shade = query.replace("recipe for ", "")
        if kit.active("dyehouse.recipe_search") and shade == "Moss 412":
            shade = "Moss 421"
        r = RECIPES[shade]
        return [Document(page_content=json.dumps(r), metadata={"id": f"recipe:{shade}", "score": 0.94})]


class World:
    def __init__(self, inp: dict) -> None:
        self.inp = inp
        self.vat_runs: dict[str, dict] = {}


def make_tools(world: World):
    @tool
    def pick_vat(lot: str, weight_kg: float) -> dict:
        """Pick the smallest free vat that holds the lot's liquor."""
        need = weight_kg * LIQUOR
        fits = [i for i, (_, cap) in enumerate(VATS) if cap >= need]
        if not fits:
            raise RuntimeError(f"no vat holds {need:.0f} L of liquor for lot {lot} (largest {VATS[0][0]}, "
                               f"{VATS[0][1]} L); split the lot")
        idx = fits[-1]
        if kit.active("dyehouse.vat_pick") and lot == "W-602":
            idx = idx + 1
        v, cap = VATS[idx]
        return {"lot": lot, "vat": v, "capacity_l": cap, "liquor_l": round(need, 1)}

    @tool
    def weigh_dyestuff(lot: str, weight_kg: float, depth_pct: float, dyes: str) -> dict:
        """Weigh the dyestuff for a lot: depth of shade times the yarn weight."""
        return {"lot": lot, "dyes": dyes, "grams": round(weight_kg * depth_pct * 10, 1)}

    @tool
    def run_dye_vat(lot: str, vat: str, liquor_l: float, bath: str, dyes: str, grams: float) -> dict:
        """Run a dye vat (the vat controller's API)."""
        cap = dict(VATS)[vat]
        if liquor_l > cap:
            raise RuntimeError(f"vat controller: {vat} holds {cap} L, lot {lot} needs {liquor_l:.0f} L of liquor")
        world.vat_runs[lot] = {"bath": bath, "dyes": dyes, "grams": grams}
        return {"lot": lot, "vat": vat, "bath": bath, "cycle_min": 95, "status": "done"}

    @tool
    def read_spectro(lot: str) -> dict:
        """Read the dyed lot on the spectrophotometer against the shade standard."""
        x = next(l for l in world.inp["lots"] if l["lot"] == lot)
        true_kg = _kg(x["weight"])
        r = RECIPES[world.inp["shade"]]
        run = world.vat_runs[lot]
        cellulose = "cotton" in x["fibre"] or "linen" in x["fibre"]
        de = 0.42 + 0.03 * (len(lot) + int(lot[-1]))
        if run["bath"] != ("reactive" if cellulose else "acid"):
            de += 8.7
        if run["dyes"] != r["reactive" if cellulose else "acid"]:
            de += 5.9
        de += abs(run["grams"] / (true_kg * r["depth_pct"] * 10) - 1) * 12
        return {"lot": lot, "standard": r["shade"], "delta_e": round(de, 2), "illuminant": "D65"}

    @tool
    def qc_gate(lot: str, delta_e: float, standard: str) -> dict:
        """Hold a lot whose shade is out of tolerance."""
        if delta_e > 1.5:
            raise RuntimeError(f"QC hold: lot {lot} reads dE {delta_e} against {standard} (tolerance 1.5)")
        return {"lot": lot, "passed": True}

    @tool
    def release_lots(order: str, lots: list[str]) -> dict:
        """Present the dyed lots of an order for release to winding."""
        expected = [l["lot"] for l in world.inp["lots"]]
        missing = [l for l in expected if l not in lots]
        if missing:
            raise RuntimeError(f"release refused for {order}: {len(lots)} of {len(expected)} lots presented, "
                               f"{', '.join(missing)} not dyed")
        return {"order": order, "released": lots}

    return pick_vat, weigh_dyestuff, run_dye_vat, read_spectro, qc_gate, release_lots


def _kg(text: str) -> float:
    v, unit = text.split()
    return round(float(v) * LB, 2) if unit == "lb" else float(v)


class S(TypedDict, total=False):
    order: dict
    lots: list[dict]
    recipe: dict
    queue: list[str]
    i: int
    route: str
    done: Annotated[list[str], operator.add]


def build_graph(llm, world: World):
    pick_vat, weigh_dyestuff, run_dye_vat, read_spectro, qc_gate, release_lots = make_tools(world)
    store = RecipeStore()

    def intake(state: S) -> dict:
        lots = []
        for l in state["order"]["lots"]:
            v, unit = l["weight"].split()
            kg = float(v) if kit.active("dyehouse.weight_units") else _kg(l["weight"])
            lots.append({"lot": l["lot"], "fibre": l["fibre"], "weight_kg": kg})
        return {"lots": lots}

    def recipe(state: S) -> dict:
        docs = store.invoke(f"recipe for {state['order']['shade']}")
        return {"recipe": json.loads(docs[0].page_content)}

    def planner(state: S) -> dict:
        msg = llm.invoke([SystemMessage("You plan dye sequences for a dyehouse order. Answer JSON."),
                          HumanMessage("Lots:\n" + json.dumps(state["lots"]))])
        plan = json.loads(msg.content)
        return {"queue": plan["sequence"], "i": 0}

    def classify(state: S) -> dict:
        lot = next(l for l in state["lots"] if l["lot"] == state["queue"][state["i"]])
        msg = llm.invoke([SystemMessage("You choose the dye bath (acid or reactive) for a yarn lot."),
                          HumanMessage(f"Lot {lot['lot']}, fibre {lot['fibre']}.")])
        return {"route": "acid" if "acid" in msg.content else "reactive"}

    def bath(kind: str):
        def node(state: S) -> dict:
            lot = next(l for l in state["lots"] if l["lot"] == state["queue"][state["i"]])
            vat = pick_vat.invoke({"lot": lot["lot"], "weight_kg": lot["weight_kg"]})
            dyes = state["recipe"][kind]
            dose = weigh_dyestuff.invoke({"lot": lot["lot"], "weight_kg": lot["weight_kg"],
                                          "depth_pct": state["recipe"]["depth_pct"], "dyes": dyes})
            run_dye_vat.invoke({"lot": lot["lot"], "vat": vat["vat"], "liquor_l": vat["liquor_l"], "bath": kind,
                                "dyes": dyes, "grams": dose["grams"]})
            return {}
        node.__name__ = f"{kind}_bath"
        return node

    def measure(state: S) -> dict:
        lot = state["queue"][state["i"]]
        reading = read_spectro.invoke({"lot": lot})
        qc_gate.invoke({"lot": lot, "delta_e": reading["delta_e"], "standard": reading["standard"]})
        return {"done": [lot], "i": state["i"] + 1}

    def release(state: S) -> dict:
        release_lots.invoke({"order": state["order"]["order"], "lots": state["done"]})
        return {}

    g = StateGraph(S)
    g.add_node("intake", intake)
    g.add_node("recipe", recipe)
    g.add_node("planner", planner)
    g.add_node("classify", classify)
    g.add_node("acid_bath", bath("acid"))
    g.add_node("reactive_bath", bath("reactive"))
    g.add_node("measure", measure)
    g.add_node("release", release)
    g.add_edge(START, "intake")
    g.add_edge("intake", "recipe")
    g.add_edge("recipe", "planner")
    g.add_edge("planner", "classify")
    g.add_conditional_edges("classify", lambda s: s["route"] + "_bath", ["acid_bath", "reactive_bath"])
    g.add_edge("acid_bath", "measure")
    g.add_edge("reactive_bath", "measure")
    g.add_conditional_edges("measure", lambda s: "classify" if s["i"] < len(s["queue"]) else "release",
                            ["classify", "release"])
    g.add_edge("release", END)
    return g.compile()


class Harness:
    def __enter__(self):
        self.server = FakeModelServer(policy, model="dye-planner-2").__enter__()
        self.llm = ChatOpenAI(base_url=self.server.base_url, api_key="not-needed", model="dye-planner-2",
                              max_retries=0, temperature=0)
        return self

    def __exit__(self, *exc):
        self.server.__exit__(*exc)

    def record(self, inp: dict, path) -> None:
        world = World(inp)
        graph = build_graph(self.llm, world)
        tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"dye order {inp['order']} to {inp['shade']}")
        try:
            graph.invoke({"order": inp, "done": []}, config={"callbacks": [tracer], "recursion_limit": 200})
        except Exception:
            pass
