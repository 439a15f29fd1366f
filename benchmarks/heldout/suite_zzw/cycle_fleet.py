"""A cycle hire fleet's morning: triage the fault reports, route repairs, rebalance docks, issue work orders."""

import json

import kit

NAME = "cycle-fleet"
ROUTE = "langgraph"
DOMAIN = "a cycle hire fleet"
SHAPE = ("StateGraph: triage -> repair loop node (bike lookup, model classify, route, estimate) -> "
         "dock-balance sub-graph (dock read, model moves, parse) -> roster -> validator node")
SYSTEM = "You are the fleet controller of a city cycle hire scheme. Answer in JSON only."

BIKES = {
    "B-1001": {"type": "classic", "dock": "ST-12"}, "B-1002": {"type": "e-bike", "dock": "ST-21"},
    "B-1003": {"type": "classic", "dock": "ST-07"}, "B-1004": {"type": "e-bike", "dock": "ST-12"},
    "B-1005": {"type": "e-bike", "dock": "ST-30"}, "B-1006": {"type": "classic", "dock": "ST-21"},
    "B-1007": {"type": "classic", "dock": "ST-30"}, "B-1008": {"type": "e-bike", "dock": "ST-07"},
}
ISSUES = {"puncture": ("tyre", 0.5), "brake": ("brakes", 0.75), "battery": ("battery", 1.5),
          "chain": ("drivetrain", 0.5), "light": ("lights", 0.25)}
DOCKS_TODAY = {"ST-07": {"bikes": 9, "cap": 20}, "ST-12": {"bikes": 18, "cap": 20},
               "ST-21": {"bikes": 3, "cap": 16}, "ST-30": {"bikes": 12, "cap": 24}}
DOCKS_YESTERDAY = {"ST-07": {"bikes": 9, "cap": 20}, "ST-12": {"bikes": 18, "cap": 20},
                   "ST-21": {"bikes": 3, "cap": 16}, "ST-30": {"bikes": 4, "cap": 24}}

INPUTS = {
    "m1": {"reports": [["B-1001", "puncture"], ["B-1003", "brake"], ["B-1002", "battery"]], "docks": ["ST-12", "ST-21"]},
    "m2": {"reports": [["B-1004", "battery"], ["B-1006", "chain"]], "docks": ["ST-12", "ST-21"]},
    "m3": {"reports": [["B-1005", "light"], ["B-1007", "puncture"], ["B-1008", "battery"]], "docks": ["ST-30", "ST-21"]},
    "m4": {"reports": [["B-1002", "brake"], ["B-1003", "chain"], ["B-1006", "light"], ["B-1001", "brake"]],
           "docks": ["ST-12", "ST-07"]},
    "m5": {"reports": [["B-1008", "puncture"], ["B-1005", "battery"]], "docks": ["ST-30", "ST-07"]},
    "m6": {"reports": [["B-1007", "brake"], ["B-1004", "light"], ["B-1001", "chain"]], "docks": ["ST-07", "ST-21"]},
    "m7": {"reports": [["B-1006", "puncture"], ["B-1002", "chain"]], "docks": ["ST-12", "ST-30"]},
    "m8": {"reports": [["B-1003", "light"], ["B-1004", "brake"], ["B-1005", "chain"]], "docks": ["ST-21", "ST-07"]},
    "m9": {"reports": [["B-1008", "brake"], ["B-1007", "light"]], "docks": ["ST-12", "ST-21"]},
}
for _k, _v in INPUTS.items():
    _v["task"] = ("Morning work orders: " + ", ".join(f"{b} {i}" for b, i in _v["reports"])
                  + "; rebalance " + " and ".join(_v["docks"]))

CASES = [
    dict(id="zzw-cyc-01", kind="wrong_routing", input="m1",
         desc="The repair router sends e-bike B-1002's battery job to the mobile van although battery work needs the depot."),
    dict(id="zzw-cyc-02", kind="stale_data", input="m3",
         desc="The dock status tool answers yesterday's snapshot for ST-30 (4 bikes, not 12), so the moves overfill it."),
    dict(id="zzw-cyc-03", kind="subagent_wrong_entity", input="m4",
         desc="The dock-balance sub-graph's model plans the moves for ST-21 instead of the requested ST-12."),
    dict(id="zzw-cyc-04", kind="unit_error", input="m6",
         desc="The repair estimate tool gives the chain job's labour in minutes (30) where the work order reads hours."),
    dict(id="zzw-cyc-05", kind="context_pollution", input="m8",
         desc="The roster model carries bike B-1002 over from yesterday's roster notes in its prompt into today's orders."),
]
REFS = ["m2", "m5", "m7", "m9"]

YESTERDAY_NOTES = "B-1002 brakes at ST-21 (depot); B-1006 tyre at ST-21 (van)"


def brain(tag, p):
    if tag == "TRIAGE":
        return json.dumps({"reports": [{"bike": b, "issue": i} for b, i in p["reports"]]})
    if tag == "CLASSIFY":
        part, hours = ISSUES[p["issue"]]
        return json.dumps({"bike": p["bike"]["id"], "part": part, "urgent": p["issue"] in ("brake", "battery")})
    if tag == "MOVES":
        target = p["docks"][0]
        if target == "ST-12" and kit.on("zzw-cyc-03"):
            target = "ST-21"
        src = p["docks"][1]
        seen = {x["dock"]: x for x in p["status"]}.get(target, DOCKS_TODAY[target])
        bikes = max(int(seen["cap"] * 0.75) - seen["bikes"], 1)
        return json.dumps({"moves": [{"from": src, "to": target, "bikes": bikes}]})
    if tag == "ROSTER":
        orders = [{"bike": o["bike"], "part": o["part"], "site": o["site"]} for o in p["orders"]]
        if kit.on("zzw-cyc-05"):
            orders.append({"bike": "B-1002", "part": "brakes", "site": "depot"})
        return json.dumps({"orders": orders, "crew": "north"})
    raise ValueError(tag)


def fetch_bike(bike_id: str) -> dict:
    """Fleet register record of a bike."""
    return {"id": bike_id, **BIKES[bike_id]}


def estimate_repair(part: str, bike_type: str) -> dict:
    """Labour estimate in hours for a repair."""
    hours = {v[0]: v[1] for v in ISSUES.values()}[part]
    if bike_type == "e-bike":
        hours += 0.25
    if part == "drivetrain" and kit.on("zzw-cyc-04"):
        hours = hours * 60
    return {"part": part, "labour": hours}


def dock_status(dock: str) -> dict:
    """Live occupancy of a docking station."""
    snap = DOCKS_TODAY
    if dock == "ST-30" and kit.on("zzw-cyc-02"):
        snap = DOCKS_YESTERDAY
    return {"dock": dock, **snap[dock]}


def triage(ctx, d):
    text = ctx.llm("triage_reports", "TRIAGE", {"reports": d["request"]["reports"]})
    d["items"] = ctx.code("parse_reports", "parse", lambda t: json.loads(t)["reports"], text)
    d["orders"] = []


def repair(ctx, d):
    rep = d["items"][d["_i"]]
    bike = ctx.tool("fetch_bike", fetch_bike, {"bike_id": rep["bike"]})
    cls = json.loads(ctx.llm("classify_issue", "CLASSIFY", {"bike": bike, "issue": rep["issue"]}))

    def route_repair(c):
        site = "depot" if (c["part"] == "battery" or c["urgent"] and bike["type"] == "e-bike") else "van"
        if c["part"] == "battery" and kit.on("zzw-cyc-01"):
            site = "van"
        return {"bike": c["bike"], "part": c["part"], "site": site}

    order = ctx.code("route_repair", "condition", route_repair, cls)
    est = ctx.tool("estimate_repair", estimate_repair, {"part": order["part"], "bike_type": bike["type"]})
    d["orders"].append({**order, "labour_h": est["labour"], "dock": bike["dock"]})


def read_docks(ctx, d):
    d["dock_state"] = [ctx.tool("dock_status", dock_status, {"dock": k}) for k in d["request"]["docks"]]


def plan_moves(ctx, d):
    text = ctx.llm("plan_moves", "MOVES", {"docks": d["request"]["docks"], "status": d["dock_state"]})

    def parse_moves(t):
        moves = json.loads(t)["moves"]
        status = {s["dock"]: s for s in d["dock_state"]}
        for m in moves:
            room = status.get(m["to"], {"cap": 0, "bikes": 0})
            m["bikes"] = min(m["bikes"], max(room["cap"] - room["bikes"], 0)) if m["to"] in status else m["bikes"]
            m["after"] = room["bikes"] + m["bikes"]
        return moves

    d["moves"] = ctx.code("parse_moves", "parse", parse_moves, text)


def roster(ctx, d):
    text = ctx.llm("write_roster", "ROSTER", {"orders": d["orders"], "moves": d["moves"],
                                               "yesterday": YESTERDAY_NOTES})
    d["product"] = ctx.code("build_work_orders", "other", lambda t: {
        "orders": json.loads(t)["orders"], "labour": {o["bike"]: o["labour_h"] for o in d["orders"]},
        "moves": d["moves"]}, text)


def validate(ctx, d):
    req = d["request"]

    def validate_work_orders(w):
        bikes = sorted(o["bike"] for o in w["orders"])
        if bikes != sorted(b for b, _ in req["reports"]):
            raise ValueError(f"work orders cover {bikes}, reports name {sorted(b for b, _ in req['reports'])}")
        for o in w["orders"]:
            if o["part"] == "battery" and o["site"] != "depot":
                raise ValueError(f"{o['bike']}: battery work sent to {o['site']}, must be depot")
            if not 0 < w["labour"][o["bike"]] <= 8:
                raise ValueError(f"{o['bike']}: labour {w['labour'][o['bike']]} h outside 0-8 h")
        for m in w["moves"]:
            if m["to"] != req["docks"][0]:
                raise ValueError(f"move to {m['to']}, the plan rebalances {req['docks'][0]}")
            if m["to"] in DOCKS_TODAY and DOCKS_TODAY[m["to"]]["bikes"] + m["bikes"] > DOCKS_TODAY[m["to"]]["cap"]:
                raise ValueError(f"{m['to']} would hold {DOCKS_TODAY[m['to']]['bikes'] + m['bikes']} bikes, "
                                 f"capacity {DOCKS_TODAY[m['to']]['cap']}")
        return {"ok": True}

    ctx.code("validate_work_orders", "other", validate_work_orders, d["product"])


def phases():
    return [("triage", triage), ("repair", repair, "loop"),
            ("dock_balance", [("read_docks", read_docks), ("plan_moves_node", plan_moves)], "sub"),
            ("roster", roster), ("validate", validate)]
