"""Tile roofing (LangGraph): survey a re-roof job through a measuring sub-graph, size tiles and battens, order them."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, json_policy
from .kit import active

AGENT = "tile-roofing-estimator"
ROUTE = "langgraph"
DOMAIN = "tile roofing"
SHAPE = "intake, context, model plan, measuring sub-graph (model resolves property, face tool loop), spec retriever, model order draft, course count, merchant order"

PROPERTIES = {
    "100041": {"address": "14 Elm Row", "faces": {"front": (38.5, 5.2), "rear": (38.5, 5.2), "dormer": (9.6, 2.4), "porch": (4.2, 1.8)}},
    "100043": {"address": "16 Elm Row", "faces": {"front": (36.0, 5.0), "rear": (36.0, 5.0), "dormer": (7.9, 2.1), "porch": (3.6, 1.6)}},
    "200310": {"address": "3 Quarry Lane", "faces": {"front": (52.0, 6.1), "rear": (52.0, 6.1), "hip_east": (14.4, 4.0), "hip_west": (14.4, 4.0)}},
    "200312": {"address": "5 Quarry Lane", "faces": {"front": (47.5, 5.8), "rear": (47.5, 5.8), "hip_east": (12.8, 3.7), "hip_west": (12.8, 3.7)}},
    "300077": {"address": "9 Mill Close", "faces": {"front": (30.2, 4.6), "rear": (30.2, 4.6)}},
    "300079": {"address": "11 Mill Close", "faces": {"front": (31.0, 4.7), "rear": (31.0, 4.7), "lean_to": (8.0, 2.5)}},
    "400120": {"address": "2 Chapel Yard", "faces": {"front": (44.0, 5.5), "rear": (44.0, 5.5), "dormer": (6.5, 2.0)}},
    "400122": {"address": "4 Chapel Yard", "faces": {"front": (41.0, 5.3), "rear": (41.0, 5.3)}},
}
PRODUCTS = {
    "redland-49": {"name": "Redland 49 interlocking", "tiles_per_m2": 9.8, "gauge_mm": 343},
    "marley-plain": {"name": "Marley plain clay", "tiles_per_m2": 60.0, "gauge_mm": 100},
    "redland-grovebury": {"name": "Redland Grovebury", "tiles_per_m2": 8.4, "gauge_mm": 345},
    "sandtoft-20-20": {"name": "Sandtoft 20/20", "tiles_per_m2": 10.1, "gauge_mm": 333},
}
INPUTS = {
    "A": {"job": "R-771", "uprn": "100041", "product": "redland-49", "crew": "crew-2"},
    "B": {"job": "R-780", "uprn": "200310", "product": "sandtoft-20-20", "crew": "crew-1"},
}
REFS = [
    {"job": "R-702", "uprn": "300077", "product": "redland-49", "crew": "crew-1"},
    {"job": "R-715", "uprn": "400120", "product": "sandtoft-20-20", "crew": "crew-2"},
    {"job": "R-733", "uprn": "200312", "product": "redland-49", "crew": "crew-3"},
    {"job": "R-748", "uprn": "300079", "product": "sandtoft-20-20", "crew": "crew-1"},
]
HISTORY = {"crew-1": ["R-690: used marley-plain on a listed cottage"], "crew-2": ["R-701: client chose marley-plain clay"],
           "crew-3": ["R-699: sandtoft on outbuilding"]}
CASES = [
    Case("zs_roofing_1", "roof.uprn", "subagent_wrong_entity", "A", "ChatOpenAI", 2, "llm", "place_order", 1,
         "The measuring sub-graph's model resolves the job to the neighbouring property, so every face measured is next door's."),
    Case("zs_roofing_2", "roof.courses", "off_by_one", "B", "count_courses", 1, "other", "place_order", 1,
         "The course count drops the last course on each face, so the batten length ordered is short."),
    Case("zs_roofing_3", "roof.history", "context_pollution", "A", "gather_context", 1, "other", "place_order", 1,
         "The context for the job brings in the crew's notes from an earlier job, and the order draft follows their product."),
    Case("zs_roofing_4", "roof.plan", "plan_error", "B", "ChatOpenAI", 1, "llm", "place_order", 1,
         "The survey plan leaves out one hip face, so the roof area ordered for is short."),
    Case("zs_roofing_5", "roof.spec", "wrong_retrieval", "A", "TileSpecRetriever", 1, "retrieval", "place_order", 1,
         "The spec search returns the data sheet of a different tile, whose coverage per square metre is lower."),
]


def _plan(p: dict) -> dict:
    faces = list(p["faces_on_record"])
    if active("roof.plan"):
        faces = faces[:-1]
    return {"measure": faces, "product": p["product"]}


def _resolve(p: dict) -> dict:
    uprn = p["uprn"]
    if active("roof.uprn"):
        uprn = str(int(uprn) + 2)
    return {"uprn": uprn, "address": PROPERTIES[uprn]["address"]}


def _draft(p: dict) -> dict:
    product = p["product"]
    for note in p.get("notes", []):
        if "chose" in note:
            product = note.split("chose ")[1].split()[0]
    spec = p["spec"]
    tiles = math.ceil(p["area_m2"] * spec["tiles_per_m2"] * 1.05)
    return {"lines": [{"sku": product, "qty": tiles, "unit": "tile"}], "area_m2": p["area_m2"]}


policy = json_policy({"plan": _plan, "resolve": _resolve, "draft": _draft})


@tool
def get_roof_face(uprn: str, face: str) -> str:
    """Measured area (m2) and rafter length (m) of one roof face from the drone survey."""
    area, rafter = PROPERTIES[uprn]["faces"][face]
    return json.dumps({"uprn": uprn, "face": face, "area_m2": area, "rafter_m": rafter})


def merchant_api(job: str, uprn: str, lines: list, area_m2: float) -> str:
    """The roofing merchant's order endpoint."""
    faces = PROPERTIES[uprn]["faces"]
    true_area = round(sum(a for a, _ in faces.values()), 1)
    tile_line = lines[0]
    spec = PRODUCTS.get(tile_line["sku"])
    if spec is None:
        raise RuntimeError(f"HTTP 404 unknown sku {tile_line['sku']!r}")
    need = math.ceil(true_area * spec["tiles_per_m2"] * 1.05)
    if tile_line["qty"] < need:
        raise RuntimeError(f"HTTP 422 order {job}: {tile_line['qty']} x {tile_line['sku']} does not cover the surveyed "
                           f"{true_area} m2 of pitched roof at UPRN {uprn} (needs {need})")
    if tile_line["qty"] > need * 1.2:
        raise RuntimeError(f"HTTP 422 order {job}: {tile_line['qty']} x {tile_line['sku']} is over 120% of the "
                           f"surveyed need of {need} for UPRN {uprn}")
    batten_need = 0.0
    for area, rafter in faces.values():
        courses = math.ceil(rafter * 1000 / spec["gauge_mm"]) + 1
        batten_need += courses * area / rafter
    if lines[1]["qty"] < round(batten_need * 0.98, 1):
        raise RuntimeError(f"HTTP 422 order {job}: {lines[1]['qty']} m of batten is short of the {batten_need:.1f} m "
                           f"the courses of {spec['name']} need")
    return json.dumps({"status": "accepted", "order": f"MO-{job}"})


class TileSpecRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        key = query.split()[0]
        if active("roof.spec"):
            key = "redland-grovebury"
        spec = PRODUCTS[key]
        return [Document(page_content=json.dumps({"sku": key, **spec}), metadata={"sku": key})]


class RoofState(TypedDict, total=False):
    job: dict
    notes: list
    plan: dict
    property: dict
    faces: list
    spec: dict
    batten_m: float
    order: dict
    result: str


class MeasureState(TypedDict, total=False):
    job: dict
    plan: dict
    property: dict
    faces: list


def build(llm: ChatOpenAI) -> Any:
    def ask(task: str, payload: Any) -> dict:
        reply = llm.invoke([SystemMessage(f"You are the roofing estimator. TASK={task}. Answer with JSON only."),
                            HumanMessage(json.dumps(payload, sort_keys=True))])
        return json.loads(reply.content)

    def intake(state: RoofState) -> dict:
        job = dict(state["job"])
        job["faces_on_record"] = sorted(PROPERTIES[job["uprn"]]["faces"], key=lambda f: -PROPERTIES[job["uprn"]]["faces"][f][0])
        return {"job": job}

    def gather_context(state: RoofState) -> dict:
        job = state["job"]
        notes = [f"{job['job']}: access from the rear garden, scaffold booked"]
        if active("roof.history"):
            notes += HISTORY[job["crew"]]
        return {"notes": notes}

    def plan_survey(state: RoofState) -> dict:
        job = state["job"]
        return {"plan": ask("plan", {"faces_on_record": job["faces_on_record"], "product": job["product"]})}

    def resolve_property(state: MeasureState) -> dict:
        return {"property": ask("resolve", {"uprn": state["job"]["uprn"], "job": state["job"]["job"]})}

    def measure_faces(state: MeasureState) -> dict:
        faces = []
        for face in state["plan"]["measure"]:
            faces.append(json.loads(get_roof_face.invoke({"uprn": state["property"]["uprn"], "face": face})))
        return {"faces": faces}

    sub = StateGraph(MeasureState)
    sub.add_node("resolve_property", resolve_property)
    sub.add_node("measure_faces", measure_faces)
    sub.add_edge(START, "resolve_property")
    sub.add_edge("resolve_property", "measure_faces")
    sub.add_edge("measure_faces", END)
    surveyor = sub.compile()

    def survey(state: RoofState) -> dict:
        out = surveyor.invoke({"job": state["job"], "plan": state["plan"]}, config={"run_name": "roof_surveyor"})
        return {"property": out["property"], "faces": out["faces"]}

    retriever = TileSpecRetriever()

    def fetch_spec(state: RoofState) -> dict:
        docs = retriever.invoke(f"{state['plan']['product']} data sheet coverage gauge")
        return {"spec": json.loads(docs[0].page_content)}

    def count_courses(state: RoofState) -> dict:
        total = 0.0
        for f in state["faces"]:
            courses = math.ceil(f["rafter_m"] * 1000 / state["spec"]["gauge_mm"])
            if not active("roof.courses"):
                courses += 1
            total += courses * f["area_m2"] / f["rafter_m"]
        order = state["order"]
        return {"batten_m": round(total, 1),
                "order": {**order, "lines": [*order["lines"], {"sku": "batten-25x50", "qty": round(total, 1), "unit": "m"}]}}

    def draft_order(state: RoofState) -> dict:
        area = round(sum(f["area_m2"] for f in state["faces"]), 1)
        return {"order": ask("draft", {"product": state["plan"]["product"], "spec": state["spec"], "area_m2": area,
                                       "notes": state["notes"]})}

    def place_order(state: RoofState) -> dict:
        o = state["order"]
        res = merchant_api(state["job"]["job"], state["job"]["uprn"], o["lines"], o["area_m2"])
        return {"result": res}

    g = StateGraph(RoofState)
    for name, fn in [("intake", intake), ("gather_context", gather_context), ("plan_survey", plan_survey),
                     ("survey", survey), ("fetch_spec", fetch_spec), ("count_courses", count_courses),
                     ("draft_order", draft_order), ("place_order", place_order)]:
        g.add_node(name, fn)
    order = ["intake", "gather_context", "plan_survey", "survey", "fetch_spec", "draft_order", "count_courses", "place_order"]
    g.add_edge(START, order[0])
    for a, b in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1], END)
    return g.compile()


def record(inp: dict, dest: Path, server: Any) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(dest), name=AGENT, task=f"re-roof order for job {inp['job']}")
    try:
        build(llm).invoke({"job": inp}, config={"callbacks": [tracer], "run_name": AGENT})
    except RuntimeError:
        pass
