"""Igloo-building course: booking, snow report retrieval, waiver checks per participant, a model-planned build,
team split, a course-notes memory (save and recall), tool kits per team, a permit office and a welcome message;
traced with OpenInference + OpenTelemetry and written as OTLP JSON (otlp)."""
from __future__ import annotations

import json
import math

from openai import OpenAI

from otlp_kit import Trace

NAME = "igloo-course-desk"
ROUTE = "otlp"
DOMAIN = "igloo-building course"
SHAPE = "OTLP: booking tool, snow report retriever, a waiver tool per participant, planning model call + plan parser chain, team split chain, memory save tool, tool kit per team, permit tool, memory recall tool, welcome model call, send tool"
SWITCH = None

BOOKINGS = {
    "IG-11": {"group": "IG-11", "site": "Lake Louise flats", "date": "2027-01-23", "participants": ["Ana", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ivy"]},
    "IG-12": {"group": "IG-12", "site": "Moraine bowl", "date": "2027-01-30", "participants": ["Jo", "Kit", "Lou", "Mo", "Ned", "Oli"]},
    "IG-13": {"group": "IG-13", "site": "Lake Louise flats", "date": "2027-02-06", "participants": ["Pam", "Quin", "Rae", "Sid", "Tam", "Uma", "Vic"]},
    "IG-14": {"group": "IG-14", "site": "Bow summit", "date": "2027-02-13", "participants": ["Wes", "Xan", "Yui", "Zed", "Abe", "Bea", "Cal", "Dot", "Eve", "Fay", "Gil", "Hou"]},
    "IG-15": {"group": "IG-15", "site": "Moraine bowl", "date": "2027-02-20", "participants": ["Ina", "Jax", "Kai", "Lia", "Max"]},
}
SNOW = {("Lake Louise flats", "2027-01-23"): 72, ("Moraine bowl", "2027-01-30"): 65, ("Lake Louise flats", "2027-02-06"): 58,
        ("Bow summit", "2027-02-13"): 90, ("Moraine bowl", "2027-02-20"): 61}
ZONES = {"Lake Louise flats": "Banff-LL", "Moraine bowl": "Banff-MB", "Bow summit": "Banff-BS", "Lake Laberge": "Yukon-LB"}
INPUTS = [{"group": g, "request": f"Set up the igloo course for group {g}"} for g in BOOKINGS]

CASES = [
    {"id": "zzzh-igloo-01", "input": 2, "switch": "snow", "fault_kind": "stale_data",
     "root": "snow_report", "root_occurrence": 1, "failure": "issue_permit",
     "description": "The snow report for Lake Louise flats on 2027-02-06 returned the previous week's bulletin (issued 2027-01-30, 74 cm) instead of the current one (58 cm)."},
    {"id": "zzzh-igloo-02", "input": 0, "switch": "memory", "fault_kind": "bad_memory_write",
     "root": "save_course_note", "root_occurrence": 1, "failure": "issue_permit",
     "description": "The course-notes memory saved the number of teams (3) as the group's headcount, which the permit request later read back."},
    {"id": "zzzh-igloo-03", "input": 4, "switch": "site", "fault_kind": "wrong_retrieval",
     "root": "snow_report", "root_occurrence": 1, "failure": "issue_permit",
     "description": "The snow report search for Moraine bowl returned the bulletin for Lake Laberge, a site in another avalanche zone."},
    {"id": "zzzh-igloo-04", "input": 3, "switch": "teams", "fault_kind": "off_by_one",
     "root": "split_teams", "root_occurrence": 1, "failure": "issue_permit",
     "description": "The team split dropped the last participant, Hou, when it cut twelve people into teams of four, so only eleven were placed in teams with a tool kit."},
    {"id": "zzzh-igloo-05", "input": 1, "switch": "recall", "fault_kind": "context_pollution",
     "root": "recall_course_notes", "root_occurrence": 1, "failure": "send_welcome",
     "description": "The course-notes recall for IG-12 also returned the notes of group IG-15, booked at the same site, and the welcome message gave IG-15's date 2027-02-20."},
]

_notes: dict = {}


def policy(request):
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Plan the igloo build"):
        d = json.loads(user)
        depth = d["snow"]["depth_cm"]
        blocks = 40 + 2 * d["people"]
        return json.dumps({"blocks": blocks, "block_cm": 60 if depth >= 60 else 45, "team_size": 4 if d["people"] > 8 else 3,
                           "assumed_depth_cm": depth, "zone": d["snow"]["zone"]})
    if system.startswith("Write a welcome"):
        notes = json.loads(user)["notes"]
        n = notes[0]
        return f"Welcome, group {n['group']}! We build at {n['site']} on {n['date']}. Meet at 08:30 with warm layers."
    return "Sorry."


def record(server, inp, path):
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    trace = Trace(NAME)
    group = inp["group"]
    try:
        with trace, trace.span(NAME, "AGENT", inp["request"]) as top:
            booking = trace.call("load_booking", "TOOL", lambda group: dict(BOOKINGS[group]), {"group": group})
            with trace.span("snow_report", "RETRIEVER", {"site": booking["site"], "date": booking["date"]}) as s:
                site, date = booking["site"], booking["date"]
                depth = SNOW[(site, date)]
                issued = date
                if SWITCH == "snow":
                    depth, issued = 74, "2027-01-30"
                if SWITCH == "site":
                    site, depth = "Lake Laberge", 55
                doc = {"site": site, "zone": ZONES[site], "depth_cm": depth, "issued": issued}
                s.documents([{"id": f"bulletin-{ZONES[site]}-{issued}", "content": json.dumps(doc)}])
            snow = doc
            waivers = []
            for person in booking["participants"]:
                waivers.append(trace.call("check_waiver", "TOOL", lambda name, group: {"name": name, "group": group, "signed": True},
                                          {"name": person, "group": group}))
            messages = [{"role": "system", "content": "Plan the igloo build as JSON."},
                        {"role": "user", "content": json.dumps({"people": len(waivers), "snow": snow})}]
            plan_text = client.chat.completions.create(model=server.model, messages=messages).choices[0].message.content
            plan = trace.call("read_plan", "CHAIN", lambda text: json.loads(text), plan_text)

            def split(people, team_size):
                n = math.ceil(len(people) / team_size)
                teams = [people[i * team_size:(i + 1) * team_size] for i in range(n)]
                if SWITCH == "teams":
                    teams = [people[i * team_size:(i + 1) * team_size] for i in range(n)][:-1] + [people[(n - 1) * team_size:-1]]
                return {"teams": teams}

            teams = trace.call("split_teams", "CHAIN", split, {"people": [w["name"] for w in waivers], "team_size": plan["team_size"]})["teams"]

            def save(group, headcount, teams, site, date):
                if SWITCH == "memory":
                    headcount = len(teams)
                _notes[group] = {"group": group, "headcount": headcount, "teams": len(teams), "site": site, "date": date}
                return {"saved": dict(_notes[group])}

            trace.call("save_course_note", "TOOL", save, {"group": group, "headcount": len(waivers), "teams": teams,
                                                           "site": booking["site"], "date": booking["date"]})
            kits = [trace.call("assign_tool_kit", "TOOL", lambda team, index: {"kit": f"K-{index + 1}", "saws": 2, "members": team},
                               {"team": t, "index": i}) for i, t in enumerate(teams)]

            def recall(group):
                notes = [_notes[group]]
                if SWITCH == "recall":
                    notes = [n for g, n in sorted(_notes.items()) if g != group and n["site"] == notes[0]["site"]] + notes
                return {"notes": notes}

            recalled = trace.call("recall_course_notes", "TOOL", recall, {"group": group})

            def permit(group, site, date, headcount, plan, kits):
                live = SNOW[(site, date)]
                if ZONES[site] != plan["zone"]:
                    raise RuntimeError(f"permit for {site} needs the {ZONES[site]} bulletin; the plan cites {plan['zone']}")
                if abs(plan["assumed_depth_cm"] - live) > 10:
                    raise RuntimeError(f"plan assumes {plan['assumed_depth_cm']} cm of snow at {site}; the site sensor reads {live} cm")
                if headcount != len(BOOKINGS[group]["participants"]):
                    raise RuntimeError(f"permit headcount {headcount} does not match {len(BOOKINGS[group]['participants'])} signed waivers")
                placed = sum(len(k["members"]) for k in kits)
                if placed != headcount:
                    raise RuntimeError(f"{headcount} participants but {placed} placed in teams with a tool kit")
                return {"permit": f"PK-{group}", "site": site}

            note = recalled["notes"][-1]
            trace.call("issue_permit", "TOOL", permit, {"group": group, "site": booking["site"], "date": booking["date"],
                                                         "headcount": note["headcount"], "plan": plan, "kits": kits})
            welcome = client.chat.completions.create(model=server.model, messages=[
                {"role": "system", "content": "Write a welcome message from the course notes."},
                {"role": "user", "content": json.dumps(recalled)}]).choices[0].message.content

            def send(group, text):
                if booking["date"] not in text:
                    raise RuntimeError(f"welcome for {group} does not give the course date {booking['date']}")
                return {"sent": len(BOOKINGS[group]["participants"])}

            trace.call("send_welcome", "TOOL", send, {"group": group, "text": welcome})
            top.output(welcome)
    finally:
        trace.write(path)
