"""Hosiery mill knitting plan (sdk route): model drafts batches, a scheduling sub-agent per batch, dye house, packing assertion."""
import json
import math

from openai import OpenAI

import trajdebug

NAME = "hosiery-knit-planner"
ROUTE = "sdk"
DOMAIN = "hosiery mill"
SHAPE = "llm plan -> parse -> per batch sub-agent (machine choice, yarn, booking) -> dye house per style -> yarn draw -> final assertion"
SWITCH = set()

STYLES = {
    "ribbed merino crew": {"gauge": 168, "yarn": "merino 2/32", "grams_per_pair": 62},
    "fine nylon sheer": {"gauge": 200, "yarn": "nylon 2/48", "grams_per_pair": 18},
    "cotton sport ankle": {"gauge": 144, "yarn": "cotton 2/30", "grams_per_pair": 45},
    "wool hiking boot": {"gauge": 120, "yarn": "wool 2/16", "grams_per_pair": 95},
    "silk blend dress": {"gauge": 200, "yarn": "silk blend 2/60", "grams_per_pair": 22},
}
MACHINES = [("K1", 120, 900), ("K2", 144, 1100), ("K3", 168, 1000), ("K4", 200, 1400), ("K5", 200, 1400)]
YARN = {"merino 2/32": 90.0, "nylon 2/48": 30.0, "cotton 2/30": 90.0, "wool 2/16": 160.0, "silk blend 2/60": 25.0}
WEEK_START_YARN = {"merino 2/32": 210.0, "nylon 2/48": 64.0, "cotton 2/30": 150.0, "wool 2/16": 240.0, "silk blend 2/60": 40.0}

INPUTS = [
    {"customer": "Pennock & Daughters", "due_day": 9,
     "lines": [["ribbed merino crew", "charcoal", {"S": 600, "M": 900, "L": 700}],
               ["cotton sport ankle", "white", {"S": 800, "M": 1200, "L": 800}]]},
    {"customer": "Atelier Rosseau", "due_day": 7,
     "lines": [["fine nylon sheer", "nude", {"S": 1200, "M": 1500, "L": 1000, "XL": 400}],
               ["silk blend dress", "navy", {"S": 300, "M": 400, "L": 300}]]},
    {"customer": "Fellside Outdoor", "due_day": 11,
     "lines": [["wool hiking boot", "moss", {"M": 700, "L": 900, "XL": 600}],
               ["ribbed merino crew", "oatmeal", {"M": 500, "L": 500}],
               ["cotton sport ankle", "black", {"S": 600, "M": 600, "L": 600, "XL": 300}]]},
    {"customer": "Brindle Department Store", "due_day": 10,
     "lines": [["fine nylon sheer", "black", {"S": 900, "M": 1100, "L": 900}],
               ["cotton sport ankle", "grey marl", {"S": 1000, "M": 1400}],
               ["wool hiking boot", "rust", {"L": 500, "XL": 500}]]},
    {"customer": "Hartwell School Outfitters", "due_day": 12,
     "lines": [["cotton sport ankle", "navy", {"S": 1500, "M": 1500, "L": 1200, "XL": 600}],
               ["ribbed merino crew", "bottle green", {"S": 400, "M": 600, "L": 500, "XL": 300}],
               ["wool hiking boot", "grey", {"M": 300, "L": 300}]]},
]
CASES = [
    {"id": "zzzu_hosiery_plan", "input": 2, "switch": "plan_omits", "kind": "plan_error",
     "root": ("draft_knitting_plan", 1), "failure": "confirm_packing",
     "desc": "The drafted knitting plan left out the XL cotton ankle batch, so packing counted 300 pairs short of the order."},
    {"id": "zzzu_hosiery_lastday", "input": 1, "switch": "end_day", "kind": "off_by_one",
     "root": ("book_machine", 4), "failure": "confirm_packing",
     "desc": "The XL sheer booking counted its last knitting day one past the real one, which pushed the finish past the due day."},
    {"id": "zzzu_hosiery_gauge", "input": 3, "switch": "route_gauge", "kind": "wrong_routing",
     "root": ("choose_machine", 2), "failure": "machine_controller",
     "desc": "The medium sheer batch was routed to the 144-needle K2 instead of a 200-needle cylinder, and the controller refused the pattern."},
    {"id": "zzzu_hosiery_yarn", "input": 4, "switch": "week_start", "kind": "stale_data",
     "root": ("yarn_on_hand", 5), "failure": "draw_yarn",
     "desc": "The yarn store answered with Monday's merino figure instead of today's, so no merino was reordered and the draw came up short."},
    {"id": "zzzu_hosiery_shade", "input": 0, "switch": "shade_ignored", "kind": "tool_ignores_argument",
     "root": ("dye_house_booking", 2), "failure": "confirm_packing",
     "desc": "The dye house booking ignored the requested white shade for the cotton ankles and booked its standing black."},
]

_llm = {}


def policy(request):
    order = json.loads(request.body["messages"][-1]["content"].split("\n", 1)[1])
    batches = []
    for style, shade, sizes in order["lines"]:
        for size, pairs in sizes.items():
            batches.append({"style": style, "size": size, "pairs": pairs})
    if "plan_omits" in SWITCH:
        batches = batches[:-1]
    return json.dumps({"batches": batches})


@trajdebug.step(kind="input")
def take_order(customer: str, lines: list, due_day: int) -> dict:
    return {"customer": customer, "lines": lines, "due_day": due_day}


@trajdebug.step(kind="llm")
def draft_knitting_plan(messages: list) -> str:
    r = _llm["client"].chat.completions.create(model=_llm["model"], messages=messages)
    return r.choices[0].message.content


@trajdebug.step(kind="parse")
def read_plan(text: str) -> list:
    return json.loads(text)["batches"]


@trajdebug.step(kind="condition")
def choose_machine(style: str, size: str, gauge: int, busy: list) -> str:
    free = [m for m in MACHINES if m[1] == gauge and m[0] not in busy] or [m for m in MACHINES if m[1] == gauge]
    name = free[0][0]
    if "route_gauge" in SWITCH and gauge == 200 and size == "M":
        name = "K2"
    return name


@trajdebug.step(kind="tool")
def yarn_on_hand(yarn: str) -> dict:
    kg = YARN[yarn]
    if "week_start" in SWITCH and yarn == "merino 2/32":
        kg = WEEK_START_YARN[yarn]
    return {"yarn": yarn, "kg": kg}


@trajdebug.step(kind="tool")
def order_yarn(yarn: str, kg: float) -> dict:
    YARN_ORDERED[yarn] = YARN_ORDERED.get(yarn, 0.0) + kg
    return {"yarn": yarn, "ordered_kg": kg, "arrives_day": 2}


YARN_ORDERED = {}


@trajdebug.step(kind="state")
def book_machine(machine: str, style: str, size: str, pairs: int) -> dict:
    st = trajdebug.current_run().state
    rate = [m for m in MACHINES if m[0] == machine][0][2]
    start = st.get(f"free_from:{machine}", 1)
    days = math.ceil(pairs / rate)
    end = start + days - 1
    if "end_day" in SWITCH and style == "fine nylon sheer" and size == "XL":
        end = start + days
    st[f"free_from:{machine}"] = end + 1
    booking = {"machine": machine, "style": style, "size": size, "pairs": pairs, "start": start, "end": end}
    st[f"batch:{style}:{size}"] = booking
    return booking


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def machine_controller(machine: str, style: str, gauge: int, pairs: int) -> dict:
    _ctl["n"] += 1
    if _ctl["n"] == 3:
        raise ConnectionError(f"controller on {machine} did not acknowledge")
    cyl = [m for m in MACHINES if m[0] == machine][0][1]
    if cyl != gauge:
        raise RuntimeError(f"{machine} carries a {cyl}-needle cylinder; the {style} pattern needs {gauge}")
    return {"machine": machine, "loaded": style, "pairs": pairs}


_ctl = {"n": 0}


@trajdebug.step(kind="agent")
def schedule_batch(batch: dict, busy: list) -> dict:
    spec = STYLES[batch["style"]]
    machine = choose_machine(batch["style"], batch["size"], spec["gauge"], busy)
    need = round(batch["pairs"] * spec["grams_per_pair"] / 1000, 1)
    stock = yarn_on_hand(spec["yarn"])
    if stock["kg"] - _need_so_far.get(spec["yarn"], 0.0) < need:
        order_yarn(spec["yarn"], need)
    _need_so_far[spec["yarn"]] = _need_so_far.get(spec["yarn"], 0.0) + need
    booking = book_machine(machine, batch["style"], batch["size"], batch["pairs"])
    machine_controller(machine, batch["style"], spec["gauge"], batch["pairs"])
    return booking


_need_so_far = {}


@trajdebug.step(kind="tool")
def dye_house_booking(style: str, shade: str, pairs: int, ready_day: int) -> dict:
    booked = shade
    if "shade_ignored" in SWITCH and style == "cotton sport ankle":
        booked = "black"
    return {"style": style, "shade": booked, "pairs": pairs, "dye_day": ready_day + 1}


@trajdebug.step(kind="tool")
def draw_yarn(yarn: str, kg: float) -> dict:
    have = YARN[yarn] + YARN_ORDERED.get(yarn, 0.0)
    if kg > have:
        raise RuntimeError(f"yarn store holds {have:.1f} kg of {yarn}; the plan draws {kg:.1f} kg")
    return {"yarn": yarn, "drawn_kg": kg}


@trajdebug.step(kind="output")
def confirm_packing(order: dict, dyed: list) -> dict:
    asked = sum(sum(s.values()) for _, _, s in order["lines"])
    planned = sum(d["pairs"] for d in dyed)
    assert planned == asked, f"packing counts {planned} pairs planned against {asked} ordered"
    for (style, shade, _), d in zip(order["lines"], dyed):
        assert d["shade"] == shade, f"{style}: dyed {d['shade']}, order asks {shade}"
    last = max(d["dye_day"] for d in dyed)
    assert last <= order["due_day"], f"last dye day {last} is after the due day {order['due_day']}"
    return {"customer": order["customer"], "pairs": planned, "ready_day": last}


def run_one(server, inp, path):
    _ctl["n"] = 0
    _need_so_far.clear()
    YARN_ORDERED.clear()
    _llm.update(client=OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0), model=server.model)
    try:
        with trajdebug.run(NAME, task=f"knitting plan for {inp['customer']}", path=path):
            order = take_order(inp["customer"], inp["lines"], inp["due_day"])
            text = draft_knitting_plan([
                {"role": "system", "content": "Split a hosiery order into knitting batches, one per style and size."},
                {"role": "user", "content": "Order:\n" + json.dumps({"lines": order["lines"]})}])
            batches = read_plan(text)
            busy, bookings = [], []
            for b in batches:
                bk = schedule_batch(b, busy)
                busy.append(bk["machine"])
                bookings.append(bk)
            dyed = []
            for style, shade, _ in order["lines"]:
                mine = [bk for bk in bookings if bk["style"] == style]
                ready = max([bk["end"] for bk in mine], default=1)
                dyed.append(dye_house_booking(style, shade, sum(bk["pairs"] for bk in mine), ready))
            for yarn, kg in sorted(_need_so_far.items()):
                draw_yarn(yarn, kg)
            confirm_packing(order, dyed)
    except Exception:
        pass
