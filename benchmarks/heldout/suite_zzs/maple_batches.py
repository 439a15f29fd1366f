"""A maple syrup producer's batches and wholesale orders (sdk route)."""
import json
import re

import trajdebug
from openai import OpenAI

import kit
from common import brain_from, chat

NAME, ROUTE, DOMAIN = "maple-wholesale", "sdk", "maple syrup producer: batches and wholesale orders"
SHAPE = "LLM read + parse, LLM fulfilment plan, per-grade batch retrieval, grading sub-agent (LLM + tool), allocation, run.state per grade, price tool, invoice, LLM shipment plan + parse, ledger validator"

# batch ledger: current litres on hand (the inventory service's cache can lag behind it)
LEDGER = {
    "B-2601": {"grade": "golden_delicate", "year": 2026, "brix": 66.9, "litres": 300.0},
    "B-2602": {"grade": "amber_rich", "year": 2026, "brix": 67.1, "litres": 140.0},
    "B-2603": {"grade": "amber_rich", "year": 2026, "brix": 66.8, "litres": 260.0},
    "B-2604": {"grade": "dark_robust", "year": 2026, "brix": 67.0, "litres": 220.0},
    "B-2605": {"grade": "very_dark", "year": 2026, "brix": 67.3, "litres": 90.0},
    "B-2511": {"grade": "dark_robust", "year": 2025, "brix": 66.7, "litres": 400.0},
    "B-2512": {"grade": "golden_delicate", "year": 2025, "brix": 66.6, "litres": 150.0},
}
CACHE = {"B-2602": 420.0}
PRICES = {"golden_delicate": 14.2, "amber_rich": 12.8, "dark_robust": 11.5, "very_dark": 9.9}
LABEL = {"golden_delicate": "Golden Delicate", "amber_rich": "Amber Rich", "dark_robust": "Dark Robust", "very_dark": "Very Dark"}


def _order(oid, buyer, items):
    text = f"PO {oid} from {buyer}, 2026 harvest only: " + ", ".join(f"{LABEL[g]} {l:g} L" for g, l in items)
    return {"po": oid, "buyer": buyer, "text": text, "items": items}


INPUTS = {
    "o1": _order("PO-881", "Hearth Bakery", [("golden_delicate", 40.0), ("very_dark", 20.0), ("amber_rich", 180.0)]),
    "o2": _order("PO-882", "North Deli Co", [("amber_rich", 12.5), ("dark_robust", 60.0)]),
    "o3": _order("PO-883", "Pancake Barn", [("dark_robust", 80.0), ("golden_delicate", 25.0), ("amber_rich", 30.0)]),
    "o4": _order("PO-884", "Vermont Table", [("golden_delicate", 60.0), ("dark_robust", 45.0)]),
    "o5": _order("PO-885", "Sugar Shack Foods", [("amber_rich", 50.0), ("dark_robust", 30.0), ("very_dark", 10.0)]),
    "r1": _order("PO-870", "Hearth Bakery", [("amber_rich", 35.0), ("golden_delicate", 20.0)]),
    "r2": _order("PO-871", "Brunch Club", [("dark_robust", 30.0), ("very_dark", 15.0), ("amber_rich", 22.5)]),
    "r3": _order("PO-872", "Pancake Barn", [("golden_delicate", 90.0)]),
    "r4": _order("PO-873", "North Deli Co", [("very_dark", 40.0), ("dark_robust", 25.0)]),
}
REFS = ["r1", "r2", "r3", "r4"]
CASES = [
    {"id": "zzs_maple_cached_stock", "kind": "stale_data", "input": "o1", "root": ("find_batches", 3),
     "failure": ("validate_shipment", 1),
     "description": "The batch search answers Amber Rich from the inventory cache, which still shows 420 L in B-2602, so 180 L are allocated from a batch holding 140 L."},
    {"id": "zzs_maple_half_litre", "kind": "lossy_parsing", "input": "o2", "root": ("parse_items", 1),
     "failure": ("validate_shipment", 1),
     "description": "The item parser turns 12.5 L of Amber Rich into 12 L, and the invoice follows the parsed figure."},
    {"id": "zzs_maple_alloc_memory", "kind": "bad_memory_write", "input": "o3", "root": ("remember_allocation", 2),
     "failure": ("validate_shipment", 1),
     "description": "The allocation kept for Golden Delicate records the batch's litres on hand instead of the litres allocated, and the invoice bills that."},
    {"id": "zzs_maple_lot_label", "kind": "hallucinated_value", "input": "o4", "root": ("plan_shipment", 1),
     "failure": ("validate_shipment", 1),
     "description": "The shipment plan labels a pallet with lot B-2613, which no allocation holds."},
    {"id": "zzs_maple_harvest_year", "kind": "plan_error", "input": "o5", "root": ("plan_fulfilment", 1),
     "failure": ("validate_shipment", 1),
     "description": "The fulfilment plan sources Dark Robust from the 2025 harvest although the order asks for 2026 only."},
]


def brain():
    def read(p, _):
        return json.dumps([f"{LABEL[g]}: {l:g} L" for g, l in p["items"]])

    def plan(p, _):
        steps = []
        for it in p["items"]:
            year = 2026
            if kit.on("zzs_maple_harvest_year") and it["grade"] == "dark_robust":
                year = 2025
            steps.append({"grade": it["grade"], "harvest_year": year, "strategy": "fewest batches"})
        return json.dumps({"steps": steps})

    def grade(p, _):
        return json.dumps({"batch": p["batch"], "grade": p["grade"], "confirmed": True})

    def ship(p, _):
        lots = [a["batch"] for a in p["allocations"]]
        if kit.on("zzs_maple_lot_label"):
            lots[-1] = "B-2613"
        pallets = [{"pallet": i + 1, "lot": lot} for i, lot in enumerate(lots)]
        return "Pallet plan:\n" + json.dumps(pallets)

    return brain_from({"read": read, "plan": plan, "grade": grade, "ship": ship})


def record(server, inp, path):
    server.use(brain())
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)

    def llm(name, task, payload):
        with trajdebug.step(name, kind="llm") as s:
            msgs, ans = chat(client, server.model, task, payload)
            s.input = {"messages": msgs}
            s.output = ans
        return ans

    @trajdebug.step(kind="input")
    def receive_po(text: str) -> dict:
        return {"po": inp["po"], "buyer": inp["buyer"], "text": text}

    @trajdebug.step(kind="parse")
    def parse_items(answer: dict) -> list:
        out = []
        for row in json.loads(answer["content"]):
            label, qty = row.split(":")
            grade = label.strip().lower().replace(" ", "_")
            num = re.search(r"[\d.]+", qty).group(0)
            litres = float(int(float(num))) if kit.on("zzs_maple_half_litre") else float(num)
            out.append({"grade": grade, "litres": litres})
        return out

    @trajdebug.step(kind="parse")
    def parse_plan(answer: dict) -> list:
        return json.loads(answer["content"])["steps"]

    @trajdebug.step(kind="retrieval")
    def find_batches(query: dict) -> list:
        rows = []
        for bid, b in sorted(LEDGER.items()):
            if b["grade"] == query["grade"] and b["year"] == query["harvest_year"]:
                litres = b["litres"]
                if kit.on("zzs_maple_cached_stock") and bid in CACHE:
                    litres = CACHE[bid]
                rows.append({"batch": bid, "brix": b["brix"], "litres": litres, "year": b["year"]})
        return sorted(rows, key=lambda r: -r["litres"])

    @trajdebug.step(kind="tool")
    def brix_check(batch: dict) -> dict:
        return {"batch": batch["batch"], "brix": batch["brix"], "in_range": 66.0 <= batch["brix"] <= 68.9}

    @trajdebug.step(kind="other")
    def allocate(item: dict, batches: list) -> list:
        need, out = item["litres"], []
        for b in batches:
            if need <= 0:
                break
            take = min(need, b["litres"])
            out.append({"batch": b["batch"], "grade": item["grade"], "litres": take, "on_hand": b["litres"]})
            need -= take
        return out

    @trajdebug.step(kind="state")
    def remember_allocation(grade: str, allocation: list) -> dict:
        rows = [{"batch": a["batch"], "litres": a["on_hand"] if kit.on("zzs_maple_alloc_memory") else a["litres"]}
                for a in allocation]
        trajdebug.current_run().state[f"alloc:{grade}"] = rows
        return {"grade": grade, "rows": rows}

    @trajdebug.step(kind="tool")
    def price_list(grades: list) -> dict:
        return {g: PRICES[g] for g in grades}

    @trajdebug.step(kind="other")
    def build_invoice(grades: list, prices: dict) -> dict:
        state = trajdebug.current_run().state
        lines = []
        for g in grades:
            litres = sum(r["litres"] for r in state[f"alloc:{g}"])
            lines.append({"grade": g, "litres": litres, "amount": round(litres * prices[g], 2)})
        return {"po": inp["po"], "lines": lines, "total": round(sum(l["amount"] for l in lines), 2)}

    @trajdebug.step(kind="parse")
    def parse_pallets(answer: dict) -> list:
        return json.loads(answer["content"].split("\n", 1)[1])

    @trajdebug.step(kind="condition")
    def validate_shipment(invoice: dict, allocations: list, pallets: list) -> dict:
        ordered = {g: l for g, l in inp["items"]}
        billed = {l["grade"]: l["litres"] for l in invoice["lines"]}
        if billed != ordered:
            raise ValueError(f"PO {inp['po']}: invoice litres {billed} differ from the order {ordered}")
        for a in allocations:
            b = LEDGER[a["batch"]]
            if b["year"] != 2026:
                raise ValueError(f"batch {a['batch']} is {b['year']} harvest; PO {inp['po']} takes 2026 only")
            if a["litres"] > b["litres"]:
                raise ValueError(f"batch {a['batch']} holds {b['litres']} L, {a['litres']} L allocated")
        lots = {a["batch"] for a in allocations}
        extra = [p["lot"] for p in pallets if p["lot"] not in lots]
        if extra:
            raise ValueError(f"pallet labels {extra} match no allocated batch of PO {inp['po']}")
        return {"ok": True}

    with trajdebug.run(NAME, task=f"fulfil wholesale {inp['po']}", path=path):
        po = receive_po(inp["text"])
        read = llm("read_po", "read", {"po": po["po"], "text": po["text"], "items": inp["items"]})
        items = parse_items(read)
        plan = parse_plan(llm("plan_fulfilment", "plan", {"items": items}))
        allocations = []
        for item, stepplan in zip(items, plan):
            batches = find_batches({"grade": stepplan["grade"], "harvest_year": stepplan["harvest_year"]})
            with trajdebug.step("grading_agent", kind="agent", input={"grade": item["grade"], "batches": batches}) as g:
                check = brix_check(batches[0])
                verdict = llm("confirm_grade", "grade", {"batch": check["batch"], "grade": item["grade"], "brix": check["brix"]})
                g.output = json.loads(verdict["content"])
            alloc = allocate(item, batches)
            remember_allocation(item["grade"], alloc)
            allocations.extend(alloc)
        grades = [i["grade"] for i in items]
        prices = price_list(grades)
        invoice = build_invoice(grades, prices)
        pallets = parse_pallets(llm("plan_shipment", "ship", {"po": inp["po"], "allocations": allocations}))
        validate_shipment(invoice, allocations, pallets)
