"""Gold panning tours (sdk): a tour desk books a guided creek panning trip for a party."""

from __future__ import annotations

import json
import re
from pathlib import Path

import trajdebug

from .common import Case, last_user, register_policy
from .kit import active
from .sdkutil import ask

AGENT, ROUTE, DOMAIN, EXT = "gold_panning_tours", "sdk", "gold panning tours", "jsonl"
SHAPE = "extract -> parse -> creek catalogue -> conditions per creek (retry) -> scores -> LLM ranking -> state -> permit -> price -> FX -> confirmation -> booking API"

INPUTS = {
    "arrow": "Enquiry ENQ-311: party of 6 (2 children) wants a gold panning tour on 2026-03-14, paying in NZD, likes creeks with visible colour.",
    "shotover": "Enquiry ENQ-318: party of 4 (1 children) wants a gold panning tour on 2026-03-21, paying in AUD, quiet creek please.",
    "r1": "Enquiry ENQ-320: party of 3 (0 children) wants a gold panning tour on 2026-04-02, paying in NZD, any creek.",
    "r2": "Enquiry ENQ-322: party of 8 (3 children) wants a gold panning tour on 2026-04-09, paying in USD, family friendly.",
    "r3": "Enquiry ENQ-325: party of 2 (0 children) wants a gold panning tour on 2026-04-11, paying in AUD, best gold grade.",
    "r4": "Enquiry ENQ-329: party of 5 (2 children) wants a gold panning tour on 2026-04-18, paying in NZD, short walk in.",
}
REFS = ["r1", "r2", "r3", "r4"]

CREEKS = {
    "Arrow Bend": {"flow_lps": 1800, "grade_mg_t": 42, "walk_min": 20},
    "Skippers Reach": {"flow_lps": 2600, "grade_mg_t": 35, "walk_min": 45},
    "Moke Flat": {"flow_lps": 900, "grade_mg_t": 28, "walk_min": 10},
    "Macetown Ford": {"flow_lps": 5400, "grade_mg_t": 55, "walk_min": 60},
}
SAFE_FLOW = 3000
TARIFF = {"adult": 150.0, "child": 90.0}
FX = {"NZD": 1.0, "AUD": 0.91, "USD": 0.6}

CASES = [
    Case("zu_gold_01", "gold.price_range", "off_by_one", "arrow", "price_tour", 1, "other", "book_tour", 1,
         "The price loop iterates from the second participant, so the party total omits one adult."),
    Case("zu_gold_02", "gold.cached_reading", "stale_data", "arrow", "fetch_creek_conditions", 2, "tool", "book_tour", 1,
         "The conditions feed serves last season's cached flow for Macetown Ford, which then ranks first and the booking API rejects its live flow."),
    Case("zu_gold_03", "gold.extract_date", "hallucinated_value", "shotover", "extract_request", 1, "llm", "book_tour", 1,
         "The extraction model states a tour date the enquiry never gave, and the booking API finds it does not match the enquiry."),
    Case("zu_gold_04", "gold.fx_error_payload", "swallowed_error", "shotover", "convert_currency", 1, "tool", "book_tour", 1,
         "The FX service answers an error payload, the code falls back to a rate of 1.0 silently, and the charged amount is short."),
    Case("zu_gold_05", "gold.selection_party", "bad_memory_write", "arrow", "save_selection", 1, "state", "book_tour", 1,
         "The selection written to run state records the number of children as the party size, so the permit and price cover too few people."),
]


def _policy(body: dict) -> str:
    user = last_user(body)
    if "Extract" in body["messages"][0]["content"]:
        m = re.search(r"party of (\d+) \((\d+) children\).*?on (\d{4}-\d\d-\d\d), paying in (\w+)", user)
        date = m.group(3)
        if active("gold.extract_date"):
            date = "2026-03-22"
        return json.dumps({"party": int(m.group(1)), "children": int(m.group(2)), "date": date, "currency": m.group(4)})
    if "Rank" in body["messages"][0]["content"]:
        scores = json.loads(user)["scores"]
        best = max(scores, key=lambda s: (s["score"], s["creek"]))
        return f"CHOICE: {best['creek']}\nReason: best score {best['score']}"
    data = json.loads(user)
    return f"Kia ora! Your panning trip at {data['creek']} on {data['date']} for {data['party']} is confirmed pending payment of {data['amount']:.2f} {data['currency']}."


register_policy("goldpan", _policy)


@trajdebug.step(kind="input")
def read_enquiry(text: str) -> str:
    return text


@trajdebug.step(kind="parse")
def parse_request(answer: dict) -> dict:
    data = json.loads(answer["content"])
    data["adults"] = data["party"] - data["children"]
    return data


@trajdebug.step(kind="retrieval")
def list_creeks(region: str) -> list[str]:
    return sorted(CREEKS)


_ATTEMPTS: dict[str, int] = {}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_creek_conditions(creek: str, run_key: str) -> dict:
    n = _ATTEMPTS[run_key + creek] = _ATTEMPTS.get(run_key + creek, 0) + 1
    if creek == "Skippers Reach" and n == 1:
        raise ConnectionError("gauge gateway timed out")
    c = CREEKS[creek]
    flow = c["flow_lps"]
    if creek == "Macetown Ford" and active("gold.cached_reading"):
        flow = 1400  # cache from last season
    return {"creek": creek, "flow_lps": flow, "grade_mg_t": c["grade_mg_t"], "walk_min": c["walk_min"]}


@trajdebug.step(kind="other")
def score_creek(cond: dict) -> dict:
    if cond["flow_lps"] > SAFE_FLOW:
        return {"creek": cond["creek"], "score": 0.0}
    return {"creek": cond["creek"], "score": round(cond["grade_mg_t"] - cond["walk_min"] / 10, 1)}


@trajdebug.step(kind="parse")
def parse_choice(answer: dict) -> str:
    return answer["content"].split("\n")[0].removeprefix("CHOICE: ").strip()


@trajdebug.step(kind="state")
def save_selection(request: dict, creek: str) -> dict:
    party = request["children"] if active("gold.selection_party") else request["party"]
    sel = {"creek": creek, "date": request["date"], "party": party, "children": request["children"]}
    trajdebug.current_run().state["selection"] = sel
    return sel


@trajdebug.step(kind="tool")
def check_permit() -> dict:
    sel = trajdebug.current_run().state["selection"]
    return {"permit": f"DOC-{sel['creek'][:3].upper()}-{sel['date']}", "max_party": 10, "party": sel["party"], "ok": True}


@trajdebug.step(kind="other")
def price_tour(permit: dict) -> dict:
    sel = trajdebug.current_run().state["selection"]
    total = 0.0
    start = 1 if active("gold.price_range") else 0
    for i in range(start, sel["party"]):
        total += TARIFF["child"] if i < sel["children"] else TARIFF["adult"]
    return {"total_nzd": total, "participants": sel["party"], "permit": permit["permit"]}


@trajdebug.step(kind="tool")
def convert_currency(currency: str) -> dict:
    if active("gold.fx_error_payload") and currency != "NZD":
        return {"error": "rate feed unavailable", "code": 503}
    return {"base": "NZD", "quote": currency, "rate": FX[currency]}


@trajdebug.step(kind="tool")
def book_tour(enquiry: str, booking: dict) -> dict:
    ref = re.search(r"ENQ-\d+", enquiry).group(0)
    m = re.search(r"party of (\d+) \((\d+) children\).*?on (\d{4}-\d\d-\d\d), paying in (\w+)", enquiry)
    if booking["date"] != m.group(3):
        raise RuntimeError(f"HTTP 422 from bookings API: {{\"error\": \"date {booking['date']} does not match enquiry {ref}\"}}")
    live = CREEKS[booking["creek"]]["flow_lps"]
    if live > SAFE_FLOW:
        raise RuntimeError(f"HTTP 409 from bookings API: {{\"error\": \"site {booking['creek']} closed: river flow {live} L/s exceeds safe panning limit {SAFE_FLOW} L/s\"}}")
    party, kids = int(m.group(1)), int(m.group(2))
    due = (kids * TARIFF["child"] + (party - kids) * TARIFF["adult"]) * FX[m.group(4)]
    if booking["participants"] != party:
        raise RuntimeError(f"HTTP 422 from bookings API: {{\"error\": \"manifest lists {party} participants, booking covers {booking['participants']}\"}}")
    if abs(booking["amount"] - round(due, 2)) > 0.01:
        raise RuntimeError(f"HTTP 402 from payments: {{\"error\": \"amount {booking['amount']:.2f} {booking['currency']} does not equal tariff {due:.2f} {booking['currency']}\"}}")
    return {"status": "booked", "ref": ref, "creek": booking["creek"]}


def record(key: str, path: Path) -> None:
    text = INPUTS[key]
    _ATTEMPTS.clear()
    try:
        with trajdebug.run(AGENT, task=text, path=str(path)):
            enquiry = read_enquiry(text)
            ans = ask("extract_request", "[goldpan] Extract party, children, date and currency as JSON.", enquiry)
            req = parse_request({"content": ans})
            creeks = list_creeks("Otago")
            conds = [fetch_creek_conditions(c, text[:16]) for c in creeks]
            scores = [score_creek(c) for c in conds]
            choice = ask("rank_creeks", "[goldpan] Rank creeks for a guided panning party; answer CHOICE: <creek>.",
                         {"party": req["party"], "scores": scores})
            creek = parse_choice({"content": choice})
            save_selection(req, creek)
            permit = check_permit()
            price = price_tour(permit)
            ask("compose_confirmation", "[goldpan] Write a short confirmation.",
                {"creek": creek, "date": req["date"], "party": price["participants"], "amount": price["total_nzd"], "currency": "NZD"})
            fx = convert_currency(req["currency"])
            rate = fx.get("rate", 1.0)
            amount = round(price["total_nzd"] * rate, 2)
            book_tour(enquiry, {"creek": creek, "date": req["date"], "participants": price["participants"],
                                "amount": amount, "currency": req["currency"]})
    except RuntimeError:
        pass
