"""campsite-pitch-allocator: a campsite's booking agent (a LangGraph StateGraph).

An enquiry comes in as free text; the model extracts it (a JSON output parser reads it); the guest's
saved profile is looked up and merged into state; the site's zone rules are retrieved; an allocator
model calls the booking system's tools in a loop (zone availability in parallel, then the pitch's
details) and answers the pitch it chose; the stay is priced, the pitch reserved, a deposit taken, and a
final check compares the booking with the enquiry.
"""

from __future__ import annotations

import datetime as dt
import json
import operator
import re
from typing import Annotated, Any, TypedDict

from .common import messages, system_text, tagged_json, tool_results


NAME = "campsite-pitch-allocator"
ROUTE = "langgraph"
DOMAIN = "campsite: pitch allocation for tents, caravans and motorhomes"
SHAPE = "LangGraph: model + JSON output parser, guest-history tool, state-merge node, retriever, tool-calling model loop (ToolNode, parallel calls), pricing node, reservation and deposit tools, final check node"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


RULES = {
    "woods": [
        "Meadow zone: vehicles: tent; max length 0 m; hookup: none; dogs: no; rate 21 EUR per night.",
        "Orchard zone: vehicles: caravan, motorhome, trailer tent; max length 7.5 m; hookup: 10A; dogs: yes; rate 29 EUR per night.",
        "Lakeside zone: vehicles: caravan, motorhome; max length 9.0 m; hookup: 16A; dogs: yes; rate 34 EUR per night.",
    ],
    "coast": [
        "Meadow zone: vehicles: tent, trailer tent; max length 5.0 m; hookup: none; dogs: yes; rate 24 EUR per night.",
        "Orchard zone: vehicles: caravan, motorhome, trailer tent; max length 8.5 m; hookup: 16A; dogs: yes; rate 31 EUR per night.",
        "Lakeside zone: vehicles: caravan, motorhome; max length 10.0 m; hookup: 16A; dogs: no; rate 38 EUR per night.",
    ],
}

PITCHES = {  # Fernhollow Woods: pitch -> (max length m, hookup, bookings [start, end))
    "M-1": (0.0, "none", [("2025-07-28", "2025-08-03")]),
    "M-2": (0.0, "none", [("2025-08-04", "2025-08-08")]),
    "M-3": (0.0, "none", []),
    "O-1": (7.5, "10A", [("2025-07-10", "2025-07-30")]),
    "O-2": (7.5, "10A", [("2025-07-18", "2025-07-23")]),
    "O-3": (7.5, "10A", []),
    "O-4": (7.5, "10A", [("2025-07-19", "2025-07-24")]),
    "O-5": (7.5, "10A", []),
    "L-1": (9.0, "16A", [("2025-07-01", "2025-07-31")]),
    "L-2": (9.0, "16A", []),
    "L-3": (9.0, "16A", [("2025-08-01", "2025-08-15")]),
}
ZONES = {"Meadow": ("tent",), "Orchard": ("caravan", "motorhome", "trailer tent"), "Lakeside": ("caravan", "motorhome")}
RATES = {"Meadow": 21.0, "Orchard": 29.0, "Lakeside": 34.0}
DOGS_OK = {"Meadow": False, "Orchard": True, "Lakeside": True}

SAVED_GUESTS = {"Hannah Moss": {"name": "Hannah Moss", "vehicle": "tent", "length_m": 0.0, "dogs": 0, "hookup": False,
                                "last_stay": "2023-08-02"},
                "Sam Keller": {"name": "Sam Keller", "vehicle": "tent", "length_m": 0.0, "dogs": 0, "hookup": False,
                               "last_stay": "2024-06-10"}}

INPUTS = [
    {"enquiry_id": "ENQ-701", "text": "Hello, Ruth Adeyemi here. We'd like to arrive 2025-07-14 and leave 2025-07-18 "
                                       "with our 8.0 m caravan, 2 adults and 1 dog, and we need an electric hookup."},
    {"enquiry_id": "ENQ-702", "text": "Hi, Sam Keller. A tent pitch for 2 adults please, 2025-08-01 to 2025-08-04, "
                                       "no dog, no hookup needed."},
    {"enquiry_id": "ENQ-703", "text": "Gino Ferraro: 7.0 m motorhome, 2 adults, 2 dogs, hookup please, "
                                       "arriving 2025-07-20, leaving 2025-07-27."},
    {"enquiry_id": "ENQ-704", "text": "Hi again, it's Hannah Moss. This year we come with a 7.2 m caravan and 1 dog, "
                                       "2 adults, 2025-07-14 to 2025-07-21, no hookup."},
    {"enquiry_id": "ENQ-705", "text": "Tomasz Nowak, trailer tent 5.0 m, 2 adults 1 child, hookup needed, "
                                       "2025-08-08 until 2025-08-10."},
]

CASES = [
    {"id": "campsite_1", "switch": "rules_site", "input": 0, "kind": "wrong_retrieval",
     "root": ("PitchRules", 1), "failure": ("reserve_pitch", 1),
     "description": "PitchRules answers the Coast site's zone rules (Orchard up to 8.5 m) for the Woods site, "
                    "so the 8.0 m caravan is allocated Orchard pitch O-2, which takes 7.5 m at most."},
    {"id": "campsite_2", "switch": "pitch_id", "input": 2, "kind": "hallucinated_value",
     "root": ("ChatOpenAI", 4), "failure": ("reserve_pitch", 1),
     "description": "the allocator model answers pitch O-4, which no availability result listed (O-3 and O-5 "
                    "were free), and the reservation finds O-4 booked over the stay."},
    {"id": "campsite_3", "switch": "rate_text", "input": 4, "kind": "format_drift",
     "root": ("pitch_details", 1), "failure": ("compute_stay", 1),
     "description": "pitch_details answers the nightly rate as display text (\"EUR 29,00\") instead of a "
                    "number; the model relays it and compute_stay cannot read it as a rate."},
    {"id": "campsite_4", "switch": "nights", "input": 1, "kind": "off_by_one",
     "root": ("compute_stay", 1), "failure": ("reserve_pitch", 1),
     "description": "compute_stay counts both the arrival and the departure day (4 nights for 08-01 to 08-04), "
                    "and the longer stay collides with M-2's booking from 2025-08-04."},
    {"id": "campsite_5", "switch": "profile_merge", "input": 3, "kind": "bad_memory_write",
     "root": ("remember_guest", 1), "failure": ("confirm_booking", 1),
     "description": "remember_guest lets Hannah Moss's saved 2023 profile (tent, no dog) overwrite this "
                    "enquiry's 7.2 m caravan and dog, so a Meadow tent pitch is booked and the final check refuses it."},
]


# --------------------------------------------------------------------------- the model's behaviour

def _zones_from(rules: list) -> dict:
    zones = {}
    for text in rules:
        m = re.match(r"(\w+) zone: vehicles: ([a-z ,]+); max length ([\d.]+) m; hookup: (\w+); dogs: (\w+); "
                     r"rate (\d+) EUR", text)
        zones[m.group(1)] = {"vehicles": [v.strip() for v in m.group(2).split(",")], "max_m": float(m.group(3)),
                             "hookup": m.group(4), "dogs": m.group(5) == "yes", "rate": float(m.group(6))}
    return zones


def brain(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system = system_text(request)
    msgs = messages(request)
    user = next((m["content"] for m in msgs if m["role"] == "user"), "")
    if system.startswith("You extract campsite enquiries"):
        name = re.search(r"([A-Z][a-z]+ [A-Z][a-z]+)", user.replace("Hello, ", "").replace("Hi, ", "")
                         .replace("Hi again, it's ", "")).group(1)
        dates = re.findall(r"\d{4}-\d{2}-\d{2}", user)
        length = re.search(r"(\d+\.\d) m", user)
        vehicle = next(v for v in ("trailer tent", "caravan", "motorhome", "tent") if v in user)
        dogs = re.search(r"(\d) dogs?", user)
        adults = re.search(r"(\d) adults", user)
        hookup = "no hookup" not in user and "hookup" in user
        return json.dumps({"name": name, "arrive": dates[0], "depart": dates[1], "vehicle": vehicle,
                           "length_m": float(length.group(1)) if length else 0.0,
                           "adults": int(adults.group(1)) if adults else 2, "dogs": int(dogs.group(1)) if dogs else 0,
                           "hookup": hookup})
    if system.startswith("You allocate campsite pitches"):
        guest = tagged_json(user, "GUEST")
        stay = tagged_json(user, "STAY")
        zones = _zones_from(tagged_json(user, "RULES"))
        results = tool_results(request)
        free = {r["zone"]: r["free"] for n, r in results if n == "pitch_availability"}
        details = [r for n, r in results if n == "pitch_details"]
        fits = sorted((z for z, info in zones.items()
                       if guest["vehicle"] in info["vehicles"] and guest["length_m"] <= info["max_m"]
                       and (info["dogs"] or not guest["dogs"]) and (info["hookup"] != "none" or not guest["hookup"])),
                      key=lambda z: zones[z]["rate"])
        if not free:
            return Reply(tool_calls=tuple(tool_call("pitch_availability", {"zone": z, "arrive": stay["arrive"],
                                                                           "depart": stay["depart"]})
                                          for z in fits[:2]))
        if not details:
            zone = next(z for z in fits if free.get(z))
            return Reply(tool_calls=(tool_call("pitch_details", {"pitch_id": free[zone][0]}),))
        d = details[-1]
        pitch = d["pitch_id"]
        if _on("pitch_id"):
            pitch = "O-4"
        return json.dumps({"pitch_id": pitch, "zone": d["zone"], "rate": d["rate"], "hookup": d["hookup"]})
    return "Which dates would you like?"


# --------------------------------------------------------------------------- the graph

class StayState(TypedDict, total=False):
    enquiry: dict
    request: dict
    saved: dict
    guest: dict
    rules: list
    messages: Annotated[list, operator.add]
    choice: dict
    stay: dict
    reservation: dict
    deposit: dict


def _d(s: str) -> dt.date:
    return dt.date.fromisoformat(s)


def _build(server: Any) -> Any:
    from langchain_core.documents import Document
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.output_parsers import JsonOutputParser
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode

    @tool
    def guest_history(name: str) -> dict:
        """The guest's saved profile from earlier stays (empty for a new guest)."""
        return dict(SAVED_GUESTS.get(name, {}))

    @tool
    def pitch_availability(zone: str, arrive: str, depart: str) -> dict:
        """Free pitches of a zone for a stay."""
        a, d = _d(arrive), _d(depart)
        free = [p for p, (_, _, booked) in PITCHES.items() if p[0] == zone[0]
                and all(d <= _d(s) or a >= _d(e) for s, e in booked)]
        return {"zone": zone, "arrive": arrive, "depart": depart, "free": free}

    @tool
    def pitch_details(pitch_id: str) -> dict:
        """A pitch's size, hookup and nightly rate."""
        max_m, hookup, _ = PITCHES[pitch_id]
        zone = {"M": "Meadow", "O": "Orchard", "L": "Lakeside"}[pitch_id[0]]
        rate: Any = RATES[zone]
        if _on("rate_text"):
            rate = f"EUR {rate:.2f}".replace(".", ",")  # the booking system's display format
        return {"pitch_id": pitch_id, "zone": zone, "max_length_m": max_m, "hookup": hookup, "rate": rate}

    @tool
    def reserve_pitch(pitch_id: str, arrive: str, nights: int, vehicle: str, length_m: float, guest: str) -> dict:
        """Reserve a pitch in the booking system."""
        max_m, _, booked = PITCHES[pitch_id]
        if vehicle != "tent" and length_m > max_m:
            raise ValueError(f"pitch {pitch_id} takes vehicles up to {max_m} m; the {vehicle} is {length_m} m")
        a = _d(arrive)
        end = a + dt.timedelta(days=nights)
        for s, e in booked:
            if a < _d(e) and end > _d(s):
                raise ValueError(f"pitch {pitch_id} is not free {arrive} to {end.isoformat()} (booked {s} to {e})")
        return {"reservation": f"RES-{pitch_id}-{arrive.replace('-', '')}", "pitch_id": pitch_id, "arrive": arrive,
                "depart": end.isoformat(), "guest": guest}

    @tool
    def take_deposit(reservation: str, amount_eur: float) -> dict:
        """Charge the booking deposit to the card on file."""
        return {"reservation": reservation, "charged_eur": amount_eur, "status": "captured"}

    class PitchRules(BaseRetriever):
        site: str

        def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list:
            site = "coast" if _on("rules_site") else self.site  # the index's default site answers
            return [Document(page_content=t, metadata={"site": site, "zone": t.split()[0]}) for t in RULES[site]]

    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    extractor = llm | JsonOutputParser()
    allocator_llm = llm.bind_tools([pitch_availability, pitch_details])

    def read_enquiry(state: StayState) -> dict:
        request = extractor.invoke([SystemMessage("You extract campsite enquiries as JSON."),
                                    HumanMessage(state["enquiry"]["text"])])
        return {"request": request}

    def lookup_guest(state: StayState) -> dict:
        return {"saved": guest_history.invoke({"name": state["request"]["name"]})}

    def remember_guest(state: StayState) -> dict:
        saved = {k: v for k, v in state["saved"].items() if k != "last_stay"}
        request = {k: state["request"][k] for k in ("name", "vehicle", "length_m", "dogs", "hookup")}
        guest = {**request, **saved} if _on("profile_merge") else {**saved, **request}
        return {"guest": guest}

    def load_rules(state: StayState) -> dict:
        docs = PitchRules(site="woods").invoke(f"zone rules for a {state['guest']['vehicle']}")
        return {"rules": [d.page_content for d in docs]}

    def allocate(state: StayState) -> dict:
        if not state.get("messages"):
            r = state["request"]
            prompt = [SystemMessage("You allocate campsite pitches: the cheapest zone that fits, then a free pitch. "
                                    "Answer JSON with pitch_id, zone, rate, hookup."),
                      HumanMessage(f"GUEST: {json.dumps(state['guest'])}\n"
                                   f"STAY: {json.dumps({'arrive': r['arrive'], 'depart': r['depart']})}\n"
                                   f"RULES: {json.dumps(state['rules'])}")]
            return {"messages": prompt + [allocator_llm.invoke(prompt)]}
        return {"messages": [allocator_llm.invoke(state["messages"])]}

    def route_allocation(state: StayState) -> str:
        return "tools" if state["messages"][-1].tool_calls else "compute_stay"

    def compute_stay(state: StayState) -> dict:
        choice = json.loads(state["messages"][-1].content)
        r, g = state["request"], state["guest"]
        nights = (_d(r["depart"]) - _d(r["arrive"])).days
        if _on("nights"):
            nights += 1
        rate = float(choice["rate"])
        total = nights * (rate + (4.5 if g["hookup"] else 0.0) + 3.0 * g["dogs"])
        return {"choice": choice, "stay": {"nights": nights, "rate": rate, "total_eur": round(total, 2)}}

    def reserve(state: StayState) -> dict:
        g = state["guest"]
        res = reserve_pitch.invoke({"pitch_id": state["choice"]["pitch_id"], "arrive": state["request"]["arrive"],
                                    "nights": state["stay"]["nights"], "vehicle": g["vehicle"],
                                    "length_m": g["length_m"], "guest": g["name"]})
        return {"reservation": res}

    def deposit(state: StayState) -> dict:
        amount = round(state["stay"]["total_eur"] * 0.3, 2)
        return {"deposit": take_deposit.invoke({"reservation": state["reservation"]["reservation"],
                                                "amount_eur": amount})}

    def confirm_booking(state: StayState) -> dict:
        r, res = state["request"], state["reservation"]
        zone = state["choice"]["zone"]
        if r["vehicle"] not in ZONES[zone] or (r["dogs"] and not DOGS_OK[zone]):
            raise ValueError(f"pitch {res['pitch_id']} in {zone} does not fit the enquiry: {r['vehicle']} "
                             f"{r['length_m']} m with {r['dogs']} dog(s)")
        if res["depart"] != r["depart"]:
            raise ValueError(f"reservation ends {res['depart']}, the guest leaves {r['depart']}")
        return {}

    g = StateGraph(StayState)
    for name, fn in (("read_enquiry", read_enquiry), ("lookup_guest", lookup_guest), ("remember_guest", remember_guest),
                     ("load_rules", load_rules), ("allocate", allocate), ("compute_stay", compute_stay),
                     ("reserve", reserve), ("deposit", deposit), ("confirm_booking", confirm_booking)):
        g.add_node(name, fn)
    g.add_node("tools", ToolNode([pitch_availability, pitch_details]))
    g.add_edge(START, "read_enquiry")
    g.add_edge("read_enquiry", "lookup_guest")
    g.add_edge("lookup_guest", "remember_guest")
    g.add_edge("remember_guest", "load_rules")
    g.add_edge("load_rules", "allocate")
    g.add_conditional_edges("allocate", route_allocation, {"tools": "tools", "compute_stay": "compute_stay"})
    g.add_edge("tools", "allocate")
    g.add_edge("compute_stay", "reserve")
    g.add_edge("reserve", "deposit")
    g.add_edge("deposit", "confirm_booking")
    g.add_edge("confirm_booking", END)
    return g.compile()


_GRAPH: Any = None
_SERVER_URL: str | None = None


def record(inp: dict, path: str, server: Any) -> None:
    global _GRAPH, _SERVER_URL
    from trajdebug.integrations.langchain import TrajdebugTracer

    if _GRAPH is None or _SERVER_URL != server.base_url:
        _GRAPH, _SERVER_URL = _build(server), server.base_url
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"enquiry {inp['enquiry_id']}")
    try:
        _GRAPH.invoke({"enquiry": dict(inp)}, config={"callbacks": [tracer], "recursion_limit": 25})
    except Exception:  # noqa: BLE001 - the tracer records the failure
        pass
