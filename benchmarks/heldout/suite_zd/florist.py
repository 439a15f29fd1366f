"""Wedding florist: an OpenAI Agents SDK planner with a stem-buyer agent as a tool orders flowers for a wedding (openai_agents)."""
from __future__ import annotations

import json
import re
from pathlib import Path

from .common import agents_setup, as_json, system_text, tool_outputs
from .kit import active

NAME = "wedding-florist"
ROUTE = "openai_agents"
DOMAIN = "wedding florist"
SHAPE = "planner agent: brief tool -> bill of materials -> stem-buyer agent-as-tool per flower (wholesaler quote tool) -> bunch calculator per flower -> cooler reservation -> place order"

BRIEFS = {
    "W-0814": {"couple": "Adeyemi-Lund", "wedding": "2026-08-14", "ordered": "2026-08-01", "tables": 12,
               "pieces": ["bridal bouquet", "ceremony arch", "centrepieces"], "flowers": {"peony": 25, "eucalyptus": 12}},
    "W-0905": {"couple": "Moreau-Baptiste", "wedding": "2026-09-05", "ordered": "2026-08-20", "tables": 9,
               "pieces": ["bridal bouquet", "buttonholes", "centrepieces"], "flowers": {"ranunculus": 30, "olive": 10}},
    "W-0704": {"couple": "Kato-Reyes", "wedding": "2026-07-04", "ordered": "2026-06-22", "tables": 8,
               "pieces": ["bridal bouquet", "centrepieces"], "flowers": {"garden rose": 20, "eucalyptus": 8}},
    "W-0711": {"couple": "Olsen-Mbeki", "wedding": "2026-07-11", "ordered": "2026-06-30", "tables": 14,
               "pieces": ["ceremony arch", "centrepieces"], "flowers": {"peony": 18, "olive": 14}},
    "W-0718": {"couple": "Farah-Costa", "wedding": "2026-07-18", "ordered": "2026-07-05", "tables": 6,
               "pieces": ["bridal bouquet", "buttonholes"], "flowers": {"ranunculus": 22, "eucalyptus": 6}},
    "W-0725": {"couple": "Nguyen-Walsh", "wedding": "2026-07-25", "ordered": "2026-07-10", "tables": 10,
               "pieces": ["bridal bouquet", "ceremony arch", "centrepieces"], "flowers": {"garden rose": 26, "olive": 10}},
}
PRICE = {"peony": 2.4, "eucalyptus": 1.1, "ranunculus": 1.8, "olive": 1.3, "garden rose": 2.9}
BUNCH = {"peony": 10, "eucalyptus": 10, "ranunculus": 10, "olive": 5, "garden rose": 12}
INPUTS = {k: {"order": k} for k in BRIEFS}
INPUTS.update({"r1": {"order": "W-0704"}, "r2": {"order": "W-0711"}, "r3": {"order": "W-0718"}, "r4": {"order": "W-0725"}})
REFS = ["r1", "r2", "r3", "r4"]
CASES = [
    {"id": "zd_florist_buyer", "kind": "subagent_wrong_entity", "input": "W-0814", "root": "generation gpt-4o-mini", "occ": 7,
     "failure": "place_order", "description": "the stem-buyer agent, asked for eucalyptus, requests its wholesaler quote for peony, so the order line for eucalyptus carries a quote for another flower and the wholesaler order API refuses it."},
    {"id": "zd_florist_cooler", "kind": "wrong_tool_args", "input": "W-0905", "root": "generation gpt-4o-mini", "occ": 12,
     "failure": "place_order", "description": "the planner's order call gives the order date as the delivery date instead of the wedding date, and the order API finds no cooler space held for that day."},
    {"id": "zd_florist_quote", "kind": "format_drift", "input": "W-0814", "root": "wholesaler_quote", "occ": 2,
     "failure": "place_order", "description": "wholesaler_quote answers the second flower's unit price as a euro string with a decimal comma, which the order API rejects as not a number."},
    {"id": "zd_florist_bom", "kind": "plan_error", "input": "W-0814", "root": "generation gpt-4o-mini", "occ": 2,
     "failure": "place_order", "description": "the planner's bill of materials leaves out the ceremony arch from the contracted pieces, and the order API refuses an order that does not cover the contract."},
    {"id": "zd_florist_bunches", "kind": "unit_error", "input": "W-0905", "root": "bunch_calculator", "occ": 1,
     "failure": "place_order", "description": "bunch_calculator divides the stems needed by a dozen although the wholesaler sells ranunculus in bunches of ten, so too few stems are ordered and the order API flags the shortfall."},
]


def policy(req):
    from trajdebug.testing import Reply, tool_call
    sys_text = system_text(req)
    done = tool_outputs(req)
    if "[stem_buyer]" in sys_text:
        ask = req.body["messages"][-1].get("content") if "wholesaler_quote" not in done else None
        if "wholesaler_quote" not in done:
            m = re.search(r"Quote (\d+) stems of ([a-z ]+) for", ask or "")
            flower = m.group(2)
            if active("zd_florist_buyer") and flower == "eucalyptus":
                flower = "peony"
            return Reply(tool_calls=(tool_call("wholesaler_quote", {"flower": flower, "stems": int(m.group(1))}),))
        return done["wholesaler_quote"][-1][1]
    if "read_brief" not in done:
        return Reply(tool_calls=(tool_call("read_brief", {"order": json.loads(req.body["messages"][1]["content"])["order"]}),))
    brief = as_json(done["read_brief"][-1][1])
    flowers = list(brief["flowers"])
    if "draft_bom" not in done:
        pieces = [p for p in brief["pieces"] if not (active("zd_florist_bom") and p == "ceremony arch")]
        items = [{"piece": p, "count": brief["tables"] if p == "centrepieces" else 1} for p in pieces]
        return Reply(tool_calls=(tool_call("draft_bom", {"order": brief["order"], "items": items}),))
    bom = as_json(done["draft_bom"][-1][1])
    bought = done.get("stem_buyer", [])
    if len(bought) < len(flowers):
        f = flowers[len(bought)]
        return Reply(tool_calls=(tool_call("stem_buyer", {"input": f"Quote {bom['stems'][f]} stems of {f} for {brief['wedding']}."}),))
    calc = done.get("bunch_calculator", [])
    if len(calc) < len(flowers):
        f = flowers[len(calc)]
        return Reply(tool_calls=(tool_call("bunch_calculator", {"flower": f, "stems_needed": bom["stems"][f]}),))
    if "reserve_cooler" not in done:
        return Reply(tool_calls=(tool_call("reserve_cooler", {"date": brief["wedding"], "boxes": len(flowers)}),))
    if "place_order" not in done:
        quotes = [as_json(q[1]) for q in bought]
        bunches = [as_json(c[1]) for c in calc]
        lines = [{"flower": f, "quote": quotes[i], "bunches": bunches[i]["bunches"]} for i, f in enumerate(flowers)]
        cooler = as_json(done["reserve_cooler"][-1][1])
        delivery = brief["ordered"] if active("zd_florist_cooler") else brief["wedding"]
        return Reply(tool_calls=(tool_call("place_order", {"order": brief["order"], "delivery": delivery,
                                                           "bom_id": bom["bom_id"], "cooler_id": cooler["cooler_id"], "lines": lines}),))
    return "Order placed with the wholesaler; delivery is booked for the morning before the wedding."


BOMS: dict[str, dict] = {}
COOLERS: dict[str, dict] = {}


def build():
    from agents import Agent, function_tool

    @function_tool
    def read_brief(order: str) -> dict:
        """The signed brief of a wedding order."""
        return {"order": order, **BRIEFS[order]}

    @function_tool(strict_mode=False)
    def draft_bom(order: str, items: list[dict]) -> dict:
        """Turn the pieces into stems per flower (bill of materials)."""
        base = BRIEFS[order]["flowers"]
        scale = sum(3 if i["piece"] == "centrepieces" else 1 for i in items)
        bom = {"bom_id": f"BOM-{order[2:]}", "pieces": [i["piece"] for i in items],
               "stems": {f: n * scale for f, n in base.items()}}
        BOMS[bom["bom_id"]] = bom
        return bom

    @function_tool
    def wholesaler_quote(flower: str, stems: int) -> dict:
        """A wholesaler quote for a flower."""
        price = PRICE[flower]
        if active("zd_florist_quote") and flower == "eucalyptus":
            return {"quote_id": f"Q-{flower[:3].upper()}-{stems}", "flower": flower, "unit_price": f"€{price:.2f}".replace(".", ","), "bunch_size": BUNCH[flower]}
        return {"quote_id": f"Q-{flower[:3].upper()}-{stems}", "flower": flower, "unit_price": price, "bunch_size": BUNCH[flower]}

    @function_tool
    def bunch_calculator(flower: str, stems_needed: int) -> dict:
        """How many wholesaler bunches cover the stems needed."""
        size = 12 if active("zd_florist_bunches") else BUNCH[flower]
        return {"flower": flower, "bunches": -(-stems_needed // size)}

    @function_tool
    def reserve_cooler(date: str, boxes: int) -> dict:
        """Reserve cold-room space for the delivery day."""
        cid = f"CL-{date.replace('-', '')}"
        COOLERS[cid] = {"date": date, "boxes": boxes}
        return {"cooler_id": cid, "date": date}

    @function_tool(failure_error_function=None, strict_mode=False)
    def place_order(order: str, delivery: str, bom_id: str, cooler_id: str, lines: list[dict]) -> dict:
        """Place the order with the wholesaler (validated by its order API)."""
        bom = BOMS[bom_id]
        missing = [p for p in BRIEFS[order]["pieces"] if p not in bom["pieces"]]
        if missing:
            raise ValueError(f"order API 422: bill of materials does not cover contracted pieces: {', '.join(missing)}")
        if COOLERS.get(cooler_id, {}).get("date") != delivery:
            raise ValueError(f"order API 409: no cooler space held for delivery {delivery} (reservation {cooler_id})")
        for ln in lines:
            q = ln["quote"]
            if q.get("flower") != ln["flower"]:
                raise ValueError(f"order API 409: line {ln['flower']}: quote {q.get('quote_id')} is for {q.get('flower')}")
            if not isinstance(q.get("unit_price"), (int, float)):
                raise ValueError(f"order API 400: lines[].quote.unit_price must be a number, got {q.get('unit_price')!r}")
            if ln["bunches"] * q["bunch_size"] < bom["stems"][ln["flower"]]:
                raise ValueError(f"order API 422: {ln['flower']}: {ln['bunches']} bunches of {q['bunch_size']} short of {bom['stems'][ln['flower']]} stems")
        return {"wholesale_order": "WH-" + order[2:], "status": "placed"}

    buyer = Agent(name="stem_buyer", model="gpt-4o-mini", instructions="[stem_buyer] Get a wholesaler quote for the flower asked.",
                  tools=[wholesaler_quote])
    return Agent(name="florist_planner", model="gpt-4o-mini",
                 instructions="[planner] Plan the flowers for the wedding order and place it.",
                 tools=[read_brief, draft_bom, buyer.as_tool(tool_name="stem_buyer", tool_description="Buy stems of one flower."),
                        bunch_calculator, reserve_cooler, place_order])


def record(inp: dict, path: Path, base_url: str) -> None:
    from agents import RunConfig, Runner
    from trajdebug.integrations.openai_agents import TrajdebugProcessor
    BOMS.clear()
    COOLERS.clear()
    proc = TrajdebugProcessor(path=str(path), name=NAME, task=f"order flowers for {inp['order']}")
    agents_setup(base_url, proc)
    try:
        Runner.run_sync(build(), json.dumps({"order": inp["order"]}), run_config=RunConfig(workflow_name=NAME))
    except Exception:
        pass
