"""Airport landing-slot allocation (recording SDK).

A slot coordinator's desk takes one airline batch of season slot requests for airport KRV, splits it into
work batches, parses each request line, looks up historic rights, lets the model classify the request's
priority, checks the hour's declared runway capacity, records the allocation in run state, works out the
night noise quota and submits the allocation message to the coordination system, which validates it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import trajdebug
from openai import OpenAI

from .common import Case
from .kit import active

AGENT = "slot-coordinator"
ROUTE = "sdk"
DOMAIN = "airport landing-slot allocation"
SHAPE = "capacity tool with retry, batch split, per-request parse → retrieval → llm → tool → state loop, llm summary, quota, submit"

QC = {"A320": 0.5, "B738": 0.5, "A359": 1.0, "E190": 0.25, "A21N": 0.5, "AT76": 0.125}

RIGHTS = {
    "BA0456": {"ref": "H-1187", "time": "0715", "seasons": ["S25", "S26"]},
    "EZY812": {"ref": "H-1342", "time": "0840", "seasons": ["S25", "S26"]},
    "KL1530": {"ref": "H-0975", "time": "0605", "seasons": ["S24", "S25", "S26"]},
    "LH2496": {"ref": "H-1410", "time": "1930", "seasons": ["S26"]},
    "VY7221": {"ref": "H-1522", "time": "2340", "seasons": ["S26"]},
    "FR3307": {"ref": "H-1608", "time": "0550", "seasons": ["S25", "S26"]},
}

INPUTS = {
    "KRV-S27-A": ["BA0456 A320 0715 12345 180", "QX318 E190 0930 135 96", "EZY812 A21N 0840 1234567 186",
                  "LH2496 A320 1930 12345 168", "VY7221 A320 2340 1234567 180", "KL1530 B738 0605 12345 186"],
    "KRV-S27-B": ["KL1530 B738 0605 12345 186", "BA0456 A320 0715 12345 180", "WZ1204 A320 1115 246 180",
                  "QX318 E190 0930 135 96", "EZY812 A21N 0840 1234567 186", "FR3307 B738 0550 1234567 189",
                  "VY7221 A320 2340 1234567 180"],
    "KRV-S27-C": ["BA0456 A320 0715 12345 180", "LH2496 A320 1930 12345 168", "TP0711 A320 1245 1357 174",
                  "KL1530 B738 0605 12345 186"],
    "KRV-S27-D": ["EZY812 A21N 0840 1234567 186", "FR3307 B738 0550 12345 189", "QX318 E190 0930 135 96",
                  "AY0902 AT76 1610 24 70", "VY7221 A320 2340 12345 180"],
    "KRV-S27-E": ["LH2496 A320 1930 12345 168", "TP0711 A320 1245 1357 174", "WZ1204 A320 1115 246 180",
                  "BA0456 A320 0715 1234567 180", "KL1530 B738 0605 12345 186", "AY0902 AT76 1610 24 70"],
    "KRV-S27-F": ["QX318 E190 0930 135 96", "EZY812 A21N 0840 12345 186", "BA0456 A320 0715 12345 180"],
}
REFS = ["KRV-S27-C", "KRV-S27-D", "KRV-S27-E", "KRV-S27-F"]

CASES = [
    Case("zzd-slots-01", "lossy_parsing", "slots.days_regex", "KRV-S27-A", "parse_request_line", 3,
         "submit_slot_plan", 1, "The request-line parser keeps at most five day digits, so EZY812's daily series "
         "1234567 is submitted as 12345 and the coordinator rejects the days of operation."),
    Case("zzd-slots-02", "unit_error", "slots.season_weeks", "KRV-S27-A", "compute_noise_quota", 1,
         "submit_slot_plan", 1, "The quota step uses the season length in days where weeks are needed, so the "
         "night quota is seven times too high and the submission exceeds the season limit."),
    Case("zzd-slots-03", "bad_memory_write", "slots.alloc_key", "KRV-S27-B", "record_allocation", 3,
         "submit_slot_plan", 1, "The allocation for WZ1204 is written under the key of the previous flight, so "
         "BA0456's entry is overwritten and the allocation message has no BA0456 series."),
    Case("zzd-slots-04", "hallucinated_value", "slots.invented_ref", "KRV-S27-B", "classify_priority", 4,
         "submit_slot_plan", 1, "The model gives QX318 a historic-rights reference H-2291 that no retrieved "
         "right holds, and the coordinator cannot find it in the rights register."),
    Case("zzd-slots-05", "off_by_one", "slots.batch_range", "KRV-S27-B", "plan_batches", 1,
         "submit_slot_plan", 1, "The batch planner's range stops one short, so the last request line "
         "(VY7221) is never processed and the plan lacks a filed series."),
]


def _policy(request):
    messages = request.body["messages"]
    system = messages[0]["content"]
    user = json.loads(messages[-1]["content"])
    if system.startswith("You classify"):
        line, rights = user["request"], user["historic_rights"]
        if rights and rights[0]["time"] == line["time"]:
            answer = {"category": "historic", "historic_ref": rights[0]["ref"], "reason": "series held last season"}
        elif rights:
            answer = {"category": "retimed", "historic_ref": rights[0]["ref"], "reason": "historic series retimed"}
        else:
            answer = {"category": "new_entrant", "historic_ref": None, "reason": "no historic rights found"}
            if active("slots.invented_ref") and line["flight"] == "QX318":
                answer = {"category": "historic", "historic_ref": "H-2291", "reason": "series held last season"}
        return json.dumps(answer)
    if system.startswith("You summarise"):
        plan = user["allocations"]
        cats = sorted({a["category"] for a in plan})
        return f"Allocated {len(plan)} series at {user['airport']} for {user['season']} ({', '.join(cats)})."
    raise ValueError("unexpected prompt")


def _chat(client, messages):
    reply = client.chat.completions.create(model="slot-desk-model", messages=messages)
    return reply.choices[0].message.content


class CoordinationError(RuntimeError):
    pass


def record(server, key: str, path: Path) -> None:
    server.use(_policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    lines = INPUTS[key]

    @trajdebug.step(kind="input")
    def read_slot_requests(batch_id: str) -> dict:
        return {"batch": batch_id, "airport": "KRV", "season": "S27", "lines": list(lines)}

    calls = {"capacity": 0}

    @trajdebug.retry(attempts=3, on=(ConnectionError,))
    @trajdebug.step(kind="tool")
    def fetch_runway_capacity(airport: str, season: str) -> dict:
        calls["capacity"] += 1
        if calls["capacity"] == 1:
            raise ConnectionError("capacity service reset the connection")
        per_hour = {f"{h:02d}": (20 if h < 6 or h >= 23 else 34) for h in range(24)}
        return {"airport": airport, "season": season, "declared_per_hour": per_hour,
                "season_days": 217, "night_qc_limit": 60.0}

    @trajdebug.step(kind="other")
    def plan_batches(request: dict, size: int = 3) -> list[list[str]]:
        rows = request["lines"]
        stop = len(rows) - 1 if active("slots.batch_range") else len(rows)
        return [rows[i:i + size] for i in range(0, stop, size)]

    @trajdebug.step(kind="parse")
    def parse_request_line(raw: str) -> dict:
        flight, aircraft, time, days, seats = raw.split()
        pattern = r"[1-7]{1,5}" if active("slots.days_regex") else r"[1-7]{1,7}"
        days = re.match(pattern, days).group(0)
        return {"flight": flight, "aircraft": aircraft, "time": time, "days": days, "seats": int(seats)}

    @trajdebug.step(kind="retrieval")
    def lookup_historic_rights(flight: str) -> list[dict]:
        hit = RIGHTS.get(flight)
        return [{"flight": flight, **hit}] if hit else []

    @trajdebug.step(kind="llm")
    def classify_priority(messages: list[dict]) -> dict:
        return json.loads(_chat(client, messages))

    @trajdebug.step(kind="tool")
    def check_hour_capacity(hour: str, capacity: dict) -> dict:
        used = trajdebug.current_run().state.get(f"hour:{hour}", 0)
        declared = capacity["declared_per_hour"][hour]
        return {"hour": hour, "declared": declared, "allocated": used, "remaining": declared - used}

    @trajdebug.step(kind="state")
    def record_allocation(line: dict, decision: dict, hour_check: dict) -> dict:
        state = trajdebug.current_run().state
        key = line["flight"]
        if active("slots.alloc_key") and state.get("last_flight"):
            key = state["last_flight"]
        entry = {"flight": line["flight"], "time": line["time"], "days": line["days"], "aircraft": line["aircraft"],
                 "category": decision["category"], "historic_ref": decision["historic_ref"]}
        state[f"alloc:{key}"] = entry
        if key not in state["allocated_keys"]:
            state["allocated_keys"].append(key)
        state[f"hour:{hour_check['hour']}"] = hour_check["allocated"] + 1
        state["last_flight"] = line["flight"]
        return {"stored_as": f"alloc:{key}", **entry}

    @trajdebug.step(kind="state")
    def assemble_plan() -> list[dict]:
        state = trajdebug.current_run().state
        return [state[f"alloc:{k}"] for k in state["allocated_keys"]]

    @trajdebug.step(kind="llm")
    def summarise_plan(messages: list[dict]) -> str:
        return _chat(client, messages)

    @trajdebug.step(kind="other")
    def compute_noise_quota(plan: list[dict], capacity: dict) -> dict:
        weeks = capacity["season_days"] if active("slots.season_weeks") else capacity["season_days"] / 7
        night = [a for a in plan if a["time"] < "0600" or a["time"] >= "2300"]
        points = sum(QC[a["aircraft"]] * len(a["days"]) * weeks for a in night) / 7
        return {"night_series": [a["flight"] for a in night], "qc_points": round(points, 2)}

    @trajdebug.step(kind="tool")
    def submit_slot_plan(plan: list[dict], quota: dict, summary: str) -> dict:
        filed = {r.split()[0]: r.split() for r in lines}
        got = [a["flight"] for a in plan]
        for flight in filed:
            if flight not in got:
                raise CoordinationError(f"HTTP 422 Unprocessable Entity: SAL rejected: filed series {flight} "
                                        f"has no entry in the allocation message ({len(got)} entries)")
        for a in plan:
            if a["days"] != filed[a["flight"]][3]:
                raise CoordinationError(f"HTTP 422 Unprocessable Entity: SAL rejected: {a['flight']} days of "
                                        f"operation '{a['days']}' differ from the filed request "
                                        f"'{filed[a['flight']][3]}'")
            if a["historic_ref"] and a["historic_ref"] not in {r["ref"] for r in RIGHTS.values()}:
                raise CoordinationError(f"HTTP 422 Unprocessable Entity: historic reference {a['historic_ref']} "
                                        f"for {a['flight']} not found in the S26 rights register")
        if quota["qc_points"] > 60.0:
            raise CoordinationError(f"HTTP 422 Unprocessable Entity: night quota {quota['qc_points']} QC points "
                                    f"exceeds the season limit of 60.0")
        return {"status": 201, "message_id": f"SAL-KRV-{len(plan):03d}", "accepted": len(plan)}

    try:
        with trajdebug.run(AGENT, task=f"allocate slot batch {key}", path=str(path)) as run:
            run.state["allocated_keys"] = []
            request = read_slot_requests(key)
            capacity = fetch_runway_capacity(request["airport"], request["season"])
            for batch in plan_batches(request):
                for raw in batch:
                    line = parse_request_line(raw)
                    rights = lookup_historic_rights(line["flight"])
                    decision = classify_priority([
                        {"role": "system", "content": "You classify slot requests by priority: historic, "
                                                      "retimed or new_entrant. Answer JSON."},
                        {"role": "user", "content": json.dumps({"request": line, "historic_rights": rights})},
                    ])
                    hour_check = check_hour_capacity(line["time"][:2], capacity)
                    record_allocation(line, decision, hour_check)
            plan = assemble_plan()
            summary = summarise_plan([
                {"role": "system", "content": "You summarise a slot allocation plan for the coordinator's log."},
                {"role": "user", "content": json.dumps({"airport": "KRV", "season": "S27", "allocations": plan})},
            ])
            quota = compute_noise_quota(plan, capacity)
            submit_slot_plan(plan, quota, summary)
    except CoordinationError:
        pass
