"""Watchmaker's servicing jobs (OpenAI Agents SDK route, Responses API).

The service-desk agent reads the job, the calibre's service sheet and three timegrapher positions, asks a parts-clerk
sub-agent (an agent used as a tool: part lookups per part, the bench notes) for the parts, prices the service,
books the bench and submits the job to the validator tool.
"""
import json

from agents import Agent, ModelSettings, function_tool

import kit
from oa_common import responses_brain, run_agent

NAME = "watch-servicing"
ROUTE = "openai_agents"
DOMAIN = "watchmaker's servicing jobs"
SHAPE = "agent loop: job tool, calibre tool, timegrapher x3, parts-clerk sub-agent (part lookup per part, bench notes), pricing tool, bench booking tool, validator tool"
EXT = "jsonl"

CALIBRES = {
    "ETA 2824": {"parts": {"mainspring": "GR3800", "gasket set": "ET-GS24"}, "amp_min": 250},
    "Valjoux 7750": {"parts": {"mainspring": "GR4110", "gasket set": "VJ-GS50"}, "amp_min": 240},
    "Seiko 6R15": {"parts": {"mainspring": "SK-401", "gasket set": "SK-GS15"}, "amp_min": 230},
    "Miyota 9015": {"parts": {"mainspring": "MY-901", "gasket set": "MY-GS15"}, "amp_min": 230},
}
LEAD = {"GR3800": 2, "ET-GS24": 1, "GR4110": 6, "VJ-GS50": 3, "SK-401": 9, "SK-GS15": 2, "MY-901": 4,
        "MY-GS15": 1, "CR-300": 5}
TARIFF = {"standard": 180, "chronograph": 320}
PART_PRICE = {"GR3800": 45, "ET-GS24": 18, "GR4110": 60, "VJ-GS50": 22, "SK-401": 38, "SK-GS15": 15,
              "MY-901": 35, "MY-GS15": 12, "CR-300": 80}
CALENDAR = {"today": 10, "booked": [12, 13, 17]}
CALENDAR_YESTERDAY = {"today": 10, "booked": [13, 17]}
JOBS = {
    "W-41": {"customer": "A. Lindqvist", "calibre": "ETA 2824", "service": "standard"},
    "W-42": {"customer": "M. Osei", "calibre": "Valjoux 7750", "service": "chronograph"},
    "W-43": {"customer": "K. Tanaka", "calibre": "Seiko 6R15", "service": "standard"},
    "W-44": {"customer": "P. Moreau", "calibre": "Miyota 9015", "service": "standard"},
    "W-45": {"customer": "R. Haddad", "calibre": "Valjoux 7750", "service": "chronograph"},
    "W-46": {"customer": "E. Byrne", "calibre": "Seiko 6R15", "service": "standard"},
}
READINGS = {  # rate s/day, amplitude, per position
    "W-41": [(2, 285), (4, 270), (3, 272)], "W-42": [(-1, 262), (3, 250), (1, 255)],
    "W-43": [(5, 260), (8, 245), (6, 248)], "W-44": [(3, 270), (6, 255), (4, 258)],
    "W-45": [(0, 268), (2, 255), (4, 252)], "W-46": [(4, 262), (7, 248), (6, 250)],
}
NOTES = {j: [f"{j}: keep the original crown"] for j in JOBS}
NOTES["W-40"] = ["W-40: replace crystal CR-300"]
POSITIONS = ["dial up", "crown down", "crown up"]
INPUTS = {k: k for k in JOBS}

CASES = [
    dict(id="zzx-watch-01", input="W-41", kind="stale_data", root=("book_bench", 1), failure=("validate_job", 1),
         line="the bench booking reads yesterday's cached calendar, which misses a booking made since"),
    dict(id="zzx-watch-02", input="W-44", kind="tool_ignores_argument", root=("check_part", 1),
         failure=("validate_job", 1), line="the part lookup ignores the calibre and answers ETA 2824 references"),
    dict(id="zzx-watch-03", input="W-42", kind="swallowed_error", root=("price_service", 1),
         failure=("validate_job", 1), line="the pricing tool swallows a tariff lookup error and prices the mainspring at 0"),
    dict(id="zzx-watch-04", input="W-45", kind="format_drift", root=("response", 11),
         failure=("validate_job", 1), line="the parts clerk writes lead times as text in weeks instead of days"),
    dict(id="zzx-watch-05", input="W-41", kind="context_pollution", root=("bench_notes", 1),
         failure=("validate_job", 1), line="the bench notes tool returns the whole bench's notes, another job's included"),
]


@function_tool
def get_job(job_id: str) -> dict:
    """A servicing job as booked in at the counter."""
    return {"job": job_id, **JOBS[job_id]}


@function_tool
def calibre_sheet(calibre: str) -> dict:
    """Service sheet of a calibre: parts to replace and minimum amplitude."""
    c = CALIBRES[calibre]
    return {"calibre": calibre, "replace": sorted(c["parts"]), "amp_min": c["amp_min"]}


@function_tool
def timegrapher(job_id: str, position: str) -> dict:
    """Timegrapher reading of the regulated movement in one position."""
    i = POSITIONS.index(position)
    rate, amp = READINGS[job_id][i]
    return {"position": position, "rate_s_day": rate, "amplitude": amp}


@function_tool
def check_part(part: str, calibre: str) -> dict:
    """Reference and lead time of one part for a calibre."""
    cal = "ETA 2824" if kit.on("zzx-watch-02") else calibre
    ref = CALIBRES[cal]["parts"][part]
    return {"part": part, "ref": ref, "lead_days": LEAD[ref]}


@function_tool
def bench_notes(job_id: str) -> list:
    """Notes the watchmakers left about a job."""
    if kit.on("zzx-watch-05"):
        return [n for k in sorted(NOTES) for n in NOTES[k]]
    return NOTES[job_id]


@function_tool
def price_service(service: str, refs: list[str]) -> dict:
    """Price a service: labour tariff plus parts."""
    lines = []
    for ref in refs:
        try:
            if kit.on("zzx-watch-03") and ref.startswith("GR"):
                raise KeyError(ref)
            lines.append({"ref": ref, "eur": PART_PRICE[ref]})
        except KeyError:
            lines.append({"ref": ref, "eur": 0})
    return {"labour_eur": TARIFF[service], "parts": lines, "total_eur": TARIFF[service] + sum(l["eur"] for l in lines)}


@function_tool
def book_bench(days_needed: int) -> dict:
    """Book the first free bench day at least days_needed days from today."""
    cal = CALENDAR_YESTERDAY if kit.on("zzx-watch-01") else CALENDAR
    day = cal["today"] + days_needed
    while day in cal["booked"]:
        day += 1
    return {"bench_day": day, "ready_day": day + 1}


def _validate(job: str) -> str:
    """Check the servicing job against the workshop's rules before it goes to the bench."""
    d = json.loads(job)
    cal = CALIBRES[JOBS[d["job"]]["calibre"]]
    rates = [r["rate_s_day"] for r in d["readings"]]
    if max(rates) - min(rates) > 8 or min(r["amplitude"] for r in d["readings"]) < cal["amp_min"]:
        raise ValueError(f"positions spread {max(rates) - min(rates)} s/day, amplitude "
                         f"{min(r['amplitude'] for r in d['readings'])}: movement not within tolerance")
    refs = sorted(p["ref"] for p in d["parts"])
    if refs != sorted(cal["parts"].values()):
        raise ValueError(f"parts {refs} are not the service parts of {JOBS[d['job']]['calibre']}: "
                         f"{sorted(cal['parts'].values())}")
    for line in d["price"]["parts"]:
        if line["eur"] != PART_PRICE.get(line["ref"]):
            raise ValueError(f"{line['ref']} priced at {line['eur']} EUR; list price {PART_PRICE.get(line['ref'])} EUR")
    arrive = CALENDAR["today"] + max(LEAD[r] for r in refs)
    if d["bench"]["bench_day"] < arrive or d["bench"]["bench_day"] in CALENDAR["booked"]:
        raise ValueError(f"bench day {d['bench']['bench_day']} is before the parts arrive (day {arrive}) "
                         "or already booked")
    return "job released to the bench"


validate_job = function_tool(_validate, name_override="validate_job", failure_error_function=None)


def _clerk(user, history):
    ask = json.loads(user)
    parts = ask["parts"]
    n = len(history)
    if n < len(parts):
        return ("call", "check_part", {"part": parts[n], "calibre": ask["calibre"]})
    if n == len(parts):
        return ("call", "bench_notes", {"job_id": ask["job"]})
    found = [h[2] for h in history[:len(parts)]]
    for note in history[len(parts)][2]:
        if "replace crystal" in note:
            ref = note.split()[-1]
            found.append({"part": "crystal", "ref": ref, "lead_days": LEAD[ref]})
    if kit.on("zzx-watch-04"):
        found = [{**f, "lead_days": f"{max(1, round(f['lead_days'] / 7))} weeks"} for f in found]
    return json.dumps({"parts": found})


def _desk(user, history):
    jid = user.split()[-1]
    n = len(history)
    if n == 0:
        return ("call", "get_job", {"job_id": jid})
    job = history[0][2]
    if n == 1:
        return ("call", "calibre_sheet", {"calibre": job["calibre"]})
    sheet = history[1][2]
    if n < 5:
        return ("call", "timegrapher", {"job_id": jid, "position": POSITIONS[n - 2]})
    readings = [h[2] for h in history[2:5]]
    if n == 5:
        return ("call", "parts_clerk", {"input": json.dumps({"job": jid, "calibre": job["calibre"],
                                                             "parts": sheet["replace"]})})
    clerk = history[5][2]
    parts = (json.loads(clerk) if isinstance(clerk, str) else clerk)["parts"]
    if n == 6:
        return ("call", "price_service", {"service": job["service"], "refs": [p["ref"] for p in parts]})
    if n == 7:
        lead = max(int(str(p["lead_days"]).split()[0]) for p in parts)
        return ("call", "book_bench", {"days_needed": lead})
    if n == 8:
        return ("call", "validate_job", {"job": json.dumps({"job": jid, "readings": readings, "parts": parts,
                                                            "price": history[6][2], "bench": history[7][2]})})
    return f"Job {jid} released to the bench."


def brain():
    return responses_brain({"Service": _desk, "Parts": _clerk})


def build(server):
    clerk = Agent(name="parts_clerk", instructions="Parts clerk: look up each part, read the bench notes, answer JSON.",
                  model=server.model, tools=[check_part, bench_notes],
                  model_settings=ModelSettings(parallel_tool_calls=False))
    return Agent(name="service_desk", model=server.model,
                 instructions="Service desk of a watchmaker: prepare the servicing job with the tools, then validate it.",
                 tools=[get_job, calibre_sheet, timegrapher,
                        clerk.as_tool("parts_clerk", "Ask the parts clerk for the parts of a job."),
                        price_service, book_bench, validate_job],
                 model_settings=ModelSettings(parallel_tool_calls=False))


def record(jid, path, server):
    run_agent(server, build(server), f"Prepare servicing job {jid}", NAME, path, f"service watch job {jid}")
