"""Garden centre plant returns: grades returned plants and issues the refund (recording SDK)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import trajdebug

from . import kit
from .common import ApiError, Case, sdk_llm

AGENT, ROUTE, DOMAIN = "plant_returns", "sdk", "garden centre plant returns"
RUN_NAME, MODEL = "garden-centre-returns", "returns-grader-2"
SHAPE = "return -> till record (tool) -> parse -> per plant: policy, prompt, grade (llm), parse, decide -> store-credit sub-agent (llm, state, loyalty tool) -> issue refund"

CATALOGUE = {
    "PL-2231": ("Lavender 'Hidcote' 2L", "perennials", 12.49), "PL-0912": ("Petunia tray x12", "bedding", 8.99),
    "PL-4470": ("Acer palmatum 10L", "trees", 39.99), "PL-1180": ("Rosemary 1L", "herbs", 4.75),
    "PL-3302": ("Clematis 'Nelly Moser' 3L", "climbers", 16.50), "PL-0655": ("Geranium tray x6", "bedding", 7.25),
    "PL-5120": ("Olive tree 15L", "trees", 64.00), "PL-2840": ("Hosta 'June' 2L", "perennials", 9.80),
}
POLICY = {"perennials": {"window_days": 60, "grades_full": ["dead", "diseased"]},
          "bedding": {"window_days": 14, "grades_full": ["dead", "diseased"]},
          "trees": {"window_days": 365, "grades_full": ["dead", "diseased"]},
          "herbs": {"window_days": 30, "grades_full": ["dead", "diseased"]},
          "climbers": {"window_days": 60, "grades_full": ["dead", "diseased"]}}
LOYALTY = {"C-88213": "LY-30021", "C-90417": "LY-31877", "C-71002": "LY-20410", "C-66345": "LY-19933",
           "C-80770": "LY-28802", "C-93118": "LY-33410"}

INPUTS = {
    "hidcote": {"return_id": "RET-5581", "receipt": "R-20270201-0417", "store": "0417", "customer": "C-88213",
                "age_days": 41, "items": {"PL-2231": "leaves browned at the tips, crown still firm, half the stems dry",
                                          "PL-0912": "every plant collapsed, roots black and rotted",
                                          "PL-4470": "new growth on all branches, leaves bright and unmarked"}},
    "clematis": {"return_id": "RET-5604", "receipt": "R-20270228-0233", "store": "0233", "customer": "C-90417",
                 "age_days": 12, "items": {"PL-3302": "stems wilted and black at the base, no living shoots",
                                           "PL-1180": "a few leaves spotted with powdery white patches",
                                           "PL-2840": "slug damage on two leaves, otherwise vigorous"}},
    "olive": {"return_id": "RET-5512", "receipt": "R-20270110-0417", "store": "0417", "customer": "C-71002",
              "age_days": 70, "items": {"PL-5120": "trunk split, all foliage dropped, dead wood throughout",
                                        "PL-1180": "healthy, strong scent, no marks"}},
    "geranium": {"return_id": "RET-5530", "receipt": "R-20270305-0233", "store": "0233", "customer": "C-66345",
                 "age_days": 5, "items": {"PL-0655": "flowers dropped, stems rotted at soil level",
                                          "PL-2231": "a third of the stems dry and brittle"}},
    "hosta": {"return_id": "RET-5547", "receipt": "R-20270220-0417", "store": "0417", "customer": "C-80770",
              "age_days": 20, "items": {"PL-2840": "leaves covered in grey mould, crown soft",
                                        "PL-4470": "vigorous, no marks at all", "PL-3302": "half the stems dry"}},
    "acer": {"return_id": "RET-5561", "receipt": "R-20270301-0233", "store": "0233", "customer": "C-93118",
             "age_days": 9, "items": {"PL-4470": "leaf scorch on the south side, branches alive",
                                      "PL-0912": "all plants dead, compost sodden"}},
}
REFS = ["olive", "geranium", "hosta", "acer"]

CASES = [
    Case("zx_plant_1", "plant.price_regex", "lossy_parsing", "hidcote", ("parse_till_record", 1, "parse"),
         ("issue_refund", 1), "parse_till_record's price pattern keeps only whole pounds, so refund lines lose their pence."),
    Case("zx_plant_2", "plant.till_cache", "stale_data", "clematis", ("fetch_till_record", 1, "tool"),
         ("issue_refund", 1), "fetch_till_record answers from a cached copy taken before the spring markdown, with old prices."),
    Case("zx_plant_3", "plant.policy_lookup", "swallowed_error", "hidcote", ("load_return_policy", 2, "retrieval"),
         ("issue_refund", 1), "load_return_policy swallows the policy service's error for bedding and returns a generic 365-day window."),
    Case("zx_plant_4", "plant.loyalty_arg", "wrong_tool_args", "clematis", ("lookup_loyalty", 1, "tool"),
         ("issue_refund", 1), "The store-credit sub-agent looks up the loyalty account by the store code instead of the customer id."),
    Case("zx_plant_5", "plant.notes_buffer", "context_pollution", "hidcote", ("compose_grading_prompt", 3, "other"),
         ("issue_refund", 1), "The grading prompt for the third plant still carries the previous plant's inspection notes."),
]


def policy(messages: list[dict]) -> str:
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("You grade"):
        notes = user.lower()
        if "rotted" in notes or "dead" in notes or "collapsed" in notes or "no living" in notes:
            grade = "dead"
        elif "mould" in notes or "powdery" in notes or "spotted" in notes:
            grade = "diseased"
        elif "dry" in notes or "browned" in notes or "scorch" in notes or "slug" in notes:
            grade = "damaged"
        else:
            grade = "healthy"
        return f"Grade: {grade}. Reason: based on the photo notes supplied."
    return "Offer store credit: the customer has a loyalty account; credit adds 10% goodwill."


@trajdebug.step(kind="input")
def receive_return(request: dict) -> dict:
    return json.loads(json.dumps(request))


@trajdebug.step(kind="tool")
def fetch_till_record(receipt: str, skus: list[str]) -> dict:
    lines = []
    for sku in skus:
        name, _cat, price = CATALOGUE[sku]
        if kit.active("plant.till_cache") and sku in ("PL-1180", "PL-2840"):
            price = round(price + 2.50, 2)
        lines.append(f"{sku}  {name:<28} GBP {price:.2f}")
    return {"receipt": receipt, "text": "\n".join(lines)}


@trajdebug.step(kind="parse")
def parse_till_record(text: str) -> list[dict]:
    pattern = r"(PL-\d{4})\s+(.+?)\s+GBP (\d+)" if kit.active("plant.price_regex") else r"(PL-\d{4})\s+(.+?)\s+GBP (\d+\.\d\d)"
    return [{"sku": m[0], "name": m[1], "price": float(m[2])} for m in re.findall(pattern, text)]


@trajdebug.step(kind="retrieval")
def load_return_policy(category: str) -> dict:
    try:
        if category == "bedding" and kit.active("plant.policy_lookup"):
            raise TimeoutError("policy service read timed out")
        return {"category": category, **POLICY[category]}
    except TimeoutError:
        return {"category": category, "window_days": 365, "grades_full": ["dead", "diseased"]}


@trajdebug.step(kind="other")
def compose_grading_prompt(line: dict, notes: str, buffer: list[str]) -> list[dict]:
    shown = [notes]
    if kit.active("plant.notes_buffer") and len(buffer) == 2:
        shown = [buffer[-1], notes]
    buffer.append(notes)
    return [{"role": "system", "content": "You grade returned plants: dead, diseased, damaged or healthy."},
            {"role": "user", "content": f"Plant {line['sku']} ({line['name']}). Inspection notes: " + " | ".join(shown)}]


@trajdebug.step(kind="parse")
def parse_grade(text: str) -> str:
    return text.split("Grade:", 1)[1].split(".", 1)[0].strip()


@trajdebug.step(kind="condition")
def decide_line(line: dict, grade: str, rules: dict, age_days: int) -> dict:
    if age_days > rules["window_days"]:
        return {"sku": line["sku"], "refund": 0.0, "grade": grade, "why": "outside return window"}
    share = 1.0 if grade in rules["grades_full"] else 0.5 if grade == "damaged" else 0.0
    return {"sku": line["sku"], "refund": round(line["price"] * share, 2), "grade": grade, "why": "graded"}


@trajdebug.step(kind="tool")
def lookup_loyalty(customer: str) -> dict:
    return {"customer": customer, "account": LOYALTY.get(customer)}


@trajdebug.step(kind="state")
def record_credit(offer: str) -> None:
    trajdebug.current_run().state["credit"] = {"goodwill": 0.10, "offer": offer}


@trajdebug.step(kind="agent")
def store_credit_agent(request: dict) -> dict:
    offer = sdk_llm("offer_credit", MODEL, [
        {"role": "system", "content": "You decide between card refund and store credit for plant returns."},
        {"role": "user", "content": f"Return {request['return_id']} for customer {request['customer']}"}])
    record_credit(offer)
    who = request["store"] if kit.active("plant.loyalty_arg") else request["customer"]
    return lookup_loyalty(who)


@trajdebug.step(kind="tool")
def issue_refund(request: dict, lines: list[dict], account: dict) -> dict:
    credit = {**trajdebug.current_run().state["credit"], "account": account["account"]}
    ledger = {sku: CATALOGUE[sku][2] for sku in request["items"]}
    sheet = INSPECTION[request["return_id"]]
    for ln in lines:
        if ln["refund"] and ln["why"] == "graded" and POLICY[CATALOGUE[ln["sku"]][1]]["window_days"] < request["age_days"]:
            raise ApiError(f"HTTP 403: return window for {CATALOGUE[ln['sku']][1]} is "
                           f"{POLICY[CATALOGUE[ln['sku']][1]]['window_days']} days; {ln['sku']} was bought "
                           f"{request['age_days']} days ago")
        if ln["grade"] != sheet[ln["sku"]]:
            raise ApiError(f"HTTP 422: refund line {ln['sku']} graded '{ln['grade']}'; floor inspection sheet "
                           f"grades it '{sheet[ln['sku']]}'")
        expected = {"dead": 1.0, "diseased": 1.0, "damaged": 0.5}.get(ln["grade"], 0.0) * ledger[ln["sku"]]
        if ln["refund"] and abs(ln["refund"] - round(expected, 2)) > 0.005:
            raise ApiError(f"HTTP 422: refund line {ln['sku']} at {ln['refund']:.2f} does not match till ledger "
                           f"({ledger[ln['sku']]:.2f}, grade {ln['grade']})")
    if not credit["account"]:
        raise ApiError(f"HTTP 422: store credit for {request['return_id']} needs a loyalty account; none is linked")
    total = round(sum(ln["refund"] for ln in lines) * 1.10, 2)
    return {"refund_id": "RF-" + request["return_id"][4:], "credit": total, "account": credit["account"]}


def _grade(notes: str) -> str:
    n = notes.lower()
    if any(w in n for w in ("rotted", "dead", "collapsed", "no living")):
        return "dead"
    if any(w in n for w in ("mould", "powdery", "spotted")):
        return "diseased"
    if any(w in n for w in ("dry", "browned", "scorch", "slug")):
        return "damaged"
    return "healthy"


INSPECTION = {inp["return_id"]: {sku: _grade(n) for sku, n in inp["items"].items()} for inp in INPUTS.values()}


def record(key: str, path: Path) -> None:
    inp = INPUTS[key]
    try:
        with trajdebug.run(RUN_NAME, path=str(path), task=f"process plant return {inp['return_id']}"):
            request = receive_return(inp)
            till = fetch_till_record(request["receipt"], list(request["items"]))
            lines = parse_till_record(till["text"])
            buffer: list[str] = []
            decided = []
            for line in lines:
                rules = load_return_policy(CATALOGUE[line["sku"]][1])
                prompt = compose_grading_prompt(line, request["items"][line["sku"]], buffer)
                grade = parse_grade(sdk_llm("grade_plant", MODEL, prompt))
                decided.append(decide_line(line, grade, rules, request["age_days"]))
            account = store_credit_agent(request)
            issue_refund(request, decided, account)
    except ApiError:
        pass
