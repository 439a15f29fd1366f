"""Candlestick foundry: casting scheduler (sdk route). Order text -> model extraction -> per-line pattern
lookup, metal weight, reservation in run.state -> pour schedule -> batch validation."""
import json

import trajdebug
from openai import OpenAI

NAME = "foundry-casting"
ROUTE = "sdk"
DOMAIN = "candlestick foundry"
SHAPE = "linear pipeline with a per-line loop (retrieval, tool, state write), model extraction + parser, validator"
ACTIVE = None

PATTERNS = {
    "baluster": {"code": "P-BAL", "height_cm": 24, "volume_cm3": 96.0},
    "baluster-small": {"code": "P-BAS", "height_cm": 16, "volume_cm3": 61.0},
    "tapered": {"code": "P-TAP", "height_cm": 30, "volume_cm3": 120.0},
    "chamberstick": {"code": "P-CHA", "height_cm": 9, "volume_cm3": 150.0},
    "pricket": {"code": "P-PRI", "height_cm": 41, "volume_cm3": 210.0},
}
DENSITY = {"brass": 8.5, "bronze": 8.8}
MOULDS = {"P-BAL": 6, "P-BAS": 4, "P-TAP": 4, "P-CHA": 3, "P-PRI": 2}

INPUTS = [
    {"order": "ORD-311", "alloy": "brass", "text": "baluster x 4 ; tapered x 2 ; chamberstick x 3", "pieces": 9},
    {"order": "ORD-312", "alloy": "bronze", "text": "pricket x 2 ; baluster-small x 12", "pieces": 14},
    {"order": "ORD-313", "alloy": "brass", "text": "tapered x 3 ; baluster x 2 ; baluster-small x 2 ; chamberstick x 1", "pieces": 8},
    {"order": "ORD-314", "alloy": "bronze", "text": "chamberstick x 5 ; tapered x 1", "pieces": 6},
    {"order": "ORD-315", "alloy": "brass", "text": "baluster x 6 ; pricket x 1 ; tapered x 4", "pieces": 11},
]


def policy(request):
    prompt = request.body["messages"][-1]["content"]
    if prompt.startswith("List the order lines"):
        text = prompt.split("\n", 1)[1]
        lines = []
        for part in text.split(";"):
            design, qty = [x.strip() for x in part.split(" x ")]
            if ACTIVE == "hallucinated_value" and design == "chamberstick":
                qty = "6"
            lines.append(f"{design} | {qty}")
        return "\n".join(lines)
    if prompt.startswith("Estimate furnace hours"):
        grams = json.loads(prompt.split("\n", 1)[1])["total_grams"]
        return json.dumps({"furnace_hours": round(grams / 4000 + 1, 1)})
    return "?"


def run_one(server, inp, path):
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)

    @trajdebug.step(kind="input")
    def receive_order(order: dict) -> dict:
        return order

    @trajdebug.step(kind="llm")
    def read_order(messages: list) -> str:
        r = client.chat.completions.create(model=server.model, messages=messages)
        return r.choices[0].message.content

    @trajdebug.step(kind="parse")
    def parse_lines(text: str) -> list:
        lines = []
        for row in text.strip().splitlines():
            design, qty = [x.strip() for x in row.split("|")]
            n = int(qty[0]) if ACTIVE == "lossy_parsing" else int(qty)
            lines.append({"design": design, "qty": n})
        return lines

    @trajdebug.step(kind="retrieval")
    def lookup_pattern(design: str) -> dict:
        key = design
        if ACTIVE == "wrong_retrieval" and design == "baluster":
            key = min(k for k in PATTERNS if k.startswith(design) and k != design)
        return dict(PATTERNS[key], design=key)

    @trajdebug.step(kind="tool")
    def metal_weight(pattern: dict, alloy: str, qty: int) -> dict:
        grams = pattern["volume_cm3"] * DENSITY[alloy] * qty
        if ACTIVE == "unit_error" and pattern["code"] == "P-TAP":
            grams = grams / 1000.0
        return {"code": pattern["code"], "grams": round(grams, 1), "qty": qty}

    @trajdebug.step(kind="state")
    def reserve_metal(line_no: int, weight: dict) -> str:
        st = trajdebug.current_run().state
        key = f"reservation:{line_no - 1 if ACTIVE == 'bad_memory_write' and line_no > 1 else line_no}"
        st[key] = weight
        return key

    @trajdebug.step(kind="tool")
    def schedule_pours(lines: list) -> list:
        st = trajdebug.current_run().state
        pours = []
        for n, line in enumerate(lines, 1):
            res = st.get(f"reservation:{n}")
            if res is None:
                raise KeyError(f"no metal reserved for line {n} ({line['design']})")
            moulds = MOULDS[res["code"]]
            for k in range(0, line["qty"], moulds):
                pours.append({"line": n, "code": res["code"], "pieces": min(moulds, line["qty"] - k)})
        return pours

    @trajdebug.step(kind="llm")
    def furnace_estimate(messages: list) -> str:
        r = client.chat.completions.create(model=server.model, messages=messages)
        return r.choices[0].message.content

    @trajdebug.step(kind="condition")
    def validate_batch(order: dict, lines: list, patterns: list, weights: list, pours: list) -> dict:
        pieces = sum(p["pieces"] for p in pours)
        if pieces != order["pieces"]:
            raise ValueError(f"batch casts {pieces} pieces, order {order['order']} asks for {order['pieces']}")
        for line, pat, w in zip(lines, patterns, weights):
            if pat["design"] != line["design"]:
                raise ValueError(f"pattern {pat['code']} ({pat['design']}) does not match ordered {line['design']}")
            per_piece = w["grams"] / line["qty"]
            if not 300 <= per_piece <= 2000:
                raise ValueError(f"{pat['code']}: {per_piece:.1f} g per piece is outside the casting range 300-2000 g")
        return {"pours": len(pours), "pieces": pieces}

    @trajdebug.step(kind="output")
    def confirm(order: dict, summary: dict, furnace: dict) -> str:
        return f"{order['order']}: {summary['pieces']} pieces in {summary['pours']} pours, {furnace['furnace_hours']} h"

    with trajdebug.run(NAME, task=f"casting plan {inp['order']}", path=path):
        order = receive_order(inp)
        text = read_order([{"role": "user", "content": "List the order lines as 'design | qty'.\n" + order["text"]}])
        lines = parse_lines(text)
        patterns, weights = [], []
        for n, line in enumerate(lines, 1):
            pat = lookup_pattern(line["design"])
            w = metal_weight(pat, order["alloy"], line["qty"])
            reserve_metal(n, w)
            patterns.append(pat)
            weights.append(w)
        pours = schedule_pours(lines)
        total = sum(w["grams"] for w in weights)
        furnace = json.loads(furnace_estimate([{"role": "user", "content": "Estimate furnace hours\n" + json.dumps({"total_grams": total})}]))
        summary = validate_batch(order, lines, patterns, weights, pours)
        confirm(order, summary, furnace)


def _c(n, kind, inp, root, occ, rkind, failure, desc):
    return {"id": f"zzzq-foundry-{n}", "kind": kind, "switch": kind, "input": inp,
            "root": {"name": root, "occurrence": occ, "kind": rkind}, "failure": failure, "description": desc}


CASES = [
    _c(1, "unit_error", 0, "metal_weight", 2, "tool", "validate_batch",
       "The metal weight for the tapered line is given in kilograms while every other line is in grams."),
    _c(2, "wrong_retrieval", 4, "lookup_pattern", 1, "retrieval", "validate_batch",
       "The pattern lookup for 'baluster' returns the baluster-small pattern, a near-name match."),
    _c(3, "lossy_parsing", 1, "parse_lines", 1, "parse", "validate_batch",
       "The line parser keeps only the first digit of the quantity, so 12 pieces become 1."),
    _c(4, "bad_memory_write", 2, "reserve_metal", 2, "state", "schedule_pours",
       "The second line's metal reservation is saved under the first line's key, overwriting it."),
    _c(5, "hallucinated_value", 3, "read_order", 1, "llm", "validate_batch",
       "The model reads 6 chambersticks out of an order that asks for 5."),
]
