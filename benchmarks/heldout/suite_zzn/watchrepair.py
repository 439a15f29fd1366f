"""Watch repair workshop: turns a job card into a priced, scheduled repair (openai_agents route, Chat Completions)."""
from __future__ import annotations

import asyncio
import json

import kit
from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from common import agent_history
from openai import AsyncOpenAI
from trajdebug.testing import Reply, tool_call

from trajdebug.integrations.openai_agents import TrajdebugProcessor

NAME = "watch-repair-jobs"
ROUTE = "openai_agents"
DOMAIN = "a watch repair workshop's jobs"
SHAPE = "Agent workshop_clerk (Chat Completions): lookup_job, fetch_service_history, diagnosis sub-agent as tool (inspect_movement), parts_catalogue per part, estimate_labour, book_bench, quote_total, validate_job tool"

JOBS = {
    "J-501": {"customer": "H. Ostrova", "brand": "Tissot", "calibre": "2824", "serial": "TS-88120", "complaint": "losing 40 s/day"},
    "J-502": {"customer": "M. Quint", "brand": "Sinn", "calibre": "7750", "serial": "SN-55013", "complaint": "chronograph not resetting"},
    "J-503": {"customer": "A. Bello", "brand": "Oris", "calibre": "2824", "serial": "OR-20931", "complaint": "stopped overnight"},
    "J-504": {"customer": "R. Dune", "brand": "Hamilton", "calibre": "H-10", "serial": "HM-70442", "complaint": "cracked crystal, gaining"},
    "J-505": {"customer": "C. Varga", "brand": "Longines", "calibre": "7750", "serial": "LG-31877", "complaint": "rotor noise"},
    "J-506": {"customer": "E. Falk", "brand": "Mido", "calibre": "H-10", "serial": "MD-11906", "complaint": "date not changing"},
    "J-507": {"customer": "T. Amari", "brand": "Tudor", "calibre": "2824", "serial": "TD-60218", "complaint": "water in dial"},
    "J-508": {"customer": "S. Laine", "brand": "Certina", "calibre": "7750", "serial": "CT-42775", "complaint": "hands loose"},
    "J-509": {"customer": "B. Nakai", "brand": "Rado", "calibre": "2824", "serial": "RD-90064", "complaint": "crown stiff"},
}
INSPECT = {"TS-88120": 180, "SN-55013": 190, "OR-20931": 150, "HM-70442": 240, "LG-31877": 270, "MD-11906": 255,
           "TD-60218": 140, "CT-42775": 250, "RB-0": 0, "RD-90064": 265}
PARTS = {("2824", "mainspring"): ("MS-2824", 38.0), ("7750", "mainspring"): ("MS-7750", 52.0),
         ("H-10", "mainspring"): ("MS-H10", 45.0), ("2824", "gasket_set"): ("GS-2824", 12.0),
         ("7750", "gasket_set"): ("GS-7750", 14.0), ("H-10", "gasket_set"): ("GS-H10", 12.0)}
LABOUR = {("full", "2824"): 3.0, ("full", "7750"): 4.5, ("full", "H-10"): 3.5,
          ("partial", "2824"): 1.5, ("partial", "7750"): 2.0, ("partial", "H-10"): 1.5}
RATE, VAT = 85.0, 0.2
BENCH = {"J-501": "2026-08-03", "J-502": "2026-08-04", "J-503": "2026-08-05", "J-504": "2026-08-06",
         "J-505": "2026-08-07", "J-506": "2026-07-27", "J-507": "2026-07-28", "J-508": "2026-07-29", "J-509": "2026-07-30"}

CASES = [
    {"id": "zzn_watch_01", "kind": "hallucinated_value", "input": {"job": "J-501"},
     "root": ("generation fake-model", 10), "failure": ("validate_job", 1),
     "desc": "The clerk model passes quote_total a parts list with a 35.00 crystal that neither the diagnosis nor the catalogue mentioned."},
    {"id": "zzn_watch_02", "kind": "wrong_tool_args", "input": {"job": "J-502"},
     "root": ("generation fake-model", 8), "failure": ("validate_job", 1),
     "desc": "The clerk model asks estimate_labour for a partial service although the diagnosis said full, so the job carries 2.0 h of labour instead of 4.5 h."},
    {"id": "zzn_watch_03", "kind": "tool_ignores_argument", "input": {"job": "J-504"},
     "root": ("parts_catalogue", 1), "failure": ("validate_job", 1),
     "desc": "parts_catalogue ignores the calibre argument and returns the 2824 mainspring for an H-10 movement."},
    {"id": "zzn_watch_04", "kind": "format_drift", "input": {"job": "J-505"},
     "root": ("book_bench", 1), "failure": ("validate_job", 1),
     "desc": "book_bench answers the bench date in the diary's day/month format (07/08/2026) instead of ISO, and the job is filed with it."},
    {"id": "zzn_watch_05", "kind": "swallowed_error", "input": {"job": "J-503"},
     "root": ("quote_total", 1), "failure": ("validate_job", 1),
     "desc": "quote_total catches the failed VAT-rate lookup and carries on with no VAT, quoting a net total as the gross price."},
]
REFS = [{"job": "J-506"}, {"job": "J-507"}, {"job": "J-508"}, {"job": "J-509"}]


def brain(request):
    instr, user, hist = agent_history(request)
    if instr.startswith("You diagnose"):
        rec = [o for n, a, o in hist if n == "inspect_movement"]
        if not rec:
            return Reply(tool_calls=(tool_call("inspect_movement", {"serial": user.split(": ")[-1]}),))
        amp = rec[-1]["amplitude_deg"]
        service = "full" if amp < 245 else "partial"
        parts = ["mainspring", "gasket_set"] if service == "full" else ["gasket_set"]
        return json.dumps({"service": service, "parts": parts, "amplitude_deg": amp})
    job_id = json.loads(user)["job"]
    out = {n: o for n, a, o in hist}
    parts_out = [o for n, a, o in hist if n == "parts_catalogue"]
    if "lookup_job" not in out:
        return Reply(tool_calls=(tool_call("lookup_job", {"job": job_id}),))
    card = out["lookup_job"]
    if "fetch_service_history" not in out:
        return Reply(tool_calls=(tool_call("fetch_service_history", {"serial": card["serial"]}),))
    if "diagnosis" not in out:
        return Reply(tool_calls=(tool_call("diagnosis", {"input": f"Inspect serial: {card['serial']}"}),))
    diag = out["diagnosis"] if isinstance(out["diagnosis"], dict) else json.loads(out["diagnosis"])
    if len(parts_out) < len(diag["parts"]):
        part = diag["parts"][len(parts_out)]
        return Reply(tool_calls=(tool_call("parts_catalogue", {"calibre": card["calibre"], "part": part}),))
    if "estimate_labour" not in out:
        service = diag["service"]
        if kit.on("zzn_watch_02"):
            service = "partial"
        return Reply(tool_calls=(tool_call("estimate_labour", {"service": service, "calibre": card["calibre"]}),))
    if "book_bench" not in out:
        return Reply(tool_calls=(tool_call("book_bench", {"job": job_id, "hours": out["estimate_labour"]["hours"]}),))
    if "quote_total" not in out:
        lines = [{"part": p["part_no"], "price": p["price"]} for p in parts_out]
        if kit.on("zzn_watch_01"):
            lines.append({"part": "crystal", "price": 35.0})
        return Reply(tool_calls=(tool_call("quote_total", {"parts_json": json.dumps(lines), "hours": out["estimate_labour"]["hours"]}),))
    if "validate_job" not in out:
        job = {"job": job_id, "calibre": card["calibre"], "service": diag["service"], "parts": [p["part_no"] for p in parts_out],
               "hours": out["estimate_labour"]["hours"], "bench_date": out["book_bench"]["date"], "quote": out["quote_total"]}
        return Reply(tool_calls=(tool_call("validate_job", {"job_json": json.dumps(job)}),))
    return f"Job {job_id} booked for {out['book_bench']['date']}, total {out['quote_total']['gross']:.2f} EUR."


@function_tool
def lookup_job(job: str) -> dict:
    """The job card."""
    return {"job": job, **JOBS[job]}


@function_tool
def fetch_service_history(serial: str) -> dict:
    """Earlier services of a watch."""
    return {"serial": serial, "services": [{"date": "2021-05-10", "type": "full"}]}


@function_tool
def inspect_movement(serial: str) -> dict:
    """Timing machine reading of a movement."""
    return {"serial": serial, "amplitude_deg": INSPECT[serial], "beat_error_ms": 0.6}


@function_tool
def parts_catalogue(calibre: str, part: str) -> dict:
    """Part number and price of a part for a calibre."""
    if kit.on("zzn_watch_03"):
        calibre = "2824"
    no, price = PARTS[(calibre, part)]
    return {"part_no": no, "price": price}


@function_tool
def estimate_labour(service: str, calibre: str) -> dict:
    """Bench hours for a service on a calibre."""
    return {"service": service, "hours": LABOUR[(service, calibre)]}


@function_tool
def book_bench(job: str, hours: float) -> dict:
    """Book the job on a watchmaker's bench."""
    date = BENCH[job]
    if kit.on("zzn_watch_04"):
        y, m, d = date.split("-")
        date = f"{d}/{m}/{y}"
    return {"job": job, "watchmaker": "K. Brandt", "date": date}


def _vat_rate(country: str) -> float:
    if country != "DE":
        raise LookupError(f"no VAT rate for {country}")
    return VAT


@function_tool
def quote_total(parts_json: str, hours: float) -> dict:
    """Net and gross price of a job."""
    net = round(sum(p["price"] for p in json.loads(parts_json)) + hours * RATE, 2)
    try:
        rate = _vat_rate("XX" if kit.on("zzn_watch_05") else "DE")
    except LookupError:
        rate = 0.0
    return {"net": net, "gross": round(net * (1 + rate), 2)}


@function_tool(failure_error_function=None)
def validate_job(job_json: str) -> str:
    """Check a job against the workshop rules before it is confirmed to the customer."""
    import datetime as dt

    job = json.loads(job_json)
    cal = JOBS[job["job"]]["calibre"]
    for p in job["parts"]:
        if not p.endswith(cal.replace("-", "")):
            raise ValueError(f"part {p} does not fit calibre {cal}")
    want = LABOUR[(job["service"], cal)]
    if job["hours"] != want:
        raise ValueError(f"{job['service']} service on calibre {cal} needs {want} h of labour; the job has {job['hours']} h")
    try:
        dt.date.fromisoformat(job["bench_date"])
    except ValueError:
        raise ValueError(f"bench date {job['bench_date']!r} is not a YYYY-MM-DD date") from None
    priced = {no: pr for (c, _), (no, pr) in PARTS.items()}
    net = round(sum(priced[p] for p in job["parts"]) + want * RATE, 2)
    if abs(job["quote"]["net"] - net) > 0.005:
        raise ValueError(f"net price {job['quote']['net']:.2f} EUR differs from parts and labour {net:.2f} EUR")
    if abs(job["quote"]["gross"] - round(net * (1 + VAT), 2)) > 0.005:
        raise ValueError(f"gross price {job['quote']['gross']:.2f} EUR is not net {net:.2f} plus 20% VAT")
    return "job valid"


def record(inp, path, server):
    server.use(brain)
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=str(path), name=NAME, task=f"price and book repair job {inp['job']}")])
    diag = Agent(name="diagnosis", instructions="You diagnose movements from timing machine readings.",
                 model="fake-model", tools=[inspect_movement])
    clerk = Agent(name="workshop_clerk", instructions="You prepare repair jobs. Use the tools, then validate the job.",
                  model="fake-model",
                  tools=[lookup_job, fetch_service_history,
                         diag.as_tool(tool_name="diagnosis", tool_description="Diagnose a movement by serial."),
                         parts_catalogue, estimate_labour, book_bench, quote_total, validate_job])

    async def main():
        cli = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(cli)
        try:
            await Runner.run(clerk, json.dumps(inp), max_turns=30, run_config=RunConfig(workflow_name=NAME))
        finally:
            await cli.close()

    try:
        asyncio.run(main())
    finally:
        set_trace_processors([])
