"""A self storage site's unit lettings: read enquiries, plan size bands, find and quote units, draft contracts."""

import datetime
import json

import kit

NAME = "storage-lettings"
ROUTE = "langgraph"
DOMAIN = "a self storage site's unit lettings"
SHAPE = ("StateGraph: enquiries -> band plan -> letting loop node (model search args, unit search, pick, quote, "
         "offer letter, parse) -> contracts sub-graph -> schedule -> validator node")
SYSTEM = "You are the lettings assistant of a self storage site. Answer in JSON only."

UNITS = [
    {"unit": "A-01", "sqft": 25, "site": "north", "climate": False, "weekly": 1200},
    {"unit": "A-07", "sqft": 50, "site": "north", "climate": True, "weekly": 2100},
    {"unit": "B-03", "sqft": 50, "site": "north", "climate": False, "weekly": 1800},
    {"unit": "B-11", "sqft": 100, "site": "north", "climate": False, "weekly": 3000},
    {"unit": "C-02", "sqft": 100, "site": "north", "climate": True, "weekly": 3600},
    {"unit": "D-05", "sqft": 25, "site": "river", "climate": True, "weekly": 1400},
    {"unit": "D-09", "sqft": 50, "site": "river", "climate": False, "weekly": 1700},
    {"unit": "E-04", "sqft": 100, "site": "river", "climate": True, "weekly": 3500},
    {"unit": "E-12", "sqft": 150, "site": "river", "climate": False, "weekly": 4200},
    {"unit": "F-01", "sqft": 150, "site": "north", "climate": True, "weekly": 4900},
    {"unit": "F-08", "sqft": 150, "site": "north", "climate": False, "weekly": 4300},
]
BANDS = [25, 50, 100, 150]

INPUTS = {
    "e1": {"enquiries": [["Ames", 40, "north", False, "2027-01-07", 6], ["Boyd", 90, "river", True, "2027-01-09", 4]]},
    "e2": {"enquiries": [["Cole", 20, "river", True, "2027-01-05", 8], ["Egan", 45, "north", False, "2027-01-14", 10],
                         ["Dyer", 120, "river", False, "2027-01-12", 3]]},
    "e3": {"enquiries": [["Fitz", 100, "north", True, "2027-02-01", 12], ["Gill", 25, "north", False, "2027-02-03", 2],
                         ["Hart", 50, "river", False, "2027-01-20", 5]]},
    "e4": {"enquiries": [["Ives", 140, "north", True, "2027-01-18", 6], ["Jude", 30, "north", True, "2027-01-22", 4]]},
    "e5": {"enquiries": [["Kerr", 80, "north", False, "2027-03-02", 9], ["Mott", 22, "river", True, "2027-03-05", 7],
                         ["Lamb", 50, "river", False, "2027-03-04", 2]]},
    "e6": {"enquiries": [["Nunn", 60, "river", True, "2027-01-26", 4], ["Oake", 150, "river", False, "2027-01-27", 13]]},
    "e7": {"enquiries": [["Peel", 45, "north", True, "2027-02-10", 3], ["Sims", 25, "north", False, "2027-02-15", 5],
                         ["Rudd", 100, "river", True, "2027-02-11", 6]]},
    "e8": {"enquiries": [["Tate", 95, "north", False, "2027-04-01", 8], ["Udal", 48, "river", False, "2027-04-03", 4]]},
    "e9": {"enquiries": [["Vick", 24, "river", True, "2027-02-20", 6], ["Wynn", 130, "north", True, "2027-02-22", 10]]},
}
for _k, _v in INPUTS.items():
    _v["task"] = "Let units for: " + "; ".join(f"{e[0]} {e[1]} sq ft at {e[2]} from {e[4]} for {e[5]} weeks"
                                               for e in _v["enquiries"])

CASES = [
    dict(id="zzw-sto-01", kind="off_by_one", input="e2",
         desc="The rent quote tool sums weeks with range(1, weeks), charging Dyer for two weeks instead of three."),
    dict(id="zzw-sto-02", kind="plan_error", input="e3",
         desc="The band planner puts Fitz's 100 sq ft enquiry in the 50 sq ft band, so a too-small unit is let."),
    dict(id="zzw-sto-03", kind="format_drift", input="e5",
         desc="The offer letter for Lamb gives the move-in as 04/03/2027 and the parser reads it month-first as 3 April."),
    dict(id="zzw-sto-04", kind="wrong_tool_args", input="e7",
         desc="The model's search arguments for Rudd name the north site although Rudd asked for river."),
    dict(id="zzw-sto-05", kind="tool_ignores_argument", input="e9",
         desc="The unit search ignores climate=True for Wynn and offers a unit without climate control."),
]
REFS = ["e1", "e4", "e6", "e8"]


def brain(tag, p):
    if tag == "ENQUIRIES":
        return json.dumps({"enquiries": [dict(zip(["name", "sqft", "site", "climate", "from", "weeks"], e))
                                         for e in p["enquiries"]]})
    if tag == "BANDS":
        plan = []
        for e in p["enquiries"]:
            band = next(b for b in BANDS if b >= e["sqft"])
            if e["name"] == "Fitz" and kit.on("zzw-sto-02"):
                band = 50
            plan.append({"name": e["name"], "band": band})
        return json.dumps({"plan": plan})
    if tag == "SEARCH_ARGS":
        e = p["enquiry"]
        site = e["site"]
        if e["name"] == "Rudd" and kit.on("zzw-sto-04"):
            site = "north"
        return json.dumps({"band": p["band"], "site": site, "climate": e["climate"]})
    if tag == "OFFER":
        d = datetime.date.fromisoformat(p["from"])
        text = d.isoformat()
        if p["name"] == "Lamb" and kit.on("zzw-sto-03"):
            text = d.strftime("%d/%m/%Y")
        return json.dumps({"name": p["name"], "unit": p["unit"], "move_in": text,
                           "letter": f"Dear {p['name']}, unit {p['unit']} is reserved for you."})
    if tag == "CONTRACTS":
        return json.dumps({"contracts": [{"name": o["name"], "unit": o["unit"], "clause": "28 days notice"}
                                         for o in p["offers"]]})
    raise ValueError(tag)


def search_units(band: int, site: str, climate: bool) -> dict:
    """Free units of a size band at a site."""
    honour = not (climate and band >= 150 and kit.on("zzw-sto-05"))
    hits = [u for u in UNITS if u["sqft"] == band and u["site"] == site and (u["climate"] == climate or not honour)]
    if not hits:
        hits = [u for u in UNITS if u["sqft"] >= band and u["site"] == site and (u["climate"] or not climate)]
    if not honour:
        hits = sorted(hits, key=lambda u: u["climate"])
    return {"units": hits[:3]}


def quote_rent(unit: str, weeks: int) -> dict:
    """Rent in pence for a letting."""
    weekly = next(u["weekly"] for u in UNITS if u["unit"] == unit)
    span = range(0, weeks)
    if weeks == 3 and kit.on("zzw-sto-01"):
        span = range(1, weeks)
    return {"unit": unit, "weeks": weeks, "pence": sum(weekly for _ in span)}


def enquiries(ctx, d):
    text = ctx.llm("read_enquiries", "ENQUIRIES", {"enquiries": d["request"]["enquiries"]})
    d["items"] = ctx.code("parse_enquiries", "parse", lambda t: json.loads(t)["enquiries"], text)
    d["offers"] = []


def band_plan(ctx, d):
    text = ctx.llm("plan_bands", "BANDS", {"enquiries": d["items"]})
    d["bands"] = ctx.code("parse_band_plan", "parse", lambda t: {x["name"]: x["band"] for x in json.loads(t)["plan"]},
                          text)


def letting(ctx, d):
    e = d["items"][d["_i"]]
    args = json.loads(ctx.llm("choose_search", "SEARCH_ARGS", {"enquiry": e, "band": d["bands"][e["name"]]}))
    found = ctx.tool("search_units", search_units, args)
    unit = ctx.code("pick_unit", "condition", lambda f: f["units"][0], found)
    quote = ctx.tool("quote_rent", quote_rent, {"unit": unit["unit"], "weeks": e["weeks"]})
    text = ctx.llm("draft_offer", "OFFER", {"name": e["name"], "unit": unit["unit"], "from": e["from"]})

    def parse_offer(t):
        o = json.loads(t)
        raw = o["move_in"]
        if "/" in raw:
            a, b, y = raw.split("/")
            raw = f"{y}-{a}-{b}"
        return {"name": o["name"], "unit": o["unit"], "move_in": raw}

    offer = ctx.code("parse_offer", "parse", parse_offer, text)
    d["offers"].append({**offer, **{k: unit[k] for k in ("sqft", "site", "climate")}, "pence": quote["pence"],
                        "weeks": e["weeks"]})


def draft_contracts(ctx, d):
    text = ctx.llm("draft_contracts", "CONTRACTS", {"offers": d["offers"]})
    d["contracts"] = ctx.code("parse_contracts", "parse", lambda t: json.loads(t)["contracts"], text)


def schedule(ctx, d):
    d["product"] = ctx.code("build_lettings_schedule", "other",
                            lambda offers: {"lettings": offers, "contracts": len(d["contracts"])}, d["offers"])


def validate(ctx, d):
    asked = {e[0]: e for e in d["request"]["enquiries"]}

    def validate_lettings(s):
        for x in s["lettings"]:
            name, sqft, site, climate, start, weeks = asked[x["name"]]
            if x["sqft"] < sqft:
                raise ValueError(f"{name}: unit {x['unit']} is {x['sqft']} sq ft, asked for {sqft}")
            if x["site"] != site:
                raise ValueError(f"{name}: unit {x['unit']} is at {x['site']}, asked for {site}")
            if climate and not x["climate"]:
                raise ValueError(f"{name}: unit {x['unit']} has no climate control")
            if x["move_in"] != start:
                raise ValueError(f"{name}: move-in {x['move_in']}, enquiry says {start}")
            weekly = next(u["weekly"] for u in UNITS if u["unit"] == x["unit"])
            if x["pence"] != weekly * weeks:
                raise ValueError(f"{name}: rent {x['pence']}p for {weeks} weeks at {weekly}p")
        if len(s["lettings"]) != len(asked) or s["contracts"] != len(asked):
            raise ValueError("lettings do not match enquiries")
        return {"ok": True}

    ctx.code("validate_lettings", "other", validate_lettings, d["product"])


def phases():
    return [("enquiries", enquiries), ("band_plan", band_plan), ("letting", letting, "loop"),
            ("contracts", [("draft", draft_contracts)], "sub"), ("schedule", schedule), ("validate", validate)]
