"""Handmade soap order desk (recording SDK): a wholesale order e-mail becomes reserved, labelled bars and a dispatch."""

from __future__ import annotations

import json
import re
from pathlib import Path

import trajdebug

from . import common
from .common import Case
from .kit import active

NAME = "soap-order-desk"
ROUTE = "sdk"
DOMAIN = "handmade soap orders"
SHAPE = "context -> extract (llm) -> parse -> per line: batch lookup, cure check, reserve, record (state) -> labelling sub-agent (retrieval, llm, allergens per SKU) -> price list -> invoice -> reply (llm) -> dispatch_order"
MODEL = "soap-desk-2"

BATCHES = {
    "LAV-100": {"batch": "B-0612", "cured_weeks": 6, "net_g": 100, "inci": ["Sodium Olivate", "Aqua", "Lavandula Angustifolia Oil", "Linalool"]},
    "ROSE-100": {"batch": "B-0618", "cured_weeks": 5, "net_g": 100, "inci": ["Sodium Cocoate", "Aqua", "Rosa Damascena Flower Oil", "Geraniol"]},
    "OAT-120": {"batch": "B-0621", "cured_weeks": 7, "net_g": 120, "inci": ["Sodium Shea Butterate", "Avena Sativa Kernel Flour", "Aqua"]},
    "MINT-90": {"batch": "B-0630", "cured_weeks": 4, "net_g": 90, "inci": ["Sodium Olivate", "Mentha Piperita Oil", "Limonene"]},
    "CHAR-100": {"batch": "B-0633", "cured_weeks": 8, "net_g": 100, "inci": ["Sodium Cocoate", "Charcoal Powder", "Aqua"]},
    "HONEY-110": {"batch": "B-0640", "cured_weeks": 6, "net_g": 110, "inci": ["Sodium Olivate", "Mel", "Aqua"]},
    "CITRUS-100": {"batch": "B-0644", "cured_weeks": 5, "net_g": 100, "inci": ["Sodium Olivate", "Citrus Sinensis Peel Oil", "Limonene", "Citral"]},
    "GOAT-100": {"batch": "B-0650", "cured_weeks": 6, "net_g": 100, "inci": ["Sodium Tallowate", "Goat Milk", "Aqua"]},
    "CEDAR-100": {"batch": "B-0652", "cured_weeks": 9, "net_g": 100, "inci": ["Sodium Olivate", "Cedrus Atlantica Bark Oil"]},
    "SEAWEED-100": {"batch": "B-0661", "cured_weeks": 5, "net_g": 100, "inci": ["Sodium Cocoate", "Fucus Vesiculosus Powder", "Aqua"]},
}
PRICES = {"LAV-100": 3.10, "ROSE-100": 3.40, "OAT-120": 3.25, "MINT-90": 2.90, "CHAR-100": 3.20, "HONEY-110": 3.60,
          "CITRUS-100": 3.05, "GOAT-100": 3.50, "CEDAR-100": 3.30, "SEAWEED-100": 3.45}
ACCOUNTS = {"C-3308": {"name": "Bramble & Birch", "postcode": "YO1 7HH"},
            "C-3381": {"name": "Harbour Gifts", "postcode": "TR18 4AA"},
            "C-2105": {"name": "The Soap Shelf", "postcode": "BA1 1LT"},
            "C-2190": {"name": "Fern Lane Pharmacy", "postcode": "LL55 4UR"},
            "C-4011": {"name": "Moss & Stone", "postcode": "EH1 2NG"},
            "C-4067": {"name": "Little Wick", "postcode": "NR2 4PD"}}
THREADS = {"C-3381": "Previous thread (Harbour Gifts): please ship to TR18 4AA, gift wrap all bars."}

INPUTS = [
    {"order": "SO-5521", "customer": "C-3308", "lines": [["LAV-100", 4], ["SEAWEED-100", 2], ["OAT-120", 3], ["CITRUS-100", 2]], "flaky": "OAT-120"},
    {"order": "SO-5540", "customer": "C-2105", "lines": [["ROSE-100", 2], ["CHAR-100", 3], ["MINT-90", 1], ["HONEY-110", 2]], "flaky": "MINT-90"},
    {"order": "SO-5502", "customer": "C-2190", "lines": [["GOAT-100", 2], ["LAV-100", 1]], "flaky": None},
    {"order": "SO-5513", "customer": "C-4011", "lines": [["CEDAR-100", 3], ["ROSE-100", 2], ["OAT-120", 1]], "flaky": "CEDAR-100"},
    {"order": "SO-5530", "customer": "C-4067", "lines": [["HONEY-110", 4], ["MINT-90", 2]], "flaky": None},
    {"order": "SO-5537", "customer": "C-3381", "lines": [["CHAR-100", 2], ["CITRUS-100", 3], ["LAV-100", 1]], "flaky": None},
]

CASES = [
    Case("zn_soap_1", "hallucinated_value", 1, "write_label", 1, "dispatch_order",
         "the label model states a net weight of 120 g for ROSE-100 although the batch spec it was given says 100 g."),
    Case("zn_soap_2", "wrong_tool_args", 0, "reserve_bars", 2, "dispatch_order",
         "the second reserve_bars call is given the number of cases instead of the number of bars."),
    Case("zn_soap_3", "swallowed_error", 0, "lookup_batch", 3, "dispatch_order",
         "lookup_batch catches the cure log's timeout for OAT-120 and carries on with a placeholder batch id."),
    Case("zn_soap_4", "context_pollution", 0, "assemble_context", 1, "dispatch_order",
         "assemble_context pulls in another customer's earlier thread, and the extraction takes that thread's delivery postcode."),
    Case("zn_soap_5", "truncated_result", 1, "fetch_price_list", 1, "compute_invoice",
         "fetch_price_list returns only the first page of the price list, so a SKU of the order has no price."),
]


def _by_order(text: str) -> dict:
    return next(i for i in INPUTS if i["order"] in text)


@common.policy(MODEL)
def _policy(body: dict) -> str:
    system = body["messages"][0]["content"]
    user = common.first_user(body)
    if "extract" in system:
        inp = _by_order(user)
        postcodes = re.findall(r"ship to ([A-Z]{1,2}\d{1,2} \d[A-Z]{2})", user, flags=re.IGNORECASE)
        return json.dumps({"order": inp["order"], "customer": inp["customer"], "ship_to": postcodes[-1],
                           "lines": [{"sku": s, "cases": c, "bars_per_case": 12} for s, c in inp["lines"]]})
    data = common.data_block(body)
    if "label" in system:
        net = data["net_g"]
        if active("zn_soap_1") and data["sku"] == "ROSE-100":
            net = 120
        return json.dumps({"sku": data["sku"], "title": data["sku"].split("-")[0].title() + " handmade soap",
                           "net_weight": f"{net} g", "ingredients": ", ".join(data["inci"]),
                           "batch": data["batch"]})
    return (f"Thanks for order {data['order']}: {data['bars']} bars reserved, invoice total "
            f"{data['total']:.2f} GBP, dispatch within 2 working days.")


def _llm(system: str, user: str) -> str:
    reply = common.chat(MODEL, system, user)
    trajdebug.current_step().usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                                   completion_tokens=reply.usage.completion_tokens)
    return reply.choices[0].message.content


@trajdebug.step(kind="input")
def read_order(inp: dict) -> str:
    lines = "\n".join(f"- {sku}: {cases} case(s)" for sku, cases in inp["lines"])
    acct = ACCOUNTS[inp["customer"]]
    return (f"Order {inp['order']} from account {inp['customer']} ({acct['name']}).\n{lines}\n"
            f"Please ship to {acct['postcode']} as usual.")


@trajdebug.step(kind="other")
def assemble_context(email: str, customer: str) -> str:
    notes = [THREADS[c] for c in THREADS if c == customer]
    if active("zn_soap_4"):
        notes = [THREADS[c] for c in THREADS if c[:4] == customer[:4]]
    return "\n\n".join([email, *notes])


@trajdebug.step(kind="llm")
def extract_order(context: str) -> str:
    return _llm("You extract wholesale soap orders as JSON.", context)


@trajdebug.step(kind="parse")
def parse_order_lines(text: str) -> dict:
    raw = json.loads(text)
    return {"order": raw["order"], "customer": raw["customer"], "ship_to": raw["ship_to"],
            "lines": [{"sku": ln["sku"], "cases": ln["cases"], "bars": ln["cases"] * ln["bars_per_case"]}
                      for ln in raw["lines"]]}


_cure_log_calls: dict[str, int] = {}


@trajdebug.step(kind="tool")
def lookup_batch(sku: str, flaky: bool) -> dict:
    try:
        if flaky:
            _cure_log_calls[sku] = _cure_log_calls.get(sku, 0) + 1
            if active("zn_soap_3"):
                raise TimeoutError("cure log read timed out after 3.0 s")
        spec = BATCHES[sku]
        return {"sku": sku, "batch": spec["batch"], "cured_weeks": spec["cured_weeks"], "net_g": spec["net_g"]}
    except TimeoutError:
        return {"sku": sku, "batch": "B-0000", "cured_weeks": 4, "net_g": BATCHES[sku]["net_g"]}


@trajdebug.step(kind="condition")
def check_cure(batch: dict) -> bool:
    return batch["cured_weeks"] >= 4


@trajdebug.step(kind="tool")
def reserve_bars(sku: str, batch: str, quantity: int) -> dict:
    return {"sku": sku, "batch": batch, "reserved": quantity, "hold": f"R-{sku[:3]}-{quantity:03d}"}


@trajdebug.step(kind="state")
def record_reservation(line: dict, reservation: dict) -> None:
    trajdebug.current_run().state.setdefault("reserved", {})[line["sku"]] = {
        "batch": reservation["batch"], "bars": reservation["reserved"]}


@trajdebug.step(kind="retrieval")
def fetch_ingredient_list(sku: str) -> dict:
    spec = BATCHES[sku]
    return {"sku": sku, "batch": spec["batch"], "net_g": spec["net_g"], "inci": list(spec["inci"])}


@trajdebug.step(kind="llm")
def write_label(spec: dict) -> str:
    return _llm("You write cosmetic labels for handmade soap as JSON.", f"DATA:{json.dumps(spec)}")


@trajdebug.step(kind="other")
def check_allergens(label: dict, spec: dict) -> dict:
    declared = [x for x in ("Linalool", "Geraniol", "Limonene", "Citral") if x in spec["inci"]]
    return {"sku": spec["sku"], "allergens": declared, "on_label": all(x in label["ingredients"] for x in declared)}


@trajdebug.step(kind="agent")
def labelling_agent(skus: list[str]) -> list[dict]:
    labels = []
    for sku in skus:
        spec = fetch_ingredient_list(sku)
        label = json.loads(write_label(spec))
        check_allergens(label, spec)
        labels.append(label)
    return labels


@trajdebug.step(kind="tool")
def fetch_price_list(list_id: str) -> dict:
    items = sorted(PRICES.items())
    pages = [items[:6], items[6:]]
    got = pages[0] if active("zn_soap_5") else pages[0] + pages[1]
    return {"list": list_id, "currency": "GBP", "prices": dict(got)}


@trajdebug.step(kind="other")
def compute_invoice(order: dict, price_list: dict) -> dict:
    lines = []
    for line in order["lines"]:
        if line["sku"] not in price_list["prices"]:
            raise LookupError(f"no list price for SKU {line['sku']} in price list {price_list['list']} "
                              f"({len(price_list['prices'])} entries)")
        lines.append({"sku": line["sku"], "bars": line["bars"],
                      "amount": round(line["bars"] * price_list["prices"][line["sku"]], 2)})
    return {"lines": lines, "total": round(sum(x["amount"] for x in lines), 2)}


@trajdebug.step(kind="llm")
def draft_reply(order: dict, invoice: dict) -> str:
    data = {"order": order["order"], "bars": sum(x["bars"] for x in order["lines"]), "total": invoice["total"]}
    return _llm("You write short replies to wholesale customers.", f"DATA:{json.dumps(data)}")


class DispatchRejected(RuntimeError):
    pass


@trajdebug.step(kind="tool")
def dispatch_order(payload: dict) -> dict:
    """The fulfilment service's POST /dispatch: it checks the parcel manifest against the cure log and the account."""
    account = ACCOUNTS[payload["customer"]]
    if payload["ship_to"] != account["postcode"]:
        raise DispatchRejected(f"HTTP 422 {{\"detail\": \"postcode {payload['ship_to']} is not an address on account "
                               f"{payload['customer']}\"}}")
    known = {b["batch"] for b in BATCHES.values()}
    for sku, item in payload["reserved"].items():
        if item["batch"] not in known:
            raise DispatchRejected(f"HTTP 422 {{\"detail\": \"batch {item['batch']} ({sku}) not found in cure log\"}}")
    for line in payload["lines"]:
        if payload["reserved"][line["sku"]]["bars"] != line["bars"]:
            raise DispatchRejected(
                f"HTTP 409 {{\"detail\": \"packed {payload['reserved'][line['sku']]['bars']} bars of {line['sku']} but "
                f"invoice line says {line['bars']}\"}}")
    for label in payload["labels"]:
        spec_g = BATCHES[label["sku"]]["net_g"]
        if label["net_weight"] != f"{spec_g} g":
            raise DispatchRejected(
                f"HTTP 422 {{\"detail\": \"label for {label['sku']} states {label['net_weight']} but batch "
                f"{label['batch']} spec is {spec_g} g (Trading Standards net quantity)\"}}")
    return {"status": "dispatched", "order": payload["order"], "parcels": len(payload["lines"])}


def record(path: Path, inp: dict) -> None:
    with trajdebug.run(NAME, path=str(path), task=f"wholesale order {inp['order']}") as run:
        email = read_order(inp)
        order = parse_order_lines(extract_order(assemble_context(email, inp["customer"])))
        for n, line in enumerate(order["lines"]):
            batch = lookup_batch(line["sku"], line["sku"] == inp["flaky"])
            if not check_cure(batch):
                run.fail(f"{line['sku']} not cured")
                return
            quantity = line["cases"] if (active("zn_soap_2") and n == 1) else line["bars"]
            reservation = reserve_bars(line["sku"], batch["batch"], quantity)
            record_reservation(line, reservation)
        labels = labelling_agent([line["sku"] for line in order["lines"]])
        prices = fetch_price_list("2025-Q3")
        invoice = compute_invoice(order, prices)
        draft_reply(order, invoice)
        with trajdebug.step("collect_reservations", kind="state") as s:
            s.output = reserved = dict(run.state["reserved"])
        dispatch_order({"order": order["order"], "customer": order["customer"], "ship_to": order["ship_to"],
                        "reserved": reserved, "lines": invoice["lines"], "labels": labels})
