"""Model rocketry club launch officer (OpenAI Agents SDK: a launch agent with tools and a range-safety agent as a tool)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from . import common
from .common import Case
from .kit import active

NAME = "rocketry-launch-officer"
ROUTE = "openai_agents"
DOMAIN = "model rocketry club launches"
SHAPE = "launch_officer (llm loop): file_plan -> rocket, motor, apogee estimate, winds, waiver (tools) -> rso_reviewer agent-as-tool (stability_check) -> range slot -> submit_flight_card"
MODEL = "rocketry-officer"

ROCKETS = {"RK-07": {"name": "Kestrel 54", "mass_g": 1100, "cg_cm": 71.0, "cp_cm": 84.5, "diameter_mm": 54},
           "RK-12": {"name": "Little Dart", "mass_g": 240, "cg_cm": 38.0, "cp_cm": 46.0, "diameter_mm": 29},
           "RK-19": {"name": "Osprey 38", "mass_g": 620, "cg_cm": 55.5, "cp_cm": 66.0, "diameter_mm": 38},
           "RK-21": {"name": "Heron", "mass_g": 410, "cg_cm": 49.0, "cp_cm": 58.5, "diameter_mm": 38}}
MOTORS = {"G80-7T": {"class": "G", "curve": [0, 95, 110, 104, 98, 92, 88, 84, 80, 76, 60, 0], "dt": 0.15},
          "F42-8T": {"class": "F", "curve": [0, 60, 58, 52, 48, 44, 40, 36, 20, 0], "dt": 0.15},
          "E12-4": {"class": "E", "curve": [0, 30, 14, 12, 12, 11, 11, 10, 10, 9, 0], "dt": 0.25},
          "G64-10W": {"class": "G", "curve": [0, 80, 76, 72, 70, 68, 64, 60, 55, 50, 40, 20, 0], "dt": 0.15}}
FIELD = {"site": "Hawk Field", "waiver": "WV-2025-031", "ceiling_ft": 5000, "gust_limit_mph": 20}

INPUTS = [
    {"flyer": "M-118", "rocket": "RK-07", "motor": "G80-7T", "time": "10:30", "gust_mph": 14, "pads": ["HP-1", "HP-3"]},
    {"flyer": "M-204", "rocket": "RK-19", "motor": "G64-10W", "time": "11:15", "gust_mph": 11, "pads": ["HP-2", "HP-3"]},
    {"flyer": "M-087", "rocket": "RK-12", "motor": "E12-4", "time": "09:45", "gust_mph": 8, "pads": ["LP-1", "LP-2"]},
    {"flyer": "M-150", "rocket": "RK-21", "motor": "F42-8T", "time": "12:00", "gust_mph": 12, "pads": ["LP-2", "LP-3"]},
    {"flyer": "M-233", "rocket": "RK-19", "motor": "F42-8T", "time": "13:30", "gust_mph": 16, "pads": ["LP-1", "LP-3"]},
    {"flyer": "M-061", "rocket": "RK-07", "motor": "G64-10W", "time": "14:10", "gust_mph": 10, "pads": ["HP-1", "HP-2"]},
]

CASES = [
    Case("zn_rocketry_1", "unit_error", 0, "estimate_apogee", 1, "submit_flight_card",
         "estimate_apogee reports the simulated apogee in metres under the apogee_ft field."),
    Case("zn_rocketry_2", "wrong_tool_args", 1, "generation rocketry-officer", 9, "submit_flight_card",
         "the model fills the flight card's pad with the first pad it was offered instead of the pad the range slot assigned."),
    Case("zn_rocketry_3", "plan_error", 0, "generation rocketry-officer", 1, "submit_flight_card",
         "the launch plan the model files leaves out the waiver check for a G-class flight."),
    Case("zn_rocketry_4", "truncated_result", 1, "get_motor", 1, "submit_flight_card",
         "get_motor returns only the first five points of the thrust curve, so the apogee estimate is far too low."),
    Case("zn_rocketry_5", "format_drift", 0, "get_winds", 1, "submit_flight_card",
         "get_winds now reports gusts as a text range ('9-14 mph') and the model copies the lower bound as the maximum gust."),
]


def _inp(text: str) -> dict:
    return next(i for i in INPUTS if i["flyer"] in text and i["rocket"] in text)


def _apogee_m(mass_g: int, curve: list[float], dt: float) -> float:
    impulse = sum(curve) * dt
    return round(impulse * 1000 / mass_g * 1.8, 1)


def _flight_plan() -> list[str]:
    plan = ["get_rocket", "get_motor", "estimate_apogee", "get_winds", "check_waiver", "ask_rso",
            "request_range_slot", "submit_flight_card"]
    return plan


@common.policy(MODEL)
def _officer(body: dict) -> object:
    from trajdebug.testing import Reply, tool_call

    inp = _inp(common.first_user(body))
    res = common.results_by_tool(body)
    done = [n for n, _ in common.called(body)]
    if "file_plan" not in done:
        plan = _flight_plan()
        if active("zn_rocketry_3"):
            plan = [p for p in plan if p != "check_waiver"]
        return Reply(tool_calls=(tool_call("file_plan", {"steps": plan}),))
    plan = res["file_plan"]["steps"]
    todo = [p for p in plan if p not in done]
    if not todo:
        return f"Flight card {res['submit_flight_card']['card']} filed. Good flight!"
    nxt = todo[0]
    rocket, motor = res.get("get_rocket"), res.get("get_motor")
    args: dict
    if nxt == "get_rocket":
        args = {"rocket_id": inp["rocket"]}
    elif nxt == "get_motor":
        args = {"code": inp["motor"]}
    elif nxt == "estimate_apogee":
        args = {"mass_g": rocket["mass_g"], "motor_code": motor["code"], "thrust_curve_n": motor["thrust_curve_n"],
                "dt_s": motor["dt_s"]}
    elif nxt == "get_winds":
        args = {"site": FIELD["site"], "time": inp["time"]}
    elif nxt == "check_waiver":
        args = {"site": FIELD["site"], "apogee_ft": res["estimate_apogee"]["apogee_ft"]}
    elif nxt == "ask_rso":
        ask = {"rocket_id": inp["rocket"], "cg_cm": rocket["cg_cm"], "cp_cm": rocket["cp_cm"],
               "diameter_mm": rocket["diameter_mm"]}
        args = {"input": json.dumps(ask)}
    elif nxt == "request_range_slot":
        args = {"time": inp["time"], "motor_class": motor["class"], "pads": inp["pads"]}
    else:
        winds = res["get_winds"]
        gust = winds.get("gust_mph")
        if gust is None:
            gust = float(re.findall(r"\d+(?:\.\d+)?", winds["gusts"])[0])
        slot = res["request_range_slot"]
        pad = slot["pad"]
        if active("zn_rocketry_2"):
            pad = inp["pads"][0]
        waiver = res.get("check_waiver", {}).get("waiver")
        args = {"flyer": inp["flyer"], "rocket_id": inp["rocket"], "motor_code": motor["code"], "pad": pad,
                "slot": slot["slot"], "time": inp["time"], "apogee_ft": res["estimate_apogee"]["apogee_ft"],
                "max_gust_mph": gust, "waiver": waiver or "", "rso": json.dumps(res["ask_rso"])}
    return Reply(tool_calls=(tool_call(nxt, args),))


@common.policy("rocketry-rso")
def _rso(body: dict) -> object:
    from trajdebug.testing import Reply, tool_call

    req = json.loads(common.first_user(body))
    res = common.results_by_tool(body)
    if "stability_check" not in res:
        return Reply(tool_calls=(tool_call("stability_check", {"cg_cm": req["cg_cm"], "cp_cm": req["cp_cm"],
                                                               "diameter_mm": req["diameter_mm"]}),))
    s = res["stability_check"]
    return json.dumps({"rocket_id": req["rocket_id"], "calibers": s["calibers"], "verdict": "approved" if s["stable"] else "refused"})


def _build(inp: dict):
    from agents import Agent, function_tool

    @function_tool
    def file_plan(steps: list[str]) -> str:
        """File the pre-flight checklist this flight will follow."""
        return json.dumps({"filed": True, "steps": steps})

    @function_tool
    def get_rocket(rocket_id: str) -> str:
        """The club's record of a member rocket."""
        return json.dumps({"rocket_id": rocket_id, **ROCKETS[rocket_id]})

    @function_tool
    def get_motor(code: str) -> str:
        """Motor data from the certification database (thrust curve in newtons)."""
        m = MOTORS[code]
        curve = m["curve"][:5] if active("zn_rocketry_4") else m["curve"]
        return json.dumps({"code": code, "class": m["class"], "thrust_curve_n": curve, "dt_s": m["dt"]})

    @function_tool
    def estimate_apogee(mass_g: int, motor_code: str, thrust_curve_n: list[float], dt_s: float) -> str:
        """Simulate the apogee of a rocket on a motor."""
        metres = _apogee_m(mass_g, thrust_curve_n, dt_s)
        feet = metres if active("zn_rocketry_1") else round(metres * 3.281)
        return json.dumps({"motor": motor_code, "apogee_ft": feet})

    @function_tool
    def get_winds(site: str, time: str) -> str:
        """Forecast winds at the field for a time."""
        gust = inp["gust_mph"]
        if active("zn_rocketry_5"):
            return json.dumps({"site": site, "time": time, "wind_mph": gust - 6, "gusts": f"{gust - 5}-{gust} mph"})
        return json.dumps({"site": site, "time": time, "wind_mph": gust - 6, "gust_mph": gust})

    @function_tool
    def check_waiver(site: str, apogee_ft: float) -> str:
        """Check the flight against the field's airspace waiver."""
        return json.dumps({"site": site, "waiver": FIELD["waiver"], "ceiling_ft": FIELD["ceiling_ft"],
                           "within": apogee_ft <= FIELD["ceiling_ft"]})

    @function_tool
    def stability_check(cg_cm: float, cp_cm: float, diameter_mm: float) -> str:
        """Static stability margin in calibers."""
        cal = round((cp_cm - cg_cm) / (diameter_mm / 10), 2)
        return json.dumps({"calibers": cal, "stable": cal >= 1.0})

    @function_tool
    def request_range_slot(time: str, motor_class: str, pads: list[str]) -> str:
        """Ask the range for a pad and slot."""
        return json.dumps({"slot": f"RS-{time.replace(':', '')}", "pad": pads[-1], "time": time})

    @function_tool(failure_error_function=None)
    def submit_flight_card(flyer: str, rocket_id: str, motor_code: str, pad: str, slot: str, time: str,
                           apogee_ft: float, max_gust_mph: float, waiver: str, rso: str) -> str:
        """File the flight card with the launch control officer (checked by the club's system)."""
        m, r = MOTORS[motor_code], ROCKETS[rocket_id]
        if m["class"] in "GH" and not waiver:
            raise ValueError(f"HTTP 412: flight card for {motor_code} ({m['class']} class) needs a waiver reference "
                             f"for {FIELD['site']}")
        sim_ft = round(_apogee_m(r["mass_g"], m["curve"], m["dt"]) * 3.281)
        if abs(apogee_ft - sim_ft) > 0.15 * sim_ft:
            raise ValueError(f"HTTP 422: declared apogee {apogee_ft:g} ft differs from the club simulation "
                             f"({sim_ft} ft) by more than 15%")
        if max_gust_mph < inp["gust_mph"]:
            raise ValueError(f"HTTP 422: declared max gust {max_gust_mph:g} mph is below the {inp['gust_mph']} mph "
                             f"forecast for {time} at {FIELD['site']}")
        if pad != inp["pads"][-1]:
            raise ValueError(f"HTTP 409: pad {pad} at {time} is held by another flyer; range slot {slot} is on "
                             f"{inp['pads'][-1]}")
        return json.dumps({"card": f"FC-{flyer}-{time.replace(':', '')}", "status": "filed"})

    rso = Agent(name="rso_reviewer", instructions="You are the range safety officer. Review stability. Answer JSON.",
                tools=[stability_check], model=common.agents_model("rocketry-rso"))
    return Agent(name="launch_officer", instructions="You prepare club launches and file flight cards.",
                 tools=[file_plan, get_rocket, get_motor, estimate_apogee, get_winds, check_waiver,
                        rso.as_tool(tool_name="ask_rso", tool_description="Ask the range safety officer to review a rocket."),
                        request_range_slot, submit_flight_card],
                 model=common.agents_model(MODEL))


def record(path: Path, inp: dict) -> None:
    prompt = (f"Member {inp['flyer']} wants to fly {inp['rocket']} on a {inp['motor']} at {FIELD['site']} "
              f"around {inp['time']}; pads offered {', '.join(inp['pads'])}.")
    common.run_agents(path, NAME, f"launch {inp['flyer']} {inp['rocket']}", _build(inp), prompt)
