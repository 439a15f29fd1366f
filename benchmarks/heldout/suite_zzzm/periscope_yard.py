"""Periscope refitting yard (sdk): a long loop over every component of a mast, ~35-55 steps."""
import json

import trajdebug
from openai import OpenAI

NAME, ROUTE, DOMAIN = "periscope-refit-yard", "sdk", "periscope refitting yard"
SHAPE = "input -> model plan (llm) -> parse -> per component: tolerance lookup, gauge (retried once), assess, state write -> quote -> certify"
ON: set = set()

TOL = {"head window": (0.05, 3), "objective lens": (0.02, 5), "erecting prism": (0.03, 4), "hoist mast seals": (0.10, 6),
       "training handles": (0.20, 2), "eyepiece": (0.02, 3), "elevation mirror": (0.03, 5), "mast bearing": (0.08, 7),
       "desiccant cartridge": (0.50, 1), "focus drive": (0.05, 4), "stadimeter": (0.04, 3), "fairing": (0.30, 2)}
GAUGE = {"head window": 0.031, "objective lens": 0.012, "erecting prism": 0.018, "hoist mast seals": 0.064,
         "training handles": 0.11, "eyepiece": 0.009, "elevation mirror": 0.021, "mast bearing": 0.052,
         "desiccant cartridge": 0.2, "focus drive": 0.033, "stadimeter": 0.027, "fairing": 0.19}
NAMES = list(TOL)
INPUTS = [
    {"hull": "S-114 Narwhal", "mast": "attack", "components": NAMES[:7]},
    {"hull": "S-209 Grampus", "mast": "search", "components": NAMES[:9]},
    {"hull": "S-031 Otter", "mast": "attack", "components": NAMES[2:10]},
    {"hull": "S-877 Kestrel", "mast": "search", "components": NAMES},
    {"hull": "S-440 Marlin", "mast": "attack", "components": NAMES[4:12]},
]
CASES = [
    {"id": "zzzm-01", "input": 1, "switch": "gauge_units", "kind": "unit_error",
     "root": ("gauge_component", 2, "tool"), "failure": ("certify_refit", 1),
     "description": "The gauge reports the objective lens runout in micrometres while every other reading and the limit are in millimetres."},
    {"id": "zzzm-02", "input": 3, "switch": "plan_skips", "kind": "plan_error",
     "root": ("draft_refit_plan", 1, "llm"), "failure": ("certify_refit", 1),
     "description": "The model's refit plan leaves the hoist mast seals out although the work order lists them."},
    {"id": "zzzm-03", "input": 0, "switch": "quote_range", "kind": "off_by_one",
     "root": ("compile_refit_quote", 1, "other"), "failure": ("certify_refit", 1),
     "description": "The quote's loop over assessed components starts at index 1, so the first component's hours are left off."},
    {"id": "zzzm-04", "input": 2, "switch": "tol_rows", "kind": "truncated_result",
     "root": ("lookup_tolerances", 2, "retrieval"), "failure": ("assess_runout", 2),
     "description": "The tolerance lookup for the hoist mast seals returns only the bore row, without the runout limit."},
    {"id": "zzzm-05", "input": 4, "switch": "log_key", "kind": "bad_memory_write",
     "root": ("log_assessment", 2, "state"), "failure": ("compile_refit_quote", 1),
     "description": "The assessment of the eyepiece is filed under the previous component's key, overwriting it."},
]
_client = {}


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    order = json.loads(prompt.split("WORK ORDER:", 1)[1])
    comps = list(order["components"])
    if "plan_skips" in ON:
        comps = [c for c in comps if c != "hoist mast seals"]
    return json.dumps({"hull": order["hull"], "tasks": [{"component": c, "action": "strip, gauge, reseal"} for c in comps]})


@trajdebug.step(kind="input")
def receive_work_order(order: dict) -> dict:
    return dict(order)


@trajdebug.step(kind="llm")
def draft_refit_plan(messages: list) -> str:
    c = _client["c"]
    r = c.chat.completions.create(model="refit-planner", messages=messages)
    return r.choices[0].message.content


@trajdebug.step(kind="parse")
def read_plan(text: str) -> list:
    return [t["component"] for t in json.loads(text)["tasks"]]


@trajdebug.step(kind="retrieval")
def lookup_tolerances(component: str, mast: str) -> dict:
    runout, hours = TOL[component]
    rows = [{"field": "bore_mm", "value": 40.0}, {"field": "max_runout_mm", "value": runout},
            {"field": "labour_hours", "value": hours}]
    if component == "hoist mast seals" and "tol_rows" in ON:
        rows = rows[:1]
    return {"component": component, "mast": mast, "rows": rows}


_gauge_calls = {"n": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def gauge_component(component: str, hull: str) -> dict:
    _gauge_calls["n"] += 1
    if component == "erecting prism" and _gauge_calls["n"] % 2 == 1:
        raise ConnectionError("gauge head did not settle, re-zero and read again")
    value = GAUGE[component]
    if component == "objective lens" and "gauge_units" in ON:
        value = round(value * 1000, 1)
    return {"component": component, "hull": hull, "runout": value}


@trajdebug.step(kind="other")
def assess_runout(tolerance: dict, reading: dict) -> dict:
    table = {r["field"]: r["value"] for r in tolerance["rows"]}
    if "max_runout_mm" not in table:
        raise ValueError(f"no runout limit on file for {tolerance['component']}, cannot pass the part")
    return {"component": reading["component"], "runout_mm": reading["runout"], "limit_mm": table["max_runout_mm"],
            "hours": table.get("labour_hours", 0)}


@trajdebug.step(kind="state")
def log_assessment(assessment: dict, previous: str) -> None:
    key = assessment["component"]
    if "log_key" in ON and key == "eyepiece":
        key = previous
    trajdebug.current_run().state[f"assessment:{key}"] = assessment


@trajdebug.step(kind="other")
def compile_refit_quote(components: list) -> dict:
    state = trajdebug.current_run().state
    lines = []
    start = 1 if "quote_range" in ON else 0
    for i in range(start, len(components)):
        c = components[i]
        if f"assessment:{c}" not in state:
            raise KeyError(f"no assessment logged for {c}; the quote cannot be priced")
        a = state[f"assessment:{c}"]
        lines.append({"component": c, "hours": a["hours"], "runout_mm": a["runout_mm"], "limit_mm": a["limit_mm"]})
    return {"lines": lines, "hours": sum(x["hours"] for x in lines)}


@trajdebug.step(kind="condition")
def certify_refit(order: dict, quote: dict) -> dict:
    quoted = [x["component"] for x in quote["lines"]]
    missing = [c for c in order["components"] if c not in quoted]
    if missing:
        raise AssertionError(f"refit quote does not cover {', '.join(missing)} from the work order")
    over = [x["component"] for x in quote["lines"] if x["runout_mm"] > x["limit_mm"]]
    if over:
        raise AssertionError(f"runout over limit on {', '.join(over)}; mast cannot be certified")
    return {"certified": True, "hours": quote["hours"]}


def run_one(inp, path, server):
    _client["c"] = OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    _gauge_calls["n"] = 0
    try:
        with trajdebug.run(NAME, task=f"refit {inp['hull']} {inp['mast']} mast", path=path):
            order = receive_work_order(inp)
            plan = draft_refit_plan([{"role": "system", "content": "Plan a periscope refit, one task per component, JSON."},
                                     {"role": "user", "content": "WORK ORDER:" + json.dumps(order)}])
            comps = read_plan(plan)
            prev = ""
            for c in comps:
                tol = lookup_tolerances(c, order["mast"])
                reading = gauge_component(c, order["hull"])
                a = assess_runout(tol, reading)
                log_assessment(a, prev)
                prev = c
            quote = compile_refit_quote(comps)
            certify_refit(order, quote)
    except Exception:
        pass
