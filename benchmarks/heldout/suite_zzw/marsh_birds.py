"""A salt marsh warden's high-tide bird survey: plan the sections, tally each from the field notebook,
verify the rarities with a sub-agent, and compile the monthly return."""

import json

import kit

NAME = "marsh-birds"
ROUTE = "otlp"
DOMAIN = "a salt marsh warden's bird surveys"
SHAPE = ("OpenTelemetry spans: tide plan (model, parse) -> per section (notebook retrieval, model tally, parse, "
         "species check) -> rarity sub-agent (rarity list, model verification, parse) -> return (model, table, build) "
         "-> validator")
SYSTEM = "You assist the warden of a salt marsh reserve with the monthly bird count. Answer in JSON only."

NOTEBOOK = {
    ("S1", "2026-12-05"): {"Redshank": 42, "Curlew": 11, "Dunlin": 160},
    ("S2", "2026-12-05"): {"Brent Goose": 230, "Grey Plover": 14, "Spotted Redshank": 1},
    ("S3", "2026-12-05"): {"Shelduck": 38, "Curlew": 6, "Little Egret": 4},
    ("S4", "2026-12-05"): {"Dunlin": 85, "Knot": 40, "Twite": 12},
    ("S1", "2026-11-21"): {"Redshank": 51, "Curlew": 9, "Dunlin": 140},
    ("S2", "2026-11-21"): {"Brent Goose": 310, "Grey Plover": 9},
    ("S3", "2026-11-21"): {"Shelduck": 44, "Curlew": 8, "Little Egret": 2, "Spoonbill": 1},
    ("S4", "2026-11-21"): {"Dunlin": 60, "Knot": 25},
    ("S1", "2026-11-07"): {"Redshank": 38, "Dunlin": 120, "Spotted Redshank": 1},
    ("S2", "2026-11-07"): {"Brent Goose": 190, "Grey Plover": 12},
    ("S3", "2026-11-07"): {"Shelduck": 30, "Little Egret": 5},
    ("S4", "2026-11-07"): {"Knot": 70, "Twite": 8},
    ("S1", "2026-10-24"): {"Redshank": 33, "Curlew": 14},
    ("S2", "2026-10-24"): {"Brent Goose": 120, "Spotted Redshank": 2},
    ("S3", "2026-10-24"): {"Shelduck": 22, "Spoonbill": 2},
    ("S4", "2026-10-24"): {"Dunlin": 45, "Knot": 18, "Twite": 5},
}
RARITIES = ["Spoonbill", "Spotted Redshank", "Twite"]
TIDE_ORDER = ["S3", "S1", "S4", "S2"]

INPUTS = {
    "w1": {"date": "2026-12-05", "sections": ["S1", "S2", "S3", "S4"]},
    "w2": {"date": "2026-11-21", "sections": ["S1", "S2", "S3", "S4"]},
    "w3": {"date": "2026-11-07", "sections": ["S1", "S2", "S3", "S4"]},
    "w4": {"date": "2026-10-24", "sections": ["S1", "S2", "S3", "S4"]},
    "w5": {"date": "2026-12-05", "sections": ["S1", "S3", "S4"]},
    "w6": {"date": "2026-11-21", "sections": ["S2", "S3", "S4"]},
    "w7": {"date": "2026-11-07", "sections": ["S1", "S2", "S4"]},
    "w8": {"date": "2026-10-24", "sections": ["S2", "S3"]},
    "w9": {"date": "2026-12-05", "sections": ["S2", "S4"]},
}
for _k, _v in INPUTS.items():
    _v["task"] = f"High-tide count on {_v['date']} for sections " + ", ".join(_v["sections"])

CASES = [
    dict(id="zzw-mar-01", kind="wrong_retrieval", input="w1",
         desc="The notebook search for section S1 returns the 2026-11-21 page instead of 2026-12-05, so the "
              "Redshank, Curlew and Dunlin counts belong to another visit."),
    dict(id="zzw-mar-02", kind="hallucinated_value", input="w2",
         desc="The return model states a total of 700 birds where the section tallies add up to 659."),
    dict(id="zzw-mar-03", kind="truncated_result", input="w3",
         desc="The species table renderer cuts the table at eight rows, dropping species from the return."),
    dict(id="zzw-mar-04", kind="subagent_wrong_entity", input="w4",
         desc="The rarity sub-agent verifies Redshank instead of Spotted Redshank, so the rarity goes unverified."),
    dict(id="zzw-mar-05", kind="plan_error", input="w6",
         desc="The tide plan model leaves section S4 out of the round, so its birds never reach the return."),
]
REFS = ["w5", "w7", "w8", "w9"]


def brain(tag, p):
    if tag == "PLAN":
        order = [s for s in TIDE_ORDER if s in p["sections"]]
        if "S4" in order and kit.on("zzw-mar-05"):
            order.remove("S4")
        return json.dumps({"order": order, "start": "two hours before high water"})
    if tag == "TALLY":
        rows = [{"species": k, "count": v} for k, v in sorted(p["entries"]["counts"].items())]
        return json.dumps({"section": p["section"], "rows": rows})
    if tag == "VERIFY":
        species = p["species"]
        if species == "Spotted Redshank" and kit.on("zzw-mar-04"):
            species = "Redshank"
        return json.dumps({"species": species, "verified": True, "by": "county recorder criteria"})
    if tag == "RETURN":
        total = sum(r["count"] for rows in p["tallies"].values() for r in rows)
        if kit.on("zzw-mar-02"):
            total = 700
        return json.dumps({"total": total, "remark": "calm, visibility good"})
    raise ValueError(tag)


def search_notebook(section: str, date: str) -> dict:
    key = (section, date)
    if section == "S1" and kit.on("zzw-mar-01"):
        key = (section, "2026-11-21")
    return {"section": section, "visit": date, "counts": dict(NOTEBOOK[key])}


def check_species(names: list) -> dict:
    return {"known": [n for n in names], "rarities": [n for n in names if n in RARITIES]}


def list_rarities(county: str) -> dict:
    return {"county": county, "species": list(RARITIES)}


def render_table(rows: list) -> dict:
    out = sorted(rows, key=lambda r: (-r["count"], r["species"]))
    if len(out) > 8 and kit.on("zzw-mar-03"):
        out = out[:8]
    return {"rows": out}


def tide_plan(ctx, d):
    r = d["request"]
    text = ctx.llm("plan", "PLAN", {"sections": r["sections"], "date": r["date"]})
    d["items"] = ctx.code("parse_tide_plan", "parse", lambda t: json.loads(t)["order"], text)
    d["tallies"], d["seen_rare"] = {}, []


def section(ctx, d):
    sec = d["items"][d["_i"]]
    page = ctx.tool("search_notebook", search_notebook, {"section": sec, "date": d["request"]["date"]},
                    kind="retrieval")
    text = ctx.llm("tally", "TALLY", {"section": sec, "entries": page})
    rows = ctx.code("parse_tally", "parse", lambda t: json.loads(t)["rows"], text)
    chk = ctx.tool("check_species", check_species, {"names": [x["species"] for x in rows]})
    d["tallies"][sec] = rows
    d["seen_rare"] += chk["rarities"]


def rarities(ctx, d):
    rl = ctx.tool("list_rarities", list_rarities, {"county": "Somerset"})
    d["verified"] = []
    for sp in sorted(set(d["seen_rare"])):
        if sp not in rl["species"]:
            continue
        text = ctx.llm("verify", "VERIFY", {"species": sp})
        v = ctx.code("parse_verification", "parse", json.loads, text)
        d["verified"].append(v["species"])


def compile_return(ctx, d):
    text = ctx.llm("return", "RETURN", {"tallies": d["tallies"], "date": d["request"]["date"]})
    merged = {}
    for rows in d["tallies"].values():
        for x in rows:
            merged[x["species"]] = merged.get(x["species"], 0) + x["count"]
    table = ctx.tool("render_table", render_table, {"rows": [{"species": k, "count": v} for k, v in merged.items()]})
    d["product"] = ctx.code("build_return", "other", lambda t: {
        "date": d["request"]["date"], "total": json.loads(t)["total"], "table": table["rows"],
        "sections": sorted(d["tallies"]), "verified": d["verified"]}, text)


def validate(ctx, d):
    r = d["request"]

    def validate_return(ret):
        if ret["sections"] != sorted(r["sections"]):
            raise ValueError(f"return covers sections {ret['sections']}, survey planned {sorted(r['sections'])}")
        book = {}
        for s in r["sections"]:
            for k, v in NOTEBOOK[(s, r["date"])].items():
                book[k] = book.get(k, 0) + v
        table = {x["species"]: x["count"] for x in ret["table"]}
        if table != book:
            missing = sorted(set(book) - set(table))
            raise ValueError(f"species table differs from the notebook for {r['date']}; missing {missing}, "
                             f"counts {sorted((k, v) for k, v in table.items() if book.get(k) != v)}")
        if ret["total"] != sum(book.values()):
            raise ValueError(f"return total {ret['total']}, counts add up to {sum(book.values())}")
        for sp in sorted(set(book) & set(RARITIES)):
            if sp not in ret["verified"]:
                raise ValueError(f"{sp} recorded without a verification")
        return {"ok": True}

    ctx.code("validate_return", "other", validate_return, d["product"])


def phases():
    return [("tide_plan", tide_plan), ("section", section, "loop"), ("rarities", [("verify", rarities)], "sub"),
            ("compile_return", compile_return), ("validate", validate)]
