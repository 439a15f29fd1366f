"""The two agents recorded with trajdebug's recording SDK: league fixtures and zoo nutrition."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trajdebug
from trajdebug.testing import Reply, Request

from ._harness import active


def _chat(client: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
    out = client.chat.completions.create(model="fake-model", messages=messages)
    return {"role": "assistant", "content": out.choices[0].message.content}


@trajdebug.step(kind="llm")
def ask_model(client: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
    return _chat(client, messages)


# -- sports-league fixtures -------------------------------------------------------------------

_WEEKEND = {7: ["2026-03-14", "2026-03-15"], 8: ["2026-03-21", "2026-03-22"], 9: ["2026-03-28", "2026-03-29"],
            10: ["2026-04-04", "2026-04-05"], 11: ["2026-04-11", "2026-04-12"]}
_GROUNDS = {"Harbor FC": "Quay Road", "Eastgate": "Eastgate Park", "Rovers II": "Mill Lane Annex",
            "Millbrook": "Brook Meadow", "Northfield": "North Oval", "Lakeside": "Lakeside Arena",
            "Rovers": "Mill Lane", "Kingsway": "Kingsway Ground"}


@trajdebug.step(kind="tool")
def fetch_calendar(league: str, round_no: int) -> dict[str, Any]:
    days = list(_WEEKEND[round_no])
    if active("k_fix_obo"):
        days = [days[0], f"2026-{_shift(days[1])}"]
    return {"league": league, "round": round_no, "kickoff_days": days, "slots": ["13:00", "15:30"]}


def _shift(day: str) -> str:
    _, m, d = day.split("-")
    return f"{m}-{int(d) + 1:02d}"


def fixture_policy(request: Request) -> Reply | str:
    prompt = request.body["messages"][-1]["content"]
    data = json.loads(prompt.split("\n", 1)[1])
    teams, days = list(data["teams"]), data["kickoff_days"]
    pairs = [[teams[i], teams[i + 1]] for i in range(0, len(teams), 2)]
    if active("k_fix_plan"):
        pairs[-1][0] = pairs[0][0]
    lines = [f"{h} vs {a} | {days[k % 2]} {data['slots'][k // 2 % 2]}" for k, (h, a) in enumerate(pairs)]
    return "Proposed fixtures:\n" + "\n".join(lines)


@trajdebug.step(kind="parse")
def parse_pairings(message: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for line in message["content"].splitlines()[1:]:
        teams, when = line.split(" | ")
        home, away = teams.split(" vs ")
        if active("k_fix_lossy"):
            home = home.removesuffix(" II")
        day, time = when.split(" ")
        rows.append({"home": home, "away": away, "day": day, "kickoff": time})
    return rows


@trajdebug.step(kind="tool")
def venue_api(home: str, day: str, attempt: int) -> dict[str, Any]:
    if home not in _GROUNDS or (home == "Rovers" and day.startswith("2026-03")):
        raise LookupError(f"venue registry: club '{home}' has no ground licensed for {day}")
    if day.endswith(("16", "23", "30")):
        raise ValueError(f"venue registry: {_GROUNDS[home]} is closed on weekdays ({day})")
    if home == "Northfield" and attempt == 0:
        raise TimeoutError("venue registry timed out after 5.0 s")
    return {"ground": _GROUNDS[home], "day": day, "confirmed": True}


@trajdebug.step(kind="other")
def reserve_venue(fixture: dict[str, Any]) -> dict[str, Any]:
    for attempt in range(3):
        try:
            return venue_api(fixture["home"], fixture["day"], attempt)
        except TimeoutError:
            if active("k_fix_swallow"):
                return {"ground": "TBC", "day": fixture["day"], "confirmed": False}
    raise TimeoutError("venue registry unavailable")


@trajdebug.step(kind="state")
def record_broadcast(fixtures: list[dict[str, Any]]) -> dict[str, Any]:
    window = 1.75 if active("k_fix_unit") else 105
    memo = {"round_windows": [{"match": f"{f['home']}-{f['away']}", "window_min": window} for f in fixtures]}
    trajdebug.current_run().state["broadcast"] = memo
    return memo


@trajdebug.step(kind="tool")
def book_broadcast() -> dict[str, Any]:
    memo = trajdebug.current_run().state["broadcast"]
    for w in memo["round_windows"]:
        if w["window_min"] < 90:
            raise ValueError(f"broadcast desk: window {w['window_min']} min for {w['match']} is below the 90 min minimum")
    return {"booked": len(memo["round_windows"])}


@trajdebug.step(kind="condition")
def validate_round(teams: list[str], fixtures: list[dict[str, Any]], venues: list[dict[str, Any]]) -> dict[str, Any]:
    seen: list[str] = [t for f in fixtures for t in (f["home"], f["away"])]
    for t in seen:
        if seen.count(t) > 1:
            raise AssertionError(f"round check: {t} is scheduled {seen.count(t)} times")
    return {"teams": len(set(seen)), "venues_confirmed": sum(v["confirmed"] for v in venues)}


@trajdebug.step(kind="tool")
def publish_fixtures(fixtures: list[dict[str, Any]], venues: list[dict[str, Any]]) -> dict[str, Any]:
    for f, v in zip(fixtures, venues):
        if not v["confirmed"]:
            raise RuntimeError(f"league portal rejected round: {f['home']} v {f['away']} has no confirmed ground")
    return {"published": len(fixtures)}


def fixture_agent(client: Any, given: dict[str, Any], path: Path) -> None:
    with trajdebug.run("fixture-scheduler", path=str(path), task=f"schedule round {given['round']}"):
        cal = fetch_calendar(given["league"], given["round"])
        prompt = "Pair these teams for the round, home team first, one line each.\n" + json.dumps(
            {"teams": given["teams"], "kickoff_days": cal["kickoff_days"], "slots": cal["slots"]})
        plan = ask_model(client, [{"role": "system", "content": "You schedule league fixtures."},
                                  {"role": "user", "content": prompt}])
        fixtures = parse_pairings(plan)
        venues = [reserve_venue(f) for f in fixtures]
        record_broadcast(fixtures)
        book_broadcast()
        validate_round(given["teams"], fixtures, venues)
        publish_fixtures(fixtures, venues)


FIXTURE_INPUTS = [
    {"league": "County Premier", "round": 7, "teams": ["Harbor FC", "Eastgate", "Rovers II", "Millbrook",
                                                       "Northfield", "Lakeside", "Kingsway", "Rovers"]},
    {"league": "County Premier", "round": 8, "teams": ["Eastgate", "Kingsway", "Lakeside", "Harbor FC"]},
    {"league": "County Premier", "round": 9, "teams": ["Millbrook", "Northfield", "Kingsway", "Lakeside"]},
    {"league": "County Premier", "round": 10, "teams": ["Northfield", "Harbor FC", "Millbrook", "Kingsway"]},
    {"league": "County Premier", "round": 11, "teams": ["Lakeside", "Millbrook", "Harbor FC", "Northfield"]},
]


# -- zoo nutrition ------------------------------------------------------------------------------

_ANIMALS = [("ZK-0101", "Reticulated giraffe", 830), ("ZK-0102", "Okapi", 240), ("ZK-0103", "Black rhino", 1150),
            ("ZK-0104", "Red panda", 5.4), ("ZK-0105", "Meerkat", 0.7), ("ZK-0106", "Asian elephant", 3900),
            ("ZK-0107", "Fennec fox", 1.3), ("ZK-0108", "Capybara", 52), ("ZK-0109", "Ring-tailed lemur", 2.4),
            ("ZK-0110", "Snow leopard", 41), ("ZK-0111", "Gentoo penguin", 6.1), ("ZK-0112", "Binturong", 18),
            ("ZK-0113", "Aardvark", 60), ("ZK-0114", "Pygmy hippo", 230)]
_SHEETS = {aid: {"sheet": f"DS-{aid[-3:]}", "share_pct": 3.0, "calcium_g": round(max(w, 1) ** 0.5, 1),
                 "excluded": ["peanut"] if aid in ("ZK-0112", "ZK-0109") else []} for aid, _, w in _ANIMALS}


@trajdebug.step(kind="tool")
def fetch_weights(section: str) -> list[dict[str, Any]]:
    rows = [{"animal": a, "species": s, "kg": w, "as_of": "2026-11-28"} for a, s, w in _ANIMALS]
    if active("k_zoo_stale"):
        rows[9] = {**rows[9], "kg": 12.5, "as_of": "2025-02-03"}
    return [r for r in rows if section == "all" or r["animal"] in section]


@trajdebug.step(kind="retrieval")
def lookup_diet(animal: str, species: str) -> dict[str, Any]:
    if active("k_zoo_retrieval") and animal == "ZK-0102":
        return {"animal": animal, "species": species, **_SHEETS["ZK-0101"]}
    return {"animal": animal, "species": species, **_SHEETS[animal]}


@trajdebug.step(kind="state")
def remember_exclusions(sheet: dict[str, Any]) -> dict[str, Any]:
    memo = trajdebug.current_run().state.setdefault("exclusions", {})
    key = sheet["animal"]
    if active("k_zoo_memory") and key == "ZK-0112":
        key = "ZK-0121"
    memo[key] = list(sheet["excluded"])
    return {key: memo[key]}


def zoo_policy(request: Request) -> Reply | str:
    data = json.loads(request.body["messages"][-1]["content"].split("\n", 1)[1])
    calcium = data["calcium_g"]
    if active("k_zoo_halluc") and data["animal"] == "ZK-0106":
        calcium = 420.0
    extra = "peanut" if data["animal"] == "ZK-0112" and "peanut" not in data["avoid"] else "banana"
    if any("peanut butter" in n for n in data["notes"]):
        extra = "peanut"
    return json.dumps({"animal": data["animal"], "calcium_g": calcium, "treat": extra})


@trajdebug.step(kind="other")
def build_context(animal: str, sheet: dict[str, Any]) -> dict[str, Any]:
    avoid = trajdebug.current_run().state["exclusions"].get(animal, [])
    ctx = {"animal": animal, "calcium_g": sheet["calcium_g"], "avoid": avoid, "notes": [f"sheet {sheet['sheet']}"]}
    if active("k_zoo_pollute") and animal == "ZK-0109":
        ctx["notes"].append("keeper log 11-27: enrichment feed trial with peanut butter for binturong")
    return ctx


@trajdebug.step(kind="parse")
def read_supplement(message: dict[str, Any]) -> dict[str, Any]:
    return json.loads(message["content"])


@trajdebug.step(kind="other")
def compute_ration(row: dict[str, Any], sheet: dict[str, Any], supplement: dict[str, Any]) -> dict[str, Any]:
    kg = round(row["kg"] * sheet["share_pct"] / 100, 2)
    return {"animal": row["animal"], "ration_kg": kg, "body_kg": row["kg"], "sheet": sheet["sheet"],
            "calcium_g": supplement["calcium_g"], "treat": supplement["treat"]}


@trajdebug.step(kind="tool")
def order_feed(rations: list[dict[str, Any]]) -> dict[str, Any]:
    for r in rations:
        if r["sheet"] != f"DS-{r['animal'][-3:]}":
            raise ValueError(f"feed store: diet sheet {r['sheet']} is not registered to {r['animal']}")
    return {"order": "FO-55120", "lines": len(rations)}


@trajdebug.step(kind="condition")
def vet_review(rations: list[dict[str, Any]]) -> dict[str, Any]:
    truth_kg = {a: w for a, _, w in _ANIMALS}
    excluded = {a: s["excluded"] for a, s in _SHEETS.items()}
    for r in rations:
        if r["treat"] in excluded[r["animal"]]:
            raise AssertionError(f"vet review: {r['treat']} is excluded for {r['animal']}")
        if r["calcium_g"] > 3 * _SHEETS[r["animal"]]["calcium_g"]:
            raise AssertionError(f"vet review: calcium {r['calcium_g']} g for {r['animal']} is over the sheet maximum")
        if abs(r["ration_kg"] - truth_kg[r["animal"]] * 0.03) > 0.5:
            raise AssertionError(f"vet review: ration {r['ration_kg']} kg for {r['animal']} does not match a body weight of {truth_kg[r['animal']]} kg on the clinic record")
    return {"approved": len(rations)}


def zoo_agent(client: Any, given: dict[str, Any], path: Path) -> None:
    with trajdebug.run("ration-planner", path=str(path), task=f"weekly rations, {given['section']}"):
        rows = fetch_weights(given["section"])
        rations = []
        for row in rows:
            sheet = lookup_diet(row["animal"], row["species"])
            remember_exclusions(sheet)
            ctx = build_context(row["animal"], sheet)
            msg = ask_model(client, [{"role": "system", "content": "You are the zoo nutritionist."},
                                     {"role": "user", "content": "Supplement and treat for:\n" + json.dumps(ctx)}])
            rations.append(compute_ration(row, sheet, read_supplement(msg)))
        vet_review(rations)
        order_feed(rations)


ZOO_INPUTS = [{"section": "all"}, {"section": "ZK-0101 ZK-0102 ZK-0103"}, {"section": "ZK-0104 ZK-0105 ZK-0107"},
              {"section": "ZK-0110 ZK-0111 ZK-0113"}, {"section": "ZK-0106 ZK-0108 ZK-0114"}]
