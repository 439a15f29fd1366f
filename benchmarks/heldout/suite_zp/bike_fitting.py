"""Bike fitting studio: takes a rider's measurements, works out saddle height and reach, has a component
specialist sub-agent pick and stock-check the stem, bars and cranks, books the fit appointment and confirms
the fit package (OpenTelemetry spans, OpenInference conventions, exported as OTLP/JSON)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openai import OpenAI

from .common import ApiError, Case, OtelRun, last_user_json
from .kit import active

NAME = "bike-fit-studio"
ROUTE = "otlp"
DOMAIN = "bike fitting"
SHAPE = "intake -> client history -> fit calculator (retry) -> frame geometry retriever -> reach target -> component-specialist sub-agent (model, stock per part) -> appointment model -> book -> report model -> confirm package"

INPUTS: dict[str, dict[str, Any]] = {
    "amara": {"client": "C-4471", "name": "Amara Idowu", "inseam_cm": 84.0, "target_reach_mm": 485, "frame": "Aero SL 56",
              "leg_diff_mm": 0, "service": "full fit", "date": "2027-04-20"},
    "jonas": {"client": "C-4480", "name": "Jonas Berg", "inseam_cm": 88.5, "target_reach_mm": 505, "frame": "Aero SL 58",
              "leg_diff_mm": 0, "service": "full fit", "date": "2027-04-22"},
    "lena": {"client": "C-4486", "name": "Lena Ortiz", "inseam_cm": 78.0, "target_reach_mm": 455, "frame": "Gravel X 52",
             "leg_diff_mm": 6, "service": "full fit", "date": "2027-04-23"},
    "tomas": {"client": "C-4490", "name": "Tomas Reid", "inseam_cm": 86.0, "target_reach_mm": 490, "frame": "Gravel X 56",
              "leg_diff_mm": 0, "service": "full fit", "date": "2027-04-26"},
    "yuki": {"client": "C-4495", "name": "Yuki Sato", "inseam_cm": 80.5, "target_reach_mm": 470, "frame": "Aero SL 54",
             "leg_diff_mm": 0, "service": "full fit", "date": "2027-04-27"},
    "ola": {"client": "C-4502", "name": "Ola Nowak", "inseam_cm": 83.0, "target_reach_mm": 480, "frame": "Gravel X 54",
            "leg_diff_mm": 4, "service": "full fit", "date": "2027-04-29"},
}
MAIN = ("amara", "jonas")
REFS = ("lena", "tomas", "yuki", "ola")

CASES = [
    Case("bft-1", "unit_error", "amara", ("fit_calculator", 2), ("confirm_fit_package", 1),
         "The fit calculator answers the saddle height in centimetres under its millimetre field, so the package's saddle height is out of range."),
    Case("bft-2", "hallucinated_value", "jonas", ("compose_fit_report", 1), ("confirm_fit_package", 1),
         "The report model writes a stem length that no step chose and the shop does not stock."),
    Case("bft-3", "context_pollution", "amara", ("load_client_history", 1), ("confirm_fit_package", 1),
         "The client history carries another rider's leg-length note, so the package adds a cleat shim this rider does not need."),
    Case("bft-4", "stale_data", "jonas", ("frame_geometry", 1), ("confirm_fit_package", 1),
         "The geometry search answers the 2022 model year's reach, so the stem chosen misses the reach target on the 2026 frame."),
    Case("bft-5", "wrong_tool_args", "amara", ("plan_appointment", 1), ("confirm_fit_package", 1),
         "The appointment model books a quick adjustment slot for a rider who bought a full fit."),
]

GEOMETRY_2026 = {"Aero SL 54": 372, "Aero SL 56": 380, "Aero SL 58": 391, "Gravel X 52": 368, "Gravel X 54": 375, "Gravel X 56": 384}
GEOMETRY_2022 = {k: v + 14 for k, v in GEOMETRY_2026.items()}
STEMS = [70, 80, 90, 100, 110, 120, 130]
SERVICES = {"full fit": 120, "quick adjust": 30}
OTHER_RIDER_NOTE = "leg-length difference 8 mm: shim the left cleat"


def policy(req: Any) -> str:
    p = last_user_json(req.body)
    task = p.get("task")
    if task == "components":
        return json.dumps({"stem_mm": p["stem_mm"], "bar_mm": 420 if p["inseam_cm"] > 82 else 400, "crank_mm": 172.5 if p["inseam_cm"] > 82 else 170})
    if task == "appointment":
        service = p["service"]
        if active("bft-5"):
            service = "quick adjust"
        return json.dumps({"client": p["client"], "date": p["date"], "service": service, "fitter": "R. Kaur"})
    if task == "report":
        parts = dict(p["components"])
        if active("bft-2"):
            parts["stem_mm"] = 95
        shim = any("shim" in n for n in p["history"])
        return json.dumps({"client": p["client"], "saddle_height_mm": p["saddle_height_mm"], "components": parts,
                           "cleat_shim_mm": 8 if shim else p["leg_diff_mm"], "appointment": p["appointment"]})
    return "{}"


_shared_history: list[str] = [OTHER_RIDER_NOTE]


def record(inp_id: str, out: Path, base_url: str) -> None:
    c = INPUTS[inp_id]
    client = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    o = OtelRun(NAME)
    try:
        with o.span(NAME, "AGENT", {"client": c["client"], "frame": c["frame"]}, **{"agent.name": NAME}) as root:
            with o.span("intake_measurements", "CHAIN", c["client"]) as sp:
                rider = o.output(sp, json.loads(json.dumps(c)))
            with o.span("load_client_history", "CHAIN", {"client": rider["client"]}) as sp:
                history = [f"{rider['name']}: first fit on this frame"]
                if active("bft-3"):
                    history += _shared_history
                history = o.output(sp, history)
            for attempt in (1, 2):
                try:
                    with o.span("fit_calculator", "TOOL", {"inseam_cm": rider["inseam_cm"], "method": "LeMond 0.883"}, **{"tool.name": "fit_calculator"}) as sp:
                        if attempt == 1:
                            raise ConnectionError("fit service returned 503 Service Unavailable")
                        h_cm = rider["inseam_cm"] * 0.883
                        height = round(h_cm if active("bft-1") else h_cm * 10, 1)
                        fit = o.output(sp, {"saddle_height_mm": height, "setback_mm": 55})
                    break
                except ConnectionError:
                    continue
            with o.span("frame_geometry", "RETRIEVER", f"{rider['frame']} geometry") as sp:
                table, year = (GEOMETRY_2022, 2022) if active("bft-4") else (GEOMETRY_2026, 2026)
                doc = o.retrieved(sp, [{"id": f"GEO-{rider['frame']}-{year}", "content": json.dumps({"frame": rider["frame"], "model_year": year, "reach_mm": table[rider["frame"]]})}])[0]
            geometry = json.loads(doc["content"])
            with o.span("compute_reach_target", "CHAIN", {"target_reach_mm": rider["target_reach_mm"], "frame_reach_mm": geometry["reach_mm"]}) as sp:
                stem = round((rider["target_reach_mm"] - geometry["reach_mm"]) / 10) * 10
                stem = o.output(sp, {"stem_mm": min(max(stem, STEMS[0]), STEMS[-1])})
            with o.span("component_specialist", "AGENT", {"stem_mm": stem["stem_mm"]}, **{"agent.name": "component_specialist"}) as sub:
                parts = o.llm("choose_components", client, "You choose bike fit components.",
                              {"task": "components", "stem_mm": stem["stem_mm"], "inseam_cm": rider["inseam_cm"]})
                for part, size in parts.items():
                    with o.span("check_stock", "TOOL", {"part": part, "size": size}, **{"tool.name": "check_stock"}) as sp:
                        o.output(sp, {"part": part, "size": size, "in_stock": 3})
                o.output(sub, parts)
            appt_args = o.llm("plan_appointment", client, "You book fit appointments.",
                              {"task": "appointment", "client": rider["client"], "date": rider["date"], "service": rider["service"]})
            with o.span("book_appointment", "TOOL", appt_args, **{"tool.name": "book_appointment"}) as sp:
                appt = o.output(sp, {"appointment": f"AP-{appt_args['date']}-{rider['client']}", "service": appt_args["service"],
                                     "minutes": SERVICES[appt_args["service"]]})
            report = o.llm("compose_fit_report", client, "You write the rider's fit report and package.",
                           {"task": "report", "client": rider["client"], "saddle_height_mm": fit["saddle_height_mm"], "components": parts,
                            "history": history, "leg_diff_mm": rider["leg_diff_mm"], "appointment": appt})
            with o.span("confirm_fit_package", "TOOL", report, **{"tool.name": "confirm_fit_package"}) as sp:
                h = report["saddle_height_mm"]
                if not 640 <= h <= 790:
                    raise ApiError(422, {"error": "saddle_height", "detail": f"saddle height {h} mm is outside the seatpost range 640-790 mm"})
                s = report["components"]["stem_mm"]
                if s not in STEMS:
                    raise ApiError(422, {"error": "stem_length", "detail": f"stem {s} mm is not a stocked length (70-130 mm in 10 mm steps)"})
                reach = GEOMETRY_2026[rider["frame"]] + s
                if abs(reach - rider["target_reach_mm"]) > 10:
                    raise ApiError(422, {"error": "reach", "detail": f"stem {s} mm on the 2026 {rider['frame']} gives {reach} mm reach; fit target {rider['target_reach_mm']} mm +/-10"})
                if report["cleat_shim_mm"] != rider["leg_diff_mm"]:
                    raise ApiError(422, {"error": "shim", "detail": f"package adds a cleat shim of {report['cleat_shim_mm']} mm; the assessment measured {rider['leg_diff_mm']} mm leg-length difference"})
                if report["appointment"]["minutes"] < SERVICES[rider["service"]]:
                    raise ApiError(409, {"error": "appointment", "detail": f"appointment {report['appointment']['appointment']} is {report['appointment']['minutes']} min; a {rider['service']} needs {SERVICES[rider['service']]} min"})
                o.output(sp, {"status": 201, "package": f"FP-{rider['client']}"})
            o.output(root, {"package": f"FP-{rider['client']}"})
    except ApiError:
        pass
    o.write(out)
