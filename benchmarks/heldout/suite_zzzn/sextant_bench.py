"""Sextant repair bench: collimation and index-error job (route: otlp, OpenInference + OpenTelemetry)."""
import json

from openai import OpenAI
from opentelemetry.trace import Status, StatusCode

import zzzn_common

NAME = "sextant-repair-bench"
ROUTE = "otlp"
DOMAIN = "sextant repair bench"
SHAPE = "traced spans: manual retrieval, three-sight loop of readings with parse, model diagnosis (instrumented OpenAI), calibration certificate check"
SWITCH = None
SERVER = None

MANUALS = {"Heath & Co": {"maker": "Heath & Co", "arc_deg": 120, "max_index_arcmin": 2.0},
           "Plath": {"maker": "Plath", "arc_deg": 120, "max_index_arcmin": 1.5},
           "Hughes": {"maker": "Hughes", "arc_deg": 110, "max_index_arcmin": 2.5},
           "Hughes & Son": {"maker": "Hughes & Son", "arc_deg": 120, "max_index_arcmin": 1.0}}
READINGS = {"S-101": ["0°01.2'", "0°01.0'", "0°01.4'"], "S-102": ["0°00.8'", "0°00.6'", "0°00.7'"],
            "S-103": ["0°02.0'", "0°01.8'", "0°01.6'"], "S-104": ["0°00.4'", "0°00.5'", "0°00.3'"],
            "S-105": ["0°01.1'", "0°00.9'", "0°01.0'"]}
LAST_YEAR = {"S-103": ["0°03.1'", "0°03.3'", "0°02.9'"]}
INPUTS = [{"task": f"bench job {sid}: {maker}", "serial": sid, "maker": maker} for sid, maker in [
    ("S-101", "Heath & Co"), ("S-102", "Plath"), ("S-103", "Hughes"), ("S-104", "Hughes & Son"), ("S-105", "Heath & Co")]]
CASES = [
    dict(id="zn21", input=3, switch="manual", kind="wrong_retrieval", root=("maker_manual", 1), failure=None,
         desc="The manual search for Hughes & Son returned the older Hughes manual with its looser index tolerance."),
    dict(id="zn22", input=0, switch="degrees", kind="unit_error", root=("index_error", 1), failure=None,
         desc="The mean index error was reported in seconds of arc while the certificate reads it as minutes."),
    dict(id="zn23", input=2, switch="lastyear", kind="stale_data", root=("bench_readings", 1), failure=None,
         desc="The readings came from last year's bench log for this serial instead of today's sights."),
    dict(id="zn24", input=1, switch="minutes", kind="lossy_parsing", root=("parse_sight", 2), failure=None,
         desc="Parsing the second sight dropped the tenths, reading 0°00.6' as 6 minutes."),
    dict(id="zn25", input=4, switch="sights", kind="off_by_one", root=("plan_sights", 1), failure=None,
         desc="The sight plan stopped one short and took two sights instead of three."),
]


def policy(request):
    ask = json.loads(request.body["messages"][-1]["content"])
    err = ask["index_error"]
    verdict = "adjust index mirror" if abs(err) > 0.5 else "within tolerance, clean only"
    return json.dumps({"diagnosis": verdict, "index_error": err})


def _span(tracer, name, kind, inp):
    return tracer.start_as_current_span(name, attributes={"openinference.span.kind": kind,
                                                           "input.value": json.dumps(inp),
                                                           "input.mime_type": "application/json"})


def _out(span, value):
    span.set_attribute("output.value", json.dumps(value))
    span.set_attribute("output.mime_type", "application/json")


def run_one(inp, path):
    tracer = zzzn_common.otlp_tracer(NAME)
    client = OpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0)
    try:
        with tracer.start_as_current_span(NAME, attributes={"openinference.span.kind": "AGENT",
                                                           "input.value": inp["task"]}) as top:
            with _span(tracer, "job_card", "CHAIN", inp) as s:
                card = dict(inp)
                _out(s, card)
            with _span(tracer, "maker_manual", "RETRIEVER", {"maker": card["maker"]}) as s:
                maker = card["maker"]
                if SWITCH == "manual":
                    maker = maker.split(" & ")[0]
                manual = MANUALS[maker]
                _out(s, manual)
            with _span(tracer, "plan_sights", "CHAIN", {"serial": card["serial"]}) as s:
                plan = {"sights": 2 if SWITCH == "sights" else 3}
                _out(s, plan)
            with _span(tracer, "bench_readings", "TOOL", {"serial": card["serial"]}) as s:
                log = LAST_YEAR if SWITCH == "lastyear" else READINGS
                readings = log.get(card["serial"], READINGS[card["serial"]])[: plan["sights"]]
                _out(s, readings)
            minutes = []
            for i, text in enumerate(readings):
                with _span(tracer, "parse_sight", "CHAIN", {"reading": text}) as s:
                    m = text.split("°")[1].rstrip("'")
                    value = float(m.replace(".", "")) if SWITCH == "minutes" and i == 1 else float(m)
                    minutes.append(value)
                    _out(s, {"arcmin": value})
            with _span(tracer, "index_error", "CHAIN", {"arcmin": minutes}) as s:
                mean = round(sum(minutes) / len(minutes), 2)
                result = {"index_error": round(mean * 60, 1) if SWITCH == "degrees" else mean}
                _out(s, result)
            client.chat.completions.create(model=SERVER.model, messages=[
                {"role": "system", "content": "Diagnose the sextant from its index error. Answer JSON."},
                {"role": "user", "content": json.dumps({"serial": card["serial"], **result})}])
            with _span(tracer, "adjust_mirror", "TOOL", {"serial": card["serial"]}) as s:
                _out(s, {"turns": round(result["index_error"] / 4, 2)})
            with _span(tracer, "calibration_certificate", "CHAIN",
                       {"serial": card["serial"], "manual": manual, "index_error": result}) as s:
                if len(minutes) < 3:
                    raise ValueError(f"certificate needs three sights, bench log holds {len(minutes)}")
                if abs(result["index_error"]) > manual["max_index_arcmin"]:
                    raise ValueError(f"index error {result['index_error']}' exceeds the {manual['max_index_arcmin']}' "
                                     f"{manual['maker']} tolerance")
                if manual["maker"] != card["maker"]:
                    raise ValueError(f"certificate maker {manual['maker']} does not match the instrument's {card['maker']}")
                _out(s, {"certified": True})
            top.set_attribute("output.value", "certified")
    except ValueError:
        pass
    zzzn_common.otlp_write(path)
