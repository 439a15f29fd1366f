"""travel-claims-desk: a travel-insurance claims assistant on the OpenAI Agents SDK.  An intake agent reads
the claim (with notes from earlier conversations loaded by the app), checks the policy and hands off to a
baggage, medical or cancellation desk; the desk gathers the trip, the receipts and the exchange rate and
submits the claim to the claims system, which validates it.  Chat Completions model on a fake server."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Any

from agents import Agent as SDKAgent
from agents import RunConfig, Runner, custom_span, function_tool, trace
from agents_route import models, record_trace
from suite_common import FAULT, Agent, Case, Loc, called_tools, messages_of, results_of, system_text, text_of

from trajdebug.testing import FakeModelServer, Reply, tool_call


NAME = "travel-claims-desk"
MODEL = "gpt-4o-2024-11-20"

POLICIES = {
    "TP-55821": {"holder": "Hana Sato", "customer": "CU-1188", "cover": {"baggage_delay": 300, "medical": 50000, "trip_cancellation": 5000}},
    "TP-61204": {"holder": "Lena Fischer", "customer": "CU-2040", "cover": {"baggage_delay": 300, "medical": 50000, "trip_cancellation": 5000}},
    "TP-47730": {"holder": "Marcus Webb", "customer": "CU-0917", "cover": {"baggage_delay": 250, "medical": 30000, "trip_cancellation": 3000}},
    "TP-50019": {"holder": "Sofia Marino", "customer": "CU-1530", "cover": {"baggage_delay": 300, "medical": 50000, "trip_cancellation": 5000}},
    "TP-58862": {"holder": "Oliver Grant", "customer": "CU-2291", "cover": {"baggage_delay": 300, "medical": 50000, "trip_cancellation": 5000}},
    "TP-63315": {"holder": "Amara Osei", "customer": "CU-3012", "cover": {"baggage_delay": 300, "medical": 50000, "trip_cancellation": 5000}},
    "TP-44108": {"holder": "Jonas Berg", "customer": "CU-0788", "cover": {"baggage_delay": 300, "medical": 50000, "trip_cancellation": 5000}},
    "TP-52290": {"holder": "Priya Das", "customer": "CU-1677", "cover": {"baggage_delay": 300, "medical": 50000, "trip_cancellation": 5000}},
}

TRIPS = {
    "BK-3391": {"policy": "TP-55821", "destination": "Osaka", "start": "2025-04-10", "end": "2025-04-20"},
    "BK-4470": {"policy": "TP-61204", "destination": "Lisbon", "start": "2025-05-02", "end": "2025-05-09"},
    "BK-2210": {"policy": "TP-61204", "destination": "Lisbon", "start": "2024-10-11", "end": "2024-10-18"},
    "BK-5102": {"policy": "TP-47730", "destination": "Bangkok", "start": "2025-03-01", "end": "2025-03-15"},
    "BK-5520": {"policy": "TP-50019", "destination": "Kyoto", "start": "2025-04-03", "end": "2025-04-12"},
    "BK-5634": {"policy": "TP-58862", "destination": "Malaga", "start": "2025-06-14", "end": "2025-06-21"},
    "BK-5701": {"policy": "TP-63315", "destination": "Edinburgh", "start": "2025-07-04", "end": "2025-07-08"},
    "BK-5789": {"policy": "TP-44108", "destination": "New York", "start": "2025-05-18", "end": "2025-05-25"},
    "BK-5840": {"policy": "TP-52290", "destination": "Phuket", "start": "2025-02-08", "end": "2025-02-20"},
}

RECEIPTS = {
    "C-9001": [{"id": "RC-1", "what": "Uniqlo clothing", "category": "essentials", "amount": 18500, "currency": "JPY"},
               {"id": "RC-2", "what": "toiletries, Matsumoto Kiyoshi", "category": "essentials", "amount": 4200, "currency": "JPY"},
               {"id": "RC-3", "what": "Hotel Granvia, 2 extra nights", "category": "accommodation", "amount": 62000, "currency": "JPY"}],
    "C-9104": [{"id": "RC-4", "what": "Clínica Lisboa consultation", "category": "medical", "amount": 95, "currency": "EUR"},
               {"id": "RC-5", "what": "pharmacy, antibiotics", "category": "medical", "amount": 23.4, "currency": "EUR"}],
    "C-9230": [{"id": "RC-6", "what": "clothes, Central World", "category": "essentials", "amount": 5400, "currency": "THB"},
               {"id": "RC-7", "what": "toiletries and charger", "category": "essentials", "amount": 1850, "currency": "THB"}],
    "C-9301": [{"id": "RC-8", "what": "clothes, Takashimaya", "category": "essentials", "amount": 21000, "currency": "JPY"},
               {"id": "RC-9", "what": "toiletries", "category": "essentials", "amount": 3100, "currency": "JPY"}],
    "C-9322": [{"id": "RC-10", "what": "Hospital Quirónsalud emergency room", "category": "medical", "amount": 410, "currency": "EUR"}],
    "C-9340": [{"id": "RC-11", "what": "cancellation invoice, Balmoral Hotel", "category": "cancellation", "amount": 620, "currency": "GBP"}],
    "C-9356": [{"id": "RC-12", "what": "clothes, Macy's", "category": "essentials", "amount": 164.5, "currency": "USD"},
               {"id": "RC-13", "what": "toiletries, Duane Reade", "category": "essentials", "amount": 38.2, "currency": "USD"}],
    "C-9371": [{"id": "RC-14", "what": "Bangkok Hospital Phuket, outpatient", "category": "medical", "amount": 8600, "currency": "THB"}],
}

EUR_PER = {"EUR": 1.0, "JPY": 0.00614, "THB": 0.026, "GBP": 1.18, "USD": 0.92}

NOTES = {  # the app's memory of earlier conversations, oldest first
    "CU-2040": [{"date": "2024-10-20", "claim": "C-8710", "text": "Claim C-8710 on booking BK-2210 (Lisbon, 2024-10-11 to 2024-10-18), lost sunglasses; settled."},
                {"date": "2025-04-28", "claim": "C-9104", "text": "Customer asked about medical cover for booking BK-4470 (Lisbon, 2025-05-02 to 2025-05-09) before travelling."}],
    "CU-3012": [{"date": "2025-06-30", "claim": "C-9340", "text": "Customer warned the Edinburgh trip BK-5701 might be cancelled: her father is in hospital."}],
    "CU-2291": [{"date": "2025-06-25", "claim": "C-9322", "text": "Customer confirmed booking BK-5634 to Malaga."}],
}


class ClaimRejected(RuntimeError):
    pass


# -- tools ------------------------------------------------------------------------------------


@function_tool(failure_error_function=None)
def get_policy(policy_number: str) -> str:
    """Fetch an insurance policy: holder and cover limits (EUR)."""
    return json.dumps({"policy_number": policy_number, **POLICIES[policy_number]})


@function_tool(failure_error_function=None)
def get_trip(booking_ref: str) -> str:
    """Fetch the insured trip of a booking: destination and travel dates."""
    return json.dumps({"booking_ref": booking_ref, **TRIPS[booking_ref]})


@function_tool(failure_error_function=None)
def search_receipts(claim_id: str, category: str) -> str:
    """List the receipts uploaded for a claim in one category (essentials, medical, cancellation, accommodation)."""
    found = RECEIPTS.get(claim_id, [])
    if not FAULT.on("receipts_all_categories"):
        found = [r for r in found if r["category"] == category]
    return json.dumps(found)


@function_tool(failure_error_function=None)
def convert_to_eur(amount: float, currency: str, on_date: str) -> str:
    """Convert an amount to EUR at the reference rate of a date."""
    rate = EUR_PER[currency]
    if FAULT.on("rate_inverted") and currency == "THB":
        rate = round(1 / rate, 4)  # the feed quotes THB per EUR for Asian currencies
    return json.dumps({"amount_eur": round(amount * rate, 2), "rate": rate, "currency": currency, "date": on_date})


@function_tool(failure_error_function=None)
def get_cancellation_terms(booking_ref: str) -> str:
    """Fetch the cancellation terms of a booking (what is refundable by the provider)."""
    return json.dumps({"booking_ref": booking_ref, "refundable_by_provider": 0.0, "notice": "non-refundable rate"})


@function_tool(failure_error_function=None)
def submit_claim(claim_id: str, claim_type: str, policy_number: str, booking_ref: str, incident_date: str,
                 amount_eur: float, receipt_ids: list[str]) -> str:
    """Submit the claim to the claims system, which validates it."""
    trip = TRIPS[booking_ref]
    cover = POLICIES[policy_number]["cover"]
    receipts = {r["id"]: r for r in RECEIPTS.get(claim_id, [])}
    if trip["policy"] != policy_number:
        raise ClaimRejected("Claims system: the booking is not insured under this policy")
    in_trip = incident_date <= trip["end"] if claim_type == "trip_cancellation" else trip["start"] <= incident_date <= trip["end"]
    if not in_trip:
        raise ClaimRejected("Claims system: the incident date is outside the insured trip")
    needed = {"baggage_delay": "essentials", "medical": "medical", "trip_cancellation": "cancellation"}[claim_type]
    if not receipt_ids:
        raise ClaimRejected("Claims system: the evidence required for this claim type is missing")
    if amount_eur > cover[claim_type]:
        raise ClaimRejected("Claims system: the amount claimed is above the cover limit")
    backed = sum(receipts[i]["amount"] * EUR_PER[receipts[i]["currency"]] for i in receipt_ids if i in receipts)
    if amount_eur > backed * 1.02 + 0.5:
        raise ClaimRejected("Claims system: the amount claimed is not supported by the receipts")
    if any(receipts[i]["category"] != needed for i in receipt_ids):
        raise ClaimRejected("Claims system: some receipts are not covered by this claim type")
    return json.dumps({"claim_id": claim_id, "status": "registered", "reference": f"REG-{claim_id[2:]}-{claim_type[:3].upper()}"})


# -- the fake model ---------------------------------------------------------------------------

DESKS = {"baggage desk": ("baggage_delay", "essentials"), "medical desk": ("medical", "medical"),
         "cancellation desk": ("trip_cancellation", "cancellation")}


def _claim_text(msgs: list[dict[str, Any]]) -> str:
    return [text_of(m) for m in msgs if m.get("role") == "user"][-1]


def _notes(msgs: list[dict[str, Any]]) -> str:
    return "\n".join(text_of(m) for m in msgs if m.get("role") == "user" and text_of(m).startswith("Notes from"))


def brain(request: Any) -> Any:
    msgs = messages_of(request)
    system = system_text(msgs)
    claim = _claim_text(msgs)
    notes = _notes(msgs)
    done = {name for name, _args, result in called_tools(msgs) if result is not None}
    policy = re.search(r"TP-\d{5}", claim).group(0)
    claim_id = re.search(r"C-\d{4}", claim).group(0)
    booking = re.search(r"BK-\d{4}", claim) or re.search(r"BK-\d{4}", notes)
    booking_ref = booking.group(0)
    incident = re.search(r"\d{4}-\d\d-\d\d", claim).group(0)
    if "claims intake" in system:
        if "get_policy" not in done:
            return Reply(tool_calls=(tool_call("get_policy", {"policy_number": policy}),))
        low = claim.lower()
        order = [("cancellation_desk", ("cancel",)), ("baggage_desk", ("suitcase", "luggage", "baggage", " bag ")),
                 ("medical_desk", ("doctor", "hospital", "clinic", "food poisoning", "injur"))]
        if not FAULT.on("cancel_keyword_first"):
            order = [order[1], order[2], order[0]]
        desk = next(d for d, words in order if any(w in low for w in words))
        return Reply(tool_calls=(tool_call(f"transfer_to_{desk}", {}),))
    desk = next(d for d in DESKS if d in system)
    claim_type, category = DESKS[desk]
    if "get_trip" not in done:
        calls = [tool_call("get_trip", {"booking_ref": booking_ref}),
                 tool_call("search_receipts", {"claim_id": claim_id, "category": category})]
        if claim_type == "trip_cancellation":
            calls.insert(1, tool_call("get_cancellation_terms", {"booking_ref": booking_ref}))
        return Reply(tool_calls=tuple(calls))
    receipts = results_of(msgs, "search_receipts")[-1]
    if "convert_to_eur" not in done:
        currency = receipts[0]["currency"] if receipts else "EUR"
        total = round(sum(r["amount"] for r in receipts), 2)
        return Reply(tool_calls=(tool_call("convert_to_eur", {"amount": total, "currency": currency, "on_date": incident}),))
    converted = results_of(msgs, "convert_to_eur")[-1]
    if "submit_claim" not in done:
        return Reply(tool_calls=(tool_call("submit_claim", {
            "claim_id": claim_id, "claim_type": claim_type, "policy_number": policy, "booking_ref": booking_ref,
            "incident_date": incident, "amount_eur": converted["amount_eur"],
            "receipt_ids": [r["id"] for r in receipts]}),))
    reg = results_of(msgs, "submit_claim")[-1]
    return (f"Your {claim_type.replace('_', ' ')} claim {claim_id} is registered (reference {reg['reference']}) for "
            f"EUR {converted['amount_eur']:.2f}. We will be in touch within 5 working days.")


# -- the agents ---------------------------------------------------------------------------------


def build(chat_model: Any) -> SDKAgent:
    def desk(name: str, title: str, extra: list[Any]) -> SDKAgent:
        return SDKAgent(
            name=name,
            instructions=f"You are the {title} of a travel insurer. Fetch the trip and the claim's receipts, convert "
                         "the total to EUR on the incident date, submit the claim and tell the customer the outcome.",
            tools=[get_trip, *extra, search_receipts, convert_to_eur, submit_claim],
            model=chat_model,
        )

    baggage = desk("baggage_desk", "baggage desk", [])
    medical = desk("medical_desk", "medical desk", [])
    cancellation = desk("cancellation_desk", "cancellation desk", [get_cancellation_terms])
    return SDKAgent(
        name="claims_intake",
        instructions="You are the claims intake agent of a travel insurer. Check the policy, then hand the claim "
                     "to the right desk: baggage_desk for delayed or lost baggage, medical_desk for illness or "
                     "injury abroad, cancellation_desk for cancelled or cut-short trips.",
        tools=[get_policy],
        handoffs=[baggage, medical, cancellation],
        model=chat_model,
    )


def load_customer_memory(customer: str, claim_id: str) -> list[dict[str, str]]:
    notes = NOTES.get(customer, [])
    # the notes about this claim; the faulty loader takes "the last few conversations" instead
    picked = notes[-3:] if FAULT.on("recent_notes_window") else [n for n in notes if n["claim"] == claim_id]
    with custom_span("load_customer_memory", data={"customer": customer, "claim_id": claim_id, "notes": picked}):
        pass
    return picked


@contextmanager
def session():
    with FakeModelServer(brain, model=MODEL) as server:

        def record(claim: str, path: str) -> BaseException | None:
            policy = re.search(r"TP-\d{5}", claim).group(0)
            claim_id = re.search(r"C-\d{4}", claim).group(0)

            async def main() -> None:
                chat_model, _, client = models(server.base_url, MODEL)
                intake = build(chat_model)
                try:
                    await conversation(intake)
                finally:
                    await client.close()

            async def conversation(intake: SDKAgent) -> None:
                with trace(NAME, metadata={"task": f"process claim {claim_id}"}):
                    notes = load_customer_memory(POLICIES[policy]["customer"], claim_id)
                    items: list[Any] = []
                    if notes:
                        items.append({"role": "user", "content": "Notes from earlier conversations with this customer:\n"
                                      + "\n".join(f"- {n['date']}: {n['text']}" for n in notes)})
                    items.append({"role": "user", "content": claim})
                    await Runner.run(intake, items, run_config=RunConfig(workflow_name=NAME))

            return record_trace(NAME, f"process claim {claim_id}", main, path)

        yield record


AGENT = Agent(
    name=NAME,
    route="openai_agents",
    domain="travel insurance claims",
    summary="the app loads notes of earlier conversations (a custom span); an intake agent checks the policy "
    "and hands off to the baggage, medical or cancellation desk, which fetches the trip and receipts, converts "
    "to EUR and submits the claim to a validating claims system",
    features=["handoffs", "memory across conversations"],
    passing=[
        "Policy TP-50019, booking BK-5520. My suitcase arrived two days late in Kyoto on 2025-04-04; I bought "
        "clothes and toiletries. Claim C-9301.",
        "Policy TP-58862, booking BK-5634. I fell off a scooter in Malaga on 2025-06-17 and had to go to the "
        "hospital emergency room. Claim C-9322.",
        "Policy TP-63315, booking BK-5701. I had to cancel my Edinburgh trip because my father was admitted "
        "on 2025-07-02; the hotel refunds nothing. Claim C-9340.",
        "Policy TP-44108, booking BK-5789. The airline lost my luggage for three days in New York from "
        "2025-05-18; receipts for clothes and toiletries attached. Claim C-9356.",
        "Policy TP-52290, booking BK-5840. I saw a doctor in Phuket on 2025-02-12 for an ear infection. Claim C-9371.",
    ],
    session=session,
    cases=[
        Case(
            "d-claims-cancel-handoff",
            "Policy TP-55821, booking BK-3391. My flight to Osaka was cancelled and rebooked, and when I landed on "
            "2025-04-11 my suitcase did not arrive for three days, so I bought clothes and toiletries. Claim C-9001.",
            "cancel_keyword_first",
            "wrong_routing",
            "The intake model hands a delayed-baggage claim to the cancellation desk because the customer mentions "
            "a cancelled flight; the desk looks for cancellation evidence, finds none and the claims system rejects "
            "the submission.",
            [Loc("generation " + MODEL, 2, "transfer_to_cancellation_desk"),
             Loc("handoff claims_intake -> cancellation_desk"), Loc("generation " + MODEL, 5, "trip_cancellation"),
             Loc("submit_claim")],
        ),
        Case(
            "d-claims-thb-rate",
            "Policy TP-47730, booking BK-5102. My bag was delayed for 4 days in Bangkok after I arrived on "
            "2025-03-01; I had to buy clothes and toiletries. Claim C-9230.",
            "rate_inverted",
            "unit_error",
            "The currency tool uses the THB-per-EUR quote as EUR-per-THB (38.46 instead of 0.026); the 7,250 THB "
            "of receipts become about 278,800 EUR and the claims system rejects the amount.",
            [Loc("convert_to_eur", 1, "38.46"), Loc("generation " + MODEL, 5), Loc("submit_claim")],
        ),
        Case(
            "d-claims-receipt-filter",
            "Policy TP-55821, booking BK-3391. My suitcase was delayed three days after I landed in Osaka on "
            "2025-04-11; I bought clothes and toiletries and stayed two extra nights. Claim C-9001.",
            "receipts_all_categories",
            "tool_ignores_argument",
            "The receipt search ignores the category filter and also returns the hotel receipt; the desk claims "
            "84,700 JPY (about 520 EUR) for delayed baggage and the claims system rejects it as above the limit.",
            [Loc("search_receipts", 1, "RC-3"), Loc("generation " + MODEL, 4), Loc("convert_to_eur"),
             Loc("generation " + MODEL, 5), Loc("submit_claim")],
        ),
        Case(
            "d-claims-old-trip-notes",
            "Policy TP-61204. I got food poisoning on my Lisbon trip and saw a doctor on 2025-05-05; receipts for "
            "the clinic and the pharmacy are attached. Claim C-9104.",
            "recent_notes_window",
            "context_pollution",
            "The app loads the customer's most recent notes instead of the notes about this claim; a note about "
            "an earlier Lisbon trip (BK-2210, October 2024) enters the prompt, the medical desk uses that booking "
            "and the claims system finds the incident outside the insured trip.",
            [Loc("load_customer_memory", 1, "BK-2210"), Loc("generation " + MODEL, 3, "BK-2210"), Loc("get_trip"),
             Loc("generation " + MODEL, 5), Loc("submit_claim")],
        ),
    ],
)
