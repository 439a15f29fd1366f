"""An organ builder's restoration proposals: scope the stops, assess each from the archive, route to a shop, cost."""

import json

import kit

NAME = "organ-restorations"
ROUTE = "otlp"
DOMAIN = "an organ builder's restorations"
SHAPE = ("OpenTelemetry spans: scope (model, parse) -> per stop (archive record, model assessment, parse, "
         "workshop router) -> costing sub-agent (rates, cost lines) -> proposal (model, build) -> validator")
SYSTEM = "You are the restoration planner of an organ builder. Answer in JSON only."

ARCHIVE = {
    "Open Diapason 8'": {"pipes": 56, "material": "spotted metal", "family": "flue"},
    "Stopped Diapason 8'": {"pipes": 56, "material": "oak", "family": "flue"},
    "Principal 4'": {"pipes": 56, "material": "spotted metal", "family": "flue"},
    "Fifteenth 2'": {"pipes": 56, "material": "spotted metal", "family": "flue"},
    "Trumpet 8'": {"pipes": 56, "material": "tin", "family": "reed"},
    "Oboe 8'": {"pipes": 44, "material": "tin", "family": "reed"},
    "Bourdon 16'": {"pipes": 30, "material": "pine", "family": "flue"},
    "Mixture III": {"pipes": 168, "material": "spotted metal", "family": "flue"},
}
RATES = {"year": 2026, "flue_per_pipe": 38, "reed_per_pipe": 95, "wood_per_pipe": 52}
RATES_2024 = {"year": 2024, "flue_per_pipe": 31, "reed_per_pipe": 80, "wood_per_pipe": 44}
SHOPS = {"reed": "reed shop", "flue": "voicing room"}
LAST_JOB = "St Aldhelm, Nettlecombe: Hill organ of 1871, Swell Oboe releathered"

INPUTS = {
    "o1": {"church": "St Mary, Wedmore", "stops": ["Open Diapason 8'", "Trumpet 8'", "Bourdon 16'"]},
    "o2": {"church": "All Saints, Wrington", "stops": ["Principal 4'", "Oboe 8'"]},
    "o3": {"church": "St Andrew, Cheddar", "stops": ["Stopped Diapason 8'", "Fifteenth 2'", "Mixture III", "Trumpet 8'"]},
    "o4": {"church": "St John, Glastonbury", "stops": ["Bourdon 16'", "Principal 4'", "Oboe 8'"]},
    "o5": {"church": "Holy Trinity, Burrington", "stops": ["Open Diapason 8'", "Fifteenth 2'", "Oboe 8'"]},
    "o6": {"church": "St Cuthbert, Wells", "stops": ["Mixture III", "Trumpet 8'", "Stopped Diapason 8'"]},
    "o7": {"church": "St Michael, Axbridge", "stops": ["Principal 4'", "Bourdon 16'"]},
    "o8": {"church": "St Peter, Banwell", "stops": ["Trumpet 8'", "Open Diapason 8'", "Fifteenth 2'", "Oboe 8'"]},
    "o9": {"church": "St Lawrence, Westbury", "stops": ["Stopped Diapason 8'", "Mixture III"]},
}
for _k, _v in INPUTS.items():
    _v["task"] = f"Restoration proposal for {_v['church']}: " + ", ".join(_v["stops"])

CASES = [
    dict(id="zzw-org-01", kind="lossy_parsing", input="o3",
         desc="The scope parser splits stop names on the apostrophe and keeps 'Fifteenth 2' without its foot mark, "
              "so the stop is costed under a name the archive does not hold."),
    dict(id="zzw-org-02", kind="swallowed_error", input="o5",
         desc="The archive lookup for Fifteenth 2' hits a read error that is caught and answered as a record of 0 pipes."),
    dict(id="zzw-org-03", kind="context_pollution", input="o8",
         desc="The proposal model, given last job's notes in its prompt, names St Aldhelm, Nettlecombe as the church."),
    dict(id="zzw-org-04", kind="wrong_routing", input="o6",
         desc="The workshop router sends the Trumpet 8' reed to the voicing room instead of the reed shop."),
    dict(id="zzw-org-05", kind="stale_data", input="o1",
         desc="The costing rates tool answers the 2024 rate card, so every line is priced below the 2026 rates."),
]
REFS = ["o2", "o4", "o7", "o9"]


def brain(tag, p):
    if tag == "SCOPE":
        return json.dumps({"church": p["church"], "stops": "; ".join(p["stops"])})
    if tag == "ASSESS":
        r = p["record"]
        work = "releather and regulate" if r["family"] == "reed" else "clean, repair and revoice"
        return json.dumps({"stop": p["stop"], "work": work, "pipes": r["pipes"], "family": r["family"]})
    if tag == "PROPOSAL":
        church = p["church"]
        if kit.on("zzw-org-03"):
            church = p["previous"].split(":")[0]
        return json.dumps({"church": church, "intro": f"Proposal for the restoration of the organ at {church}."})
    raise ValueError(tag)


def fetch_stop_record(stop: str) -> dict:
    try:
        if stop == "Fifteenth 2'" and kit.on("zzw-org-02"):
            raise OSError("archive volume 3 unreadable")
        return {"stop": stop, **ARCHIVE[stop]}
    except (OSError, KeyError):
        return {"stop": stop, "pipes": 0, "material": "unknown", "family": "flue"}


def get_rates(year: int) -> dict:
    if kit.on("zzw-org-05"):
        return dict(RATES_2024)
    return dict(RATES)


def scope(ctx, d):
    r = d["request"]
    text = ctx.llm("scope", "SCOPE", {"church": r["church"], "stops": r["stops"]})

    def parse_scope(t):
        s = json.loads(t)
        stops = []
        for raw in s["stops"].split("; "):
            name = raw.strip()
            if name.endswith("'") and name.startswith("Fif") and kit.on("zzw-org-01"):
                name = name.split("'")[0]
            stops.append(name)
        return {"church": s["church"], "stops": stops}

    sc = ctx.code("parse_scope", "parse", parse_scope, text)
    d["church"], d["items"], d["lines"] = sc["church"], sc["stops"], []


def per_stop(ctx, d):
    stop = d["items"][d["_i"]]
    rec = ctx.tool("fetch_stop_record", fetch_stop_record, {"stop": stop})
    text = ctx.llm("assess", "ASSESS", {"stop": stop, "record": rec})
    a = ctx.code("parse_assessment", "parse", json.loads, text)

    def route_workshop(x):
        shop = SHOPS[x["family"]]
        if x["family"] == "reed" and kit.on("zzw-org-04"):
            shop = SHOPS["flue"]
        return {"stop": x["stop"], "shop": shop}

    routed = ctx.code("route_workshop", "condition", route_workshop, a)
    d["lines"].append({"stop": stop, "pipes": a["pipes"], "family": a["family"], "material": rec["material"],
                       "work": a["work"], "shop": routed["shop"]})


def costing(ctx, d):
    rates = ctx.tool("get_rates", get_rates, {"year": 2026})

    def cost_lines(rt):
        out = []
        for x in d["lines"]:
            per = rt["reed_per_pipe"] if x["family"] == "reed" else (
                rt["wood_per_pipe"] if x["material"] in ("oak", "pine") else rt["flue_per_pipe"])
            out.append({**x, "cost": per * x["pipes"]})
        return out

    d["lines"] = ctx.code("cost_lines", "other", cost_lines, rates)


def proposal(ctx, d):
    text = ctx.llm("proposal", "PROPOSAL", {"church": d["church"], "lines": d["lines"], "previous": LAST_JOB})
    d["product"] = ctx.code("build_proposal", "other", lambda t: {
        **json.loads(t), "lines": d["lines"], "total": sum(x["cost"] for x in d["lines"])}, text)


def validate(ctx, d):
    r = d["request"]

    def validate_proposal(p):
        if p["church"] != r["church"]:
            raise ValueError(f"proposal is addressed to {p['church']}, the job is {r['church']}")
        if [x["stop"] for x in p["lines"]] != r["stops"]:
            raise ValueError(f"proposal stops {[x['stop'] for x in p['lines']]} differ from {r['stops']}")
        for x in p["lines"]:
            rec = ARCHIVE[x["stop"]]
            if x["pipes"] != rec["pipes"]:
                raise ValueError(f"{x['stop']}: {x['pipes']} pipes, the archive lists {rec['pipes']}")
            if x["shop"] != SHOPS[rec["family"]]:
                raise ValueError(f"{x['stop']}: {rec['family']} stop routed to the {x['shop']}")
            per = RATES["reed_per_pipe"] if rec["family"] == "reed" else (
                RATES["wood_per_pipe"] if rec["material"] in ("oak", "pine") else RATES["flue_per_pipe"])
            if x["cost"] != per * rec["pipes"]:
                raise ValueError(f"{x['stop']}: costed {x['cost']}, 2026 rates give {per * rec['pipes']}")
        return {"ok": True, "total": p["total"]}

    ctx.code("validate_proposal", "other", validate_proposal, d["product"])


def phases():
    return [("scope", scope), ("stop", per_stop, "loop"), ("costing", [("rates", costing)], "sub"),
            ("proposal", proposal), ("validate", validate)]
