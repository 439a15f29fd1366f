"""Taxi licensing office (openai_agents route): a licensing clerk runs the checks and hands off to a vehicle inspector who issues the licence."""

from __future__ import annotations

import json

from .common import Case, Reply, policy, server, tool_results
from .kit import active

NAME = "taxi-licensing-office"
ROUTE = "openai_agents"
TODAY = "2026-12-05"

APPS = {
    "TLO-7713": {"type": "private_hire", "applicant": "Ravi Kapoor", "age": 52, "dbs": "DBS-001845221", "dvla": "KAPOO705120RK9",
                 "reg": "LK71 ZPT", "insurer": "INS-55821"},
    "TLO-7720": {"type": "hackney_carriage", "applicant": "Maureen Doyle", "age": 47, "dbs": "DBS-001851004",
                 "dvla": "DOYLE612089MD2", "reg": "YX20 HCK", "insurer": "INS-55840"},
    "TLO-7690": {"type": "private_hire", "applicant": "Tomasz Nowak", "age": 38, "dbs": "DBS-001830119", "dvla": "NOWAK803151TN1",
                 "reg": "BD68 WRU", "insurer": "INS-55790"},
    "TLO-7695": {"type": "hackney_carriage", "applicant": "Aisha Bello", "age": 56, "dbs": "DBS-001832870", "dvla": "BELLO611042AB5",
                 "reg": "LT19 TXI", "insurer": "INS-55801"},
    "TLO-7701": {"type": "private_hire", "applicant": "Gareth Pugh", "age": 44, "dbs": "DBS-001839946", "dvla": "PUGH9710114GP3",
                 "reg": "CA22 NNE", "insurer": "INS-55809"},
    "TLO-7706": {"type": "private_hire", "applicant": "Lena Fischer", "age": 61, "dbs": "DBS-001841377", "dvla": "FISCH759283LF7",
                 "reg": "SM21 KLO", "insurer": "INS-55815"},
}
DBS = {"DBS-001845221": "2027-03-02", "DBS-001851004": "2027-08-19", "DBS-001830119": "2027-01-30",
       "DBS-001832870": "2027-05-11", "DBS-001839946": "2027-10-04", "DBS-001841377": "2027-02-27"}
MOT = {"LK71 ZPT": "2027-01-14", "YX20 HCK": "2027-04-22", "BD68 WRU": "2027-02-08", "LT19 TXI": "2026-12-29",
       "CA22 NNE": "2027-07-01", "SM21 KLO": "2027-03-17"}
INPUTS = {"app7713": "TLO-7713", "app7720": "TLO-7720", "app7690": "TLO-7690", "app7695": "TLO-7695",
          "app7701": "TLO-7701", "app7706": "TLO-7706"}
REFS = ["app7690", "app7695", "app7701", "app7706"]

CASES = [
    Case("zzb_taxi_01", NAME, ROUTE, "bad_memory_write", "taxi_mem", "app7713", "record_check_results", 1, "tool",
         "issue_licence", "record_check_results files the check results under the previous application number."),
    Case("zzb_taxi_02", NAME, ROUTE, "wrong_routing", "taxi_route", "app7713", "generation taxi-clerk", 0, "llm",
         "issue_licence", "the clerk model hands a private hire application to the hackney carriage inspector."),
    Case("zzb_taxi_03", NAME, ROUTE, "format_drift", "taxi_date", "app7720", "verify_dbs", 1, "tool",
         "issue_licence", "verify_dbs answers the certificate expiry as DD/MM/YYYY instead of an ISO date, and it is passed on as given."),
    Case("zzb_taxi_04", NAME, ROUTE, "swallowed_error", "taxi_medical", "app7720", "check_medical", 1, "tool",
         "issue_licence", "check_medical swallows the GP portal error and reports no medical needed."),
    Case("zzb_taxi_05", NAME, ROUTE, "hallucinated_value", "taxi_mot", "app7713", "generation taxi-inspector", 0, "llm",
         "issue_licence", "the inspector model states an MOT expiry date that the vehicle lookup never returned."),
]
_CURRENT: dict = {}
CASE_FILES: dict = {}


class LicensingAPIError(RuntimeError):
    pass


def _call(name: str, args: dict) -> Reply:
    return Reply(tool_calls=((name, args),))


def _results(request) -> dict:
    return {n: json.loads(c) for n, c in tool_results(request) if c.startswith("{")}


@policy("taxi-clerk")
def _clerk(request):
    app_id = _CURRENT["app_id"]
    r = _results(request)
    if "fetch_application" not in r:
        return _call("fetch_application", {"app_id": app_id})
    app = r["fetch_application"]
    if "verify_dbs" not in r:
        return _call("verify_dbs", {"certificate": app["dbs"]})
    if "check_dvla_record" not in r:
        return _call("check_dvla_record", {"licence_no": app["dvla"]})
    if "check_medical" not in r:
        return _call("check_medical", {"app_id": app_id, "age": app["age"]})
    if "record_check_results" not in r:
        return _call("record_check_results", {"app_id": app_id, "dbs_expiry": r["verify_dbs"]["expires"],
                                              "dvla_points": r["check_dvla_record"]["points"],
                                              "medical_ref": r["check_medical"].get("certificate")})
    target = app["type"]
    if active("taxi_route"):
        target = "hackney_carriage" if target == "private_hire" else "private_hire"
    return _call(f"transfer_to_{target}_inspector", {})


@policy("taxi-inspector")
def _inspector(request):
    r = _results(request)
    app = r["fetch_application"]
    if "lookup_vehicle" not in r:
        return _call("lookup_vehicle", {"reg": app["reg"]})
    if "check_insurance" not in r:
        return _call("check_insurance", {"policy_no": app["insurer"], "reg": app["reg"]})
    if not any(k.startswith("issue_") for k in r):
        mot = "2027-06-30" if active("taxi_mot") else r["lookup_vehicle"]["mot_expiry"]
        tool = [t for t in (request.body or {}).get("tools", []) if t["function"]["name"].startswith("issue_")][0]
        return _call(tool["function"]["name"], {"app_id": app["app_id"], "vehicle_reg": app["reg"], "mot_expiry": mot,
                                                "dbs_expiry": r["verify_dbs"]["expires"]})
    return "Licence issued."


def build():
    from agents import Agent, OpenAIChatCompletionsModel, function_tool
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server().base_url, api_key="sk-test-local", max_retries=0)

    @function_tool
    def fetch_application(app_id: str) -> str:
        """Fetch a licence application from the case system."""
        return json.dumps({"app_id": app_id, **APPS[app_id]})

    @function_tool
    def verify_dbs(certificate: str) -> str:
        """Verify an enhanced DBS certificate and return its expiry."""
        exp = DBS[certificate]
        if active("taxi_date"):
            exp = f"{exp[8:]}/{exp[5:7]}/{exp[:4]}"
        return json.dumps({"certificate": certificate, "status": "clear", "expires": exp})

    @function_tool
    def check_dvla_record(licence_no: str) -> str:
        """Check a driving licence's endorsements with the DVLA."""
        return json.dumps({"licence_no": licence_no, "points": 3 if licence_no.startswith("N") else 0, "valid": True})

    @function_tool
    def check_medical(app_id: str, age: int) -> str:
        """Ask the GP portal for the applicant's Group 2 medical certificate (required from age 45)."""
        try:
            if age < 45:
                return json.dumps({"app_id": app_id, "required": False})
            if active("taxi_medical"):
                raise ConnectionError("GP portal returned 503 Service Unavailable")
            return json.dumps({"app_id": app_id, "required": True, "certificate": f"MED-{app_id[4:]}-G2"})
        except ConnectionError:
            return json.dumps({"app_id": app_id, "required": False})

    @function_tool
    def record_check_results(app_id: str, dbs_expiry: str, dvla_points: int, medical_ref: str | None = None) -> str:
        """Write the completed checks into the application's case file."""
        key = app_id
        if active("taxi_mem"):
            key = f"TLO-{int(app_id[4:]) - 1}"
        CASE_FILES[key] = {"dbs_expiry": dbs_expiry, "dvla_points": dvla_points, "medical_ref": medical_ref}
        return json.dumps({"case_file": key, "saved": True})

    @function_tool
    def lookup_vehicle(reg: str) -> str:
        """Look up a vehicle's MOT and age with DVSA."""
        return json.dumps({"reg": reg, "mot_expiry": MOT[reg], "euro_standard": 6})

    @function_tool
    def check_insurance(policy_no: str, reg: str) -> str:
        """Confirm hire-and-reward insurance for the vehicle."""
        return json.dumps({"policy_no": policy_no, "reg": reg, "hire_and_reward": True})

    def issuer(licence_type: str):
        @function_tool(name_override="issue_licence", failure_error_function=None)
        def issue_licence(app_id: str, vehicle_reg: str, mot_expiry: str, dbs_expiry: str) -> str:
            """Issue the driver and vehicle licence on the council's licensing system."""
            app = APPS[app_id]
            case = CASE_FILES.get(app_id)
            if case is None:
                raise LicensingAPIError(f"Licensing API 412: no completed checks in case file {app_id}")
            if licence_type != app["type"]:
                raise LicensingAPIError(f"Licensing API 422: licence type {licence_type} does not match application "
                                        f"{app_id} for {app['type']}")
            if len(dbs_expiry) != 10 or dbs_expiry[4] != "-":
                raise LicensingAPIError(f"Licensing API 400: dbs_expiry '{dbs_expiry}' is not an ISO 8601 date")
            if app["age"] >= 45 and not case.get("medical_ref"):
                raise LicensingAPIError(f"Licensing API 422: applicant aged {app['age']} needs a Group 2 medical "
                                        f"certificate; case file {app_id} has none")
            if mot_expiry != MOT[vehicle_reg]:
                raise LicensingAPIError(f"Licensing API 409: MOT expiry {mot_expiry} for {vehicle_reg} does not match "
                                        f"DVSA record {MOT[vehicle_reg]}")
            return json.dumps({"licence": f"PH-{app_id[4:]}" if licence_type == "private_hire" else f"HC-{app_id[4:]}",
                               "status": "issued"})
        return issue_licence

    model = OpenAIChatCompletionsModel(model="taxi-inspector", openai_client=client)
    inspectors = [Agent(name=f"{t}_inspector", instructions=f"Inspect the vehicle and issue the {t} licence.", model=model,
                        tools=[lookup_vehicle, check_insurance, issuer(t)]) for t in ("private_hire", "hackney_carriage")]
    return Agent(name="licensing_clerk", instructions="Run the applicant checks, file them, then hand off to the right inspector.",
                 model=OpenAIChatCompletionsModel(model="taxi-clerk", openai_client=client),
                 tools=[fetch_application, verify_dbs, check_dvla_record, check_medical, record_check_results],
                 handoffs=inspectors)


def record(input_key: str, path: str) -> None:
    from agents import RunConfig, Runner
    from agents.exceptions import UserError
    from agents.tracing import set_trace_processors

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    app_id = INPUTS[input_key]
    _CURRENT.clear()
    _CURRENT.update({"app_id": app_id})
    CASE_FILES.clear()
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"decide licence application {app_id}")])
    try:
        Runner.run_sync(build(), f"Process application {app_id}", run_config=RunConfig(workflow_name=NAME), max_turns=20)
    except UserError:
        pass
