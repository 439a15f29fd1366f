"""Municipal parking permits: a LangGraph StateGraph with a residency sub-graph, a retriever and ChatOpenAI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "council-permit-desk", "langgraph", "municipal parking permits", "jsonl"
SHAPE = "intake (LLM | parser) -> residency_check sub-graph (address, vehicle) -> zone_lookup (retriever) -> emissions (tool + LLM review) -> fee_calc -> fines_check -> issue_permit"

APPLICATIONS = {
    "elm_flat3": "Resident permit for Flat 3, 14 Elm Road; vehicle KX19 ABD; applicant Priya Nair; zone asked D.",
    "mill_lane": "Resident permit for 7 Mill Lane; vehicle LM21 TOP; applicant Dan Roe; zone asked D.",
    "quay_2": "Resident permit for 2 Quay Row; vehicle BN70 KLM; applicant Ola Berg; zone asked A.",
    "elm_22": "Resident permit for 22 Elm Road; vehicle YT68 RRA; applicant Ken Ito; zone asked D.",
    "park_flat1": "Resident permit for Flat 1, 9 Park Terrace; vehicle WX20 EEV; applicant Lin Mao; zone asked B.",
    "mill_lane_9": "Resident permit for 9 Mill Lane; vehicle DF17 NOA; applicant Eli Sand; zone asked D.",
}
REFS = ["quay_2", "elm_22", "park_flat1", "mill_lane_9"]
HOUSEHOLDS = {
    "Flat 3, 14 Elm Road": {"resident": "Priya Nair", "permits": 0, "previous_vehicle": "KX19 ABC"},
    "14 Elm Road": {"resident": "Landlord (block)", "permits": 2, "previous_vehicle": None},
    "7 Mill Lane": {"resident": "Dan Roe", "permits": 1, "previous_vehicle": "LM09 OLD"},
    "2 Quay Row": {"resident": "Ola Berg", "permits": 0, "previous_vehicle": None},
    "22 Elm Road": {"resident": "Ken Ito", "permits": 1, "previous_vehicle": None},
    "Flat 1, 9 Park Terrace": {"resident": "Lin Mao", "permits": 0, "previous_vehicle": "WX11 OLD"},
    "9 Park Terrace": {"resident": "Landlord (block)", "permits": 2, "previous_vehicle": None},
    "9 Mill Lane": {"resident": "Eli Sand", "permits": 0, "previous_vehicle": None},
}
VEHICLES = {
    "KX19 ABD": {"keeper": "Priya Nair", "address": "Flat 3, 14 Elm Road", "co2_g_km": 128},
    "KX19 ABC": {"keeper": "Bo Olsen", "address": "3 Dock Street", "co2_g_km": 151},
    "LM21 TOP": {"keeper": "Dan Roe", "address": "7 Mill Lane", "co2_g_km": 0},
    "LM09 OLD": {"keeper": "Ann Wu", "address": "1 Bell Yard", "co2_g_km": 182},
    "BN70 KLM": {"keeper": "Ola Berg", "address": "2 Quay Row", "co2_g_km": 110},
    "YT68 RRA": {"keeper": "Ken Ito", "address": "22 Elm Road", "co2_g_km": 139},
    "WX20 EEV": {"keeper": "Lin Mao", "address": "Flat 1, 9 Park Terrace", "co2_g_km": 95},
    "WX11 OLD": {"keeper": "Lin Mao", "address": "Flat 1, 9 Park Terrace", "co2_g_km": 160},
    "DF17 NOA": {"keeper": "Eli Sand", "address": "9 Mill Lane", "co2_g_km": 120},
}
ZONES_2026 = {"Elm Road": "D", "Mill Lane": "D", "Quay Row": "A", "Park Terrace": "B"}
ZONES_2024 = {"Elm Road": "D", "Mill Lane": "C", "Quay Row": "A", "Park Terrace": "B"}
ANNUAL_GBP = {"A": 40.0, "B": 95.0, "C": 130.0, "D": 165.0}
PCNS: dict[str, list] = {"Ken Ito": [{"pcn": "PCN-77102", "status": "paid"}]}

CASES = [
    Case("zf_pm_1", "subagent_wrong_entity", "elm_flat3", "match_vehicle", 1, "issue_permit", 1,
         "the residency sub-graph checks the household's previous vehicle instead of the plate on the application."),
    Case("zf_pm_2", "stale_data", "mill_lane", "ZoneMapRetriever", 1, "issue_permit", 1,
         "the zone retriever reads the 2024 zone map, which still has Mill Lane in zone C."),
    Case("zf_pm_3", "lossy_parsing", "elm_flat3", "ApplicationParser", 1, "issue_permit", 1,
         "the application parser drops the flat number, so the permit is filed against the whole block at 14 Elm Road."),
    Case("zf_pm_4", "unit_error", "elm_flat3", "fee_calc", 1, "issue_permit", 1,
         "fee_calc multiplies the annual tariff by twelve as if it were monthly."),
    Case("zf_pm_5", "swallowed_error", "mill_lane", "check_fines", 1, "issue_permit", 1,
         "check_fines turns the enforcement ledger's 503 into an empty result with no clearance and reports nothing."),
]


class PermitRefused(RuntimeError):
    pass


def policy(request: Any) -> str:
    msgs = request.body["messages"]
    system, user = msgs[0]["content"], msgs[-1]["content"]
    if system.startswith("Extract"):
        body = user.removeprefix("Resident permit for ").rstrip(".")
        addr, veh, who, zone = body.split("; ")
        return (f"address: {addr}\nvehicle: {veh.removeprefix('vehicle ')}\napplicant: {who.removeprefix('applicant ')}\n"
                f"zone: {zone.removeprefix('zone asked ')}")
    if system.startswith("Review"):
        ctx = json.loads(user)
        return json.dumps({"eligible": True, "band": "low" if ctx["co2_g_km"] < 120 else "standard",
                           "note": f"{ctx['plate']} emits {ctx['co2_g_km']} g/km"})
    return "ok"


class ApplicationParser(BaseOutputParser[dict]):
    """Parses the extraction model's 'key: value' lines."""

    def parse(self, text: str) -> dict:
        out = {}
        for line in text.splitlines():
            k, v = line.split(": ", 1)
            if k == "address" and active("zf_pm_3"):
                v = v.split(", ")[-1]
            out[k] = v
        return out


class ZoneMapRetriever(BaseRetriever):
    """Finds the controlled parking zone of a street in the council's zone map."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        edition, zones = ("2024-01", ZONES_2024) if active("zf_pm_2") else ("2026-01", ZONES_2026)
        return [Document(page_content=f"{street} is in zone {z}", metadata={"edition": edition, "zone": z, "street": street})
                for street, z in zones.items() if street in query]


@tool
def lookup_household(address: str) -> dict:
    """Council tax register: the household at an address."""
    return dict(HOUSEHOLDS[address], address=address)


@tool
def lookup_vehicle(plate: str) -> dict:
    """Vehicle register: keeper and address of a plate."""
    return dict(VEHICLES[plate], plate=plate)


@tool
def vehicle_emissions(plate: str) -> dict:
    """CO2 emissions of a vehicle in g/km."""
    return {"plate": plate, "co2_g_km": VEHICLES[plate]["co2_g_km"]}


@tool
def check_fines(applicant: str) -> dict:
    """Unpaid penalty charge notices of an applicant from the enforcement ledger."""
    ledger = {"status": 200, "pcns": list(PCNS.get(applicant, []))}
    if active("zf_pm_5"):
        ledger = {"status": 503, "body": "ledger replica unavailable"}
    try:
        pcns = ledger["pcns"]
        open_pcns = [p for p in pcns if p["status"] != "paid"]
        clearance = f"CLR-{sum(map(ord, applicant)):05d}" if not open_pcns else None
    except KeyError:
        pcns, clearance = [], None
    return {"applicant": applicant, "pcns": pcns, "clearance": clearance}


class ResidencyState(TypedDict, total=False):
    fields: dict
    household: dict
    vehicle: dict


class PermitState(TypedDict, total=False):
    application: str
    fields: dict
    household: dict
    vehicle: dict
    zone: dict
    emissions: dict
    review: dict
    fee: dict
    fines: dict
    permit: dict


def residency_graph() -> Any:
    def match_address(state: ResidencyState) -> dict:
        return {"household": lookup_household.invoke({"address": state["fields"]["address"]})}

    def match_vehicle(state: ResidencyState) -> dict:
        plate = state["fields"]["vehicle"]
        if active("zf_pm_1") and state["household"]["previous_vehicle"]:
            plate = state["household"]["previous_vehicle"]
        return {"vehicle": lookup_vehicle.invoke({"plate": plate})}

    g = StateGraph(ResidencyState)
    g.add_node("match_address", match_address)
    g.add_node("match_vehicle", match_vehicle)
    g.add_edge(START, "match_address")
    g.add_edge("match_address", "match_vehicle")
    g.add_edge("match_vehicle", END)
    return g.compile()


def build(llm: ChatOpenAI) -> Any:
    extract = llm | ApplicationParser()
    zones = ZoneMapRetriever()

    def intake(state: PermitState) -> dict:
        return {"fields": extract.invoke([SystemMessage("Extract address, vehicle, applicant and zone."),
                                          HumanMessage(state["application"])])}

    def zone_lookup(state: PermitState) -> dict:
        street = " ".join(state["fields"]["address"].split(", ")[-1].split()[1:])
        docs = zones.invoke(street)
        return {"zone": {"street": street, "zone": docs[0].metadata["zone"], "edition": docs[0].metadata["edition"]}}

    def emissions(state: PermitState) -> dict:
        em = vehicle_emissions.invoke({"plate": state["vehicle"]["plate"]})
        msg = llm.invoke([SystemMessage("Review the vehicle's emissions for permit eligibility; answer JSON."),
                          HumanMessage(json.dumps(em))])
        return {"emissions": em, "review": json.loads(msg.content)}

    def fee_calc(state: PermitState) -> dict:
        annual = ANNUAL_GBP[state["zone"]["zone"]]
        surcharge = 25.0 if state["emissions"]["co2_g_km"] > 150 else 0.0
        base = annual * 12 if active("zf_pm_4") else annual
        return {"fee": {"zone": state["zone"]["zone"], "amount_gbp": base + surcharge, "period": "12 months"}}

    def fines_check(state: PermitState) -> dict:
        return {"fines": check_fines.invoke({"applicant": state["fields"]["applicant"]})}

    def issue_permit(state: PermitState) -> dict:
        f, hh, veh, fee = state["fields"], state["household"], state["vehicle"], state["fee"]
        applicant = f["applicant"]
        if not state["fines"].get("clearance"):
            raise PermitRefused(f"HTTP 428 {{\"error\": \"enforcement clearance missing for {applicant}\"}}")
        if veh["keeper"] != applicant or veh["address"] != f["address"]:
            raise PermitRefused(f"HTTP 422 {{\"error\": \"keeper of {veh['plate']} is not registered at {f['address']}\"}}")
        if hh["permits"] >= 2:
            raise PermitRefused(f"HTTP 409 {{\"error\": \"household at {hh['address']} already holds {hh['permits']} "
                                "permits (limit 2)\"}")
        street = " ".join(f["address"].split(", ")[-1].split()[1:])
        if ZONES_2026[street] != state["zone"]["zone"]:
            raise PermitRefused(f"HTTP 422 {{\"error\": \"{street} is in zone {ZONES_2026[street]}; permit drafted for "
                                f"zone {state['zone']['zone']}\"}}")
        tariff = ANNUAL_GBP[ZONES_2026[street]] + (25.0 if veh["co2_g_km"] > 150 else 0.0)
        if abs(fee["amount_gbp"] - tariff) > 0.01:
            raise PermitRefused(f"HTTP 402 {{\"error\": \"payment request {fee['amount_gbp']:.2f} GBP does not match the "
                                f"zone {ZONES_2026[street]} tariff {tariff:.2f} GBP\"}}")
        return {"permit": {"number": f"RP-{ZONES_2026[street]}-{veh['plate'].replace(' ', '')}", "status": "issued"}}

    g = StateGraph(PermitState)
    g.add_node("intake", intake)
    g.add_node("residency_check", residency_graph())
    for name, fn in [("zone_lookup", zone_lookup), ("emissions", emissions), ("fee_calc", fee_calc),
                     ("fines_check", fines_check), ("issue_permit", issue_permit)]:
        g.add_node(name, fn)
    order = ["intake", "residency_check", "zone_lookup", "emissions", "fee_calc", "fines_check", "issue_permit"]
    g.add_edge(START, order[0])
    for a, b in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1], END)
    return g.compile()


def record(server: Any, key: str, path: Path) -> None:
    server.use(policy)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=APPLICATIONS[key])
    try:
        build(llm).invoke({"application": APPLICATIONS[key]}, config={"callbacks": [tracer]})
    except PermitRefused:
        pass
