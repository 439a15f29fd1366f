"""bonded-release-desk: a bonded (customs) warehouse's release clerk releasing stored lots for free circulation
against their customs declarations (Rotterdam, Maasvlakte).

Route: the OpenAI Agents SDK (`agents`, Responses API model) recorded by trajdebug's tracing processor, JSONL.
Shape: one clerk agent that states a plan, reads the release request, asks a customs-broker sub-agent run as a
tool (`Agent.as_tool`: list and read declarations), makes two parallel calls (stock lot, exchange rate),
computes the duty and creates the release order, which the warehouse system checks against customs.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
from typing import Any

from trajdebug.testing import FakeModelServer, Reply, tool_call

from ._kit import chat_messages, system_text, text_of, tool_results

NAME = "bonded-release-desk"
ROUTE = "openai_agents"
DOMAIN = "bonded customs warehouse: stored lots released for free circulation against declarations"
SHAPE = "clerk agent (plan, tools, parallel calls) with a customs-broker sub-agent as a tool (its own model calls and tools), duty tool, release-order tool"

SWITCH: str | None = None


def _on(case: str) -> bool:
    return SWITCH == case


REQUESTS = {
    "REL-4471": {"ref": "REL-4471", "consignee": "Vandermeer Retail BV", "sku": "TV-55Q8", "lot": "25-0913",
                 "cartons": 240, "month": "2025-04", "haulier": "Van Dijk Transport",
                 "customs_ref": "25NL00ENS0004471"},
    "REL-4476": {"ref": "REL-4476", "consignee": "Kessler Sport GmbH", "sku": "BK-E29", "lot": "25-1002",
                 "cartons": 60, "month": "2025-04", "haulier": "DHL Freight", "customs_ref": "25NL00ENS0004476"},
    "REL-4480": {"ref": "REL-4480", "consignee": "Nordic Home AB", "sku": "CH-OAK4", "lot": "25-0977",
                 "cartons": 320, "month": "2025-04", "haulier": "DFDS Logistics", "customs_ref": "25NL00ENS0004480"},
    "REL-4485": {"ref": "REL-4485", "consignee": "Lumen Lighting SRL", "sku": "LED-T8X", "lot": "25-1021",
                 "cartons": 500, "month": "2025-05", "haulier": "Raben Group", "customs_ref": "25NL00ENS0004485"},
    "REL-4490": {"ref": "REL-4490", "consignee": "Vandermeer Retail BV", "sku": "SB-AX7", "lot": "25-1034",
                 "cartons": 180, "month": "2025-05", "haulier": "Van Dijk Transport",
                 "customs_ref": "25NL00ENS0004490"},
}

DECLARATIONS = {  # MRN -> declaration (release for free circulation)
    "25NL0003PT8812471": {"consignee": "Vandermeer Retail BV", "sku": "TV-55Q8", "lot": "25-0913", "cartons": 240,
                          "gross_kg": 3960.0, "customs_value": 52800.0, "currency": "USD", "tariff": "8528.72",
                          "status": "open", "date": "2025-04-07"},
    "25NL0003PT8812553": {"consignee": "Kessler Sport GmbH", "sku": "BK-E29", "lot": "25-1002", "cartons": 60,
                          "gross_kg": 1740.0, "customs_value": 41400.0, "currency": "USD", "tariff": "8711.60",
                          "status": "open", "date": "2025-04-10"},
    "25NL0003PT8812609": {"consignee": "Nordic Home AB", "sku": "CH-OAK4", "lot": "25-0977", "cartons": 320,
                          "gross_kg": 5120.0, "customs_value": 268000.0, "currency": "CNY", "tariff": "9401.61",
                          "status": "open", "date": "2025-04-14"},
    "25NL0003PT8812688": {"consignee": "Lumen Lighting SRL", "sku": "LED-T8X", "lot": "25-1021", "cartons": 500,
                          "gross_kg": 2250.0, "customs_value": 18750.0, "currency": "USD", "tariff": "8539.52",
                          "status": "open", "date": "2025-05-05"},
    "24NL0003PT7730145": {"consignee": "Vandermeer Retail BV", "sku": "SB-AX7", "lot": "24-0990", "cartons": 150,
                          "gross_kg": 1275.0, "customs_value": 21000.0, "currency": "USD", "tariff": "8518.22",
                          "status": "discharged", "date": "2024-12-19"},
    "25NL0003PT8812741": {"consignee": "Vandermeer Retail BV", "sku": "SB-AX7", "lot": "25-1034", "cartons": 180,
                          "gross_kg": 1530.0, "customs_value": 25200.0, "currency": "USD", "tariff": "8518.22",
                          "status": "open", "date": "2025-05-08"},
}

STOCK = [  # the warehouse's lots, oldest first
    {"sku": "TV-55Q8", "lot": "24-0871", "location": "B-14-03", "cartons": 96, "gross_kg": 1580.0},
    {"sku": "TV-55Q8", "lot": "25-0913", "location": "C-02-11", "cartons": 240, "gross_kg": 3960.0},
    {"sku": "BK-E29", "lot": "25-1002", "location": "A-07-02", "cartons": 60, "gross_kg": 1740.0},
    {"sku": "CH-OAK4", "lot": "25-0977", "location": "D-21-05", "cartons": 320, "gross_kg": 5120.0},
    {"sku": "LED-T8X", "lot": "25-1021", "location": "B-03-09", "cartons": 500, "gross_kg": 2250.0},
    {"sku": "SB-AX7", "lot": "25-1034", "location": "C-11-04", "cartons": 180, "gross_kg": 1530.0},
]

RATES = {("USD", "2025-03"): 0.9254, ("USD", "2025-04"): 0.9217, ("USD", "2025-05"): 0.8871,
         ("CNY", "2025-04"): 0.1268, ("CNY", "2025-05"): 0.1224}
DUTY_PCT = {"8528.72": 14.0, "8711.60": 6.0, "9401.61": 5.6, "8539.52": 2.0, "8518.22": 4.9}


def _duty(value: float, rate: float, tariff: str) -> float:
    return round(value * rate * DUTY_PCT[tariff] / 100, 2)


INPUTS = [{"task": f"bonded release {r['ref']} {r['sku']} lot {r['lot']}",
           "message": f"Release request {r['ref']}: please release it for collection today."} for r in REQUESTS.values()]

CASES = [
    {"id": "bonded_stock_any_lot", "input": 0, "switch": "stock_lot", "fault_kind": "tool_ignores_argument",
     "root": {"name": "lookup_stock_lot", "occurrence": 1}, "root_kind": "tool", "failure": "create_release_order",
     "description": "lookup_stock_lot ignored lot 25-0913 and answered with the oldest TV-55Q8 lot, 24-0871 at "
                    "B-14-03, which the release order then named as the location."},
    {"id": "bonded_broker_previous_mrn", "input": 4, "switch": "broker_mrn", "fault_kind": "subagent_wrong_entity",
     "root": {"name": "response", "match": "ROLE customs-broker", "nth": 1}, "root_kind": "llm",
     "failure": "create_release_order",
     "description": "The customs-broker sub-agent read the declaration 24NL0003PT7730145 of Vandermeer's earlier "
                    "SB-AX7 lot 24-0990, already discharged, instead of 25NL0003PT8812741 for lot 25-1034."},
    {"id": "bonded_rate_previous_month", "input": 1, "switch": "fx_month", "fault_kind": "stale_data",
     "root": {"name": "fx_rate", "occurrence": 1}, "root_kind": "tool", "failure": "create_release_order",
     "description": "fx_rate answered for April with March's customs rate, 0.9254 EUR per USD instead of 0.9217, "
                    "so the duty stated for REL-4476 was 2298.69 EUR instead of 2289.50."},
    {"id": "bonded_value_decimal_comma", "input": 2, "switch": "value_format", "fault_kind": "format_drift",
     "root": {"name": "get_declaration", "occurrence": 1}, "root_kind": "tool", "failure": "create_release_order",
     "description": "get_declaration returned the customs value of 25NL0003PT8812609 as the text '268.000,00' "
                    "instead of the number 268000.0, which the broker passed on as 268.0 CNY."},
    {"id": "bonded_plan_skips_broker", "input": 3, "switch": "plan_skip", "fault_kind": "plan_error",
     "root": {"name": "response", "occurrence": 1}, "root_kind": "llm", "failure": "create_release_order",
     "description": "The clerk's plan for REL-4485 left out the customs broker and took the request's entry "
                    "summary number 25NL00ENS0004485 as the release declaration's MRN."},
]


# ----------------------------------------------------------------------------------------------- tools and agents


def _agents(server: FakeModelServer, client: Any) -> Any:
    from agents import Agent, OpenAIResponsesModel, function_tool

    @function_tool
    def get_release_request(ref: str) -> dict:
        """A release request from the consignee: SKU, lot, cartons, haulier, customs reference."""
        return dict(REQUESTS[ref])

    @function_tool
    def list_declarations(consignee: str, sku: str) -> list:
        """Customs declarations lodged for a consignee and SKU, in the order they were lodged."""
        return [{"mrn": m, "lot": d["lot"], "date": d["date"]} for m, d in DECLARATIONS.items()
                if d["consignee"] == consignee and d["sku"] == sku]

    @function_tool
    def get_declaration(mrn: str) -> dict:
        """One customs declaration by MRN."""
        d = dict(DECLARATIONS[mrn])
        if _on("value_format") and d["currency"] == "CNY":
            d["customs_value"] = f"{d['customs_value']:,.2f}".replace(",", "X").replace(".", ",").replace("X", ".")
        return {"mrn": mrn, **d}

    @function_tool
    def lookup_stock_lot(sku: str, lot: str) -> dict:
        """The warehouse's record of a stored lot: location, cartons, gross weight."""
        hits = [s for s in STOCK if s["sku"] == sku and (s["lot"] == lot or _on("stock_lot"))]
        return dict(hits[0])

    @function_tool
    def fx_rate(currency: str, month: str) -> dict:
        """The customs exchange rate of a month, EUR per unit of currency."""
        use = month
        if _on("fx_month"):
            use = f"{month[:5]}{int(month[5:]) - 1:02d}"  # the cache still held last month's table
        return {"currency": currency, "month": month, "eur_per_unit": RATES[(currency, use)]}

    @function_tool
    def compute_duty(customs_value: float, eur_per_unit: float, tariff: str) -> dict:
        """Import duty in EUR for a customs value in its currency, a rate and a tariff code."""
        return {"tariff": tariff, "duty_pct": DUTY_PCT[tariff], "duty_eur": _duty(customs_value, eur_per_unit, tariff)}

    @function_tool(failure_error_function=None)
    def create_release_order(ref: str, mrn: str, lot: str, location: str, cartons: int, duty_eur: float) -> dict:
        """Create the release order; the warehouse system checks it against customs and the stock."""
        if mrn not in DECLARATIONS:
            raise ValueError(f"{mrn} is not a release declaration for free circulation in the customs system")
        d = DECLARATIONS[mrn]
        if d["status"] != "open":
            raise ValueError(f"MRN {mrn}: goods of lot {d['lot']} already discharged from the warehouse on "
                             f"{d['date']}; release {ref} refused")
        held = next(s for s in STOCK if s["location"] == location)
        if held["lot"] != lot:
            raise ValueError(f"location {location} holds lot {held['lot']}; release {ref} asks for lot {lot}")
        assessed = _duty(d["customs_value"], RATES[(d["currency"], REQUESTS[ref]["month"])], d["tariff"])
        if abs(duty_eur - assessed) > 0.5:
            raise ValueError(f"stated duty {duty_eur:.2f} EUR does not match the {assessed:.2f} EUR assessed on "
                             f"MRN {mrn}")
        return {"release_order": f"RO-{ref[4:]}-{lot}", "status": "released", "cartons": cartons}

    model = OpenAIResponsesModel(model=server.model, openai_client=client)
    broker = Agent(name="customs_broker", model=model,
                   instructions="ROLE customs-broker. Find the open customs declaration for the consignee, SKU and "
                                "lot you are given and answer JSON {mrn, lot, cartons, gross_kg, customs_value, "
                                "currency, tariff}.",
                   tools=[list_declarations, get_declaration])
    clerk = Agent(name="release_clerk", model=model,
                  instructions="ROLE release-clerk. State your plan, then release the lot: read the request, get "
                               "the declaration from the customs broker, check the stock lot and the month's "
                               "exchange rate, compute the duty and create the release order.",
                  tools=[get_release_request,
                         broker.as_tool(tool_name="customs_broker",
                                        tool_description="Finds the customs declaration for a release."),
                         lookup_stock_lot, fx_rate, compute_duty, create_release_order])
    return clerk


_state: dict[str, Any] = {}


def _loop() -> asyncio.AbstractEventLoop:
    """One event loop for every run of this agent, so its HTTP client is made once."""
    if "loop" not in _state:
        _state["loop"] = asyncio.new_event_loop()
    return _state["loop"]


def _client_for(server: FakeModelServer) -> Any:
    from openai import AsyncOpenAI

    if _state.get("url") != server.base_url:
        _state["url"] = server.base_url
        _state["client"] = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    return _state["client"]


def close() -> None:
    """Close the HTTP client and the event loop (the generator calls this after the agent's runs)."""
    if "loop" in _state:
        if "client" in _state:
            _state["loop"].run_until_complete(_state["client"].close())
        _state["loop"].close()
    _state.clear()


def record(inp: dict[str, Any], path: str, server: FakeModelServer) -> None:
    from agents import RunConfig, Runner
    from agents.tracing import set_trace_processors
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    async def main() -> None:
        await Runner.run(_agents(server, _client_for(server)), inp["message"],
                         run_config=RunConfig(workflow_name=NAME, trace_metadata={"task": inp["task"]}))

    set_trace_processors([TrajdebugProcessor(path=path, name=NAME)])
    try:
        _loop().run_until_complete(main())
    except Exception:
        pass
    finally:
        set_trace_processors([])


# ----------------------------------------------------------------------------------------------- the model


def _obs(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return ast.literal_eval(text)


def _number(value: Any) -> float:
    return float(str(value).replace(",", ""))


def brain(request: Any) -> Any:
    messages = chat_messages(request)
    role = system_text(messages)
    seen = {r["name"]: _obs(r["content"]) for r in tool_results(messages) if r["name"]}
    user = text_of(next(m for m in messages if m["role"] == "user"))
    if role.startswith("ROLE customs-broker"):
        ask = dict(re.findall(r"(\w+)=([^;]+)", user))
        if "list_declarations" not in seen:
            return Reply(tool_calls=(tool_call("list_declarations", {"consignee": ask["consignee"],
                                                                     "sku": ask["sku"]}),))
        if "get_declaration" not in seen:
            found = seen["list_declarations"]
            pick = found[0] if _on("broker_mrn") else next(d for d in found if d["lot"] == ask["lot"])
            return Reply(tool_calls=(tool_call("get_declaration", {"mrn": pick["mrn"]}),))
        d = seen["get_declaration"]
        return json.dumps({"mrn": d["mrn"], "lot": d["lot"], "cartons": d["cartons"], "gross_kg": d["gross_kg"],
                           "customs_value": _number(d["customs_value"]), "currency": d["currency"],
                           "tariff": d["tariff"]})
    if not role.startswith("ROLE release-clerk"):
        return "No answer."
    ref = re.search(r"REL-\d+", user).group()
    skip_broker = _on("plan_skip")
    if "get_release_request" not in seen:
        steps = ["read the release request"]
        if not skip_broker:
            steps.append("get the release declaration (MRN) from the customs broker")
        else:
            steps.append("use the customs reference on the request as the MRN")
        steps += ["check the stock lot and the month's exchange rate", "compute the duty",
                  "create the release order"]
        plan = "Plan: " + "; ".join(f"{i}) {s}" for i, s in enumerate(steps, 1)) + "."
        return Reply(text=plan, tool_calls=(tool_call("get_release_request", {"ref": ref}),))
    req = seen["get_release_request"]
    if not skip_broker and "customs_broker" not in seen:
        return Reply(tool_calls=(tool_call("customs_broker", {"input": f"consignee={req['consignee']}; "
                                                                       f"sku={req['sku']}; lot={req['lot']}"}),))
    if skip_broker:
        decl = {"mrn": req["customs_ref"], "customs_value": None, "tariff": None}
    else:
        decl = seen["customs_broker"]
    if "lookup_stock_lot" not in seen:
        return Reply(tool_calls=(tool_call("lookup_stock_lot", {"sku": req["sku"], "lot": req["lot"]}),
                                 tool_call("fx_rate", {"currency": decl.get("currency") or "USD",
                                                       "month": req["month"]})))
    stock, fx = seen["lookup_stock_lot"], seen["fx_rate"]
    if "compute_duty" not in seen:
        value = decl["customs_value"] or 0.0
        tariff = decl["tariff"] or "8539.52"
        if skip_broker:
            value = float(stock["gross_kg"]) * 8.3  # the invoice is not at hand: the lot's declared-value estimate
        return Reply(tool_calls=(tool_call("compute_duty", {"customs_value": value,
                                                            "eur_per_unit": fx["eur_per_unit"],
                                                            "tariff": tariff}),))
    if "create_release_order" not in seen:
        return Reply(tool_calls=(tool_call("create_release_order", {
            "ref": req["ref"], "mrn": decl["mrn"], "lot": req["lot"], "location": stock["location"],
            "cartons": req["cartons"], "duty_eur": seen["compute_duty"]["duty_eur"]}),))
    ro = seen["create_release_order"]
    return f"Released {req['ref']}: {ro['release_order']}, {ro['cartons']} cartons for {req['haulier']}."
