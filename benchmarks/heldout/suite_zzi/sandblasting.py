"""Sandblasting contractor: an abrasive-blasting firm's quoting agent (OpenAI Agents SDK route: `Agent`
+ `Runner` + function tools against the fake server's Chat Completions endpoint, recorded with
trajdebug's tracing processor).

The quoting agent loads the job, reads the current rate sheet, asks a surface-estimator sub-agent
(run as a tool: coating survey, abrasive spec) about each surface, asks the containment rules for
the site, and submits the quote through a tool that checks it against the firm's rules and the
regulations before it is sent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import kit
from _shared import Case, messages, money, system_text, tool_outputs, user_text
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from agents.exceptions import UserError
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call


AGENT = "blast-quote"
ROUTE = "openai_agents"
DOMAIN = "sandblasting contractor"
EXT = "jsonl"
SHAPE = (
    "Agent+Runner (Chat Completions): get_job -> current_rates -> surface_estimator sub-agent per surface "
    "(as_tool: coating_survey, re-asked after a transient error, abrasive_spec, model estimate) -> containment_rules -> submit_quote (validator tool)"
)
MODEL = "gpt-4o-mini"

SPEC = {  # (substrate, standard) -> abrasive, kg/m2, m2/h
    ("structural steel", "Sa 2"): ("garnet 30/60", 22.0, 12.0),
    ("structural steel", "Sa 2.5"): ("garnet 30/60", 28.0, 9.0),
    ("structural steel", "Sa 3"): ("garnet 30/60", 34.0, 6.5),
    ("cast iron", "Sa 2"): ("crushed glass", 18.0, 10.0),
    ("cast iron", "Sa 2.5"): ("crushed glass", 24.0, 7.5),
    ("cast iron", "Sa 3"): ("crushed glass", 30.0, 5.5),
}
ABRASIVE_PRICE = {"garnet 30/60": "garnet_kg", "crushed glass": "glass_kg"}
RATES_LIVE = {
    "as_of": "2025-03-01",
    "crew_hour": 92.0,
    "garnet_kg": 0.62,
    "glass_kg": 0.31,
    "disposal_t": 210.0,
    "hazardous_disposal_t": 620.0,
    "mobilisation": 450.0,
}
RATES_2024 = {
    "as_of": "2024-04-01",
    "crew_hour": 86.0,
    "garnet_kg": 0.55,
    "glass_kg": 0.29,
    "disposal_t": 195.0,
    "hazardous_disposal_t": 560.0,
    "mobilisation": 420.0,
}
SURCHARGE = {
    "sheeting": 2.5,
    "dust sheeting": 4.0,
    "netting and boom": 6.5,
    "full enclosure": 14.0,
    "negative-pressure enclosure": 19.0,
    "full enclosure with netting and boom": 18.0,
}
LEAD_LIMIT = 1000
VAT = 0.20


def _containment(lead_ppm: int, setting: str) -> str:
    lead = lead_ppm >= LEAD_LIMIT
    if setting == "over water":
        return "full enclosure with netting and boom" if lead else "netting and boom"
    if setting == "occupied building":
        return "negative-pressure enclosure" if lead else "dust sheeting"
    return "full enclosure" if lead else "sheeting"


JOBS: dict[str, dict[str, Any]] = {
    "SB-7101": {
        "customer": "Network Rail (Western)",
        "site": "Kennet Bridge, Reading",
        "setting": "yard",
        "standard": "Sa 2.5",
        "surfaces": [
            ("S1", "plate girder webs", "structural steel", 86.0, "alkyd", 240, 320),
            ("S2", "bearing stiffeners", "structural steel", 24.0, "alkyd", 260, 410),
            ("S3", "cross girders", "structural steel", 112.0, "alkyd", 220, 280),
        ],
    },
    "SB-7102": {
        "customer": "Canal & River Trust",
        "site": "Osney swing bridge",
        "setting": "over water",
        "standard": "Sa 2.5",
        "surfaces": [
            ("S1", "deck stringers", "structural steel", 64.0, "red lead primer + gloss", 300, 7400),
            ("S2", "cast balustrade", "cast iron", 38.0, "bitumen paint", 180, 90),
        ],
    },
    "SB-7103": {
        "customer": "Hartwell Engineering",
        "site": "Unit 4, Witney works",
        "setting": "yard",
        "standard": "Sa 3",
        "surfaces": [
            ("S1", "pressure vessel shell", "structural steel", 58.0, "epoxy", 350, 15),
            ("S2", "skid frame", "structural steel", 22.0, "epoxy", 280, 20),
        ],
    },
    "SB-7104": {
        "customer": "Didcot Power Station demolition JV",
        "site": "Turbine hall gantry",
        "setting": "yard",
        "standard": "Sa 2",
        "surfaces": [
            ("S1", "gantry rails", "structural steel", 76.0, "chlorinated rubber", 200, 40),
            ("S2", "crane beam", "structural steel", 54.0, "red lead primer", 310, 4800),
            ("S3", "walkway grating supports", "structural steel", 30.0, "alkyd", 190, 120),
        ],
    },
    "SB-7105": {
        "customer": "Oxford Covered Market Trust",
        "site": "Covered Market roof trusses",
        "setting": "occupied building",
        "standard": "Sa 2.5",
        "surfaces": [
            ("S1", "north aisle trusses", "cast iron", 48.0, "oil paint", 260, 620),
            ("S2", "south aisle trusses", "cast iron", 52.0, "oil paint", 250, 540),
            ("S3", "lantern frame", "structural steel", 210.0, "alkyd", 210, 310),
        ],
    },
    "SB-7106": {
        "customer": "Bicester Village estates",
        "site": "Service yard canopy",
        "setting": "yard",
        "standard": "Sa 2.5",
        "surfaces": [
            ("S1", "canopy columns", "structural steel", 44.0, "alkyd", 230, 60),
            ("S2", "canopy rafters", "structural steel", 96.0, "alkyd", 210, 45),
        ],
    },
    "SB-7107": {
        "customer": "Thames Water",
        "site": "Farmoor intake screens",
        "setting": "over water",
        "standard": "Sa 3",
        "surfaces": [
            ("S1", "screen frames", "structural steel", 36.0, "coal tar epoxy", 420, 30),
            ("S2", "walkway", "structural steel", 28.0, "coal tar epoxy", 380, 25),
        ],
    },
    "SB-7108": {
        "customer": "Pitt Rivers Museum",
        "site": "Court gallery columns",
        "setting": "occupied building",
        "standard": "Sa 2",
        "surfaces": [
            ("S1", "gallery columns", "cast iron", 42.0, "lead paint", 280, 3900),
            ("S2", "balcony brackets", "cast iron", 16.0, "lead paint", 300, 4100),
        ],
    },
    "SB-7109": {
        "customer": "Abingdon Marina",
        "site": "Boat lift frame",
        "setting": "yard",
        "standard": "Sa 2.5",
        "surfaces": [
            ("S1", "lift frame", "structural steel", 70.0, "zinc phosphate + PU", 260, 35),
            ("S2", "winch housings", "cast iron", 12.0, "enamel", 150, 80),
            ("S3", "slipway rails", "structural steel", 40.0, "alkyd", 220, 210),
        ],
    },
}

CASES = [
    Case(
        "zzi-blast-1",
        "blast.rate_cache",
        "SB-7101",
        "stale_data",
        ("current_rates", 1, "tool"),
        ("submit_quote", 1),
        "The rate-sheet tool answers from its April 2024 copy, so the quote prices crew hours at 86.00 and "
        "garnet at 0.55 instead of the March 2025 sheet.",
    ),
    Case(
        "zzi-blast-2",
        "blast.setting_arg",
        "SB-7102",
        "wrong_tool_args",
        ("generation gpt-4o-mini", 11, "llm"),
        ("submit_quote", 1),
        "The quoting model asks the containment rules for a 'yard' setting on the Osney swing bridge, which "
        "stands over water, so the red-lead deck gets a plain enclosure with no netting and boom.",
    ),
    Case(
        "zzi-blast-3",
        "blast.spec_standard",
        "SB-7103",
        "tool_ignores_argument",
        ("abrasive_spec", 1, "tool"),
        ("submit_quote", 1),
        "The abrasive spec tool ignores the standard it is given and answers its Sa 2 row, so the Sa 3 "
        "pressure vessel is estimated at 22 kg/m2 of garnet instead of 34.",
    ),
    Case(
        "zzi-blast-4",
        "blast.survey_surface",
        "SB-7104",
        "subagent_wrong_entity",
        ("generation gpt-4o-mini", 8, "llm"),
        ("submit_quote", 1),
        "Asked about the crane beam S2, the estimator sub-agent surveys S1's coating instead, so the "
        "4,800 ppm red-lead primer is never seen and the job is quoted with sheeting.",
    ),
    Case(
        "zzi-blast-5",
        "blast.area_recall",
        "SB-7105",
        "hallucinated_value",
        ("generation gpt-4o-mini", 11, "llm"),
        ("submit_quote", 1),
        "The quoting model briefs the estimator on the lantern frame S3 as 120 m2, a figure the job record "
        "(210 m2) never gives, and the quote carries it.",
    ),
]
REFERENCE_INPUTS = ["SB-7106", "SB-7107", "SB-7108", "SB-7109"]


class QuoteRejected(ValueError):
    """The quote breaks the firm's rules or the regulations."""


def _surfaces(job_id: str) -> list[dict]:
    return [
        {"id": i, "description": d, "substrate": sub, "area_m2": a}
        for i, d, sub, a, _c, _dft, _pb in JOBS[job_id]["surfaces"]
    ]


def _survey(job_id: str, surface_id: str) -> dict:
    i, _d, _sub, _a, coating, dft, lead = next(s for s in JOBS[job_id]["surfaces"] if s[0] == surface_id)
    return {"surface_id": i, "coating": coating, "dft_microns": dft, "lead_ppm": lead}


# -- tools -----------------------------------------------------------------------------------------------------


@function_tool
def get_job(job_id: str) -> str:
    """Load a blasting job: customer, site, setting, target standard and surfaces."""
    job = JOBS[job_id]
    return json.dumps(
        {
            "job_id": job_id,
            "customer": job["customer"],
            "site": job["site"],
            "setting": job["setting"],
            "standard": job["standard"],
            "surfaces": _surfaces(job_id),
        }
    )


@function_tool
def current_rates() -> str:
    """The firm's current rate sheet (crew hour, abrasives per kg, disposal per tonne, mobilisation)."""
    sheet = RATES_2024 if kit.on("blast.rate_cache") else RATES_LIVE
    return json.dumps(sheet)


_survey_calls = {"n": 0, "flaky": False}


@function_tool
def coating_survey(job_id: str, surface_id: str) -> str:
    """The coating survey of one surface: coating, dry film thickness and lead content (XRF)."""
    _survey_calls["n"] += 1
    if _survey_calls["flaky"] and _survey_calls["n"] == 1:
        raise ConnectionError("XRF results service: connection reset by peer")
    return json.dumps(_survey(job_id, surface_id))


@function_tool
def abrasive_spec(substrate: str, standard: str) -> str:
    """Abrasive, consumption (kg/m2) and production rate (m2/h) for a substrate and cleanliness standard."""
    if kit.on("blast.spec_standard"):
        standard = "Sa 2"
    abrasive, kg_m2, m2_h = SPEC[(substrate, standard)]
    return json.dumps(
        {
            "substrate": substrate,
            "standard": standard,
            "abrasive": abrasive,
            "consumption_kg_m2": kg_m2,
            "production_m2_h": m2_h,
        }
    )


@function_tool
def containment_rules(lead_ppm: int, setting: str) -> str:
    """Containment class and surcharge for the highest lead reading on a site and its setting."""
    cls = _containment(lead_ppm, setting)
    return json.dumps(
        {
            "lead_ppm": lead_ppm,
            "setting": setting,
            "class": cls,
            "surcharge_m2": SURCHARGE[cls],
            "air_monitoring": lead_ppm >= LEAD_LIMIT,
            "hazardous_waste": lead_ppm >= LEAD_LIMIT,
        }
    )


def _check(quote: dict) -> None:
    job = JOBS[quote["job_id"]]
    truth = {s["id"]: s for s in _surfaces(quote["job_id"])}
    quoted = [ln["surface_id"] for ln in quote["lines"]]
    if sorted(quoted) != sorted(truth):
        raise QuoteRejected(f"quote covers surfaces {quoted}, job has {sorted(truth)}")
    for ln in quote["lines"]:
        s = truth[ln["surface_id"]]
        if abs(ln["area_m2"] - s["area_m2"]) > 0.05:
            raise QuoteRejected(
                f"{s['id']} ({s['description']}) quoted at {ln['area_m2']} m2, job record {s['area_m2']} m2"
            )
        _abr, kg_m2, _rate = SPEC[(s["substrate"], job["standard"])]
        if ln["abrasive_kg"] < s["area_m2"] * kg_m2 * 0.98:
            raise QuoteRejected(
                f"{s['id']}: {ln['abrasive_kg']:,.0f} kg abrasive for {s['area_m2']} m2 at "
                f"{job['standard']}; spec needs {s['area_m2'] * kg_m2:,.0f} kg ({kg_m2} kg/m2)"
            )
    worst = max(_survey(quote["job_id"], i)["lead_ppm"] for i in truth)
    need = _containment(worst, job["setting"])
    if quote["containment"]["class"] != need:
        raise QuoteRejected(
            f"{quote['job_id']} ({job['setting']}, highest lead {worst:,} ppm) needs {need}; "
            f"quote has {quote['containment']['class']}"
        )
    if (worst >= LEAD_LIMIT) != bool(quote["containment"]["hazardous_waste"]):
        raise QuoteRejected(
            f"hazardous waste flag {quote['containment']['hazardous_waste']} with lead {worst:,} ppm"
        )
    rates = quote["rates"]
    for key in ("crew_hour", "garnet_kg", "glass_kg", "disposal_t", "hazardous_disposal_t"):
        if abs(rates[key] - RATES_LIVE[key]) > 1e-9:
            raise QuoteRejected(
                f"{key} charged at {rates[key]:.2f}; current sheet ({RATES_LIVE['as_of']}) says "
                f"{RATES_LIVE[key]:.2f}"
            )
    subtotal = round(sum(ln["cost"] for ln in quote["lines"]) + quote["mobilisation"], 2)
    if (
        abs(subtotal - quote["subtotal"]) > 0.02
        or abs(quote["total"] - round(subtotal * (1 + VAT), 2)) > 0.02
    ):
        raise QuoteRejected(f"quote total {money(quote['total'])} does not add up from its lines")


@function_tool(failure_error_function=None)
def submit_quote(quote_json: str) -> str:
    """Submit the finished quote (JSON). It is checked against the firm's rules before it is sent."""
    quote = json.loads(quote_json)
    _check(quote)
    return json.dumps({"submitted": True, "reference": f"Q-{quote['job_id']}", "total": quote["total"]})


# -- the fake model -----------------------------------------------------------------------------------------------

EST_INSTRUCTIONS = (
    "You estimate one surface of a blasting job. Survey its coating, look up the abrasive spec for the substrate "
    "and the job's standard, then answer JSON: {surface_id, area_m2, substrate, standard, abrasive, abrasive_kg, "
    "hours, dft_microns, lead_ppm}."
)
MAIN_INSTRUCTIONS = (
    "You prepare blasting quotes. Load the job, read the current rates, have the surface_estimator estimate every "
    "surface, get the containment rules for the highest lead reading and the site's setting, then submit the quote "
    "with submit_quote."
)
_BRIEF = re.compile(
    r"job (?P<job>SB-\d+), surface (?P<sid>S\d+) \((?P<desc>[^)]*)\): (?P<sub>[a-z ]+), "
    r"(?P<area>[\d.]+) m2, standard (?P<std>Sa \d(?:\.\d)?)"
)


def _estimator_turn(msgs: list[dict]) -> Any:
    m = _BRIEF.search(user_text(msgs))
    job_id, sid = m["job"], m["sid"]
    outs = {n: o for n, o in tool_outputs(msgs) if isinstance(o, dict)}  # a failed call is asked again
    if "coating_survey" not in outs:
        target = sid
        if kit.on("blast.survey_surface") and sid == "S2":
            target = "S1"
        return Reply(tool_calls=(tool_call("coating_survey", {"job_id": job_id, "surface_id": target}),))
    if "abrasive_spec" not in outs:
        return Reply(tool_calls=(tool_call("abrasive_spec", {"substrate": m["sub"], "standard": m["std"]}),))
    survey, spec = outs["coating_survey"], outs["abrasive_spec"]
    area = float(m["area"])
    return json.dumps(
        {
            "surface_id": sid,
            "area_m2": area,
            "substrate": m["sub"],
            "standard": spec["standard"],
            "abrasive": spec["abrasive"],
            "abrasive_kg": round(area * spec["consumption_kg_m2"], 1),
            "hours": round(area / spec["production_m2_h"], 1),
            "dft_microns": survey["dft_microns"],
            "lead_ppm": survey["lead_ppm"],
        }
    )


def _main_turn(msgs: list[dict]) -> Any:
    job_id = re.search(r"SB-\d+", user_text(msgs)).group(0)
    outs = tool_outputs(msgs)
    got = dict(outs)
    if "get_job" not in got:
        return Reply(tool_calls=(tool_call("get_job", {"job_id": job_id}),))
    job = got["get_job"]
    if "current_rates" not in got:
        return Reply(tool_calls=(tool_call("current_rates", {}),))
    estimates = [o if isinstance(o, dict) else json.loads(o) for n, o in outs if n == "surface_estimator"]
    if len(estimates) < len(job["surfaces"]):
        s = job["surfaces"][len(estimates)]
        area = s["area_m2"]
        if kit.on("blast.area_recall") and s["id"] == "S3":
            area = 120.0
        brief = (
            f"Estimate job {job_id}, surface {s['id']} ({s['description']}): {s['substrate']}, {area:g} m2, "
            f"standard {job['standard']}."
        )
        return Reply(tool_calls=(tool_call("surface_estimator", {"input": brief}),))
    if "containment_rules" not in got:
        worst = max(e["lead_ppm"] for e in estimates)
        setting = job["setting"]
        if kit.on("blast.setting_arg"):
            setting = "yard"
        return Reply(tool_calls=(tool_call("containment_rules", {"lead_ppm": worst, "setting": setting}),))
    if "submit_quote" not in got:
        rates, cont = got["current_rates"], got["containment_rules"]
        lines = []
        for e in estimates:
            labour = round(e["hours"] * rates["crew_hour"], 2)
            abrasive = round(e["abrasive_kg"] * rates[ABRASIVE_PRICE[e["abrasive"]]], 2)
            contain = round(e["area_m2"] * cont["surcharge_m2"], 2)
            waste_t = e["abrasive_kg"] / 1000 + e["area_m2"] * e["dft_microns"] * 1.5e-6
            per_t = rates["hazardous_disposal_t"] if cont["hazardous_waste"] else rates["disposal_t"]
            disposal = round(waste_t * per_t, 2)
            lines.append(
                {
                    "surface_id": e["surface_id"],
                    "area_m2": e["area_m2"],
                    "abrasive": e["abrasive"],
                    "abrasive_kg": e["abrasive_kg"],
                    "hours": e["hours"],
                    "labour": labour,
                    "abrasive_cost": abrasive,
                    "containment": contain,
                    "disposal": disposal,
                    "cost": round(labour + abrasive + contain + disposal, 2),
                }
            )
        subtotal = round(sum(ln["cost"] for ln in lines) + rates["mobilisation"], 2)
        quote = {
            "job_id": job_id,
            "customer": job["customer"],
            "standard": job["standard"],
            "lines": lines,
            "containment": cont,
            "rates": rates,
            "mobilisation": rates["mobilisation"],
            "subtotal": subtotal,
            "vat": round(subtotal * VAT, 2),
            "total": round(subtotal * (1 + VAT), 2),
        }
        return Reply(tool_calls=(tool_call("submit_quote", {"quote_json": json.dumps(quote)}),))
    done = got["submit_quote"]
    return f"Quote {done['reference']} submitted: £{money(done['total'])} including VAT."


def policy(request):
    msgs = messages(request)
    system = system_text(msgs)
    if system.startswith("You estimate one surface"):
        return _estimator_turn(msgs)
    if system.startswith("You prepare blasting quotes"):
        return _main_turn(msgs)
    raise ValueError(f"unexpected prompt: {system[:60]}")


# -- one run --------------------------------------------------------------------------------------------------------


def record(job_id: str, out: Path, server: Any) -> None:
    """Run the quoting agent once on `job_id`, recording into the JSONL file `out`."""
    server.use(policy)
    _survey_calls.update(n=0, flaky=job_id in ("SB-7103", "SB-7106", "SB-7109"))
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
    estimator = Agent(
        name="surface_estimator_agent",
        instructions=EST_INSTRUCTIONS,
        model=model,
        tools=[coating_survey, abrasive_spec],
    )
    agent = Agent(
        name="blast_quoter",
        instructions=MAIN_INSTRUCTIONS,
        model=model,
        tools=[
            get_job,
            current_rates,
            estimator.as_tool(
                tool_name="surface_estimator",
                tool_description="Estimate one surface: give the job, surface, substrate, area and standard.",
            ),
            containment_rules,
            submit_quote,
        ],
    )
    processor = TrajdebugProcessor(path=out, name=AGENT, task=f"quote blasting job {job_id}")
    set_trace_processors([processor])
    try:
        Runner.run_sync(
            agent,
            f"Prepare the quote for job {job_id} ({JOBS[job_id]['customer']}).",
            max_turns=20,
            run_config=RunConfig(workflow_name=AGENT),
        )
    except UserError as exc:  # the submit tool's rejection ends the run
        if not isinstance(exc.__cause__, QuoteRejected):
            raise
