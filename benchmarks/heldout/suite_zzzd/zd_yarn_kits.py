"""A yarn shop's knitting kits: OpenInference-instrumented openai calls with tool calling, a colourway
sub-agent, memory tools, exported as OTLP JSON; a packing-slip schema check before the shipping label.

Shape: kit_order (AGENT) > order_intake -> pattern_lookup (RETRIEVER) -> ChatCompletion (kit planner) ->
read_plan -> remember (memory TOOL) -> colourway_matcher (AGENT: ChatCompletion with parallel tool calls,
dye_lot_stock per colour, ChatCompletion) -> recall (memory TOOL) -> reserve_skeins per colour ->
needle_stock -> packing_slip (schema check) -> ship_label.  About 16-24 spans.
"""

from __future__ import annotations

import json
import math

from zd_common import client, otel, span

from trajdebug.testing import Reply, tool_call


NAME = "yarnshop-kits"
SHORT = "yarn"
ROUTE = "otlp"
DOMAIN = "yarn shop's knitting kits"
SHAPE = "OTLP: planner model, memory write/read, colourway sub-agent with parallel tool calls, per-colour reservations, slip schema check; 16-19 spans"

PATTERN_WITH_FORUM = False
PLANNER_NEEDLE_GUESS = False
REMEMBER_DEFAULT_SIZE = False
DYE_LOT_SERVICE_DOWN = False
MATCHER_ARAN_WEIGHT = False
SWITCHES = [
    "PATTERN_WITH_FORUM",
    "PLANNER_NEEDLE_GUESS",
    "REMEMBER_DEFAULT_SIZE",
    "DYE_LOT_SERVICE_DOWN",
    "MATCHER_ARAN_WEIGHT",
]

PATTERNS = {
    "Fernhill Cardigan": {
        "weight": "dk",
        "needles_mm": 4.0,
        "yards": {"S": 1100, "M": 1250, "L": 1420, "XL": 1600},
        "colours": {"main": 1.0},
    },
    "Skerry Hat": {
        "weight": "aran",
        "needles_mm": 5.0,
        "yards": {"one": 210},
        "colours": {"main": 0.7, "contrast": 0.3},
    },
    "Tidewrack Yoke": {
        "weight": "dk",
        "needles_mm": 3.75,
        "yards": {"S": 1000, "M": 1150, "L": 1300},
        "colours": {"main": 0.8, "contrast": 0.12, "accent": 0.08},
    },
    "Moorland Mitts": {"weight": "4ply", "needles_mm": 2.75, "yards": {"one": 260}, "colours": {"main": 1.0}},
    "Harbour Socks": {
        "weight": "4ply",
        "needles_mm": 2.5,
        "yards": {"M": 400, "L": 460},
        "colours": {"main": 0.85, "contrast": 0.15},
    },
}
YARDS_PER_SKEIN = {"dk": 230, "aran": 180, "4ply": 400}
STOCK = {
    ("Heather", "dk"): "DL-2207",
    ("Heather", "aran"): "DL-3110",
    ("Oatmeal", "dk"): "DL-2219",
    ("Oatmeal", "aran"): "DL-3114",
    ("Kelp", "dk"): "DL-2230",
    ("Slate", "aran"): "DL-3121",
    ("Rust", "4ply"): "DL-4402",
    ("Cream", "4ply"): "DL-4410",
    ("Kelp", "4ply"): "DL-4415",
}
FORUM = [
    {"user": f"knitter{i}", "post": "I went down a needle size and added two rows to the yoke. " * 6}
    for i in range(450)
]

INPUTS = [
    {"order": "YK-901", "pattern": "Fernhill Cardigan", "size": "L", "colours": {"main": "Heather"}},
    {
        "order": "YK-902",
        "pattern": "Skerry Hat",
        "size": "one",
        "colours": {"main": "Slate", "contrast": "Oatmeal"},
    },
    {
        "order": "YK-903",
        "pattern": "Tidewrack Yoke",
        "size": "M",
        "colours": {"main": "Oatmeal", "contrast": "Kelp", "accent": "Heather"},
    },
    {"order": "YK-904", "pattern": "Moorland Mitts", "size": "one", "colours": {"main": "Rust"}},
    {
        "order": "YK-905",
        "pattern": "Harbour Socks",
        "size": "L",
        "colours": {"main": "Cream", "contrast": "Kelp"},
    },
]

CASES = [
    {
        "input": 3,
        "switch": "PATTERN_WITH_FORUM",
        "fault_kind": "context_pollution",
        "root": ("pattern_lookup", 1, "retrieval"),
        "failure": ("ChatCompletion", 1),
        "description": "The pattern search returned the pattern with its whole forum thread of 450 posts, and the "
        "planner's request went over the model's context limit.",
    },
    {
        "input": 2,
        "switch": "PLANNER_NEEDLE_GUESS",
        "fault_kind": "hallucinated_value",
        "root": ("ChatCompletion", 1, "llm"),
        "failure": ("packing_slip", 1),
        "description": "The kit planner put 4.0 mm needles in the plan; the pattern it was given says 3.75 mm.",
    },
    {
        "input": 0,
        "switch": "REMEMBER_DEFAULT_SIZE",
        "fault_kind": "bad_memory_write",
        "root": ("remember", 1, "tool"),
        "failure": ("packing_slip", 1),
        "description": "The memory write stored the plan under size M instead of the ordered L, and the skeins "
        "were reserved for M.",
    },
    {
        "input": 4,
        "switch": "DYE_LOT_SERVICE_DOWN",
        "fault_kind": "swallowed_error",
        "root": ("dye_lot_stock", 2, "tool"),
        "failure": ("reserve_skeins", 2),
        "description": "dye_lot_stock caught the stock service's error for Kelp and answered no dye lot.",
    },
    {
        "input": 1,
        "switch": "MATCHER_ARAN_WEIGHT",
        "fault_kind": "wrong_tool_args",
        "root": ("ChatCompletion", 2, "llm"),
        "failure": ("packing_slip", 1),
        "description": "The colourway matcher asked dye_lot_stock for Oatmeal in dk weight, not the aran the "
        "pattern knits in.",
    },
]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "dye_lot_stock",
            "description": "Dye lot in stock for a colour.",
            "parameters": {
                "type": "object",
                "properties": {"colour": {"type": "string"}, "weight": {"type": "string"}},
                "required": ["colour", "weight"],
            },
        },
    }
]


def policy(request):
    messages = request.body.get("messages") or []
    if len(json.dumps(messages)) > 60000:
        return Reply(
            status=400,
            error="This model's maximum context length is 16385 tokens; your messages "
            "resulted in 29870 tokens.",
        )
    system = messages[0]["content"]
    user = json.loads(messages[1]["content"])
    if system.startswith("Plan"):
        pattern = user["pattern"]
        needles = 4.0 if PLANNER_NEEDLE_GUESS else pattern["needles_mm"]
        return json.dumps(
            {
                "weight": pattern["weight"],
                "needles_mm": needles,
                "yards": pattern["yards"][user["size"]],
                "split": pattern["colours"],
            }
        )
    if system.startswith("Match"):
        results = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
        if not results:
            calls = []
            for colour in user["colours"].values():
                weight = user["weight"]
                if MATCHER_ARAN_WEIGHT and colour == "Oatmeal":
                    weight = "dk"
                calls.append(tool_call("dye_lot_stock", {"colour": colour, "weight": weight}))
            return Reply(tool_calls=tuple(calls))
        return json.dumps(dict(zip(user["colours"], results)))
    return "{}"


def _dye_lot_service(colour, weight):
    if DYE_LOT_SERVICE_DOWN and colour == "Kelp":
        raise ConnectionError("stock service 503")
    return STOCK[(colour, weight)]


def record(inp, path, server):
    ot = otel()
    tr = ot.tracer("yarn-shop")
    llm = client(server)
    memory = {}
    try:
        with span(tr, NAME, "AGENT", inp) as top:
            with span(tr, "order_intake", "CHAIN", inp) as s:
                order = s.out({**inp, "colours": dict(inp["colours"])})
            with span(tr, "pattern_lookup", "RETRIEVER", {"pattern": order["pattern"]}) as s:
                doc = {"pattern": order["pattern"], **PATTERNS[order["pattern"]]}
                if PATTERN_WITH_FORUM:
                    doc["forum"] = FORUM
                s.out([doc])
            plan_text = (
                llm.chat.completions.create(
                    model="fake-model",
                    messages=[
                        {
                            "role": "system",
                            "content": "Plan the kit: yarn weight, needle size and yardage for the size, as JSON.",
                        },
                        {"role": "user", "content": json.dumps({"pattern": doc, "size": order["size"]})},
                    ],
                )
                .choices[0]
                .message.content
            )
            with span(tr, "read_plan", "CHAIN", plan_text) as s:
                plan = s.out(json.loads(plan_text))
            with span(
                tr, "remember", "TOOL", {"key": order["order"], "plan": plan, "size": order["size"]}
            ) as s:
                size = (
                    "M"
                    if REMEMBER_DEFAULT_SIZE and "M" in PATTERNS[order["pattern"]]["yards"]
                    else order["size"]
                )
                memory[order["order"]] = {
                    **plan,
                    "size": size,
                    "yards": PATTERNS[order["pattern"]]["yards"][size],
                }
                s.out({"stored": order["order"]})
            with span(
                tr, "colourway_matcher", "AGENT", {"colours": order["colours"], "weight": plan["weight"]}
            ) as sub:
                ask = [
                    {"role": "system", "content": "Match each colour to a dye lot in stock with the tool."},
                    {
                        "role": "user",
                        "content": json.dumps({"colours": order["colours"], "weight": plan["weight"]}),
                    },
                ]
                first = (
                    llm.chat.completions.create(model="fake-model", messages=ask, tools=TOOLS)
                    .choices[0]
                    .message
                )
                ask.append(first.model_dump(exclude_none=True))
                for call in first.tool_calls:
                    args = json.loads(call.function.arguments)
                    with span(tr, "dye_lot_stock", "TOOL", args, **{"tool.name": "dye_lot_stock"}) as s:
                        try:
                            lot = _dye_lot_service(args["colour"], args["weight"])
                        except Exception:  # noqa: BLE001
                            lot = None
                        result = s.out({"colour": args["colour"], "weight": args["weight"], "dye_lot": lot})
                    ask.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
                lots = json.loads(
                    llm.chat.completions.create(model="fake-model", messages=ask, tools=TOOLS)
                    .choices[0]
                    .message.content
                )
                sub.out(lots)
            with span(tr, "recall", "TOOL", {"key": order["order"]}) as s:
                kept = s.out(memory[order["order"]])
            reserved = []
            for role, share in kept["split"].items():
                skeins = math.ceil(kept["yards"] * share / YARDS_PER_SKEIN[kept["weight"]])
                with span(
                    tr,
                    "reserve_skeins",
                    "TOOL",
                    {"colour": order["colours"][role], "lot": lots[role]["dye_lot"], "skeins": skeins},
                ) as s:
                    if not lots[role]["dye_lot"]:
                        raise ValueError(
                            f"cannot reserve {skeins} skeins of {order['colours'][role]} without a dye "
                            f"lot: skeins from different lots are never packed together"
                        )
                    reserved.append(
                        s.out(
                            {
                                "role": role,
                                "colour": order["colours"][role],
                                "skeins": skeins,
                                "dye_lot": lots[role]["dye_lot"],
                                "weight": lots[role]["weight"],
                            }
                        )
                    )
            with span(tr, "needle_stock", "TOOL", {"needles_mm": kept["needles_mm"]}) as s:
                needles = s.out(
                    {"needles_mm": kept["needles_mm"], "pairs": 1, "bin": f"N-{kept['needles_mm']}"}
                )
            with span(
                tr, "packing_slip", "CHAIN", {"order": order, "reserved": reserved, "needles": needles}
            ) as s:
                pattern = PATTERNS[order["pattern"]]
                if needles["needles_mm"] != pattern["needles_mm"]:
                    raise ValueError(
                        f"slip for {order['order']}: needles {needles['needles_mm']} mm, pattern "
                        f"{order['pattern']} is knitted on {pattern['needles_mm']} mm"
                    )
                for r in reserved:
                    if r["weight"] != pattern["weight"]:
                        raise ValueError(
                            f"slip for {order['order']}: {r['colour']} lot {r['dye_lot']} is {r['weight']}, "
                            f"pattern knits in {pattern['weight']}"
                        )
                    need = math.ceil(
                        pattern["yards"][order["size"]]
                        * pattern["colours"][r["role"]]
                        / YARDS_PER_SKEIN[pattern["weight"]]
                    )
                    if r["skeins"] < need:
                        raise ValueError(
                            f"slip for {order['order']}: {r['skeins']} skeins of {r['colour']} for size "
                            f"{order['size']}, pattern needs {need}"
                        )
                slip = s.out({"order": order["order"], "lines": reserved, "needles": needles["bin"]})
            with span(tr, "ship_label", "TOOL", {"order": order["order"]}) as s:
                s.out({"label": f"RM-{order['order']}", "parcels": 1})
            top.out(slip)
    except Exception:  # noqa: BLE001
        pass
    ot.write(path)
