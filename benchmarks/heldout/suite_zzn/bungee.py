"""Bungee jumping site: turns a group's booking message into a jump-day booking (langgraph route)."""
from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

import kit
from common import block, last_user, parse_block
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "bungee-bookings"
ROUTE = "langgraph"
DOMAIN = "a bungee jumping site's bookings"
SHAPE = "StateGraph: intake (llm + JsonOutputParser), parse_jumpers, per-jumper loop node (convert_weight, check_waiver, assign_cord tools), route_platform conditional edge, quote node (llm + parser), safety_brief sub-graph (gather_brief_context, write_brief llm), validate_booking"

CORDS = [("yellow", 40, 60), ("blue", 55, 80), ("red", 75, 100), ("black", 95, 130)]
WAIVERS = {"Ana Diaz", "Tom Reid", "Kofi Mensah", "Lena Berg", "Raj Patel", "Mia Chen", "Olu Ade",
           "Sven Holm", "Ines Vale", "Jon Pryce", "Kim Lowe", "Eli Stone", "Noor Aziz", "Pat Quinn"}
PRICES = {"bridge": 95.0, "tandem": 170.0, "night": 120.0}
PLATFORMS = {"bridge": "bridge-single", "tandem": "bridge-tandem", "night": "bridge-single"}


def _msg(date, kind, rows):
    return {"date": date, "jump": kind,
            "message": "Hi, booking for " + ", ".join(f"{n} ({a}, {w} {u})" for n, a, w, u in rows),
            "rows": [{"name": n, "age": a, "weight": w, "unit": u} for n, a, w, u in rows]}


CASES = [
    {"id": "zzn_bungee_01", "kind": "unit_error",
     "input": _msg("2026-05-02", "bridge", [("Ana Diaz", 24, 61, "kg"), ("Tom Reid", 31, 176, "lb"), ("Kofi Mensah", 28, 84, "kg")]),
     "root": ("convert_weight", 2), "failure": ("validate_booking", 1),
     "desc": "convert_weight divides Tom Reid's 176 lb by 2.2046 twice over (kg factor applied to a kg value), giving 36.2 kg, so he gets no cord band that fits his 79.8 kg."},
    {"id": "zzn_bungee_02", "kind": "wrong_routing",
     "input": _msg("2026-05-03", "tandem", [("Lena Berg", 27, 58, "kg"), ("Raj Patel", 29, 77, "kg")]),
     "root": ("route_platform", 1), "failure": ("validate_booking", 1),
     "desc": "route_platform sends a tandem booking to the single-jumper bridge platform."},
    {"id": "zzn_bungee_03", "kind": "hallucinated_value",
     "input": _msg("2026-05-04", "night", [("Mia Chen", 22, 55, "kg"), ("Olu Ade", 35, 90, "kg"), ("Sven Holm", 41, 101, "kg")]),
     "root": ("ChatOpenAI", 2), "failure": ("validate_booking", 1),
     "desc": "The quoting model applies a 15% group discount that is in no price list, quoting 306.00 instead of 360.00."},
    {"id": "zzn_bungee_04", "kind": "lossy_parsing",
     "input": _msg("2026-05-05", "bridge", [("Ines Vale", 19, 130, "lb"), ("Jon Pryce", 45, 92, "kg")]),
     "root": ("parse_jumpers", 1), "failure": ("validate_booking", 1),
     "desc": "parse_jumpers keeps name, age and weight but drops the unit, so Ines Vale's 130 lb is read as 130 kg."},
    {"id": "zzn_bungee_05", "kind": "context_pollution",
     "input": _msg("2026-05-06", "bridge", [("Kim Lowe", 33, 70, "kg"), ("Eli Stone", 26, 64, "kg"), ("Noor Aziz", 30, 59, "kg")]),
     "root": ("gather_brief_context", 1), "failure": ("validate_booking", 1),
     "desc": "gather_brief_context adds the previous group's roster from the day log, so the safety brief lists Pat Quinn, who is not in this booking."},
]
REFS = [_msg("2026-04-25", "bridge", [("Pat Quinn", 38, 88, "kg"), ("Ana Diaz", 24, 135, "lb")]),
        _msg("2026-04-26", "tandem", [("Raj Patel", 29, 77, "kg"), ("Mia Chen", 22, 55, "kg")]),
        _msg("2026-04-27", "night", [("Kofi Mensah", 28, 84, "kg"), ("Lena Berg", 27, 128, "lb"), ("Jon Pryce", 45, 92, "kg")]),
        _msg("2026-04-28", "bridge", [("Olu Ade", 35, 90, "kg"), ("Sven Holm", 41, 101, "kg"), ("Eli Stone", 26, 64, "kg")])]
DAY_LOG = {"last_group": ["Pat Quinn", "Ana Diaz"]}


def brain(request):
    title, p = parse_block(last_user(request))
    if title == "EXTRACT":
        return json.dumps({"jumpers": p["rows"]})
    if title == "QUOTE":
        n = len(p["jumpers"])
        unit = PRICES[p["jump"]]
        total = unit * (n // 2 if p["jump"] == "tandem" else n)
        out = {"unit_price": unit, "total": total, "currency": "GBP"}
        if kit.on("zzn_bungee_03"):
            out.update(discount="group 15%", total=round(total * 0.85, 2))
        return json.dumps(out)
    if title == "BRIEF":
        names = p["context"]["jumpers"] + p["context"].get("also_on_site", [])
        return "Safety brief for " + ", ".join(names) + ": harness check, cord check, countdown from 5."
    raise ValueError(title)


@tool
def convert_weight(weight: float, unit: str) -> float:
    """Weight in kilograms."""
    kg = weight / 2.2046 if unit == "lb" else float(weight)
    if unit == "lb" and kit.on("zzn_bungee_01"):
        kg = kg / 2.2046
    return round(kg, 1)


@tool
def check_waiver(name: str) -> dict:
    """Whether a signed waiver is on file."""
    return {"name": name, "signed": name in WAIVERS}


@tool
def assign_cord(kg: float) -> str:
    """Cord colour for a weight in kg."""
    for colour, lo, hi in CORDS:
        if lo <= kg < hi:
            return colour
    return "none"


class S(TypedDict, total=False):
    request: dict
    extracted: dict
    jumpers: list
    i: int
    assigned: Annotated[list, operator.add]
    platform: str
    quote: dict
    names: list
    brief: str


def build(llm):
    parser = JsonOutputParser()

    def intake(s: S) -> dict:
        chain = llm | parser
        msgs = [SystemMessage("Extract each jumper from the booking message."),
                HumanMessage(block("EXTRACT", message=s["request"]["message"], rows=s["request"]["rows"]))]
        return {"extracted": chain.invoke(msgs)}

    def parse_jumpers(s: S) -> dict:
        keep = ("name", "age", "weight", "unit")
        if kit.on("zzn_bungee_04"):
            keep = ("name", "age", "weight")
        rows = [{k: j[k] for k in keep if k in j} for j in s["extracted"]["jumpers"]]
        return {"jumpers": rows, "i": 0}

    def weigh_in(s: S) -> dict:
        j = s["jumpers"][s["i"]]
        kg = convert_weight.invoke({"weight": j["weight"], "unit": j.get("unit", "kg")})
        waiver = check_waiver.invoke({"name": j["name"]})
        cord = assign_cord.invoke({"kg": kg})
        return {"assigned": [{"name": j["name"], "kg": kg, "cord": cord, "waiver": waiver["signed"], "age": j["age"]}],
                "i": s["i"] + 1}

    def more(s: S) -> str:
        return "weigh_in" if s["i"] < len(s["jumpers"]) else "choose_platform"

    def choose_platform(s: S) -> dict:
        return {}

    def route_platform(s: S) -> str:
        kind = s["request"]["jump"]
        if kit.on("zzn_bungee_02") and kind == "tandem":
            kind = "bridge"
        return PLATFORMS[kind]

    def platform_node(name):
        def f(s: S) -> dict:
            return {"platform": name}
        return f

    def quote(s: S) -> dict:
        chain = llm | parser
        names = [a["name"] for a in s["assigned"]]
        return {"quote": chain.invoke([HumanMessage(block("QUOTE", jump=s["request"]["jump"], jumpers=names))]),
                "names": names}

    def gather_brief_context(s: S) -> dict:
        ctx = {"jumpers": list(s["names"]), "platform": s["platform"]}
        if kit.on("zzn_bungee_05"):
            ctx["also_on_site"] = DAY_LOG["last_group"][:1]
        return {"context": ctx}

    def write_brief(s: dict) -> dict:
        return {"brief": llm.invoke([HumanMessage(block("BRIEF", context=s["context"]))]).content}

    class B(TypedDict, total=False):
        names: list
        platform: str
        context: dict
        brief: str

    sub = StateGraph(B)
    sub.add_node("gather_brief_context", gather_brief_context)
    sub.add_node("write_brief", write_brief)
    sub.add_edge(START, "gather_brief_context")
    sub.add_edge("gather_brief_context", "write_brief")
    sub.add_edge("write_brief", END)
    brief_graph = sub.compile()

    def validate_booking(s: S) -> dict:
        req = s["request"]
        for row, a in zip(req["rows"], s["assigned"]):
            kg = row["weight"] / 2.2046 if row["unit"] == "lb" else row["weight"]
            band = [c for c, lo, hi in CORDS if lo <= kg < hi]
            if a["cord"] not in band:
                raise ValueError(f"{a['name']} weighs {kg:.1f} kg but was given cord {a['cord']} (fits {band})")
            if not a["waiver"]:
                raise ValueError(f"{a['name']} has no signed waiver")
        want = PLATFORMS[req["jump"]]
        if s["platform"] != want:
            raise ValueError(f"{req['jump']} jump booked on platform {s['platform']}; it needs {want}")
        n = len(req["rows"])
        total = PRICES[req["jump"]] * (n // 2 if req["jump"] == "tandem" else n)
        if abs(s["quote"]["total"] - total) > 0.005:
            raise ValueError(f"quote total {s['quote']['total']:.2f} GBP differs from the price list total {total:.2f} GBP")
        names = {r["name"] for r in req["rows"]}
        extra = [w for w in s["brief"].split(": ")[0].replace("Safety brief for ", "").split(", ") if w not in names]
        if extra:
            raise ValueError(f"safety brief names {extra}, who are not in this booking")
        return {}

    g = StateGraph(S)
    for name, fn in [("intake", intake), ("parse_jumpers", parse_jumpers), ("weigh_in", weigh_in),
                     ("choose_platform", choose_platform), ("quote", quote), ("validate_booking", validate_booking)]:
        g.add_node(name, fn)
    for p in sorted(set(PLATFORMS.values())):
        g.add_node(p, platform_node(p))
        g.add_edge(p, "quote")
    g.add_node("safety_brief", brief_graph)
    g.add_edge(START, "intake")
    g.add_edge("intake", "parse_jumpers")
    g.add_edge("parse_jumpers", "weigh_in")
    g.add_conditional_edges("weigh_in", more, ["weigh_in", "choose_platform"])
    g.add_conditional_edges("choose_platform", route_platform, sorted(set(PLATFORMS.values())))
    g.add_edge("quote", "safety_brief")
    g.add_edge("safety_brief", "validate_booking")
    g.add_edge("validate_booking", END)
    return g.compile()


def record(inp, path, server):
    server.use(brain)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"book the {inp['jump']} jumps of {inp['date']}")
    build(llm).invoke({"request": inp}, config={"callbacks": [tracer], "recursion_limit": 60})
