"""Agent 5 (sdk route): solar farm panel cleaning rounds.

Shape: order -> weather station + forecast parse -> soiling survey -> per row: drone inspection, state write
-> model plans the window and books the water bowser (its tool call executed by the agent) -> crew sub-agent
builds one job per row from the state -> own water check -> permit to work -> O&M completion report.
"""

from __future__ import annotations

import json

import trajdebug

from . import kit
from .common import Fault

AGENT = "solar_cleaning"
ROUTE = "sdk"
EXT = "jsonl"
RUN_NAME = "solar-panel-cleaning"
DOMAIN = "Solar farm panel cleaning"
SHAPE = "weather parse, survey, per-row loop with state writes, model plan with an executed tool call, crew sub-agent reading state, own check, permit, O&M report"

LITRES_PER_PANEL = 1.5


class PortalRefused(RuntimeError):
    pass


PortalRefused.__module__ = "om_portal.client"


def rows_for(site: str, n: int) -> list[dict]:
    out = []
    for i in range(n):
        s = kit.seed(site, i)
        out.append({"row": f"R{i + 1}", "panels": 40 + s % 5 * 8, "soiling_pct": round(8.5 + s % 60 / 10, 1)})
    return out


def temp_for(date: str) -> int:
    return 27 + kit.seed(date) % 7


@trajdebug.step(kind="input")
def take_order(order: dict) -> dict:
    return dict(order)


@trajdebug.step(kind="tool")
def fetch_weather(site: str, date: str) -> dict:
    if kit.seed(site, date, "wx") % 2 == 0:
        return {"station": f"WX-{site[:3].upper()}", "status": "error", "message": "station offline, cached value unavailable"}
    return {"station": f"WX-{site[:3].upper()}", "status": "ok", "max_temp_c": temp_for(date)}


@trajdebug.step(kind="tool")
def fetch_regional_forecast(date: str) -> dict:
    return {"source": "regional", "max_temp_c": temp_for(date)}


@trajdebug.step(kind="parse")
def read_forecast(report: dict) -> dict:
    if report["status"] != "ok":
        if kit.active("sc_swallowed_error"):
            return {"max_temp_c": 18, "source": "station"}
        return {"max_temp_c": fetch_regional_forecast(_order["date"])["max_temp_c"], "source": "regional"}
    return {"max_temp_c": report["max_temp_c"], "source": "station"}


_order: dict = {}


@trajdebug.step(kind="tool")
def fetch_soiling_survey(site: str, rows: int) -> dict:
    listed = rows_for(site, rows)
    if kit.active("sc_truncated_result"):
        listed = listed[:4]
    return {"site": site, "count": len(listed), "rows": listed}


@trajdebug.step(kind="tool")
def inspect_row(row: str) -> dict:
    return {"row": row, "hotspots": kit.seed(row, "hot") % 3, "cracked": 0}


@trajdebug.step(kind="state")
def log_row(row: dict, inspection: dict, index: int) -> dict:
    status = "to_clean" if row["soiling_pct"] >= 8 else "skip"
    if index == 2 and kit.active("sc_bad_memory_write"):
        status = "cleaned"
    entry = {"row": row["row"], "litres": row["panels"] * LITRES_PER_PANEL, "status": status,
             "hotspots": inspection["hotspots"]}
    trajdebug.current_run().state[f"row:{row['row']}"] = entry
    return entry


@trajdebug.step(kind="llm")
def plan_cleaning(messages: list[dict]) -> dict:
    ask = json.loads(messages[-1]["content"])
    hot = ask["max_temp_c"] > 25
    window = "05:30-10:30" if hot else "09:00-15:00"
    if kit.active("sc_plan_error"):
        window = "11:00-16:00"
    litres = ask["total_litres"]
    if kit.active("sc_wrong_tool_args"):
        litres = ask["rows"][0]["litres"]
    return {"role": "assistant", "content": f"Clean {len(ask['rows'])} rows in the {window} window.",
            "tool_calls": [{"name": "book_water_bowser", "arguments": {"date": ask["date"], "litres": litres,
                                                                       "window": window}}]}


@trajdebug.step(kind="tool")
def book_water_bowser(date: str, litres: float, window: str) -> dict:
    return {"booking": f"WB-{kit.seed(date, litres) % 9000 + 1000}", "litres": litres, "window": window}


@trajdebug.step(kind="other")
def build_job(row: str) -> dict:
    entry = trajdebug.current_run().state[f"row:{row}"]
    return {"row": row, "litres": entry["litres"], "clean": entry["status"] == "to_clean"}


@trajdebug.step(kind="condition")
def water_check(jobs: list[dict], booking: dict) -> dict:
    need = sum(j["litres"] for j in jobs if j["clean"])
    if booking["litres"] < need:
        raise ValueError(f"water bowser {booking['booking']} carries {booking['litres']:,.0f} l, jobs need {need:,.0f} l")
    return {"need_l": need, "booked_l": booking["litres"], "ok": True}


@trajdebug.step(kind="agent")
def crew_lead(rows: list[str], booking: dict) -> list[dict]:
    jobs = [build_job(r) for r in rows]
    water_check(jobs, booking)
    return jobs


@trajdebug.step(kind="tool")
def request_permit_to_work(site: str, date: str, window: str) -> dict:
    start = int(window[:2])
    end = int(window[6:8])
    if temp_for(date) > 25 and end > 11 and start < 15:
        raise PortalRefused(f"permit-to-work 403: wet cleaning {window} refused, forecast {temp_for(date)} C at {site}")
    return {"permit": f"PTW-{kit.seed(site, date) % 9000 + 1000}", "window": window}


@trajdebug.step(kind="tool")
def log_crew_progress(row: str, done: bool) -> dict:
    return {"row": row, "logged": True, "done": done}


@trajdebug.step(kind="tool")
def submit_completion(site: str, rows: int, jobs: list[dict]) -> dict:
    done = {j["row"] for j in jobs if j["clean"]}
    missing = [r["row"] for r in rows_for(site, rows) if r["soiling_pct"] >= 8 and r["row"] not in done]
    if missing:
        raise PortalRefused(f"O&M portal 422: rows {', '.join(missing)} exceed the soiling threshold but are missing from the work report")
    return {"report": f"OM-{kit.seed(site, 'om') % 90000 + 10000}", "accepted": True}


@trajdebug.step(kind="output")
def summarize(jobs: list[dict], receipt: dict) -> str:
    return f"{sum(j['clean'] for j in jobs)} rows cleaned, report {receipt['report']}"


def run_once(inp: dict, path: str) -> None:
    _order.clear()
    _order.update(inp)
    try:
        with trajdebug.run(RUN_NAME, path=path, task=f"clean {inp['site']} on {inp['date']}") as run:
            order = take_order(inp)
            forecast = read_forecast(fetch_weather(order["site"], order["date"]))
            survey = fetch_soiling_survey(order["site"], order["rows"])
            for i, row in enumerate(survey["rows"]):
                log_row(row, inspect_row(row["row"]), i)
            todo = [dict(run.state[f"row:{r['row']}"]) for r in survey["rows"]]
            todo = [t for t in todo if t["status"] == "to_clean"]
            ask = {"date": order["date"], "max_temp_c": forecast["max_temp_c"], "rows": todo,
                   "total_litres": sum(t["litres"] for t in todo)}
            reply = plan_cleaning([
                {"role": "system", "content": "Plan a panel-cleaning window and book the water bowser with a tool call."},
                {"role": "user", "content": json.dumps(ask)},
            ])
            call = reply["tool_calls"][0]["arguments"]
            booking = book_water_bowser(call["date"], call["litres"], call["window"])
            jobs = crew_lead([t["row"] for t in todo], booking)
            request_permit_to_work(order["site"], order["date"], booking["window"])
            for j in jobs:
                log_crew_progress(j["row"], j["clean"])
            receipt = submit_completion(order["site"], order["rows"], jobs)
            summarize(jobs, receipt)
    except (PortalRefused, ValueError):
        pass


def _find(prefix: str, want_error: bool, n: int) -> dict:
    for k in range(1, 200):
        site = f"{prefix} {k}"
        date = f"2027-06-{10 + k % 18:02d}"
        if (kit.seed(site, date, "wx") % 2 == 0) == want_error:
            return {"site": site, "date": date, "rows": n}
    raise AssertionError(prefix)


_IN = {
    "swallow": _find("Marlpit Solar", True, 6),
    "trunc": _find("Newbold Array", False, 6),
    "memory": _find("Otterburn Fields", False, 7),
    "plan": _find("Pickering Moor", False, 5),
    "args": _find("Sutton Levels", True, 6),
}

FAULTS = [
    Fault("solarclean_1", "sc_swallowed_error", "swallowed_error", "read_forecast", '"max_temp_c": 18', _IN["swallow"]),
    Fault("solarclean_2", "sc_truncated_result", "truncated_result", "fetch_soiling_survey", '"count": 4', _IN["trunc"]),
    Fault("solarclean_3", "sc_bad_memory_write", "bad_memory_write", "log_row", '"status": "cleaned"', _IN["memory"]),
    Fault("solarclean_4", "sc_plan_error", "plan_error", "plan_cleaning", "11:00-16:00", _IN["plan"]),
    Fault("solarclean_5", "sc_wrong_tool_args", "wrong_tool_args", "plan_cleaning",
          f'"litres": {rows_for(_IN["args"]["site"], 6)[0]["panels"] * LITRES_PER_PANEL}', _IN["args"]),
]

REFS = [_find("Trowell Park", True, 5), _find("Upwey Solar", False, 6), _find("Wyke Ridge", False, 4),
        _find("Yelling Farm", True, 7)]
