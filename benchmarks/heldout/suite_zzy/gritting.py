"""A winter gritting crew's routes (langgraph route): for tonight's gritting run, work out the salt each road
route needs from the spread-rate table, check a flagged route's road-surface sensor in a sub-graph, total the
salt and route the run against the depot's salt stock."""
from core import Agent

V = dict(ref_prefix="GR", task="plan tonight's gritting run", check_noun="surface sensor check",
         request="read_gritting_call", catalog="fetch_spread_rates", cap="remember_salt_stock",
         plan="order_routes", parse_plan="parse_route_order", lookup="match_spread_rate",
         estimate="extract_route_length", parse_est="parse_length_m", tool="salt_calculator",
         convert="convert_grams_to_kg", record="load_route_sheet", sub="surface_sensor_check",
         sub_llm="resolve_route", sub_tool="read_surface_sensor", sub_sum="summarise_sensor",
         sub_parse="parse_sensor_summary", total="total_salt_needed", route="choose_dispatch",
         note="write_crew_brief", parse_note="read_crew_brief", validate="validate_gritting_run", flaky=2, sub_first=True)

CASES = [
    dict(id="zzy_gritting_1", kind="swallowed_error", point="quote", index=3, mutation="swallow",
         description="The salt calculator times out on the fourth route and hands back zero grams instead of an error."),
    dict(id="zzy_gritting_2", kind="stale_data", point="catalogue", mutation="cached_copy",
         description="The spread-rate table is served from a copy cached two weeks before tonight's call."),
    dict(id="zzy_gritting_3", kind="plan_error", point="plan", mutation="drop_one",
         description="The model's route order for the night leaves out the second-longest route."),
    dict(id="zzy_gritting_4", kind="wrong_routing", point="route", mutation="flip", over_cap=True,
         description="The dispatch choice compares the salt needed with the stock plus a 30 percent margin, so an over-stock run is dispatched unchecked."),
    dict(id="zzy_gritting_5", kind="lossy_parsing", point="parse_estimate", index=3, mutation="first_group", big_qty=True,
         description="The length parser reads the last route's '4,350 m' as 4 m, dropping everything after the thousands separator."),
]

AGENT = Agent(name="gritting-crew-routes", route="langgraph", domain="a winter gritting crew's routes",
              module=__name__, v=V, unit="route", qty_unit="m", currency="kg", factor=0.001, band=(0.08, 0.3),
              seed=53, items=4, names=["A59 Harrogate Rd", "B6265 Pateley", "A61 Ripon Bypass", "Otley Chevin",
                              "Blubberhouses Moor", "A658 Pool Bank", "Greenhow Hill", "Kex Gill Pass",
                              "Menwith Hill Rd", "Norwood Edge"],
              cases=CASES, approval="supervisor_release", standard="dispatch_now", cap_noun="salt_stock",
              qty_ranges=((1100, 9800),))
