"""A midwifery team's home visits (openai_agents route): for each postnatal home visit on the day's list the
model reads the round-trip mileage from the visit note, the tools price the mileage from the rate table, a
sub-agent checks a flagged visit's access notes, then the day's claim is totalled and routed against the
team's mileage allowance."""
from core import Agent

V = dict(ref_prefix="MW", task="close the home visit day", check_noun="access notes check",
         request="read_visit_list", catalog="fetch_mileage_rates", cap="store_mileage_allowance",
         plan="plan_visit_round", parse_plan="set_visit_round", lookup="match_mileage_rate",
         estimate="read_round_trip_miles", parse_est="parse_miles", tool="mileage_calculator",
         convert="convert_pence_to_pounds", record="log_visit_claim", sub="access_notes_check",
         sub_llm="resolve_visit", sub_tool="fetch_access_notes", sub_sum="summarise_access_notes",
         sub_parse="file_access_check", total="total_mileage_claim", route="choose_claim_route",
         note="write_day_summary", parse_note="file_day_summary", validate="validate_visit_day", flaky=1)

CASES = [
    dict(id="zzy_midwifery_1", kind="stale_data", point="catalogue", mutation="cached_copy",
         description="The mileage rate table comes from a copy cached two weeks before the visit day, dated so."),
    dict(id="zzy_midwifery_2", kind="tool_ignores_argument", point="quote", index=2, mutation="ignores_qty",
         description="The mileage calculator ignores the miles argument for the last visit and prices a single mile."),
    dict(id="zzy_midwifery_3", kind="wrong_tool_args", point="estimate", index=2, mutation="neighbour_id",
         description="Reading the last visit's mileage, the model passes the next visit's id to the calculator."),
    dict(id="zzy_midwifery_4", kind="wrong_retrieval", point="catalogue", index=2, mutation="neighbour_record",
         description="The rate table search files another visit's rate record under the third visit's name."),
    dict(id="zzy_midwifery_5", kind="truncated_result", point="catalogue", mutation="page_limit",
         description="The rate table comes back one page short, missing the last visit's record, and matching falls back to a zero rate."),
]

AGENT = Agent(name="midwifery-home-visits", route="openai_agents", domain="a midwifery team's home visits",
              module=__name__, v=V, unit="visit", qty_unit="miles", currency="GBP", factor=0.01, band=(0.30, 0.60),
              seed=83, items=3,
              names=["Visit Ashby Close", "Visit Brook Lane", "Visit Castle Row", "Visit Dene Court",
                     "Visit Elm Terrace", "Visit Fold Yard", "Visit Green Walk", "Visit Holme Rise",
                     "Visit Ings Road", "Visit Kirk Gate"],
              cases=CASES, approval="manager_review", standard="submit_claim", cap_noun="mileage_allowance",
              qty_ranges=((3, 40),))
