"""Scrimshaw gallery: appraisal certificates with a hand-off and a sub-agent (openai_agents route)."""
import ast
import asyncio
import json

from agents import (Agent, ModelSettings, RunConfig, Runner, function_tool, set_default_openai_api,
                    set_default_openai_client, set_tracing_disabled)
from agents.exceptions import UserError
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME, ROUTE, DOMAIN = "scrimshaw-appraisals", "openai_agents", "scrimshaw gallery"
SHAPE = "triage agent hands off to an appraiser (or the sales desk); appraiser runs a provenance sub-agent as a tool beside a parallel measuring call, then comparables and the certificate tool"
SWITCH = None

ARCHIVE = {"SG-241": {"vessel": "Charles W. Morgan", "year": 1874, "material": "sperm whale tooth"},
           "SG-214": {"vessel": "unrecorded", "year": 1962, "material": "sperm whale tooth"},
           "SG-305": {"vessel": "Essex (II)", "year": 1852, "material": "walrus tusk"},
           "SG-118": {"vessel": "Acushnet", "year": 1843, "material": "whalebone busk"},
           "SG-422": {"vessel": "Wanderer", "year": 1899, "material": "sperm whale tooth"},
           "SG-077": {"vessel": "Catalpa", "year": 1876, "material": "panbone plaque"}}
SIZES = {"SG-241": 16.5, "SG-305": 41.0, "SG-118": 33.0, "SG-422": 12.0, "SG-077": 22.5}
COMPS = {"tooth": (3200, 5400), "tusk": (6000, 9500), "busk": (2500, 4200), "plaque": (1800, 3000)}
COMPS_2019 = {"tooth": (1500, 2600), "tusk": (4000, 6200), "busk": (1600, 2900), "plaque": (1100, 1900)}
INPUTS = [
    {"lot": "SG-241", "piece": "tooth", "subject": "whaling scene", "consignor": "E. Starbuck"},
    {"lot": "SG-305", "piece": "tusk", "subject": "ship portrait", "consignor": "M. Coffin"},
    {"lot": "SG-118", "piece": "busk", "subject": "hearts and compass rose", "consignor": "A. Hussey"},
    {"lot": "SG-422", "piece": "tooth", "subject": "lady with parasol", "consignor": "T. Gardner"},
    {"lot": "SG-077", "piece": "plaque", "subject": "harbour view", "consignor": "R. Macy"},
]
CASES = [
    {"id": "zzzo_s01", "input": 0, "switch": "lotno", "fault_kind": "subagent_wrong_entity",
     "root": ("provenance", 1, "agent"), "failure": ("issue_certificate", 1),
     "description": "The provenance researcher looked up lot SG-214 instead of SG-241 and reported a 1962 piece."},
    {"id": "zzzo_s02", "input": 2, "switch": "desk", "fault_kind": "wrong_routing",
     "root": ("generation fake-model", 1, "llm"), "failure": ("issue_certificate", 1),
     "description": "The front desk handed an appraisal request to the sales desk, which issued a certificate with no appraisal behind it."},
    {"id": "zzzo_s03", "input": 1, "switch": "index", "fault_kind": "stale_data",
     "root": ("market_comparables", 1, "tool"), "failure": ("issue_certificate", 1),
     "description": "Comparables came from the 2019 sales index, so the tusk was valued under the current register band."},
    {"id": "zzzo_s04", "input": 3, "switch": "maker", "fault_kind": "hallucinated_value",
     "root": ("generation fake-model", 6, "llm"), "failure": ("issue_certificate", 1),
     "description": "The appraiser attributed the tooth to Edward Burdett, a name no record of the lot holds, and priced it as his work."},
    {"id": "zzzo_s05", "input": 4, "switch": "category", "fault_kind": "tool_ignores_argument",
     "root": ("market_comparables", 1, "tool"), "failure": ("issue_certificate", 1),
     "description": "The comparables service ignored the plaque category and answered with its tooth sales."},
]


@function_tool(failure_error_function=None)
def archive_search(lot: str) -> dict:
    """Search the gallery's provenance archive for a lot."""
    return dict(ARCHIVE[lot], lot=lot)


@function_tool(failure_error_function=None)
def measure_piece(lot: str) -> dict:
    """Length of a piece from the condition report."""
    return {"lot": lot, "length_cm": SIZES[lot], "condition": "good, light surface wear"}


@function_tool(failure_error_function=None)
def market_comparables(category: str, length_cm: float) -> dict:
    """Hammer prices of comparable pieces."""
    table = COMPS_2019 if SWITCH == "index" else COMPS
    if SWITCH == "category":
        category = "tooth"
    lo, hi = table[category]
    return {"category": category, "low_gbp": lo, "high_gbp": hi, "sales": 9}


@function_tool(failure_error_function=None)
def issue_certificate(lot: str, year: int, material: str, value_gbp: float, appraiser: str) -> dict:
    """Issue the appraisal certificate; the register checks the antique exemption and the value band."""
    if year >= 1947:
        raise ValueError(f"lot {lot}: {material} dated {year} is not an antique under the 1947 rule")
    cat = INPUTS_BY_LOT[lot]["piece"]
    lo, hi = COMPS[cat]
    if not lo * 0.9 <= value_gbp <= hi * 1.1:
        raise ValueError(f"lot {lot}: valuation {value_gbp:.0f} GBP is outside the register band {lo}-{hi} GBP for a {cat}")
    return {"certificate": f"CERT-{lot}", "value_gbp": value_gbp, "signed": appraiser}


INPUTS_BY_LOT = {i["lot"]: i for i in INPUTS}


def _results(body):
    out, calls = {}, {}
    for m in body["messages"]:
        if m["role"] == "assistant":
            for tc in m.get("tool_calls") or []:
                calls[tc["id"]] = tc["function"]["name"]
        if m["role"] == "tool" and calls.get(m["tool_call_id"]) not in (None, "transfer_to_appraiser", "transfer_to_sales_desk"):
            c = m["content"]
            try:
                out[calls[m["tool_call_id"]]] = ast.literal_eval(c)
            except (ValueError, SyntaxError):
                out[calls[m["tool_call_id"]]] = json.loads(c)
    return out


def policy(request):
    body = request.body
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    users = [m for m in body["messages"] if m["role"] == "user"]
    r = _results(body)
    if system.startswith("Research provenance"):
        lot = users[0]["content"].split()[-1]
        if "archive_search" not in r:
            if SWITCH == "lotno":
                lot = lot[:4] + lot[5] + lot[4] + lot[6:]
            return Reply(tool_calls=(tool_call("archive_search", {"lot": lot}),))
        return json.dumps(r["archive_search"])
    req = json.loads(users[0]["content"])
    if system.startswith("Front desk"):
        target = "transfer_to_sales_desk" if SWITCH == "desk" else "transfer_to_appraiser"
        return Reply(tool_calls=(tool_call(target, {}),))
    if system.startswith("Sales desk"):
        if "issue_certificate" not in r:
            return Reply(tool_calls=(tool_call("issue_certificate", {"lot": req["lot"], "year": 0, "material": req["piece"],
                                                                     "value_gbp": 0, "appraiser": "sales desk"}),))
        return "Certificate issued."
    if "measure_piece" not in r:
        return Reply(tool_calls=(tool_call("measure_piece", {"lot": req["lot"]}),
                                 tool_call("provenance_researcher", {"input": f"Find the provenance of lot {req['lot']}"})))
    if "market_comparables" not in r:
        return Reply(tool_calls=(tool_call("market_comparables", {"category": req["piece"],
                                                                  "length_cm": r["measure_piece"]["length_cm"]}),))
    if "issue_certificate" not in r:
        prov, comps = r["provenance_researcher"], r["market_comparables"]
        value = round((comps["low_gbp"] + comps["high_gbp"]) / 2)
        if SWITCH == "maker":
            value = value * 3
        return Reply(tool_calls=(tool_call("issue_certificate", {"lot": req["lot"], "year": prov["year"], "material": prov["material"],
                                                                 "value_gbp": value, "appraiser": "gallery appraiser"}),),
                     text=("Attributed to Edward Burdett, Nantucket." if SWITCH == "maker" else None))
    return f"Certificate {r['issue_certificate']['certificate']} issued at {r['issue_certificate']['value_gbp']} GBP."


def record(inp, server, path):
    set_tracing_disabled(False)
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client)
    set_default_openai_api("chat_completions")
    proc = TrajdebugProcessor(path=path, name=NAME, task=f"appraisal of lot {inp['lot']}")
    set_trace_processors([proc])
    researcher = Agent(name="provenance", instructions="Research provenance in the archive. Answer JSON.",
                       model=server.model, tools=[archive_search])
    appraiser = Agent(name="appraiser", instructions="Appraise the piece and issue the certificate.", model=server.model,
                      tools=[measure_piece, researcher.as_tool(tool_name="provenance_researcher",
                                                               tool_description="Research a lot's provenance."),
                             market_comparables, issue_certificate],
                      model_settings=ModelSettings(parallel_tool_calls=True))
    sales = Agent(name="sales_desk", instructions="Sales desk: issue paperwork.", model=server.model, tools=[issue_certificate])
    desk = Agent(name="front_desk", instructions="Front desk of the gallery: pass each request on.", model=server.model,
                 handoffs=[appraiser, sales])
    try:
        async def go():
            try:
                return await Runner.run(desk, json.dumps(inp), run_config=RunConfig(workflow_name=NAME))
            finally:
                await client.close()

        asyncio.run(go())
    except UserError:
        pass
    finally:
        set_trace_processors([])
