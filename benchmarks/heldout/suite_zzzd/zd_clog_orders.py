"""A clog maker's orders: trajdebug's own recording API, a memory tool, a finishing sub-agent per pair,
retries, parallel kiln bookings.

Shape: read_order (parse) -> per pair: measure_foot (parse), find_last (retrieval), wood_stock (tool, retried
once on a dropped connection), fit_check (condition), finishing (agent: choose_finish llm, price_paint),
remember (memory tool) -> recall (memory tool) -> kiln_slot x pairs in parallel -> workshop_plan (llm) ->
read_plan (parse) -> split_days -> book_carver per day -> print_labels (tool) -> pack_order (output) ->
take_deposit (tool) -> check_order (final assertion).  About 40-60 steps.
"""

from __future__ import annotations

import json

from zd_common import client, last_user, payload

import trajdebug


NAME = "clogmaker-orders"
SHORT = "clog"
ROUTE = "sdk"
DOMAIN = "clog maker's orders"
SHAPE = "per-pair loop with a finishing sub-agent, memory tool, retried stock call, parallel kiln calls; 25-60 steps"

DAY_CHUNK_FROM_ONE = False
PAINT_SERVICE_TIMES_OUT = False
LAST_SEARCH_SKIPS_WIDTH = False
FINISH_FOR_FIRST_PAIR = False
RECALL_FIRST_PAGE_ONLY = False
SWITCHES = [
    "DAY_CHUNK_FROM_ONE",
    "PAINT_SERVICE_TIMES_OUT",
    "LAST_SEARCH_SKIPS_WIDTH",
    "FINISH_FOR_FIRST_PAIR",
    "RECALL_FIRST_PAGE_ONLY",
]

LASTS = [
    {"last": f"L-{size}{w[0].upper()}", "length_mm": round(size * 20 / 3 - 10), "width": w}
    for size in range(34, 48)
    for w in ("narrow", "regular", "wide")
]
PAINTS = {"delft blue": 14.0, "hindeloopen red": 16.5, "tulip yellow": 12.0, "moss green": 12.0}
WOOD = {"poplar": 40, "willow": 25}
BASE_PRICE = 85.0


def _pair(p, size, fit, finish, colour=None):
    return {"pair": p, "size": size, "fit": fit, "finish": finish, "colour": colour}


INPUTS = [
    {
        "order": "O-3301",
        "customer": "Van Dijk",
        "pairs": [
            _pair("P1", 41, "wide", "painted", "delft blue"),
            _pair("P2", 38, "regular", "varnished"),
            _pair("P3", 44, "narrow", "raw"),
        ],
    },
    {
        "order": "O-3302",
        "customer": "Bakker dance troupe",
        "pairs": [
            _pair("P1", 37, "regular", "painted", "hindeloopen red"),
            _pair("P2", 39, "regular", "painted", "tulip yellow"),
            _pair("P3", 42, "wide", "varnished"),
            _pair("P4", 45, "regular", "raw"),
            _pair("P5", 36, "narrow", "painted", "moss green"),
        ],
    },
    {
        "order": "O-3303",
        "customer": "Mulder",
        "pairs": [_pair("P1", 43, "wide", "painted", "delft blue"), _pair("P2", 40, "wide", "raw")],
    },
    {
        "order": "O-3304",
        "customer": "Jansen garden centre",
        "pairs": [
            _pair("P1", 46, "wide", "varnished"),
            _pair("P2", 44, "regular", "raw"),
            _pair("P3", 35, "narrow", "painted", "tulip yellow"),
            _pair("P4", 40, "regular", "varnished"),
        ],
    },
    {
        "order": "O-3305",
        "customer": "De Boer",
        "pairs": [
            _pair("P1", 39, "narrow", "varnished"),
            _pair("P2", 41, "regular", "painted", "delft blue"),
            _pair("P3", 38, "regular", "painted", "hindeloopen red"),
        ],
    },
]

CASES = [
    {
        "input": 0,
        "switch": "DAY_CHUNK_FROM_ONE",
        "fault_kind": "off_by_one",
        "root": ("split_days", 1, "other"),
        "failure": ("check_order", 1),
        "description": "Splitting the carving plan into days started counting at the second pair, so pair P1 got "
        "no carving day.",
    },
    {
        "input": 1,
        "switch": "PAINT_SERVICE_TIMES_OUT",
        "fault_kind": "swallowed_error",
        "root": ("price_paint", 2, "other"),
        "failure": ("take_deposit", 1),
        "description": "The paint price lookup timed out for tulip yellow and price_paint caught it and priced "
        "the paint at 0.00.",
    },
    {
        "input": 2,
        "switch": "LAST_SEARCH_SKIPS_WIDTH",
        "fault_kind": "tool_ignores_argument",
        "root": ("find_last", 1, "retrieval"),
        "failure": ("fit_check", 1),
        "description": "The last search dropped the width it was given and returned the narrow last for a wide foot.",
    },
    {
        "input": 3,
        "switch": "FINISH_FOR_FIRST_PAIR",
        "fault_kind": "subagent_wrong_entity",
        "root": ("choose_finish", 3, "llm"),
        "failure": ("print_labels", 1),
        "description": "The finishing model, asked about pair P3, answered with the finish of pair P1 from the "
        "order notes it was shown.",
    },
    {
        "input": 4,
        "switch": "RECALL_FIRST_PAGE_ONLY",
        "fault_kind": "truncated_result",
        "root": ("recall", 1, "tool"),
        "failure": ("pack_order", 1),
        "description": "The memory recall returned only its first page of two pair specs out of three.",
    },
]

_attempts = {"n": 0}
_memory: dict = {}


def policy(request):
    prompt = last_user(request)
    if prompt.startswith("Finish"):
        data = payload(prompt)
        target = data["pair"]
        if FINISH_FOR_FIRST_PAIR and target == "P3":
            target = "P1"
        spec = next(p for p in data["order_notes"] if p["pair"] == target)
        coats = {"painted": 3, "varnished": 2, "raw": 0}[spec["finish"]]
        return json.dumps(
            {"pair": target, "finish": spec["finish"], "colour": spec["colour"], "coats": coats}
        )
    if prompt.startswith("Plan"):
        data = payload(prompt)
        order = sorted(data["pairs"], key=lambda p: (-p["coats"], p["pair"]))
        return json.dumps({"carve_order": [p["pair"] for p in order], "pairs_per_day": 2})
    return "Unknown request."


@trajdebug.step(kind="parse")
def read_order(order: dict) -> dict:
    return {
        "order": order["order"],
        "customer": order["customer"],
        "pairs": [dict(p) for p in order["pairs"]],
    }


@trajdebug.step(kind="parse")
def measure_foot(pair: dict) -> dict:
    return {"pair": pair["pair"], "length_mm": round(pair["size"] * 20 / 3 - 10), "width": pair["fit"]}


@trajdebug.step(kind="retrieval")
def find_last(length_mm: int, width: str) -> list[dict]:
    hits = [x for x in LASTS if abs(x["length_mm"] - length_mm) <= 3]
    if not LAST_SEARCH_SKIPS_WIDTH:
        hits = [x for x in hits if x["width"] == width]
    return hits[:3]


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def wood_stock(species: str, blocks: int) -> dict:
    _attempts["n"] += 1
    if _attempts["n"] == 1:
        raise ConnectionError("timber yard stock service reset the connection")
    return {"species": species, "available": WOOD[species], "reserved": blocks}


@trajdebug.step(kind="condition")
def fit_check(foot: dict, last: dict) -> dict:
    if last["width"] != foot["width"]:
        raise ValueError(
            f"last {last['last']} is {last['width']}, pair {foot['pair']} needs a {foot['width']} fit"
        )
    return {"pair": foot["pair"], "last": last["last"], "fits": True}


@trajdebug.step(kind="llm")
def choose_finish(messages: list[dict], llm) -> str:
    return llm.chat.completions.create(model="fake-model", messages=messages).choices[0].message.content


def _paint_catalog(colour: str) -> float:
    if PAINT_SERVICE_TIMES_OUT and colour == "tulip yellow":
        raise TimeoutError("paint catalogue did not answer within 2 s")
    return PAINTS[colour]


@trajdebug.step(kind="other")
def price_paint(finish: dict) -> dict:
    if finish["finish"] != "painted":
        return {"pair": finish["pair"], "paint": None, "price": 0.0}
    try:
        price = _paint_catalog(finish["colour"])
    except Exception:  # noqa: BLE001
        price = 0.0
    return {"pair": finish["pair"], "paint": finish["colour"], "price": price}


@trajdebug.step(kind="agent")
def finishing(pair: dict, notes: list[dict], llm) -> dict:
    msgs = [
        {"role": "system", "content": "You are the finishing bench. Answer the finish for the pair asked."},
        {"role": "user", "content": "Finish " + json.dumps({"pair": pair["pair"], "order_notes": notes})},
    ]
    finish = json.loads(choose_finish(msgs, llm))
    return {**finish, "paint_line": price_paint(finish)}


@trajdebug.step(kind="tool")
def remember(key: str, value: dict) -> str:
    _memory[key] = json.loads(json.dumps(value))
    return f"stored {key}"


@trajdebug.step(kind="tool")
def recall(prefix: str) -> list[dict]:
    items = [v for k, v in sorted(_memory.items()) if k.startswith(prefix)]
    return items[:2] if RECALL_FIRST_PAGE_ONLY else items


@trajdebug.step(kind="tool")
def kiln_slot(pair: str, coats: int) -> dict:
    return {"pair": pair, "kiln_hours": 6 + 4 * coats}


@trajdebug.step(kind="llm")
def workshop_plan(messages: list[dict], llm) -> str:
    return llm.chat.completions.create(model="fake-model", messages=messages).choices[0].message.content


@trajdebug.step(kind="parse")
def read_plan(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="other")
def split_days(plan: dict) -> list[list[str]]:
    order, per = plan["carve_order"], plan["pairs_per_day"]
    start = 1 if DAY_CHUNK_FROM_ONE else 0
    return [order[i : i + per] for i in range(start, len(order), per)]


@trajdebug.step(kind="tool")
def book_carver(day: int, pairs: list[str]) -> dict:
    return {"day": day, "pairs": list(pairs), "carver": "Henk" if day % 2 else "Anouk"}


@trajdebug.step(kind="tool")
def print_labels(specs: list[dict], finishes: dict) -> list[str]:
    labels = []
    for spec in specs:
        f = finishes[spec["pair"]]
        if f["pair"] != spec["pair"] or f["finish"] != spec["finish"]:
            raise ValueError(
                f"finish sheet for box {spec['pair']} reads {f['pair']} {f['finish']}, "
                f"order says {spec['finish']}"
            )
        labels.append(f"{spec['pair']} EU{spec['size']} {f['finish']} {f.get('colour') or ''}".strip())
    return labels


@trajdebug.step(kind="output")
def pack_order(order: dict, specs: list[dict], labels: list[str]) -> dict:
    if len(specs) != len(order["pairs"]):
        raise ValueError(
            f"packing list holds {len(specs)} pairs, order {order['order']} is for {len(order['pairs'])}"
        )
    return {"order": order["order"], "boxes": labels}


@trajdebug.step(kind="tool")
def take_deposit(order: str, lines: list[dict]) -> dict:
    for line in lines:
        if line["amount"] <= 0:
            raise ValueError(
                f"payment provider rejected order {order}: line '{line['item']}' has amount "
                f"{line['amount']:.2f}"
            )
    total = sum(x["amount"] for x in lines)
    return {"order": order, "deposit": round(total * 0.3, 2)}


@trajdebug.step(kind="condition")
def check_order(order: dict, days: list[dict]) -> bool:
    booked = [p for d in days for p in d["pairs"]]
    for p in order["pairs"]:
        assert p["pair"] in booked, (
            f"pair {p['pair']} of {order['order']} has no carving day ({len(days)} days booked)"
        )
    return True


def record(inp, path, server):
    llm = client(server)
    _attempts["n"] = 0
    _memory.clear()
    try:
        with trajdebug.run(NAME, path=path, task=f"make order {inp['order']} for {inp['customer']}"):
            order = read_order(inp)
            finishes = {}
            for pair in order["pairs"]:
                foot = measure_foot(pair)
                lasts = find_last(foot["length_mm"], foot["width"])
                wood_stock("willow" if pair["size"] < 38 else "poplar", 2)
                fit_check(foot, lasts[0])
                notes = [
                    {"pair": p["pair"], "finish": p["finish"], "colour": p["colour"]} for p in order["pairs"]
                ]
                finishes[pair["pair"]] = finishing(pair, notes, llm)
                remember(
                    f"{order['order']}/{pair['pair']}", {**pair, "coats": finishes[pair["pair"]]["coats"]}
                )
            specs = recall(order["order"] + "/")
            with (
                trajdebug.step("kiln", kind="agent"),
                trajdebug.ContextThreadPoolExecutor(max_workers=3) as pool,
            ):
                list(pool.map(lambda s: kiln_slot(s["pair"], s["coats"]), specs))
            plan = read_plan(
                workshop_plan(
                    [
                        {
                            "role": "system",
                            "content": "Plan the carving order: most coats first, two pairs a day.",
                        },
                        {
                            "role": "user",
                            "content": "Plan "
                            + json.dumps(
                                {"pairs": [{"pair": s["pair"], "coats": s["coats"]} for s in specs]}
                            ),
                        },
                    ],
                    llm,
                )
            )
            days = [book_carver(i, chunk) for i, chunk in enumerate(split_days(plan), 1)]
            labels = print_labels(specs, finishes)
            pack_order(order, specs, labels)
            lines = [{"item": f"{s['pair']} clogs", "amount": BASE_PRICE} for s in specs]
            lines += [
                {"item": f"paint: {f['paint_line']['paint']}", "amount": f["paint_line"]["price"]}
                for f in finishes.values()
                if f["paint_line"]["paint"]
            ]
            take_deposit(order["order"], lines)
            check_order(order, days)
    except Exception:  # noqa: BLE001
        pass
