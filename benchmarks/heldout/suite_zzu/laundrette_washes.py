"""Laundrette: plan a day's service washes (programmes, machines, prices, collection notices) (sdk route)."""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import trajdebug
from openai import OpenAI

import kit
from harness import Brain, chat_prompt, payload

NAME, ROUTE, DOMAIN = "laundrette-service-washes", "sdk", "a laundrette's service washes"
SHAPE = "day ticket load, per-bag LLM classification + parse loop, machine-planning sub-agent (retried status gateway, notes, LLM assignment, parse, schedule state write), per-ticket pricing loop, LLM notices, validator"

FABRICS = {"cotton": "cotton_60", "mixed": "cotton_40", "wool": "delicates_30", "silk": "delicates_30", "duvet": "duvet_60"}
RATE = {"cotton_60": 2.4, "cotton_40": 2.2, "delicates_30": 3.1, "duvet_60": 4.0}
MINUTES = {"cotton_60": 95, "cotton_40": 80, "delicates_30": 60, "duvet_60": 120}
MACHINES = [("M1", 8), ("M2", 8), ("M3", 12), ("M4", 12), ("M5", 18)]
OUT_OF_SERVICE = ["M4"]
NAMES = ["Ahmed", "Bryony", "Carys", "Dev", "Esi", "Farah", "Gwil", "Hana", "Ifor", "Jas", "Kemi", "Lior"]
EXTRAS = {"conditioner": 0.8, "ironing": 4.5, "fold": 1.0}


def make_day(i: int) -> dict:
    fabrics = list(FABRICS)
    tickets = []
    for k in range(5):
        fab = fabrics[(i + k * 2) % len(fabrics)]
        kg = round(3.5 + ((i * 7 + k * 5) % 11) * 0.75, 2)
        if fab == "duvet":
            kg = min(kg, 9.0)
        extras = [e for j, e in enumerate(EXTRAS) if (i + k + j) % 3 == 0]
        tickets.append({"ticket": f"SW-{i}{k:02d}", "customer": NAMES[(i + k) % len(NAMES)], "fabric": fab, "kg": kg,
                        "extras": extras, "collect": f"{14 + (k % 4)}:00"})
    return {"day": f"2026-03-{10 + i:02d}", "tickets": tickets}


brain = Brain()


@brain.on("classify_bag")
def _classify(request, text):
    d = payload(text)
    prog = FABRICS[d["fabric"]]
    if kit.on("zzu_laundrette_04") and d["fabric"] in ("wool", "silk"):
        return f"Programme: {prog.replace('_', '-').title()}"
    return f"programme={prog}"


@brain.on("assign_machines")
def _assign(request, text):
    d = payload(text)
    free = [m for m in d["machines"] if m["id"] not in d["out_of_service"]]
    held = {w for n in d["notes"] if "reserved" in n for w in n.split() if w.startswith("M") and w[1:].isdigit()}
    free = [m for m in free if m["id"] not in held] or free
    used: dict[str, int] = {}
    rows = []
    for t in sorted(d["tickets"], key=lambda t: -t["kg"]):
        fits = [m for m in free if m["kg"] >= t["kg"]]
        fits.sort(key=lambda m: (used.get(m["id"], 0), m["kg"]))
        m = fits[0] if fits else free[-1]
        slot = used.get(m["id"], 0)
        used[m["id"]] = slot + 1
        rows.append(f"{t['ticket']} -> {m['id']} slot {min(slot, 1)}")
    return "\n".join(rows)


@brain.on("notices")
def _notices(request, text):
    d = payload(text)
    return "\n".join(f"{t['customer']}: your service wash {t['ticket']} is ready from {t['ready']} ({t['price']:.2f} GBP)." for t in d["tickets"])


_gw = {"calls": 0}


def _llm(client, name, prompt):
    msgs = [{"role": "system", "content": "You run the service-wash counter of a laundrette."}, {"role": "user", "content": prompt}]
    with trajdebug.step(name, kind="llm", input={"messages": msgs}) as s:
        r = client.chat.completions.create(model="fake-model", messages=msgs)
        s.output = {"role": "assistant", "content": r.choices[0].message.content}
    return s.output


@trajdebug.step(kind="tool")
def load_day_tickets(day: dict) -> list:
    start = 1 if kit.on("zzu_laundrette_01") else 0  # paging starts after the header row
    return [dict(t) for t in day["tickets"][start:]]


@trajdebug.step(kind="parse")
def parse_programme(answer: dict) -> str:
    text = answer["content"]
    if text.startswith("programme="):
        return text.split("=", 1)[1].strip()
    return "cotton_40"


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def machine_status() -> dict:
    _gw["calls"] += 1
    if kit.on("zzu_laundrette_02"):
        try:
            if _gw["calls"] == 1:
                raise ConnectionError("machine gateway reset")
        except ConnectionError:
            return {"machines": [{"id": m, "kg": kg} for m, kg in MACHINES], "out_of_service": []}
    if _gw["calls"] == 1:
        raise ConnectionError("machine gateway reset")
    return {"machines": [{"id": m, "kg": kg} for m, kg in MACHINES], "out_of_service": list(OUT_OF_SERVICE)}


@trajdebug.step(kind="other")
def gather_notes(status: dict) -> list:
    notes = [f"{m} out of service" for m in status["out_of_service"]]
    if kit.on("zzu_laundrette_03"):
        notes.append("M2 and M3 reserved for the Riverside Hotel contract all day (from the Tuesday board)")
    return notes


@trajdebug.step(kind="parse")
def parse_assignment(answer: dict) -> dict:
    out = {}
    for row in answer["content"].splitlines():
        ticket, rest = row.split(" -> ")
        machine, _, slot = rest.split(" ")
        out[ticket] = {"machine": machine, "slot": int(slot)}
    return out


@trajdebug.step(kind="state")
def store_schedule(assignment: dict) -> dict:
    trajdebug.current_run().state["schedule"] = assignment
    return assignment


@trajdebug.step(kind="agent")
def plan_machines(client, tickets: list) -> dict:
    status = machine_status()
    notes = gather_notes(status)
    ans = _llm(client, "assign_machines", chat_prompt("assign_machines", "Assign each ticket a machine and a slot (0 or 1).",
                                                       {"machines": status["machines"], "out_of_service": status["out_of_service"], "notes": notes,
                                                        "tickets": [{"ticket": t["ticket"], "kg": t["kg"]} for t in tickets]}))
    return store_schedule(parse_assignment(ans))


@trajdebug.step(kind="tool")
def price_ticket(ticket: str, programme: str, kg: float, extras: list) -> dict:
    price = round(RATE[programme] * kg + sum(EXTRAS[e] for e in extras), 2)
    return {"ticket": ticket, "programme": programme, "price": price}


@trajdebug.step(kind="condition")
def validate_washes(day: dict, programmes: dict, priced: list, notices: dict) -> str:
    sched = trajdebug.current_run().state["schedule"]
    booked = {t["ticket"] for t in day["tickets"]}
    missing = booked - {p["ticket"] for p in priced}
    if missing:
        raise ValueError(f"{day['day']}: tickets {', '.join(sorted(missing))} booked but not scheduled or priced")
    cap = dict(MACHINES)
    slots = {}
    for t in day["tickets"]:
        need = FABRICS[t["fabric"]]
        if programmes[t["ticket"]] != need:
            raise ValueError(f"{t['ticket']}: {t['fabric']} set to {programmes[t['ticket']]}, the care rule is {need}")
        a = sched[t["ticket"]]
        if a["machine"] in OUT_OF_SERVICE:
            raise ValueError(f"{t['ticket']}: scheduled on {a['machine']}, which is out of service")
        if cap[a["machine"]] < t["kg"]:
            raise ValueError(f"{t['ticket']}: {t['kg']} kg in {a['machine']} ({cap[a['machine']]} kg drum)")
        key = (a["machine"], a["slot"])
        if key in slots:
            raise ValueError(f"{t['ticket']} and {slots[key]} both on {a['machine']} slot {a['slot']}")
        slots[key] = t["ticket"]
    for t, p in zip(day["tickets"], priced):
        expect = round(RATE[FABRICS[t["fabric"]]] * t["kg"] + sum(EXTRAS[e] for e in t["extras"]), 2)
        if abs(p["price"] - expect) > 0.005:
            raise ValueError(f"{t['ticket']}: charged {p['price']:.2f} GBP for {t['kg']} kg, the tariff gives {expect:.2f}")
    return "ok"


def record(server, i: int, path: str) -> None:
    day = make_day(i)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    server.use(brain)
    _gw["calls"] = 0
    try:
        with trajdebug.run(NAME, task=f"service washes for {day['day']}", path=path):
            tickets = load_day_tickets(day)
            programmes = {}
            for t in tickets:
                ans = _llm(client, "classify_bag", chat_prompt("classify_bag", "Which wash programme fits this bag?", {"ticket": t["ticket"], "fabric": t["fabric"], "kg": t["kg"]}))
                programmes[t["ticket"]] = parse_programme(ans)
            sched = plan_machines(client, tickets)
            priced = []
            for k, t in enumerate(tickets):
                kg = t["kg"]
                if kit.on("zzu_laundrette_05") and k == 4:
                    kg = int(kg)
                priced.append(price_ticket(t["ticket"], programmes[t["ticket"]], kg, t["extras"]))
            ready = {p["ticket"]: f"{11 + sched[p['ticket']]['slot'] * 2}:{MINUTES[p['programme']] % 60:02d}" for p in priced}
            notices = _llm(client, "draft_notices", chat_prompt("notices", "Write the collection texts.", {"tickets": [
                {"customer": t["customer"], "ticket": t["ticket"], "ready": ready[t["ticket"]], "price": p["price"]} for t, p in zip(tickets, priced)]}))
            validate_washes(day, programmes, priced, notices)
    except ValueError:
        pass


CASES = [
    dict(id="zzu_laundrette_01", kind="off_by_one", root=("load_day_tickets", 1), failure=("validate_washes", 1), input=0,
         description="The ticket loader starts reading the day's book at index 1, so the first booked wash is never planned or priced."),
    dict(id="zzu_laundrette_02", kind="swallowed_error", root=("machine_status", 1), failure=("validate_washes", 1), input=3,
         description="The machine-status tool catches the gateway reset and returns the machine list with no out-of-service entries, so M4 gets a wash."),
    dict(id="zzu_laundrette_03", kind="context_pollution", root=("gather_notes", 1), failure=("validate_washes", 1), input=2,
         description="The planning notes pick up another day's board note reserving M2 and M3, so the planner doubles two bags into one slot."),
    dict(id="zzu_laundrette_04", kind="format_drift", root=("classify_bag", 2), failure=("validate_washes", 1), input=1,
         description="For delicate fabrics the classifier answers 'Programme: Delicates-30' instead of 'programme=delicates_30', and the parser falls back to cotton 40."),
    dict(id="zzu_laundrette_05", kind="wrong_tool_args", root=("price_ticket", 5), failure=("validate_washes", 1), input=4,
         description="The fifth ticket's weight is passed to the pricing tool truncated to whole kilograms, undercharging the wash."),
]
REFS = [5, 6, 7, 8]
