"""Pinball arcade operations (OpenTelemetry spans, OpenInference conventions, exported as OTLP/JSON):
telemetry sweep, LLM repair plan, parts ordering, then a tournament-director sub-agent that registers the bracket."""

from __future__ import annotations

import json
from pathlib import Path

from openai import OpenAI

from .common import Case, Otlp
from .kit import active

AGENT, ROUTE, DOMAIN = "pinball-arcade-ops", "otlp", "pinball arcade"
SHAPE = "telemetry loop, LLM repair plan + parse, parts catalog, order + work orders, director sub-agent: ratings, LLM bracket, seeds, floor check, register"

MACHINES = ["Medieval Madness", "Attack from Mars", "Twilight Zone", "Godzilla", "Addams Family", "Theatre of Magic"]
NIGHTS = {
    "fri_open": {"machines": MACHINES[:5], "players": 20, "broken": "Attack from Mars", "down": None},
    "sat_league": {"machines": MACHINES[1:6], "players": 16, "broken": "Godzilla", "down": "Twilight Zone"},
    "wed_casual": {"machines": MACHINES[:4], "players": 12, "broken": "Medieval Madness", "down": None},
    "thu_women": {"machines": MACHINES[2:6], "players": 14, "broken": "Addams Family", "down": None},
    "sun_juniors": {"machines": MACHINES[:3] + MACHINES[4:5], "players": 10, "broken": "Twilight Zone", "down": None},
    "tue_pro": {"machines": MACHINES[1:5], "players": 18, "broken": "Godzilla", "down": None},
}
INPUTS = {k: f"Prepare the arcade for the {k.replace('_', ' ')} tournament: {v['players']} players on {len(v['machines'])} machines"
          for k, v in NIGHTS.items()}
REFS = ["wed_casual", "thu_women", "sun_juniors", "tue_pro"]

CASES = [
    Case("zk_pin_1", "stale_data", ("parts_catalog", 1), ("order_parts", 1), "fri_open",
         "parts_catalog answers from last season's cached catalog, and the coil it lists has been discontinued."),
    Case("zk_pin_2", "swallowed_error", ("floor_status", 1), ("register_tournament", 1), "sat_league",
         "floor_status catches the sensor hub's timeout and reports no machine down, so a dead machine goes into the bracket."),
    Case("zk_pin_3", "truncated_result", ("player_ratings", 1), ("register_tournament", 1), "fri_open",
         "player_ratings returns the first page of sixteen players only, so the bracket misses checked-in players."),
    Case("zk_pin_4", "bad_memory_write", ("save_seed_table", 1), ("register_tournament", 1), "sat_league",
         "save_seed_table writes the seeds in check-in order instead of rating order."),
    Case("zk_pin_5", "wrong_tool_args", ("order_parts", 1), ("confirm_work_orders", 1), "fri_open",
         "order_parts is called with the neighbouring machine's id, so the work order ties the part to another machine."),
]

PARTS = {"flipper coil": "FL-11630", "slingshot rubber": "RB-2375", "pop bumper cap": "PB-0355"}


def _rating(i: int) -> int:
    return 1200 + (i * 137) % 700


def policy(req):
    prompt = req.body["messages"][-1]["content"]
    if prompt.startswith("Plan repairs"):
        tele = json.loads(prompt.split("\n", 1)[1])
        jobs = [f"{t['machine']} | flipper coil | 1" for t in tele if t["flipper_ohms"] > 5.0]
        jobs += [f"{t['machine']} | slingshot rubber | 2" for t in tele if t["switch_errors"] > 3]
        return "\n".join(jobs) or "none"
    if prompt.startswith("Make the bracket"):
        players = json.loads(prompt.split("\n", 1)[1])
        return "\n".join(f"R1-{i + 1}: {a['player']} vs {b['player']}" for i, (a, b) in
                         enumerate(zip(players[: len(players) // 2], players[len(players) // 2:][::-1])))
    return "ok"


def record(server, inp: str, out: Path) -> None:
    night = NIGHTS[inp]
    ot = Otlp(AGENT)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    S = ot.span

    def ask(prompt: str) -> str:
        r = client.chat.completions.create(model="arcade-model", messages=[{"role": "user", "content": prompt}])
        return r.choices[0].message.content

    try:
        with ot, S(AGENT, "AGENT", INPUTS[inp], **{"agent.name": AGENT}) as top:
            tele = []
            for m in night["machines"]:
                with S("machine_telemetry", "TOOL", {"machine": m}, **{"tool.name": "machine_telemetry"}) as t:
                    bad = m == night["broken"]
                    t["output"] = {"machine": m, "flipper_ohms": 6.2 if bad else 4.1, "switch_errors": 5 if bad else 1,
                                   "games_today": 40 + len(m)}
                    tele.append(t["output"])
            plan_text = ask("Plan repairs: one line per job as machine | part | qty\n" + json.dumps(tele))
            with S("parse_repair_plan", "CHAIN", plan_text) as p:
                jobs = [dict(zip(("machine", "part", "qty"), [x.strip() for x in line.split("|")]))
                        for line in plan_text.splitlines() if "|" in line]
                p["output"] = jobs
            with S("parts_catalog", "TOOL", {"parts": sorted({j["part"] for j in jobs})}, **{"tool.name": "parts_catalog"}) as pc:
                cat = dict(PARTS)
                if active("zk_pin_1"):
                    cat["flipper coil"] = "FL-11629"
                pc["output"] = {"catalog": cat, "as_of": "2026-11-20"}
            order = [{"machine_id": night["machines"].index(j["machine"]), "part_no": cat[j["part"]], "qty": int(j["qty"])}
                     for j in jobs]
            if active("zk_pin_5"):
                order = [{**o, "machine_id": o["machine_id"] + 1} for o in order]
            with S("order_parts", "TOOL", {"lines": order}, **{"tool.name": "order_parts"}) as op:
                for o in order:
                    if o["part_no"] == "FL-11629":
                        raise ValueError("404 Not Found: part FL-11629 is discontinued (superseded by FL-11630)")
                op["output"] = {"order": "PO-" + str(7000 + len(order)), "lines": order}
            with S("confirm_work_orders", "TOOL", {"order": op["output"]["order"], "jobs": jobs},
                   **{"tool.name": "confirm_work_orders"}) as cw:
                for o, j in zip(order, jobs):
                    got = night["machines"][o["machine_id"]] if o["machine_id"] < len(night["machines"]) else "?"
                    if got != j["machine"]:
                        raise ValueError(f"409 Conflict: work order for '{j['machine']}' references parts ordered for '{got}'")
                cw["output"] = {"work_orders": [f"WO-{i + 1}" for i in range(len(jobs))]}
            with S("tournament_director", "AGENT", {"players": night["players"]}, **{"agent.name": "tournament_director"}) as td:
                with S("player_ratings", "TOOL", {"event": inp, "page_size": 50}, **{"tool.name": "player_ratings"}) as pr:
                    players = [{"player": f"P-{100 + i}", "rating": _rating(i)} for i in range(night["players"])]
                    if active("zk_pin_3"):
                        players = players[:16]
                    pr["output"] = {"players": players}
                with S("rank_players", "CHAIN", {"n": len(players)}) as rk:
                    ranked = sorted(players, key=lambda x: -x["rating"])
                    rk["output"] = ranked
                bracket = ask("Make the bracket, top seed against bottom seed\n" + json.dumps(ranked))
                with S("parse_bracket", "CHAIN", bracket) as pb:
                    matches = [line.split(": ")[1].split(" vs ") for line in bracket.splitlines()]
                    pb["output"] = matches
                with S("assign_machines", "CHAIN", {"matches": len(matches)}) as am:
                    am["output"] = [{"match": i + 1, "machine": night["machines"][i % len(night["machines"])]}
                                    for i in range(len(matches))]
                with S("save_seed_table", "CHAIN", {"ranked": len(ranked)}) as ss:
                    source = players if active("zk_pin_4") else ranked
                    seeds = [{"seed": i + 1, **x} for i, x in enumerate(source)]
                    ss["output"] = {"seeds": seeds}
                with S("floor_status", "TOOL", {"machines": night["machines"]}, **{"tool.name": "floor_status"}) as fs:
                    try:
                        if active("zk_pin_2"):
                            raise TimeoutError("sensor hub did not answer in 2.0 s")
                        fs["output"] = {"out_of_service": [night["down"]] if night["down"] else []}
                    except TimeoutError:
                        fs["output"] = {"out_of_service": []}
                live = [m for m in night["machines"] if m not in fs["output"]["out_of_service"]]
                with S("register_tournament", "TOOL", {"seeds": seeds, "machines": live},
                       **{"tool.name": "register_tournament"}) as rt:
                    if night["down"] and night["down"] in live:
                        raise ValueError(f"409 Conflict: machine '{night['down']}' is marked out of service on the floor map")
                    if len(seeds) != night["players"]:
                        raise ValueError(f"422 Unprocessable Entity: bracket has {len(seeds)} players, {night['players']} checked in")
                    for a, b in zip(seeds, seeds[1:]):
                        if a["rating"] < b["rating"]:
                            raise ValueError(f"422 Unprocessable Entity: seed {a['seed']} ({a['player']}, {a['rating']}) is rated "
                                             f"below seed {b['seed']} ({b['rating']})")
                    rt["output"] = {"tournament": "T-" + inp, "players": len(seeds)}
                td["output"] = rt["output"]
            top["output"] = {"tournament": rt["output"]["tournament"], "purchase_order": op["output"]["order"]}
    finally:
        ot.write(out)
