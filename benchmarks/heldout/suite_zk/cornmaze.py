"""Corn maze night operations (OpenTelemetry spans, OpenInference conventions, exported as OTLP/JSON)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from openai import OpenAI

from .common import Case, Otlp
from .kit import active

AGENT, ROUTE, DOMAIN = "corn-maze-night-ops", "otlp", "corn maze"
SHAPE = "booking export, layout retriever, LLM wave plan + parse, marshal/flashlight loop, night state, schedule, LLM notice, two publish checks"

NIGHTS = {
    "oct17": {"date": "2026-10-17", "layout": "Pumpkin Spiral", "groups": [18, 6, 12, 9, 15, 4, 8], "step_free": [2, 5]},
    "oct24": {"date": "2026-10-24", "layout": "Scarecrow Run", "groups": [10, 14, 7, 11, 5, 16], "step_free": [3]},
    "oct10": {"date": "2026-10-10", "layout": "Harvest Knot", "groups": [8, 12, 6, 10], "step_free": []},
    "oct31": {"date": "2026-10-31", "layout": "Pumpkin Spiral", "groups": [20, 12, 9, 14, 6, 7], "step_free": [1]},
    "nov07": {"date": "2026-11-07", "layout": "Scarecrow Run", "groups": [9, 9, 11, 5], "step_free": [4]},
    "oct03": {"date": "2026-10-03", "layout": "Harvest Knot", "groups": [6, 14, 13, 8, 7], "step_free": [2]},
}
INPUTS = {k: f"Run the maze night of {v['date']} on the {v['layout']} layout" for k, v in NIGHTS.items()}
REFS = ["oct10", "oct31", "nov07", "oct03"]

CASES = [
    Case("zk_maze_1", "bad_memory_write", ("save_night_state", 1), ("publish_wave_schedule", 1), "oct17",
         "save_night_state stores the exits without the step-free exit, so waves with wheelchair groups get no accessible exit."),
    Case("zk_maze_2", "format_drift", ("ChatCompletion", 2), ("publish_notice", 1), "oct24",
         "The notice model switches to 12-hour times, which the public notice board does not accept."),
    Case("zk_maze_3", "plan_error", ("ChatCompletion", 1), ("publish_wave_schedule", 1), "oct17",
         "The wave-planning model packs the groups into two waves, overfilling the maze's per-wave capacity."),
    Case("zk_maze_4", "off_by_one", ("build_schedule", 1), ("publish_wave_schedule", 1), "oct24",
         "build_schedule iterates one wave short, so the last wave's groups are in no slot."),
    Case("zk_maze_5", "wrong_retrieval", ("maze_layout_search", 1), ("publish_wave_schedule", 1), "oct17",
         "maze_layout_search returns another layout's route sections, which tonight's maze does not have."),
]

LAYOUTS = {"Pumpkin Spiral": ["Gourd Gate", "Spiral Core", "Hay Bridge", "Crow Corner"],
           "Scarecrow Run": ["Straw Alley", "Lantern Bend", "Barn Exit Loop"],
           "Harvest Knot": ["Silo Steps", "Knot Centre", "Orchard Edge"],
           "Sunflower Loop": ["Sunflower Loop", "Bee Walk", "Old Tractor"]}
CAPACITY = 40


def policy(req):
    prompt = req.body["messages"][-1]["content"]
    if prompt.startswith("Plan start waves"):
        groups = json.loads(prompt.split("\n", 1)[1])
        waves, cur, size = [], [], 0
        limit = 10_000 if active("zk_maze_3") else CAPACITY
        per = max(1, len(groups) // 2) if active("zk_maze_3") else None
        for g in groups:
            if cur and (size + g["size"] > limit or (per and len(cur) >= per + 1)):
                waves.append(cur)
                cur, size = [], 0
            cur.append(g["group"])
            size += g["size"]
        waves.append(cur)
        lines = [f"W{i + 1} {19 + i // 2:02d}:{(i % 2) * 30:02d} " + ",".join(w) for i, w in enumerate(waves)]
        return "\n".join(lines)
    if prompt.startswith("Write the public notice"):
        first = json.loads(prompt.split("\n", 1)[1])["first_wave"]
        if active("zk_maze_2"):
            h, m = first.split(":")
            first = f"{int(h) - 12}:{m} PM"
        return json.dumps({"title": "Maze by lantern light", "first_wave": first, "text": "Bring a warm coat."})
    return "ok"


def record(server, inp: str, out: Path) -> None:
    night = NIGHTS[inp]
    ot = Otlp(AGENT)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    S = ot.span

    def ask(prompt: str) -> str:
        r = client.chat.completions.create(model="maze-model", messages=[{"role": "user", "content": prompt}])
        return r.choices[0].message.content

    try:
        with ot, S(AGENT, "AGENT", INPUTS[inp], **{"agent.name": AGENT}) as top:
            with S("load_bookings", "CHAIN", {"date": night["date"]}) as b:
                with S("booking_export", "TOOL", {"date": night["date"]}, **{"tool.name": "booking_export"}) as t:
                    groups = [{"group": f"G-{i + 1}", "size": n, "step_free": (i + 1) in night["step_free"]}
                              for i, n in enumerate(night["groups"])]
                    t["output"] = groups
                for g in groups:
                    with S("group_checkin_status", "TOOL", {"group": g["group"]}, **{"tool.name": "group_checkin_status"}) as ck:
                        ck["output"] = {"group": g["group"], "paid": True, "lead_phone_on_file": True}
                b["output"] = {"groups": len(groups), "guests": sum(night["groups"])}
            with S("maze_layout_search", "RETRIEVER", f"route sections of the {night['layout']} layout") as r:
                layout = "Sunflower Loop" if active("zk_maze_5") else night["layout"]
                docs = [{"id": f"layout-{layout}", "sections": LAYOUTS[layout], "exits": ["North Gate", "Barn Door", "Ramp Exit"]}]
                r["output"] = docs
            plan_text = ask("Plan start waves of at most 40 guests, one line per wave\n" + json.dumps(groups))
            with S("parse_wave_plan", "CHAIN", plan_text) as p:
                waves = []
                for line in plan_text.splitlines():
                    wid, time, members = line.split(" ", 2)
                    waves.append({"wave": wid, "start": time, "groups": members.split(",")})
                p["output"] = waves
            by_id = {g["group"]: g for g in groups}
            for i, w in enumerate(waves):
                with S("marshal_roster", "TOOL", {"wave": w["wave"]}, **{"tool.name": "marshal_roster"}) as m:
                    m["output"] = {"wave": w["wave"], "marshals": ["Ada", "Bo", "Cy", "Di"][i % 4: i % 4 + 2]}
                    w["marshals"] = m["output"]["marshals"]
                with S("assign_flashlights", "CHAIN", w) as f:
                    w["flashlights"] = sum(by_id[g]["size"] for g in w["groups"])
                    f["output"] = {"wave": w["wave"], "flashlights": w["flashlights"]}
            with S("save_night_state", "CHAIN", {"layout": docs[0]["id"]}) as st:
                exits = list(docs[0]["exits"])
                if active("zk_maze_1"):
                    exits = exits[:2]
                state = {"night": night["date"], "sections": docs[0]["sections"], "exits": exits}
                st["output"] = state
            with S("weather_check", "TOOL", {"date": night["date"]}, **{"tool.name": "weather_check"}) as wc:
                wc["output"] = {"rain_mm": 0.4, "wind_kmh": 14, "sunset": "18:41"}
            with S("build_schedule", "CHAIN", {"waves": len(waves)}) as bs:
                n = len(waves) - 1 if active("zk_maze_4") else len(waves)
                slots = []
                for w in waves[:n]:
                    step_free = any(by_id[g]["step_free"] for g in w["groups"])
                    exit_ = "Ramp Exit" if step_free and "Ramp Exit" in state["exits"] else state["exits"][0]
                    slots.append({**w, "route": state["sections"], "exit": exit_, "step_free": step_free})
                bs["output"] = slots
            with S("publish_wave_schedule", "TOOL", {"slots": slots}, **{"tool.name": "publish_wave_schedule"}) as pub:
                placed = [g for s_ in slots for g in s_["groups"]]
                for g in groups:
                    if g["group"] not in placed:
                        raise ValueError(f"422 schedule rejected: booked group {g['group']} ({g['size']} guests) has no start wave")
                for s_ in slots:
                    guests = sum(by_id[g]["size"] for g in s_["groups"])
                    if guests > CAPACITY:
                        raise ValueError(f"409 schedule rejected: wave {s_['wave']} has {guests} guests, maze capacity per wave is {CAPACITY}")
                    bad = [x for x in s_["route"] if x not in LAYOUTS[night["layout"]]]
                    if bad:
                        raise ValueError(f"422 schedule rejected: route section '{bad[0]}' is not part of the {night['layout']} layout")
                    if s_["step_free"] and s_["exit"] != "Ramp Exit":
                        raise ValueError(f"422 schedule rejected: wave {s_['wave']} has a step-free group but exits by {s_['exit']}")
                pub["output"] = {"published": len(slots)}
            notice = json.loads(ask("Write the public notice for tonight\n" + json.dumps({"first_wave": slots[0]["start"]})))
            with S("publish_notice", "TOOL", notice, **{"tool.name": "publish_notice"}) as pn:
                if not re.fullmatch(r"\d{2}:\d{2}", notice["first_wave"]):
                    raise ValueError(f"400 notice rejected: first_wave must be HH:MM (24-hour), got '{notice['first_wave']}'")
                pn["output"] = {"notice": "N-" + night["date"].replace("-", "")}
            top["output"] = {"waves": len(slots), "notice": pn["output"]["notice"]}
    finally:
        ot.write(out)
