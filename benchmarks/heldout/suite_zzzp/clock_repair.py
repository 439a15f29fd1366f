"""Clockmaker's repair queue: trajdebug's own recording API, a loop over the clocks of one ticket."""
from __future__ import annotations

import json
import re

import trajdebug
from suite_common import chat, last_user

RUN_NAME = "clock-repair-queue"
ROUTE = "sdk"
DOMAIN = "clockmaker's repair queue"
SHAPE = "loop over 3-5 clocks: record lookup (retrieval), diagnosis (llm), parse, stock check with retry, pricing, bench queue in run.state; invoice + own validator"
SWITCH = None

CATALOGUE = {
    "MS-8D": ("mainspring, 8-day", 38.0, "8-day"), "MS-30H": ("mainspring, 30-hour", 22.0, "30-hour"),
    "FC-8D": ("fusee chain", 64.0, "fusee"), "SB-GEN": ("suspension spring", 6.5, "any"),
    "PB-BR": ("pivot bush, brass", 4.0, "any"), "CR-WH": ("crutch wire", 3.0, "any"),
    "PL-LO": ("pallet, longcase", 27.0, "8-day"), "CL-CL": ("click spring", 5.0, "any"),
}
RECORDS = {
    "LC-114": {"clock": "LC-114", "maker": "Thwaites", "movement": "8-day", "last_service": "2019-04-02"},
    "BR-220": {"clock": "BR-220", "maker": "Dent", "movement": "fusee", "last_service": "2016-11-20"},
    "WL-031": {"clock": "WL-031", "maker": "Smiths", "movement": "30-hour", "last_service": "2021-06-15"},
    "MN-407": {"clock": "MN-407", "maker": "Japy Freres", "movement": "8-day", "last_service": "2020-01-09"},
    "LC-552": {"clock": "LC-552", "maker": "Barraud", "movement": "8-day", "last_service": "2018-08-30"},
    "CA-019": {"clock": "CA-019", "maker": "Jaz", "movement": "30-hour", "last_service": "2022-03-11"},
    "BR-303": {"clock": "BR-303", "maker": "Frodsham", "movement": "fusee", "last_service": "2015-05-05"},
}
# the record the shop kept before WL-031 was re-movemented in 2021
ARCHIVE = {"WL-031": {"clock": "WL-031", "maker": "Smiths", "movement": "fusee", "last_service": "2009-10-01"}}
DIAGNOSES = {
    "LC-114": {"parts": ["MS-8D", "PB-BR"], "hours": 3.5}, "BR-220": {"parts": ["FC-8D", "SB-GEN"], "hours": 5.0},
    "WL-031": {"parts": ["MS-30H", "CL-CL"], "hours": 2.0}, "MN-407": {"parts": ["SB-GEN", "PB-BR", "CR-WH"], "hours": 2.5},
    "LC-552": {"parts": ["PL-LO", "MS-8D"], "hours": 4.0}, "CA-019": {"parts": ["MS-30H"], "hours": 1.5},
    "BR-303": {"parts": ["FC-8D", "PB-BR"], "hours": 4.5},
}
INPUTS = [
    {"ticket": "T-5101", "customer": "Mrs Penrose", "ceiling_gbp": 480.0, "clocks": ["LC-114", "MN-407", "CA-019"]},
    {"ticket": "T-5102", "customer": "Hallam Antiques", "ceiling_gbp": 800.0, "clocks": ["BR-220", "WL-031", "LC-552", "CA-019"]},
    {"ticket": "T-5103", "customer": "Revd Ashby", "ceiling_gbp": 320.0, "clocks": ["WL-031", "MN-407"]},
    {"ticket": "T-5104", "customer": "Corfe Manor", "ceiling_gbp": 1200.0, "clocks": ["LC-552", "BR-303", "LC-114", "MN-407", "WL-031"]},
    {"ticket": "T-5105", "customer": "Mr Okafor", "ceiling_gbp": 700.0, "clocks": ["BR-303", "CA-019", "LC-114"]},
]
LABOUR_GBP_H = 45.0

CASES = [
    dict(id="zzzp_clock_01", input=1, switch="a", fault_kind="stale_data", root=("fetch_service_record", 2, "retrieval"),
         failure=("check_invoice", 1), description="The service record for WL-031 comes from the shop's archive copy, giving the old fusee movement, so the diagnosis and parts fit a movement the clock no longer has."),
    dict(id="zzzp_clock_02", input=3, switch="b", fault_kind="unit_error", root=("price_parts", 2, "tool"),
         failure=("check_invoice", 1), description="Pricing for BR-303 returns the catalogue prices in pence as if they were pounds, so the invoice total blows through the customer's ceiling."),
    dict(id="zzzp_clock_03", input=0, switch="c", fault_kind="hallucinated_value", root=("diagnose", 1, "llm"),
         failure=("check_stock", 2), description="The model's diagnosis of LC-114 names a part number, MS-8DX, that the catalogue does not hold."),
    dict(id="zzzp_clock_04", input=4, switch="d", fault_kind="lossy_parsing", root=("read_diagnosis", 1, "parse"),
         failure=("book_bench", 1), description="Reading the diagnosis of BR-303 keeps the parts but drops the fractional bench hours, so the 4.5 hour job goes to the bench queue as 0 hours."),
    dict(id="zzzp_clock_05", input=2, switch="e", fault_kind="swallowed_error", root=("price_parts", 2, "tool"),
         failure=("check_invoice", 1), description="Pricing MN-407 meets a catalogue timeout and returns zero-priced lines instead of reporting it."),
]


def policy(request):
    prompt = last_user(request)
    m = re.search(r"clock ([A-Z]{2}-\d{3})", prompt)
    d = dict(DIAGNOSES[m.group(1)])
    if "movement: fusee" in prompt and m.group(1) == "WL-031":
        d = {"parts": ["FC-8D", "SB-GEN"], "hours": 4.0}
    if SWITCH == "c" and m.group(1) == "LC-114":
        d = {"parts": ["MS-8DX", "PB-BR"], "hours": 3.5}
    return json.dumps(d)


@trajdebug.step(kind="input")
def intake(ticket: dict) -> dict:
    return dict(ticket)


@trajdebug.step(kind="retrieval")
def fetch_service_record(clock: str) -> dict:
    rec = RECORDS[clock]
    if SWITCH == "a" and clock in ARCHIVE:
        rec = ARCHIVE[clock]
    return dict(rec)


@trajdebug.step(kind="llm")
def diagnose(record: dict) -> dict:
    prompt = (f"Bench notes for clock {record['clock']} ({record['maker']}), movement: {record['movement']}, "
              f"last serviced {record['last_service']}. List the part codes needed and bench hours as JSON.")
    return chat(_SERVER["base_url"], "bench-model", [{"role": "system", "content": "You are the workshop's diagnosis assistant."},
                                          {"role": "user", "content": prompt}])


@trajdebug.step(kind="parse")
def read_diagnosis(message: dict) -> dict:
    data = json.loads(message["content"])
    hours = float(data["hours"])
    if SWITCH == "d":
        hours = float(data["hours"]) if isinstance(data["hours"], int) else float(data.get("bench_hours", 0))
    return {"parts": list(data["parts"]), "hours": hours}


_stock_calls = {"n": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def check_stock(parts: list) -> dict:
    _stock_calls["n"] += 1
    if _stock_calls["n"] == 1:
        raise ConnectionError("stock room terminal did not answer")
    missing = [p for p in parts if p not in CATALOGUE]
    if missing:
        raise KeyError(f"part {missing[0]} is not in the catalogue")
    return {p: "in stock" for p in parts}


@trajdebug.step(kind="tool")
def price_parts(clock: str, parts: list) -> list:
    lines = []
    for p in parts:
        name, gbp, _ = CATALOGUE[p]
        price = gbp
        if clock == "BR-303" and SWITCH == "b":
            price = gbp * 100
        if clock == "MN-407" and SWITCH == "e":
            try:
                raise TimeoutError("catalogue price service timed out")
            except TimeoutError:
                price = 0.0
        lines.append({"part": p, "name": name, "gbp": price})
    return lines


@trajdebug.step(kind="state")
def queue_for_bench(clock: str, hours: float, movement: str) -> dict:
    run = trajdebug.current_run()
    q = run.state.setdefault("bench_queue", [])
    entry = {"clock": clock, "hours": hours, "movement": movement}
    q.append(entry)
    return entry


@trajdebug.step(kind="tool")
def book_bench(queue: list) -> dict:
    slots = {}
    start = 9.0
    for e in queue:
        if e["hours"] <= 0:
            raise ValueError(f"bench booking for {e['clock']} needs at least 0.5 h, got {e['hours']}")
        slots[e["clock"]] = start
        start += e["hours"]
    return {"slots": slots, "bench_hours": start - 9.0}


@trajdebug.step(kind="output")
def compose_invoice(ticket: dict, jobs: list, booking: dict) -> dict:
    lines = []
    for j in jobs:
        lines.extend(j["lines"])
        lines.append({"part": "LABOUR", "name": f"bench labour {j['clock']}", "gbp": j["hours"] * LABOUR_GBP_H})
    return {"ticket": ticket["ticket"], "lines": lines, "total_gbp": round(sum(l["gbp"] for l in lines), 2),
            "jobs": [{"clock": j["clock"], "movement": j["movement"], "parts": j["parts"]} for j in jobs]}


@trajdebug.step(kind="condition")
def check_invoice(ticket: dict, invoice: dict) -> str:
    for line in invoice["lines"]:
        if line["gbp"] <= 0:
            raise ValueError(f"invoice {invoice['ticket']}: line {line['part']} priced at {line['gbp']:.2f} GBP")
    for job in invoice["jobs"]:
        intake_movement = RECORDS[job["clock"]]["movement"]  # the movement on the bench tag at intake
        for p in job["parts"]:
            fits = CATALOGUE[p][2]
            if fits not in ("any", intake_movement):
                raise ValueError(f"{job['clock']}: part {p} fits {fits} movements, bench tag says {intake_movement}")
    if invoice["total_gbp"] > ticket["ceiling_gbp"]:
        raise ValueError(f"invoice {invoice['ticket']} total {invoice['total_gbp']:.2f} GBP above the agreed ceiling {ticket['ceiling_gbp']:.2f} GBP")
    return "approved"


_SERVER: dict = {}


def record(server, inp: dict, path: str) -> None:
    _SERVER["base_url"] = server.base_url
    _stock_calls["n"] = 0
    try:
        with trajdebug.run(RUN_NAME, path=path, task=f"repair ticket {inp['ticket']}") as run:
            ticket = intake(inp)
            jobs = []
            for clock in ticket["clocks"]:
                rec = fetch_service_record(clock)
                msg = diagnose(rec)
                diag = read_diagnosis(msg)
                check_stock(diag["parts"])
                lines = price_parts(clock, diag["parts"])
                entry = queue_for_bench(clock, diag["hours"], rec["movement"])
                jobs.append({"clock": clock, "movement": rec["movement"], "parts": diag["parts"], "lines": lines, "hours": entry["hours"]})
            booking = book_bench(run.state["bench_queue"])
            invoice = compose_invoice(ticket, jobs, booking)
            check_invoice(ticket, invoice)
    except Exception:
        pass
    trajdebug.flush()
