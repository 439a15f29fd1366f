"""Model-railway parts shop: a LangGraph StateGraph with ChatOpenAI, traced by TrajdebugTracer."""

from __future__ import annotations

from .common import Agent, Case, chat_policy, run_langgraph

AGENT = Agent(
    key="model_railway", agent="model-railway-parts", route="langgraph", domain="model-railway parts shop",
    shape="StateGraph: plan, warehouse stock tool, 7x parse/screen node loop, pick, reservations, draft, trade-account sub-graph, price, pre-check, order",
    unit="parts pack", party_word="packs per line", site_word="warehouse", doc_word="trade", prefix="RLY",
    sites=["warehouse-derby", "warehouse-crewe", "warehouse-swindon"],
    customers=[("M-601", "Wolverton Model Club"), ("M-618", "Tinplate & Track Ltd"), ("M-623", "Ada Pennington"),
               ("M-637", "Branch Line Hobbies")],
    labels=["OO coupling pack", "N gauge point motor", "HO sleeper strip", "OO wagon wheelset", "live steam boiler kit",
            "DCC decoder pack", "catenary mast set"],
    scale=2.5,
    names={"intake": "read_parts_order", "plan": "plan_parts_order", "parse_plan": "PartsPlanParser",
           "fetch": "warehouse_stock", "parse_item": "StockRowParser", "check_item": "screen_stock_row",
           "select": "choose_parts", "hold": "reserve_stock", "remember": "keep_order_draft",
           "sub": "trade_account_desk", "resolve": "match_account", "lookup": "trade_account_files",
           "summarise": "summarise_account", "total": "price_parts", "preflight": "precheck_parts",
           "submit": "place_parts_order"},
    inputs=[
        {"ref": "PO-4401", "customer": "M-618", "site": "warehouse-crewe", "date": "2027-06-07", "count": 3, "party": 13, "budget": 1700.0},
        {"ref": "PO-4402", "customer": "M-601", "site": "warehouse-derby", "date": "2027-06-08", "count": 2, "party": 12, "budget": 950.0},
        {"ref": "PO-4403", "customer": "M-623", "site": "warehouse-swindon", "date": "2027-06-09", "count": 3, "party": 16, "budget": 2300.0},
        {"ref": "PO-4404", "customer": "M-637", "site": "warehouse-crewe", "date": "2027-06-10", "count": 2, "party": 18, "budget": 1600.0},
        {"ref": "PO-4405", "customer": "M-618", "site": "warehouse-derby", "date": "2027-06-11", "count": 3, "party": 10, "budget": 1250.0},
    ],
    cases=[
        Case("z16_rly_cache", "stale_data", "fetch",
             "The warehouse stock tool answers from a week-old cached price list, and the order is refused for an outdated tariff.",
             root_kind="tool", hops=9),
        Case("z17_rly_pence", "unit_error", "parse_item",
             "Parsing the fourth stock row reads its euro price as cents, so the quoted total falls far below the shop's tariff.",
             root_kind="parse", item=3, hops=5),
        Case("z18_rly_draft", "bad_memory_write", "remember",
             "The order draft swaps packs-per-line and line count when it is saved, so the order goes out for 3 packs per line.",
             root_kind="other", hops=2),
        Case("z19_rly_week", "wrong_tool_args", "fetch_args",
             "The stock query is sent with a dispatch date one week later than planned, so the order is priced on a later week's list.",
             root_kind="tool", hops=9),
        Case("z20_rly_account", "wrong_retrieval", "lookup",
             "The trade-account file search returns the customer's lapsed 2025 trade agreement first, and the order is refused for an expired agreement.",
             root_kind="retrieval", hops=3),
    ],
)


def policy(A: Agent):
    return chat_policy(A)


def record(A: Agent, inp: dict, path: str, base_url: str) -> str:
    return run_langgraph(A, inp, path, base_url)
