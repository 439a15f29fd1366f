"""A blood bank's donor sessions (sdk route): cost the collection kits for each session on next week's plan,
check a flagged venue's deferral list in a sub-agent, total the plan and route it against the kit allowance."""
from core import Agent

V = dict(ref_prefix="DS", task="plan donor sessions", check_noun="venue deferral check",
         request="read_session_plan", catalog="fetch_kit_price_list", cap="store_kit_allowance",
         plan="order_sessions", parse_plan="parse_session_order", lookup="find_kit_entry",
         estimate="read_collection_target", parse_est="parse_target_ml", tool="price_collection_kits",
         convert="convert_litre_price_to_ml", record="book_session_line", sub="deferral_check",
         sub_llm="resolve_venue", sub_tool="fetch_deferral_list", sub_sum="summarise_deferrals",
         sub_parse="parse_deferral_summary", total="total_kit_cost", route="choose_approval_path",
         note="write_plan_summary", parse_note="read_plan_summary", validate="validate_session_plan",
         flaky=2, sub_late=True)

CASES = [
    dict(id="zzy_blood_bank_1", kind="swallowed_error", point="quote", index=4, mutation="swallow",
         description="Pricing the kits for the last session times out inside the tool, which returns a zero cost as if priced."),
    dict(id="zzy_blood_bank_2", kind="off_by_one", point="parse_estimate", index=4, mutation="inclusive",
         description="The target parser adds one to the last session's collection target as if counting an inclusive range."),
    dict(id="zzy_blood_bank_3", kind="subagent_wrong_entity", point="resolve", mutation="similar_name",
         description="The deferral sub-agent resolves the flagged venue to another session's venue and checks that one."),
    dict(id="zzy_blood_bank_4", kind="wrong_routing", point="route", mutation="flip", over_cap=True,
         description="The approval path is chosen against the allowance plus a 30 percent margin, so an over-allowance plan goes unapproved."),
    dict(id="zzy_blood_bank_5", kind="lossy_parsing", point="parse_estimate", index=4, mutation="first_group", big_qty=True,
         description="The target parser reads the last session's '1,850 ml' as 1 ml, keeping only the digits before the thousands separator."),
]

AGENT = Agent(name="blood-bank-sessions", route="sdk", domain="a blood bank's donor sessions", module=__name__, v=V,
              unit="session", qty_unit="ml", currency="GBP", factor=0.001, band=(0.03, 0.09), seed=23,
              names=["Leeds Town Hall", "Headingley Church", "Otley Civic", "Pudsey Library", "Morley Baths",
                     "Roundhay Scouts", "Garforth Academy", "Wetherby Hall", "Horsforth Club", "Rothwell Centre"],
              cases=CASES, approval="regional_approval", standard="local_signoff", cap_noun="allowance",
              qty_ranges=((1100, 4800),))
