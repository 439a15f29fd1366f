"""pool-lane-scheduler: a leisure centre's lane-booking agent for clubs and schools (OpenTelemetry +
OpenInference, exported as OTLP JSON).

A club's e-mail is extracted by the model and parsed; the day's timetable and the pool policies are
retrieved; the planner model calls the lane map and the lifeguard roster (parallel tool calls) and
answers a plan, which is parsed, checked against the safety rules, reserved, staffed with lifeguards;
the model writes the confirmation and the club is notified.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from . import otlp_util as ot
from .common import chat_call, fn_tool, json_in, system_text, tagged_json, tool_results, user_texts


NAME = "pool-lane-scheduler"
ROUTE = "otlp"
DOMAIN = "public swimming pool: lane bookings for clubs and schools, lifeguard cover"
SHAPE = "OTLP: LLM extraction, parse chain, two retrievers, planner LLM with parallel tool calls (tool-call ids), parse chain, safety evaluator, reservation and lifeguard tools, LLM confirmation, notify tool"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


POOLS = {
    "Main 25m": [{"lane": "1", "depth_m": 1.0}, {"lane": "2", "depth_m": 1.0}, {"lane": "3", "depth_m": 1.4},
                 {"lane": "4", "depth_m": 1.4}, {"lane": "5", "depth_m": 2.0}, {"lane": "6", "depth_m": 2.0}],
    "Teaching pool": [{"lane": f"T{i}", "depth_m": 0.9} for i in range(1, 5)],
}
PER_LANE = {"squad": 8, "lessons": 6, "aquafit": 10, "lane swim": 7}
POLICY_DOCS = [
    {"id": "pol-capacity", "content": "Lane capacity: squad 8 swimmers per lane; lessons 6 per lane; aquafit 10 per "
                                      "lane; lane swim 7 per lane."},
    {"id": "pol-depth", "content": "Depth rule: beginner groups use lanes up to 1.0 m deep; improvers up to 1.4 m."},
    {"id": "pol-guards", "content": "Lifeguards: one per 3 booked lanes in the Main 25m for the whole booking; "
                                    "one in the Teaching pool."},
]
TIMETABLE = {  # (pool, date) -> bookings
    ("Main 25m", "2025-10-07"): [{"who": "Lane swim", "lanes": ["1"], "start": "16:00", "end": "19:00"},
                                 {"who": "Aquafit", "lanes": ["5", "6"], "start": "17:30", "end": "18:30"}],
    ("Main 25m", "2025-10-08"): [{"who": "Masters", "lanes": ["5", "6"], "start": "06:00", "end": "08:00"}],
    ("Teaching pool", "2025-10-09"): [{"who": "Hydrotherapy", "lanes": ["T3", "T4"], "start": "09:00", "end": "11:00"}],
    ("Main 25m", "2025-10-10"): [{"who": "Lifesaving course", "lanes": ["2"], "start": "05:45", "end": "07:00"},
                                 {"who": "Lane swim", "lanes": ["1"], "start": "06:00", "end": "08:00"},
                                 {"who": "Physio", "lanes": ["3"], "start": "06:15", "end": "06:45"},
                                 {"who": "Aqua-jog", "lanes": ["4"], "start": "07:00", "end": "08:00"}],
    ("Main 25m", "2025-10-11"): [{"who": "Aquafit", "lanes": ["1", "2"], "start": "19:00", "end": "20:00"}],
}
ROSTER = {
    "2025-10-07": [{"name": "Priya", "from": "14:00", "to": "18:00"}, {"name": "Tom", "from": "16:30", "to": "21:00"}],
    "2025-10-08": [{"name": "Ana", "from": "08:00", "to": "14:00"}, {"name": "Leo", "from": "09:00", "to": "12:00"}],
    "2025-10-09": [{"name": "Ben", "from": "09:00", "to": "13:00"}],
    "2025-10-10": [{"name": "Ola", "from": "05:30", "to": "09:00"}],
    "2025-10-11": [{"name": "Rik", "from": "18:00", "to": "22:00"}, {"name": "Zoe", "from": "18:30", "to": "21:00"}],
}

INPUTS = [
    {"request_id": "LB-1007", "email": "From Otters Swim Club: squad session in the Main 25m on 2025-10-07, "
                                       "17:00-18:30, 22 swimmers."},
    {"request_id": "LB-1008", "email": "From Harbour High School: lessons in the Main 25m on 2025-10-08, 10:00-11:00: "
                                       "improvers 8 swimmers, beginners 12 swimmers."},
    {"request_id": "LB-1009", "email": "From Little Dippers: lessons in the Teaching pool on 2025-10-09, 09:30-10:30, "
                                       "10 swimmers."},
    {"request_id": "LB-1010", "email": "From Northgate Masters: squad session in the Main 25m on 2025-10-10, "
                                       "06:00-07:30, 14 swimmers."},
    {"request_id": "LB-1011", "email": "From Seals Water Polo: squad session in the Main 25m on 2025-10-11, "
                                       "19:00-20:30, 30 swimmers."},
]

CASES = [
    {"id": "pool_lanes_1", "switch": "roster_window", "input": 0, "kind": "wrong_tool_args",
     "root": ("ChatCompletion", 2), "failure": ("assign_lifeguards", 1),
     "description": "the planner model asks the lifeguard roster for 17:00-18:00 instead of the booked "
                    "17:00-18:30, picks Priya, and assigning her fails: her shift ends at 18:00."},
    {"id": "pool_lanes_2", "switch": "group_order", "input": 1, "kind": "plan_error",
     "root": ("ChatCompletion", 3), "failure": ("safety_check", 1),
     "description": "the planner model gives lanes to the groups in the e-mail's order, so the improvers take "
                    "the 1.0 m lanes and the beginners get lanes 3-4 at 1.4 m, which the safety check refuses."},
    {"id": "pool_lanes_3", "switch": "lane_map_pool", "input": 2, "kind": "tool_ignores_argument",
     "root": ("lane_map", 1), "failure": ("reserve_lanes", 1),
     "description": "lane_map ignores its pool argument and answers the Main 25m's lanes for the Teaching pool; "
                    "the plan books lanes 1 and 2, which the Teaching pool does not have."},
    {"id": "pool_lanes_4", "switch": "timetable_k", "input": 3, "kind": "truncated_result",
     "root": ("timetable_search", 1), "failure": ("reserve_lanes", 1),
     "description": "timetable_search returns only its first 3 bookings, dropping Aqua-jog in lane 4 from "
                    "07:00, so the plan takes lane 4 and the reservation collides with it."},
    {"id": "pool_lanes_5", "switch": "lane_capacity", "input": 4, "kind": "hallucinated_value",
     "root": ("ChatCompletion", 3), "failure": ("reserve_lanes", 1),
     "description": "the planner model plans 10 swimmers per lane (the policy says 8 for squads), books 3 "
                    "lanes for 30 swimmers, and the reservation refuses 30 swimmers in 3 squad lanes."},
]


# --------------------------------------------------------------------------- the model's behaviour

def _m(hhmm: str) -> int:
    h, m = hhmm.split(":")
    return int(h) * 60 + int(m)


def brain(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system = system_text(request)
    user = user_texts(request)[0]
    if system.startswith("You extract lane-booking requests"):
        club = re.search(r"From ([^:]+):", user).group(1)
        kind = next(k for k in ("squad", "lessons", "aquafit", "lane swim") if k in user)
        pool = next(p for p in POOLS if p in user)
        date = re.search(r"\d{4}-\d{2}-\d{2}", user).group(0)
        start, end = re.search(r"(\d\d:\d\d)-(\d\d:\d\d)", user).groups()
        groups = [{"name": g, "swimmers": int(n)} for g, n in re.findall(r"(improvers|beginners) (\d+) swimmers", user)]
        if not groups:
            groups = [{"name": "all", "swimmers": int(re.search(r"(\d+) swimmers", user).group(1))}]
        return json.dumps({"club": club, "activity": kind, "pool": pool, "date": date, "start": start, "end": end,
                           "groups": groups})
    if system.startswith("You plan lane bookings"):
        req = tagged_json(user, "REQUEST")
        busy_rows = tagged_json(user, "TIMETABLE")
        policy = " ".join(tagged_json(user, "POLICY"))
        results = tool_results(request)
        if not results:
            end = req["end"]
            if _on("roster_window"):
                end = f"{_m(req['start']) // 60 + 1:02d}:{req['start'][3:]}"
            return Reply(tool_calls=(tool_call("lane_map", {"pool": req["pool"]}),
                                     tool_call("lifeguard_roster", {"date": req["date"], "start": req["start"], "end": end})))
        lanes = next(r for n, r in results if n == "lane_map")["lanes"]
        guards = next(r for n, r in results if n == "lifeguard_roster")["guards"]
        per_lane = int(re.search(rf"{req['activity']} (\d+) (?:swimmers )?per lane", policy).group(1))
        if _on("lane_capacity"):
            per_lane = 10
        depth_cap = {"beginners": 1.0, "improvers": 1.4, "all": 9.9}
        a, b = _m(req["start"]), _m(req["end"])
        busy = {ln for row in busy_rows if a < _m(row["end"]) and b > _m(row["start"]) for ln in row["lanes"]}
        free = [ln for ln in lanes if ln["lane"] not in busy]
        groups = list(req["groups"])
        by_rule = not _on("group_order")  # strictest depth rule first, each group within its rule
        if by_rule:
            groups.sort(key=lambda g: depth_cap[g["name"]])
        plan_groups, used = [], set()
        for g in groups:
            need = math.ceil(g["swimmers"] / per_lane)
            pick = [ln["lane"] for ln in free if ln["lane"] not in used
                    and (not by_rule or ln["depth_m"] <= depth_cap[g["name"]])][:need]
            used |= set(pick)
            plan_groups.append({"group": g["name"], "swimmers": g["swimmers"], "lanes": pick})
        n_lanes = len(used)
        needed = 1 if req["pool"] == "Teaching pool" else math.ceil(n_lanes / 3)
        return json.dumps({"pool": req["pool"], "date": req["date"], "start": req["start"], "end": req["end"],
                           "per_lane": per_lane, "groups": plan_groups,
                           "lifeguards": [g["name"] for g in guards[:needed]]})
    if system.startswith("You write booking confirmations"):
        plan = json_in(user)
        lanes = ", ".join(f"{g['group']}: lanes {'/'.join(g['lanes'])}" for g in plan["groups"])
        return (f"Dear {plan['club']}, your booking in the {plan['pool']} on {plan['date']} from {plan['start']} to "
                f"{plan['end']} is confirmed ({lanes}). Lifeguard: {', '.join(plan['lifeguards'])}.")
    return "Please send the booking details."


# --------------------------------------------------------------------------- the agent

TOOLS = [
    fn_tool("lane_map", "Lanes of a pool with their depth.", {"pool": "string"}),
    fn_tool("lifeguard_roster", "Lifeguards on shift for the whole of a window.", {"date": "string", "start": "string", "end": "string"}),
]


def _lane_map(pool: str) -> dict:
    answered = "Main 25m" if _on("lane_map_pool") else pool  # the map service's default pool
    return {"pool": pool, "lanes": [dict(ln) for ln in POOLS[answered]]}


def _lifeguard_roster(date: str, start: str, end: str) -> dict:
    return {"date": date, "window": f"{start}-{end}",
            "guards": [g for g in ROSTER[date] if _m(g["from"]) <= _m(start) and _m(g["to"]) >= _m(end)]}


def record(inp: dict, path: str, server: Any) -> None:
    from openai import OpenAI

    tracer = ot.setup(NAME)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = server.model
    try:
        with ot.span(tracer, NAME, "AGENT", input=inp, metadata=json.dumps({"task": f"lane booking {inp['request_id']}"}),
                     agent__name=NAME) as root:
            extracted = chat_call(client, model, [
                {"role": "system", "content": "You extract lane-booking requests as JSON."},
                {"role": "user", "content": inp["email"]}])
            with ot.span(tracer, "parse_request", "CHAIN", input=extracted["content"]) as h:
                req = json.loads(extracted["content"])
                req["groups"] = [{"name": g["name"], "swimmers": int(g["swimmers"])} for g in req["groups"]]
                req["swimmers"] = sum(g["swimmers"] for g in req["groups"])
                h.output = req
            query = f"{req['pool']} {req['date']} {req['start']}-{req['end']}"
            with ot.span(tracer, "timetable_search", "RETRIEVER", input=query) as h:
                rows = sorted(TIMETABLE.get((req["pool"], req["date"]), []), key=lambda r: r["start"])
                rows = rows[:3] if _on("timetable_k") else rows[:10]
                ot.documents(h, [{"id": f"tt-{req['date']}-{i}", "content": json.dumps(r), "metadata": {"pool": req["pool"]}}
                                 for i, r in enumerate(rows)])
            with ot.span(tracer, "policy_search", "RETRIEVER", input=f"{req['activity']} lane capacity depth lifeguards") as h:
                ot.documents(h, [dict(d) for d in POLICY_DOCS])
            msgs: list = [
                {"role": "system", "content": "You plan lane bookings for Northgate Leisure Centre's pools. Use the "
                                              "tools, then answer the plan as JSON."},
                {"role": "user", "content": f"REQUEST: {json.dumps(req)}\nTIMETABLE: {json.dumps(rows)}\n"
                                            f"POLICY: {json.dumps([d['content'] for d in POLICY_DOCS])}"},
            ]
            while True:
                answer = chat_call(client, model, msgs, TOOLS)
                if not answer["tool_calls"]:
                    break
                msgs.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                    for c in answer["tool_calls"]]})
                for c in answer["tool_calls"]:
                    fn = {"lane_map": _lane_map, "lifeguard_roster": _lifeguard_roster}[c["name"]]
                    with ot.span(tracer, c["name"], "TOOL", input=c["arguments"], tool__name=c["name"], tool__id=c["id"]) as h:
                        h.output = fn(**c["arguments"])
                    msgs.append({"role": "tool", "tool_call_id": c["id"], "content": json.dumps(h.output)})
            with ot.span(tracer, "parse_plan", "CHAIN", input=answer["content"]) as h:
                plan = json.loads(answer["content"])
                plan["club"] = req["club"]
                h.output = plan
            with ot.span(tracer, "safety_check", "EVALUATOR", input=plan) as h:
                depth = {ln["lane"]: ln["depth_m"] for pool in POOLS.values() for ln in pool}
                for g in plan["groups"]:
                    cap = {"beginners": 1.0, "improvers": 1.4}.get(g["group"])
                    deep = [ln for ln in g["lanes"] if cap is not None and depth.get(ln, 0) > cap]
                    if deep:
                        raise ValueError(f"{g['group']} in lanes {'-'.join(deep)} ({depth[deep[0]]} m); the depth "
                                         f"rule allows {cap} m")
                h.output = {"passed": True, "groups": len(plan["groups"])}
            with ot.span(tracer, "reserve_lanes", "TOOL", input=plan, tool__name="reserve_lanes") as h:
                own = {ln["lane"] for ln in POOLS[plan["pool"]]}
                lanes = [ln for g in plan["groups"] for ln in g["lanes"]]
                missing = [ln for ln in lanes if ln not in own]
                if missing:
                    raise ValueError(f"{plan['pool']} has lanes {', '.join(sorted(own))}; no lane {', '.join(missing)}")
                a, b = _m(plan["start"]), _m(plan["end"])
                for row in TIMETABLE.get((plan["pool"], plan["date"]), []):
                    clash = set(row["lanes"]) & set(lanes)
                    if clash and a < _m(row["end"]) and b > _m(row["start"]):
                        raise ValueError(f"lane {sorted(clash)[0]} is held by {row['who']} {row['start']}-{row['end']}")
                limit = PER_LANE[req["activity"]] * len(lanes)
                if req["swimmers"] > limit:
                    raise ValueError(f"{req['swimmers']} swimmers in {len(lanes)} {req['activity']} lanes exceeds the "
                                     f"limit of {limit}")
                h.output = {"reservation": f"RL-{inp['request_id'][3:]}", "lanes": lanes}
            with ot.span(tracer, "assign_lifeguards", "TOOL", input={"date": plan["date"], "start": plan["start"],
                                                                       "end": plan["end"], "guards": plan["lifeguards"]},
                         tool__name="assign_lifeguards") as h:
                shifts = {g["name"]: g for g in ROSTER[plan["date"]]}
                for name in plan["lifeguards"]:
                    g = shifts[name]
                    if _m(g["from"]) > _m(plan["start"]) or _m(g["to"]) < _m(plan["end"]):
                        raise ValueError(f"{name}'s shift is {g['from']}-{g['to']}; the booking runs "
                                         f"{plan['start']}-{plan['end']}")
                if not plan["lifeguards"]:
                    raise ValueError("no lifeguard on shift for the whole booking")
                h.output = {"assigned": plan["lifeguards"]}
            letter = chat_call(client, model, [
                {"role": "system", "content": "You write booking confirmations for clubs."},
                {"role": "user", "content": json.dumps(plan)}])
            with ot.span(tracer, "notify_club", "TOOL", input={"club": req["club"], "text": letter["content"]},
                         tool__name="notify_club") as h:
                h.output = {"sent": True, "to": req["club"]}
            root.output = {"reservation": f"RL-{inp['request_id'][3:]}", "text": letter["content"]}
    except Exception:  # noqa: BLE001 - the spans record the failure
        pass
    finally:
        ot.finish(NAME, path)
