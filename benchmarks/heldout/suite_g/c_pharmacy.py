"""Pharmacy refill assistant (route c: the openai client under OpenInference, plus the agent's own OTel spans).

A patient messages the pharmacy for a refill. A model extracts the request, the assistant fetches the
prescription, searches the plan formulary (a retriever), converts the directions into a dispense quantity,
has a model write the dispense line, parses it and submits the claim to the insurer, whose adjudication
checks the prescription version, the product, the code and the quantity.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .common import AgentSpec, Case, Req, active, brain, keyed, oi_chat, oi_span, record_otel, table


AGENT = "pharmacy-refill-assistant"

RX = keyed(
    "patient drug form strength_mg dose unit times_per_day days version",
    {
        'RX-5501': ('Ada Moreno', 'hydralazine', 'tablet', 25, 1, 'tab', 2, 30, 4),
        'RX-5502': ('Tom Okafor', 'amoxicillin', 'solution', None, 1, 'tsp', 3, 10, 1),
        'RX-5503': ('Lea Brandt', 'metformin', 'tablet', 500, 2, 'tab', 2, 30, 2),
        'RX-5504': ('Sam Ito', 'hydralazine', 'tablet', 50, 1, 'tab', 3, 30, 1),
        'RX-5505': ('Ruth Adeyemi', 'cetirizine', 'solution', None, 2, 'tsp', 1, 30, 1),
        'RX-5506': ('Ivan Petrov', 'lisinopril', 'tablet', 10, 1, 'tab', 1, 90, 3),
        'RX-5507': ('Mia Chen', 'hydroxyzine', 'tablet', 25, 1, 'tab', 3, 30, 1),
        'RX-5508': ('Noor Haddad', 'atorvastatin', 'tablet', 20, 1, 'tab', 1, 30, 2),
    },
)
RX_CACHE = {"RX-5501": {"strength_mg": 10, "version": 3}}  # a snapshot from before the prescriber's change
FORMULARY = table(
    "drug ndc tier limit_per_30d",
    [
        ('hydralazine', '00378-0181-01', 2, 400),
        ('hydroxyzine', '00591-5523-01', 1, 120),
        ('amoxicillin', '00093-4155-73', 1, 500),
        ('metformin', '00093-1048-01', 1, 180),
        ('cetirizine', '00904-6293-20', 1, 300),
        ('lisinopril', '68180-0513-01', 1, 90),
        ('atorvastatin', '60505-2580-03', 1, 30),
    ],
)
ML_PER = {"tsp": 5.0, "tbsp": 15.0}


class ClaimRejected(RuntimeError):
    """The insurer's adjudication rejected the claim."""


@brain("pharmacy.intake")
def _intake(req: Req) -> str:
    rx = re.search(r"RX-\d{4}", req.user)
    return json.dumps({"rx": rx.group(0) if rx else None, "intent": "refill"})


@brain("pharmacy.dispense")
def _dispense(req: Req) -> str:
    ctx = json.loads(req.user)
    rx, qty, drug = ctx["prescription"], ctx["quantity"], ctx["formulary"][0]
    return (
        f"Dispense {qty['amount']} {qty['unit']} ({rx['days']}-day supply) of NDC {drug['ndc']} "
        f"under {ctx['rx']} v{rx['version']}."
    )


def fetch_prescription(rx_id: str) -> dict:
    with oi_span("fetch_prescription", "TOOL", {"rx": rx_id}) as s:
        rec = dict(RX[rx_id])
        if active("pharmacy.rx_cache") and rx_id in RX_CACHE:
            rec.update(RX_CACHE[rx_id])
        return s.output(rec)


def formulary_search(drug: str) -> list[dict]:
    with oi_span("formulary_search", "RETRIEVER", drug) as s:
        if active("pharmacy.prefix_match"):
            docs = sorted((d for d in FORMULARY if d["drug"][:4] == drug[:4]), key=lambda d: d["tier"])
        else:
            docs = [d for d in FORMULARY if d["drug"] == drug]
        s.output({"documents": docs})
        return docs


def dose_calculator(rx: dict) -> dict:
    with oi_span("dose_calculator", "TOOL", {k: rx[k] for k in ("form", "dose", "unit", "times_per_day", "days")}) as s:
        if rx["form"] == "tablet":
            out = {"amount": rx["dose"] * rx["times_per_day"] * rx["days"], "unit": "tablets"}
        else:
            per = ML_PER["tbsp"] if active("pharmacy.spoon_unit") else ML_PER[rx["unit"]]
            out = {
                "ml_per_day": rx["dose"] * per * rx["times_per_day"],
                "amount": int(rx["dose"] * per * rx["times_per_day"] * rx["days"]),
                "unit": "mL",
            }
        return s.output(out)


def parse_dispense(text: str) -> dict:
    with oi_span("parse_dispense", "CHAIN", text) as s:
        ndc = r"NDC (\d{5}-\d{4})" if active("pharmacy.ndc_pattern") else r"NDC (\d{5}-\d{4}-\d{2})"
        m = re.search(r"Dispense (\d+) (\w+) \((\d+)-day supply\)", text)
        out = {
            "quantity": int(m.group(1)),
            "unit": m.group(2),
            "days": int(m.group(3)),
            "ndc": re.search(ndc, text).group(1),
            "rx": re.search(r"RX-\d{4}", text).group(0),
            "version": int(re.search(r" v(\d+)", text).group(1)),
        }
        return s.output(out)


def submit_claim(claim: dict) -> dict:
    with oi_span("submit_claim", "TOOL", claim) as s:
        rx = RX[claim["rx"]]
        if claim["version"] != rx["version"]:
            raise ClaimRejected("prescription on the claim has been superseded by a newer order")
        product = next((d for d in FORMULARY if d["ndc"][:10] == claim["ndc"][:10]), None)
        if product is None or len(claim["ndc"]) != 13:
            raise ClaimRejected("product code on the claim is incomplete or unknown (NCPDP 21)")
        if product["drug"] != rx["drug"]:
            raise ClaimRejected("dispensed product is not a formulation of the prescribed drug")
        if claim["quantity"] * 30 / claim["days"] > product["limit_per_30d"]:
            raise ClaimRejected("quantity exceeds the plan limit for the days supplied")
        return s.output({"claim": f"CLM-{claim['rx'][3:]}", "status": "paid", "copay": 5.0})


def agent(message: str) -> str:
    intake = json.loads(oi_chat("desk: pharmacy.intake. Extract the refill request as JSON.", message))
    rx = fetch_prescription(intake["rx"])
    docs = formulary_search(rx["drug"])
    qty = dose_calculator(rx)
    ctx = {"rx": intake["rx"], "prescription": rx, "formulary": docs, "quantity": qty}
    line = oi_chat("desk: pharmacy.dispense. Write the dispense line.", json.dumps(ctx))
    claim = parse_dispense(line)
    paid = submit_claim(claim)
    return f"Your refill is ready; copay {paid['copay']:.2f}."


def record(inp: dict, path: Path) -> None:
    record_otel(AGENT, inp["message"], lambda: agent(inp["message"]), path, ClaimRejected)


def _in(rx: str, text: str) -> dict[str, Any]:
    return {"message": f"Hi, could you refill {rx}? {text}"}


# fmt: off
SPEC = AgentSpec(
    agent=AGENT, route="c", domain="pharmacy refills", record=record, ext="json",
    summary="intake LLM, prescription tool, formulary retriever, dose calculator, dispense LLM, parse, claim",
    refs=[_in("RX-5503", "Picking up Friday."), _in("RX-5508", "Ninety days please."),
          _in("RX-5507", "Thanks!"), _in("RX-5502", "My son needs it today.")],
    cases=[
        Case("g_pharmacy_rxcache", "stale_data", "pharmacy.rx_cache", _in("RX-5501", "Same as usual."),
             "fetch_prescription", '"version": 3',
             "The prescription lookup answers from a snapshot taken before the prescriber changed the order."),
        Case("g_pharmacy_formulary", "wrong_retrieval", "pharmacy.prefix_match", _in("RX-5504", "Running low."),
             "formulary_search", "hydroxyzine",
             "The formulary search matches on the drug name's prefix and ranks a sound-alike drug first."),
        Case("g_pharmacy_ndc", "lossy_parse", "pharmacy.ndc_pattern", _in("RX-5506", "Before the weekend if possible."),
             "parse_dispense", lambda out: '"ndc": "68180-0513"' in str(out) or "'ndc': '68180-0513'" in str(out),
             "The dispense-line parser keeps only the labeler and product segments of the NDC."),
        Case("g_pharmacy_spoons", "unit_error", "pharmacy.spoon_unit", _in("RX-5505", "For my daughter."),
             "dose_calculator", '"ml_per_day": 30.0',
             "The dose calculator converts teaspoons with the tablespoon volume."),
    ],
)
# fmt: on
