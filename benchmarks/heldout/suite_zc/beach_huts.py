"""Beach hut rentals (langgraph route): a booking request is read, routed to a desk, matched to a hut, priced, booked."""

from __future__ import annotations

import json
import operator
import re
from typing import Annotated, Any, TypedDict

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from .common import Case
from .kit import active

AGENT = "beach-hut-rentals"
ROUTE = "langgraph"
EXT = "jsonl"

INPUTS = {
    "westbay": {"request": "Family of 6 would like a beach hut at Westbay from 2027-07-12 for 7 nights."},
    "sandend": {"request": "Two adults want a hut at Sandend from 2027-08-02 for 3 nights."},
}
REFS = [
    {"request": "Group of 5 wants a beach hut at Westbay from 2027-06-07 for 7 nights."},
    {"request": "Three friends want a hut at Sandend from 2027-09-13 for 2 nights."},
    {"request": "Family of 4 would like a beach hut at Westbay from 2027-08-23 for 4 nights."},
    {"request": "Couple wants a hut at Sandend from 2027-05-17 for 10 nights."},
]

CASES = [
    Case("zc11", "zc-bh-1", "wrong_tool_args", "westbay", ("ChatOpenAI", 2), ("book_hut", 1),
         "The model asks hut_availability for 1 night instead of the 7 requested, so it offers a hut that is taken later in the week."),
    Case("zc12", "zc-bh-2", "tool_ignores_argument", "westbay", ("hut_availability", 1), ("book_hut", 1),
         "hut_availability ignores min_capacity and lists 4-berth huts first, so a 4-berth hut is chosen for a party of 6."),
    Case("zc13", "zc-bh-3", "truncated_result", "sandend", ("fetch_tariff_page", 1), ("apply_rate", 1),
         "The tariff lookup returns only the first page of the rate card and says there is no more, so the chosen hut has no rate."),
    Case("zc14", "zc-bh-4", "format_drift", "sandend", ("ChatOpenAI", 1), ("book_hut", 1),
         "The model writes check_in as 02/08/2027 instead of ISO 2027-08-02, and the date passes through to the booking call."),
    Case("zc15", "zc-bh-5", "wrong_routing", "westbay", ("route_request", 1), ("book_hut", 1),
         "route_request sends a 7-night stay to the day-hire desk, which prices it on a daily basis."),
]

HUTS = {
    "Westbay": [{"hut": "WB-03", "berths": 4}, {"hut": "WB-07", "berths": 4}, {"hut": "WB-12", "berths": 6},
                {"hut": "WB-15", "berths": 8}],
    "Sandend": [{"hut": "SE-01", "berths": 2}, {"hut": "SE-04", "berths": 4}, {"hut": "SE-09", "berths": 4}],
}
TAKEN = {("WB-12", "2027-07-15"), ("WB-15", "2027-06-09")}
TARIFF = {  # nightly rate, listed by hut on pages of 4
    "Westbay": {"base": 55.0, "rates": {"WB-01": 50.0, "WB-02": 50.0, "WB-03": 60.0, "WB-07": 60.0,
                                        "WB-12": 95.0, "WB-15": 120.0}},
    "Sandend": {"base": 40.0, "rates": {"SA-01": 38.0, "SA-02": 38.0, "SA-05": 52.0, "SA-06": 52.0, "SE-01": 45.0, "SE-02": 45.0, "SE-03": 48.0, "SE-04": 70.0,
                                        "SE-09": 72.0}},
}


def _dates(check_in: str, nights: int) -> list[str]:
    if "/" in check_in:  # the availability search also takes the day-first form
        d, m, y = (int(x) for x in check_in.split("/"))
    else:
        y, m, d = (int(x) for x in check_in.split("-"))
    return [f"{y}-{m:02d}-{d + i:02d}" for i in range(nights)]


def policy(request):
    messages = request.body["messages"]
    last = messages[-1]
    content = last.get("content") or ""
    if last["role"] == "user" and content.startswith("Extract the booking"):
        text = content.split("\n", 1)[1]
        check_in = re.search(r"from (\d{4}-\d\d-\d\d)", text).group(1)
        if active("zc-bh-4"):
            y, m, d = check_in.split("-")
            check_in = f"{d}/{m}/{y}"
        m = re.search(r"of (\d+)", text)
        guests = int(m.group(1)) if m else {"Two": 2, "Three": 3, "Couple": 2}.get(text.split()[0], 2)
        return json.dumps({"site": re.search(r"at (\w+)", text).group(1), "check_in": check_in,
                           "nights": int(re.search(r"for (\d+) nights", text).group(1)), "guests": guests})
    if last["role"] == "user" and content.startswith("Find a hut"):
        ask = json.loads(content.split("\n", 1)[1])
        nights = 1 if active("zc-bh-1") else ask["nights"]
        return Reply(tool_calls=(tool_call("hut_availability", {"site": ask["site"], "check_in": ask["check_in"],
                                                                "nights": nights, "min_capacity": ask["guests"]}),))
    if last["role"] == "tool":
        huts = json.loads(content)
        return json.dumps({"choice": huts[0]["hut"] if huts else None})
    return "No answer."


@tool
def hut_availability(site: str, check_in: str, nights: int, min_capacity: int) -> list[dict]:
    """List huts at a site free for every night of a stay, with at least min_capacity berths."""
    free = []
    for hut in HUTS[site]:
        if not active("zc-bh-2") and hut["berths"] < min_capacity:
            continue
        if any((hut["hut"], day) in TAKEN for day in _dates(check_in, nights)):
            continue
        free.append(hut)
    return sorted(free, key=lambda h: h["berths"])


@tool
def fetch_tariff_page(site: str, page: int) -> dict:
    """One page (4 entries) of a site's nightly rate card."""
    items = sorted(TARIFF[site]["rates"].items())
    chunk = items[(page - 1) * 4: page * 4]
    more = page * 4 < len(items)
    if active("zc-bh-3"):
        more = False
    return {"site": site, "base": TARIFF[site]["base"], "rates": dict(chunk), "has_more": more}


class BookingRejected(Exception):
    pass


class TariffError(BookingRejected):
    pass


@tool
def book_hut(hut: str, site: str, check_in: str, nights: int, guests: int, rate_basis: str, total: float) -> dict:
    """Book a hut (the council's booking API)."""
    if not re.fullmatch(r"\d{4}-\d\d-\d\d", check_in):
        raise BookingRejected(f'400 Bad Request: {{"field": "check_in", "message": "expected YYYY-MM-DD, got {check_in}"}}')
    berths = next(h["berths"] for h in HUTS[site] if h["hut"] == hut)
    if berths < guests:
        raise BookingRejected(f'409 Conflict: {{"message": "hut {hut} sleeps {berths}, party of {guests}"}}')
    clash = [d for d in _dates(check_in, nights) if (hut, d) in TAKEN]
    if clash:
        raise BookingRejected(f'409 Conflict: {{"message": "hut {hut} is already let on {clash[0]}"}}')
    if rate_basis == "day" and nights > 2:
        raise BookingRejected(f'422 Unprocessable Entity: {{"message": "day-hire rate cannot be applied to a {nights}-night let"}}')
    expected = TARIFF[site]["rates"][hut] * nights * (0.9 if nights >= 7 else 1.0)
    if abs(expected - total) > 0.01:
        raise BookingRejected(f'422 Unprocessable Entity: {{"message": "quoted total {total:.2f} does not match tariff {expected:.2f} for {hut}"}}')
    return {"booking": f"BH-{hut}-{check_in}", "status": "confirmed"}


class State(TypedDict, total=False):
    request: str
    fields: dict
    channel: str
    rate_basis: str
    offers: list
    hut: str
    tariff: dict
    total: float
    notes: Annotated[list, operator.add]
    booking: dict


class PriceState(TypedDict, total=False):
    site: str
    hut: str
    nights: int
    rate_basis: str
    tariff: dict
    total: float


def build(llm: ChatOpenAI):
    llm_tools = llm.bind_tools([hut_availability])

    def read_request(state: State) -> dict:
        answer = llm.invoke([("user", "Extract the booking fields as JSON:\n" + state["request"])])
        return {"fields": json.loads(answer.content), "notes": ["request read"]}

    def route_request(state: State) -> dict:
        nights = state["fields"]["nights"]
        limit = 8 if active("zc-bh-5") else 3
        return {"channel": "day_hire" if nights < limit else "weekly_let"}

    def day_hire_desk(state: State) -> dict:
        return {"rate_basis": "day", "notes": ["day-hire desk"]}

    def weekly_let_desk(state: State) -> dict:
        return {"rate_basis": "week", "notes": ["weekly-let desk"]}

    def find_hut(state: State) -> dict:
        f = state["fields"]
        messages: list[Any] = [("user", "Find a hut for this stay:\n" + json.dumps(f))]
        call = llm_tools.invoke(messages)
        tc = call.tool_calls[0]
        offers = hut_availability.invoke(tc)
        messages += [call, offers]
        pick = json.loads(llm.invoke(messages).content)
        return {"offers": json.loads(offers.content), "hut": pick["choice"]}

    def load_tariff(state: PriceState) -> dict:
        rates: dict = {}
        page = 1
        while True:
            chunk = fetch_tariff_page.invoke({"site": state["site"], "page": page})
            rates.update(chunk["rates"])
            if not chunk["has_more"]:
                break
            page += 1
        return {"tariff": {"base": chunk["base"], "rates": rates}}

    def apply_rate(state: PriceState) -> dict:
        rates = state["tariff"]["rates"]
        if state["hut"] not in rates:
            raise TariffError(f"tariff for {state['site']} has no nightly rate for hut {state['hut']} "
                              f"({len(rates)} huts priced)")
        nightly = rates[state["hut"]]
        if state["rate_basis"] == "day":
            return {"total": round(nightly * state["nights"], 2)}
        discount = 0.9 if state["nights"] >= 7 else 1.0
        return {"total": round(nightly * state["nights"] * discount, 2)}

    pricing = StateGraph(PriceState)
    pricing.add_node("load_tariff", load_tariff)
    pricing.add_node("apply_rate", apply_rate)
    pricing.add_edge(START, "load_tariff")
    pricing.add_edge("load_tariff", "apply_rate")
    pricing.add_edge("apply_rate", END)
    pricer = pricing.compile()

    def quote(state: State) -> dict:
        out = pricer.invoke({"site": state["fields"]["site"], "hut": state["hut"],
                             "nights": state["fields"]["nights"], "rate_basis": state["rate_basis"]})
        return {"tariff": out["tariff"], "total": out["total"]}

    def confirm_booking(state: State) -> dict:
        f = state["fields"]
        booking = book_hut.invoke({"hut": state["hut"], "site": f["site"], "check_in": f["check_in"],
                                   "nights": f["nights"], "guests": f["guests"], "rate_basis": state["rate_basis"],
                                   "total": state["total"]})
        return {"booking": booking}

    g = StateGraph(State)
    for name, fn in [("read_request", read_request), ("route_request", route_request),
                     ("day_hire_desk", day_hire_desk), ("weekly_let_desk", weekly_let_desk),
                     ("find_hut", find_hut), ("quote", quote), ("confirm_booking", confirm_booking)]:
        g.add_node(name, fn)
    g.add_edge(START, "read_request")
    g.add_edge("read_request", "route_request")
    g.add_conditional_edges("route_request", lambda s: s["channel"],
                            {"day_hire": "day_hire_desk", "weekly_let": "weekly_let_desk"})
    g.add_edge("day_hire_desk", "find_hut")
    g.add_edge("weekly_let_desk", "find_hut")
    g.add_edge("find_hut", "quote")
    g.add_edge("quote", "confirm_booking")
    g.add_edge("confirm_booking", END)
    return g.compile()


def record(inp: dict, path: str, server) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=AGENT, task=inp["request"])
    try:
        build(llm).invoke({"request": inp["request"], "notes": []}, config={"callbacks": [tracer]})
    except BookingRejected:
        pass
