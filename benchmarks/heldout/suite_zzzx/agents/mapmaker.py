"""Mapmaker's custom charts (langgraph route): a StateGraph with a retriever, a model piped into a JSON parser,
a conditional route, a loop of tool calls over features, and a final chart check node."""
from __future__ import annotations

import json
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "custom-charts"
ROUTE = "langgraph"
DOMAIN = "a mapmaker's custom charts"
SHAPE = "StateGraph: intake, retriever node, prompt|model|JSON parser node, conditional route to coastal/inland drafting, loop of plot tool calls, scale and variation tools, sheet check"
SWITCH = None

INPUTS = [
    {"order": "MC-71", "place": "Port Ellen", "centre": [55.63, -6.19], "kind": "coastal", "sheet": "A1", "edition": 2026},
    {"order": "MC-72", "place": "Glen Affric", "centre": [57.27, -4.95], "kind": "inland", "sheet": "A2", "edition": 2026},
    {"order": "MC-73", "place": "Loch Sween", "centre": [55.98, -5.61], "kind": "coastal", "sheet": "A1", "edition": 2026},
    {"order": "MC-74", "place": "Cairn Gorm", "centre": [57.11, -3.65], "kind": "inland", "sheet": "A1", "edition": 2025},
    {"order": "MC-75", "place": "Sound of Jura", "centre": [55.95, -5.72], "kind": "coastal", "sheet": "A0", "edition": 2026},
]
SURVEYS = {
    "Port Ellen": {"bounds": [55.60, -6.24, 55.66, -6.15], "span_nm": 3.6, "features": ["lighthouse", "pier", "Carraig Fhada", "Ard Imersay"]},
    "Port Ellis": {"bounds": [56.02, -5.61, 56.07, -5.52], "span_nm": 3.2, "features": ["slipway", "Rubha Ellis"]},
    "Glen Affric": {"bounds": [57.24, -5.05, 57.30, -4.85], "span_nm": 6.5, "features": ["Loch Affric", "Sgurr na Lapaich", "bothy"]},
    "Loch Sween": {"bounds": [55.93, -5.67, 56.03, -5.55], "span_nm": 6.0, "features": ["Castle Sween", "Taynish", "Eilean Mor", "moorings"]},
    "Cairn Gorm": {"bounds": [57.09, -3.70, 57.14, -3.60], "span_nm": 3.4, "features": ["summit cairn", "Coire Cas", "ptarmigan"]},
    "Sound of Jura": {"bounds": [55.80, -5.90, 56.10, -5.55], "span_nm": 18.0, "features": ["Craighouse", "Skervuile", "Gigha", "Corryvreckan", "Crinan"]},
}
SHEETS_MM = {"A0": 1189, "A1": 841, "A2": 594}
SCALES = [10000, 12500, 20000, 25000, 40000, 50000]


class Archive(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        place = query.split(":", 1)[1].strip()
        hits = [p for p in SURVEYS if p == place]
        if SWITCH == "near-name" and place == "Port Ellen":
            hits = ["Port Ellis"]
        return [Document(page_content=json.dumps(SURVEYS[p]), metadata={"survey": p, "year": 2024}) for p in hits]


@tool
def plot_feature(name: str, bounds: list[float], place: str) -> dict:
    """Place a named feature from the survey gazetteer on the chart."""
    gazetteer = {f: place for p in SURVEYS if p != "Port Ellis" for f in SURVEYS[p]["features"]}
    gazetteer.update({f: "Port Ellis" for f in SURVEYS["Port Ellis"]["features"]})
    home = gazetteer[name]
    lat0, lon0, lat1, lon1 = SURVEYS[home]["bounds"]
    if not (bounds[0] <= lat0 and lat1 <= bounds[2] + 0.01):
        raise ValueError(f"{name} lies at {lat0:.2f}N, outside the sheet's {bounds[0]:.2f}-{bounds[2]:.2f}N")
    return {"feature": name, "lat": round((lat0 + lat1) / 2, 3), "lon": round((lon0 + lon1) / 2, 3)}


@tool
def scale_for(span_nm: float, sheet: str) -> dict:
    """Largest standard scale at which the surveyed span fits the sheet, with the chart's span in km."""
    km = span_nm * 1.852
    if SWITCH == "nm-as-km":
        km = span_nm
    usable_mm = SHEETS_MM[sheet] - 80
    scale = next(s for s in SCALES if km * 1e6 / s <= usable_mm)
    return {"scale": scale, "span_km": round(km, 3), "drawn_mm": round(km * 1e6 / scale, 1)}


@tool
def magnetic_variation(lat: float, lon: float, year: int) -> dict:
    """Magnetic variation for the compass rose at a position in a given year."""
    epoch = year
    if SWITCH == "epoch" and lat > 57:
        epoch = 2019
    return {"variation_deg": round(-2.1 + 0.18 * (epoch - 2020) + (lon + 5) * 0.3, 2), "epoch": epoch, "annual_change": 0.18}


def intake(state):
    req = state["request"]
    return {"query": f"survey: {req['place']}", "notes": [f"order {req['order']} on {req['sheet']}"]}


def gather(state, config):
    docs = Archive().invoke(state["query"], config=config)
    return {"surveys": [json.loads(d.page_content) | {"name": d.metadata["survey"]} for d in docs]}


def make_plan_node(llm):
    prompt = ChatPromptTemplate.from_messages([
        ("system", "You are a chart draughtsman. Answer with JSON: projection, title, grid."),
        ("user", "{survey}"),
    ])
    chain = prompt | llm | JsonOutputParser()

    def plan(state, config):
        survey = state["surveys"][0]
        out = chain.invoke({"survey": json.dumps({"request": state["request"], "survey": survey})}, config=config)
        return {"plan": out}
    return plan


def route_kind(state) -> str:
    kind = state["request"]["kind"]
    if SWITCH == "route" and state["request"]["order"] == "MC-73":
        kind = "inland" if "sween" in state["plan"]["title"].lower() else kind
    return "draft_coastal" if kind == "coastal" else "draft_inland"


def draft_coastal(state):
    return {"layers": ["coastline", "soundings", "lights", "tidal diamonds"]}


def draft_inland(state):
    return {"layers": ["contours", "paths", "spot heights"]}


def place_features(state, config):
    survey = state["surveys"][0]
    grid = state["plan"]["grid"]
    bounds = [grid["south"], grid["west"], grid["north"], grid["east"]]
    plotted = []
    for f in survey["features"]:
        plotted.append(plot_feature.invoke({"name": f, "bounds": bounds, "place": state["request"]["place"]}, config=config))
    return {"plotted": plotted}


def finish_sheet(state, config):
    survey = state["surveys"][0]
    sc = scale_for.invoke({"span_nm": survey["span_nm"], "sheet": state["request"]["sheet"]}, config=config)
    lat = (survey["bounds"][0] + survey["bounds"][2]) / 2
    lon = (survey["bounds"][1] + survey["bounds"][3]) / 2
    var = magnetic_variation.invoke({"lat": lat, "lon": lon, "year": state["request"]["edition"]}, config=config)
    return {"scale": sc, "variation": var}


def check_chart(state):
    req = state["request"]
    if req["kind"] == "coastal" and "soundings" not in state["layers"]:
        raise ValueError(f"{req['order']}: coastal chart of {req['place']} drafted without soundings")
    grid = state["plan"]["grid"]
    lat, lon = req["centre"]
    if not (grid["south"] <= lat <= grid["north"] and grid["west"] <= lon <= grid["east"]):
        raise ValueError(f"{req['order']}: the requested centre {lat:.2f}N {lon:.2f}E is off the charted grid "
                         f"{grid['south']}-{grid['north']}N {grid['west']}-{grid['east']}E")
    sc = state["scale"]
    nm_drawn = state["surveys"][0]["span_nm"] * 1852 * 1000 / sc["scale"]
    if abs(nm_drawn - sc["drawn_mm"]) > 5:
        raise ValueError(f"{req['order']}: scale bar 1:{sc['scale']} draws {state['surveys'][0]['span_nm']} nm as "
                         f"{nm_drawn:.0f} mm, the sheet layout has {sc['drawn_mm']} mm")
    if req["edition"] - state["variation"]["epoch"] > 5:
        raise ValueError(f"{req['order']}: compass rose epoch {state['variation']['epoch']} is more than 5 years "
                         f"before the {req['edition']} edition")
    return {"checked": True}


class ChartState(TypedDict, total=False):
    request: dict
    query: str
    notes: list
    surveys: list
    plan: dict
    layers: list
    plotted: list
    scale: dict
    variation: dict
    checked: bool


def brain(request):
    msgs = request.body["messages"]
    data = json.loads(msgs[-1]["content"])
    s = data["survey"]
    lat0, lon0, lat1, lon1 = s["bounds"]
    grid = {"south": round(lat0 - 0.01, 2), "west": round(lon0 - 0.01, 2), "north": round(lat1 + 0.01, 2), "east": round(lon1 + 0.01, 2)}
    if SWITCH == "grid-text" and data["request"]["order"] == "MC-75":
        grid = {k: f"{abs(v):.2f}{'N' if k in ('south', 'north') else 'W'}" for k, v in grid.items()}
    title = f"{data['request']['place']} ({data['request']['kind']})"
    return json.dumps({"projection": "transverse mercator", "title": title, "grid": grid})


def build(server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    g = StateGraph(ChartState)
    g.add_node("intake", intake)
    g.add_node("gather_surveys", gather)
    g.add_node("plan_chart", make_plan_node(llm))
    g.add_node("draft_coastal", draft_coastal)
    g.add_node("draft_inland", draft_inland)
    g.add_node("place_features", place_features)
    g.add_node("finish_sheet", finish_sheet)
    g.add_node("check_chart", check_chart)
    g.add_edge(START, "intake")
    g.add_edge("intake", "gather_surveys")
    g.add_edge("gather_surveys", "plan_chart")
    g.add_conditional_edges("plan_chart", route_kind, ["draft_coastal", "draft_inland"])
    g.add_edge("draft_coastal", "place_features")
    g.add_edge("draft_inland", "place_features")
    g.add_edge("place_features", "finish_sheet")
    g.add_edge("finish_sheet", "check_chart")
    g.add_edge("check_chart", END)
    return g.compile()


def record(inp, path, server):
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"chart {inp['order']}: {inp['place']} on {inp['sheet']}")
    build(server).invoke({"request": dict(inp)}, config={"callbacks": [tracer]})


CASES = [
    {"id": "chart-near-name-survey", "input": 0, "switch": "near-name", "kind": "wrong_retrieval",
     "root": ("Archive", 1), "failure": ("check_chart", 1),
     "description": "The survey archive answers the Port Ellen order with the survey of Port Ellis, a different harbour with a similar name."},
    {"id": "chart-sween-inland", "input": 2, "switch": "route", "kind": "wrong_routing",
     "root": ("route_kind", 1), "failure": ("check_chart", 1),
     "description": "The route after planning sends the Loch Sween sea chart to the inland drafting node, which lays no soundings."},
    {"id": "chart-span-units", "input": 4, "switch": "nm-as-km", "kind": "unit_error",
     "root": ("scale_for", 1), "failure": ("check_chart", 1),
     "description": "The scale tool takes the 18 nautical-mile span as 18 km, so the sheet layout is drawn for a shorter span than the scale bar."},
    {"id": "chart-grid-as-text", "input": 4, "switch": "grid-text", "kind": "format_drift",
     "root": ("ChatOpenAI", 1), "failure": ("plot_feature", 1),
     "description": "The planning model writes the chart grid edges as hemisphere-lettered text such as 55.79N instead of signed numbers."},
    {"id": "chart-variation-epoch", "input": 1, "switch": "epoch", "kind": "tool_ignores_argument",
     "root": ("magnetic_variation", 1), "failure": ("check_chart", 1),
     "description": "The magnetic variation tool ignores the 2026 edition year it is given and answers for its 2019 model epoch."},
]
