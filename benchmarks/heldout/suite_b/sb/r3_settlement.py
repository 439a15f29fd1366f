"""Solar export settlement pipeline (openai client + OpenInference, OTLP JSON; energy metering).

For a commercial site with rooftop PV, the pipeline fetches the day's hourly net
interval file, parses it, totals imports and exports, asks the model for the
settlement summary (JSON, sometimes with comments), parses that answer, builds
the settlement and submits it.  The market operator's endpoint compares the
totals with its own meter data and rejects a mismatch.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
from openinference.semconv.trace import SpanAttributes as SA

from sb import otkit
from sb.fakellm import Conversation, Reply, say
from sb.harness import Case, failing, faulty, tick


AGENT = "solar-settlement"
ROUTE = "otlp"
DOMAIN = "energy metering"
TR = otkit.tracer("solar-settlement")
MINUS = "\u2212"

SITES = {
    "WH-ALPHA": (1180.0, 1650.0),
    "WH-BRAVO": (940.0, 1420.0),
    "DC-NORTH": (1520.0, 980.0),
    "FAB-SOUTH": (1310.0, 2100.0),
    "WH-DELTA": (870.0, 1210.0),
    "COLD-STORE-7": (1630.0, 1390.0),
    "DEPOT-EAST": (760.0, 1550.0),
    "LAB-CAMPUS": (1045.0, 1720.0),
}
EXPORT_PRICE = 0.061
IMPORT_PRICE = 0.243


def _hourly(site: str, day: str) -> list[float]:
    load, pv = SITES[site]
    shift = int(day[-2:]) % 5
    vals = []
    for h in range(24):
        solar = max(0.0, math.sin(math.pi * (h - 5) / 14)) * pv if 5 <= h <= 19 else 0.0
        vals.append(round(load * (0.85 + 0.01 * ((h + shift) % 7)) - solar, 1))
    return vals


def _fmt(v: float) -> str:
    s = f"{abs(v):,.1f}"
    return (MINUS + s) if v < 0 else s


def _csv(site: str, day: str) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_MINIMAL)
    w.writerow(["interval_start", "net_kwh"])
    for h, v in enumerate(_hourly(site, day)):
        w.writerow([f"{day}T{h:02d}:00", _fmt(v)])
    return buf.getvalue()


def _totals(vals: list[float]) -> tuple[float, float]:
    return round(sum(v for v in vals if v > 0), 1), round(-sum(v for v in vals if v < 0), 1)


def _prev_day(day: str) -> str:
    return f"{day[:-2]}{int(day[-2:]) - 1:02d}"


def fetch_interval_file(site: str, day: str) -> str:
    with otkit.span(
        TR,
        "fetch_interval_file",
        Kind.TOOL,
        {"site": site, "day": day},
        **{SA.TOOL_NAME: "fetch_interval_file"},
    ) as out:
        tick("fetch_interval_file")
        if faulty("interval_cache_stale", "fetch_interval_file"):
            day = _prev_day(day)  # the SFTP mirror had not picked up today's drop; yesterday's file is served
        out.value = _csv(site, day)
        return out.value


def _cell(cell: str) -> float:
    if faulty("thousands_cut", "parse_readings"):
        return float(re.match(r"-?\d+(?:\.\d+)?", cell.replace(MINUS, "-")).group())  # type: ignore[union-attr]
    if faulty("sign_dropped", "parse_readings"):
        return float(re.search(r"\d[\d,]*(?:\.\d+)?", cell).group().replace(",", ""))  # type: ignore[union-attr]
    return float(cell.replace(",", "").replace(MINUS, "-"))


def parse_readings(text: str) -> dict[str, Any]:
    with otkit.span(TR, "parse_readings", Kind.CHAIN, text) as out:
        tick("parse_readings")
        rows = list(csv.DictReader(io.StringIO(text)))
        out.value = {"day": rows[0]["interval_start"][:10], "net_kwh": [_cell(r["net_kwh"]) for r in rows]}
        return out.value


def compute_totals(parsed: dict[str, Any]) -> dict[str, Any]:
    with otkit.span(TR, "compute_totals", Kind.CHAIN, parsed) as out:
        tick("compute_totals")
        imp, exp = _totals(parsed["net_kwh"])
        out.value = {
            "day": parsed["day"],
            "import_kwh": imp,
            "export_kwh": exp,
            "intervals": len(parsed["net_kwh"]),
        }
        return out.value


def parse_llm_json(text: str) -> dict[str, Any]:
    with otkit.span(TR, "parse_llm_json", Kind.CHAIN, text) as out:
        tick("parse_llm_json")
        body = text.strip().removeprefix("```json").removesuffix("```").strip()
        if faulty("repair_drops_commented_lines", "parse_llm_json"):
            body = "\n".join(
                ln for ln in body.splitlines() if "//" not in ln
            )  # 'repair': discard commented lines
            body = re.sub(r",\s*}", "}", body)
        else:
            body = re.sub(r"\s*//[^\n]*", "", body)
        data = json.loads(body)
        out.value = {
            "day": data["day"],
            "import_kwh": data.get("import_kwh", 0.0),
            "export_kwh": data.get("export_kwh", 0.0),
            "net_kwh": data.get("net_kwh"),
        }
        return out.value


def build_settlement(site: str, summary: dict[str, Any]) -> dict[str, Any]:
    with otkit.span(TR, "build_settlement", Kind.CHAIN, summary) as out:
        tick("build_settlement")
        out.value = {
            "site": site,
            "day": summary["day"],
            "import_kwh": summary["import_kwh"],
            "export_kwh": summary["export_kwh"],
            "credit_eur": round(summary["export_kwh"] * EXPORT_PRICE, 2),
            "charge_eur": round(summary["import_kwh"] * IMPORT_PRICE, 2),
        }
        return out.value


def submit_settlement(requested_day: str, settlement: dict[str, Any]) -> dict[str, Any]:
    with otkit.span(
        TR, "submit_settlement", Kind.TOOL, settlement, **{SA.TOOL_NAME: "submit_settlement"}
    ) as out:
        tick("submit_settlement")
        s = settlement
        if s["day"] != requested_day:
            failing("submit_settlement")
            raise ValueError(
                f"settlement for {s['site']} covers {s['day']} but was filed for {requested_day}"
            )
        imp, exp = _totals(_hourly(s["site"], requested_day))
        if abs(s["import_kwh"] - imp) > 0.5 or abs(s["export_kwh"] - exp) > 0.5:
            failing("submit_settlement")
            raise ValueError(
                f"operator meter data for {s['site']} on {requested_day}: import {imp:,.1f} / export {exp:,.1f} kWh; "
                f"submitted {s['import_kwh']:,.1f} / {s['export_kwh']:,.1f}"
            )
        out.value = {"accepted": True, "reference": f"SET-{s['site']}-{requested_day}"}
        return out.value


SYSTEM = (
    "You prepare daily export settlements. From the totals given, answer with a JSON object, one field per line: "
    "day, import_kwh, net_kwh (import minus export), export_kwh. You may annotate a line with // comments."
)


def policy(conv: Conversation) -> Reply:
    totals = json.loads(conv.user.split("Totals: ", 1)[1])
    net = round(totals["import_kwh"] - totals["export_kwh"], 1)
    return say(
        "```json\n{\n"
        f'  "day": "{totals["day"]}",\n'
        f'  "import_kwh": {totals["import_kwh"]},\n'
        f'  "net_kwh": {net},\n'
        f'  "export_kwh": {totals["export_kwh"]} // fed-in PV energy\n'
        "}\n```"
    )


def run(task: dict[str, Any], path: Path) -> Any:
    site, day = task["site"], task["day"]
    with otkit.span(TR, "solar-settlement", Kind.AGENT, task, **{"agent.name": "solar-settlement"}) as out:
        raw = fetch_interval_file(site, day)
        totals = compute_totals(parse_readings(raw))
        resp = otkit.client().chat.completions.create(
            model="gpt-4o-mini",
            temperature=0,
            messages=[
                {"role": "system", "content": SYSTEM},
                {
                    "role": "user",
                    "content": f"Site {site}, settlement day {day}. Totals: {json.dumps(totals)}",
                },
            ],
        )
        summary = parse_llm_json(resp.choices[0].message.content or "")
        result = submit_settlement(day, build_settlement(site, summary))
        out.value = result
        return result


PASSING = [
    {"site": "WH-ALPHA", "day": "2025-06-10"},
    {"site": "DC-NORTH", "day": "2025-06-11"},
    {"site": "WH-DELTA", "day": "2025-06-12"},
    {"site": "COLD-STORE-7", "day": "2025-06-10"},
    {"site": "LAB-CAMPUS", "day": "2025-06-13"},
]

CASES = [
    Case(
        id="settlement-thousands-separator",
        task={"site": "FAB-SOUTH", "day": "2025-06-11"},
        fault="thousands_cut",
        fault_kind="lossy_parsing",
        description="parse_readings reads each cell with a number pattern that stops at the thousands separator, so "
        "'1,284.5' becomes 1.0. The night-time import totals collapse, the model's summary and the settlement carry "
        "them, and the operator rejects the submission against its meter data.",
        root="parse_readings",
        evidence="1.0",
        path=[
            "parse_readings",
            "compute_totals",
            "ChatCompletion",
            "parse_llm_json",
            "build_settlement",
            "submit_settlement",
        ],
        failure="submit_settlement",
    ),
    Case(
        id="settlement-export-sign-dropped",
        task={"site": "DEPOT-EAST", "day": "2025-06-12"},
        fault="sign_dropped",
        fault_kind="lossy_parsing",
        description="parse_readings ignores the (Unicode) minus sign of export intervals, so every hour looks like "
        "import and exports total zero; the settlement built from it is rejected by the operator.",
        root="parse_readings",
        evidence='"net_kwh": [',
        path=[
            "parse_readings",
            "compute_totals",
            "ChatCompletion",
            "parse_llm_json",
            "build_settlement",
            "submit_settlement",
        ],
        failure="submit_settlement",
    ),
    Case(
        id="settlement-stale-interval-file",
        task={"site": "WH-BRAVO", "day": "2025-06-13"},
        fault="interval_cache_stale",
        fault_kind="stale_data",
        description="fetch_interval_file serves yesterday's interval file from the mirror. Parsing, totals, the "
        "model's summary and the settlement all describe 12 June, and the operator refuses it for 13 June.",
        root="fetch_interval_file",
        evidence="2025-06-12T00:00",
        path=[
            "fetch_interval_file",
            "parse_readings",
            "compute_totals",
            "ChatCompletion",
            "parse_llm_json",
            "build_settlement",
            "submit_settlement",
        ],
        failure="submit_settlement",
    ),
    Case(
        id="settlement-json-repair-drops-export",
        task={"site": "WH-ALPHA", "day": "2025-06-12"},
        fault="repair_drops_commented_lines",
        fault_kind="lossy_parsing",
        description="The model annotates the export line with a // comment; parse_llm_json 'repairs' the JSON by "
        "discarding commented lines, so export_kwh defaults to 0. The settlement credits nothing and the operator "
        "rejects the totals.",
        root="parse_llm_json",
        evidence='"export_kwh": 0.0',
        path=["parse_llm_json", "build_settlement", "submit_settlement"],
        failure="submit_settlement",
    ),
]
