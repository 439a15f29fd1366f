"""A picture framer's orders (openai_agents route): for each frame in the day's orders the model reads the
moulding length from the customer's note, the tools price the moulding, a sub-agent checks a flagged frame's
glass stock, then the batch is totalled and routed against the customer deposit limit."""
from core import Agent

V = dict(ref_prefix="PF", task="price the framing orders", check_noun="glass stock check",
         request="read_order_batch", catalog="fetch_moulding_prices", cap="remember_deposit_limit",
         plan="plan_cutting", parse_plan="set_cutting_order", lookup="match_moulding",
         estimate="read_moulding_length", parse_est="parse_length_mm", tool="price_moulding",
         convert="convert_pence_to_gbp", record="record_frame_line", sub="glass_stock_check",
         sub_llm="resolve_frame", sub_tool="fetch_glass_stock", sub_sum="summarise_glass",
         sub_parse="file_glass_check", total="total_order_batch", route="choose_payment_route",
         note="write_batch_summary", parse_note="file_batch_summary", validate="validate_framing_batch", flaky=1)

CASES = [
    dict(id="zzy_framer_1", kind="swallowed_error", point="quote", index=2, mutation="swallow",
         description="Pricing the third frame's moulding times out inside the tool, which returns a zero price as if priced."),
    dict(id="zzy_framer_2", kind="plan_error", point="plan", mutation="drop_one",
         description="The model's cutting order for the batch leaves out the second-longest frame."),
    dict(id="zzy_framer_3", kind="wrong_routing", point="route", mutation="flip", over_cap=True,
         description="The payment route compares the batch total with the deposit limit plus 30 percent, so an over-limit batch takes the standard route."),
    dict(id="zzy_framer_4", kind="lossy_parsing", point="parse_estimate", index=2, mutation="first_group", big_qty=True,
         description="The length parser reads the last frame's '2,140' mm as 2 mm, keeping only the digits before the separator."),
    dict(id="zzy_framer_5", kind="context_pollution", point="estimate", index=2, mutation="previous_note",
         description="Reading the last frame's moulding length, the model takes the figure of the previous frame's note."),
]

AGENT = Agent(name="framer-orders", route="openai_agents", domain="a picture framer's orders", module=__name__, v=V,
              unit="frame", qty_unit="mm", currency="GBP", factor=0.01, band=(0.01, 0.05), seed=79, items=3,
              names=["Oak float frame", "Walnut box frame", "Gilt swept frame", "Black slim frame", "Ash tray frame",
                     "Maple mount frame", "Silver leaf frame", "Cherry deep frame", "White gallery frame"],
              cases=CASES, approval="deposit_first", standard="pay_on_collection", cap_noun="deposit_limit",
              qty_ranges=((1100, 4800),))
