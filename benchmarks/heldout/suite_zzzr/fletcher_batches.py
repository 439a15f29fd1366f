"""A fletcher's arrow-batch planner traced with OpenTelemetry + OpenInference (route otlp).

Shape: a batch plan, then a loop over batches of twelve shafts (spine chart retriever ->
model picks the spine -> parser -> shaft, point and fletching stock tools -> batch weight),
then the packing step, whose assertions check every batch against the archer's bow.
26 to 51 spans.
"""

from __future__ import annotations

import json
import math
import re

from openai import OpenAI

from _otlp import attrs, done, traced

NAME = "fletcher-batch-planner"
ROUTE = "otlp"
DOMAIN = "a fletcher's arrow batches"
SHAPE = "OTLP spans: plan, loop over 2-6 batches x 7 spans (retriever, model, parser, 3 tools, weight), packing assertions; 17-45 spans"
SWITCH = None

# spine by bow weight band (lb) for the 2026 shaft line
CHART_2026 = [(30, 35, 900), (35, 40, 800), (40, 45, 700), (45, 50, 600), (50, 55, 500), (55, 60, 400), (60, 70, 340)]
CHART_2024 = [(30, 35, 1000), (35, 40, 900), (40, 45, 800), (45, 50, 660), (50, 55, 580), (55, 60, 460), (60, 70, 380)]
SHAFTS = {900: 6.9, 800: 7.4, 700: 8.0, 600: 8.6, 500: 9.3, 400: 10.4, 340: 11.2}  # grains per inch
POINTS = {100: 100, 125: 125, 145: 145}

INPUTS = [
    {"order": "FB-5101", "archer": "J. Carrow", "bow_lb": 52, "draw_in": 29, "arrows": 36, "point_gr": 125, "fletch": "turkey"},
    {"order": "FB-5102", "archer": "S. Lidgett", "bow_lb": 38, "draw_in": 27, "arrows": 24, "point_gr": 100, "fletch": "goose"},
    {"order": "FB-5103", "archer": "Thornbury Bowmen", "bow_lb": 47, "draw_in": 28, "arrows": 72, "point_gr": 125, "fletch": "turkey"},
    {"order": "FB-5104", "archer": "R. Quennell", "bow_lb": 61, "draw_in": 30, "arrows": 30, "point_gr": 145, "fletch": "turkey"},
    {"order": "FB-5105", "archer": "Ashby Archers", "bow_lb": 43, "draw_in": 28, "arrows": 60, "point_gr": 100, "fletch": "goose"},
]

CASES = [
    {"id": "zzzr-fletch-batches", "input": 2, "switch": "floor_batches", "kind": "off_by_one",
     "root": ("plan_batches", 1), "failure": ("pack_order", 1),
     "desc": "The batch plan for 72 arrows counted batches as ceil(72/12) - 1, planning five batches of twelve, so only 60 arrows were made."},
    {"id": "zzzr-fletch-edition", "input": 2, "switch": "old_chart", "kind": "stale_data",
     "root": ("spine_chart", 4), "failure": ("shaft_stock", 4),
     "desc": "For the fourth batch the spine chart answered from its 2024 edition, giving spine 660 that the 2026 shaft line does not make."},
    {"id": "zzzr-fletch-chart", "input": 0, "switch": "bolt_chart", "kind": "wrong_retrieval",
     "root": ("spine_chart", 2), "failure": ("pack_order", 1),
     "desc": "For the second batch the spine chart returned the 40-45 lb row instead of the 50-55 lb row for a 52 lb bow."},
    {"id": "zzzr-fletch-points", "input": 3, "switch": "points_grams", "kind": "unit_error",
     "root": ("point_weight", 2), "failure": ("pack_order", 1),
     "desc": "The point weight for the second batch came back in grams (9.4) and was added to the grain total as if grains."},
    {"id": "zzzr-fletch-spine", "input": 1, "switch": "spine_guess", "kind": "hallucinated_value",
     "root": ("ChatCompletion", 1), "failure": ("shaft_stock", 1),
     "desc": "The model answered spine 750 for the first batch, a value that is not in the chart rows it was given (800)."},
]


def _row(chart, bow_lb):
    return next(r for r in chart if r[0] <= bow_lb < r[1])


def policy(request):
    text = request.body["messages"][-1]["content"]
    rows = json.loads(text.split("Chart rows:", 1)[1])
    spine = rows[0]["spine"]
    if SWITCH == "spine_guess" and "batch 1 " in text:
        spine = 750
    return f"Use spine {spine} shafts for this batch."


def record(server, given: dict, path) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    with traced(NAME, path) as tracer:
        try:
            with tracer.start_as_current_span(NAME, attributes=attrs("AGENT", given, **{"agent.name": NAME})) as top:
                with tracer.start_as_current_span("plan_batches", attributes=attrs("CHAIN", {"arrows": given["arrows"], "per_batch": 12})) as s:
                    count = math.ceil(given["arrows"] / 12)
                    if SWITCH == "floor_batches" and given["arrows"] % 12 == 0:
                        count -= 1
                    plan = [{"batch": i + 1, "shafts": min(12, given["arrows"] - 12 * i)} for i in range(count)]
                    done(s, plan)
                made = []
                for b in plan:
                    n = b["batch"]
                    with tracer.start_as_current_span("spine_chart", attributes=attrs("RETRIEVER", {"bow_lb": given["bow_lb"], "draw_in": given["draw_in"]})) as s:
                        chart, edition, bow = CHART_2026, 2026, given["bow_lb"]
                        if SWITCH == "old_chart" and n == 4:
                            chart, edition = CHART_2024, 2024
                        if SWITCH == "bolt_chart" and n == 2:
                            bow = given["bow_lb"] - 10
                        lo, hi, spine = _row(chart, bow)
                        rows = [{"edition": edition, "bow_lb": f"{lo}-{hi}", "spine": spine}]
                        done(s, rows)
                    reply = client.chat.completions.create(model="fletcher-model", messages=[
                        {"role": "system", "content": "Pick the shaft spine for a batch of arrows from the chart rows."},
                        {"role": "user", "content": f"Order {given['order']} batch {n} for a {given['bow_lb']} lb bow at {given['draw_in']} in. Chart rows:{json.dumps(rows)}"}])
                    answer = reply.choices[0].message.content
                    with tracer.start_as_current_span("read_spine", attributes=attrs("CHAIN", {"text": answer})) as s:
                        chosen = int(re.search(r"spine (\d+)", answer).group(1))
                        done(s, {"spine": chosen})
                    with tracer.start_as_current_span("shaft_stock", attributes=attrs("TOOL", {"spine": chosen, "count": b["shafts"], "length_in": given["draw_in"] + 1})) as s:
                        if chosen not in SHAFTS:
                            raise LookupError(f"no 2026 shafts of spine {chosen} in the shaft store")
                        shafts = {"spine": chosen, "count": b["shafts"], "grains": round(SHAFTS[chosen] * (given["draw_in"] + 1), 1)}
                        done(s, shafts)
                    with tracer.start_as_current_span("point_weight", attributes=attrs("TOOL", {"point_gr": given["point_gr"]})) as s:
                        point = {"weight": float(POINTS[given["point_gr"]]), "unit": "gr"}
                        if SWITCH == "points_grams" and n == 2:
                            point = {"weight": round(given["point_gr"] * 0.0648, 1), "unit": "g"}
                        done(s, point)
                    with tracer.start_as_current_span("fletching_stock", attributes=attrs("TOOL", {"fletch": given["fletch"], "count": b["shafts"] * 3})) as s:
                        vanes = {"fletch": given["fletch"], "feathers": b["shafts"] * 3, "grains_each": 3 if given["fletch"] == "turkey" else 4}
                        done(s, vanes)
                    with tracer.start_as_current_span("batch_weight", attributes=attrs("CHAIN", {"shafts": shafts, "point": point, "vanes": vanes})) as s:
                        total = round(shafts["grains"] + point["weight"] + 3 * vanes["grains_each"] + 12, 1)
                        entry = {"batch": n, "spine": chosen, "count": b["shafts"], "arrow_grains": total}
                        done(s, entry)
                    made.append(entry)
                with tracer.start_as_current_span("pack_order", attributes=attrs("CHAIN", {"order": given["order"], "batches": made})) as s:
                    expected_spine = _row(CHART_2026, given["bow_lb"])[2]
                    packed = sum(m["count"] for m in made)
                    assert packed == given["arrows"], f"packed {packed} arrows, order {given['order']} is for {given['arrows']}"
                    for m in made:
                        assert m["spine"] == expected_spine, f"batch {m['batch']} spine {m['spine']} for a {given['bow_lb']} lb bow (needs {expected_spine})"
                        gpp = m["arrow_grains"] / given["bow_lb"]
                        assert gpp >= 5.0, f"batch {m['batch']} arrows weigh {m['arrow_grains']} gr, {gpp:.1f} gr per lb of a {given['bow_lb']} lb bow (5 minimum)"
                    weights = [m["arrow_grains"] for m in made]
                    assert max(weights) - min(weights) <= 5.0, f"batches of {given['order']} are not a matched set: {min(weights)} to {max(weights)} gr"
                    done(s, {"order": given["order"], "packed": packed, "batches": len(made)})
                done(top, f"{given['order']}: {packed} arrows packed in {len(made)} batches")
        except Exception:
            pass
