"""Wooden boat building yard (OpenTelemetry/OpenInference spans): order parsing, plan-sheet retrieval, timber stock,
a model's planking schedule, cut batches and a per-strake cutting loop, board-feet total, timber order."""
from __future__ import annotations

import re

from openai import OpenAI

from .common import Case, last_user_json, policy
from .kit import active
from .otel import Recorder

NAME, ROUTE, DOMAIN = "boatyard-planner", "otlp", "wooden boat building"
SHAPE = "AGENT span: read_order -> find_plans (RETRIEVER) -> timber_stock (TOOL) -> plank_schedule (LLM) -> parse_schedule -> plan_cut_batches -> cut_strake loop (TOOL) -> board_feet_total -> order_timber (TOOL)"

PLANS = {
    "Heron 14": {"design": "Heron 14", "strakes": 6, "length_ft": 14.5, "max_bf": 120},
    "Heron 16": {"design": "Heron 16", "strakes": 7, "length_ft": 16.5, "max_bf": 160},
    "Puffin 11": {"design": "Puffin 11", "strakes": 5, "length_ft": 11.0, "max_bf": 80},
    "Curlew 18": {"design": "Curlew 18", "strakes": 8, "length_ft": 18.25, "max_bf": 210},
}
INPUTS = {
    "A": "Design: Heron 14; length 14.5 ft; planking larch 0.5 in; deliver 2027-06-30",
    "B": "Design: Curlew 18; length 18.25 ft; planking cedar 0.625 in; deliver 2027-09-15",
    "R1": "Design: Puffin 11; length 11 ft; planking larch 0.5 in; deliver 2027-05-01",
    "R2": "Design: Heron 16; length 16.5 ft; planking cedar 0.5 in; deliver 2027-07-20",
    "R3": "Design: Heron 14; length 14.5 ft; planking cedar 0.5 in; deliver 2027-08-08",
    "R4": "Design: Puffin 11; length 11 ft; planking larch 0.625 in; deliver 2027-10-02",
}
REFS = ["R1", "R2", "R3", "R4"]

CASES = [
    Case("zm_boat_1", "off_by_one", "A", ("plan_cut_batches", 1, "other"), ("order_timber", 1),
         "plan_cut_batches starts its strake range at 1 and leaves out the garboard strake", "boat.obo"),
    Case("zm_boat_2", "wrong_retrieval", "A", ("find_plans", 1, "retrieval"), ("order_timber", 1),
         "find_plans returns the Heron 16 sheet for a Heron 14 order", "boat.retrieval"),
    Case("zm_boat_3", "unit_error", "B", ("board_feet_total", 1, "other"), ("order_timber", 1),
         "board_feet_total divides by 144 as if the length were in inches, so far too little timber is ordered", "boat.unit"),
    Case("zm_boat_4", "format_drift", "B", ("plank_schedule", 1, "llm"), ("order_timber", 1),
         "the planking schedule gives the sheer strake width in millimetres as a string and the parser keeps the number", "boat.drift"),
    Case("zm_boat_5", "lossy_parsing", "A", ("read_order", 1, "other"), ("order_timber", 1),
         "read_order keeps only the whole feet of the hull length", "boat.lossy"),
]


@policy("boat_schedule")
def _schedule(msgs):
    q = last_user_json(msgs)
    n = q["plan"]["strakes"]
    rows = [{"strake": i, "width_in": round(7.5 - 0.5 * i, 1)} for i in range(n)]
    if active("boat.drift"):
        rows[-1] = {"strake": n - 1, "width": f"{round(rows[-1]['width_in'] * 25.4)} mm"}
    import json
    return json.dumps({"design": q["plan"]["design"], "rows": rows})


def record(key, out, base_url):
    client = OpenAI(base_url=base_url, api_key="local", max_retries=0)
    rec = Recorder("boatyard")
    text = INPUTS[key]
    try:
        with rec.span(NAME, "AGENT", input={"order": text}, **{"agent.name": NAME}) as top:
            with rec.span("read_order", "CHAIN", input={"text": text}) as s:
                m = re.match(r"Design: ([\w ]+); length ([\d.]+) ft; planking (\w+) ([\d.]+) in; deliver (\S+)", text)
                length = float(m[2])
                if active("boat.lossy"):
                    length = float(int(length))
                order = {"design": m[1], "length_ft": length, "species": m[3], "thick_in": float(m[4]), "deliver": m[5]}
                s["out"] = order
            with rec.span("find_plans", "RETRIEVER", input={"query": order["design"]}) as s:
                name = "Heron 16" if active("boat.retrieval") and order["design"] == "Heron 14" else order["design"]
                plan = dict(PLANS[name])
                s["out"] = {"documents": [plan]}
            with rec.span("timber_stock", "TOOL", input={"species": order["species"]}, **{"tool.name": "timber_stock"}) as s:
                stock = {"species": order["species"], "board_feet": 400, "max_width_in": 10}
                s["out"] = stock
            sched = rec.llm(client, "plank_schedule", "yard-loftsman-1", "boat_schedule", "You loft planking schedules.",
                            {"plan": plan, "order": order})
            with rec.span("parse_schedule", "CHAIN", input=sched) as s:
                rows = []
                for r in sched["rows"]:
                    w = r.get("width_in", r.get("width"))
                    rows.append({"strake": r["strake"], "width_in": float(re.match(r"[\d.]+", str(w)).group(0))})
                s["out"] = rows
            with rec.span("plan_cut_batches", "CHAIN", input={"strakes": plan["strakes"]}) as s:
                start = 1 if active("boat.obo") else 0
                batches = [[i, "port"] for i in range(start, plan["strakes"])] + [[i, "starboard"] for i in range(start, plan["strakes"])]
                s["out"] = batches
            cuts = []
            for idx, side in batches:
                with rec.span("cut_strake", "TOOL", input={"strake": idx, "side": side, "width_in": rows[idx]["width_in"],
                                                            "length_ft": order["length_ft"]}, **{"tool.name": "cut_strake"}) as s:
                    s["out"] = {"strake": idx, "side": side, "width_in": rows[idx]["width_in"], "length_ft": order["length_ft"]}
                    cuts.append(s["out"])
            with rec.span("board_feet_total", "CHAIN", input={"cuts": cuts, "thick_in": order["thick_in"]}) as s:
                div = 144 if active("boat.unit") else 12
                bf = round(sum(c["length_ft"] * 1.15 * c["width_in"] * max(order["thick_in"], 1.0) / div for c in cuts), 1)
                s["out"] = {"board_feet": bf}
            with rec.span("order_timber", "TOOL", input={"design": plan["design"], "cuts": cuts, "board_feet": bf,
                                                         "species": order["species"]}, **{"tool.name": "order_timber"}) as s:
                true = PLANS[order["design"]]
                problems = []
                if plan["design"] != order["design"]:
                    problems.append(f"cut list is for {plan['design']}, the hull on the order is {order['design']}")
                if len(cuts) != 2 * true["strakes"]:
                    problems.append(f"{order['design']} has {true['strakes']} strakes a side; cut list has {len(cuts)} planks")
                wide = [c for c in cuts if c["width_in"] > stock["max_width_in"]]
                if wide:
                    problems.append(f"plank width {wide[0]['width_in']} in exceeds {stock['max_width_in']} in stock boards")
                if any(c["length_ft"] < true["length_ft"] for c in cuts):
                    problems.append(f"planks cut to {cuts[0]['length_ft']} ft; hull length is {true['length_ft']} ft")
                need = round(sum(true["length_ft"] * 1.15 * r["width_in"] * max(order["thick_in"], 1.0) / 12 for r in rows) * 2 * 0.9, 1)
                if bf < need:
                    problems.append(f"order of {bf} board feet is below the yard's minimum of {need} for this hull")
                if problems:
                    raise RuntimeError("lumberyard API 422: " + "; ".join(problems))
                s["out"] = {"po": f"TMB-{order['design'].replace(' ', '')}-{bf}", "board_feet": bf}
            top["out"] = s["out"]
    except RuntimeError:
        pass
    rec.write(out)
