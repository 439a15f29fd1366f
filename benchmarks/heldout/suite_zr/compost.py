"""Community composting (OpenTelemetry / OpenInference spans): read hub scale logs and pile temperatures,
plan the week's pile turning, route batches, and issue members' compost vouchers through a sub-agent."""

from __future__ import annotations

import json
import re
from pathlib import Path

from . import common
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "compost-coop", "otlp", "community composting", "json"

ZONES = {
    "Z-NORTH": {"hubs": ["H-Elm", "H-Gate", "H-Pond"], "members": ["M-101", "M-104", "M-109", "M-118", "M-122", "M-130"]},
    "Z-RIVER": {"hubs": ["H-Quay", "H-Mill"], "members": ["M-201", "M-205", "M-211", "M-214"]},
    "Z-HILL": {"hubs": ["H-Crest", "H-Vale"], "members": ["M-301", "M-302", "M-310"]},
    "Z-PARK": {"hubs": ["H-Lawn", "H-Bower", "H-Gate2"], "members": ["M-401", "M-407", "M-412", "M-415"]},
    "Z-MARKET": {"hubs": ["H-Stall"], "members": ["M-501", "M-503", "M-509"]},
    "Z-CANAL": {"hubs": ["H-Lock", "H-Tow"], "members": ["M-601", "M-606", "M-611"]},
}
REFS = ["Z-HILL", "Z-PARK", "Z-MARKET", "Z-CANAL"]
SIMILAR = {"M-118": "M-181", "M-214": "M-241"}


def _temps(hub: str) -> list[int]:
    base = 48 + sum(map(ord, hub)) % 25
    return [base + d % 3 for d in range(7)]


def _drops(zone: str, hub: str) -> list[tuple[str, float]]:
    members = ZONES[zone]["members"]
    k = ZONES[zone]["hubs"].index(hub)
    return [(m, round(2.0 + (i * 7 + k * 3) % 11 * 0.4, 1)) for i, m in enumerate(members) if (i + k) % 2 == 0]


def _truth_points(zone: str) -> dict[str, int]:
    pts: dict[str, int] = {}
    for hub in ZONES[zone]["hubs"]:
        for m, kg in _drops(zone, hub):
            pts[m] = pts.get(m, 0) + int(kg)
    return pts


@common.handler("compost:plan")
def _plan(msgs, tools):
    d = json.loads(common.last_user(msgs))
    turn = [h for h, t in d["max_temp"].items() if t >= 65]
    if active("compost_plan_skip") and turn:
        turn = turn[:-1]
    return json.dumps({"turn": turn, "water": [h for h, t in d["max_temp"].items() if t < 55]})


@common.handler("compost:voucher")
def _voucher(msgs, tools):
    d = json.loads(common.last_user(msgs))
    member = SIMILAR.get(d["member"], d["member"]) if active("compost_member_id") else d["member"]
    return json.dumps({"lookup": member, "points": int(d["kg"])})


@common.handler("compost:notes")
def _notes(msgs, tools):
    d = json.loads(common.last_user(msgs))
    extra = [m for n in d["notes"] for m in re.findall(r"M-\d{3}", n)]
    return json.dumps({"bonus_members": extra})


def record(zone: str, path: Path) -> None:
    z = ZONES[zone]
    sp = common.Spans(AGENT)
    try:
        with sp.span(AGENT, "AGENT", f"Weekly compost run for {zone}", **{"agent.name": AGENT}) as top:
            with sp.span("fetch_members", "TOOL", {"zone": zone}, **{"tool.name": "fetch_members"}) as b:
                b["output"] = {"zone": zone, "members": z["members"]}
            logs = {}
            for hub in z["hubs"]:
                with sp.span("fetch_scale_log", "TOOL", {"hub": hub}, **{"tool.name": "fetch_scale_log"}) as b:
                    rows = _drops(zone, hub)
                    if active("compost_log_layout") and hub == z["hubs"][1]:
                        text = "member;kg;unit\n" + "\n".join(f"{m};{kg};kg" for m, kg in rows)
                    else:
                        text = "member,kg\n" + "\n".join(f"{m},{kg}" for m, kg in rows)
                    b["output"] = text
                logs[hub] = text
                with sp.span("fetch_pile_temps", "TOOL", {"hub": hub}, **{"tool.name": "fetch_pile_temps"}) as b:
                    b["output"] = {"hub": hub, "daily_max_c": _temps(hub)}
            with sp.span("parse_scale_logs", "CHAIN", logs) as b:
                kg: dict[str, float] = {}
                for hub, text in logs.items():
                    for line in text.splitlines()[1:]:
                        parts = line.split(",")
                        if len(parts) != 2:
                            continue
                        kg[parts[0]] = round(kg.get(parts[0], 0.0) + float(parts[1]), 1)
                b["output"] = kg
            with sp.span("recall_notes", "RETRIEVER", f"coordinator notes {zone}") as b:
                notes = [f"{zone}: hub rota unchanged this week."]
                if active("compost_notes_mix"):
                    notes.append("Z-RIVER: double points for M-205 and M-211 after the litter pick.")
                b["output"] = [{"document": n} for n in notes]
            bonus = json.loads(sp.llm("read_notes", "[compost:notes] List members owed bonus points. Answer JSON.", json.dumps({"notes": notes})))
            max_temp = {h: max(_temps(h)) for h in z["hubs"]}
            plan = json.loads(sp.llm("plan_week", "[compost:plan] Plan pile turning and watering. Answer JSON.", json.dumps({"max_temp": max_temp})))
            with sp.span("voucher_agent", "AGENT", {"members": sorted(kg)}, **{"agent.name": "voucher_agent"}) as va:
                vouchers = []
                for m in sorted(kg):
                    ask = json.loads(sp.llm("size_voucher", "[compost:voucher] Decide the member lookup and points. Answer JSON.",
                                            json.dumps({"member": m, "kg": kg[m]})))
                    with sp.span("lookup_member", "TOOL", {"member": ask["lookup"]}, **{"tool.name": "lookup_member"}) as b:
                        b["output"] = {"member": ask["lookup"], "zone": zone if ask["lookup"] in z["members"] else "Z-UNKNOWN", "active": True}
                    vouchers.append({"member": ask["lookup"], "points": ask["points"] * (2 if m in bonus["bonus_members"] else 1)})
                for m in bonus["bonus_members"]:
                    if m not in kg:
                        vouchers.append({"member": m, "points": 5})
                va["output"] = vouchers
            with sp.span("route_batches", "CHAIN", {"max_temp": max_temp}) as b:
                limit = 45 if active("compost_route_rule") else 55
                routes = {h: ("curing_bay" if t >= limit else "hot_bay") for h, t in max_temp.items()}
                b["output"] = routes
            with sp.span("issue_vouchers", "TOOL", {"zone": zone, "vouchers": vouchers, "turn": plan["turn"], "routes": routes},
                         **{"tool.name": "issue_vouchers"}) as b:
                for h, t in max_temp.items():
                    if t >= 65 and h not in plan["turn"]:
                        raise RuntimeError(f"site safety 409: pile at {h} logged {t} C all week; turning is overdue and must be scheduled")
                    if routes[h] == "curing_bay" and t < 55:
                        raise RuntimeError(f"site safety 422: batch from {h} peaked at {t} C; curing requires 55 C for 3 days")
                truth = _truth_points(zone)
                for v in vouchers:
                    if v["member"] not in z["members"]:
                        raise RuntimeError(f"voucher ledger 404: member {v['member']} is not registered in {zone}")
                got = {v["member"]: v["points"] for v in vouchers}
                for m, p in truth.items():
                    if got.get(m) != p:
                        raise RuntimeError(f"voucher ledger 422: {m} delivered {p} kg-points on the hub scales, voucher gives {got.get(m, 0)}")
                b["output"] = {"issued": len(vouchers), "batch": f"VC-{zone}"}
            top["output"] = "vouchers issued"
    except RuntimeError:
        pass
    sp.write(path)


CASES = [
    dict(case="zr_compost_01", fault_id="compost_notes_mix", kind="context_pollution", input="Z-NORTH", root=("recall_notes", 1),
         failure=("issue_vouchers", 1), description="the notes search returns another zone's coordinator note, and its members get vouchers here."),
    dict(case="zr_compost_02", fault_id="compost_plan_skip", kind="plan_error", input="Z-RIVER", root=("plan_week", 1),
         failure=("issue_vouchers", 1), description="the weekly plan leaves a pile over 65 C out of the turning rota."),
    dict(case="zr_compost_03", fault_id="compost_route_rule", kind="wrong_routing", input="Z-NORTH", root=("route_batches", 1),
         failure=("issue_vouchers", 1), description="batch routing sends piles that peaked under 55 C to the curing bay."),
    dict(case="zr_compost_04", fault_id="compost_log_layout", kind="format_drift", input="Z-NORTH", root=("fetch_scale_log", 2),
         failure=("issue_vouchers", 1), description="one hub's scale now exports semicolon rows with a unit column, which the parser skips."),
    dict(case="zr_compost_05", fault_id="compost_member_id", kind="subagent_wrong_entity", input="Z-NORTH", root=("size_voucher", 4),
         failure=("issue_vouchers", 1), description="the voucher sub-agent's model looks up a member with transposed digits (M-181 for M-118)."),
]
