"""A dog walker's daily rounds: extract the booking, plan the round, assess each dog, price, confirm."""

import json

import kit

NAME = "dog-rounds"
ROUTE = "sdk"
DOMAIN = "a dog walker's rounds"
SHAPE = "extract -> plan -> per dog (profile with retry, assess, parse, state) -> pricing sub-agent -> summary -> validator"
SYSTEM = "You plan a dog walker's day. Answer in JSON only."

DOGS = {
    "D-114": {"name": "Biscuit", "breed": "beagle", "energy": "high", "walk": "60 min"},
    "D-141": {"name": "Bramble", "breed": "whippet", "energy": "medium", "walk": "45 min"},
    "D-203": {"name": "Pepper", "breed": "collie", "energy": "high", "walk": "1.5 h"},
    "D-230": {"name": "Mabel", "breed": "pug", "energy": "low", "walk": "30 min"},
    "D-305": {"name": "Otis", "breed": "labrador", "energy": "medium", "walk": "0.75 h"},
    "D-350": {"name": "Hazel", "breed": "spaniel", "energy": "high", "walk": "50 min"},
    "D-412": {"name": "Rolo", "breed": "dachshund", "energy": "low", "walk": "25 min"},
    "D-421": {"name": "Juno", "breed": "husky", "energy": "high", "walk": "1.25 h"},
}
TARIFF = {"season": "2026", "pence_per_min": 32}
LAST_TARIFF = {"season": "2025", "pence_per_min": 29}

INPUTS = {
    "mon": {"walker": "Tess", "date": "2026-12-07", "dogs": ["D-114", "D-203", "D-141", "D-305"]},
    "tue": {"walker": "Tess", "date": "2026-12-08", "dogs": ["D-230", "D-141", "D-350"]},
    "wed": {"walker": "Ravi", "date": "2026-12-09", "dogs": ["D-412", "D-421", "D-114", "D-305"]},
    "thu": {"walker": "Ravi", "date": "2026-12-10", "dogs": ["D-203", "D-230", "D-412"]},
    "fri": {"walker": "Tess", "date": "2026-12-11", "dogs": ["D-350", "D-114", "D-421"]},
    "sat": {"walker": "Ravi", "date": "2026-12-12", "dogs": ["D-141", "D-305", "D-412", "D-230"]},
    "sun": {"walker": "Tess", "date": "2026-12-13", "dogs": ["D-421", "D-350"]},
    "hol": {"walker": "Ravi", "date": "2026-12-14", "dogs": ["D-114", "D-230", "D-203"]},
    "xmas": {"walker": "Tess", "date": "2026-12-15", "dogs": ["D-305", "D-412", "D-350", "D-141"]},
}
for _k, _v in INPUTS.items():
    _v["task"] = f"Plan {_v['walker']}'s round on {_v['date']}: " + ", ".join(_v["dogs"])

CASES = [
    dict(id="zzw-dog-01", kind="wrong_retrieval", input="mon",
         desc="The profile lookup for D-305 returns the record of D-350 (a near id), so Hazel is walked in place of Otis."),
    dict(id="zzw-dog-02", kind="unit_error", input="sat",
         desc="The assessment parser reads Otis's '0.75 h' walk as 0.75 minutes instead of 45 minutes."),
    dict(id="zzw-dog-03", kind="bad_memory_write", input="wed",
         desc="Recording the second dog's walk writes it under the first dog's key, so D-421 has no walk in memory."),
    dict(id="zzw-dog-04", kind="off_by_one", input="xmas",
         desc="The plan parser slices the model's route with [:-1] and drops the last dog of the round."),
    dict(id="zzw-dog-05", kind="stale_data", input="fri",
         desc="The tariff lookup answers from last season's cached tariff (29p a minute instead of 32p)."),
]
REFS = ["tue", "thu", "sun", "hol"]


def brain(tag, p):
    if tag == "EXTRACT":
        r = p["request"]
        return json.dumps({"walker": r["walker"], "date": r["date"], "dogs": r["dogs"]})
    if tag == "PLAN":
        return json.dumps({"route": sorted(p["dogs"], key=lambda d: d[-1]) , "note": "shortest loop via the park"})
    if tag == "ASSESS":
        prof = p["profile"]
        return json.dumps({"dog": prof["id"], "name": prof["name"], "walk": prof["walk"],
                           "group": prof["energy"] != "high"})
    if tag == "SUMMARY":
        return json.dumps({"text": f"{len(p['lines'])} walks booked for {p['walker']} on {p['date']}."})
    raise ValueError(tag)


_flaky = {"n": 0}


def fetch_dog_profile(dog_id: str) -> dict:
    _flaky["n"] += 1
    if _flaky["n"] == 2:
        raise ConnectionError("kennel register timed out")
    key = dog_id
    if dog_id == "D-305" and kit.on("zzw-dog-01"):
        key = "D-350"
    return {"id": key, **DOGS[key]}


def get_tariff(season: str) -> dict:
    if kit.on("zzw-dog-05"):
        return dict(LAST_TARIFF)
    return dict(TARIFF)


def intake(ctx, d):
    _flaky["n"] = 0
    text = ctx.llm("extract_booking", "EXTRACT", {"request": d["request"]})

    def parse_booking(t):
        b = json.loads(t)
        ctx.state["booking"] = b
        return b

    d["booking"] = ctx.code("parse_booking", "parse", parse_booking, text)


def plan(ctx, d):
    b = d["booking"]
    text = ctx.llm("plan_route", "PLAN", {"dogs": b["dogs"], "date": b["date"]})

    def parse_route(t):
        route = json.loads(t)["route"]
        if kit.on("zzw-dog-04"):
            route = route[:-1]
        return route

    d["items"] = ctx.code("parse_route", "parse", parse_route, text)


def per_dog(ctx, d):
    dog = d["items"][d["_i"]]
    prof = ctx.tool_retry("fetch_dog_profile", fetch_dog_profile, {"dog_id": dog})
    text = ctx.llm("assess_dog", "ASSESS", {"profile": prof})

    def parse_assessment(t):
        a = json.loads(t)
        num, unit = a["walk"].split()
        minutes = float(num) * 60 if unit == "h" else float(num)
        if unit == "h" and a["dog"] == "D-305" and kit.on("zzw-dog-02"):
            minutes = float(num)
        return {"dog": a["dog"], "name": a["name"], "minutes": minutes, "group": a["group"]}

    walk = ctx.code("parse_assessment", "parse", parse_assessment, text)
    pos = d["_i"]

    def record_walk(w):
        key = f"walk:{w['dog']}"
        if pos == 1 and kit.on("zzw-dog-03"):
            key = f"walk:{d['items'][0]}"
        ctx.state[key] = w
        return key

    ctx.code("record_walk", "state", record_walk, walk)


def price_walks(ctx, d):
    tariff = ctx.tool("get_tariff", get_tariff, {"season": "2026"})

    def price_lines(t):
        lines = []
        for dog in d["items"]:
            w = ctx.state.get(f"walk:{dog}")
            if w is None:
                continue
            lines.append({"dog": w["dog"], "name": w["name"], "minutes": w["minutes"],
                          "pence": round(w["minutes"] * t["pence_per_min"])})
        return lines

    d["lines"] = ctx.code("price_lines", "other", price_lines, tariff)


def compose(ctx, d):
    b = d["booking"]
    text = ctx.llm("write_summary", "SUMMARY", {"lines": d["lines"], "walker": b["walker"], "date": b["date"]})
    d["product"] = ctx.code("build_round_sheet", "other", lambda t: {
        "walker": b["walker"], "date": b["date"], "lines": d["lines"],
        "total_pence": sum(x["pence"] for x in d["lines"]),
        "summary": json.loads(t)["text"]}, text)


def validate(ctx, d):
    booked = d["request"]["dogs"]

    def validate_round_sheet(sheet):
        ids = [x["dog"] for x in sheet["lines"]]
        if sorted(ids) != sorted(booked):
            raise ValueError(f"round sheet dogs {ids} do not match booked dogs {booked}")
        for x in sheet["lines"]:
            if DOGS[x["dog"]]["name"] != x["name"]:
                raise ValueError(f"dog {x['dog']} listed as {x['name']}")
            if not 20 <= x["minutes"] <= 120:
                raise ValueError(f"walk for {x['dog']} is {x['minutes']} minutes, outside 20-120")
            if x["pence"] != round(x["minutes"] * TARIFF["pence_per_min"]):
                raise ValueError(f"line for {x['dog']} priced {x['pence']}p, tariff gives "
                                 f"{round(x['minutes'] * TARIFF['pence_per_min'])}p")
        if sheet["total_pence"] != sum(x["pence"] for x in sheet["lines"]):
            raise ValueError("total does not add up")
        return {"ok": True, "dogs": len(ids)}

    ctx.code("validate_round_sheet", "other", validate_round_sheet, d["product"])


def phases():
    return [("intake", intake), ("plan", plan), ("walk", per_dog, "loop"),
            ("pricing", [("price", price_walks)], "sub"),
            ("compose", compose), ("validate", validate)]
