"""Community radio weekly schedule builder (LangGraph StateGraph + ChatOpenAI, trajdebug LangChain tracer)."""
from __future__ import annotations

import json
import operator
import re
from typing import Annotated, Any, TypedDict

from .kit import active
from .routes import read_op

NAME = "radio-schedule-builder"
ROUTE = "langgraph"
DOMAIN = "community radio scheduling"
SHAPE = "intake -> rota + licence tools -> per-show loop (classify LLM, parse duration, route) -> live desk / music library branches -> compliance subgraph -> notes -> plan LLM -> grid LLM -> parse -> publish"
SYSTEM = "You are the programme controller's assistant at a community radio station. Answer in JSON only."
SPEECH = {"news", "talk", "local affairs"}


class SchedulePublishRejected(Exception):
    pass


Rejected = SchedulePublishRejected


def _s(show, presenter, duration, genre, available):
    return {"show": show, "presenter": presenter, "duration": duration, "genre": genre, "available": available}


INPUTS = {
    "wk23": {"station": "Riverside FM", "week": 23, "shows": [
        _s("Town Hall Hour", "Priya Shah", "1h", "local affairs", ["Tue", "Thu"]),
        _s("Folk Roots", "Joy Mensah", "1h30", "folk", ["Thu"]),
        _s("Hip-Hop Hour", "Dele Ade", "1h", "hip hop", ["Mon", "Fri"]),
        _s("Saturday Breakfast", "Ann Kerr", "2h", "pop", ["Sat"]),
        _s("Evening Bulletin", "Tom Rees", "30m", "news", ["Mon", "Tue", "Wed"])]},
    "wk24": {"station": "Riverside FM", "week": 24, "shows": [
        _s("Jazz After Dark", "Ray Cole", "2h", "jazz", ["Fri"]),
        _s("Allotment Talk", "Meg Hart", "1h", "talk", ["Wed"]),
        _s("Hip-Hop Hour", "Dele Ade", "1h", "hip hop", ["Mon"]),
        _s("Saturday Breakfast", "Ann Kerr", "2h", "pop", ["Sat"]),
        _s("Reggae Roots", "Lloyd Bell", "1h30", "reggae", ["Thu", "Fri"])]},
    "r1": {"station": "Riverside FM", "week": 19, "shows": [
        _s("Town Hall Hour", "Priya Shah", "1h", "local affairs", ["Tue"]), _s("Country Roads", "Bill Day", "1h30", "country", ["Wed"]),
        _s("Evening Bulletin", "Tom Rees", "30m", "news", ["Mon"])]},
    "r2": {"station": "Riverside FM", "week": 20, "shows": [
        _s("Soul Kitchen", "Ama Osei", "2h", "soul", ["Fri", "Sat"]), _s("Allotment Talk", "Meg Hart", "1h", "talk", ["Wed"]),
        _s("Metal Mondays", "Kai Lund", "1h", "metal", ["Mon"]), _s("Evening Bulletin", "Tom Rees", "30m", "news", ["Tue"])]},
    "r3": {"station": "Riverside FM", "week": 21, "shows": [
        _s("Folk Roots", "Joy Mensah", "1h30", "folk", ["Thu"]), _s("Classics Hour", "Ivor Pugh", "1h", "classical", ["Sun"]),
        _s("Town Hall Hour", "Priya Shah", "1h", "local affairs", ["Thu"]), _s("Hip-Hop Hour", "Dele Ade", "1h", "hip hop", ["Fri"])]},
    "r4": {"station": "Riverside FM", "week": 22, "shows": [
        _s("Saturday Breakfast", "Ann Kerr", "2h", "pop", ["Sat"]), _s("Reggae Roots", "Lloyd Bell", "1h30", "reggae", ["Thu"]),
        _s("Evening Bulletin", "Tom Rees", "30m", "news", ["Wed"])]},
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    dict(id="zb_radio_1", fault="rs1", kind="format_drift", input="wk23", root=("fetch_volunteer_rota", 1),
         failure=("publish_schedule", 1),
         description="The volunteer rota service starts writing one show's length as minutes ('90 min'), which the duration parser reads as the one-hour default."),
    dict(id="zb_radio_2", fault="rs2", kind="wrong_routing", input="wk23", root=("route_show", 1),
         failure=("publish_schedule", 1),
         description="The router sends the live local-affairs show down the music-library branch, so no live studio desk is booked."),
    dict(id="zb_radio_3", fault="rs3", kind="context_pollution", input="wk24", root=("gather_programme_notes", 1),
         failure=("publish_schedule", 1),
         description="The programme notes pull in a note for another week (a cancelled Saturday breakfast), and the grid model drops the show."),
    dict(id="zb_radio_4", fault="rs4", kind="lossy_parsing", input="wk24", root=("parse_grid", 1),
         failure=("publish_schedule", 1),
         description="The grid parser cuts show titles at the first hyphen, so 'Hip-Hop Hour' becomes 'Hip'."),
    dict(id="zb_radio_5", fault="rs5", kind="plan_error", input="wk23", root=("plan_week", 1),
         failure=("publish_schedule", 1),
         description="The weekly plan groups shows by genre onto fixed days instead of the presenters' available days."),
]


def task(inp: dict) -> str:
    return f"build the week {inp['week']} evening schedule for {inp['station']}"


class RadioState(TypedDict, total=False):
    request: dict
    rota: list
    licence: dict
    todo: list
    classified: Annotated[list, operator.add]
    route: str
    current: dict
    bookings: Annotated[list, operator.add]
    compliance: dict
    notes: list
    plan: dict
    grid: list
    result: dict


def initial_state(inp: dict) -> dict:
    return {"request": {"station": inp["station"], "week": inp["week"]}}


def _rota(station: str, week: int) -> list:
    inp = next(v for v in INPUTS.values() if v["station"] == station and v["week"] == week)
    out = [dict(s) for s in inp["shows"]]
    if active("rs1"):
        for s in out:
            if s["duration"] == "1h30":
                s["duration"] = "90 min"
    return out


def _licence(station: str) -> dict:
    return {"station": station, "licence": "CR-104417", "min_speech_share": 0.1, "evening_start": "19:00"}


def _minutes(duration: str) -> int:
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m?)?", duration.replace(" ", ""))
    if not m or not (m.group(1) or m.group(2)) or "min" in duration:
        return 60
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0)


def _route(show: dict, category: str) -> str:
    if active("rs2") and show["genre"] == "local affairs":
        return "music_library"
    return "live_desk" if category == "speech" else "music_library"


WEEK_NOTES = [
    {"week": 51, "text": "Week 51: Saturday Breakfast cancelled for the carol service broadcast."},
    {"week": 23, "text": "Week 23: Folk Roots presenter needs the accessible studio."},
    {"week": 24, "text": "Week 24: Jazz After Dark runs the full two hours, no news break."},
]


def _notes(week: int) -> list:
    return [n["text"] for n in WEEK_NOTES if active("rs3") or n["week"] == week]


def _parse_grid(text: str) -> list:
    out = []
    for line in text.splitlines():
        m = re.match(r"^(\w{3}) (\d\d:\d\d)-(\d\d:\d\d) (.+)$", line.strip())
        if m:
            name = m.group(4).split("-")[0].strip() if active("rs4") else m.group(4).strip()
            out.append({"day": m.group(1), "start": m.group(2), "end": m.group(3), "show": name})
    return out


def _publish(station: str, week: int, grid: list, shows: list, desks: list) -> dict:
    by_name = {s["show"]: s for s in shows}
    for slot in grid:
        if slot["show"] not in by_name:
            raise SchedulePublishRejected(f"HTTP 422: grid references unknown show '{slot['show']}' on {slot['day']} {slot['start']}")
    for s in shows:
        slots = [g for g in grid if g["show"] == s["show"]]
        if len(slots) != 1:
            raise SchedulePublishRejected(f"HTTP 422: show '{s['show']}' has {len(slots)} slots in week {week}, expected 1")
        g = slots[0]
        if g["day"] not in s["available"]:
            raise SchedulePublishRejected(f"HTTP 409: presenter {s['presenter']} is not available on {g['day']} "
                                          f"(available: {', '.join(s['available'])})")
        h1, m1 = map(int, g["start"].split(":"))
        h2, m2 = map(int, g["end"].split(":"))
        if (h2 * 60 + m2) - (h1 * 60 + m1) != _minutes(s["duration"]):
            raise SchedulePublishRejected(f"HTTP 422: grid gives '{s['show']}' {(h2 * 60 + m2) - (h1 * 60 + m1)} minutes, "
                                          f"the rota books {_minutes(s['duration'])}")
        if s["genre"] in SPEECH and s["show"] not in desks:
            raise SchedulePublishRejected(f"HTTP 409: {g['day']} {g['start']} '{s['show']}' is live speech but no studio "
                                          "desk is booked")
    return {"status": 201, "published": f"{station} week {week}", "slots": len(grid)}


def policy(request):
    op, p = read_op(request)
    if op == "classify_show":
        cat = "speech" if p["genre"] in SPEECH else "music"
        return json.dumps({"show": p["show"], "category": cat, "live": cat == "speech"})
    if op == "summarise_compliance":
        return json.dumps({"ok": p["speech_share"] >= p["min_speech_share"], "speech_share": p["speech_share"]})
    if op == "plan_week":
        days: dict = {}
        genre_day = {"folk": "Mon", "hip hop": "Tue", "pop": "Wed", "local affairs": "Mon", "news": "Fri"}
        for s in p["shows"]:
            day = genre_day.get(s["genre"], s["available"][0]) if active("rs5") else s["available"][0]
            days.setdefault(day, []).append(s["show"])
        return json.dumps({"days": days, "rationale": "one evening block per day"})
    if op == "draft_grid":
        cancelled = {n.split(":")[1].strip().split(" cancelled")[0] for n in p["notes"] if "cancelled" in n}
        lines = []
        for day, names in p["plan"]["days"].items():
            t = 19 * 60
            for n in names:
                if n in cancelled:
                    continue
                d = p["minutes"][n]
                lines.append(f"{day} {t // 60:02d}:{t % 60:02d}-{(t + d) // 60:02d}:{(t + d) % 60:02d} {n}")
                t += d
        return json.dumps({"grid": "\n".join(lines)})
    raise ValueError(op)


def build_graph(h):
    from langgraph.graph import END, START, StateGraph

    def load(st):
        req = h.step("read_schedule_request", "input", lambda request: request, request=st["request"])
        rota = h.tool("fetch_volunteer_rota", {"station": st["request"]["station"], "week": st["request"]["week"]}, _rota)
        lic = h.tool("fetch_licence_terms", {"station": st["request"]["station"]}, _licence)
        return {"request": req, "rota": rota, "licence": lic, "todo": [s["show"] for s in rota]}

    def classify(st):
        name = st["todo"][0]
        show = next(s for s in st["rota"] if s["show"] == name)
        verdict = h.llm("classify_show", show, SYSTEM)
        mins = h.step("parse_duration", "parse", lambda duration: _minutes(duration), duration=show["duration"])
        route = h.step("route_show", "condition", _route, show=show, category=verdict["category"])
        return {"todo": st["todo"][1:], "route": route, "current": show,
                "classified": [{"show": name, "category": verdict["category"], "minutes": mins}]}

    def live_desk(st):
        b = h.tool("book_live_desk", {"show": st["current"]["show"], "days": st["current"]["available"]},
                   lambda show, days: {"show": show, "desk": "Studio A", "days": days})
        return {"bookings": [b]}

    def music_library(st):
        hits = h.retrieve("search_music_library", f"{st['current']['genre']} playlist", lambda q: [
            {"playlist": f"{q} - rotation A", "tracks": 24}, {"playlist": f"{q} - rotation B", "tracks": 18}])
        return {"bookings": []} if hits else {}

    def compliance_graph():
        def quota(st):
            r = h.tool("check_speech_quota", {"classified": st["classified"]}, lambda classified: {
                "speech_minutes": sum(c["minutes"] for c in classified if c["category"] == "speech"),
                "total_minutes": sum(c["minutes"] for c in classified)})
            return {"compliance": r}

        def summarise(st):
            r = st["compliance"]
            out = h.llm("summarise_compliance", {"speech_share": round(r["speech_minutes"] / r["total_minutes"], 3),
                                                 "min_speech_share": st["licence"]["min_speech_share"]}, SYSTEM)
            return {"compliance": {**r, **out}}

        g = StateGraph(RadioState)
        g.add_node("check_quota", quota)
        g.add_node("summarise", summarise)
        g.add_edge(START, "check_quota")
        g.add_edge("check_quota", "summarise")
        g.add_edge("summarise", END)
        return g.compile()

    sub = compliance_graph()

    def compliance(st):
        out = sub.invoke({"classified": st["classified"], "licence": st["licence"]})
        return {"compliance": out["compliance"]}

    def notes(st):
        return {"notes": h.step("gather_programme_notes", "retrieval", _notes, week=st["request"]["week"])}

    def plan(st):
        return {"plan": h.llm("plan_week", {"shows": st["rota"]}, SYSTEM)}

    def grid(st):
        minutes = {c["show"]: c["minutes"] for c in st["classified"]}
        text = h.llm("draft_grid", {"plan": st["plan"], "minutes": minutes, "notes": st["notes"]}, SYSTEM)["grid"]
        return {"grid": h.step("parse_grid", "parse", _parse_grid, text=text)}

    def publish(st):
        inp = next(v for v in INPUTS.values() if v["week"] == st["request"]["week"])
        desks = [b["show"] for b in st.get("bookings", [])]
        return {"result": _publish(st["request"]["station"], st["request"]["week"], st["grid"], inp["shows"], desks)}

    g = StateGraph(RadioState)
    for n, f in [("load", load), ("classify", classify), ("live_desk", live_desk),
                 ("music_library", music_library), ("compliance", compliance), ("notes", notes), ("plan", plan),
                 ("grid", grid), ("publish_schedule", publish)]:
        g.add_node(n, f)
    g.add_edge(START, "load")
    g.add_edge("load", "classify")
    g.add_conditional_edges("classify", lambda st: st["route"], ["live_desk", "music_library"])
    for n in ("live_desk", "music_library"):
        g.add_conditional_edges(n, lambda st: "classify" if st["todo"] else "compliance", ["classify", "compliance"])
    g.add_edge("compliance", "notes")
    g.add_edge("notes", "plan")
    g.add_edge("plan", "grid")
    g.add_edge("grid", "publish_schedule")
    g.add_edge("publish_schedule", END)
    return g.compile()
