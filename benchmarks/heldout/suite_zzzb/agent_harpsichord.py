"""Harpsichord restorer: restoration jobs (recording route: trajdebug's own SDK).

Shape: workshop memory recalled into run.state, the model drafts a plan, the plan is parsed and
dispatched task by task (a jack-rail gauge that needs a second attempt, string gauges and a wire
order, a voicing specialist sub-agent with its own model call and tool), three suppliers priced
in parallel threads, the parts order placed, costs estimated, and the sign-off asserts the job.
"""
from __future__ import annotations

import json
import time

import trajdebug
from openai import OpenAI

RUN_NAME = "harpsichord-workshop"
ROUTE = "sdk"
DOMAIN = "a harpsichord restorer's workshop"
SHAPE = "memory recall -> model plan -> parse -> dispatch loop (retry, tools, sub-agent with llm+tool) -> parallel supplier quotes -> order -> estimate -> asserting sign-off; 13-20 steps"

SWITCH = None

INPUTS = [
    {"job": "J-311", "client": "Harrow", "serial": "HB-1987-04", "manuals": 2, "budget_eur": 2400,
     "complaints": [{"text": "ciphering key on the lower manual", "area": "regulate", "register": "8' I"},
                    {"text": "dull plucking in the 4'", "area": "revoice", "register": "4'"},
                    {"text": "broken strings in the upper 8'", "area": "restring", "register": "8' II"}]},
    {"job": "J-312", "client": "Okafor", "serial": "VF-1975-02", "manuals": 1, "budget_eur": 1500,
     "complaints": [{"text": "uneven voicing in the treble", "area": "revoice", "register": "8' I"},
                    {"text": "slow jacks after the winter", "area": "regulate", "register": "8' I"}]},
    {"job": "J-313", "client": "Lindqvist", "serial": "TK-2001-07", "manuals": 2, "budget_eur": 3000,
     "complaints": [{"text": "bass strings rusty", "area": "restring", "register": "8' I"},
                    {"text": "4' stop rattles", "area": "regulate", "register": "4'"},
                    {"text": "harsh lute stop", "area": "revoice", "register": "8' II"},
                    {"text": "replace broken 4' strings", "area": "restring", "register": "4'"}]},
    {"job": "J-314", "client": "Moreau", "serial": "DW-1969-01", "manuals": 1, "budget_eur": 1200,
     "complaints": [{"text": "two silent notes", "area": "regulate", "register": "8' I"}]},
    {"job": "J-315", "client": "Castellanos", "serial": "HB-1992-11", "manuals": 2, "budget_eur": 2600,
     "complaints": [{"text": "coupler sticks", "area": "regulate", "register": "8' II"},
                    {"text": "4' strings dull and kinked", "area": "restring", "register": "4'"},
                    {"text": "quills cracked on the upper manual", "area": "revoice", "register": "8' II"}]},
]

CASES = [
    {"id": "zzzb_harp_01", "input": 2, "switch": "plan_skips_rattle", "kind": "plan_error",
     "root": ("draft_plan", 1), "failure": ("workshop_signoff", 1),
     "description": "The model's restoration plan left out the rattling 4' stop from the client's complaints, so the sign-off found a complaint no task covers."},
    {"id": "zzzb_harp_02", "input": 0, "switch": "specialist_by_owner", "kind": "subagent_wrong_entity",
     "root": ("voicing_specialist", 1), "failure": ("place_parts_order", 1),
     "description": "The voicing specialist took the client's other harpsichord (HB-1990-11) by owner name instead of the job's serial HB-1987-04, so the parts order named an instrument not on the job."},
    {"id": "zzzb_harp_03", "input": 4, "switch": "old_price_list", "kind": "stale_data",
     "root": ("supplier_price", 2), "failure": ("place_parts_order", 1),
     "description": "Early Keyboard Supply's quote came from its 2025-03 price list, superseded in 2026-01, so it looked cheapest and the order on it was refused."},
    {"id": "zzzb_harp_04", "input": 0, "switch": "notes_by_surname_prefix", "kind": "context_pollution",
     "root": ("recall_client_notes", 1), "failure": ("workshop_signoff", 1),
     "description": "Recalling workshop notes by surname prefix pulled in client Harrowby's soundboard crack, the model planned that repair for Harrow's instrument, and the estimate went over the client's cap."},
    {"id": "zzzb_harp_05", "input": 2, "switch": "gauges_default_register", "kind": "tool_ignores_argument",
     "root": ("measure_string_gauges", 2), "failure": ("order_wire", 2),
     "description": "The string-gauge table returned the 8' I set whatever register it was asked for, so the wire order for the 4' asked for more brass than the coil holds."},
]

NOTES = {
    "Harrow": ["HB-1987-04: restrung 8' I in 2021", "HB-1987-04: client prefers Delrin plectra"],
    "Harrowby": ["RZ-1979-03: soundboard crack in the bass, glued 2019, reopening"],
    "Okafor": ["VF-1975-02: humid room, check jacks each spring"],
    "Lindqvist": ["TK-2001-07: lute stop leather replaced 2018"],
    "Moreau": [],
    "Castellanos": ["HB-1992-11: bought from the Brussels dealer"],
}
INSTRUMENTS = {"Harrow": ["HB-1987-04", "HB-1990-11"], "Okafor": ["VF-1975-02"], "Lindqvist": ["TK-2001-07"],
               "Moreau": ["DW-1969-01"], "Castellanos": ["HB-1992-11"]}
JACKS = {"HB-1987-04": 112, "HB-1990-11": 168, "VF-1975-02": 56, "TK-2001-07": 168, "DW-1969-01": 56,
         "HB-1992-11": 168}
GAUGES = {"8' I": {"material": "brass", "metres": 31.0}, "8' II": {"material": "iron", "metres": 29.0},
          "4'": {"material": "brass", "metres": 17.0}}
COILS = {"brass": 50.0, "iron": 40.0}
COST = {"regulate": 320, "restring": 540, "revoice": 610, "soundboard": 1400}
SUPPLIERS = ["Bremen Kielkiel", "Early Keyboard Supply", "Atelier Plectre"]
PRICE_LISTS = {"Bremen Kielkiel": ("2026-02", 1.9), "Early Keyboard Supply": ("2026-01", 1.7),
               "Atelier Plectre": ("2026-02", 1.8)}


def policy(request):
    messages = request.body["messages"]
    system, user = messages[0]["content"], json.loads(messages[-1]["content"])
    if system.startswith("Draft a restoration plan"):
        tasks = [{"task": c["area"], "register": c["register"], "for": c["text"]} for c in user["complaints"]]
        if SWITCH == "plan_skips_rattle":
            tasks = [t for t in tasks if "rattles" not in t["for"]]
        if any("soundboard crack" in n for n in user["notes"]):
            tasks.append({"task": "soundboard", "register": "-", "for": "reopening soundboard crack"})
        return json.dumps({"tasks": tasks})
    if system.startswith("Advise on voicing"):
        return json.dumps({"serial": user["serial"], "plectra": "Delrin", "quills": user["jacks"] // 2})
    return "{}"


def record(inp, path, server):
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    gauge_calls = {"n": 0}

    def chat(system, payload):
        reply = client.chat.completions.create(model=server.model, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}])
        return reply.choices[0].message.content

    @trajdebug.step(kind="input")
    def job_intake(job: dict) -> dict:
        return job

    @trajdebug.step(kind="state")
    def recall_client_notes(client_name: str) -> list:
        if SWITCH == "notes_by_surname_prefix":
            found = [n for name, notes in NOTES.items() if name.startswith(client_name) for n in notes]
        else:
            found = list(NOTES.get(client_name, []))
        trajdebug.current_run().state["notes"] = found
        return found

    @trajdebug.step(kind="llm")
    def draft_plan(job: dict) -> str:
        notes = trajdebug.current_run().state["notes"]
        return chat("Draft a restoration plan: one task per complaint, plus what the notes call for.",
                    {"serial": job["serial"], "complaints": job["complaints"], "notes": notes})

    @trajdebug.step(kind="parse")
    def parse_plan(text: str) -> list:
        return [dict(t) for t in json.loads(text)["tasks"]]

    @trajdebug.retry(attempts=3, on=(ConnectionError,))
    @trajdebug.step(kind="tool")
    def regulate_jacks(serial: str, register: str) -> dict:
        gauge_calls["n"] += 1
        if gauge_calls["n"] == 1:
            raise ConnectionError("jack-rail gauge did not answer on /dev/ttyUSB0")
        return {"serial": serial, "register": register, "jacks_adjusted": JACKS[serial] // 4}

    @trajdebug.step(kind="tool")
    def measure_string_gauges(serial: str, register: str) -> dict:
        table = "8' I" if SWITCH == "gauges_default_register" else register
        return {"serial": serial, "register": register, **GAUGES[table]}

    @trajdebug.step(kind="tool")
    def order_wire(gauges: dict) -> dict:
        state = trajdebug.current_run().state
        used = state.get("wire_used", {})
        total = used.get(gauges["material"], 0.0) + gauges["metres"]
        if total > COILS[gauges["material"]]:
            raise ValueError(f"{gauges['register']}: {total:.1f} m of {gauges['material']} asked, "
                             f"the coil holds {COILS[gauges['material']]:.1f} m")
        used[gauges["material"]] = total
        state["wire_used"] = used
        return {"material": gauges["material"], "metres": gauges["metres"]}

    @trajdebug.step(kind="tool")
    def read_jack_inventory(serial: str) -> dict:
        return {"serial": serial, "jacks": JACKS[serial]}

    @trajdebug.step(kind="llm")
    def voicing_advice(inventory: dict) -> dict:
        return json.loads(chat("Advise on voicing: plectra material and quills to cut.", inventory))

    @trajdebug.step(kind="agent")
    def voicing_specialist(job: dict, task: dict) -> dict:
        serial = job["serial"]
        if SWITCH == "specialist_by_owner":
            serial = INSTRUMENTS[job["client"]][-1]
        advice = voicing_advice(read_jack_inventory(serial))
        return {"register": task["register"], **advice}

    @trajdebug.step(kind="tool")
    def supplier_price(supplier: str, quills: int) -> dict:
        listed, unit = PRICE_LISTS[supplier]
        if SWITCH == "old_price_list" and supplier == "Early Keyboard Supply":
            listed, unit = "2025-03", 1.2
        return {"supplier": supplier, "price_list": listed, "unit_eur": unit, "total_eur": round(unit * quills, 2)}

    @trajdebug.step(kind="agent")
    def compare_suppliers(quills: int) -> dict:
        def ask(i_name):
            i, name = i_name
            time.sleep(0.004 * i)
            return supplier_price(name, quills)

        with trajdebug.ContextThreadPoolExecutor(max_workers=3) as pool:
            quotes = list(pool.map(ask, enumerate(SUPPLIERS)))
        return min(quotes, key=lambda q: q["total_eur"])

    @trajdebug.step(kind="tool")
    def place_parts_order(job: dict, voicing: list, quote: dict) -> dict:
        for v in voicing:
            if v["serial"] != job["serial"]:
                raise ValueError(f"order for job {job['job']} names instrument {v['serial']}, the job is {job['serial']}")
        current = PRICE_LISTS[quote["supplier"]][0]
        if quote["price_list"] != current:
            raise ValueError(f"{quote['supplier']} refused the order: price list {quote['price_list']} "
                             f"is superseded by {current}")
        return {"job": job["job"], "supplier": quote["supplier"], "eur": quote["total_eur"]}

    @trajdebug.step(kind="other")
    def estimate_costs(tasks: list, order: dict) -> dict:
        labour = sum(COST[t["task"]] for t in tasks)
        return {"labour_eur": labour, "parts_eur": order["eur"], "total_eur": round(labour + order["eur"], 2)}

    @trajdebug.step(kind="output")
    def workshop_signoff(job: dict, tasks: list, estimate: dict) -> str:
        covered = {t["for"] for t in tasks}
        for c in job["complaints"]:
            assert c["text"] in covered, f"{job['job']}: complaint '{c['text']}' has no task in the plan"
        assert estimate["total_eur"] <= job["budget_eur"], (
            f"{job['job']}: estimate EUR {estimate['total_eur']:.2f} is over the client's cap EUR {job['budget_eur']}")
        return f"{job['job']} {job['serial']}: {len(tasks)} tasks, EUR {estimate['total_eur']:.2f}"

    try:
        with trajdebug.run(RUN_NAME, path=str(path), task=f"restoration job {inp['job']} for {inp['client']}"):
            job = job_intake(inp)
            recall_client_notes(job["client"])
            tasks = parse_plan(draft_plan(job))
            voicing = []
            for task in tasks:
                if task["task"] == "regulate":
                    regulate_jacks(job["serial"], task["register"])
                elif task["task"] == "restring":
                    order_wire(measure_string_gauges(job["serial"], task["register"]))
                elif task["task"] == "revoice":
                    voicing.append(voicing_specialist(job, task))
            quills = sum(v["quills"] for v in voicing) or 10
            quote = compare_suppliers(quills)
            order = place_parts_order(job, voicing, quote)
            workshop_signoff(job, tasks, estimate_costs(tasks, order))
    except (ValueError, AssertionError):
        pass
