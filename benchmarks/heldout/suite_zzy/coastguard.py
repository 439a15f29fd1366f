"""A coastguard station's incident log (otlp route): for each incident in the shift log, work out the lifeboat
fuel burned from the boat's fuel table, check a flagged incident's casualty report in a sub-agent, total the
shift's fuel and route the log against the station's fuel allowance."""
from core import Agent

V = dict(ref_prefix="CG", task="close the shift incident log", check_noun="casualty report check",
         request="read_shift_log", catalog="fetch_boat_fuel_table", cap="note_fuel_allowance",
         plan="order_incidents", parse_plan="parse_incident_order", lookup="match_fuel_entry",
         estimate="extract_distance_run", parse_est="parse_distance_nm", tool="fuel_burn_calculator",
         convert="convert_gallons_to_litres", record="log_incident_fuel", sub="casualty_report_check",
         sub_llm="resolve_incident", sub_tool="fetch_casualty_report", sub_sum="summarise_casualty_report",
         sub_parse="parse_casualty_summary", total="total_shift_fuel", route="choose_log_review",
         note="write_shift_summary", parse_note="read_shift_summary", validate="validate_incident_log", flaky=3,
         sub_late=True)

CASES = [
    dict(id="zzy_coastguard_1", kind="stale_data", point="hold", mutation="cached_copy",
         description="The casualty report fetched for the flagged incident is a copy cached two weeks before the shift."),
    dict(id="zzy_coastguard_2", kind="plan_error", point="plan", mutation="drop_one",
         description="The model's ordering of the shift's incidents leaves out the second-largest incident."),
    dict(id="zzy_coastguard_3", kind="context_pollution", point="estimate", index=4, mutation="previous_note",
         description="Extracting the fifth incident's distance, the model takes the figure from the previous incident's note in its history."),
    dict(id="zzy_coastguard_4", kind="tool_ignores_argument", point="quote", index=5, mutation="ignores_qty",
         description="The fuel burn calculator ignores the distance argument for the last incident and returns the burn for one mile."),
    dict(id="zzy_coastguard_5", kind="truncated_result", point="hold", mutation="cut_text",
         description="The casualty report comes back cut at the service's length limit, its check date clipped to year and month."),
]

AGENT = Agent(name="coastguard-incident-log", route="otlp", domain="a coastguard station's incident log",
              module=__name__, v=V, unit="incident", qty_unit="nm", currency="litres", factor=4.546,
              band=(6.0, 20.0), seed=37, items=6,
              names=["Shout Whitby Sands", "Kettleness Cliff", "Runswick Bay", "Sandsend Pier", "Saltwick Nab",
                     "Robin Hoods Bay", "Staithes Harbour", "Ravenscar Ledge", "Upgang Beach", "Boulby Point"],
              cases=CASES, approval="officer_review", standard="file_log", cap_noun="fuel_allowance",
              qty_ranges=((3, 40),))
