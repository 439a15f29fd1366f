"""A maltings' barley batches (langgraph route): for each barley batch in the week's kilning schedule, work
out the kiln energy from the kiln table, check a flagged batch's germination test in a sub-graph, total the
energy and route the schedule against the site's energy budget."""
from core import Agent

V = dict(ref_prefix="MB", task="schedule the kilning week", check_noun="germination check",
         request="read_kiln_schedule", catalog="fetch_kiln_table", cap="store_energy_budget",
         plan="sequence_batches", parse_plan="parse_batch_sequence", lookup="match_kiln_entry",
         estimate="extract_batch_tonnage", parse_est="parse_tonnes", tool="kiln_energy_model",
         convert="convert_mj_to_kwh", record="post_batch_line", sub="germination_check",
         sub_llm="resolve_batch", sub_tool="fetch_germination_test", sub_sum="summarise_germination",
         sub_parse="parse_germination_summary", total="total_kiln_energy", route="choose_schedule_signoff",
         note="write_schedule_note", parse_note="read_schedule_note", validate="validate_kiln_schedule",
         flaky=0, sub_first=True)

CASES = [
    dict(id="zzy_maltings_1", kind="context_pollution", point="estimate", index=3, mutation="previous_note",
         description="Extracting the last batch's tonnage, the model repeats the previous batch's figure from its history."),
    dict(id="zzy_maltings_2", kind="tool_ignores_argument", point="quote", index=3, mutation="ignores_qty",
         description="The kiln energy model ignores the tonnage argument for the last batch and returns the energy for one tonne."),
    dict(id="zzy_maltings_3", kind="wrong_tool_args", point="estimate", index=3, mutation="neighbour_id",
         description="The model extracting the last batch's tonnage names the next batch's id, so the energy is modelled for that batch."),
    dict(id="zzy_maltings_4", kind="bad_memory_write", point="cap", mutation="minor_units", over_cap=True,
         description="The energy budget is written to the graph state a hundred times too large, so the over-budget week skips sign-off."),
    dict(id="zzy_maltings_5", kind="format_drift", point="note", mutation="currency_first",
         description="The model writes the schedule note with the unit before the energy figure, a layout the note reader does not take."),
]

AGENT = Agent(name="maltings-barley-batches", route="langgraph", domain="a maltings' barley batches",
              module=__name__, v=V, unit="batch", qty_unit="tonnes", currency="kWh", factor=0.2778,
              band=(700.0, 1200.0), seed=67, items=4,
              names=["Concerto Lot", "Laureate Lot", "Diablo Lot", "Planet Lot", "Propino Lot", "Maris Otter Lot",
                     "Golden Promise Lot", "Optic Lot", "Chariot Lot", "Tipple Lot"],
              cases=CASES, approval="site_manager_signoff", standard="release_to_kilns", cap_noun="energy_budget",
              qty_ranges=((3, 40),))
