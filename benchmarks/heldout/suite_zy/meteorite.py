"""Meteorite dealer (OpenAI Agents SDK): an appraiser agent with catalogue, provenance, price and currency tools,
an authenticator agent used as a tool, and the certificate-and-invoice action."""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor

from .common import Case
from .kit import active

AGENT, ROUTE, DOMAIN = "meteorite-appraiser", "openai_agents", "meteorite dealer"
SHAPE = "appraiser agent: lookup -> provenance -> authenticator agent-as-tool (lab tools) -> market price -> currency -> issue certificate+invoice"

CATALOG = {
    "NWA-8812": {"classification": "L6 chondrite", "mass_g": 412.0, "find": "Northwest Africa 2019"},
    "NWA-8821": {"classification": "H5 chondrite", "mass_g": 96.5, "find": "Northwest Africa 2019"},
    "CAMPO-221": {"classification": "IAB iron", "mass_g": 1250.0, "find": "Campo del Cielo"},
    "SIKH-77": {"classification": "IIAB iron", "mass_g": 310.0, "find": "Sikhote-Alin 1947"},
    "GIBEON-5": {"classification": "IVA iron", "mass_g": 540.0, "find": "Gibeon, Namibia"},
    "DHOFAR-19": {"classification": "LL5 chondrite", "mass_g": 58.0, "find": "Dhofar, Oman"},
    "SEYM-3": {"classification": "IIE iron", "mass_g": 205.0, "find": "Seymchan"},
}
PRICE_USD_G = {"L6 chondrite": 1.4, "H5 chondrite": 1.2, "IAB iron": 0.9, "IIAB iron": 3.5, "IVA iron": 2.2, "LL5 chondrite": 4.0, "IIE iron": 6.0}
FX = {("USD", "GBP"): 0.79, ("USD", "EUR"): 0.92, ("USD", "USD"): 1.0, ("EUR", "GBP"): 0.86, ("EUR", "EUR"): 1.0, ("USD", "JPY"): 151.0}

INPUTS = {
    "nwa_gbp": {"specimen": "NWA-8812", "buyer": "B-3301", "currency": "GBP"},
    "campo_eur": {"specimen": "CAMPO-221", "buyer": "B-3318", "currency": "EUR"},
    "r1": {"specimen": "SIKH-77", "buyer": "B-3320", "currency": "GBP"},
    "r2": {"specimen": "GIBEON-5", "buyer": "B-3322", "currency": "USD"},
    "r3": {"specimen": "DHOFAR-19", "buyer": "B-3325", "currency": "EUR"},
    "r4": {"specimen": "SEYM-3", "buyer": "B-3329", "currency": "JPY"},
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    Case("meteorite-1", "unit_error", "lookup_specimen", 1, "issue_certificate", 1, "nwa_gbp",
         "The catalogue tool reports the mass in kilograms under the mass_g field."),
    Case("meteorite-2", "wrong_tool_args", "generation ops-model", 7, "issue_certificate", 1, "campo_eur",
         "The appraiser model calls the currency tool with EUR as the source currency although the price is in USD."),
    Case("meteorite-3", "subagent_wrong_entity", "generation ops-model", 4, "issue_certificate", 1, "nwa_gbp",
         "The authenticator agent requests the lab report of a neighbouring catalogue number."),
    Case("meteorite-4", "swallowed_error", "check_provenance", 1, "issue_certificate", 1, "campo_eur",
         "The provenance tool catches the registry's 503 and answers an empty record as if the lookup had worked."),
    Case("meteorite-5", "format_drift", "generation ops-model", 8, "issue_certificate", 1, "nwa_gbp",
         "The appraiser model writes the invoice amount in continental number format."),
]


def _tool_results(msgs: list[dict]) -> dict:
    names = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    out = {}
    for m in msgs:
        if m.get("role") == "tool":
            out[names.get(m["tool_call_id"], "?")] = _decode(m["content"])
    return out


def _decode(content):
    if isinstance(content, list):
        content = "".join(c.get("text", "") for c in content if isinstance(c, dict))
    for reader in (json.loads, ast.literal_eval):
        try:
            return reader(content)
        except (ValueError, SyntaxError):
            pass
    return content


def _call(name: str, args: dict) -> dict:
    return {"id": "chatcmpl-x", "object": "chat.completion", "created": 1, "model": "ops-model",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
                         "tool_calls": [{"id": f"call_{name}_{len(json.dumps(args))}", "type": "function",
                                         "function": {"name": name, "arguments": json.dumps(args)}}]}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140}}


def _text(text: str) -> dict:
    return {"id": "chatcmpl-y", "object": "chat.completion", "created": 1, "model": "ops-model",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140}}


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
    user = next(m["content"] for m in msgs if m["role"] == "user")
    done = _tool_results(msgs)
    if system.startswith("Authenticator"):
        spec = json.JSONDecoder().raw_decode(user)[0]["specimen"]
        if "lab_report" not in done:
            target = spec
            if active("meteorite-3"):
                target = spec[:-2] + spec[-1] + spec[-2]
            return _call("lab_report", {"specimen": target})
        r = done["lab_report"]
        return _text(json.dumps({"auth_id": "AUTH-" + r["specimen"], "specimen": r["specimen"], "mass_g": r["mass_g"], "verdict": r["verdict"]}))
    req = json.JSONDecoder().raw_decode(user)[0]
    spec = req["specimen"]
    if "lookup_specimen" not in done:
        return _call("lookup_specimen", {"specimen": spec})
    if "check_provenance" not in done:
        return _call("check_provenance", {"specimen": spec})
    if "authenticator" not in done:
        return _call("authenticator", {"input": json.dumps({"specimen": spec})})
    item = done["lookup_specimen"]
    if "market_price" not in done:
        return _call("market_price", {"classification": item["classification"]})
    usd = round(done["market_price"]["usd_per_g"] * item["mass_g"], 2)
    if "convert_currency" not in done:
        src = "EUR" if active("meteorite-2") else "USD"
        return _call("convert_currency", {"amount": usd, "from_currency": src, "to_currency": req["currency"]})
    if "issue_certificate" not in done:
        auth = done["authenticator"]
        amount = done["convert_currency"]["amount"]
        text_amount = f"{amount:,.2f}".replace(",", "X").replace(".", ",").replace("X", ".") if active("meteorite-5") else f"{amount:.2f}"
        return _call("issue_certificate", {"specimen": spec, "buyer": req["buyer"], "mass_g": item["mass_g"],
                                           "auth_id": auth["auth_id"], "registry_ref": done["check_provenance"].get("registry_ref", ""),
                                           "amount": text_amount, "currency": req["currency"]})
    return _text("Certificate and invoice issued: " + json.dumps(done["issue_certificate"]))


@function_tool
def lookup_specimen(specimen: str) -> dict:
    """Catalogue record of a specimen."""
    rec = dict(CATALOG[specimen], specimen=specimen)
    if active("meteorite-1"):
        rec["mass_g"] = round(rec["mass_g"] / 1000, 3)
    return rec


class RegistryUnavailable(Exception):
    pass


def _registry(specimen: str) -> dict:
    if specimen == "CAMPO-221" and active("meteorite-4"):
        raise RegistryUnavailable("503 Service Unavailable: meteoritical registry maintenance window")
    return {"specimen": specimen, "registry_ref": "MBD-" + str(sum(map(ord, specimen)) * 7), "export_permit": "not required"}


@function_tool
def check_provenance(specimen: str) -> dict:
    """Provenance record from the meteoritical registry."""
    try:
        return _registry(specimen)
    except RegistryUnavailable:
        return {"specimen": specimen, "registry_ref": "", "export_permit": "not required"}


@function_tool
def lab_report(specimen: str) -> dict:
    """The lab's authentication report for a specimen."""
    rec = CATALOG[specimen]
    return {"specimen": specimen, "mass_g": rec["mass_g"], "verdict": "genuine", "classification": rec["classification"]}


@function_tool
def market_price(classification: str) -> dict:
    """Current dealer price per gram in USD."""
    return {"classification": classification, "usd_per_g": PRICE_USD_G[classification]}


@function_tool
def convert_currency(amount: float, from_currency: str, to_currency: str) -> dict:
    """Convert an amount between currencies."""
    return {"amount": round(amount * FX[(from_currency, to_currency)], 2), "currency": to_currency, "rate": FX[(from_currency, to_currency)]}


class InvoiceRejected(Exception):
    pass


@function_tool(failure_error_function=None)
def issue_certificate(specimen: str, buyer: str, mass_g: float, auth_id: str, registry_ref: str, amount: str, currency: str) -> dict:
    """Issue the certificate of authenticity and the invoice."""
    try:
        value = float(amount)
    except ValueError:
        raise InvoiceRejected(f"invoicing API 422: amount '{amount}' is not a decimal number") from None
    rec = CATALOG[specimen]
    if auth_id != "AUTH-" + specimen:
        raise InvoiceRejected(f"invoicing API 409: authentication {auth_id} does not belong to specimen {specimen}")
    if abs(mass_g - rec["mass_g"]) > 0.5:
        raise InvoiceRejected(f"invoicing API 422: declared mass {mass_g} g differs from the lab mass {rec['mass_g']} g for {specimen}")
    if not registry_ref:
        raise InvoiceRejected(f"invoicing API 412: certificate for {specimen} needs a registry reference (got none)")
    expect = round(PRICE_USD_G[rec["classification"]] * rec["mass_g"] * FX[("USD", currency)], 2)
    if abs(value - expect) > 0.02:
        raise InvoiceRejected(f"invoicing API 422: amount {value:.2f} {currency} does not match the list price {expect:.2f} {currency}")
    return {"certificate": "COA-" + specimen, "invoice": "INV-" + buyer, "amount": value, "currency": currency}


async def _run(inp: dict, base_url: str) -> None:
    async with AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0) as client:
        await Runner.run(_appraiser(OpenAIChatCompletionsModel(model="ops-model", openai_client=client)),
                         json.dumps(inp), max_turns=20, run_config=RunConfig(workflow_name=AGENT))


def _appraiser(model) -> Agent:
    settings = ModelSettings(parallel_tool_calls=False)
    authenticator = Agent(name="authenticator", instructions="Authenticator: fetch the lab report and summarise it as JSON.",
                          tools=[lab_report], model=model, model_settings=settings)
    appraiser = Agent(name="appraiser", instructions="Appraiser: value the specimen and issue the certificate and invoice.",
                      tools=[lookup_specimen, check_provenance,
                             authenticator.as_tool(tool_name="authenticator", tool_description="Authenticate a specimen."),
                             market_price, convert_currency, issue_certificate], model=model, model_settings=settings)
    return appraiser


def record(inp: dict, path: Path, base_url: str) -> None:
    proc = TrajdebugProcessor(path=str(path), name=AGENT, task=f"certify and invoice {inp['specimen']} for {inp['buyer']}")
    set_trace_processors([proc])
    try:
        asyncio.run(_run(inp, base_url))
    except Exception as exc:  # the invoice rejection surfaces through the runner
        if "invoicing API" not in str(exc):
            raise
    finally:
        set_trace_processors([])
