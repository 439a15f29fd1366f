"""Customer orders at a paper mill (route: otlp, plan-and-execute, OpenInference spans as OTLP JSON)."""
from __future__ import annotations

import json
import re

from opentelemetry.trace import Status, StatusCode
from openai import OpenAI

import suitekit

NAME = "mill-orders"
ROUTE = "otlp"
DOMAIN = "paper mill: customer orders"
SHAPE = ("OpenInference/OTLP plan-and-execute, ~20-30 spans: memory read, model reads the order, memory write, "
         "model writes a step plan, a loop runs it (tonnage tool, stock retriever, machine-slot tool retried "
         "after a 503, trim sub-agent span with its own model call and deckle tool), order book tool, pricing, "
         "credit tool, confirmation chain with assertions")

ON = {"plan": False, "core": False, "stock": False, "line": False, "book": False}

CUSTOMERS = {
    "Hartley Print": {"core_mm": 76, "credit_limit": 60000, "open": [11800, 9400, 8700, 7600, 6100, 5900, 4300]},
    "Orme Packaging": {"core_mm": 152, "credit_limit": 90000, "open": [22000, 15100]},
    "Fenwick Press": {"core_mm": 76, "credit_limit": 40000, "open": [3000]},
    "Bay Labels": {"core_mm": 76, "credit_limit": 25000, "open": []},
    "Castle Stationers": {"core_mm": 100, "credit_limit": 45000, "open": [12000, 8000]},
}
STOCK = [  # parent reels in the mill's warehouse
    {"grade": "silk", "gsm": 115, "tonnes": 42.0}, {"grade": "silk", "gsm": 100, "tonnes": 30.0},
    {"grade": "offset", "gsm": 90, "tonnes": 55.0}, {"grade": "offset", "gsm": 80, "tonnes": 61.0},
    {"grade": "kraft", "gsm": 120, "tonnes": 25.0}, {"grade": "kraft", "gsm": 100, "tonnes": 18.0},
    {"grade": "bond", "gsm": 90, "tonnes": 12.0},
]
PRICE_T = {"silk": 1480, "offset": 1120, "kraft": 960, "bond": 1250}
SIZES_MM = {"SRA1": (640, 900), "SRA2": (450, 640), "B1": (707, 1000)}

INPUTS = [
    {"customer": "Hartley Print", "text": "Hartley Print: line R-90: 4 reels of 90 gsm offset, 1000 mm wide, on 152 mm cores; "
     "line R-90S: 3 reels of 80 gsm offset, 1100 mm wide, on 152 mm cores; due 2027-01-20."},
    {"customer": "Orme Packaging", "text": "Orme Packaging: line K-12: 6 reels of 120 gsm kraft, 1250 mm wide, on 152 mm cores; "
     "line S-1: 20000 sheets SRA1 of 115 gsm silk; due 2027-01-25."},
    {"customer": "Fenwick Press", "text": "Fenwick Press: line S-2: 30000 sheets SRA2 of 115 gsm silk; "
     "line B-9: 15000 sheets B1 of 90 gsm bond; due 2027-01-18."},
    {"customer": "Bay Labels", "text": "Bay Labels: line K-10: 5 reels of 100 gsm kraft, 800 mm wide, on 76 mm cores; due 2027-01-22."},
    {"customer": "Castle Stationers", "text": "Castle Stationers: line S-3: 40000 sheets SRA1 of 100 gsm silk; "
     "line R-80: 2 reels of 80 gsm offset, 900 mm wide, on 100 mm cores; due 2027-01-29."},
]

CASES = [
    dict(id="zm01", input=2, switch="plan", fault_kind="plan_error",
         root=("ChatCompletion", 2), kind="llm", failure=("confirm_order", 1),
         description="The planning model leaves the machine-slot step out for line B-9, so the bond sheets are never scheduled on a paper machine."),
    dict(id="zm02", input=0, switch="core", fault_kind="bad_memory_write",
         root=("remember_specs", 1), kind="tool", failure=("confirm_order", 1),
         description="remember_specs writes Hartley Print's old 76 mm core to the customer memory although the order asks for 152 mm cores, so both reel lines are planned on 76 mm cores."),
    dict(id="zm03", input=1, switch="stock", fault_kind="wrong_retrieval",
         root=("stock_lookup", 2), kind="retrieval", failure=("confirm_order", 1),
         description="The stock search for line S-1 ranks the silk parent reels by grammage, lightest first, without matching the 115 gsm asked for, so the sheets are to be cut from 100 gsm reels."),
    dict(id="zm04", input=0, switch="line", fault_kind="subagent_wrong_entity",
         root=("trim_planner", 1), kind=None, failure=("confirm_order", 1),
         description="The trim-planner sub-agent picks its line by prefix, so for line R-90S it plans line R-90's 1000 mm reels instead of 1100 mm."),
    dict(id="zm05", input=4, switch="book", fault_kind="truncated_result",
         root=("open_orders", 1), kind="tool", failure=("credit_check", 1),
         description="open_orders returns only the first of Castle Stationers' two open orders (12,000 GBP of 20,000), so the order is priced on account terms that the customer's real exposure does not allow."),
]


def policy(request):
    system = suitekit.system_of(request)
    user = suitekit.last_user(request)
    if system.startswith("Read"):
        lines = []
        for chunk in user.split(": ", 1)[1].split("; "):
            m = re.match(r"line ([A-Z]-\w+): (\d+) reels of (\d+) gsm (\w+), (\d+) mm wide, on (\d+) mm cores", chunk)
            if m:
                code, n, gsm, grade, width, core = m.groups()
                lines.append({"line": code, "form": "reels", "reels": int(n), "gsm": int(gsm), "grade": grade,
                              "width_mm": int(width), "core_mm": int(core)})
                continue
            m = re.match(r"line ([A-Z]-\w+): (\d+) sheets (\w+) of (\d+) gsm (\w+)", chunk)
            if m:
                code, n, size, gsm, grade = m.groups()
                lines.append({"line": code, "form": "sheets", "sheets": int(n), "size": size, "gsm": int(gsm),
                              "grade": grade})
        due = re.search(r"due (\d{4}-\d{2}-\d{2})", user).group(1)
        return json.dumps({"lines": lines, "due": due})
    if system.startswith("Plan"):
        order = json.loads(user)
        steps = []
        for i, ln in enumerate(order["lines"]):
            steps += [{"line": ln["line"], "do": "tonnage"}, {"line": ln["line"], "do": "stock"}]
            if ln["form"] == "reels":
                steps.append({"line": ln["line"], "do": "trim"})
            if not (ON["plan"] and i == len(order["lines"]) - 1):
                steps.append({"line": ln["line"], "do": "slot"})
        return json.dumps({"steps": steps})
    if system.startswith("Trim"):
        job = json.loads(user)
        per_set = job["deckle_mm"] // job["width_mm"]
        return json.dumps({"width_mm": job["width_mm"], "core_mm": job["core_mm"], "reels_per_set": per_set,
                           "sets": -(-job["reels"] // per_set)})
    return "?"


def _tonnes(ln: dict) -> float:
    if ln["form"] == "sheets":
        w, h = SIZES_MM[ln["size"]]
        return round(ln["sheets"] * w * h / 1e6 * ln["gsm"] / 1e6, 3)
    return round(ln["reels"] * ln["width_mm"] / 1000 * 6000 * ln["gsm"] / 1e6, 3)  # 6 km of web per reel


def record(inp: dict, path: str, base_url: str) -> None:
    global _CAPTURE
    try:
        _CAPTURE
    except NameError:
        _CAPTURE = suitekit.OtlpCapture()
    client = suitekit.client(base_url)
    A = suitekit.span_attrs
    memory: dict = {inp["customer"]: {"core_mm": CUSTOMERS[inp["customer"]]["core_mm"]}}
    attempts = {"n": 0}

    def ask(system: str, payload: str) -> str:
        resp = client.chat.completions.create(model="fake-model", messages=[
            {"role": "system", "content": system}, {"role": "user", "content": payload}])
        return resp.choices[0].message.content

    with _CAPTURE.capturing(path) as tracer:
        span = tracer.start_as_current_span
        try:
            with span(NAME, attributes=A("AGENT", inp)) as root:
                root.set_attribute("agent.name", NAME)
                cust = inp["customer"]
                with span("recall_customer", attributes=A("TOOL", {"customer": cust})) as s:
                    known = dict(memory[cust])
                    suitekit.set_out(s, known)
                with span("read_order", attributes=A("CHAIN", {"text": inp["text"]})) as s:
                    order = json.loads(ask("Read the paper order into JSON lines.", inp["text"]))
                    suitekit.set_out(s, order)
                with span("remember_specs", attributes=A("TOOL", {"customer": cust, "order": order})) as s:
                    stated = [ln["core_mm"] for ln in order["lines"] if ln.get("core_mm")]
                    core = known["core_mm"] if (ON["core"] or not stated) else stated[0]
                    memory[cust] = {"core_mm": core}
                    suitekit.set_out(s, memory[cust])
                with span("make_plan", attributes=A("CHAIN", order)) as s:
                    plan = json.loads(ask("Plan the order's steps as JSON {steps: [...]}.", json.dumps(order)))
                    suitekit.set_out(s, plan)
                lines = {ln["line"]: ln for ln in order["lines"]}
                done: dict[str, dict] = {code: {} for code in lines}
                for step in plan["steps"]:
                    ln = lines[step["line"]]
                    if step["do"] == "tonnage":
                        with span("convert_to_tonnes", attributes=A("TOOL", ln)) as s:
                            done[ln["line"]]["tonnes"] = t = _tonnes(ln)
                            suitekit.set_out(s, {"line": ln["line"], "tonnes": t})
                    elif step["do"] == "stock":
                        with span("stock_lookup", attributes=A("RETRIEVER", {"grade": ln["grade"], "gsm": ln["gsm"]})) as s:
                            hits = [r for r in STOCK if r["grade"] == ln["grade"]]
                            if ON["stock"] and ln["line"] == "S-1":
                                hits.sort(key=lambda r: r["gsm"])
                            else:
                                hits.sort(key=lambda r: (r["gsm"] != ln["gsm"], -r["tonnes"]))
                            done[ln["line"]]["parent"] = hits[0]
                            suitekit.set_out(s, hits)
                    elif step["do"] == "trim":
                        with span("trim_planner", attributes=A("AGENT", {"line": ln["line"]})) as sub:
                            sub.set_attribute("agent.name", "trim_planner")
                            if ON["line"]:
                                job_line = next(x for x in order["lines"] if ln["line"].startswith(x["line"]))
                            else:
                                job_line = ln
                            job = {"line": ln["line"], "width_mm": job_line["width_mm"], "reels": job_line["reels"],
                                   "core_mm": memory[cust]["core_mm"], "deckle_mm": 5600}
                            trim = json.loads(ask("Trim the reels across the machine deckle; answer JSON.", json.dumps(job)))
                            with span("check_deckle", attributes=A("TOOL", trim)) as s:
                                used = trim["width_mm"] * trim["reels_per_set"]
                                result = {"used_mm": used, "waste_pct": round(100 * (5600 - used) / 5600, 1)}
                                suitekit.set_out(s, result)
                            done[ln["line"]]["trim"] = trim
                            suitekit.set_out(sub, trim)
                    elif step["do"] == "slot":
                        for attempt in (1, 2):
                            with span("schedule_run", attributes=A("TOOL", {"line": ln["line"], "grade": ln["grade"],
                                                                            "attempt": attempt})) as s:
                                attempts["n"] += 1
                                if attempts["n"] == 1:
                                    s.set_status(Status(StatusCode.ERROR, "503 machine planner busy"))
                                    s.add_event("exception", {"exception.type": "ServiceUnavailable",
                                                              "exception.message": "503 machine planner busy"})
                                    continue
                                slot = {"machine": "PM2" if ln["grade"] in ("kraft", "offset") else "PM3",
                                        "week": "2027-W02"}
                                done[ln["line"]]["slot"] = slot
                                suitekit.set_out(s, slot)
                                break
                with span("open_orders", attributes=A("TOOL", {"customer": cust})) as s:
                    book = list(CUSTOMERS[cust]["open"])
                    if ON["book"]:
                        book = book[:1]
                    suitekit.set_out(s, {"customer": cust, "open_gbp": book})
                with span("price_order", attributes=A("CHAIN", done)) as s:
                    value = round(sum(done[c]["tonnes"] * PRICE_T[lines[c]["grade"]] for c in lines), 2)
                    exposure = value + sum(book)
                    limit = CUSTOMERS[cust]["credit_limit"]
                    terms = "account 30 days" if exposure <= 0.5 * limit else "proforma"
                    priced = {"value_gbp": value, "exposure_gbp": exposure, "terms": terms}
                    suitekit.set_out(s, priced)
                with span("credit_check", attributes=A("TOOL", {"customer": cust, "new_gbp": value, "terms": terms})) as s:
                    s.set_attribute("tool.name", "credit_check")
                    ledger = sum(CUSTOMERS[cust]["open"]) + value
                    if ledger > limit:
                        raise RuntimeError(f"{cust} exposure {ledger:,.0f} GBP exceeds credit limit {limit:,} GBP")
                    if terms != "proforma" and ledger > 0.5 * limit:
                        raise RuntimeError(f"{terms} refused for {cust}: exposure {ledger:,.0f} GBP is "
                                           f"{100 * ledger / limit:.0f}% of the {limit:,} GBP limit (50% allowed)")
                    suitekit.set_out(s, {"approved": True})
                with span("confirm_order", attributes=A("CHAIN", {"order": order, "done": done})) as s:
                    for code, ln in lines.items():
                        d = done[code]
                        assert "slot" in d, f"line {code} has no paper machine slot before {order['due']}"
                        assert d["parent"]["gsm"] == ln["gsm"], (
                            f"line {code} would be cut from {d['parent']['gsm']} gsm stock; ordered {ln['gsm']} gsm")
                        if ln["form"] == "reels":
                            assert d["trim"]["width_mm"] == ln["width_mm"], (
                                f"line {code} trimmed at {d['trim']['width_mm']} mm; ordered {ln['width_mm']} mm")
                            assert d["trim"]["core_mm"] == ln["core_mm"], (
                                f"line {code} planned on {d['trim']['core_mm']} mm cores; ordered {ln['core_mm']} mm")
                    suitekit.set_out(s, {"confirmed": True, "value_gbp": value})
        except Exception:
            pass
