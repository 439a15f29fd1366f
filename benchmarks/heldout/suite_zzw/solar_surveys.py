"""A solar panel installer's survey desk: for each surveyed roof, design a layout with a sub-agent, estimate
the yield, price the quote and check it before it goes to the customer."""

import json

import kit

NAME = "solar-surveys"
ROUTE = "openai_agents"
DOMAIN = "a solar panel installer's surveys"
SHAPE = ("Agents SDK: survey desk agent -> job list -> per roof (survey tool, layout designer sub-agent as tool "
         "with its own catalogue tool, yield tool) -> price tool -> validator tool")
RESPONSE_NAME = "response"
MAIN_INSTRUCTIONS = "You run the survey desk of a solar installer. Use the tools in order."
SUB_INSTRUCTIONS = "You design panel layouts for one surveyed roof."

ROOFS = {
    "SV-13": {"address": "4 Mill Lane", "area_m2": 22.0, "orientation": "S", "pitch": 35},
    "SV-31": {"address": "31 Quarry Road", "area_m2": 14.0, "orientation": "SW", "pitch": 30},
    "SV-22": {"address": "Elm Cottage", "area_m2": 30.0, "orientation": "SE", "pitch": 40},
    "SV-40": {"address": "2 Church Row", "area_m2": 18.0, "orientation": "W", "pitch": 25},
    "SV-57": {"address": "The Old Forge", "area_m2": 26.0, "orientation": "S", "pitch": 30},
    "SV-75": {"address": "75 Station Road", "area_m2": 12.0, "orientation": "E", "pitch": 20},
}
PANEL_M2 = 1.95
PANEL_KWP = 0.43
YIELD = {"S": 950, "SE": 900, "SW": 900, "E": 800, "W": 800}  # kWh per kWp per year
PRICE_PER_PANEL = 310
FIXED = 1450

INPUTS = {
    "d1": {"date": "2026-12-07", "jobs": ["SV-13", "SV-31", "SV-22"]},
    "d2": {"date": "2026-12-08", "jobs": ["SV-40", "SV-57"]},
    "d3": {"date": "2026-12-09", "jobs": ["SV-22", "SV-75", "SV-13"]},
    "d4": {"date": "2026-12-10", "jobs": ["SV-57", "SV-31", "SV-40"]},
    "d5": {"date": "2026-12-11", "jobs": ["SV-13", "SV-57"]},
    "d6": {"date": "2026-12-12", "jobs": ["SV-75", "SV-22"]},
    "d7": {"date": "2026-12-13", "jobs": ["SV-31", "SV-13", "SV-40"]},
    "d8": {"date": "2026-12-14", "jobs": ["SV-40", "SV-22", "SV-57"]},
    "d9": {"date": "2026-12-15", "jobs": ["SV-75", "SV-31"]},
}
for _k, _v in INPUTS.items():
    _v["task"] = f"Prepare quotes for the roofs surveyed for {_v['date']}"

CASES = [
    dict(id="zzw-sol-01", kind="unit_error", input="d1",
         desc="The yield tool answers the last roof's yield in MWh (5.7) where every other figure is kWh."),
    dict(id="zzw-sol-02", kind="hallucinated_value", input="d3",
         desc="When handing the lines to the price tool the model gives SV-13 an annual yield of 9,500 kWh that no tool returned."),
    dict(id="zzw-sol-03", kind="wrong_tool_args", input="d4",
         desc="The model asks the survey tool for SV-57 again when the second roof is SV-31, so SV-31 is quoted on SV-57's roof."),
    dict(id="zzw-sol-04", kind="truncated_result", input="d8",
         desc="The price tool returns only its first two quote lines, dropping SV-57 from the quote."),
    dict(id="zzw-sol-05", kind="subagent_wrong_entity", input="d7",
         desc="The layout designer sub-agent asks the catalogue about SV-31 when asked for SV-13 and designs for the smaller roof."),
]
REFS = ["d2", "d5", "d6", "d9"]


def get_survey_jobs(date: str) -> dict:
    """Roofs surveyed for a date."""
    return {"date": date, "jobs": list(_CURRENT["jobs"])}


def get_roof_survey(job_id: str) -> dict:
    """Survey record of one roof: area in m2, orientation, pitch."""
    return {"job": job_id, **ROOFS[job_id]}


def panel_catalogue(job_id: str) -> dict:
    """How many 430 W panels fit a surveyed roof, with the edge clearance."""
    roof = ROOFS[job_id]
    usable = roof["area_m2"] * (0.8 if roof["pitch"] >= 35 else 0.85)
    return {"job": job_id, "panel": "430 W mono", "fits": int(usable // PANEL_M2)}


def estimate_yield(job_id: str, panels: int, orientation: str) -> dict:
    """Annual yield in kWh."""
    kwh = round(panels * PANEL_KWP * YIELD[orientation])
    if job_id == _CURRENT["jobs"][-1] and kit.on("zzw-sol-01"):
        return {"job": job_id, "annual": round(kwh / 1000, 1), "unit": "MWh"}
    return {"job": job_id, "annual": kwh, "unit": "kWh"}


def price_quote(lines_json: str) -> dict:
    """Price quote lines: [{job, panels, annual_kwh}]."""
    lines = json.loads(lines_json)
    priced = [{**x, "price": FIXED + PRICE_PER_PANEL * x["panels"]} for x in lines]
    if len(priced) > 2 and kit.on("zzw-sol-04"):
        priced = priced[:2]
    return {"lines": priced, "currency": "GBP"}


def validate_quote(quote_json: str) -> dict:
    """Check a quote against the survey records and the installer's rules."""
    q = json.loads(quote_json)
    lines = {x["job"]: x for x in q["lines"]}
    if sorted(lines) != sorted(_CURRENT["jobs"]):
        raise ValueError(f"quote covers {sorted(lines)}, surveyed roofs are {sorted(_CURRENT['jobs'])}")
    for job, x in lines.items():
        roof = ROOFS[job]
        fits = int(roof["area_m2"] * (0.8 if roof["pitch"] >= 35 else 0.85) // PANEL_M2)
        if x["panels"] != fits:
            raise ValueError(f"{job}: {x['panels']} panels quoted, the roof takes {fits}")
        kwh = round(fits * PANEL_KWP * YIELD[roof["orientation"]])
        if x["annual_kwh"] != kwh:
            raise ValueError(f"{job}: annual yield {x['annual_kwh']} kWh, survey gives {kwh} kWh")
        if x["price"] != FIXED + PRICE_PER_PANEL * fits:
            raise ValueError(f"{job}: price {x['price']}")
    return {"ok": True, "quotes": len(lines)}


_CURRENT = {"jobs": []}


def main_flow(text):
    date = text.split()[-1]
    jobs = (yield ("get_survey_jobs", {"date": date}))["jobs"]
    lines = []
    previous = None
    for n, job in enumerate(jobs):
        ask = job
        if n == 1 and kit.on("zzw-sol-03"):
            ask = previous
        roof = yield ("get_roof_survey", {"job_id": ask})
        design = yield ("layout_designer", {"input": f"Design the layout for roof {job}: {roof['area_m2']} m2, "
                                                     f"pitch {roof['pitch']}"})
        panels = json.loads(design)["panels"] if isinstance(design, str) else design["panels"]
        y = yield ("estimate_yield", {"job_id": job, "panels": panels, "orientation": roof["orientation"]})
        lines.append({"job": job, "panels": panels, "annual_kwh": y["annual"]})
        previous = job
    if lines[-1]["job"] == "SV-13" and kit.on("zzw-sol-02"):
        lines[-1]["annual_kwh"] = 9500
    quote = yield ("price_quote", {"lines_json": json.dumps(lines)})
    yield ("validate_quote", {"quote_json": json.dumps(quote)})
    return f"{len(quote['lines'])} quotes ready for {date}."


def sub_flow(text):
    job = text.split("roof ")[1].split(":")[0]
    ask = job
    if job == "SV-13" and kit.on("zzw-sol-05"):
        ask = "SV-31"
    fit = yield ("panel_catalogue", {"job_id": ask})
    return json.dumps({"job": job, "panels": fit["fits"], "panel": fit["panel"]})


def build(ctx, model):
    from agents import Agent

    _CURRENT["jobs"] = list(_REQ["jobs"])
    designer = Agent(name="layout designer", instructions=SUB_INSTRUCTIONS, model=model,
                     tools=[ctx.ftool(panel_catalogue)])
    main = Agent(name="survey desk", instructions=MAIN_INSTRUCTIONS, model=model, tools=[
        ctx.ftool(get_survey_jobs), ctx.ftool(get_roof_survey),
        designer.as_tool(tool_name="layout_designer", tool_description="Design a panel layout for one roof."),
        ctx.ftool(estimate_yield), ctx.ftool(price_quote), ctx.ftool(validate_quote, fatal=True)])
    return main, {MAIN_INSTRUCTIONS: main_flow, SUB_INSTRUCTIONS: sub_flow}


_REQ = {"jobs": []}


def prepare(request):
    _REQ["jobs"] = request["jobs"]
