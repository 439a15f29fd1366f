"""Eyeglass lab (recording SDK): parse a prescription, plan the lab stages, a surfacing sub-agent picks and reserves blanks, decentration, ticket, release."""

from __future__ import annotations

import json
import re

import trajdebug

from . import common, kit

NAME = "eyeglass-lab"
ROUTE = "sdk"
DOMAIN = "eyeglass lab"
EXT = "jsonl"
DESK = "eyeglass"
SHAPE = "parse rx -> frame + catalog retrieval -> stage plan (llm) -> surfacing sub-agent (per-eye llm + reserve) -> notes context -> decentration (llm) -> ticket state -> stock check -> release"

FRAMES = {"F-ARIA-52": {"eye_mm": 52, "bridge_mm": 18, "box_centre_mm": 70},
          "F-OTTO-49": {"eye_mm": 49, "bridge_mm": 20, "box_centre_mm": 69},
          "F-LUNE-54": {"eye_mm": 54, "bridge_mm": 17, "box_centre_mm": 71}}
CATALOG = {
    "1.60": [{"sku": "B160-4", "base": 4.0, "range": [-4.0, -1.0]}, {"sku": "B160-6", "base": 6.0, "range": [-1.0, 2.0]},
             {"sku": "B160-2", "base": 2.0, "range": [-8.0, -4.0]}],
    "1.67": [{"sku": "B167-3", "base": 3.0, "range": [-6.0, -2.0]}, {"sku": "B167-5", "base": 5.0, "range": [-2.0, 1.5]}],
}
STOCK_TODAY = {"B160-4": 6, "B160-6": 0, "B160-2": 3, "B167-3": 4, "B167-5": 2}
STOCK_CACHED = {"B160-4": 6, "B160-6": 5, "B160-2": 3, "B167-3": 4, "B167-5": 2}
PREVIOUS_NOTES = "Order EL-288 (walk-in): PD 58, fitting height 22, customer prefers thin edges."

INPUTS = {
    "A": {"order": "EL-301", "rx": "OD -2.25 -0.75 x 180; OS -2.00 -0.50 x 175; PD 63", "frame": "F-ARIA-52", "index": "1.60", "coating": "AR"},
    "B": {"order": "EL-305", "rx": "OD +0.50 -0.25 x 90; OS -0.75 -0.25 x 85; PD 61", "frame": "F-LUNE-54", "index": "1.60", "coating": "AR"},
    "R1": {"order": "EL-290", "rx": "OD -3.00 -0.50 x 10; OS -3.25 -0.50 x 170; PD 64", "frame": "F-OTTO-49", "index": "1.67", "coating": "AR"},
    "R2": {"order": "EL-293", "rx": "OD -1.50 -0.25 x 90; OS -1.75 -0.50 x 95; PD 60", "frame": "F-ARIA-52", "index": "1.60", "coating": "none"},
    "R3": {"order": "EL-296", "rx": "OD -5.00 -1.00 x 45; OS -4.75 -1.25 x 135; PD 66", "frame": "F-LUNE-54", "index": "1.60", "coating": "AR"},
    "R4": {"order": "EL-298", "rx": "OD +0.25 -0.50 x 120; OS -0.50 -0.25 x 60; PD 62", "frame": "F-OTTO-49", "index": "1.67", "coating": "blue"},
}
REFS = ["R1", "R2", "R3", "R4"]

CASES = [
    common.Case("zj-eyeglass-01", "hallucinated_value", "A", "choose_blank", 1, "release_to_lab", 1,
                "For the right eye the model states a base curve of 5.25, which no blank of that index has, and the ticket carries it to release."),
    common.Case("zj-eyeglass-02", "stale_data", "B", "check_stock", 1, "release_to_lab", 1,
                "The stock check reads the cached overnight snapshot, which still lists blank B160-6 on hand, so the lab releases a job for a blank it no longer has."),
    common.Case("zj-eyeglass-03", "wrong_tool_args", "A", "reserve_blank", 2, "release_to_lab", 1,
                "The second reservation passes eye OD again instead of OS, so the left-eye blank is never reserved."),
    common.Case("zj-eyeglass-04", "context_pollution", "B", "assemble_fitting_context", 1, "release_to_lab", 1,
                "The fitting context appends the previous walk-in's notes, and the model takes their PD 58 for this order's decentration."),
    common.Case("zj-eyeglass-05", "plan_error", "A", "plan_stages", 1, "release_to_lab", 1,
                "The stage plan leaves out the coating stage although the order asks for AR coating."),
]


@trajdebug.step(kind="input")
def receive_order(order: dict) -> dict:
    return dict(order)


@trajdebug.step(kind="parse")
def parse_rx(text: str) -> dict:
    out = {}
    for part in text.split(";"):
        part = part.strip()
        if part.startswith("PD"):
            out["pd_mm"] = float(part.split()[1])
            continue
        eye, sph, cyl, _, axis = part.split()
        out[eye] = {"sph": float(sph), "cyl": float(cyl), "axis": int(axis)}
    return out


@trajdebug.step(kind="tool")
def lookup_frame(frame: str) -> dict:
    return {"frame": frame, **FRAMES[frame]}


@trajdebug.step(kind="retrieval")
def retrieve_blanks(index: str) -> list:
    return [dict(b, index=index) for b in CATALOG[index]]


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> list:
    return json.loads(text)["stages"]


@trajdebug.step(kind="parse")
def parse_blank_choice(text: str) -> dict:
    return json.loads(text)


_RESERVED: dict[str, dict] = {}


@trajdebug.step(kind="tool")
def reserve_blank(order: str, eye: str, sku: str, base: float) -> dict:
    _RESERVED.setdefault(order, {})[eye] = {"sku": sku, "base": base}
    return {"order": order, "eye": eye, "sku": sku, "reserved": True}


@trajdebug.step(kind="agent")
def surfacing(order: str, rx: dict, blanks: list) -> dict:
    picks = {}
    for eye in ("OD", "OS"):
        text = common.sdk_chat("choose_blank", DESK, "Choose the blank for one eye from the catalog. Answer JSON {sku, base}.",
                               {"eye": eye, "rx": rx[eye], "blanks": blanks})
        pick = parse_blank_choice(text)
        arg_eye = "OD" if (eye == "OS" and kit.active("eyeglass.wrong_tool_args")) else eye
        with trajdebug.step("reserve_blank_call", kind="other", input={"eye": arg_eye, **pick}) as s:
            s.output = reserve_blank(order, arg_eye, pick["sku"], pick["base"])
        picks[eye] = pick
    return picks


@trajdebug.step(kind="other")
def assemble_fitting_context(order: dict, frame: dict, rx: dict) -> str:
    lines = [f"Order {order['order']}: PD {rx['pd_mm']}, frame {frame['frame']} box centre {frame['box_centre_mm']} mm."]
    if kit.active("eyeglass.context_pollution"):
        lines.append(PREVIOUS_NOTES)
    return "\n".join(lines)


@trajdebug.step(kind="parse")
def parse_decentration(text: str) -> dict:
    m = re.search(r"PD\s+([\d.]+).*?inset per eye is\s+([\d.]+)", text)
    return {"pd_mm": float(m.group(1)), "inset_mm": float(m.group(2))}


@trajdebug.step(kind="state")
def write_ticket(order: dict, stages: list, picks: dict, dec: dict) -> dict:
    ticket = {"order": order["order"], "stages": stages, "blanks": picks, "decentration": dec}
    trajdebug.current_run().state["ticket"] = ticket
    return ticket


@trajdebug.step(kind="tool")
def check_stock(skus: list) -> dict:
    table = STOCK_CACHED if kit.active("eyeglass.stale_data") else STOCK_TODAY
    return {"as_of": "2026-03-11T06:00" if table is STOCK_CACHED else "2026-03-12T09:40", "on_hand": {s: table[s] for s in skus}}


_SUPPLY: set = set()


@trajdebug.step(kind="tool")
def order_from_supplier(sku: str, qty: int) -> dict:
    _SUPPLY.add(sku)
    return {"po": f"PO-{sku}", "sku": sku, "qty": qty, "eta_days": 2}


@trajdebug.step(kind="tool")
def release_to_lab(order: dict, rx: dict, stock: dict) -> dict:
    t = trajdebug.current_run().state["ticket"]
    errs = []
    if order["coating"] != "none" and "coat" not in t["stages"]:
        errs.append(f"order requests {order['coating']} coating but the ticket has no coat stage")
    bases = {b["sku"]: b["base"] for b in CATALOG[order["index"]]}
    for eye, pick in t["blanks"].items():
        if bases.get(pick["sku"]) != pick["base"]:
            errs.append(f"{eye}: base curve {pick['base']} does not exist for blank {pick['sku']}")
        if STOCK_TODAY[pick["sku"]] <= 0 and pick["sku"] not in _SUPPLY:
            errs.append(f"{eye}: blank {pick['sku']} has 0 on hand and no supplier order")
    held = _RESERVED.get(order["order"], {})
    for eye in ("OD", "OS"):
        if eye not in held:
            errs.append(f"no blank reserved for {eye}")
    if abs(t["decentration"]["pd_mm"] - rx["pd_mm"]) > 0.5:
        errs.append(f"decentration uses PD {t['decentration']['pd_mm']} but the prescription PD is {rx['pd_mm']}")
    if errs:
        raise ValueError(f"lab release refused for {order['order']}: " + "; ".join(errs))
    return {"released": order["order"], "tray": f"T-{order['order'][-3:]}"}


@common.policy(DESK)
def _policy(messages: list[dict]) -> str:
    system, user = messages[0]["content"].lower(), messages[-1]["content"]
    if "plan the lab stages" in system:
        u = json.loads(user)
        stages = ["surface", "edge", "inspect"]
        if u["coating"] != "none" and not kit.active("eyeglass.plan_error"):
            stages.insert(2, "coat")
        return json.dumps({"stages": stages})
    if "choose the blank" in system:
        u = json.loads(user)
        power = u["rx"]["sph"] + u["rx"]["cyl"] / 2
        blank = next(b for b in u["blanks"] if b["range"][0] <= power <= b["range"][1])
        base = blank["base"]
        if u["eye"] == "OD" and kit.active("eyeglass.hallucinated_value"):
            base = 5.25
        return json.dumps({"sku": blank["sku"], "base": base})
    pd = float(re.findall(r"PD ([\d.]+)", user)[-1])
    box = float(re.search(r"box centre ([\d.]+)", user).group(1))
    return f"Using PD {pd} mm the inset per eye is {round((box - pd) / 2, 2)} mm."


def run_once(inp: dict, path) -> None:
    _RESERVED.pop(inp["order"], None)
    _SUPPLY.clear()
    with trajdebug.run(NAME, task=f"make glasses for order {inp['order']}", path=str(path)):
        order = receive_order(inp)
        rx = parse_rx(order["rx"])
        frame = lookup_frame(order["frame"])
        blanks = retrieve_blanks(order["index"])
        plan = common.sdk_chat("plan_stages", DESK, "Plan the lab stages for this order. Answer JSON {stages}.",
                               {"order": order["order"], "coating": order["coating"], "index": order["index"]})
        stages = parse_plan(plan)
        picks = surfacing(order["order"], rx, blanks)
        context = assemble_fitting_context(order, frame, rx)
        dec_text = common.sdk_chat("compute_decentration", DESK, "Compute the decentration inset from the fitting notes.", context)
        dec = parse_decentration(dec_text)
        write_ticket(order, stages, picks, dec)
        stock = check_stock(sorted({p["sku"] for p in picks.values()}))
        for sku, n in stock["on_hand"].items():
            if n <= 0:
                order_from_supplier(sku, 2)
        release_to_lab(order, rx, stock)
