"""A record shop's weekly stock buying (sdk route): price each title on the buying list from the distributor,
check a flagged title's repress status in a sub-agent, total the order and route it for sign-off."""
from core import Agent

V = dict(ref_prefix="PO", task="buy stock for purchase order", check_noun="repress check",
         request="read_buying_list", catalog="search_distributor_catalogue", cap="remember_buying_budget",
         plan="plan_buying_order", parse_plan="parse_buying_plan", lookup="match_catalogue_entry",
         estimate="read_copies_wanted", parse_est="parse_copies", tool="quote_distributor",
         convert="convert_eur_to_gbp", record="record_order_line", sub="repress_check",
         sub_llm="resolve_repress_title", sub_tool="lookup_repress_status", sub_sum="summarise_repress",
         sub_parse="parse_repress_summary", total="total_purchase_order", route="choose_signoff",
         note="draft_order_summary", parse_note="read_back_summary", validate="validate_purchase_order", flaky=1)

CASES = [
    dict(id="zzy_record_shop_1", kind="unit_error", point="total", mutation="minor_units",
         description="The order total adds the lines up in pence while the lines and the budget are in pounds."),
    dict(id="zzy_record_shop_2", kind="bad_memory_write", point="cap", mutation="minor_units", over_cap=True,
         description="The buying budget is written to the run's memory in pence, so the over-budget order is routed as standard."),
    dict(id="zzy_record_shop_3", kind="format_drift", point="note", mutation="currency_first",
         description="The model writes the order summary with the currency before the amount, a layout the order reader does not take."),
    dict(id="zzy_record_shop_4", kind="wrong_retrieval", point="catalogue", index=1, mutation="neighbour_record",
         description="The catalogue search files another title's record under the second title's name, so that line is priced from it."),
    dict(id="zzy_record_shop_5", kind="hallucinated_value", point="estimate", index=4, mutation="invented_qty",
         description="For the last title the model states a number of copies that appears nowhere in the buying list's note."),
]

AGENT = Agent(name="record-shop-buying", route="sdk", domain="a record shop's stock buying", module=__name__, v=V,
              unit="title", qty_unit="copies", currency="GBP", factor=0.86, band=(8.0, 32.0), seed=11,
              names=["Blue Train", "Kind of Blue", "Pet Sounds", "Horses", "Remain in Light", "Marquee Moon",
                     "Unknown Pleasures", "Blue Lines", "Hounds of Love", "Maxinquaye", "Dummy", "Loveless"],
              cases=CASES, approval="owner_signoff", standard="auto_send", cap_noun="budget")
