"""Houseboat moorings: allocate a pontoon berth on the river for a visiting houseboat and issue its permit (otlp)."""
from __future__ import annotations

import json
from pathlib import Path

from .common import Otlp, last_user_json
from .kit import active

NAME = "houseboat-moorings"
ROUTE = "otlp"
DOMAIN = "houseboat moorings"
SHAPE = "application -> parse -> river gauge -> pontoon retrieval -> occupancy loop over candidates -> warden sub-agent (LLM pick + rules tool) -> memory write -> LLM fee quote -> optional shore-power hookup -> issue permit"

APPS = {
    "HB-221": "boat=Willow Wren;length_m=17.5;beam_m=3.2;draft_m=1.1;basin=west;arrive=2026-08-03;nights=4;shore_power=no",
    "HB-230": "boat=Otter's Holt;length_m=12.0;beam_m=2.1;draft_m=0.8;basin=east;arrive=2026-08-05;nights=3;shore_power=yes",
    "HB-201": "boat=Kestrel;length_m=10.0;beam_m=2.0;draft_m=0.7;basin=east;arrive=2026-08-01;nights=2;shore_power=no",
    "HB-202": "boat=Mallard;length_m=15.0;beam_m=3.0;draft_m=0.9;basin=west;arrive=2026-08-02;nights=5;shore_power=yes",
    "HB-203": "boat=Heron;length_m=8.5;beam_m=2.0;draft_m=0.6;basin=west;arrive=2026-08-04;nights=1;shore_power=no",
    "HB-204": "boat=Coot;length_m=13.5;beam_m=2.4;draft_m=0.9;basin=east;arrive=2026-08-06;nights=7;shore_power=yes",
}
PONTOONS = {
    "west": [{"id": "W1", "max_len": 14, "depth_m": 1.6}, {"id": "W2", "max_len": 20, "depth_m": 1.25}, {"id": "W3", "max_len": 22, "depth_m": 1.8}],
    "east": [{"id": "E1", "max_len": 12, "depth_m": 1.4}, {"id": "E2", "max_len": 16, "depth_m": 1.2}, {"id": "E3", "max_len": 24, "depth_m": 1.7}],
}
OCCUPIED = {"W2": [], "W3": ["2026-08-01"], "E1": ["2026-08-05"], "E2": [], "W1": [], "E3": []}
GAUGE_TODAY, GAUGE_YESTERDAY = -0.20, 0.05  # level against datum, metres
RATE = {"west": 24.0, "east": 19.0}
SOCKETS = {"W": ["W-B12", "W-B14"], "E": ["E-B21", "E-B23"]}
INPUTS = {k: {"application": k} for k in APPS}
REFS = ["HB-201", "HB-202", "HB-203", "HB-204"]
CASES = [
    {"id": "zd_houseboat_gauge", "kind": "stale_data", "input": "HB-221", "root": "river_gauge", "occ": 1,
     "failure": "issue_permit", "description": "river_gauge serves yesterday's cached level, so a pontoon too shallow at today's level passes the depth check and the permit service refuses it."},
    {"id": "zd_houseboat_basin", "kind": "wrong_retrieval", "input": "HB-230", "root": "search_pontoons", "occ": 1,
     "failure": "issue_permit", "description": "search_pontoons returns west-basin pontoons for an east-basin application, and the permit service refuses a berth outside the permit's basin."},
    {"id": "zd_houseboat_memory", "kind": "bad_memory_write", "input": "HB-221", "root": "save_allocation", "occ": 1,
     "failure": "issue_permit", "description": "save_allocation stores the allocation with the arrival date in place of the departure date, so the permit's stay does not match the nights applied for."},
    {"id": "zd_houseboat_fee", "kind": "hallucinated_value", "input": "HB-221", "root": "quote_fees", "occ": 1,
     "failure": "issue_permit", "description": "quote_fees states a nightly rate that neither the tariff nor the application holds, and the permit service refuses the fee."},
    {"id": "zd_houseboat_socket", "kind": "truncated_result", "input": "HB-230", "root": "reserve_hookup", "occ": 1,
     "failure": "issue_permit", "description": "reserve_hookup returns the socket id cut short, and the permit service finds no such shore-power socket."},
]


def policy(req):
    ask = last_user_json(req)
    if ask.get("ask") == "pick":
        ok = [c for c in ask["candidates"] if c["fits"] and c["free"]]
        best = sorted(ok, key=lambda c: c["max_len"])[0] if ok else None
        return json.dumps({"pontoon": best["id"] if best else None, "reason": "smallest berth that fits"})
    if ask.get("ask") == "fees":
        rate = ask["tariff"][ask["basin"]]
        if active("zd_houseboat_fee"):
            rate = 21.5
        return json.dumps({"nightly": rate, "nights": ask["nights"], "total": round(rate * ask["nights"], 2)})
    return json.dumps({})


def record(inp: dict, path: Path, base_url: str) -> None:
    ot = Otlp(NAME)
    app_id = inp["application"]
    memory: dict = {}
    try:
        with ot.span(NAME, "AGENT", {"application": app_id}, **{"agent.name": NAME}) as root:
            with ot.span("read_application", "TOOL", {"application": app_id}, **{"tool.name": "read_application"}) as s:
                raw = APPS[app_id]
                s["output"] = raw
            with ot.span("parse_application", "CHAIN", {"text": raw}) as s:
                f = dict(p.split("=", 1) for p in raw.split(";"))
                app = {"boat": f["boat"], "length_m": float(f["length_m"]), "draft_m": float(f["draft_m"]), "basin": f["basin"],
                       "arrive": f["arrive"], "nights": int(f["nights"]), "shore_power": f["shore_power"] == "yes"}
                s["output"] = app
            with ot.span("river_gauge", "TOOL", {"station": "Lock 7 tail"}, **{"tool.name": "river_gauge"}) as s:
                gauge = ({"level_m": GAUGE_YESTERDAY, "read_at": "2026-08-02T06:00", "source": "cache"} if active("zd_houseboat_gauge")
                         else {"level_m": GAUGE_TODAY, "read_at": "2026-08-03T06:00", "source": "live"})
                s["output"] = gauge
            with ot.span("search_pontoons", "RETRIEVER", {"query": f"{app['basin']} basin pontoons for {app['length_m']} m"}) as s:
                basin = "west" if active("zd_houseboat_basin") else app["basin"]
                hits = [dict(p, basin=basin) for p in PONTOONS[basin]]
                s["output"] = hits
            candidates = []
            for p in hits:
                with ot.span("berth_occupancy", "TOOL", {"pontoon": p["id"], "date": app["arrive"]}, **{"tool.name": "berth_occupancy"}) as s:
                    occ = {"pontoon": p["id"], "occupied": OCCUPIED[p["id"]]}
                    s["output"] = occ
                with ot.span("score_berth", "CHAIN", {"pontoon": p, "occupancy": occ, "gauge": gauge}) as s:
                    depth = round(p["depth_m"] + gauge["level_m"], 2)
                    cand = {"id": p["id"], "max_len": p["max_len"], "depth_now": depth,
                            "fits": p["max_len"] >= app["length_m"] and depth >= app["draft_m"] + 0.1,
                            "free": app["arrive"] not in occ["occupied"]}
                    candidates.append(cand)
                    s["output"] = cand
            with ot.span("warden_review", "AGENT", {"candidates": candidates}, **{"agent.name": "warden_review"}) as w:
                pick = ot.llm(base_url, "pick_pontoon", "You are the river warden. Pick a pontoon. Answer JSON.",
                              {"ask": "pick", "candidates": candidates})
                with ot.span("mooring_rules", "TOOL", {"pontoon": pick["pontoon"]}, **{"tool.name": "mooring_rules"}) as s:
                    rules = {"pontoon": pick["pontoon"], "max_nights": 14, "raft_up": False}
                    s["output"] = rules
                w["output"] = {"pontoon": pick["pontoon"], "rules": rules}
            with ot.span("save_allocation", "CHAIN", {"pontoon": pick["pontoon"], "application": app}) as s:
                import datetime as dt
                depart = (dt.date.fromisoformat(app["arrive"]) + dt.timedelta(days=app["nights"])).isoformat()
                memory["allocation"] = {"pontoon": pick["pontoon"], "arrive": app["arrive"],
                                        "depart": app["arrive"] if active("zd_houseboat_memory") else depart}
                s["output"] = memory["allocation"]
            fees = ot.llm(base_url, "quote_fees", "Quote the mooring fees. Answer JSON.",
                          {"ask": "fees", "basin": app["basin"], "nights": app["nights"], "tariff": RATE})
            socket = None
            if app["shore_power"]:
                with ot.span("reserve_hookup", "TOOL", {"pontoon": pick["pontoon"]}, **{"tool.name": "reserve_hookup"}) as s:
                    socket = SOCKETS[pick["pontoon"][0]][0]
                    if active("zd_houseboat_socket"):
                        socket = socket[:-1]
                    s["output"] = {"socket": socket, "amps": 16}
            permit = {"boat": app["boat"], "basin": app["basin"], **memory["allocation"], "nights": app["nights"],
                      "fees": fees, "socket": socket, "draft_m": app["draft_m"]}
            with ot.span("issue_permit", "TOOL", permit, **{"tool.name": "issue_permit"}) as s:
                pont = next((p for b in PONTOONS.values() for p in b if p["id"] == permit["pontoon"]), None)
                if pont is None or not permit["pontoon"].startswith(permit["basin"][0].upper()):
                    raise ValueError(f"permit service 409: pontoon {permit['pontoon']} is not in the {permit['basin']} basin zone")
                depth = round(pont["depth_m"] + GAUGE_TODAY, 2)
                if depth < permit["draft_m"] + 0.1:
                    raise ValueError(f"permit service 422: draft {permit['draft_m']} m needs 0.1 m clearance; {permit['pontoon']} has {depth} m at today's level")
                import datetime as dt
                stay = (dt.date.fromisoformat(permit["depart"]) - dt.date.fromisoformat(permit["arrive"])).days
                if stay != permit["nights"]:
                    raise ValueError(f"permit service 422: stay {permit['arrive']}..{permit['depart']} is {stay} nights, application says {permit['nights']}")
                if abs(permit["fees"]["nightly"] - RATE[permit["basin"]]) > 0.001:
                    raise ValueError(f"permit service 402: nightly fee {permit['fees']['nightly']:.2f} does not match the {permit['basin']} basin tariff")
                if permit["socket"] is not None and permit["socket"] not in SOCKETS[permit["pontoon"][0]]:
                    raise ValueError(f"permit service 404: shore-power socket '{permit['socket']}' not found")
                s["output"] = {"permit": "MP-" + app_id[3:], "status": "issued"}
            root["output"] = {"permit": "MP-" + app_id[3:]}
    except ValueError:
        pass
    ot.write(path)
