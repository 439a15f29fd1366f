"""Mobile library's route agent (otlp route): OpenTelemetry spans with OpenInference attributes."""
from __future__ import annotations

import json

from opentelemetry.trace import Status, StatusCode

import common
import kit

NAME = "mobile-library-routes"
ROUTE = "otlp"
DOMAIN = "a mobile library's routes"
SHAPE = "OTel + OpenInference: route request + stop directory tools, route-order LLM + parse, travel tool, driver hours, per-stop holds tool loop, per-hold catalogue retriever loop, timetable, van charge check (spare-van retry), notice LLM, publish, send, validator span"
EXT = "json"

STOPS = {
    "Ashby Green": {"window": ["09:00", "10:30"], "km_from_depot": 9}, "Brook School": {"window": ["10:00", "12:00"], "km_from_depot": 14},
    "Cold Harbour": {"window": ["11:00", "13:30"], "km_from_depot": 21}, "Dunmore Care Home": {"window": ["13:00", "15:00"], "km_from_depot": 17},
    "Elsted": {"window": ["14:00", "16:30"], "km_from_depot": 26}, "Fenby Quay": {"window": ["09:30", "11:30"], "km_from_depot": 11},
    "Grange Farm": {"window": ["12:00", "14:00"], "km_from_depot": 19},
}
VANS = {"V-1": {"range_km": 70}, "V-2": {"range_km": 140}}
TITLES = {"978-0-14-118776-1": "Middlemarch", "978-0-00-754899-4": "The Salt Path", "978-1-78689-023-4": "Shuggie Bain",
          "978-0-571-33471-2": "Klara and the Sun", "978-0-241-98436-4": "Hamnet", "978-1-5266-2244-1": "The Thursday Murder Club",
          "978-0-09-958707-3": "Wolf Hall", "978-1-4088-9492-6": "Piranesi"}
LARGE_PRINT = {"978-0-241-98436-4": "978-0-241-98511-8", "978-0-09-958707-3": "978-0-09-960012-3", "978-1-5266-2244-1": "978-1-5266-2391-2"}
ISBNS = list(TITLES)


def _r(rid, date, driver, hours, stops, holds):
    return {"route": rid, "date": date, "driver": driver, "hours": hours, "stops": stops,
            "holds": {s: [{"patron": f"P-{100 + 7 * i + j}", "isbn": ISBNS[(i * 3 + j) % len(ISBNS)]} for j in range(n)] for i, (s, n) in enumerate(zip(stops, holds))}}


INPUTS = {
    "L-901": _r("L-901", "2026-11-17", "D-2", 6, ["Ashby Green", "Brook School", "Cold Harbour", "Dunmore Care Home"], [1, 2, 1, 2]),
    "L-902": _r("L-902", "2026-11-18", "D-4", 6, ["Fenby Quay", "Cold Harbour", "Grange Farm", "Elsted"], [2, 1, 2, 1]),
    "L-903": _r("L-903", "2026-11-19", "D-2", 6, ["Ashby Green", "Brook School", "Grange Farm", "Elsted"], [1, 1, 2, 2]),
    "L-904": _r("L-904", "2026-11-20", "D-7", 6, ["Fenby Quay", "Brook School", "Dunmore Care Home"], [2, 2, 1]),
    "L-905": _r("L-905", "2026-11-24", "D-4", 6, ["Ashby Green", "Cold Harbour", "Dunmore Care Home", "Elsted"], [1, 2, 2, 1]),
    "L-906": _r("L-906", "2026-11-25", "D-2", 6, ["Brook School", "Grange Farm", "Elsted"], [2, 1, 1]),
    "L-907": _r("L-907", "2026-11-26", "D-7", 6, ["Ashby Green", "Fenby Quay", "Cold Harbour"], [1, 1, 2]),
    "L-908": _r("L-908", "2026-11-27", "D-4", 6, ["Fenby Quay", "Brook School", "Cold Harbour", "Dunmore Care Home"], [1, 2, 1, 1]),
    "L-909": _r("L-909", "2026-12-01", "D-2", 6, ["Ashby Green", "Grange Farm", "Dunmore Care Home"], [2, 1, 2]),
}
REFS = ["L-906", "L-907", "L-908", "L-909"]
NEW_HOLD = {"L-901": ("Cold Harbour", {"patron": "P-177", "isbn": "978-1-4088-9492-6"})}
INPUTS["L-901"]["holds"]["Cold Harbour"].append(NEW_HOLD["L-901"][1])

CASES = [
    dict(case="zzv_lib_01", fault_kind="stale_data", input="L-901", root=("fetch_holds", 3), failure=("validate_route", 1),
         description="The holds tool answers Cold Harbour from last week's copy, which lacks the Piranesi hold placed since, so the van leaves without it."),
    dict(case="zzv_lib_02", fault_kind="tool_ignores_argument", input="L-902", root=("check_van_charge", 1), failure=("validate_route", 1),
         description="The van charge check ignores the planned distance and answers for its default 40 km, so van V-1 is sent on a route beyond its range."),
    dict(case="zzv_lib_03", fault_kind="format_drift", input="L-903", root=("ChatCompletion", 2), failure=("validate_route", 1),
         description="The notice model writes arrival times as '2.30pm' rather than the HH:MM the timetable uses."),
    dict(case="zzv_lib_04", fault_kind="wrong_retrieval", input="L-904", root=("catalogue_search", 2), failure=("validate_route", 1),
         description="The catalogue search returns the large-print edition of Hamnet for a hold on the standard edition, and that copy is loaded."),
    dict(case="zzv_lib_05", fault_kind="swallowed_error", input="L-905", root=("publish_timetable", 1), failure=("validate_route", 1),
         description="Publishing to the council calendar hits a 503 that the tool catches, returning a queued status with no calendar id."),
]

CLI = None


def brain(request):
    prompt = common.last_user(request)
    data = common.payload(prompt)
    if prompt.startswith("Order the stops"):
        order = sorted(data["stops"], key=lambda s: (data["windows"][s][0], s))
        return json.dumps({"order": order})
    if prompt.startswith("Write the stop notices"):
        out = []
        for row in data["timetable"]:
            t = row["arrive"]
            if kit.on("zzv_lib_03"):
                h, m = int(t[:2]), t[3:]
                t = f"{h % 12 or 12}.{m}{'am' if h < 12 else 'pm'}"
            out.append({"stop": row["stop"], "arrive": t, "text": f"The library van calls at {row['stop']} at {t}."})
        return json.dumps({"notices": out})
    return "Unclear."


def _hhmm(mins):
    return f"{mins // 60:02d}:{mins % 60:02d}"


def run_route(ot: common.Otel, req: dict):
    def tool(name, fn, **kw):
        return ot.call(name, "TOOL", fn, **kw)

    def chain(name, fn, **kw):
        return ot.call(name, "CHAIN", fn, **kw)

    with ot.span(NAME, "AGENT", {"route": req["route"]}) as root:
        r = tool("load_route_request", lambda route: {k: v for k, v in INPUTS[route].items() if k != "holds"}, route=req["route"])
        directory = tool("stop_directory", lambda stops: {s: STOPS[s] for s in stops}, stops=r["stops"])
        holds = {}

        def fetch(route, stop):
            live = INPUTS[route]["holds"][stop]
            if kit.on("zzv_lib_01") and NEW_HOLD.get(route, ("",))[0] == stop:
                return {"stop": stop, "as_of": "weekly export", "holds": live[:-1]}
            return {"stop": stop, "as_of": "live", "holds": live}

        raw = common.ask(CLI, "You plan the mobile library's day.", "Order the stops by their time windows as JSON.",
                         {"stops": r["stops"], "windows": {s: directory[s]["window"] for s in r["stops"]}})
        order = chain("parse_route", lambda raw: json.loads(raw)["order"], raw=raw)
        legs = tool("travel_times", lambda order: [{"stop": s, "km": STOPS[s]["km_from_depot"] // 2 + 4, "min": STOPS[s]["km_from_depot"] + 10} for s in order], order=order)
        tool("driver_hours", lambda driver, date: {"driver": driver, "date": date, "max_hours": 6}, driver=r["driver"], date=r["date"])
        for s in r["stops"]:
            holds[s] = tool("fetch_holds", fetch, route=req["route"], stop=s)["holds"]
        load = []
        for s in order:
            for h in holds[s]:
                def search(isbn):
                    got = isbn
                    if kit.on("zzv_lib_04") and isbn in LARGE_PRINT:
                        got = LARGE_PRINT[isbn]
                    return {"isbn": got, "title": TITLES.get(isbn), "branch": "Central", "shelf": f"F{int(got[-3:-2]) + 1}"}

                with ot.span("catalogue_search", "RETRIEVER", {"isbn": h["isbn"]}) as sp:
                    copy = search(h["isbn"])
                    sp.set_attribute("retrieval.documents.0.document.id", copy["isbn"])
                    sp.set_attribute("retrieval.documents.0.document.content", json.dumps(copy, sort_keys=True))
                load.append({"stop": s, "patron": h["patron"], "hold": h["isbn"], "copy": copy["isbn"]})

        def timetable(legs):
            t, rows = 9 * 60, []
            for leg in legs:
                t += leg["min"]
                rows.append({"stop": leg["stop"], "arrive": _hhmm(t)})
                t += 30
            return {"rows": rows, "km": sum(leg["km"] for leg in legs) * 2}

        tt = chain("build_timetable", timetable, legs=legs)

        def charge(van, route_km):
            planned = 40 if kit.on("zzv_lib_02") else route_km
            return {"van": van, "range_km": VANS[van]["range_km"], "planned_km": planned, "ok": planned <= VANS[van]["range_km"]}

        van = "V-1"
        if not tool("check_van_charge", charge, van=van, route_km=tt["km"])["ok"]:
            van = "V-2"
            tool("check_van_charge", charge, van=van, route_km=tt["km"])
        raw = common.ask(CLI, "You write notices for the mobile library.", "Write the stop notices as JSON.", {"timetable": tt["rows"]})
        notices = json.loads(raw)["notices"]

        def publish(route, rows):
            try:
                if kit.on("zzv_lib_05"):
                    raise ConnectionError("503 calendar service unavailable")
                return {"route": route, "status": "published", "calendar_id": f"CAL-{route[2:]}-{len(rows)}"}
            except ConnectionError:
                return {"route": route, "status": "queued"}

        pub = tool("publish_timetable", publish, route=req["route"], rows=tt["rows"])
        tool("send_notices", lambda route, notices: {"route": route, "sent": len(notices), "channel": "sms+web"}, route=req["route"], notices=notices)

        def validate(route, load, van, km, pub, notices, rows):
            live = INPUTS[route]["holds"]
            wanted = sorted((s, h["patron"], h["isbn"]) for s, hs in live.items() for h in hs)
            loaded = sorted((x["stop"], x["patron"], x["hold"]) for x in load)
            if wanted != loaded:
                miss = sorted(set(wanted) - set(loaded))
                raise ValueError(f"{route}: holds not on the van: {miss}")
            for x in load:
                if x["copy"] != x["hold"]:
                    raise ValueError(f"{route}: {x['patron']} holds {x['hold']}, copy {x['copy']} loaded")
            if km > VANS[van]["range_km"]:
                raise ValueError(f"{route}: {km} km route on {van} with {VANS[van]['range_km']} km range")
            if not pub.get("calendar_id"):
                raise ValueError(f"{route}: timetable status {pub['status']}, no calendar id")
            for n, row in zip(notices, rows):
                if n["arrive"] != row["arrive"]:
                    raise ValueError(f"{route}: notice for {n['stop']} says {n['arrive']}, timetable {row['arrive']}")
            return {"ok": True}

        chain("validate_route", validate, route=req["route"], load=load, van=van, km=tt["km"], pub=pub, notices=notices, rows=tt["rows"])
        root.set_attribute("output.value", json.dumps({"route": req["route"], "status": "ready"}))
        root.set_status(Status(StatusCode.OK))


OT = None


def record(server, key: str, out: str) -> None:
    global CLI, OT
    if OT is None:
        OT = common.Otel(NAME)
    server.use(brain)
    with OT as ot:
        CLI = common.client(server)
        try:
            run_route(ot, INPUTS[key])
        except ValueError:
            pass
    OT.write(out)
