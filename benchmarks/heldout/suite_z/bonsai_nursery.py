"""Bonsai nursery mail orders: a LangGraph StateGraph with ChatOpenAI, traced by TrajdebugTracer."""

from __future__ import annotations

from .common import Agent, Case, chat_policy, run_langgraph

AGENT = Agent(
    key="bonsai_nursery", agent="bonsai-mail-orders", route="langgraph", domain="bonsai nursery mail order",
    shape="StateGraph: plan, stock sheet tool, 7x parse/grade node loop, pick, reserve loop, draft, phytosanitary sub-graph, price, pre-check, place",
    unit="tree", party_word="units per tree", site_word="greenhouse", doc_word="phytosanitary", prefix="BON",
    sites=["greenhouse-a", "greenhouse-b", "greenhouse-c"],
    customers=[("B-501", "Koyo Garden Supplies"), ("B-513", "Hillcrest Bonsai Society"), ("B-524", "Marta Quintero"),
               ("B-532", "Zen Corner Florist")],
    labels=["juniper shohin", "trident maple", "Chinese elm", "Japanese black pine", "imported yamadori",
            "ficus retusa", "Satsuki azalea"],
    scale=4.0,
    names={"intake": "open_order", "plan": "plan_order", "parse_plan": "OrderPlanParser", "fetch": "get_stock_sheet",
           "parse_item": "StockLineParser", "check_item": "grade_stock_line", "select": "pick_trees",
           "hold": "reserve_tree", "remember": "save_order_draft", "sub": "phyto_paperwork",
           "resolve": "identify_buyer", "lookup": "phyto_certificates", "summarise": "summarise_certificate",
           "total": "price_order", "preflight": "precheck_order", "submit": "place_mail_order"},
    inputs=[
        {"ref": "MO-6601", "customer": "B-513", "site": "greenhouse-b", "date": "2027-05-10", "count": 3, "party": 14, "budget": 2900.0},
        {"ref": "MO-6602", "customer": "B-501", "site": "greenhouse-a", "date": "2027-05-11", "count": 2, "party": 12, "budget": 1600.0},
        {"ref": "MO-6603", "customer": "B-524", "site": "greenhouse-c", "date": "2027-05-12", "count": 3, "party": 17, "budget": 3900.0},
        {"ref": "MO-6604", "customer": "B-532", "site": "greenhouse-b", "date": "2027-05-13", "count": 2, "party": 20, "budget": 2800.0},
        {"ref": "MO-6605", "customer": "B-513", "site": "greenhouse-a", "date": "2027-05-14", "count": 3, "party": 11, "budget": 2300.0},
    ],
    cases=[
        Case("z11_bon_date", "format_drift", "plan",
             "The planning model starts writing the ship date day-first, which the stock sheet reads month-first, so the order is priced on another day's sheet.",
             root_kind="llm", hops=9),
        Case("z12_bon_page", "truncated_result", "fetch",
             "The stock sheet tool returns only the first three lines, so too few trees pass grading and the order comes up one tree short.",
             root_kind="tool", hops=6),
        Case("z13_bon_yamadori", "wrong_routing", "check_item",
             "Grading the fifth stock line sends an imported yamadori that needs special handling to the standard queue, so it is picked and ordered.",
             root_kind="other", item=4, hops=4),
        Case("z14_bon_recent", "context_pollution", "select",
             "The tree-picking model copies a tree id from the buyer's previous order shown in its prompt, and that tree is not on this day's sheet.",
             root_kind="llm", hops=4),
        Case("z15_bon_sum", "off_by_one", "total",
             "The pricing loop stops one tree early, so the order total leaves out the last tree.",
             root_kind="other", hops=1),
    ],
)


def policy(A: Agent):
    return chat_policy(A)


def record(A: Agent, inp: dict, path: str, base_url: str) -> str:
    return run_langgraph(A, inp, path, base_url)
