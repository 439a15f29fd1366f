"""Philatelic appraisal desk (openai_agents): triage hands off to a specialist, who looks up, compares, has a certificate sub-agent check, and issues a valuation."""

from __future__ import annotations

import json
import re
from typing import Any

from agents import Agent, Runner, function_tool
from agents.tracing import trace
from trajdebug.testing import Reply, tool_call

from .common import _parse, sdk_history, sdk_model, sdk_setup
from .kit import active

NAME = "stamp-appraisal-desk"
ROUTE = "openai_agents"
INPUTS = {
    "penny": "Appraise lot L-0422: Great Britain 1840 2d blue, SG 2, plate 1, four margins, certificate BPA-55120",
    "seahorse": "Appraise lot L-0431: Great Britain 1913 Seahorse 10s blue, SG 402, fine used, certificate RPS-20917",
    "ref1": "Appraise lot L-0407: Great Britain 1841 1d red, SG 8, plate 40, three margins, certificate BPA-54011",
    "ref2": "Appraise lot L-0410: Great Britain 1867 5s rose, SG 126, plate 1, fine used, certificate RPS-19822",
    "ref3": "Appraise lot L-0415: Great Britain 1902 2s6d lilac, SG 260, mint, certificate BPA-54890",
    "ref4": "Appraise lot L-0419: Great Britain 1929 PUC GBP1 black, SG 438, used, certificate RPS-20300",
}
CATALOGUE = {"2": ("1840 2d blue", 1200), "3": ("1840 2d pale blue", 1450), "402": ("1913 Seahorse 10s indigo-blue", 900),
             "403": ("1913 Seahorse GBP1 green", 1600), "8": ("1841 1d red", 45), "126": ("1867 5s rose", 650),
             "260": ("1902 2s6d lilac", 280), "438": ("1929 PUC GBP1 black", 850), "439": ("PUC GBP1 specimen", 2500)}
CERTS = {"L-0422": "BPA-55120", "L-0431": "RPS-20917", "L-0407": "BPA-54011", "L-0410": "RPS-19822",
         "L-0415": "BPA-54890", "L-0419": "RPS-20300", "L-0418": "BPA-55002", "L-0430": "RPS-20888"}


def _lot(text: str) -> dict:
    m = re.search(r"lot (L-\d+).*?SG (\d+).*certificate (\S+)", text)
    return {"lot": m.group(1), "sg": m.group(2), "cert": m.group(3)}


def policy(request: Any) -> Any:
    system, user, res = sdk_history(request)
    if system.startswith("Certificate desk"):
        if "fetch_certificate" in res:
            return json.dumps(res["fetch_certificate"])
        lot = re.search(r"(L-\d+)", user).group(1)
        if active("st_entity"):
            lot = f"L-{int(lot[2:]) - 4:04d}"
        return Reply(tool_calls=(tool_call("fetch_certificate", {"lot": lot}),))
    if system.startswith("Intake desk"):
        target = "transfer_to_worldwide_specialist" if active("st_routing") else "transfer_to_gb_specialist"
        return Reply(tool_calls=(tool_call(target, {}),))
    d = _lot(user)
    basis = "Michel" if system.startswith("Worldwide") else "Stanley Gibbons"
    if "lookup_catalogue" not in res:
        sg = str(int(d["sg"]) + 1) if active("st_args") else d["sg"]
        return Reply(tool_calls=(tool_call("lookup_catalogue", {"number": sg, "catalogue": basis}),))
    if "check_condition" not in res:
        return Reply(tool_calls=(tool_call("check_condition", {"lot": d["lot"]}),))
    if "get_auction_comps" not in res:
        return Reply(tool_calls=(tool_call("get_auction_comps", {"number": d["sg"], "limit": 6}),))
    if "certificate_desk" not in res:
        return Reply(tool_calls=(tool_call("certificate_desk", {"input": f"Verify the certificate for lot {d['lot']}"}),))
    if "issue_valuation" not in res:
        cat = res["lookup_catalogue"]
        cert = res["certificate_desk"]
        if isinstance(cert, str):
            cert = _parse(cert)
        comps = res["get_auction_comps"]["sales"]
        value = cat["price_gbp"]
        if active("st_halluc"):
            value = 1850
        est = round(sum(c["hammer_gbp"] for c in comps) / max(1, len(comps)))
        return Reply(tool_calls=(tool_call("issue_valuation", {
            "lot": d["lot"], "number": cat["number"], "catalogue": basis, "catalogue_gbp": value,
            "condition_grade": res["check_condition"]["grade"], "estimate_gbp": est,
            "comps": [c["sale"] for c in comps], "certificate": cert.get("certificate"), "certificate_lot": cert.get("lot")}),))
    return f"Valuation issued: {json.dumps(res['issue_valuation'])}"


@function_tool
def lookup_catalogue(number: str, catalogue: str) -> dict:
    """Look up a stamp's catalogue entry and price."""
    desc, price = CATALOGUE.get(number, ("unlisted", 0))
    return {"number": number, "catalogue": catalogue, "description": desc, "price_gbp": price if catalogue == "Stanley Gibbons" else round(price * 1.17)}


@function_tool
def check_condition(lot: str) -> dict:
    """Grade a lot's condition from its scans."""
    return {"lot": lot, "grade": "fine", "margins": 4, "flaws_seen": "none"}


@function_tool
def get_auction_comps(number: str, limit: int) -> dict:
    """Recent hammer prices for a catalogue number."""
    base = CATALOGUE.get(number, ("", 100))[1]
    sales = [{"sale": f"SALE-{number}-{i}", "hammer_gbp": round(base * (0.7 + 0.05 * i))} for i in range(limit)]
    if active("st_trunc"):
        sales = sales[:2]
    return {"number": number, "sales": sales, "count": len(sales)}


@function_tool
def fetch_certificate(lot: str) -> dict:
    """Fetch the expert certificate registered for a lot."""
    return {"lot": lot, "certificate": CERTS.get(lot, "none"), "opinion": "genuine"}


@function_tool(failure_error_function=None)
def issue_valuation(lot: str, number: str, catalogue: str, catalogue_gbp: int, condition_grade: str, estimate_gbp: int,
                    comps: list[str], certificate: str, certificate_lot: str) -> dict:
    """Issue the signed valuation for a lot (checked by the valuation register)."""
    errs = []
    desc, price = CATALOGUE.get(number, ("unlisted", 0))
    if catalogue != "Stanley Gibbons":
        errs.append(f"basis catalogue '{catalogue}' is not accepted for GB lots")
    if catalogue_gbp != price:
        errs.append(f"catalogue_gbp {catalogue_gbp} differs from SG {number} list price {price}")
    if certificate_lot != lot:
        errs.append(f"certificate {certificate} belongs to lot {certificate_lot}, not {lot}")
    if len(comps) < 5:
        errs.append(f"valuation needs at least 5 comparable sales, got {len(comps)}")
    if not comps or not all(c.startswith(f"SALE-{number}-") for c in comps) or number not in LOT_NUMBERS.get(lot, ()):
        errs.append(f"comparables and catalogue number SG {number} do not describe lot {lot}")
    if errs:
        raise ValueError("422 valuation register: " + "; ".join(errs))
    return {"valuation": f"VAL-{lot}", "estimate_gbp": estimate_gbp}


LOT_NUMBERS = {_lot(t)["lot"]: (_lot(t)["sg"],) for t in INPUTS.values()}


def run_case(ctx: dict, inp: str, path: str) -> None:
    text = INPUTS[inp]
    model = sdk_model(ctx)
    cert_agent = Agent(name="certificate_desk_agent", instructions="Certificate desk: fetch and report the expert certificate for the lot named.",
                       model=model, tools=[fetch_certificate])
    tools = [lookup_catalogue, check_condition, get_auction_comps,
             cert_agent.as_tool(tool_name="certificate_desk", tool_description="Verify a lot's expert certificate."), issue_valuation]
    gb = Agent(name="gb_specialist", instructions="GB specialist: value Great Britain lots against Stanley Gibbons.", model=model, tools=tools)
    ww = Agent(name="worldwide_specialist", instructions="Worldwide specialist: value foreign lots against Michel.", model=model, tools=tools)
    intake = Agent(name="intake_desk", instructions="Intake desk: pass each lot to the right specialist.", model=model, handoffs=[gb, ww])
    proc = sdk_setup(path, NAME, text)
    try:
        with trace(NAME):
            Runner.run_sync(intake, text, max_turns=20)
    except ValueError:
        pass
    except Exception as exc:  # the SDK wraps tool errors in its own types
        if "422 valuation register" not in str(exc):
            raise
    proc.force_flush()


CASES = [
    ("st_halluc", "hallucinated_value", "penny", "generation fake-model", 8, "llm", "issue_valuation", 1,
     "The specialist model states a catalogue price of 1850 that the catalogue lookup did not return."),
    ("st_args", "wrong_tool_args", "seahorse", "generation fake-model", 2, "llm", "issue_valuation", 1,
     "The specialist model looks up the next catalogue number instead of the lot's own."),
    ("st_entity", "subagent_wrong_entity", "penny", "generation fake-model", 6, "llm", "issue_valuation", 1,
     "The certificate sub-agent fetches the certificate of a different lot."),
    ("st_trunc", "truncated_result", "seahorse", "get_auction_comps", 1, "tool", "issue_valuation", 1,
     "The auction comparables service returns only 2 of the 6 sales asked for."),
    ("st_routing", "wrong_routing", "penny", "generation fake-model", 1, "llm", "issue_valuation", 1,
     "The intake desk hands a Great Britain lot to the worldwide specialist."),
]
REFS = ["ref1", "ref2", "ref3", "ref4"]
