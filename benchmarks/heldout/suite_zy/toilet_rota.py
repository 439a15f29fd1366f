"""Public toilet cleaning rota (recording SDK): site register, footfall per site with retries, visit plan, staff sub-agent, publish."""

from __future__ import annotations

import json
from pathlib import Path

import trajdebug

from .common import Case, chat, last_user
from .kit import active

AGENT, ROUTE, DOMAIN = "toilet-rota-planner", "sdk", "public toilet cleaning rota"
SHAPE = "register lookup -> footfall fetch (retry) + CSV parse per site -> LLM visit plan -> state -> staff allocator sub-agent -> render -> publish"

REGISTER = {
    "Eastgate": [("WC-E03", "A"), ("WC-E07", "B"), ("WC-E11", "B")],
    "Riverside": [("WC-R02", "A"), ("WC-R05", "A"), ("WC-R09", "B")],
    "Northfield": [("WC-N12", "B"), ("WC-N14", "A")],
    "Harbourside": [("WC-H01", "A"), ("WC-H04", "B")],
    "Old Town": [("WC-O02", "B"), ("WC-O06", "B"), ("WC-O08", "A")],
    "Parkway": [("WC-P03", "A"), ("WC-P05", "B")],
}
NEIGHBOUR = {"Eastgate": "Northfield", "Riverside": "Harbourside"}
LEAVE = {"2026-W23": ["C. Dube"], "2026-W24": ["T. Varga"], "2026-W25": [], "2026-W26": ["J. Amadi"], "2026-W27": []}
CLEANERS = ["C. Dube", "T. Varga", "J. Amadi", "S. Kowal", "L. Brennan"]

INPUTS = {
    "eastgate": {"district": "Eastgate", "week": "2026-W24"},
    "riverside": {"district": "Riverside", "week": "2026-W26"},
    "r1": {"district": "Old Town", "week": "2026-W25"},
    "r2": {"district": "Parkway", "week": "2026-W23"},
    "r3": {"district": "Harbourside", "week": "2026-W27"},
    "r4": {"district": "Northfield", "week": "2026-W25"},
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    Case("toilets-1", "wrong_retrieval", "fetch_site_register", 1, "publish_rota", 1, "eastgate",
         "The register search returns the neighbouring district's sites, so the rota is built for toilets outside the district."),
    Case("toilets-2", "swallowed_error", "parse_footfall", 2, "publish_rota", 1, "riverside",
         "The footfall parser catches a malformed row, returns zero footfall for the site and goes on, so the site gets no cleans."),
    Case("toilets-3", "tool_ignores_argument", "list_cleaners", 1, "publish_rota", 1, "riverside",
         "The staff directory ignores the week it is asked about and returns the default availability, keeping a cleaner who is on leave."),
    Case("toilets-4", "plan_error", "plan_visits", 1, "publish_rota", 1, "eastgate",
         "The planning model gives category A sites one clean a day instead of two."),
    Case("toilets-5", "off_by_one", "render_rota", 1, "publish_rota", 1, "riverside",
         "The renderer loops over days 1 to 6, leaving Sunday out of the published week."),
]
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


def policy(request):
    p = last_user(request)
    data = json.loads(p.split("\n", 1)[1])
    if p.startswith("PLAN"):
        a_per_day = 1 if active("toilets-4") else 2
        visits = {}
        for s in data["sites"]:
            if s["footfall"] <= 0:
                continue
            visits[s["site"]] = a_per_day if s["category"] == "A" else 1
        return json.dumps({"daily_visits": visits})
    if p.startswith("ASSIGN"):
        avail = data["available"]
        return json.dumps({site: avail[i % len(avail)] for i, site in enumerate(sorted(data["visits"]))})
    return "{}"


@trajdebug.step(kind="retrieval")
def fetch_site_register(district: str) -> list[dict]:
    d = NEIGHBOUR.get(district, district) if active("toilets-1") else district
    return [{"site": s, "category": c, "district": d} for s, c in REGISTER[d]]


_flaky = {"n": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def get_footfall(site: str, week: str) -> str:
    _flaky["n"] += 1
    if _flaky["n"] % 4 == 2:
        raise ConnectionError("footfall counter gateway timed out")
    base = 300 + sum(map(ord, site)) % 200
    rows = [f"{day},{base + 10 * i}" for i, day in enumerate(DAYS)]
    if site in ("WC-R05",):
        rows[3] = "Thu,n/a"
    return "day,count\n" + "\n".join(rows)


@trajdebug.step(kind="parse")
def parse_footfall(site: str, csv_text: str) -> dict:
    total = 0
    try:
        for line in csv_text.splitlines()[1:]:
            day, count = line.split(",")
            if count == "n/a":
                if active("toilets-2"):
                    raise ValueError(f"bad count on {day}")
                continue
            total += int(count)
    except ValueError:
        total = 0
    return {"site": site, "footfall": total}


@trajdebug.step(kind="llm")
def plan_visits(base_url: str, sites: list[dict]) -> str:
    return chat(base_url, "PLAN daily cleaning visits per site\n" + json.dumps({"sites": sites}))


@trajdebug.step(kind="state")
def store_plan(plan: dict) -> None:
    trajdebug.current_run().state["plan"] = plan


@trajdebug.step(kind="tool")
def list_cleaners(week: str) -> list[dict]:
    w = "2026-W23" if active("toilets-3") else week
    return [{"name": n, "on_leave": n in LEAVE[w]} for n in CLEANERS]


@trajdebug.step(kind="llm")
def assign_cleaners(base_url: str, visits: dict, available: list[str]) -> str:
    return chat(base_url, "ASSIGN one cleaner per site\n" + json.dumps({"visits": visits, "available": available}))


@trajdebug.step(kind="condition")
def check_hours(assignment: dict) -> dict:
    load = {}
    for who in assignment.values():
        load[who] = load.get(who, 0) + 1
    return {"ok": all(v <= 2 for v in load.values()), "load": load}


@trajdebug.step(kind="agent")
def staff_allocator(base_url: str, week: str, visits: dict) -> dict:
    staff = list_cleaners(week)
    avail = [c["name"] for c in staff if not c["on_leave"]]
    assignment = json.loads(assign_cleaners(base_url, visits, avail))
    check_hours(assignment)
    return assignment


@trajdebug.step(kind="other")
def render_rota(sites: list[dict], plan: dict, assignment: dict) -> list[dict]:
    days = DAYS[1:] if active("toilets-5") else DAYS
    rows = []
    for day in days:
        for s in sites:
            n = plan["daily_visits"].get(s["site"], 0)
            if n:
                rows.append({"day": day, "site": s["site"], "cleans": n, "cleaner": assignment.get(s["site"])})
    return rows


class PublishError(Exception):
    pass


@trajdebug.step(kind="tool")
def publish_rota(district: str, week: str, rows: list[dict]) -> dict:
    sites = {s for s, _ in REGISTER[district]}
    cats = dict(REGISTER[district])
    for r in rows:
        if r["site"] not in sites:
            raise PublishError(f"HTTP 400 from rota service: site {r['site']} is not in district {district}")
    days = sorted({r["day"] for r in rows}, key=DAYS.index)
    if len(days) != 7:
        raise PublishError(f"HTTP 400 from rota service: rota for {week} covers {len(days)} days ({days[0]}-{days[-1]}), expected 7")
    for site in sorted(sites):
        weekly = sum(r["cleans"] for r in rows if r["site"] == site)
        need = 14 if cats[site] == "A" else 7
        if weekly < need:
            raise PublishError(f"HTTP 400 from rota service: {site} (category {cats[site]}) has {weekly} cleans in {week}, minimum {need}")
    for r in rows:
        if r["cleaner"] in LEAVE[week]:
            raise PublishError(f"HTTP 409 from rota service: {r['cleaner']} is on leave in {week} ({r['site']} {r['day']})")
    return {"published": f"{district}/{week}", "entries": len(rows)}


def record(inp: dict, path: Path, base_url: str) -> None:
    _flaky["n"] = 0
    try:
        with trajdebug.run(AGENT, task=f"cleaning rota {inp['district']} {inp['week']}", path=str(path)) as run:
            with trajdebug.step("rota_request", kind="input") as s:
                s.output = dict(inp)
            sites = fetch_site_register(inp["district"])
            counts = []
            for s in sites:
                f = parse_footfall(s["site"], get_footfall(s["site"], inp["week"]))
                counts.append({**s, "footfall": f["footfall"]})
            plan = json.loads(plan_visits(base_url, counts))
            store_plan(plan)
            assignment = staff_allocator(base_url, inp["week"], run.state["plan"]["daily_visits"])
            rows = render_rota(sites, run.state["plan"], assignment)
            publish_rota(inp["district"], inp["week"], rows)
    except PublishError:
        pass
