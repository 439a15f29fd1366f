"""Customs broker (route openai_agents): clerk -> hand-off to a desk; per line a classifier sub-agent
(as_tool), duty rate and a memory write (parallel calls); the entry filed from memory."""

from __future__ import annotations

import json
from typing import Any

from agents import Agent, RunConfig, RunContextWrapper, Runner, function_tool, handoff

from suite_m import kit
from trajdebug.testing import Reply, tool_call


AGENT = "customs-broker"
ROUTE = "openai_agents"
DOMAIN = "customs brokerage (import entries)"
SHAPE = "clerk (invoice tool) hands off to one of two desks; desk loops 4 lines: classifier sub-agent via as_tool (search + answer), parallel duty_rate + record_line (context memory); file_entry from memory"

# sku -> (description, hts, unit, search hits)
CATALOG = {
    "KT-220": ("Electric kettle, 1.7 l, stainless", "8516.79.00", "pcs"),
    "TB-118": ("Oak side table, assembled", "9403.60.80", "pcs"),
    "CB-300": ("Bamboo cutting board", "4419.11.00", "pcs"),
    "LM-045": ("LED desk lamp", "9405.21.00", "pcs"),
    "TW-610": ("Cotton bath towel", "6302.60.00", "doz"),
    "MG-072": ("Ceramic mug, 350 ml", "6912.00.48", "doz"),
    "NL-500": ("Steel wire nails, 3 in", "7317.00.55", "kg"),
    "BK-233": ("Steel shelving bracket", "8302.42.30", "pcs"),
    "SP-090": ("Silicone spatula", "3924.10.40", "pcs"),
    "PL-740": ("Polyester pillow", "9404.90.10", "pcs"),
}
PARTS = {"KT-220": ("Parts of electrothermic appliances (bases, lids)", "8516.90.80", "kg")}
RATES = {
    "8516.79.00": 2.7, "8516.90.80": 2.7, "9403.60.80": 0.0, "4419.11.00": 3.2, "9405.21.00": 3.9,
    "6302.60.00": 9.1, "6912.00.48": 9.8, "7317.00.55": 0.0, "8302.42.30": 3.9, "3924.10.40": 3.4, "9404.90.10": 6.0,
}
PENALTY_ORIGIN = "China"


def _ship(n: int, origin: str, lines: list[tuple[str, int, float]], desk: str = "classification") -> dict:
    rows = [
        {"line": i + 1, "sku": sku, "description": CATALOG[sku][0], "qty": qty, "unit": CATALOG[sku][2],
         "unit_value_usd": uv, "value_usd": round(qty * uv, 2)}
        for i, (sku, qty, uv) in enumerate(lines)
    ]
    return {
        "task": f"File the import entry for shipment SH-{n} ({len(rows)} lines from {origin})",
        "shipment": f"SH-{n}",
        "origin": origin,
        "lines": rows,
        "desk": desk,
        "manifest_value_usd": round(sum(r["value_usd"] for r in rows), 2),
    }


INPUTS = [
    _ship(4410, "Vietnam", [("TB-118", 40, 86.5), ("CB-300", 600, 4.15), ("KT-220", 240, 12.6), ("LM-045", 150, 9.8)]),
    _ship(4411, "Vietnam", [("CB-300", 500, 4.15), ("TB-118", 30, 86.5), ("MG-072", 80, 14.4), ("SP-090", 900, 1.35)]),
    _ship(4412, "Thailand", [("TW-610", 120, 22.0), ("PL-740", 300, 6.75), ("LM-045", 200, 9.8), ("KT-220", 180, 12.6)]),
    _ship(4413, "Malaysia", [("LM-045", 220, 9.8), ("BK-233", 1500, 0.82), ("SP-090", 700, 1.35), ("MG-072", 60, 14.4)]),
    _ship(4414, "Vietnam", [("MG-072", 90, 14.4), ("TB-118", 25, 86.5), ("PL-740", 260, 6.75), ("CB-300", 450, 4.15)]),
]
REFERENCES = [
    _ship(4501, "Thailand", [("PL-740", 400, 6.75), ("TW-610", 90, 22.0), ("SP-090", 800, 1.35), ("LM-045", 120, 9.8)]),
    _ship(4502, "India", [("NL-500", 12000, 1.12), ("BK-233", 900, 0.82), ("SP-090", 300, 1.35), ("TW-610", 40, 22.0)], desk="remedies"),
    _ship(4503, "Vietnam", [("KT-220", 150, 12.6), ("MG-072", 70, 14.4), ("CB-300", 350, 4.15), ("TB-118", 20, 86.5)]),
    _ship(4504, "Malaysia", [("BK-233", 2000, 0.82), ("LM-045", 100, 9.8), ("PL-740", 150, 6.75), ("MG-072", 50, 14.4)]),
]

CASES = [
    {"case": "m_customs_1", "fid": "cus1", "kind": "subagent_wrong_entity", "input": 0, "root": "generation fake-model", "marker": "8516.90.80", "failure": "file_entry"},
    {"case": "m_customs_2", "fid": "cus2", "kind": "wrong_tool_args", "input": 1, "root": "generation fake-model", "marker": "China", "failure": "file_entry"},
    {"case": "m_customs_3", "fid": "cus3", "kind": "truncated_result", "input": 2, "root": "get_commercial_invoice", "marker": "4665.0", "failure": "file_entry"},
    {"case": "m_customs_4", "fid": "cus4", "kind": "wrong_routing", "input": 3, "root": "generation fake-model", "marker": "transfer_to_remedies_desk", "failure": "file_entry"},
    {"case": "m_customs_5", "fid": "cus5", "kind": "bad_memory_write", "input": 4, "root": "record_line", "marker": "840375.0", "failure": "file_entry"},
]

_ALL = {s["shipment"]: s for s in INPUTS + REFERENCES}


# -- the model -----------------------------------------------------------------------------


def _tool_results(msgs: list[dict]) -> list[tuple[str, str]]:
    names = {}
    for m in msgs:
        for c in m.get("tool_calls") or ():
            names[c["id"]] = c["function"]["name"]
    return [(names.get(m.get("tool_call_id"), ""), m.get("content") or "") for m in msgs if m.get("role") == "tool"]


def policy(inp: dict):
    def answer(request) -> Any:
        msgs = request.body["messages"]
        system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
        results = _tool_results(msgs)
        if system.startswith("You are the intake clerk"):
            if not results:
                return Reply(tool_calls=(tool_call("get_commercial_invoice", {"shipment_id": inp["shipment"]}),))
            desk = inp["desk"]
            if kit.active("cus4"):
                desk = "remedies"
            return Reply(tool_calls=(tool_call(f"transfer_to_{desk}_desk", {}),))
        if system.startswith("You classify goods"):
            item = msgs[-1]["content"] if not results else next(m["content"] for m in msgs if m["role"] == "user")
            sku = item.split(":", 1)[0].strip()
            if not results:
                return Reply(tool_calls=(tool_call("search_tariff", {"query": CATALOG[sku][0]}),))
            hits = json.loads(results[-1][1])["hits"]
            pick = hits[0]
            if sku == "KT-220" and kit.active("cus1"):
                pick = hits[1]
            return json.dumps({"sku": sku, "hts": pick["hts"], "unit": pick["unit"], "basis": pick["text"]})
        # a desk
        invoice = json.loads(next(c for n, c in results if n == "get_commercial_invoice"))
        lines = invoice["lines"]
        classified = [json.loads(c) for n, c in results if n == "classify_item"]
        recorded = [c for n, c in results if n == "record_line"]
        remedies = system.startswith("You are the trade remedies desk")
        if len(classified) < len(lines) and len(recorded) == len(classified):
            ln = lines[len(classified)]
            return Reply(tool_calls=(tool_call("classify_item", {"input": f"{ln['sku']}: {ln['description']}"}),))
        if len(recorded) < len(classified):
            ln, cl = lines[len(classified) - 1], classified[-1]
            origin = invoice["origin"]
            if ln["line"] == 2 and kit.active("cus2"):
                origin = PENALTY_ORIGIN
            args = {"line": ln["line"], "sku": ln["sku"], "hts": cl["hts"], "qty": ln["qty"], "value_usd": ln["value_usd"], "origin": origin}
            return Reply(tool_calls=(
                tool_call("duty_rate", {"hts": cl["hts"], "origin": origin}),
                tool_call("record_line", args),
            ))
        if remedies and not any(n == "adcvd_case_lookup" for n, _ in results):
            return Reply(tool_calls=(tool_call("adcvd_case_lookup", {"hts": classified[0]["hts"], "origin": invoice["origin"]}),))
        if not any(n == "file_entry" for n, _ in results):
            case = None
            if remedies:
                case = json.loads(next(c for n, c in results if n == "adcvd_case_lookup"))["case"]
            return Reply(tool_calls=(tool_call("file_entry", {"shipment_id": invoice["shipment"], "adcvd_case": case}),))
        entry = json.loads(next(c for n, c in results if n == "file_entry"))
        return f"Entry {entry['entry_number']} filed for {invoice['shipment']}: {entry['lines']} lines, duty {entry['duty_usd']} USD."

    return answer


# -- tools ---------------------------------------------------------------------------------


@function_tool
def get_commercial_invoice(shipment_id: str) -> str:
    """Read the commercial invoice of a shipment (lines, quantities, values)."""
    ship = _ALL[shipment_id]
    lines = ship["lines"]
    if kit.active("cus3"):
        lines = lines[:2]  # the document service returned its first page only
    return json.dumps({
        "shipment": shipment_id, "origin": ship["origin"], "lines": lines,
        "lines_value_usd": round(sum(r["value_usd"] for r in lines), 2), "currency": "USD",
    })


@function_tool
def search_tariff(query: str) -> str:
    """Search the harmonized tariff schedule."""
    sku = next(k for k, v in CATALOG.items() if v[0] == query)
    hits = [{"hts": CATALOG[sku][1], "text": CATALOG[sku][0], "unit": CATALOG[sku][2]}]
    if sku in PARTS:
        p = PARTS[sku]
        hits.append({"hts": p[1], "text": p[0], "unit": p[2]})
    return json.dumps({"query": query, "hits": hits})


@function_tool
def duty_rate(hts: str, origin: str) -> str:
    """General or special duty rate for a tariff number and country of origin."""
    rate = RATES[hts] + (25.0 if origin == PENALTY_ORIGIN else 0.0)
    return json.dumps({"hts": hts, "origin": origin, "ad_valorem_pct": rate})


@function_tool
def record_line(ctx: RunContextWrapper[dict], line: int, sku: str, hts: str, qty: int, value_usd: float, origin: str) -> str:
    """Save a classified entry line in the entry being prepared."""
    value = value_usd
    if line == 4 and kit.active("cus5"):
        value = round(value_usd * qty, 2)
    row = {"line": line, "sku": sku, "hts": hts, "qty": qty, "value_usd": value, "origin": origin}
    ctx.context["entry_lines"].append(row)
    return json.dumps(row)


@function_tool
def adcvd_case_lookup(hts: str, origin: str) -> str:
    """Find the antidumping / countervailing duty case for a tariff number and origin."""
    return json.dumps({"hts": hts, "origin": origin, "case": "A-533-889" if hts.startswith("7317") else "A-570-909"})


def _file_entry(ctx: RunContextWrapper[dict], shipment_id: str, adcvd_case: str | None = None) -> str:
    ship = _ALL[shipment_id]
    rows = sorted(ctx.context["entry_lines"], key=lambda r: r["line"])
    by_line = {r["line"]: r for r in ship["lines"]}
    for r in rows:
        if r["origin"] != ship["origin"]:
            raise ValueError(f"ACE reject E-417: line {r['line']} country of origin {r['origin']} conflicts with the certificate of origin ({ship['origin']})")
        unit = by_line[r["line"]]["unit"]
        if r["hts"] == "8516.90.80" and unit != "kg":
            raise ValueError(f"ACE reject Q-102: line {r['line']} HTS {r['hts']} is reported in kg, invoice quantity is in {unit}")
    if adcvd_case and not any(by_line[r["line"]]["sku"] == "NL-500" for r in rows):
        raise ValueError(f"ACE reject C-330: AD/CVD case {adcvd_case} does not cover any line of {shipment_id} ({ship['origin']})")
    total = round(sum(r["value_usd"] for r in rows), 2)
    if abs(total - ship["manifest_value_usd"]) > 1.0:
        raise ValueError(f"ACE reject V-211: entered value {total:.2f} USD differs from the manifest value {ship['manifest_value_usd']:.2f} USD")
    duty = round(sum(r["value_usd"] * RATES[r["hts"]] / 100 for r in rows), 2)
    return json.dumps({"entry_number": f"EN-{shipment_id[3:]}-01", "lines": len(rows), "duty_usd": duty})


file_entry = function_tool(_file_entry, name_override="file_entry",
                           description_override="File the import entry with customs from the prepared lines.",
                           failure_error_function=None)


def build(model):
    classifier = Agent(name="classifier", instructions="You classify goods in the tariff schedule. Search, then answer JSON with sku, hts, unit.",
                       tools=[search_tariff], model=model)
    classify_item = classifier.as_tool(tool_name="classify_item", tool_description="Classify one invoice line (sku: description).")
    desk_tools = [classify_item, duty_rate, record_line, file_entry]
    classification = Agent(name="classification_desk", model=model, tools=desk_tools,
                           instructions="You are the classification desk. For each invoice line: classify it, get its duty rate and record it; then file the entry.")
    remedies = Agent(name="remedies_desk", model=model, tools=[*desk_tools, adcvd_case_lookup],
                     instructions="You are the trade remedies desk. For each invoice line: classify it, get its duty rate and record it; look up the AD/CVD case; then file the entry.")
    clerk = Agent(name="intake_clerk", model=model, tools=[get_commercial_invoice],
                  handoffs=[handoff(classification, tool_name_override="transfer_to_classification_desk"),
                            handoff(remedies, tool_name_override="transfer_to_remedies_desk")],
                  instructions="You are the intake clerk. Read the commercial invoice, then hand the shipment to the right desk.")
    return clerk


def execute(inp: dict, env) -> None:
    clerk = build(env.agents_model())
    env.run_async(Runner.run(clerk, inp["task"], context={"entry_lines": []}, max_turns=40,
                    run_config=RunConfig(workflow_name=AGENT, trace_metadata={"task": inp["task"]})))
