"""Land-area / population-density report agent."""

from __future__ import annotations

import json

import trajdebug

from .common import llm_meta, mark_failure, mark_flow, mark_root, on


NAME = "density-report"
SUMMARY = "Builds a population-density table for a set of regions; a review step compares densities with the statistics office."
FAULTS = {
    "hectares_as_km2": "the area tool's new cadastre backend returns hectares in the `area_km2` field for the regions it serves",
}


class DensityReviewFailed(Exception):
    """A density in the report disagrees with the official figure."""


AREA_KM2 = {
    "Alentejo Litoral": 5308.0,
    "Baixo Alentejo": 8543.0,
    "Beira Baixa": 4614.0,
    "Alto Minho": 2219.0,
    "Cavado": 1246.0,
    "Ave": 1451.0,
    "Oeste": 2220.0,
    "Leiria": 2449.0,
    "Algarve": 4997.0,
    "Douro": 4032.0,
    "Terras de Tras-os-Montes": 5544.0,
    "Lezíria do Tejo": 4275.0,
    "Madeira": 801.0,
    "Acores": 2322.0,
}
POPULATION = {
    "Alentejo Litoral": 96442,
    "Baixo Alentejo": 114863,
    "Beira Baixa": 80798,
    "Alto Minho": 231293,
    "Cavado": 416439,
    "Ave": 418507,
    "Oeste": 362540,
    "Leiria": 286751,
    "Algarve": 467495,
    "Douro": 183941,
    "Terras de Tras-os-Montes": 107632,
    "Lezíria do Tejo": 238600,
    "Madeira": 250769,
    "Acores": 236413,
}
CADASTRE_V2 = {"Baixo Alentejo", "Cavado", "Madeira"}  # regions moved to the new backend

REQUESTS = {
    "d-south": ["Alentejo Litoral", "Baixo Alentejo", "Algarve"],
    "d-north": ["Alto Minho", "Ave", "Douro", "Cavado"],
    "d-islands": ["Madeira", "Acores"],
    "d-centre": ["Beira Baixa", "Oeste", "Leiria"],
    "d-inland": ["Douro", "Terras de Tras-os-Montes", "Beira Baixa"],
    "d-tejo": ["Lezíria do Tejo", "Oeste"],
    "d-coast": ["Alto Minho", "Leiria", "Algarve", "Alentejo Litoral"],
    "d-acores": ["Acores", "Algarve"],
}


def official_density(region: str) -> float:
    return round(POPULATION[region] / AREA_KM2[region], 1)


FAILING = [
    {
        "fault": "hectares_as_km2",
        "description": "Southern regions: Baixo Alentejo's area comes back in hectares (854,300), its density is computed as 0.1/km2 and the review against the statistics office fails.",
        "input": {
            "id": "d-south",
            "task": "Population density table (people per km2) for the southern NUTS III regions: Alentejo Litoral, Baixo Alentejo, Algarve.",
        },
    },
    {
        "fault": "hectares_as_km2",
        "description": "Northern regions: the fourth area lookup (Cavado) is in hectares; its density collapses and the review fails.",
        "input": {
            "id": "d-north",
            "task": "I need densities for Alto Minho, Ave, Douro and Cavado for the board deck.",
        },
    },
    {
        "fault": "hectares_as_km2",
        "description": "Islands: Madeira's area (first lookup) is returned in hectares (80,100); density 3.1 instead of 313; review fails.",
        "input": {"id": "d-islands", "task": "Compare population density of Madeira and the Azores."},
    },
]

PASSING = [
    {"id": "d-centre", "task": "Density report for Beira Baixa, Oeste and Leiria please."},
    {"id": "d-inland", "task": "Inland regions density: Douro, Terras de Tras-os-Montes, Beira Baixa."},
    {"id": "d-tejo", "task": "What's the population density of Leziria do Tejo vs Oeste?"},
    {"id": "d-coast", "task": "Coastal density table: Alto Minho, Leiria, Algarve, Alentejo Litoral."},
    {"id": "d-acores", "task": "Azores and Algarve population per square km, for a tourism memo."},
]

_CURRENT: dict = {}


@trajdebug.step(kind="llm")
def plan_report(task: str) -> str:
    llm_meta()
    regions = REQUESTS[_CURRENT["id"]]
    return json.dumps({"regions": regions, "metric": "density", "unit": "people/km2", "sort": "desc"})


@trajdebug.step(kind="parse")
def parse_plan(completion: str) -> list:
    plan = json.loads(completion)
    return [r.strip() for r in plan["regions"]]


@trajdebug.step(kind="tool")
def fetch_area(region: str) -> dict:
    area = AREA_KM2[region]
    backend = "cadastre-v1"
    if region in CADASTRE_V2 and on("hectares_as_km2"):
        area = area * 100.0  # hectares, still labelled km2
        backend = "cadastre-v2"
        mark_root()
    return {"region": region, "area_km2": area, "source": backend}


@trajdebug.step(kind="tool")
def fetch_population(region: str, year: int) -> dict:
    return {"region": region, "year": year, "population": POPULATION[region]}


@trajdebug.step(kind="other")
def compute_density(area: dict, population: dict) -> dict:
    d = round(population["population"] / area["area_km2"], 1)
    if area.get("source") == "cadastre-v2":
        mark_flow()
    return {
        "region": area["region"],
        "population": population["population"],
        "area_km2": area["area_km2"],
        "density": d,
    }


@trajdebug.step(kind="output")
def render_table(rows: list) -> str:
    lines = ["| region | population | area (km2) | people/km2 |", "|---|---:|---:|---:|"]
    for r in sorted(rows, key=lambda r: -r["density"]):
        lines.append(f"| {r['region']} | {r['population']:,} | {r['area_km2']:,.0f} | {r['density']:,.1f} |")
    return "\n".join(lines)


@trajdebug.step(kind="tool")
def official_densities(regions: list) -> dict:
    return {r: official_density(r) for r in regions}


@trajdebug.step(kind="condition")
def review_densities(rows: list, reference: dict) -> bool:
    for r in rows:
        ref = reference[r["region"]]
        if abs(r["density"] - ref) > 0.05 * ref:
            mark_failure()
            raise DensityReviewFailed(
                f"{r['region']}: report says {r['density']:,.1f} people/km2, statistics office publishes {ref:,.1f}"
            )
    return True


def run_agent(inp: dict, run) -> str:
    _CURRENT.clear()
    _CURRENT.update(inp)
    regions = parse_plan(plan_report(inp["task"]))
    rows = []
    for region in regions:
        rows.append(compute_density(fetch_area(region), fetch_population(region, 2021)))
    table = render_table(rows)
    review_densities(rows, official_densities(regions))
    return table
