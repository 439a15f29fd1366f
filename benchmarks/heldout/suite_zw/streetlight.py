"""Street lighting repairs: a repair-batching agent traced with OpenTelemetry + OpenInference (OTLP/JSON)."""

from __future__ import annotations

import json
import re

from openai import OpenAI

from . import otel
from .common import Case, last_user_json
from .kit import active
from .otel import span

NAME = "streetlight-repairs"
ROUTE = "otlp"
DOMAIN = "street lighting repairs"
EXT = "json"
SHAPE = ("outage reports tool -> per report asset-register tool + report parser -> manual retriever -> triage LLM -> "
         "parse -> crew sub-agent (availability, route batches, booking request, bucket truck) -> job memory -> "
         "raise work orders")

ASSETS = {
    "LC-2231": ("A6120 Ring Road", "A", "LED 70W"), "LC-2232": ("Elm Grove", "C", "LED 70W"),
    "LC-2233": ("Mill Lane", "C", "SON 100W"), "LC-2234": ("Station Road", "B", "LED 40W"),
    "LC-2240": ("Park View", "C", "LED 40W"), "LC-3101": ("A58 Kirkstall Road", "A", "SON 150W"),
    "LC-3102": ("Abbey Walk", "C", "LED 70W"), "LC-3103": ("Vesper Lane", "B", "LED 40W"),
    "LC-4410": ("Church Street", "C", "SON 100W"), "LC-4411": ("A65 Otley Road", "A", "LED 70W"),
    "LC-5520": ("Beech Close", "C", "LED 40W"), "LC-5521": ("Moor Lane", "B", "SON 100W"),
    "LC-6601": ("Harbour Row", "C", "LED 70W"), "LC-6602": ("A61 Scott Hall Road", "A", "LED 40W"),
    "LC-6603": ("Lime Terrace", "C", "SON 150W"),
}
SYMPTOMS = ["day-burning", "out", "flickering", "cycling", "out"]


def _reports(cols: list) -> list:
    return [{"ref": f"R-{i + 801}", "column": c,
             "text": f"Column {c}: {SYMPTOMS[i % len(SYMPTOMS)]}, lamp {ASSETS[c][2]}, reported by resident"}
            for i, c in enumerate(cols)]


INPUTS = {
    "west_dec8": {"district": "West", "reported": "2026-12-03", "crew_date": "2026-12-08",
                  "columns": ["LC-2231", "LC-2232", "LC-2233", "LC-2234", "LC-2240"]},
    "kirk_dec9": {"district": "Kirkstall", "reported": "2026-12-04", "crew_date": "2026-12-09",
                  "columns": ["LC-3101", "LC-3102", "LC-3103", "LC-2233"]},
    "centre_dec10": {"district": "Centre", "reported": "2026-12-05", "crew_date": "2026-12-10",
                     "columns": ["LC-4410", "LC-4411", "LC-2232"]},
    "north_dec11": {"district": "North", "reported": "2026-12-06", "crew_date": "2026-12-11",
                    "columns": ["LC-5520", "LC-5521", "LC-2240", "LC-3102"]},
    "harbour_dec14": {"district": "Harbour", "reported": "2026-12-07", "crew_date": "2026-12-14",
                      "columns": ["LC-6601", "LC-6602", "LC-6603"]},
    "east_dec15": {"district": "East", "reported": "2026-12-08", "crew_date": "2026-12-15",
                   "columns": ["LC-5521", "LC-4410", "LC-3103", "LC-6601", "LC-2234"]},
}
REFS = ["centre_dec10", "north_dec11", "harbour_dec14", "east_dec15"]
PARTS = {"LED 70W": "SL-LED-70", "LED 40W": "SL-LED-40", "SON 100W": "SL-SON-100", "SON 150W": "SL-SON-150"}

CASES = [
    Case("zw_light_lamp", "lossy_parsing", "west_dec8", "parse_report_text", 2, "other", "raise_work_orders", 1,
         "The report parser drops the lamp type of the second report, and triage falls back to a SON 100W part "
         "for an LED column."),
    Case("zw_light_batches", "off_by_one", "kirk_dec9", "build_route_batches", 1, "other", "raise_work_orders", 1,
         "Batching the columns into truck routes stops one short and leaves the last column out."),
    Case("zw_light_tm", "plan_error", "west_dec8", "ChatCompletion", 1, "llm", "raise_work_orders", 1,
         "The triage plan leaves out traffic management for the column on the A6120 ring road."),
    Case("zw_light_truck", "wrong_tool_args", "kirk_dec9", "build_booking_request", 1, "other",
         "raise_work_orders", 1,
         "The bucket-truck booking request carries the report date instead of the crew date."),
    Case("zw_light_memo", "bad_memory_write", "west_dec8", "update_job_memory", 1, "other", "raise_work_orders", 1,
         "The job memory writer files each part line under the previous column's id, losing one column's line."),
]


class WorkOrderError(RuntimeError):
    pass


def _policy(req):
    data = last_user_json(req.body or {})
    plan = []
    for i, c in enumerate(data.get("columns", [])):
        part = PARTS.get(c["lamp"] or "", "SL-SON-100")
        tm = c["road_class"] == "A"
        if tm and active("zw_light_tm"):
            tm = False
        plan.append({"column": c["column"], "action": "replace lamp" if c["symptom"] == "out" else "replace PECU",
                     "part": part, "traffic_management": tm})
    return json.dumps({"plan": plan})


def _parse_report(text: str, second: bool) -> dict:
    m = re.match(r"Column (\S+): ([\w-]+), lamp (\w+ \d+W)", text)
    lamp = m.group(3)
    if second and active("zw_light_lamp"):
        lamp = None
    return {"column": m.group(1), "symptom": m.group(2), "lamp": lamp}


def _raise_orders(batch: dict, memory: dict, booking: dict) -> dict:
    for col in batch["columns"]:
        line = memory.get(col)
        if line is None:
            raise WorkOrderError(f"400 Bad Request: work order batch has no line for column {col} "
                                 f"({len(memory)} of {len(batch['columns'])} reported columns)")
        road, cls, lamp = ASSETS[col]
        if line["part"] != PARTS[lamp]:
            raise WorkOrderError(f"422 Unprocessable Entity: column {col} has lamp {lamp} in the asset register; "
                                 f"order lists part {line['part']}")
        if cls == "A" and not line["traffic_management"]:
            raise WorkOrderError(f"422 Unprocessable Entity: column {col} on {road} needs a traffic management "
                                 "permit on the work order")
    if booking["date"] != batch["crew_date"]:
        raise WorkOrderError(f"409 Conflict: bucket truck booking {booking['booking']} is for {booking['date']}; "
                             f"crew date is {batch['crew_date']}")
    return {"status": 201, "orders": [f"WO-{c}" for c in batch["columns"]]}


def record(inp_id: str, path: str, server) -> None:
    server.use(_policy)
    otel.begin()
    client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    batch = INPUTS[inp_id]
    try:
        with span(NAME, "AGENT", input=batch, agent__name=NAME):
            with span("fetch_outage_reports", "TOOL", input={"district": batch["district"]}) as s:
                reports = s.output(_reports(batch["columns"]))
            parsed = []
            for i, r in enumerate(reports):
                with span("asset_register_lookup", "TOOL", input={"column": r["column"]}) as s:
                    road, cls, _ = ASSETS[r["column"]]
                    asset = s.output({"column": r["column"], "road": road, "road_class": cls})
                with span("parse_report_text", "CHAIN", input=r["text"]) as s:
                    p = s.output(_parse_report(r["text"], i == 1))
                parsed.append({**p, "road_class": asset["road_class"], "road": asset["road"]})
            with span("repair_manual_search", "RETRIEVER", input="PECU and lamp replacement procedure") as s:
                s.output([{"doc": "LM-7 lamp replacement", "requires": ["bucket truck", "isolator key"]},
                          {"doc": "TM-2 traffic management on A roads", "requires": ["permit"]}])
            r = client.chat.completions.create(model="lighting-triage", messages=[
                {"role": "system", "content": "Plan streetlight repairs. Answer JSON."},
                {"role": "user", "content": json.dumps({"columns": parsed})}])
            with span("parse_triage", "CHAIN", input=r.choices[0].message.content) as s:
                plan = s.output(json.loads(r.choices[0].message.content)["plan"])
            with span("crew_scheduler", "AGENT", input={"date": batch["crew_date"]}, agent__name="crew_scheduler") as sub:
                with span("crew_availability", "TOOL", input={"date": batch["crew_date"]}) as s:
                    crew = s.output({"date": batch["crew_date"], "crew": "Lighting Crew 2", "hours": 8})
                with span("build_route_batches", "CHAIN", input=[p["column"] for p in plan]) as s:
                    cols = [p["column"] for p in plan]
                    stop = len(cols) - 1 if active("zw_light_batches") else len(cols)
                    routes = s.output([cols[i:min(i + 2, stop)] for i in range(0, stop, 2)])
                with span("build_booking_request", "CHAIN", input={"crew": crew, "routes": routes}) as s:
                    day = batch["reported"] if active("zw_light_truck") else crew["date"]
                    request = s.output({"vehicle": "bucket truck", "date": day, "stops": sum(len(x) for x in routes)})
                with span("book_bucket_truck", "TOOL", input=request) as s:
                    booking = s.output({"booking": f"BT-{request['date'][5:].replace('-', '')}", "date": request["date"]})
                sub.output({"routes": routes, "booking": booking})
            with span("update_job_memory", "CHAIN", input={"plan": plan, "routes": routes}) as s:
                routed = [c for route in routes for c in route]
                memory, prev = {}, None
                for p in plan:
                    if p["column"] in routed:
                        key = prev if (active("zw_light_memo") and prev) else p["column"]
                        memory[key] = {"part": p["part"], "traffic_management": p["traffic_management"]}
                        prev = p["column"]
                s.output(memory)
            with span("raise_work_orders", "TOOL", input={"memory": memory, "booking": booking}) as s:
                s.output(_raise_orders(batch, memory, booking))
    except WorkOrderError:
        pass
    otel.write(path)
