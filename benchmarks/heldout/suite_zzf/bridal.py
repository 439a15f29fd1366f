"""Bridal hair and makeup bookings (langgraph): inquiry -> artist calendars -> per-member timeline loop -> trial routing -> kit -> travel fee -> booking."""
from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .kit import active

AGENT = "bridal-beauty-bookings"
ROUTE = "langgraph"
DOMAIN = "bridal hair and makeup bookings"

BOOKED = {("Jo Kim", "2026-09-19"), ("Rosa Lind", "2026-10-03")}
CATALOG = {
    "foundation": ["Velvet Matte 02", "Dewy Skin 14", "Airbrush Base A3", "Glow Fluid 07", "Studio Cover 22",
                   "Long Wear 31", "Pure Calm (fragrance-free)", "Satin Lift 18", "Bare Tint 05"],
    "hair": ["Hold Spray Firm", "Shine Mist", "Pearl Pins x40", "Heat Shield", "Texture Dust", "Curl Cream"],
}


def _inq(iid, date, venue, km, package, members, allergy=None):
    return {"inquiry": iid, "date": date, "venue": venue, "distance_km": km, "package": package,
            "allergy": allergy, "members": members}


INPUTS = {
    "A": _inq("BR-2210", "2026-09-19", "Ashcombe Manor", 42, "airbrush",
              [["Amira", "bride", "updo+airbrush"], ["Lena", "bridesmaid", "waves+classic"],
               ["Chloe", "bridesmaid", "waves+classic"], ["Nadia", "mother", "blowdry+classic"]],
              allergy="fragrance"),
    "B": _inq("BR-2231", "2026-10-03", "Fenwick Barn", 18, "classic",
              [["Priya", "bride", "braid+classic"], ["Tess", "bridesmaid", "waves+classic"],
               ["Ivy", "flower girl", "braid"]]),
    "R1": _inq("BR-2240", "2026-08-22", "Old Mill Hotel", 12, "classic",
               [["Hana", "bride", "updo+classic"], ["Mia", "bridesmaid", "waves+classic"]]),
    "R2": _inq("BR-2244", "2026-09-05", "Larch Hall", 55, "airbrush",
               [["Zoe", "bride", "updo+airbrush"], ["Fay", "bridesmaid", "braid+classic"],
                ["Orla", "mother", "blowdry+classic"]], allergy="fragrance"),
    "R3": _inq("BR-2251", "2026-09-26", "Riverside Loft", 8, "classic",
               [["Elif", "bride", "waves+classic"]]),
    "R4": _inq("BR-2263", "2026-10-10", "Kestrel House", 30, "airbrush",
               [["June", "bride", "updo+airbrush"], ["Ada", "bridesmaid", "waves+classic"],
                ["Bea", "bridesmaid", "waves+classic"]]),
}

CASES = [
    {"id": "zzf-bridal-01", "kind": "format_drift", "input": "A", "root": ("ChatOpenAI", 3),
     "failure": ("confirm_booking", 1),
     "desc": "The timeline model answers the third member's ready time as '10.20am' instead of HH:MM, which the booking API refuses."},
    {"id": "zzf-bridal-02", "kind": "wrong_routing", "input": "A", "root": ("route_after_review", 1),
     "failure": ("confirm_booking", 1),
     "desc": "route_after_review sends an airbrush package straight to gather_kit, skipping the trial the package needs."},
    {"id": "zzf-bridal-03", "kind": "tool_ignores_argument", "input": "B", "root": ("artist_calendar", 2),
     "failure": ("confirm_booking", 1),
     "desc": "artist_calendar ignores its date argument for the makeup artist and reports the default day, so a booked artist looks free."},
    {"id": "zzf-bridal-04", "kind": "truncated_result", "input": "A", "root": ("product_catalog", 1),
     "failure": ("confirm_booking", 1),
     "desc": "product_catalog returns only the first page of foundations, so no fragrance-free base reaches the kit for an allergic bride."},
    {"id": "zzf-bridal-05", "kind": "unit_error", "input": "B", "root": ("travel_fee", 1),
     "failure": ("confirm_booking", 1),
     "desc": "travel_fee charges the venue distance in kilometres at the per-mile rate, overcharging the travel fee."},
]


@tool
def artist_calendar(artist: str, date: str) -> str:
    """Look up whether an artist is free on a date."""
    day = date
    if active("zzf-bridal-03") and artist == "Rosa Lind":
        day = "2026-01-01"
    return json.dumps({"artist": artist, "date": day, "free": (artist, day) not in BOOKED})


@tool
def product_catalog(category: str) -> str:
    """List the kit products of a category."""
    items = CATALOG[category]
    if active("zzf-bridal-04"):
        items = items[:5]
    return json.dumps({"category": category, "items": items, "count": len(items)})


@tool
def trial_slots(date: str, member: str) -> str:
    """Find a trial slot for a member before the wedding date."""
    return json.dumps({"member": member, "trial": f"{date[:8]}01 10:00", "status": "held"})


class S(TypedDict, total=False):
    inquiry: dict
    members: list
    idx: int
    timeline: Annotated[list, operator.add]
    artists: dict
    needs_trial: bool
    trial: dict
    kit: dict
    fee: dict


def policy(request):
    m = json.loads(request.body["messages"][-1]["content"])
    services = m["services"].split("+")
    minutes = {"updo": 75, "waves": 45, "braid": 40, "blowdry": 35, "airbrush": 60, "classic": 45}
    total = sum(minutes[s] for s in services)
    start = 7 * 60 + 55 * m["position"]
    ready = start + total
    text = f"{ready // 60:02d}:{ready % 60:02d}"
    if active("zzf-bridal-01") and m["position"] == 2:
        text = f"{ready // 60}.{ready % 60:02d}am"
    return json.dumps({"member": m["name"], "minutes": total, "ready_by": text})


def build(llm):
    def parse_inquiry(state: S) -> dict:
        inq = state["inquiry"]
        members = [{"name": n, "role": r, "services": s} for n, r, s in inq["members"]]
        return {"members": members, "idx": 0}

    def check_artists(state: S) -> dict:
        date = state["inquiry"]["date"]
        out = {}
        for role, artist in (("hair", "Jo Kim" if date.endswith("19") else "Mei Tan"), ("makeup", "Rosa Lind")):
            out[role] = json.loads(artist_calendar.invoke({"artist": artist, "date": date}))
        return {"artists": out}

    def plan_member(state: S) -> dict:
        i = state["idx"]
        m = state["members"][i]
        reply = llm.invoke([("system", "Give the member's service minutes and ready-by time as JSON."),
                            ("user", json.dumps({**m, "position": i, "date": state["inquiry"]["date"]}))])
        return {"timeline": [json.loads(reply.content)], "idx": i + 1}

    def more_members(state: S) -> str:
        return "plan_member" if state["idx"] < len(state["members"]) else "review_package"

    def review_package(state: S) -> dict:
        return {"needs_trial": state["inquiry"]["package"] == "airbrush"}

    def route_after_review(state: S) -> str:
        if state["needs_trial"] and not active("zzf-bridal-02"):
            return "book_trial"
        return "gather_kit"

    def book_trial(state: S) -> dict:
        bride = state["members"][0]["name"]
        return {"trial": json.loads(trial_slots.invoke({"date": state["inquiry"]["date"], "member": bride}))}

    def gather_kit(state: S) -> dict:
        found = json.loads(product_catalog.invoke({"category": "foundation"}))
        hair = json.loads(product_catalog.invoke({"category": "hair"}))
        allergy = state["inquiry"].get("allergy")
        base = [p for p in found["items"] if "fragrance-free" in p] if allergy == "fragrance" else found["items"][:2]
        return {"kit": {"foundation": base, "hair": hair["items"][:3]}}

    def travel_fee(state: S) -> dict:
        km = state["inquiry"]["distance_km"]
        miles = km if active("zzf-bridal-05") else km / 1.609
        return {"fee": {"miles": round(miles, 1), "amount": round(0.65 * miles, 2), "currency": "GBP"}}

    def confirm_booking(state: S) -> dict:
        inq = state["inquiry"]
        for role, cal in state["artists"].items():
            if cal["date"] != inq["date"] and (("Jo Kim" if role == "hair" else "Rosa Lind"), inq["date"]) in BOOKED:
                raise ValueError(f"409 Conflict: {role} artist {cal['artist']} already has a booking on {inq['date']}")
        for row in state["timeline"]:
            hh, _, mm = row["ready_by"].partition(":")
            if not (hh.isdigit() and mm.isdigit() and len(hh) == 2):
                raise ValueError(f"422 Unprocessable Entity: ready_by {row['ready_by']!r} for {row['member']} is not HH:MM")
        if inq["package"] == "airbrush" and not state.get("trial"):
            raise ValueError(f"422 Unprocessable Entity: package airbrush for {inq['inquiry']} requires a trial booking")
        if inq.get("allergy") == "fragrance" and not state["kit"]["foundation"]:
            raise ValueError(f"422 Unprocessable Entity: kit for {inq['inquiry']} has no fragrance-free foundation "
                             "(client allergy: fragrance)")
        expected = round(0.65 * inq["distance_km"] / 1.609, 2)
        if abs(state["fee"]["amount"] - expected) > 0.01:
            raise ValueError(f"422 Unprocessable Entity: travel fee {state['fee']['amount']:.2f} GBP for "
                             f"{inq['distance_km']} km does not match the tariff ({expected:.2f} GBP)")
        return {}

    g = StateGraph(S)
    for fn in (parse_inquiry, check_artists, plan_member, review_package, book_trial, gather_kit, travel_fee,
               confirm_booking):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "parse_inquiry")
    g.add_edge("parse_inquiry", "check_artists")
    g.add_edge("check_artists", "plan_member")
    g.add_conditional_edges("plan_member", more_members, ["plan_member", "review_package"])
    g.add_conditional_edges("review_package", route_after_review, ["book_trial", "gather_kit"])
    g.add_edge("book_trial", "gather_kit")
    g.add_edge("gather_kit", "travel_fee")
    g.add_edge("travel_fee", "confirm_booking")
    g.add_edge("confirm_booking", END)
    return g.compile()


def record(inp: dict, out, server) -> None:
    server.use(policy)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(out), name=AGENT, task=f"book bridal party {inp['inquiry']}")
    try:
        build(llm).invoke({"inquiry": inp, "timeline": []}, config={"callbacks": [tracer], "recursion_limit": 60})
    except ValueError:
        pass
