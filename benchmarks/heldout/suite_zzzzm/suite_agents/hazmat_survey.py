"""Pre-demolition hazardous-materials survey closer (the OpenAI Agents SDK, recorded by TrajdebugProcessor).

The survey lead reads the site's sample register and room schedule (two calls at once), pulls the lab
results batch by batch (parallel calls), asks a regulations sub-agent (an agent run as a tool) whether
a notification to the regulator is needed or already lodged, then hands off to the estimator for the
survey's positives: the asbestos estimator prices the abatement lines and submits the scope, which
the client's scope register validates against the lab certificate and the survey.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, UserError, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from suite_agents._common import exchange


NAME = "hazmat-survey-closer"
ROUTE = "openai_agents"
DOMAIN = "pre-demolition asbestos survey close-out and abatement scope"
SHAPE = "lead agent: parallel register/schedule calls, parallel lab-batch calls, a regulations sub-agent run as a tool, hand-off to one of two estimator agents whose scope submission is validated"

SWITCH: str | None = None


def switched(name: str) -> bool:
    """Whether the case ``name`` is on (the only place SWITCH is read)."""
    return SWITCH == name


# site -> samples (id, room, material, batch); the lab's final certificate; room schedule quantities
SITES: dict[str, dict[str, Any]] = {
    "S-140": {"name": "Dock St warehouse 2", "certificate": "LC-2026-0141", "samples": [
        ("S-01", "G-01", "pipe lagging", "LB-1"), ("S-02", "G-01", "floor tiles", "LB-1"), ("S-03", "G-02", "roof sheeting", "LB-1"),
        ("S-04", "G-03", "textured coating", "LB-2"), ("S-05", "G-03", "floor tiles", "LB-2"), ("S-06", "G-04", "gasket", "LB-2")],
        "results": {"S-01": "amosite 5%", "S-02": "ND", "S-03": "chrysotile 8%", "S-04": "ND", "S-05": "ND", "S-06": "chrysotile 15%"},
        "quantities": {("G-01", "pipe lagging"): (42, "m"), ("G-02", "roof sheeting"): (610, "m2"), ("G-04", "gasket"): (6, "no")}},
    "S-104": {"name": "Dock St warehouse 1", "certificate": "LC-2026-0097", "samples": [], "results": {}, "quantities": {}},
    "S-212": {"name": "Mill Ln boiler house", "certificate": "LC-2026-0152", "samples": [
        ("S-01", "B-01", "boiler lagging", "LB-1"), ("S-02", "B-01", "rope seal", "LB-1"), ("S-03", "B-02", "floor tiles", "LB-1"),
        ("S-04", "B-02", "bitumen adhesive", "LB-2"), ("S-05", "B-03", "ceiling board", "LB-2")],
        "results": {"S-01": "amosite 20%", "S-02": "chrysotile 60%", "S-03": "chrysotile 2%", "S-04": "ND", "S-05": "ND"},
        "quantities": {("B-01", "boiler lagging"): (28, "m2"), ("B-01", "rope seal"): (4, "m"), ("B-02", "floor tiles"): (85, "m2")}},
    "S-318": {"name": "Harbour Rd school annexe", "certificate": "LC-2026-0163", "samples": [
        ("S-01", "C-01", "ceiling tiles", "LB-1"), ("S-02", "C-01", "floor tiles", "LB-1"), ("S-03", "C-02", "ceiling tiles", "LB-1"),
        ("S-04", "C-02", "window putty", "LB-1"), ("S-05", "C-03", "AIB panel", "LB-2"), ("S-06", "C-03", "floor tiles", "LB-2"),
        ("S-07", "C-04", "toilet cistern", "LB-2"), ("S-08", "C-04", "pipe lagging", "LB-2"), ("S-09", "C-05", "AIB panel", "LB-3"),
        ("S-10", "C-05", "textured coating", "LB-3")],
        "results": {"S-01": "ND", "S-02": "chrysotile 3%", "S-03": "ND", "S-04": "chrysotile 2%", "S-05": "amosite 25%", "S-06": "ND",
                    "S-07": "ND", "S-08": "amosite 10%", "S-09": "amosite 30%", "S-10": "chrysotile 1%"},
        "quantities": {("C-01", "floor tiles"): (64, "m2"), ("C-02", "window putty"): (18, "m"), ("C-03", "AIB panel"): (22, "m2"),
                       ("C-04", "pipe lagging"): (16, "m"), ("C-05", "AIB panel"): (14, "m2"), ("C-05", "textured coating"): (48, "m2")}},
    "S-425": {"name": "Quay Rd printworks", "certificate": "LC-2026-0170", "samples": [
        ("S-01", "P-01", "lead-sheathed cable wrap", "LB-1"), ("S-02", "P-01", "floor tiles", "LB-1"), ("S-03", "P-02", "roof sheeting", "LB-1"),
        ("S-04", "P-02", "gutter", "LB-2"), ("S-05", "P-03", "pipe lagging", "LB-2")],
        "results": {"S-01": "chrysotile 4%", "S-02": "ND", "S-03": "chrysotile 10%", "S-04": "chrysotile 12%", "S-05": "ND"},
        "quantities": {("P-01", "lead-sheathed cable wrap"): (30, "m"), ("P-02", "roof sheeting"): (940, "m2"), ("P-02", "gutter"): (55, "m")}},
    "S-507": {"name": "Elm St clinic wing", "certificate": "LC-2026-0178", "samples": [
        ("S-01", "E-01", "vinyl floor", "LB-1"), ("S-02", "E-01", "ceiling tiles", "LB-1"), ("S-03", "E-02", "pipe lagging", "LB-1"),
        ("S-04", "E-02", "fire door core", "LB-2"), ("S-05", "E-03", "fire door core", "LB-2"), ("S-06", "E-03", "duct gasket", "LB-2")],
        "results": {"S-01": "ND", "S-02": "ND", "S-03": "amosite 15%", "S-04": "ND", "S-05": "chrysotile 30%", "S-06": "chrysotile 5%"},
        "quantities": {("E-02", "pipe lagging"): (26, "m"), ("E-03", "fire door core"): (2, "no"), ("E-03", "duct gasket"): (12, "no")}},
}
NOTIFICATIONS = {"S-104": {"ref": "N-2291", "lodged": "2026-02-20", "site": "S-104", "name": "Dock St warehouse 1"},
                 "S-212": {"ref": "N-2315", "lodged": "2026-03-02", "site": "S-212", "name": "Mill Ln boiler house"}}
FRIABLE = ("lagging", "AIB", "rope seal", "coating", "fire door core")
RATES = {"friable": 185.0, "non-friable": 42.0}
PAGE = 8
_lab_flaky = {"left": 0}

INPUTS = [
    {"key": "dock-2", "site": "S-140", "task": "close hazmat survey S-140 Dock St warehouse 2", "lab_busy": 0},
    {"key": "mill-boiler", "site": "S-212", "task": "close hazmat survey S-212 Mill Ln boiler house", "lab_busy": 0},
    {"key": "harbour-annexe", "site": "S-318", "task": "close hazmat survey S-318 Harbour Rd school annexe", "lab_busy": 0},
    {"key": "quay-print", "site": "S-425", "task": "close hazmat survey S-425 Quay Rd printworks", "lab_busy": 0},
    {"key": "elm-clinic", "site": "S-507", "task": "close hazmat survey S-507 Elm St clinic wing", "lab_busy": 1},
]

CASES = [
    {
        "case": "zzzzm_hazmat_neighbour_site", "input": "dock-2", "switch": "neighbour_site", "fault_kind": "subagent_wrong_entity",
        "root": {"name": "response", "occurrence": 4, "kind": "llm"},
        "failure": {"name": "submit_scope", "occurrence": 1},
        "description": "The regulations sub-agent looks up notifications for S-104 (Dock St warehouse 1) instead of S-140, reports N-2291 as already lodged, and the scope register refuses a notification that belongs to another site.",
    },
    {
        "case": "zzzzm_hazmat_tile_area", "input": "mill-boiler", "switch": "tile_area", "fault_kind": "hallucinated_value",
        "root": {"name": "response", "occurrence": 8, "kind": "llm"},
        "failure": {"name": "submit_scope", "occurrence": 1},
        "description": "The estimator submits the B-02 floor tiles as 120 m2, a quantity no tool gave it (the room schedule says 85 m2), and the scope register rejects the line.",
    },
    {
        "case": "zzzzm_hazmat_register_page", "input": "harbour-annexe", "switch": "first_page", "fault_kind": "truncated_result",
        "root": {"name": "sample_register", "occurrence": 1, "kind": "tool"},
        "failure": {"name": "submit_scope", "occurrence": 1},
        "description": "The sample register returns only its first page (8 of 10 samples), so batch LB-3 is never pulled and the scope register finds S-09 and S-10 on the chain of custody without a disposition.",
    },
    {
        "case": "zzzzm_hazmat_lead_estimator", "input": "quay-print", "switch": "lead_keyword", "fault_kind": "wrong_routing",
        "root": {"name": "response", "occurrence": 6, "kind": "llm"},
        "failure": {"name": "submit_scope", "occurrence": 1},
        "description": "Reading 'lead-sheathed cable wrap' in the register, the survey lead hands off to the lead-paint estimator instead of the asbestos estimator, whose lead-paint scope the register refuses for a survey with asbestos positives.",
    },
    {
        "case": "zzzzm_hazmat_busy_batch", "input": "elm-clinic", "switch": "busy_as_nd", "fault_kind": "swallowed_error",
        "root": {"name": "lab_results", "occurrence": 2, "kind": "tool"}, "root_has": "LB-2",
        "failure": {"name": "submit_scope", "occurrence": 1},
        "description": "When the lab portal answers 'busy' for batch LB-2, the results tool reports the batch's samples as ND instead of asking again, so S-05 and S-06 get no abatement line and the register finds S-05 positive on the lab certificate.",
    },
]


# -- tools ----------------------------------------------------------------------------------------

@function_tool
def sample_register(site_id: str) -> str:
    """The survey's bulk samples for a site: id, room, material and lab batch."""
    rows = [{"sample": s, "room": r, "material": m, "batch": b} for s, r, m, b in SITES[site_id]["samples"]]
    pages = [rows[i:i + PAGE] for i in range(0, len(rows), PAGE)] or [[]]
    got = pages[0] if switched("first_page") else [r for p in pages for r in p]
    return json.dumps({"site_id": site_id, "samples": got})


@function_tool
def room_schedule(site_id: str) -> str:
    """Measured quantities of the surveyed materials per room."""
    q = SITES[site_id]["quantities"]
    return json.dumps({"site_id": site_id, "name": SITES[site_id]["name"],
                       "rows": [{"room": r, "material": m, "quantity": v[0], "unit": v[1]} for (r, m), v in q.items()]})


class LabPortalBusy(Exception):
    pass


def _lab_portal(site_id: str, batch: str) -> dict:
    if _lab_flaky["left"] > 0 and batch == "LB-2":
        _lab_flaky["left"] -= 1
        raise LabPortalBusy(f"lab portal busy for {batch}, try again")
    site = SITES[site_id]
    ids = [s for s, _, _, b in site["samples"] if b == batch]
    return {"batch": batch, "certificate": site["certificate"], "results": {s: site["results"][s] for s in ids}}


@function_tool
def lab_results(site_id: str, batch: str) -> str:
    """The lab's results for one batch of samples."""
    try:
        out = _lab_portal(site_id, batch)
    except LabPortalBusy:
        if switched("busy_as_nd"):
            ids = [s for s, _, _, b in SITES[site_id]["samples"] if b == batch]
            out = {"batch": batch, "certificate": SITES[site_id]["certificate"], "results": {s: "ND" for s in ids}}
        else:
            out = _lab_portal(site_id, batch)
    return json.dumps(out)


@function_tool
def notification_register(site_id: str) -> str:
    """Notifications of licensed asbestos work lodged with the regulator for a site."""
    n = NOTIFICATIONS.get(site_id)
    return json.dumps({"site_id": site_id, "notifications": [n] if n else []})


@function_tool
def abatement_rates(materials: list[str]) -> str:
    """Unit rates for removing materials (friable or not)."""
    return json.dumps({m: {"class": _cls(m), "rate": RATES[_cls(m)]} for m in materials})


@function_tool
def xrf_readings(site_id: str) -> str:
    """Lead paint XRF readings on the site."""
    return json.dumps({"site_id": site_id, "readings": []})


class ScopeLine(BaseModel):
    room: str
    material: str
    sample: str
    quantity: float
    unit: str
    method: str


class SampleResult(BaseModel):
    sample: str
    result: str


class ScopeRejected(Exception):
    pass


@function_tool(failure_error_function=None)
def submit_scope(site_id: str, scope_type: str, lines: list[ScopeLine], results: list[SampleResult], notification: str) -> str:
    """Submit the abatement scope to the client's scope register."""
    site = SITES[site_id]
    results = {r.sample: r.result for r in results}
    coc = {s for s, *_ in site["samples"]}
    missing = sorted(coc - set(results))
    if missing:
        raise ScopeRejected(f"chain of custody for {site_id} lists {len(coc)} samples; {', '.join(missing)} have no disposition in the scope")
    for s, r in sorted(results.items()):
        if r != site["results"][s]:
            raise ScopeRejected(f"{s} is reported '{r}' in the scope; certificate {site['certificate']} gives '{site['results'][s]}'")
    positives = [s for s, r in site["results"].items() if r != "ND"]
    if scope_type != "asbestos" and positives:
        raise ScopeRejected(f"a {scope_type} scope cannot close {site_id}: asbestos positives {', '.join(positives)} have no abatement line")
    for line in lines:
        want = site["quantities"].get((line.room, line.material))
        if want is None or want[0] != line.quantity:
            raise ScopeRejected(f"line {line.room} {line.material} {line.quantity:g} {line.unit}: the survey measured "
                                f"{want[0] if want else 'nothing'} {want[1] if want else ''}".rstrip())
    if notification.startswith("N-"):
        owner = next((k for k, n in NOTIFICATIONS.items() if n["ref"] == notification), None)
        if owner != site_id:
            raise ScopeRejected(f"notification {notification} belongs to {owner} ({SITES[owner]['name']}), not {site_id}")
    return json.dumps({"scope": f"SC-{site_id}", "lines": len(lines), "status": "accepted"})


def _listed(results: dict[str, str]) -> list[dict]:
    return [{"sample": k, "result": v} for k, v in sorted(results.items())]


def _cls(material: str) -> str:
    return "friable" if any(f in material for f in FRIABLE) else "non-friable"


# -- agents ---------------------------------------------------------------------------------------

LEAD_INSTRUCTIONS = ("You are the survey lead closing a pre-demolition hazardous materials survey. Read the sample "
                     "register and room schedule, pull the lab results for every batch, ask regs_check about the "
                     "regulator notification, then hand off to the estimator for the survey's positives.")
REGS_INSTRUCTIONS = ("You check regulator notifications for licensed asbestos work. Look the site up in the "
                     "notification register and answer JSON {site_id, required, lodged}.")
ASB_INSTRUCTIONS = ("You are the asbestos abatement estimator. Get the rates for the positive materials, submit the "
                    "scope (one line per positive room and material, every sample's result, the notification), then "
                    "report the scope number.")
LEAD_PAINT_INSTRUCTIONS = ("You are the lead paint estimator. Get the XRF readings, submit the lead paint scope, then "
                           "report the scope number.")

_agents: dict[str, Agent] = {}
_processor: TrajdebugProcessor | None = None


def setup(env: dict) -> None:
    server = env["server"]
    set_default_openai_client(AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0))
    set_default_openai_api("responses")
    model = server.model
    asb = Agent(name="asbestos_estimator", instructions=ASB_INSTRUCTIONS, model=model, tools=[abatement_rates, submit_scope])
    lead_paint = Agent(name="lead_paint_estimator", instructions=LEAD_PAINT_INSTRUCTIONS, model=model, tools=[xrf_readings, submit_scope])
    regs = Agent(name="regs_checker", instructions=REGS_INSTRUCTIONS, model=model, tools=[notification_register])
    lead = Agent(name="survey_lead", instructions=LEAD_INSTRUCTIONS, model=model,
                 tools=[sample_register, room_schedule, lab_results,
                        regs.as_tool("regs_check", "Whether a notification is needed for a site and whether one is lodged.")],
                 handoffs=[asb, lead_paint])
    _agents["lead"] = lead


def teardown(env: dict) -> None:
    set_trace_processors([])


def record(inp: dict, dest: Path, env: dict) -> None:
    _lab_flaky["left"] = inp["lab_busy"]
    set_trace_processors([TrajdebugProcessor(path=str(dest), name=NAME)])
    try:
        env["loop"].run_until_complete(Runner.run(
            _agents["lead"], f"Close the hazardous materials survey for site {inp['site']} ({SITES[inp['site']]['name']}).",
            run_config=RunConfig(workflow_name=NAME, trace_metadata={"task": inp["task"]}), max_turns=12))
    except UserError as exc:  # a tool that raised: the run's failure is in the trace
        if not isinstance(exc.__cause__, ScopeRejected):
            raise
    finally:
        set_trace_processors([])


# -- the model ------------------------------------------------------------------------------------

def brain(request) -> Any:
    instructions, user, answered = exchange(request.body)
    outs: dict[str, list] = {}
    for name, _, value in answered:
        outs.setdefault(name, []).append(value)
    if instructions == REGS_INSTRUCTIONS:
        ask = json.loads(user)
        if "notification_register" not in outs:
            site = ask["site_id"]
            if switched("neighbour_site"):
                site = "S-104"  # the other Dock St warehouse
            return Reply(tool_calls=(tool_call("notification_register", {"site_id": site}),))
        reg = outs["notification_register"][-1]
        lodged = reg["notifications"][0]["ref"] if reg["notifications"] else None
        return json.dumps({"site_id": reg["site_id"], "required": ask["friable_positives"] > 0, "lodged": lodged})
    site_id = user.split("site ")[1].split(" ")[0]
    if instructions == LEAD_INSTRUCTIONS:
        if "sample_register" not in outs:
            return Reply(tool_calls=(tool_call("sample_register", {"site_id": site_id}),
                                     tool_call("room_schedule", {"site_id": site_id})))
        samples = outs["sample_register"][-1]["samples"]
        if "lab_results" not in outs:
            batches = sorted({s["batch"] for s in samples})
            return Reply(tool_calls=tuple(tool_call("lab_results", {"site_id": site_id, "batch": b}) for b in batches))
        results = {k: v for r in outs["lab_results"] for k, v in r["results"].items()}
        friable = sum(1 for s in samples if results.get(s["sample"], "ND") != "ND" and _cls(s["material"]) == "friable")
        if "regs_check" not in outs:
            return Reply(tool_calls=(tool_call("regs_check", {"input": json.dumps({"site_id": site_id, "friable_positives": friable})}),))
        lead_words = any("lead" in s["material"] for s in samples)
        target = "transfer_to_lead_paint_estimator" if (lead_words and switched("lead_keyword")) else "transfer_to_asbestos_estimator"
        positives = [s["sample"] for s in samples if results.get(s["sample"], "ND") != "ND"]
        return Reply(text=f"Survey read: {len(samples)} samples, positives {', '.join(positives)}. Handing over for the scope.",
                     tool_calls=(tool_call(target, {}),))
    samples = outs["sample_register"][-1]["samples"]
    results = {k: v for r in outs["lab_results"] for k, v in r["results"].items()}
    regs = outs["regs_check"][-1]
    notification = regs["lodged"] or ("required: to lodge before works" if regs["required"] else "not required")
    if instructions == LEAD_PAINT_INSTRUCTIONS:
        if "xrf_readings" not in outs:
            return Reply(tool_calls=(tool_call("xrf_readings", {"site_id": site_id}),))
        if "submit_scope" not in outs:
            return Reply(tool_calls=(tool_call("submit_scope", {"site_id": site_id, "scope_type": "lead paint", "lines": [],
                                                                "results": _listed(results), "notification": notification}),))
        return f"Lead paint scope {outs['submit_scope'][-1]['scope']} submitted."
    # the asbestos estimator
    positives = [s for s in samples if results.get(s["sample"], "ND") != "ND"]
    if "abatement_rates" not in outs:
        return Reply(tool_calls=(tool_call("abatement_rates", {"materials": sorted({s["material"] for s in positives})}),))
    if "submit_scope" not in outs:
        sched = {(r["room"], r["material"]): r for r in outs["room_schedule"][-1]["rows"]}
        lines, seen = [], set()
        for s in positives:
            key = (s["room"], s["material"])
            if key in seen or key not in sched:
                continue
            seen.add(key)
            qty = sched[key]["quantity"]
            if s["material"] == "floor tiles" and switched("tile_area"):
                qty = 120
            lines.append({"room": s["room"], "material": s["material"], "sample": s["sample"], "quantity": qty,
                          "unit": sched[key]["unit"], "method": "full enclosure" if _cls(s["material"]) == "friable" else "controlled removal"})
        return Reply(tool_calls=(tool_call("submit_scope", {"site_id": site_id, "scope_type": "asbestos", "lines": lines,
                                                            "results": _listed(results), "notification": notification}),))
    return f"Scope {outs['submit_scope'][-1]['scope']} accepted with {outs['submit_scope'][-1]['lines']} lines."
