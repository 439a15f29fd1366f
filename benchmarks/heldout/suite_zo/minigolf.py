"""Mini golf course (langgraph route): survey worn holes, quote new carpet through a supplier sub-graph, raise the PO."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from .common import Case, last_user_text, system_text
from .kit import active

AGENT = "minigolf-refurb-planner"
ROUTE = "langgraph"
EXT = "jsonl"
BASE_URL = ""


def _holes(seed: int) -> list[dict]:
    out = []
    for n in range(1, 19):
        length = 18 + (n * seed) % 14
        width = 4 + (n + seed) % 3
        wear = (n * 7 + seed * 3) % 10
        out.append({"hole": n, "length_ft": length, "width_ft": width, "wear": wear})
    return out


COURSES = {
    "Pirate Cove York": {"account": "ACC-YORK-07", "holes": _holes(3), "budget_gbp": 3000},
    "Pirate Cove Leeds": {"account": "ACC-LEEDS-02", "holes": _holes(5), "budget_gbp": 3000},
    "Jungle Putt Hull": {"account": "ACC-HULL-11", "holes": _holes(7), "budget_gbp": 3200},
    "Dino Links Ripon": {"account": "ACC-RIPON-04", "holes": _holes(4), "budget_gbp": 2800},
    "Castle Greens Selby": {"account": "ACC-SELBY-09", "holes": _holes(6), "budget_gbp": 3000},
}
ACCOUNTS_BY_PREFIX = [("Pirate Cove", "Pirate Cove Leeds"), ("Pirate Cove", "Pirate Cove York")]

INPUTS = {
    "york_march": {"course": "Pirate Cove York", "closure": ["2026-03-09", "2026-03-10"], "survey_date": "2026-03-02", "sku": "CT-GRN-12"},
    "hull_april": {"course": "Jungle Putt Hull", "closure": ["2026-04-13", "2026-04-14"], "survey_date": "2026-04-06", "sku": "CT-GRN-12"},
    "ref_leeds": {"course": "Pirate Cove Leeds", "closure": ["2026-02-16", "2026-02-17"], "survey_date": "2026-02-09", "sku": "CT-GRN-12"},
    "ref_ripon": {"course": "Dino Links Ripon", "closure": ["2026-05-11"], "survey_date": "2026-05-04", "sku": "CT-BLU-08"},
    "ref_selby": {"course": "Castle Greens Selby", "closure": ["2026-06-01", "2026-06-02"], "survey_date": "2026-05-25", "sku": "CT-GRN-12"},
    "ref_hull_june": {"course": "Jungle Putt Hull", "closure": ["2026-06-22", "2026-06-23"], "survey_date": "2026-06-15", "sku": "CT-BLU-08"},
}
PRICE_PER_M2 = {"CT-GRN-12": 24.0, "CT-BLU-08": 21.5}
STOCK_M2 = {"CT-GRN-12": 40, "CT-BLU-08": 400}
ALTERNATE = {"CT-GRN-12": "CT-BLU-08", "CT-BLU-08": "CT-GRN-12"}


class SupplierError(Exception):
    """The carpet supplier's order API refused the purchase order."""


def policy(request):
    sys_t, user = system_text(request), last_user_text(request)
    if "choose holes to resurface" in sys_t:
        holes = json.loads(user.split("SURVEY:", 1)[1])
        worst = sorted((h for h in holes if h["wear"] >= 7), key=lambda h: (-h["wear"], h["hole"]))[:5]
        return "RESURFACE: " + ", ".join(str(h["hole"]) for h in sorted(worst, key=lambda h: h["hole"]))
    if "accept or decline a quote" in sys_t:
        q = json.loads(user.split("QUOTE:", 1)[1])
        return f"ACCEPT {q['quote']}" if q["total_gbp"] > 0 else "DECLINE"
    if "draft the purchase order" in sys_t:
        f = json.loads(user.split("FACTS:", 1)[1])
        po = {"account": f["account"], "quote": f["quote"], "sku": f["sku"], "m2": f["m2"],
              "total_gbp": f["total_gbp"], "deliver_by": f["closure"][0], "crew_booking": f["crew"]["booking"]}
        if active("minigolf.hv_discount"):
            po["discount_code"] = "SPRING15"
        return json.dumps(po)
    return "?"


@tool
def hole_survey(course: str) -> list[dict]:
    """Wear survey of every hole on a course."""
    return [dict(h) for h in COURSES[course]["holes"]]


@tool
def laser_measure(course: str, hole: int) -> dict:
    """Laser-measured playing surface of one hole, in feet."""
    h = COURSES[course]["holes"][hole - 1]
    return {"hole": hole, "length_ft": h["length_ft"], "width_ft": h["width_ft"]}


@tool
def turf_quote(account: str, sku: str, m2: float) -> dict:
    """Supplier quote for carpet."""
    return {"quote": f"QT-{account[4:]}-{sku[-2:]}-{int(m2)}", "account": account, "sku": sku, "m2": m2,
            "total_gbp": round(m2 * PRICE_PER_M2[sku], 2)}


@tool
def book_crew(course: str, date: str, hours: float) -> dict:
    """Book the installation crew."""
    return {"booking": f"CB-{course.split()[-1].upper()}-{date.replace('-', '')}", "date": date, "hours": hours}


def _stock_api(sku: str) -> dict:
    if active("minigolf.se_stock"):
        raise TimeoutError("stock service timed out after 5s")
    return {"sku": sku, "available_m2": STOCK_M2[sku]}


class RefurbState(TypedDict, total=False):
    request: dict
    survey: list
    selection_text: str
    selected: list
    measured: list
    area_m2: float
    stock: dict
    sku: str
    account: str
    quote: dict
    decision: str
    crew: dict
    po_text: str
    receipt: dict


def build(llm: Any):
    def intake(state: RefurbState) -> dict:
        return {"request": dict(state["request"]), "measured": []}

    def survey(state: RefurbState, config) -> dict:
        return {"survey": hole_survey.invoke({"course": state["request"]["course"]}, config=config)}

    def select(state: RefurbState, config) -> dict:
        msg = llm.invoke([("system", "You choose holes to resurface: wear 7 or more, at most five."),
                          ("user", "SURVEY:" + json.dumps(state["survey"]))], config=config)
        return {"selection_text": msg.content}

    def parse_selection(state: RefurbState) -> dict:
        return {"selected": [int(x) for x in re.findall(r"\d+", state["selection_text"].split(":", 1)[1])]}

    def measure(state: RefurbState, config) -> dict:
        hole = state["selected"][len(state["measured"])]
        m = laser_measure.invoke({"course": state["request"]["course"], "hole": hole}, config=config)
        return {"measured": state["measured"] + [m]}

    def more(state: RefurbState) -> str:
        return "measure" if len(state["measured"]) < len(state["selected"]) else "sum_area"

    def sum_area(state: RefurbState) -> dict:
        ft2 = sum(m["length_ft"] * m["width_ft"] for m in state["measured"])
        factor = 0.3048 if active("minigolf.ue_area") else 0.3048 ** 2
        return {"area_m2": round(ft2 * factor * 1.1, 1)}  # 10% waste allowance

    def stock(state: RefurbState) -> dict:
        sku = state["request"]["sku"]
        try:
            level = _stock_api(sku)
        except TimeoutError:
            level = {"sku": sku, "available_m2": 9999}
        if level["available_m2"] < state["area_m2"]:
            return {"stock": level, "sku": ALTERNATE[sku]}
        return {"stock": level, "sku": sku}

    def account_lookup(state: RefurbState) -> dict:
        course = state["request"]["course"]
        if active("minigolf.swe_account"):
            for prefix, name in ACCOUNTS_BY_PREFIX:
                if course.startswith(prefix):
                    course = name
                    break
        return {"account": COURSES[course]["account"]}

    def quote(state: RefurbState, config) -> dict:
        return {"quote": turf_quote.invoke({"account": state["account"], "sku": state["sku"],
                                            "m2": state["area_m2"]}, config=config)}

    def confirm(state: RefurbState, config) -> dict:
        msg = llm.invoke([("system", "You accept or decline a quote for the course."),
                          ("user", "QUOTE:" + json.dumps(state["quote"]))], config=config)
        return {"decision": msg.content}

    sub = StateGraph(RefurbState)
    sub.add_node("account_lookup", account_lookup)
    sub.add_node("quote", quote)
    sub.add_node("confirm", confirm)
    sub.add_edge(START, "account_lookup")
    sub.add_edge("account_lookup", "quote")
    sub.add_edge("quote", "confirm")
    sub.add_edge("confirm", END)
    supplier_desk = sub.compile()

    def crew(state: RefurbState, config) -> dict:
        req = state["request"]
        date = req["survey_date"] if active("minigolf.wta_crew") else req["closure"][0]
        hours = round(state["area_m2"] / 6, 1)
        return {"crew": book_crew.invoke({"course": req["course"], "date": date, "hours": hours}, config=config)}

    def draft_po(state: RefurbState, config) -> dict:
        req = state["request"]
        facts = {"account": state["account"], "quote": state["quote"]["quote"], "sku": state["sku"], "m2": state["area_m2"],
                 "total_gbp": state["quote"]["total_gbp"], "closure": req["closure"], "crew": state["crew"]}
        msg = llm.invoke([("system", "You draft the purchase order as JSON."), ("user", "FACTS:" + json.dumps(facts))],
                         config=config)
        return {"po_text": msg.content}

    def submit(state: RefurbState) -> dict:
        req = state["request"]
        course = COURSES[req["course"]]
        po = json.loads(state["po_text"])
        errs = []
        if po["account"] != course["account"]:
            errs.append(f"account {po['account']} is not the ordering site for {req['course']} ({course['account']})")
        if po["total_gbp"] > course["budget_gbp"]:
            errs.append(f"PO total GBP {po['total_gbp']:.2f} exceeds the approved budget GBP {course['budget_gbp']}")
        if po["m2"] > STOCK_M2[po["sku"]]:
            errs.append(f"{po['sku']}: {po['m2']} m2 ordered, {STOCK_M2[po['sku']]} m2 in stock; back-order lead time 6 weeks")
        if "discount_code" in po:
            errs.append(f"discount code {po['discount_code']} is not valid for account {po['account']}")
        crew_date = po["crew_booking"].rsplit("-", 1)[1]
        if crew_date not in {d.replace("-", "") for d in req["closure"]}:
            errs.append(f"crew booking {po['crew_booking']} is outside the closure {req['closure'][0]}..{req['closure'][-1]}")
        if errs:
            raise SupplierError("422 Unprocessable Entity from orders.turfsupply.example: " + json.dumps({"errors": errs}))
        return {"receipt": {"po": f"PO-{po['quote']}", "status": "accepted"}}

    g = StateGraph(RefurbState)
    for name, fn in [("intake", intake), ("survey", survey), ("select", select), ("parse_selection", parse_selection),
                     ("measure", measure), ("sum_area", sum_area), ("stock", stock), ("supplier_desk", supplier_desk),
                     ("crew", crew), ("draft_po", draft_po), ("submit", submit)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    for a, b in [("intake", "survey"), ("survey", "select"), ("select", "parse_selection"), ("parse_selection", "measure")]:
        g.add_edge(a, b)
    g.add_conditional_edges("measure", more, {"measure": "measure", "sum_area": "sum_area"})
    for a, b in [("sum_area", "stock"), ("stock", "supplier_desk"), ("supplier_desk", "crew"), ("crew", "draft_po"),
                 ("draft_po", "submit")]:
        g.add_edge(a, b)
    g.add_edge("submit", END)
    return g.compile()


def record(key: str, path: Path) -> None:
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    req = INPUTS[key]
    llm = ChatOpenAI(base_url=BASE_URL, api_key="local-test", model="fake-model", max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"resurface worn holes at {req['course']}")
    try:
        build(llm).invoke({"request": req}, config={"callbacks": [tracer], "recursion_limit": 60})
    except SupplierError:
        pass


REFS = ["ref_leeds", "ref_ripon", "ref_selby", "ref_hull_june"]


def _c(n, kind, fid, key, root, occ, desc):
    return Case(f"zo_minigolf_{n}", AGENT, ROUTE, kind, fid, key, root, occ, "submit", 1, desc)


CASES = [
    _c(1, "unit_error", "minigolf.ue_area", "hull_april", "sum_area", 1,
       "sum_area converts square feet with the linear factor 0.3048, more than tripling the carpet area and the PO total."),
    _c(2, "subagent_wrong_entity", "minigolf.swe_account", "york_march", "account_lookup", 1,
       "the supplier sub-graph resolves 'Pirate Cove York' by prefix to the Leeds site's account and quotes for it."),
    _c(3, "wrong_tool_args", "minigolf.wta_crew", "york_march", "book_crew", 1,
       "the crew node books the installers on the survey date instead of the first closure day."),
    _c(4, "swallowed_error", "minigolf.se_stock", "hull_april", "stock", 1,
       "the stock node treats a stock-service timeout as 9999 m2 available, so an order above stock goes ahead."),
    _c(5, "hallucinated_value", "minigolf.hv_discount", "hull_april", "ChatOpenAI", 3,
       "the purchase-order model adds a discount code SPRING15 that nothing in its facts holds."),
]
