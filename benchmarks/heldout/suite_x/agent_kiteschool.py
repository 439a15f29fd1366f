"""Kitesurf school lesson booking (route: langgraph): a graph with a gear-fitting subgraph, ChatOpenAI, TrajdebugTracer."""
from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import TypedDict

from benchmarks.heldout.suite_x import kit

ROUTE = "langgraph"
NAME = "kite-school-desk"

RIDERS = {  # id: (name, weight_kg)
    "S-101": ("Sam Byrne", 82), "S-102": ("Aoife Kerr", 58), "S-103": ("Jonas Vik", 75),
    "S-104": ("Sam Okoro", 49), "S-105": ("Lena Roth", 64), "S-106": ("Tadhg Power", 90),
    "S-107": ("Mia Chen", 52), "S-108": ("Lena Walsh", 71),
}
PERMITS = {"Brandon Bay", "Castlegregory"}
WIND = {  # date -> "HH:MM meanGgust; ..."
    "2026-12-10": "09:00 9G13; 10:00 13G18; 11:00 15G21; 12:00 17G23; 13:00 18G34; 14:00 22G31; 15:00 20G27; 16:00 16G21",
    "2026-12-11": "09:00 8G12; 10:00 14G20; 11:00 16G33; 12:00 17G24; 13:00 18G25; 14:00 19G26; 15:00 21G29; 16:00 23G35",
    "2026-12-12": "09:00 12G16; 10:00 14G19; 11:00 15G20; 12:00 21G28; 13:00 24G36; 14:00 26G38; 15:00 25G33; 16:00 22G30",
    "2026-12-13": "09:00 6G9; 10:00 8G11; 11:00 11G15; 12:00 13G18; 13:00 14G19; 14:00 15G20; 15:00 14G19; 16:00 12G16",
    "2026-12-14": "09:00 18G25; 10:00 19G27; 11:00 20G28; 12:00 22G33; 13:00 21G29; 14:00 19G26; 15:00 17G24; 16:00 15G21",
    "2026-12-15": "09:00 10G14; 10:00 12G16; 11:00 16G22; 12:00 18G24; 13:00 19G25; 14:00 20G35; 15:00 18G27; 16:00 14G20",
    "2026-12-16": "09:00 16G21; 10:00 17G23; 11:00 19G26; 12:00 20G27; 13:00 17G23; 14:00 14G19; 15:00 12G17; 16:00 11G15",
}
MAX_GUST, MAX_MEAN, MIN_MEAN = 30, 25, 12


def _req(date, names, spot="Brandon Bay"):
    return {"date": date, "spot": spot, "students": names, "hours": 3}


REFS = [_req("2026-12-13", ["Aoife Kerr", "Jonas Vik"]), _req("2026-12-14", ["Tadhg Power", "Mia Chen", "Lena Roth"], "Castlegregory"),
        _req("2026-12-16", ["Sam Byrne", "Lena Walsh"]), _req("2026-12-10", ["Mia Chen", "Sam Okoro"], "Castlegregory")]
CASES = [
    dict(case="kiteschool_context_pollution", fault_kind="context_pollution", fault_id="kite.profile_notes",
         input=_req("2026-12-16", ["Jonas Vik", "Lena Roth", "Aoife Kerr"]), root="student_profiles", marker="Inch Strand"),
    dict(case="kiteschool_subagent_wrong_entity", fault_kind="subagent_wrong_entity", fault_id="kite.rider_match",
         input=_req("2026-12-13", ["Mia Chen", "Sam Okoro", "Tadhg Power"], "Castlegregory"),
         root="identify_rider", marker="S-101"),
    dict(case="kiteschool_lossy_parsing", fault_kind="lossy_parsing", fault_id="kite.gusts",
         input=_req("2026-12-11", ["Lena Walsh", "Aoife Kerr"]), root="parse_wind", marker='"t": "11:00", "mean": 16, "gust": 16'),
    dict(case="kiteschool_off_by_one", fault_kind="off_by_one", fault_id="kite.slots",
         input=_req("2026-12-10", ["Jonas Vik", "Sam Byrne"]), root="make_slots", marker="13:00-14:00"),
    dict(case="kiteschool_stale_data", fault_kind="stale_data", fault_id="kite.wind_cache",
         input=_req("2026-12-12", ["Lena Roth", "Mia Chen"], "Castlegregory"), root="fetch_wind", marker="issued 2026-12-11"),
]


def _kite(weight: int, mean: int) -> int:
    return max(5, min(14, round(weight * 2.4 / mean)))


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], json.loads(msgs[-1]["content"])
    if system.startswith("Choose"):
        spot = user["spot"]
        for p in user["students"]:
            m = re.search(r"moved to ([A-Z]\w+ [A-Z]\w+)", p.get("note", ""))
            if m:
                spot = m.group(1)
        hours = user["hours"]
        rows = user["wind"]
        for i in range(len(rows) - hours + 1):
            block = rows[i:i + hours]
            if all(MIN_MEAN <= r["mean"] <= MAX_MEAN and r["gust"] <= MAX_GUST for r in block):
                return json.dumps({"spot": spot, "start": block[0]["t"], "hours": hours})
        return json.dumps({"spot": spot, "start": None, "hours": 0})
    if system.startswith("Size"):
        return json.dumps({"rider": user["rider"], "kite_m": _kite(user["weight_kg"], user["mean_kn"])})
    return f"Lessons at {user['spot']} on {user['date']}: {', '.join(user['slots'])}. Bring a wetsuit."


def _tools():
    from langchain_core.tools import tool

    @tool
    def student_profiles(names: list[str]) -> list:
        """Profiles of booked students from the school CRM."""
        out = []
        for n in names:
            rid = next(r for r, (nm, _) in RIDERS.items() if nm == n)
            row = {"name": n, "level": "beginner", "note": ""}
            if kit.active("kite.profile_notes") and n == "Lena Roth":
                row["note"] = "Group lessons moved to Inch Strand this week (imported from partner school)"
            out.append({"id": rid, **row})
        return out

    @tool
    def fetch_wind(spot: str, date: str) -> str:
        """Hourly wind forecast (knots, mean G gust) for a spot."""
        day = f"2026-12-{int(date[-2:]) - 1:02d}" if kit.active("kite.wind_cache") else date
        return f"{spot} issued {day} 06:00 | {WIND[day]}"

    @tool
    def find_rider(query: str) -> list:
        """Search riders in the school database; best matches first."""
        first = query.split()[0]
        hits = [{"id": r, "name": n} for r, (n, _) in sorted(RIDERS.items()) if n.split()[0] == first]
        return hits

    @tool
    def rider_weight(rider: str) -> dict:
        """A rider's recorded weight."""
        return {"rider": rider, "weight_kg": RIDERS[rider][1]}

    @tool
    def beach_permit(spot: str, date: str, slots: list[str]) -> dict:
        """Request the beach-control permit for lesson slots."""
        if spot not in PERMITS:
            raise PermissionError(f"beach control 403: school holds no lesson permit for {spot}")
        live = {h[:5]: h[6:] for h in WIND[date].split("; ")}
        for s in slots:
            mean, gust = map(int, live[s[:5]].split("G"))
            if gust > MAX_GUST or mean > MAX_MEAN:
                raise PermissionError(f"beach control 403: {s} at {spot} forecast {mean} kn gusting {gust} kn, "
                                      f"over the lesson limit")
        return {"permit": f"BP-{date}-{slots[0][:2]}", "slots": slots}

    @tool
    def rental_checkout(student: str, kite_m: int, mean_kn: int) -> dict:
        """Check kites out of the rental store for a student."""
        rid = next(r for r, (nm, _) in RIDERS.items() if nm == student)
        ok = _kite(RIDERS[rid][1], mean_kn)
        if abs(kite_m - ok) > 1:
            raise ValueError(f"rental desk: {kite_m} m kite for {student} at {mean_kn} kn is outside the "
                             f"size chart ({ok - 1}-{ok + 1} m)")
        return {"student": student, "kite_m": kite_m, "tag": f"K{kite_m}-{rid[2:]}"}

    return student_profiles, fetch_wind, find_rider, rider_weight, beach_permit, rental_checkout


class S(TypedDict, total=False):
    date: str
    spot: str
    students: list
    hours: int
    profiles: list
    forecast: str
    wind: list
    window: dict
    slots: list
    gear: list
    permit: dict
    checkout: list
    message: str


class Fit(TypedDict, total=False):
    name: str
    mean_kn: int
    candidates: list
    rider: str
    weight_kg: int
    kite_m: int


class Session:
    def __init__(self):
        from langchain_core.messages import HumanMessage, SystemMessage
        from langchain_openai import ChatOpenAI
        from langgraph.graph import END, START, StateGraph
        from trajdebug.testing import FakeModelServer

        self.server = FakeModelServer(policy, model="gpt-4o-mini").start()
        llm = ChatOpenAI(base_url=self.server.base_url, api_key="not-needed", model="gpt-4o-mini",
                         max_retries=0, temperature=0)
        student_profiles, fetch_wind, find_rider, rider_weight, beach_permit, rental_checkout = _tools()

        def ask(system, payload):
            return json.loads(llm.invoke([SystemMessage(system), HumanMessage(json.dumps(payload))]).content)

        # the gear-fitting subgraph
        def search_rider(f: Fit) -> dict:
            return {"candidates": find_rider.invoke({"query": f["name"]})}

        def identify_rider(f: Fit) -> dict:
            hits = f["candidates"]
            pick = hits[0] if kit.active("kite.rider_match") else next(h for h in hits if h["name"] == f["name"])
            return {"rider": pick["id"]}

        def weigh(f: Fit) -> dict:
            return {"weight_kg": rider_weight.invoke({"rider": f["rider"]})["weight_kg"]}

        def size_kite(f: Fit) -> dict:
            d = ask("Size a trainer kite for the rider. Answer JSON: rider, kite_m.",
                    {"rider": f["rider"], "weight_kg": f["weight_kg"], "mean_kn": f["mean_kn"]})
            return {"kite_m": d["kite_m"]}

        sub = StateGraph(Fit)
        for n, fn in [("search_rider", search_rider), ("identify_rider", identify_rider), ("weigh", weigh),
                      ("size_kite", size_kite)]:
            sub.add_node(n, fn)
        sub.add_edge(START, "search_rider")
        sub.add_edge("search_rider", "identify_rider")
        sub.add_edge("identify_rider", "weigh")
        sub.add_edge("weigh", "size_kite")
        sub.add_edge("size_kite", END)
        fitter = sub.compile().with_config(run_name="gear_fitter")

        def load_students(s: S) -> dict:
            return {"profiles": student_profiles.invoke({"names": s["students"]})}

        def wind(s: S) -> dict:
            return {"forecast": fetch_wind.invoke({"spot": s["spot"], "date": s["date"]})}

        def parse_wind(s: S) -> dict:
            rows = []
            for part in s["forecast"].split(" | ", 1)[1].split("; "):
                t, reading = part.split(" ")
                mean, gust = reading.split("G")
                if kit.active("kite.gusts"):
                    gust = mean
                rows.append({"t": t, "mean": int(mean), "gust": int(gust)})
            return {"wind": rows}

        def plan_window(s: S) -> dict:
            w = ask("Choose the lesson spot and window. Answer JSON: spot, start, hours.",
                    {"spot": s["spot"], "hours": s["hours"], "wind": s["wind"], "students": s["profiles"]})
            if not w["start"]:
                raise ValueError(f"no teachable {s['hours']}-hour window on {s['date']}")
            return {"window": w}

        def make_slots(s: S) -> dict:
            h0 = int(s["window"]["start"][:2])
            n = s["window"]["hours"] + 1 if kit.active("kite.slots") else s["window"]["hours"]
            return {"slots": [f"{h:02d}:00-{h + 1:02d}:00" for h in range(h0, h0 + n)]}

        def fit_gear(s: S) -> dict:
            first = next(r for r in s["wind"] if r["t"] == s["slots"][0][:5])
            gear = []
            for name in s["students"]:
                out = fitter.invoke({"name": name, "mean_kn": first["mean"]})
                gear.append({"student": name, "rider": out["rider"], "kite_m": out["kite_m"], "mean_kn": first["mean"]})
            return {"gear": gear}

        def book_permit(s: S) -> dict:
            return {"permit": beach_permit.invoke({"spot": s["window"]["spot"], "date": s["date"], "slots": s["slots"]})}

        def checkout(s: S) -> dict:
            return {"checkout": [rental_checkout.invoke({"student": g["student"], "kite_m": g["kite_m"],
                                                         "mean_kn": g["mean_kn"]}) for g in s["gear"]]}

        def brief(s: S) -> dict:
            msg = llm.invoke([SystemMessage("Write the students' confirmation message."),
                              HumanMessage(json.dumps({"spot": s["window"]["spot"], "date": s["date"],
                                                       "slots": s["slots"]}))]).content
            return {"message": msg}

        g = StateGraph(S)
        order = [("load_students", load_students), ("wind", wind), ("parse_wind", parse_wind),
                 ("plan_window", plan_window), ("make_slots", make_slots), ("fit_gear", fit_gear),
                 ("book_permit", book_permit), ("checkout", checkout), ("brief", brief)]
        for n, fn in order:
            g.add_node(n, fn)
        g.add_edge(START, order[0][0])
        for (a, _), (b, _) in zip(order, order[1:]):
            g.add_edge(a, b)
        g.add_edge(order[-1][0], END)
        self.graph = g.compile()

    def close(self):
        self.server.stop()


@contextmanager
def session():
    s = Session()
    try:
        yield s
    finally:
        s.close()


def record(sess: Session, path, request) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"book {len(request['students'])} lessons on {request['date']}")
    try:
        sess.graph.invoke(dict(request), config={"callbacks": [tracer]})
    except (ValueError, PermissionError):
        pass
