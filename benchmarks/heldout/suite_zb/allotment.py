"""Allotment plot allocation (LangGraph StateGraph + ChatOpenAI, trajdebug LangChain tracer)."""
from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

from .kit import active
from .routes import read_op

NAME = "allotment-allocator"
ROUTE = "langgraph"
DOMAIN = "allotment plot allocation"
SHAPE = "request -> waiting list -> vacant plots per size -> rank -> per-applicant rules/eligibility/parse loop -> inspection subgraph -> offers (state) -> send offer letters (rent, validation)"
SYSTEM = "You help the allotment society secretary allocate plots. Answer in JSON only."
BOROUGH = {"BS5", "BS6", "BS7"}


class OfferLettersRejected(Exception):
    pass


Rejected = OfferLettersRejected


def _a(aid, name, joined, postcode, wants):
    return {"id": aid, "name": name, "joined": joined, "postcode": postcode, "wants": wants}


def _p(plot, size, area, hazard=None):
    return {"plot": plot, "size": size, "area_m2": area, "hazard": hazard}


INPUTS = {
    "ashley": {"site": "Ashley Vale", "applicants": [
        _a("A-104", "Rosa Diaz", "2022-05-14", "BS5", "half"), _a("A-097", "Imran Butt", "2021-03-02", "BS6", "full"),
        _a("A-118", "Gwen Pryce", "2023-01-20", "BS8", "half"), _a("A-121", "Leo Marsh", "2023-06-02", "BS7", "half"),
        _a("A-130", "Nia Roberts", "2024-02-11", "BS5", "full")],
        "plots": [_p("7", "full", 250, "asbestos shed reported"), _p("12A", "half", 125), _p("14B", "full", 250),
                  _p("3C", "half", 125), _p("9", "half", 125)]},
    "eastville": {"site": "Eastville", "applicants": [
        _a("E-210", "Kofi Mensah", "2021-09-30", "BS5", "full"), _a("E-214", "Ana Lima", "2022-01-15", "BS6", "half"),
        _a("E-220", "Will Shaw", "2022-11-03", "BS7", "half"), _a("E-233", "Jia Wu", "2023-08-21", "BS9", "full")],
        "plots": [_p("7", "full", 250), _p("2", "half", 125), _p("5B", "half", 125), _p("11", "full", 250, "flooded corner")]},
    "r1": {"site": "Stapleton", "applicants": [_a("S-01", "Ben Ford", "2021-02-02", "BS5", "half"),
                                               _a("S-04", "Cat Hill", "2022-07-07", "BS6", "full")],
           "plots": [_p("1", "half", 125), _p("4", "full", 250)]},
    "r2": {"site": "Greenbank", "applicants": [_a("G-11", "Dan Price", "2020-10-10", "BS7", "full"),
                                               _a("G-15", "Eve Moss", "2021-12-01", "BS5", "half"),
                                               _a("G-19", "Fay Lowe", "2023-03-03", "BS6", "half")],
           "plots": [_p("8", "full", 250), _p("10A", "half", 125), _p("10B", "half", 125, "broken water trough")]},
    "r3": {"site": "Narroways", "applicants": [_a("N-30", "Gus Vale", "2022-04-04", "BS6", "half"),
                                               _a("N-31", "Hana Ito", "2022-09-09", "BS7", "half")],
           "plots": [_p("6", "half", 125), _p("6B", "half", 125)]},
    "r4": {"site": "Purdown", "applicants": [_a("P-50", "Ian Cole", "2021-05-05", "BS5", "full"),
                                             _a("P-52", "Jo Kerr", "2022-02-02", "BS9", "half"),
                                             _a("P-57", "Kim Noor", "2023-05-05", "BS6", "half")],
           "plots": [_p("2", "full", 250), _p("3", "half", 125)]},
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    dict(id="zb_allot_1", fault="al1", kind="wrong_retrieval", input="ashley", root=("lookup_tenancy_rules", 3),
         failure=("send_offer_letters", 1),
         description="The tenancy-rules search returns the county's five-mile residency rule instead of the society's borough-only rule, so an out-of-borough applicant is found eligible."),
    dict(id="zb_allot_2", fault="al2", kind="bad_memory_write", input="ashley", root=("record_offers", 1),
         failure=("send_offer_letters", 1),
         description="The offer register is written keyed by applicant with the plot list shifted, so one applicant holds two plots and another none."),
    dict(id="zb_allot_3", fault="al3", kind="tool_ignores_argument", input="eastville", root=("fetch_vacant_plots", 1),
         failure=("send_offer_letters", 1),
         description="The vacant-plots API ignores the size filter and returns full plots in the half-plot query."),
    dict(id="zb_allot_4", fault="al4", kind="truncated_result", input="ashley", root=("fetch_waiting_list", 1),
         failure=("send_offer_letters", 1),
         description="The waiting-list API returns only its first page, dropping the longest-waiting applicant without saying so."),
    dict(id="zb_allot_5", fault="al5", kind="subagent_wrong_entity", input="ashley", root=("brief_site_inspector", 1),
         failure=("send_offer_letters", 1),
         description="The site inspector is briefed with the neighbouring site, so it inspects Eastville's plot 7 and clears Ashley Vale's hazardous plot 7."),
]


def task(inp: dict) -> str:
    return f"allocate vacant plots at {inp['site']} from the waiting list"


class AllotState(TypedDict, total=False):
    request: dict
    applicants: list
    plots: list
    queue: list
    eligible: Annotated[list, operator.add]
    inspections: list
    offers: dict
    rents: dict
    result: dict


def initial_state(inp: dict) -> dict:
    return {"request": {"site": inp["site"]}}


def _site(site: str) -> dict:
    return next(v for v in INPUTS.values() if v["site"] == site)


def _waiting_list(site: str, page_size: int) -> dict:
    rows = sorted(_site(site)["applicants"], key=lambda a: a["id"], reverse=True)
    if active("al4"):
        return {"site": site, "applicants": rows[:3]}
    return {"site": site, "applicants": rows}


def _vacant(site: str, size: str) -> list:
    plots = [dict(p) for p in _site(site)["plots"]]
    if not active("al3"):
        plots = [p for p in plots if p["size"] == size]
    return [{k: p[k] for k in ("plot", "area_m2")} for p in plots]


RULES = [
    {"doc": "Bristol Allotment Society rules s.4", "text": "Plots are offered only to residents of postcode districts BS5, BS6 and BS7."},
    {"doc": "County allotments guidance 2019 s.2", "text": "Applicants living within five miles of the site may be offered a plot."},
]


def _rules(query: str) -> list:
    return [RULES[1], RULES[0]] if active("al1") and "BS8" in query else list(RULES)


def _parse_eligibility(answer: dict) -> dict:
    return {"id": answer["applicant"], "eligible": answer["decision"].strip().lower().startswith("yes")}


def _inspect(site: str, plot: str) -> dict:
    p = next((x for x in _site(site)["plots"] if x["plot"] == plot), None)
    return {"site": site, "plot": plot, "hazard": p["hazard"] if p else None, "inspected": "2026-03-02",
            "note": "walked the plot" if p else "plot not on this site's survey sheet"}


def _record(matches: list) -> dict:
    if active("al2"):
        ids = [m["applicant"] for m in matches]
        return {m["plot"]: ids[max(i - 1, 0)] for i, m in enumerate(matches)}
    return {m["plot"]: m["applicant"] for m in matches}


def _rents(offers: dict, plots: list) -> dict:
    area = {p["plot"]: p["area_m2"] for p in plots}
    return {plot: round(area[plot] * 0.32, 2) for plot in offers}


def _send(site: str, offers: dict, rents: dict) -> dict:
    s = _site(site)
    apps = {a["id"]: a for a in s["applicants"]}
    plots = {p["plot"]: p for p in s["plots"]}
    for plot, aid in offers.items():
        a, p = apps[aid], plots[plot]
        if a["postcode"] not in BOROUGH:
            raise OfferLettersRejected(f"422 Unprocessable Entity: applicant {aid} postcode {a['postcode']} is outside the "
                                       "society's area (BS5, BS6, BS7)")
        if p["size"] != a["wants"]:
            raise OfferLettersRejected(f"422 Unprocessable Entity: plot {plot} is a {p['size']} plot ({p['area_m2']} m2); "
                                       f"applicant {aid} is on the {a['wants']}-plot list")
        if p["hazard"]:
            raise OfferLettersRejected(f"409 Conflict: plot {plot} at {site} has an open hazard report ({p['hazard']}) "
                                       "and cannot be offered")
    counts: dict = {}
    for aid in offers.values():
        counts[aid] = counts.get(aid, 0) + 1
    for aid, n in counts.items():
        if n > 1:
            raise OfferLettersRejected(f"409 Conflict: applicant {aid} would receive {n} offer letters")
    offered = set(offers.values())
    for size in ("half", "full"):
        waiting = sorted((a for a in s["applicants"] if a["wants"] == size and a["postcode"] in BOROUGH),
                         key=lambda a: a["joined"])
        n = sum(1 for aid in offered if apps[aid]["wants"] == size)
        for a in waiting[:n]:
            if a["id"] not in offered:
                raise OfferLettersRejected(f"409 Conflict: offers skip applicant {a['id']} (joined {a['joined']}), "
                                           f"who is ahead on the {size}-plot waiting list")
    return {"status": 202, "letters": len(offers), "site": site}


def policy(request):
    op, p = read_op(request)
    if op == "rank_applicants":
        return json.dumps({"order": [a["id"] for a in sorted(p["applicants"], key=lambda a: a["joined"])]})
    if op == "check_eligibility":
        rule = p["rules"][0]["text"]
        pc = p["applicant"]["postcode"]
        ok = pc in rule if "postcode districts" in rule else True
        return json.dumps({"applicant": p["applicant"]["id"], "decision": ("Yes - " if ok else "No - ") + p["rules"][0]["doc"]})
    if op == "brief_site_inspector":
        site = p["site"]
        if active("al5"):
            site = "Eastville"
        return json.dumps({"site": site, "plots": p["plots"]})
    if op == "summarise_inspection":
        return json.dumps({"clear": [r["plot"] for r in p["reports"] if not r["hazard"]],
                           "held": [r["plot"] for r in p["reports"] if r["hazard"]]})
    raise ValueError(op)


def build_graph(h):
    from langgraph.graph import END, START, StateGraph

    def load(st):
        req = h.step("read_allocation_request", "input", lambda request: request, request=st["request"])
        wl = h.tool("fetch_waiting_list", {"site": req["site"], "page_size": 50}, _waiting_list)
        plots = []
        for size in ("half", "full"):
            rows = h.tool("fetch_vacant_plots", {"site": req["site"], "size": size}, _vacant)
            plots += [{**r, "size": size} for r in rows if r["plot"] not in {p["plot"] for p in plots}]
        return {"request": req, "applicants": wl["applicants"], "plots": plots}

    def rank(st):
        order = h.llm("rank_applicants", {"applicants": st["applicants"]}, SYSTEM)["order"]
        return {"queue": order}

    def eligibility(st):
        aid = st["queue"][0]
        a = next(x for x in st["applicants"] if x["id"] == aid)
        rules = h.retrieve("lookup_tenancy_rules", f"residency rule for applicant in {a['postcode']}", _rules)
        answer = h.llm("check_eligibility", {"applicant": a, "rules": rules}, SYSTEM)
        verdict = h.step("parse_eligibility", "parse", _parse_eligibility, answer=answer)
        return {"queue": st["queue"][1:], "eligible": [verdict] if verdict["eligible"] else []}

    def inspection_graph():
        def brief(st):
            b = h.llm("brief_site_inspector", {"site": st["request"]["site"], "plots": [p["plot"] for p in st["plots"]]},
                      SYSTEM)
            reports = [h.tool("inspect_plot", {"site": b["site"], "plot": pl}, _inspect) for pl in b["plots"]]
            return {"inspections": reports}

        def summarise(st):
            s = h.llm("summarise_inspection", {"reports": st["inspections"]}, SYSTEM)
            return {"inspections": [r for r in st["inspections"] if r["plot"] in s["clear"]]}

        g = StateGraph(AllotState)
        g.add_node("inspect", brief)
        g.add_node("summarise", summarise)
        g.add_edge(START, "inspect")
        g.add_edge("inspect", "summarise")
        g.add_edge("summarise", END)
        return g.compile()

    sub = inspection_graph()

    def inspect(st):
        out = sub.invoke({"request": st["request"], "plots": st["plots"]})
        return {"inspections": out["inspections"]}

    def offers(st):
        clear = {r["plot"] for r in st["inspections"]}
        ids = [e["id"] for e in st["eligible"]]
        apps = {a["id"]: a for a in st["applicants"]}
        matches, used = [], set()
        for aid in ids:
            for p in st["plots"]:
                if p["plot"] in clear and p["plot"] not in used and p["size"] == apps[aid]["wants"]:
                    matches.append({"plot": p["plot"], "applicant": aid})
                    used.add(p["plot"])
                    break
        rec = h.step("record_offers", "state", _record, matches=matches)
        return {"offers": rec}

    def send(st):
        return {"result": _send(st["request"]["site"], st["offers"], _rents(st["offers"], st["plots"]))}

    g = StateGraph(AllotState)
    for n, f in [("load", load), ("rank", rank), ("eligibility", eligibility), ("inspect", inspect),
                 ("offers", offers), ("send_offer_letters", send)]:
        g.add_node(n, f)
    g.add_edge(START, "load")
    g.add_edge("load", "rank")
    g.add_edge("rank", "eligibility")
    g.add_conditional_edges("eligibility", lambda st: "eligibility" if st["queue"] else "inspect", ["eligibility", "inspect"])
    g.add_edge("inspect", "offers")
    g.add_edge("offers", "send_offer_letters")
    g.add_edge("send_offer_letters", END)
    return g.compile()
