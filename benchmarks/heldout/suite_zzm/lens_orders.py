"""An optician's lens orders (sdk route): prescription -> lens blanks per eye -> quote -> lab ticket."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit  # noqa: E402
import trajdebug  # noqa: E402
from openai import OpenAI  # noqa: E402

AGENT = "lens-orders"
ROUTE = "sdk"
DOMAIN = "optician's lens orders"
SHAPE = "prescription lookup, request reading (LLM), per-eye lens selector sub-agent (catalogue search, LLM choice, parse, stock check with retry), coatings loop, quote, lab ticket (LLM) and parse, validator"

ORDER_DATE = "2026-11-20"

# customer -> exams, newest first: (exam date, R (sph, cyl, axis), L (sph, cyl, axis), pd)
EXAMS = {
    "C-201": [("2026-02-11", (-3.50, -0.50, 90), (2.50, -0.25, 80), 63), ("2023-05-02", (-3.00, -0.50, 90), (2.00, -0.25, 85), 63)],
    "C-202": [("2025-09-30", (-2.25, -0.75, 170), (-2.00, -0.50, 10), 61), ("2023-01-19", (-1.75, -0.75, 170), (-1.50, -0.50, 10), 61)],
    "C-203": [("2026-06-04", (1.25, -0.25, 45), (1.50, -0.50, 135), 65), ("2024-02-27", (1.00, -0.25, 45), (1.25, -0.50, 135), 65)],
    "C-204": [("2026-01-22", (-5.00, -1.25, 5), (-4.75, -1.00, 175), 60), ("2023-11-08", (-4.50, -1.00, 5), (-4.50, -1.00, 175), 60)],
    "C-205": [("2025-12-15", (-2.50, -0.50, 100), (-2.75, -0.25, 95), 62), ("2022-10-03", (-2.00, -0.50, 100), (-2.25, -0.25, 95), 62)],
    "C-206": [("2026-04-09", (3.00, -0.50, 60), (2.75, -0.75, 120), 64), ("2024-03-12", (2.50, -0.50, 60), (2.50, -0.75, 120), 64)],
    "C-207": [("2025-11-28", (-0.75, -0.25, 180), (-1.00, -0.25, 180), 59), ("2023-06-21", (-0.50, -0.25, 180), (-0.75, -0.25, 180), 59)],
    "C-208": [("2026-07-17", (-6.25, -1.50, 10), (-6.00, -1.25, 170), 62), ("2024-01-05", (-5.75, -1.25, 10), (-5.50, -1.25, 170), 62)],
    "C-209": [("2026-03-03", (0.50, -0.25, 90), (0.75, -0.25, 90), 66), ("2023-09-14", (0.25, -0.25, 90), (0.50, -0.25, 90), 66)],
}
FRAMES = {"F-22": {"name": "Aldo round", "price": 89.0}, "F-31": {"name": "Mira cat-eye", "price": 119.0},
          "F-40": {"name": "Tess rectangular", "price": 74.0}, "F-57": {"name": "Ravi aviator", "price": 139.0}}
BLANKS = [  # (code, sph_min, sph_max, cyl_min, price per lens)
    ("SV-A", -8.00, -4.25, -4.00, 42.0), ("SV-B", -4.00, -1.25, -2.00, 31.0), ("SV-C", -1.00, 1.75, -2.00, 27.0),
    ("SV-D", 2.00, 4.75, -2.00, 33.0), ("SV-E", 5.00, 8.00, -4.00, 45.0),
]
COATINGS = {"anti_reflective": 25.00, "blue_filter": 18.50, "hard_coat": 12.00, "photochromic": 49.00}
COATING_LABEL = {"anti_reflective": "anti-reflective", "blue_filter": "blue light filter", "hard_coat": "hard coat",
                 "photochromic": "photochromic"}


def _order(oid, cust, frame, coatings):
    text = (f"Order {oid} for customer {cust}: single vision lenses for both eyes in frame {frame}, "
            f"coatings: {', '.join(COATING_LABEL[c] for c in coatings)}.")
    return {"order_id": oid, "customer": cust, "frame": frame, "coatings": coatings, "text": text}


INPUTS = {
    "lens_01": _order("LO-4411", "C-205", "F-22", ["anti_reflective", "hard_coat"]),
    "lens_02": _order("LO-4412", "C-202", "F-31", ["anti_reflective", "blue_filter"]),
    "lens_03": _order("LO-4413", "C-201", "F-40", ["hard_coat", "anti_reflective"]),
    "lens_04": _order("LO-4414", "C-206", "F-57", ["anti_reflective", "blue_filter"]),
    "lens_05": _order("LO-4415", "C-204", "F-22", ["blue_filter", "hard_coat"]),
}
REFS = [
    _order("LO-4391", "C-203", "F-31", ["anti_reflective", "hard_coat"]),
    _order("LO-4395", "C-207", "F-40", ["photochromic", "anti_reflective"]),
    _order("LO-4402", "C-208", "F-57", ["anti_reflective", "blue_filter"]),
    _order("LO-4406", "C-209", "F-22", ["hard_coat", "blue_filter"]),
]
CASES = [
    {"case": "lens_01", "kind": "stale_data", "root": {"name": "fetch_prescription"},
     "failure": {"name": "validate_order"},
     "description": "The prescription lookup serves the customer's cached 2022 exam instead of the 2025 one; the whole order is built on it and the validator rejects an exam older than 24 months."},
    {"case": "lens_02", "kind": "off_by_one", "root": {"name": "parse_choice", "occurrence": 1},
     "failure": {"name": "validate_order"},
     "description": "The choice parser reads the model's 1-based option number as a 0-based index for the right eye and takes the next blank, whose power range does not cover -2.25."},
    {"case": "lens_03", "kind": "wrong_tool_args", "root": {"name": "search_lens_catalogue", "occurrence": 2},
     "failure": {"name": "validate_order"},
     "description": "The left-eye catalogue search is called with the right eye's sphere (-3.50) so no candidate covers the left eye's +2.50."},
    {"case": "lens_04", "kind": "unit_error", "root": {"name": "price_coatings", "occurrence": 2},
     "failure": {"name": "validate_order"},
     "description": "The coatings price service answers the blue light filter in cents (1850) and the quote adds it as euros."},
    {"case": "lens_05", "kind": "hallucinated_value", "root": {"name": "draft_lab_ticket"},
     "failure": {"name": "validate_order"},
     "description": "The model drafting the lab ticket writes a pupillary distance of 62 mm where the prescription says 60."},
]

_ctx: dict = {}


def _covers(blank, sph, cyl):
    return blank["sph_min"] <= sph <= blank["sph_max"] and cyl >= blank["cyl_min"]


# ---- the model --------------------------------------------------------------------------------------
def brain(inp):
    def read(req):
        return json.dumps({"lens_type": "single_vision", "frame": inp["frame"], "coatings": inp["coatings"]})

    def choose(req):
        p = kit.json_in(kit.last_user(req))
        cands = p["candidates"]
        best = next((i for i, b in enumerate(cands) if _covers(b, p["sph"], p["cyl"])), None)
        if best is None:
            best = min(range(len(cands)), key=lambda i: abs((cands[i]["sph_min"] + cands[i]["sph_max"]) / 2 - p["sph"]))
        return f"Option {best + 1}: {cands[best]['code']} covers the eye's prescription."

    def ticket(req):
        p = kit.json_in(kit.last_user(req))
        pd = p["pd"] + 2 if kit.on("lens_05") else p["pd"]
        lines = [f"ORDER {p['order_id']}"]
        for eye in ("R", "L"):
            e = p["eyes"][eye]
            lines.append(f"{eye}: SPH {e['sph']:+.2f} CYL {e['cyl']:+.2f} AX {e['axis']} BLANK {e['blank']}")
        lines.append(f"PD {pd} mm")
        lines.append("COATINGS " + ", ".join(p["coatings"]))
        return "\n".join(lines)

    return kit.Brain({"read_request": read, "choose_lens": choose, "lab_ticket": ticket})


# ---- the agent's steps --------------------------------------------------------------------------------
@trajdebug.step(kind="input")
def intake(order: dict) -> dict:
    return {"order_id": order["order_id"], "customer": order["customer"], "text": order["text"]}


@trajdebug.step(kind="retrieval")
def fetch_prescription(customer: str) -> dict:
    exams = EXAMS[customer]
    exam = exams[-1] if kit.on("lens_01") else exams[0]
    date, r, l, pd = exam
    eye = lambda v: {"sph": v[0], "cyl": v[1], "axis": v[2]}  # noqa: E731
    return {"customer": customer, "exam_date": date, "R": eye(r), "L": eye(l), "pd": pd}


@trajdebug.step(kind="state")
def remember_prescription(rx: dict) -> dict:
    trajdebug.current_run().state["rx"] = rx
    return {"rx_exam": rx["exam_date"]}


@trajdebug.step(kind="parse")
def parse_request(answer: str) -> dict:
    data = json.loads(answer)
    return {"lens_type": data["lens_type"], "frame": data["frame"], "coatings": list(data["coatings"])}


@trajdebug.step(kind="tool")
def fetch_frame(frame_id: str) -> dict:
    return {"frame": frame_id, **FRAMES[frame_id]}


@trajdebug.step(kind="retrieval")
def search_lens_catalogue(lens_type: str, sph: float, cyl: float) -> list:
    return [{"code": c, "sph_min": lo, "sph_max": hi, "cyl_min": cm, "price": p}
            for c, lo, hi, cm, p in BLANKS if hi >= sph - 3 and lo <= sph + 3]


@trajdebug.step(kind="parse")
def parse_choice(answer: str, candidates: list) -> dict:
    n = int(re.match(r"Option (\d+)", answer).group(1))
    return dict(candidates[n] if kit.on("lens_02") else candidates[n - 1])


_stock_calls = {"n": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def check_stock(code: str) -> dict:
    _stock_calls["n"] += 1
    if _stock_calls["n"] == 1:
        raise ConnectionError("lab stock service did not answer within 2 s")
    return {"code": code, "in_stock": 14 + len(code), "lead_days": 2}


@trajdebug.step(kind="agent")
def lens_selector(eye: str, lens_type: str) -> dict:
    rx = trajdebug.current_run().state["rx"]
    e = rx[eye]
    query = rx["R"] if kit.on("lens_03") else e
    cands = search_lens_catalogue(lens_type, query["sph"], query["cyl"])
    answer = kit.sdk_llm(_ctx["client"], _ctx["model"], "choose_lens", "choose_lens",
                         "Pick the cheapest lens blank whose range covers the eye. Answer 'Option N: CODE ...'.",
                         "Eye and candidates: " + json.dumps({"eye": eye, "sph": e["sph"], "cyl": e["cyl"], "candidates": cands}))
    blank = parse_choice(answer, cands)
    stock = check_stock(blank["code"])
    return {"eye": eye, "blank": blank, "stock": stock}


@trajdebug.step(kind="tool")
def price_coatings(coating: str) -> dict:
    price = COATINGS[coating]
    if kit.on("lens_04") and coating == "blue_filter":
        price = int(round(price * 100))
    return {"coating": coating, "price": price, "per": "pair"}


@trajdebug.step(kind="other")
def compute_quote(frame: dict, lenses: list, coatings: list) -> dict:
    lens_total = sum(x["blank"]["price"] for x in lenses)
    coat_total = sum(c["price"] for c in coatings)
    return {"frame": frame["price"], "lenses": lens_total, "coatings": coat_total,
            "total": kit.money(frame["price"] + lens_total + coat_total)}


@trajdebug.step(kind="parse")
def parse_ticket(text: str) -> dict:
    eyes = {}
    for m in re.finditer(r"^([RL]): SPH ([+-]\d+\.\d+) CYL ([+-]\d+\.\d+) AX (\d+) BLANK (\S+)", text, re.M):
        eyes[m.group(1)] = {"sph": float(m.group(2)), "cyl": float(m.group(3)), "axis": int(m.group(4)), "blank": m.group(5)}
    pd = int(re.search(r"^PD (\d+) mm", text, re.M).group(1))
    return {"eyes": eyes, "pd": pd}


@trajdebug.step(kind="condition")
def validate_order(order_id: str, rx: dict, lenses: list, quote: dict, ticket: dict) -> dict:
    y, m, d = (int(x) for x in rx["exam_date"].split("-"))
    oy, om, od = (int(x) for x in ORDER_DATE.split("-"))
    months = (oy - y) * 12 + (om - m) - (1 if od < d else 0)
    if months > 24:
        raise ValueError(f"order {order_id}: prescription of {rx['exam_date']} is {months} months old at {ORDER_DATE} (limit 24)")
    for lens in lenses:
        e, b = rx[lens["eye"]], lens["blank"]
        if not _covers(b, e["sph"], e["cyl"]):
            raise ValueError(f"order {order_id}: blank {b['code']} ({b['sph_min']:+.2f}..{b['sph_max']:+.2f}) "
                             f"does not cover {lens['eye']} SPH {e['sph']:+.2f}")
    if not 60 <= quote["total"] <= 900:
        raise ValueError(f"order {order_id}: quote total {quote['total']:.2f} EUR outside 60-900 EUR for single vision")
    for eye in ("R", "L"):
        if ticket["eyes"][eye]["sph"] != rx[eye]["sph"]:
            raise ValueError(f"order {order_id}: lab ticket {eye} SPH differs from the prescription")
    if ticket["pd"] != rx["pd"]:
        raise ValueError(f"order {order_id}: lab ticket PD {ticket['pd']} mm, prescription PD {rx['pd']} mm")
    return {"order_id": order_id, "status": "ready for lab", "total": quote["total"]}


def record(inp: dict, server, path: Path) -> None:
    server.use(brain(inp))
    _ctx["client"] = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _ctx["model"] = server.model
    _stock_calls["n"] = 0
    try:
        _run(inp, path)
    except ValueError:
        pass  # the validator's rejection fails the run; it is recorded


def _run(inp: dict, path: Path) -> None:
    with trajdebug.run(AGENT, task=f"prepare lens order {inp['order_id']}", path=str(path)) as run:
        req = intake(inp)
        rx = fetch_prescription(req["customer"])
        remember_prescription(rx)
        answer = kit.sdk_llm(_ctx["client"], _ctx["model"], "read_request", "read_request",
                             "Extract lens_type, frame and coatings (snake_case) from the order as JSON.", req["text"])
        spec = parse_request(answer)
        frame = fetch_frame(spec["frame"])
        lenses = [lens_selector(eye, spec["lens_type"]) for eye in ("R", "L")]
        coatings = [price_coatings(c) for c in spec["coatings"]]
        quote = compute_quote(frame, lenses, coatings)
        payload = {"order_id": req["order_id"], "pd": rx["pd"], "coatings": spec["coatings"],
                   "eyes": {x["eye"]: {**rx[x["eye"]], "blank": x["blank"]["code"]} for x in lenses}}
        text = kit.sdk_llm(_ctx["client"], _ctx["model"], "draft_lab_ticket", "lab_ticket",
                           "Write the lab ticket: one line per eye, then PD, then coatings.", "Order: " + json.dumps(payload))
        ticket = parse_ticket(text)
        validate_order(req["order_id"], run.state["rx"], lenses, quote, ticket)
