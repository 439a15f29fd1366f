"""Prism and optics workshop (langgraph route): a StateGraph that reads an order, grinds and checks it."""
import json
import math
from typing import TypedDict

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "prism-workshop"
SHORT = "prism"
ROUTE = "langgraph"
DOMAIN = "prism and optics workshop"
SHAPE = "LangGraph: notes node -> model intake node -> parse node -> catalogue tool node -> conditional route (prism|lens) -> grind node -> coating tool node -> quality check node -> ticket"
ACTIVE = None

INDEX = {"N-BK7": 1.5168, "F2": 1.6200, "N-SF11": 1.7847, "fused silica": 1.4585, "N-LAK22": 1.6511}


def deviation(n, apex):
    a = math.radians(apex)
    return round(math.degrees(2 * math.asin(n * math.sin(a / 2)) - a), 3)


ORDERS = [
    {"customer": "Halden Observatory", "item": "prism", "glass": "N-BK7", "apex_angle_deg": 32.5, "qty": 6, "coating": "broadband AR"},
    {"customer": "Lumen Microscopy", "item": "lens", "glass": "F2", "focal_length_mm": 150.0, "qty": 12, "coating": "MgF2"},
    {"customer": "Prairie Spectro Lab", "item": "prism", "glass": "N-SF11", "apex_angle_deg": 45.0, "qty": 4, "coating": "none"},
    {"customer": "Corvid Cameras", "item": "lens", "glass": "N-LAK22", "focal_length_mm": 85.0, "qty": 20, "coating": "broadband AR"},
    {"customer": "Tessaract Lasers", "item": "prism", "glass": "fused silica", "apex_angle_deg": 60.0, "qty": 10, "coating": "broadband AR"},
]
for o in ORDERS:
    if o["item"] == "prism":
        o["target_deviation_deg"] = deviation(INDEX[o["glass"]], o["apex_angle_deg"])
INPUTS = ORDERS

PREVIOUS_TICKET = "Bench note from ticket 7712 (Corvid Cameras): qty 40 lenses, broadband AR, ship in two lots."

CASES = [
    {"input": 0, "switch": "whole_degrees", "kind": "lossy_parsing", "root": ("parse_spec", 1),
     "failure": ("quality_check", 1),
     "description": "The spec parser keeps only the whole degrees of the 32.5 degree apex angle."},
    {"input": 1, "switch": "route_by_glass", "kind": "wrong_routing", "root": ("route_job", 1),
     "failure": ("grind_prism", 1),
     "description": "The job router sends the F2 lens order to the prism grinding bench."},
    {"input": 2, "switch": "catalogue_default", "kind": "tool_ignores_argument", "root": ("glass_catalogue", 1),
     "failure": ("quality_check", 1),
     "description": "The glass catalogue answers the N-BK7 index whatever glass it is asked for, here N-SF11."},
    {"input": 3, "switch": "focal_text", "kind": "format_drift", "root": ("ChatOpenAI", 1),
     "failure": ("grind_lens", 1),
     "description": "The intake model writes the focal length as the text '85 mm' instead of a number."},
    {"input": 4, "switch": "old_bench_note", "kind": "context_pollution", "root": ("load_bench_notes", 1),
     "failure": ("coating_price", 1),
     "description": "The bench notes handed to the intake model carry another customer's ticket asking for 40 pieces, and the model takes that quantity."},
]


class S(TypedDict, total=False):
    order: str
    notes: list
    raw: str
    spec: dict
    glass: dict
    result: dict
    quote: dict
    ticket: str


def policy(request):
    msgs = request.body["messages"]
    user = msgs[-1]["content"]
    order = json.loads(user.split("ORDER:", 1)[1])
    spec = {k: v for k, v in order.items()}
    notes = " ".join(m["content"] for m in msgs if m["role"] == "system")
    if "qty 40" in notes:
        spec["qty"] = 40
    if ACTIVE == "focal_text" and "focal_length_mm" in spec:
        spec["focal_length_mm"] = f"{spec['focal_length_mm']:g} mm"
    return json.dumps(spec)


@tool
def glass_catalogue(glass: str, wavelength_nm: float) -> dict:
    """Refractive index of an optical glass at a wavelength."""
    key = "N-BK7" if ACTIVE == "catalogue_default" else glass
    return {"glass": glass, "wavelength_nm": wavelength_nm, "n": INDEX[key]}


@tool
def coating_price(coating: str, qty: int, area_cm2: float) -> dict:
    """Quote from the coating chamber."""
    if coating == "broadband AR" and qty > 24:
        raise ValueError(f"broadband AR run of {qty} pieces exceeds the 24-piece chamber load")
    per = {"none": 0.0, "MgF2": 9.5, "broadband AR": 21.0}[coating]
    return {"coating": coating, "qty": qty, "eur": round(per * qty * max(area_cm2, 1.0), 2)}


def build(llm):
    def load_bench_notes(state: S) -> dict:
        notes = ["Bench 3 polishing pad replaced on Monday."]
        if ACTIVE == "old_bench_note":
            notes.append(PREVIOUS_TICKET)
        return {"notes": notes}

    def intake(state: S) -> dict:
        msgs = [("system", "Workshop notes: " + " | ".join(state["notes"])),
                ("system", "Extract the order as JSON with the fields given."),
                ("user", "ORDER:" + state["order"])]
        return {"raw": llm.invoke(msgs).content}

    def parse_spec(state: S) -> dict:
        spec = json.loads(state["raw"])
        if ACTIVE == "whole_degrees" and "apex_angle_deg" in spec:
            spec["apex_angle_deg"] = float(int(spec["apex_angle_deg"]))
        return {"spec": spec}

    def lookup_glass(state: S) -> dict:
        return {"glass": glass_catalogue.invoke({"glass": state["spec"]["glass"], "wavelength_nm": 587.6})}

    def route_job(state: S) -> str:
        if ACTIVE == "route_by_glass":
            return "grind_prism" if state["spec"]["glass"] in ("F2", "N-SF11") else "grind_lens"
        return "grind_prism" if state["spec"]["item"] == "prism" else "grind_lens"

    def grind_prism(state: S) -> dict:
        spec, n = state["spec"], state["glass"]["n"]
        apex = spec["apex_angle_deg"]
        return {"result": {"apex_deg": apex, "deviation_deg": deviation(n, apex), "face_mm": 25.0}}

    def grind_lens(state: S) -> dict:
        spec, n = state["spec"], state["glass"]["n"]
        radius = spec["focal_length_mm"] * (n - 1)
        return {"result": {"radius_mm": round(radius, 3), "diameter_mm": 25.4}}

    def coating_quote(state: S) -> dict:
        area = 3.14159 * (1.27 ** 2) if "radius_mm" in state["result"] else 6.25
        return {"quote": coating_price.invoke({"coating": state["spec"]["coating"], "qty": state["spec"]["qty"], "area_cm2": round(area, 2)})}

    def quality_check(state: S) -> dict:
        spec, res = state["spec"], state["result"]
        ref = INDEX[json.loads(state["order"])["glass"]]
        if "deviation_deg" in res:
            measured = deviation(ref, res["apex_deg"])
            target = json.loads(state["order"])["target_deviation_deg"]
            if abs(measured - target) > 0.3:
                raise ValueError(f"measured minimum deviation {measured} deg, ordered {target} deg (tolerance 0.3)")
            if abs(measured - res["deviation_deg"]) > 0.3:
                raise ValueError(f"measured minimum deviation {measured} deg, grinding sheet expects {res['deviation_deg']} deg")
        else:
            focal = res["radius_mm"] / (ref - 1)
            if abs(focal - spec["focal_length_mm"]) > 0.01 * spec["focal_length_mm"]:
                raise ValueError(f"measured focal length {focal:.1f} mm, ordered {spec['focal_length_mm']} mm")
        return {}

    def write_ticket(state: S) -> dict:
        s = state["spec"]
        return {"ticket": f"{s['customer']}: {s['qty']} x {s['item']} in {s['glass']}, coating {s['coating']}, {state['quote']['eur']} EUR"}

    g = StateGraph(S)
    for fn in (load_bench_notes, intake, parse_spec, lookup_glass, grind_prism, grind_lens, coating_quote, quality_check, write_ticket):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "load_bench_notes")
    g.add_edge("load_bench_notes", "intake")
    g.add_edge("intake", "parse_spec")
    g.add_edge("parse_spec", "lookup_glass")
    g.add_conditional_edges("lookup_glass", route_job, ["grind_prism", "grind_lens"])
    g.add_edge("grind_prism", "coating_quote")
    g.add_edge("grind_lens", "coating_quote")
    g.add_edge("coating_quote", "quality_check")
    g.add_edge("quality_check", "write_ticket")
    g.add_edge("write_ticket", END)
    return g.compile()


def record(inp, ctx, path):
    llm = ChatOpenAI(base_url=ctx.server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"{inp['qty']} x {inp['item']} in {inp['glass']} for {inp['customer']}")
    order = {k: v for k, v in inp.items()}
    try:
        build(llm).invoke({"order": json.dumps(order)}, config={"callbacks": [tracer]})
    except Exception:
        pass
