"""Trade show booth allocation (OpenAI Agents SDK): a floor allocator reads the application, keeps notes,
lists free booths, checks fire rules, asks a pricing clerk (an agent used as a tool) and allocates."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agents import Agent, ModelSettings, UserError, function_tool, set_trace_processors
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case, first_user, history, oa_model, oa_run, system_text
from .kit import active

AGENT = "booth_alloc"
ROUTE = "openai_agents"
DOMAIN = "trade show booth allocation"
SYSTEM = "[expo-floor] trade show floor desk"

APPS = {
    "AP-3101": {"exhibitor": "Forno Bistro Kit", "hall": "B", "area_m2": 18, "corner": True, "power_kw": 13,
                "exhibit": "open flame cooking demo"},
    "AP-3150": {"exhibitor": "Nordic Bikes", "hall": "C", "area_m2": 18, "corner": False, "power_kw": 4,
                "exhibit": "static display"},
    "AP-3160": {"exhibitor": "Lumen Signs", "hall": "A", "area_m2": 9, "corner": False, "power_kw": 8,
                "exhibit": "LED wall"},
    "AP-3172": {"exhibitor": "Pico Coffee", "hall": "B", "area_m2": 12, "corner": False, "power_kw": 6,
                "exhibit": "espresso bar"},
    "AP-3188": {"exhibitor": "Terra Tiles", "hall": "C", "area_m2": 24, "corner": True, "power_kw": 2,
                "exhibit": "static display"},
    "AP-3195": {"exhibitor": "Smokehouse Pro", "hall": "A", "area_m2": 12, "corner": True, "power_kw": 10,
                "exhibit": "open flame cooking demo"},
}
BOOTHS = [
    {"booth": "A-02", "hall": "A", "area_m2": 9, "corner": False, "power_kw": 10},
    {"booth": "A-04", "hall": "A", "area_m2": 12, "corner": True, "power_kw": 16},
    {"booth": "B-01", "hall": "B", "area_m2": 12, "corner": False, "power_kw": 6},
    {"booth": "B-02", "hall": "B", "area_m2": 18, "corner": False, "power_kw": 16},
    {"booth": "B-03", "hall": "B", "area_m2": 18, "corner": True, "power_kw": 10},
    {"booth": "B-05", "hall": "B", "area_m2": 18, "corner": True, "power_kw": 16},
    {"booth": "C-12", "hall": "C", "area_m2": 24, "corner": False, "power_kw": 6},
    {"booth": "C-14", "hall": "C", "area_m2": 24, "corner": True, "power_kw": 6},
]
RATES = {"A": 240, "B": 210, "C": 180}
PERMITS = {"AP-3101": "FP-2231", "AP-3195": "FP-2240"}
INPUTS = {k: f"Allocate a booth for application {k}." for k in APPS}
REFS = ["AP-3160", "AP-3172", "AP-3188", "AP-3195"]

CASES = [
    Case("ba_mem", AGENT, "bad_memory_write", "save_note", 1, "allocate_booth",
         "save_note stored the 13 kW power need rounded to a 10 kW bucket", "AP-3101"),
    Case("ba_fire", AGENT, "swallowed_error", "check_fire_rules", 1, "allocate_booth",
         "check_fire_rules caught the fire-code service timeout and answered approved with no permit", "AP-3101"),
    Case("ba_ign", AGENT, "tool_ignores_argument", "list_free_booths", 1, "allocate_booth",
         "list_free_booths ignored corner=true and listed a non-corner booth first", "AP-3101"),
    Case("ba_args", AGENT, "wrong_tool_args", "generation desk-model", 9, "allocate_booth",
         "the allocator passed the requested area instead of the chosen booth's area", "AP-3150"),
    Case("ba_fmt", AGENT, "format_drift", "rate_card", 1, "allocate_booth",
         "rate_card answered the rate as a comma-decimal text and the clerk read 210,00 as 21000", "AP-3150"),
]


class VenueError(Exception):
    pass


NOTES: dict[str, str] = {}
_fire_calls = {"n": 0}


@function_tool
def get_application(app_id: str) -> str:
    """An exhibitor's booth application."""
    return json.dumps({"app_id": app_id, **APPS[app_id]})


@function_tool
def save_note(key: str, value: str) -> str:
    """Write a note to the allocation memory."""
    stored = value
    if active("ba_mem") and key == "power_kw":
        stored = str(int(round(float(value), -1)))
    NOTES[key] = stored
    return json.dumps({"saved": key})


@function_tool
def recall_note(key: str) -> str:
    """Read a note back from the allocation memory."""
    return json.dumps({"key": key, "value": NOTES.get(key)})


@function_tool
def list_free_booths(hall: str, min_area_m2: int, corner: bool) -> str:
    """Free booths in a hall with at least an area, corner or not."""
    rows = [b for b in BOOTHS if b["hall"] == hall and b["area_m2"] >= min_area_m2]
    if not active("ba_ign"):
        rows = [b for b in rows if b["corner"] == corner]
    return json.dumps({"hall": hall, "booths": rows})


def _fire_code_backend(booth: str, exhibit: str) -> dict:
    _fire_calls["n"] += 1
    if "flame" in exhibit and _fire_calls["n"] == 1:
        raise TimeoutError("fire-code service did not answer in 5 s")
    return {"booth": booth, "approved": True, "conditions": ["extinguisher on stand"]}


@function_tool
def check_fire_rules(app_id: str, booth: str, exhibit: str) -> str:
    """Ask the fire-code service whether an exhibit may run on a booth; returns the permit."""
    try:
        res = _fire_code_backend(booth, exhibit)
    except TimeoutError:
        if active("ba_fire"):
            return json.dumps({"booth": booth, "approved": True, "permit": None})
        res = _fire_code_backend(booth, exhibit)
    return json.dumps({**res, "permit": PERMITS.get(app_id)})


@function_tool
def rate_card(hall: str) -> str:
    """The organiser's stand rate for a hall."""
    if active("ba_fmt"):
        return json.dumps({"hall": hall, "rate": f"{RATES[hall]},00 EUR/m2"})
    return json.dumps({"hall": hall, "rate_eur_m2": RATES[hall]})


@function_tool(failure_error_function=None)
def allocate_booth(app_id: str, booth: str, area_m2: int, price_eur: float, fire_permit: str) -> str:
    """Allocate a booth to an application in the venue system."""
    app = APPS[app_id]
    b = next(x for x in BOOTHS if x["booth"] == booth)
    if area_m2 != b["area_m2"]:
        raise VenueError(f"HTTP 422 venue API: area {area_m2} m2 given for booth {booth}, which is {b['area_m2']} m2")
    if app["corner"] and not b["corner"]:
        raise VenueError(f"HTTP 422 venue API: booth {booth} is not a corner booth; {app_id} requires one")
    if b["power_kw"] < app["power_kw"]:
        raise VenueError(f"HTTP 422 venue API: booth {booth} supplies {b['power_kw']} kW; {app_id} needs "
                         f"{app['power_kw']} kW")
    if "flame" in app["exhibit"] and not fire_permit:
        raise VenueError(f"HTTP 409 venue API: open flame exhibit on {booth} needs a fire permit number")
    expected = RATES[b["hall"]] * b["area_m2"]
    if abs(price_eur - expected) > 1:
        raise VenueError(f"HTTP 422 venue API: price {price_eur:,.2f} EUR does not match the rate card "
                         f"({expected:,.2f} EUR for {b['area_m2']} m2 in hall {b['hall']})")
    return json.dumps({"allocation": f"AL-{app_id[3:]}-{booth}", "status": "confirmed"})


def policy(body: dict) -> Reply | str:
    sys = system_text(body)
    done = history(body)
    res = {n: r for n, _, r in done}
    if "Pricing Clerk" in sys:
        if "rate_card" not in res:
            hall = re.search(r"hall (\w)", first_user(body)).group(1)
            return Reply(tool_calls=(tool_call("rate_card", {"hall": hall}),))
        card = json.loads(res["rate_card"])
        rate = card.get("rate_eur_m2")
        if rate is None:
            rate = float(re.sub(r"[^\d]", "", card["rate"].split()[0]))
        area = int(re.search(r"(\d+) m2", first_user(body)).group(1))
        return json.dumps({"price_eur": rate * area})
    app_id = re.search(r"AP-\d+", first_user(body)).group(0)
    if "get_application" not in res:
        return Reply(tool_calls=(tool_call("get_application", {"app_id": app_id}),))
    app = json.loads(res["get_application"])
    if "save_note" not in res:
        return Reply(tool_calls=(tool_call("save_note", {"key": "power_kw", "value": str(app["power_kw"])}),))
    if "list_free_booths" not in res:
        return Reply(tool_calls=(tool_call("list_free_booths", {"hall": app["hall"], "min_area_m2": app["area_m2"],
                                                                 "corner": app["corner"]}),))
    if "recall_note" not in res:
        return Reply(tool_calls=(tool_call("recall_note", {"key": "power_kw"}),))
    need = float(json.loads(res["recall_note"])["value"])
    booth = next(b for b in json.loads(res["list_free_booths"])["booths"] if b["power_kw"] >= need)
    if "check_fire_rules" not in res:
        return Reply(tool_calls=(tool_call("check_fire_rules", {"app_id": app_id, "booth": booth["booth"],
                                                                 "exhibit": app["exhibit"]}),))
    if "pricing_clerk" not in res:
        ask = f"Price booth {booth['booth']} of {booth['area_m2']} m2 in hall {booth['hall']}."
        return Reply(tool_calls=(tool_call("pricing_clerk", {"input": ask}),))
    if "allocate_booth" not in res:
        fire = json.loads(res["check_fire_rules"])
        area = app["area_m2"] if active("ba_args") else booth["area_m2"]
        return Reply(tool_calls=(tool_call("allocate_booth", {
            "app_id": app_id, "booth": booth["booth"], "area_m2": area,
            "price_eur": json.loads(res["pricing_clerk"])["price_eur"], "fire_permit": fire["permit"] or ""}),))
    return f"Allocated: {json.loads(res['allocate_booth'])['allocation']}."


def build(client: object) -> Agent:
    model = oa_model(client)
    settings = ModelSettings(parallel_tool_calls=False)
    clerk = Agent(name="Pricing Clerk", instructions=f"{SYSTEM}. Pricing Clerk: price a stand from the rate card.",
                  tools=[rate_card], model=model, model_settings=settings)
    return Agent(name="Floor Allocator", instructions=f"{SYSTEM}. Floor Allocator: allocate one booth.",
                 tools=[get_application, save_note, recall_note, list_free_booths, check_fire_rules,
                        clerk.as_tool(tool_name="pricing_clerk", tool_description="Ask the pricing clerk."),
                        allocate_booth], model=model, model_settings=settings)


def record(key: str, out: Path, base_url: str) -> None:
    NOTES.clear()
    _fire_calls["n"] = 0
    proc = TrajdebugProcessor(path=str(out), name="booth-allocator", task=INPUTS[key])
    set_trace_processors([proc])
    try:
        oa_run(build, INPUTS[key], base_url, "booth-allocator")
    except UserError as exc:
        if not isinstance(exc.__cause__, VenueError):
            raise
