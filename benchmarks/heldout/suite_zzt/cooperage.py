"""Cooperage barrel orders: quote a distillery's barrel order (sdk route)."""
import json

import common
import kit
from common import SdkRec

NAME, ROUTE, DOMAIN = "cooperage-quotes", "sdk", "a cooperage's barrel orders"
SHAPE = "extract order (llm) -> parse -> account + memory -> per line: spec, stock, price, line total -> delivery sub-agent (3 steps) -> assemble -> quote text (llm) -> validate"

SPECS = {"barrique": {"litres": 225, "staves": 32}, "hogshead": {"litres": 250, "staves": 36},
         "puncheon": {"litres": 500, "staves": 42}, "quarter cask": {"litres": 125, "staves": 24}}
WOOD_RATE = {"american oak": 1.4, "french oak": 2.9, "european oak": 2.2}
TOAST_FEE = {"light": 20, "medium": 35, "heavy": 50}
ACCOUNTS = {"Glenmorvan Distillery": {"tier": "gold", "discount": 0.10, "history": [0.05, 0.10]},
            "Harrowgate Cider": {"tier": "silver", "discount": 0.05, "history": [0.0, 0.05]},
            "Kilbride Spirits": {"tier": "gold", "discount": 0.10, "history": [0.05, 0.10]},
            "Ostrander Winery": {"tier": "bronze", "discount": 0.02, "history": [0.0, 0.02]},
            "Penhallow Brewing": {"tier": "silver", "discount": 0.05, "history": [0.02, 0.05]},
            "Tullamore Vale Rum": {"tier": "gold", "discount": 0.10, "history": [0.05, 0.10]},
            "Wrenfield Meadery": {"tier": "bronze", "discount": 0.02, "history": [0.0, 0.02]},
            "Corran Bay Gin": {"tier": "silver", "discount": 0.05, "history": [0.05]},
            "Lochside Vinegar": {"tier": "silver", "discount": 0.05, "history": [0.02, 0.05]}}
DEPOTS = {"speyside": "Craigellachie yard", "islay": "Port Ellen quay", "kent": "Faversham yard",
          "cornwall": "Truro depot", "sonoma": "Healdsburg dock", "dublin": "Ringsend quay"}
STOCK = {"american oak": 900, "french oak": 210, "european oak": 400}


def _i(cid, customer, ship, bill, lines, weeks):
    return {"id": cid, "customer": customer, "ship": ship, "bill": bill, "lines": lines, "weeks": weeks}


INPUTS = {
    "coop-1": _i("coop-1", "Glenmorvan Distillery", "speyside", "islay",
                 [["hogshead", "american oak", "medium", 6], ["barrique", "french oak", "heavy", 4],
                  ["quarter cask", "american oak", "light", 5]], 8),
    "coop-2": _i("coop-2", "Harrowgate Cider", "kent", "kent",
                 [["puncheon", "european oak", "light", 2], ["barrique", "american oak", "medium", 3]], 6),
    "coop-3": _i("coop-3", "Kilbride Spirits", "islay", "speyside",
                 [["barrique", "american oak", "medium", 4], ["hogshead", "french oak", "medium", 2],
                  ["puncheon", "european oak", "heavy", 1]], 10),
    "coop-4": _i("coop-4", "Ostrander Winery", "sonoma", "sonoma",
                 [["barrique", "french oak", "light", 5], ["barrique", "european oak", "medium", 3]], 12),
    "coop-5": _i("coop-5", "Penhallow Brewing", "cornwall", "dublin",
                 [["hogshead", "american oak", "heavy", 3], ["quarter cask", "european oak", "medium", 4],
                  ["barrique", "american oak", "light", 2]], 7),
}
REFS = [
    _i("coop-r1", "Tullamore Vale Rum", "dublin", "dublin",
       [["hogshead", "american oak", "heavy", 5], ["barrique", "french oak", "medium", 2]], 9),
    _i("coop-r2", "Wrenfield Meadery", "kent", "cornwall",
       [["quarter cask", "american oak", "light", 6], ["barrique", "european oak", "light", 2],
        ["hogshead", "european oak", "medium", 1]], 8),
    _i("coop-r3", "Corran Bay Gin", "speyside", "speyside", [["barrique", "american oak", "medium", 7]], 5),
    _i("coop-r4", "Lochside Vinegar", "islay", "kent",
       [["puncheon", "american oak", "light", 2], ["hogshead", "french oak", "light", 2]], 11),
]

CASES = [
    dict(id="coop-1", switch="coop_toast", kind="hallucinated_value", root=("extract_order", 1),
         failure=("validate_quote", 1),
         description="The order extraction gives the French oak barriques a char level the customer never asked for, which the cooperage does not make for barriques."),
    dict(id="coop-2", switch="coop_stock", kind="tool_ignores_argument", root=("check_stock", 2),
         failure=("validate_quote", 1),
         description="The stock check ignores its wood argument and answers with the American oak stock, so the line reserves staves of another wood."),
    dict(id="coop-3", switch="coop_depot", kind="subagent_wrong_entity", root=("pick_destination", 1),
         failure=("validate_quote", 1),
         description="The delivery sub-agent plans the shipment to the billing region instead of the ship-to region."),
    dict(id="coop-4", switch="coop_memory", kind="bad_memory_write", root=("remember_account", 1),
         failure=("validate_quote", 1),
         description="The account memory keeps the previous discount from the account history instead of the current tier's discount."),
    dict(id="coop-5", switch="coop_lines", kind="off_by_one", root=("assemble_quote", 1),
         failure=("validate_quote", 1),
         description="The quote assembly sums the line totals from the second line on, leaving the first line out of the subtotal."),
]


def brain(inp):
    def answer(request):
        p = common.last_user(request)
        if p.startswith("EXTRACT"):
            lines = [{"type": t, "wood": w, "toast": x, "qty": q} for t, w, x, q in inp["lines"]]
            if kit.on("coop_toast"):
                for ln in lines:
                    if ln["type"] == "barrique" and ln["wood"] == "french oak":
                        ln["toast"] = "char 4"
            return json.dumps({"customer": inp["customer"], "ship_to": inp["ship"], "bill_to": inp["bill"],
                               "lines": lines, "weeks": inp["weeks"]})
        if p.startswith("DESTINATION"):
            d = json.loads(p.split("\n", 1)[1])
            region = d["bill_to"] if kit.on("coop_depot") else d["ship_to"]
            return json.dumps({"region": region})
        if p.startswith("SCHEDULE"):
            d = json.loads(p.split("\n", 1)[1])
            return f"Dispatch from {d['depot']} in week {d['weeks'] - 1}, {d['pallets']} pallets."
        if p.startswith("QUOTE"):
            return "Thank you for your order. Your quote is attached with the delivery plan."
        return "OK"
    return answer


SYS = "You are the order desk of Ardcraig Cooperage. Answer with JSON when asked."


def record(inp, path, seed):
    common.SERVER.use(brain(inp))
    text = (f"{inp['customer']} orders: " + "; ".join(f"{q} x {t}, {w}, {x} toast" for t, w, x, q in inp["lines"])
            + f". Ship to {inp['ship']}, invoice to {inp['bill']}, needed within {inp['weeks']} weeks.")
    with SdkRec(NAME, path, f"quote barrel order {inp['id']}") as rec:
        rec.call("order_email", "input", lambda t: t, text)
        raw = rec.llm("extract_order", SYS, "EXTRACT the barrel order as JSON.\n" + text)

        def parse_order(raw):
            d = json.loads(raw)
            d["lines"] = [dict(ln, wood=ln["wood"].lower(), type=ln["type"].lower()) for ln in d["lines"]]
            return d
        order = rec.call("parse_order", "parse", parse_order, raw)
        account = rec.call("lookup_account", "tool", lambda c: dict(ACCOUNTS[c], customer=c), order["customer"])

        def remember_account(acc):
            disc = acc["history"][-2] if kit.on("coop_memory") and len(acc["history"]) > 1 else acc["discount"]
            rec.state["account"] = {"customer": acc["customer"], "tier": acc["tier"], "discount": disc}
            return rec.state["account"]
        rec.call("remember_account", "state", remember_account, account)

        priced = []
        for ln in order["lines"]:
            spec = rec.call("stave_spec", "retrieval", lambda t: dict(SPECS[t], type=t), ln["type"])

            def check_stock(wood, staves):
                w = "american oak" if kit.on("coop_stock") else wood
                return {"wood": w, "available": STOCK[w], "reserved": staves}
            stock = rec.call("check_stock", "tool", check_stock, ln["wood"], spec["staves"] * ln["qty"])

            def price_line(ln, spec):
                unit = round(spec["litres"] * WOOD_RATE[ln["wood"]] + TOAST_FEE.get(ln["toast"], 60), 2)
                return {"unit_price": unit, "qty": ln["qty"]}
            price = rec.call("price_line", "tool", price_line, ln, spec)

            def line_total(ln, spec, stock, price):
                return {"type": ln["type"], "wood": ln["wood"], "toast": ln["toast"], "qty": ln["qty"],
                        "litres": spec["litres"], "staves_wood": stock["wood"], "staves": stock["reserved"],
                        "unit_price": price["unit_price"], "total": round(price["unit_price"] * ln["qty"], 2)}
            priced.append(rec.call("line_total", "other", line_total, ln, spec, stock, price))

        with rec.group("delivery_planner", {"ship_to": order["ship_to"], "lines": len(priced)}) as box:
            dest = json.loads(rec.llm("pick_destination", SYS, "DESTINATION for this order\n" + json.dumps(
                {"customer": order["customer"], "ship_to": order["ship_to"], "bill_to": order["bill_to"]})))
            depot = rec.call("depot_lookup", "tool", lambda r: {"region": r, "depot": DEPOTS[r]}, dest["region"])
            pallets = sum(ln["qty"] for ln in priced) // 4 + 1
            note = rec.llm("schedule_dispatch", SYS, "SCHEDULE\n" + json.dumps(
                {"depot": depot["depot"], "weeks": order["weeks"], "pallets": pallets}))
            box["out"] = {"region": depot["region"], "depot": depot["depot"], "note": note}
        delivery = box["out"]
        def assemble_quote(priced, delivery):
            acc = rec.state["account"]
            counted = priced[1:] if kit.on("coop_lines") else priced
            sub = round(sum(ln["total"] for ln in counted), 2)
            return {"customer": acc["customer"], "lines": priced, "subtotal": sub, "discount": acc["discount"],
                    "total": round(sub * (1 - acc["discount"]), 2), "delivery": delivery}
        quote = rec.call("assemble_quote", "other", assemble_quote, priced, delivery)
        rec.llm("write_quote", SYS, "QUOTE letter for " + order["customer"] + "\n" + json.dumps(
            {"total": quote["total"], "depot": delivery["depot"]}))

        def validate_quote(quote, order, account):
            for ln in quote["lines"]:
                if ln["toast"] not in TOAST_FEE:
                    raise ValueError(f"toast '{ln['toast']}' is not offered for a {ln['type']}")
                if ln["staves_wood"] != ln["wood"]:
                    raise ValueError(f"{ln['type']} line in {ln['wood']} reserves {ln['staves_wood']} staves")
            if quote["delivery"]["region"] != order["ship_to"]:
                raise ValueError(f"delivery planned to {quote['delivery']['region']}, order ships to {order['ship_to']}")
            if abs(quote["discount"] - account["discount"]) > 1e-9:
                raise ValueError(f"discount {quote['discount']} differs from tier {account['tier']} ({account['discount']})")
            s = round(sum(ln["total"] for ln in quote["lines"]), 2)
            if abs(s - quote["subtotal"]) > 0.01:
                raise ValueError(f"subtotal {quote['subtotal']} does not match the lines ({s})")
            return {"ok": True, "total": quote["total"]}
        rec.call("validate_quote", "condition", validate_quote, quote, order, account)
