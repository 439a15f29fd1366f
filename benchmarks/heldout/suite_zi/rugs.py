"""Rug weaving commissions (openai_agents route): a commission manager agent with tools and a dye specialist agent-as-tool."""
from __future__ import annotations

import json
import math

from agents import Agent, function_tool

from trajdebug.testing import Reply, tool_call

from .common import Case, agents_model, run_agents, tool_results
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "rug-commissions", "openai_agents", "rug weaving commissions", "jsonl"
SHAPE = "manager agent: design brief -> yarn stock per colour -> dye specialist (agent as tool, dye lot) -> knot count -> loom availability -> quote -> book loom"

DESIGNS = {
    "RC-51": {"design": "Heriz medallion", "width_cm": 200, "length_cm": 300, "kpsi": 120,
              "palette": {"MAD-12": 9.0, "IND-03": 6.5, "NAT-01": 12.0}},
    "RC-52": {"design": "Kilim stripe", "width_cm": 150, "length_cm": 220, "kpsi": 80,
              "palette": {"SAF-07": 4.0, "NAT-01": 7.0}},
    "RC-53": {"design": "Gabbeh field", "width_cm": 120, "length_cm": 180, "kpsi": 60,
              "palette": {"WAL-09": 5.0, "NAT-01": 4.0}},
    "RC-54": {"design": "Tree of life", "width_cm": 250, "length_cm": 350, "kpsi": 150,
              "palette": {"MAD-12": 14.0, "IND-03": 10.0, "SAF-07": 5.0}},
    "RC-55": {"design": "Runner, boteh", "width_cm": 80, "length_cm": 400, "kpsi": 100,
              "palette": {"IND-03": 6.0, "NAT-01": 5.0}},
    "RC-56": {"design": "Prayer rug", "width_cm": 90, "length_cm": 130, "kpsi": 140,
              "palette": {"MAD-12": 3.0, "NAT-01": 2.0}},
}
STOCK = {"MAD-12": 20.0, "IND-03": 4.0, "NAT-01": 40.0, "SAF-07": 2.5, "WAL-09": 8.0, "IND-44": 11.0}
LOOMS = [{"loom": "L-1", "width_cm": 160}, {"loom": "L-2", "width_cm": 240}, {"loom": "L-3", "width_cm": 300}]
MAINTENANCE = {"L-2": "2027-01-20"}
INPUTS = {"heriz": "Commission RC-51 for Mrs. Adler: please prepare and book the loom.",
          "kilim": "Commission RC-52 for the Harlow Gallery: please prepare and book the loom."}
REFS = ["Commission RC-53 for P. Nakamura: please prepare and book the loom.",
        "Commission RC-55 for the Ostrava Hotel: please prepare and book the loom.",
        "Commission RC-56 for D. Saleh: please prepare and book the loom.",
        "Commission RC-53 for the Vale Museum: please prepare and book the loom."]

CASES = [
    Case("rugs_book_args", "wrong_tool_args", "kilim", "generation fake-model", 10, "llm", "book_loom", 1,
         "The manager's last model turn calls book_loom with the width and length swapped."),
    Case("rugs_colour", "hallucinated_value", "heriz", "generation fake-model", 3, "llm", "book_loom", 1,
         "The manager asks for stock of a yarn code (IND-44) that is not in the design palette and carries it to the booking."),
    Case("rugs_dye", "subagent_wrong_entity", "heriz", "match_dye_lot", 1, "tool", "book_loom", 1,
         "The dye specialist matches the dye lot for another commission than the one it was asked about."),
    Case("rugs_stock", "format_drift", "kilim", "check_yarn_stock", 1, "tool", "book_loom", 1,
         "The yarn stock service starts answering kilograms as a decimal-comma text, which the manager reads as ten times the stock."),
    Case("rugs_looms", "swallowed_error", "heriz", "loom_availability", 1, "tool", "book_loom", 1,
         "The loom availability tool swallows a maintenance-feed error and lists a loom under maintenance as free."),
]


def _num(text) -> float:
    return float(str(text).replace(",", "").split()[0])


def policy(req):
    msgs = req.body.get("messages") or []
    system = next((m["content"] for m in msgs if m.get("role") == "system"), "")
    user = next((m["content"] for m in msgs if m.get("role") == "user"), "")
    done = tool_results(req)
    if system.startswith("You match dye lots"):
        if not done:
            req_d = json.loads(user) if user.strip().startswith("{") else {"commission": user.split()[1], "code": user.split()[-1]}
            return Reply(tool_calls=(tool_call("match_dye_lot", {"commission": req_d["commission"], "code": req_d["code"]}),))
        return done[-1][2]
    commission = user.split()[1]
    got = {}
    for name, args, res in done:
        got.setdefault(name, []).append((args, res))
    if "get_design_brief" not in got:
        return Reply(tool_calls=(tool_call("get_design_brief", {"commission": commission}),))
    brief = json.loads(got["get_design_brief"][0][1])
    codes = list(brief["palette"])
    if active("rugs_colour"):
        codes[1] = "IND-44"
    checked = [a["code"] for a, _ in got.get("check_yarn_stock", [])]
    for code in codes:
        if code not in checked:
            return Reply(tool_calls=(tool_call("check_yarn_stock", {"code": code}),))
    stock = {a["code"]: json.loads(r) for a, r in got.get("check_yarn_stock", [])}
    short = [c for c in codes if _num(stock[c]["kg"]) < brief["palette"].get(c, 0.0)]
    dyed = [a.get("input", "") for a, _ in got.get("dye_specialist", [])]
    for code in short:
        if not any(code in d for d in dyed):
            return Reply(tool_calls=(tool_call("dye_specialist", {"input": json.dumps({"commission": commission, "code": code})}),))
    if "compute_knot_count" not in got:
        return Reply(tool_calls=(tool_call("compute_knot_count", {"width_cm": brief["width_cm"], "length_cm": brief["length_cm"], "kpsi": brief["kpsi"]}),))
    if "loom_availability" not in got:
        return Reply(tool_calls=(tool_call("loom_availability", {"min_width_cm": brief["width_cm"]}),))
    looms = json.loads(got["loom_availability"][0][1])
    if "quote_commission" not in got:
        return Reply(tool_calls=(tool_call("quote_commission", {"knots": json.loads(got["compute_knot_count"][0][1])["knots"],
                                                                 "wool_kg": sum(brief["palette"].values())}),))
    if "book_loom" not in got:
        lots = [json.loads(r)["lot"] for _, r in got.get("dye_specialist", []) if r.strip().startswith("{")]
        w, length = brief["width_cm"], brief["length_cm"]
        if active("rugs_book_args"):
            w, length = length, w
        return Reply(tool_calls=(tool_call("book_loom", {
            "commission": commission, "loom": looms[0]["loom"], "width_cm": w, "length_cm": length,
            "yarn": {c: _num(stock[c]["kg"]) for c in codes}, "dye_lots": lots,
            "price": json.loads(got["quote_commission"][0][1])["price"]}),))
    return "The loom is booked: " + got["book_loom"][0][1]


@function_tool
def get_design_brief(commission: str) -> str:
    """The approved design brief of a commission."""
    return json.dumps(DESIGNS[commission])


@function_tool
def check_yarn_stock(code: str) -> str:
    """Kilograms of a dyed yarn in the store."""
    kg = STOCK[code]
    if active("rugs_stock"):
        return json.dumps({"code": code, "kg": f"{kg:.1f}".replace(".", ",") + " kg"})
    return json.dumps({"code": code, "kg": kg})


@function_tool
def match_dye_lot(commission: str, code: str) -> str:
    """Reserve a dye lot for a colour of a commission."""
    target = "RC-49" if active("rugs_dye") else commission
    return json.dumps({"lot": f"DL-{target[3:]}-{code}", "commission": target, "code": code})


@function_tool
def compute_knot_count(width_cm: int, length_cm: int, kpsi: int) -> str:
    """Total knots for a rug of this size at a knot density (knots per square inch)."""
    sq_in = (width_cm / 2.54) * (length_cm / 2.54)
    return json.dumps({"knots": int(sq_in * kpsi)})


@function_tool
def loom_availability(min_width_cm: int) -> str:
    """Looms at least this wide that are free now."""
    try:
        if active("rugs_looms"):
            raise ConnectionError("maintenance feed 503")
        blocked = set(MAINTENANCE)
    except ConnectionError:
        blocked = set()
    return json.dumps([lm for lm in LOOMS if lm["width_cm"] >= min_width_cm and lm["loom"] not in blocked])


@function_tool
def quote_commission(knots: int, wool_kg: float) -> str:
    """Price a commission from its knots and wool."""
    return json.dumps({"price": round(knots / 1000 * 2.1 + wool_kg * 38, 2), "currency": "EUR"})


def _book(commission: str, loom: str, width_cm: int, length_cm: int, yarn: dict, dye_lots: list, price: float) -> str:
    d = DESIGNS[commission]
    lm = next(x for x in LOOMS if x["loom"] == loom)
    errs = []
    if width_cm > lm["width_cm"]:
        errs.append(f"rug width {width_cm} cm exceeds loom {loom} weaving width {lm['width_cm']} cm")
    if loom in MAINTENANCE:
        errs.append(f"loom {loom} is under maintenance until {MAINTENANCE[loom]}")
    for code in yarn:
        if code not in d["palette"]:
            errs.append(f"yarn {code} is not in the palette of design {commission}")
    for code, need in d["palette"].items():
        have = STOCK.get(code, 0.0)
        lots = [x for x in dye_lots if x.endswith(code)]
        if have < need and not lots:
            errs.append(f"yarn {code}: {need} kg needed, {have} kg in stock and no dye lot reserved")
    for x in dye_lots:
        if not x.startswith(f"DL-{commission[3:]}-"):
            errs.append(f"dye lot {x} is reserved for another commission")
    if errs:
        raise ValueError("loom booking refused: " + "; ".join(errs))
    return json.dumps({"booking": f"LB-{commission[3:]}-{loom}", "weeks": math.ceil(d["width_cm"] * d["length_cm"] * d["kpsi"] / 400000)})


book_loom = function_tool(_book, name_override="book_loom", failure_error_function=None, strict_mode=False,
                          description_override="Book a loom for a commission; the workshop checks the booking.")


def build(server):
    model = agents_model(server)
    dyer = Agent(name="dye_specialist", instructions="You match dye lots for short colours.", model=model, tools=[match_dye_lot])
    return Agent(name="commission_manager", instructions="You prepare rug commissions for the looms.", model=model,
                 tools=[get_design_brief, check_yarn_stock,
                        dyer.as_tool(tool_name="dye_specialist", tool_description="Ask the dye specialist for a dye lot."),
                        compute_knot_count, loom_availability, quote_commission, book_loom])


def record(server, inp, path):
    run_agents(AGENT, build(server), server, inp, path, task=inp)
