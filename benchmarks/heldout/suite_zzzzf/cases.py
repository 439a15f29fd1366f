"""The 40 cases of suite_zzzzf: which input, which switch, what kind of fault, where it starts and where it shows.

`root` and `failure` are (step name, occurrence among the steps of that name in start order).
"""

from __future__ import annotations

KINDS = (
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
)

CASES: list[dict] = [
    # balloon-dispatch (sdk)
    {"id": "balloon_1", "agent": "balloon", "input": 0, "switch": "manifest_units", "kind": "unit_error",
     "root": ("parse_manifest", 1), "failure": ("check_payload", 2),
     "description": "The manifest parser reads the two guests' pound weights (231 lb, 152 lb) as kilograms, so G-CVXA's payload check finds 753 kg against a 701 kg limit."},
    {"id": "balloon_2", "agent": "balloon", "input": 1, "switch": "access_route", "kind": "wrong_routing",
     "root": ("route_passenger", 3), "failure": ("final_check", 1),
     "description": "The access router only looks for 'wheelchair', so Olu Adeyemi (no ladder: knee brace) is routed to a standard basket and seated in G-BEKO, which has no door; the final check refuses the dispatch."},
    {"id": "balloon_3", "agent": "balloon", "input": 2, "switch": "landing_pick", "kind": "hallucinated_value",
     "root": ("choose_landing", 1), "failure": ("notify_landowner", 1),
     "description": "The model notifies the landowner of Orchard Piece under agreement LA-5102, an id it made up from the retrieved LA-5120, and the landowner line has no such agreement."},
    {"id": "balloon_4", "agent": "balloon", "input": 3, "switch": "seat_fill", "kind": "off_by_one",
     "root": ("seat_passengers", 1), "failure": ("final_check", 1),
     "description": "The seating loop stops filling a basket one passenger past its capacity, so G-FLIX gets 7 passengers for 6 places and the final check refuses the dispatch."},
    {"id": "balloon_5", "agent": "balloon", "input": 4, "switch": "loads_memory", "kind": "bad_memory_write",
     "root": ("record_loads", 1), "failure": ("send_chase_order", 2),
     "description": "The loads written to run memory pair the sorted registrations with counts in fleet order, so G-FENM is remembered with 6 passengers, gets the 6-seat van, and chase dispatch refuses it for 7."},
]
CASES += [
    # escape-room-evening (sdk)
    {"id": "escape_1", "agent": "escape", "input": 0, "switch": "notes_scope", "kind": "context_pollution",
     "root": ("recall_gm_notes", 1), "failure": ("book_gm", 4),
     "description": "The notes recall searches both branches, so a Harbour note (Tomasz Wilk runs The Vault for experienced groups) reaches the Kingsway prompt and the model books Tomasz, who is not on the Kingsway rota."},
    {"id": "escape_2", "agent": "escape", "input": 1, "switch": "page_cap", "kind": "truncated_result",
     "root": ("list_bookings", 1), "failure": ("final_check", 1),
     "description": "The booking system returns only its first page of 4 of the evening's 6 bookings and the agent prepares those alone, so the final check finds ESC-4477 and ESC-4478 without a game master or reset."},
    {"id": "escape_3", "agent": "escape", "input": 2, "switch": "hint_labels", "kind": "format_drift",
     "root": ("choose_hint_packs", 1), "failure": ("load_hint_packs", 1),
     "description": "The model names the hint packs with readable labels ('Sunken Ship (English, easy)') instead of catalogue codes like SHIP-EN-EASY; the parser passes them on and the tablet loader finds no such pack."},
    {"id": "escape_4", "agent": "escape", "input": 3, "switch": "crew_rooms", "kind": "subagent_wrong_entity",
     "root": ("reset_crew", 1), "failure": ("final_check", 1),
     "description": "The reset-crew sub-agent resolves room names across both branches, so Kingsway's Lab 7 becomes Harbour's HB-LAB7; the reset is booked there and the final check finds KW-LAB7 with games and no reset."},
    {"id": "escape_5", "agent": "escape", "input": 4, "switch": "reset_start", "kind": "wrong_tool_args",
     "root": ("plan_reset", 2), "failure": ("final_check", 1),
     "description": "The model calls schedule_reset for Sunken Ship with start 18:00, the time of the room's first game, instead of 17:20, so the reset overlaps game ESC-5112."},
]
CASES += [
    # linen-route (langgraph)
    {"id": "linen_1", "agent": "linen", "input": 0, "switch": "pickup_only_plan", "kind": "plan_error",
     "root": ("ChatOpenAI", 2), "failure": ("confirm_deliveries", 1),
     "description": "The planner model writes a route sheet only for accounts with soiled bags to collect, leaving out Quay Hotel (no pickup today, napkins at 500 of 900), and the customer portal refuses the route."},
    {"id": "linen_2", "agent": "linen", "input": 1, "switch": "window_day", "kind": "tool_ignores_argument",
     "root": ("delivery_window", 2), "failure": ("confirm_deliveries", 1),
     "description": "The delivery-window tool ignores its day argument and answers Pane e Vino's weekday window (07:00-10:30) for a Saturday, so the van is sequenced to arrive at 07:45, before the 10:00 Saturday opening."},
    {"id": "linen_3", "agent": "linen", "input": 2, "switch": "pars_timeout", "kind": "swallowed_error",
     "root": ("load_pars", 1), "failure": ("confirm_deliveries", 1),
     "description": "When the contracts service times out on Marina Bar, the pars node carries on with an empty par list instead of reading the archive copy, so nothing is planned for Marina Bar and its napkins stay at 40 of 400."},
    {"id": "linen_4", "agent": "linen", "input": 3, "switch": "qty_pattern", "kind": "lossy_parsing",
     "root": ("RouteSheetParser", 1), "failure": ("confirm_deliveries", 1),
     "description": "The route-sheet parser's quantity pattern stops at the thousands separator, so 'napkins 1,300' for Platform 9 Diner becomes 1 napkin and the portal finds the diner under par."},
    {"id": "linen_5", "agent": "linen", "input": 4, "switch": "trip_rule", "kind": "wrong_routing",
     "root": ("choose_trips", 1), "failure": ("confirm_deliveries", 1),
     "description": "The trip router adds the clean bags going out to the soiled bags coming back (31 + 35 > 60) instead of taking the larger, sends the route to two trips, and Moorland Tea Rooms lands on the 10:30 second trip, after its window."},
]
CASES += [
    # kennel-checkin (langgraph)
    {"id": "kennel_1", "agent": "kennel", "input": 0, "switch": "ticket_units", "kind": "unit_error",
     "root": ("WeighTicketParser", 1), "failure": ("pharmacy_check", 1),
     "description": "The weigh-ticket parser keeps scale 1's pound reading as kilograms, so Biscuit weighs in at 24.7 kg instead of 11.2 kg and her per-kg Carprofen dose comes out at 49 mg, over the prescribed 25 mg."},
    {"id": "kennel_2", "agent": "kennel", "input": 1, "switch": "household_pick", "kind": "subagent_wrong_entity",
     "root": ("find_dog", 1), "failure": ("book_playgroup", 1),
     "description": "The vaccination clerk sub-graph picks the household dog by name prefix and checks Peppercorn (DOG-5520) instead of Pepper (DOG-5521), clearing Pepper, whose kennel cough vaccination expired on 2025-03-02, for a playgroup."},
    {"id": "kennel_3", "agent": "kennel", "input": 2, "switch": "gabapentin_dose", "kind": "hallucinated_value",
     "root": ("ChatOpenAI", 1), "failure": ("pharmacy_check", 1),
     "description": "The feeding-plan model writes Gabapentin 300 mg for Luna, a dose that is not in her care note (100 mg at 20:00), and the pharmacy check refuses it."},
    {"id": "kennel_4", "agent": "kennel", "input": 3, "switch": "notes_match", "kind": "wrong_retrieval",
     "root": ("CareNotesRetriever", 1), "failure": ("schedule_feeds", 1),
     "description": "The care-notes retriever matches on the dog's name only and returns the Labrador Biscuit's note (salmon & potato kibble) for the Beagle Biscuit, who has a fish allergy; the kitchen refuses the plan."},
    {"id": "kennel_5", "agent": "kennel", "input": 4, "switch": "log_keys", "kind": "bad_memory_write",
     "root": ("log_stay", 1), "failure": ("assign_kennel", 3),
     "description": "The stay log pairs sorted dog ids with kennels worked out in arrival order, so Juno (22.5 kg) is logged to small kennel S-02 and the kennel assignment refuses her."},
]
CASES += [
    # marina-berths (openai_agents)
    {"id": "marina_1", "agent": "marina", "input": 0, "switch": "tide_cache", "kind": "stale_data",
     "root": ("tide_table", 1), "failure": ("assign_slip", 1),
     "description": "The tide tool answers from a cached table issued 2025-07-07 for 8-10 July (lowest low water 0.7 m) instead of the stay's springs (0.3 m), so the search accepts D-01 for Aurora and the harbour system finds 1.8 m there for a 1.9 m draft."},
    {"id": "marina_2", "agent": "marina", "input": 3, "switch": "length_arg", "kind": "wrong_tool_args",
     "root": ("response", 4), "failure": ("assign_slip", 1),
     "description": "The dockmaster model passes Kestrel's beam (4.1 m) as min_length_m in its slip search, is offered 12 m slip B-05, and the harbour system refuses the 12.8 m boat there."},
    {"id": "marina_3", "agent": "marina", "input": 2, "switch": "late_plan", "kind": "plan_error",
     "root": ("response", 1), "failure": ("raise_invoice", 3),
     "description": "The dockmaster's opening plan leaves boats arriving after 20:00 to the waiting pontoon, so Wavedancer (MB-2250, 20:40) never gets a slip and billing's invoice for it is refused."},
    {"id": "marina_4", "agent": "marina", "input": 1, "switch": "eta_style", "kind": "format_drift",
     "root": ("response", 5), "failure": ("raise_invoice", 1),
     "description": "The dockmaster model writes the assignments' arrival times as '5:40 pm' instead of 2025-07-12T17:40; the harbour system stores them as given and billing's invoice with that arrival is refused."},
    {"id": "marina_5", "agent": "marina", "input": 4, "switch": "rate_key", "kind": "swallowed_error",
     "root": ("rate_card", 2), "failure": ("raise_invoice", 2),
     "description": "The rate-card tool looks the catamaran up under 'catamaran' instead of the multihull table, catches the KeyError and answers a rate of 0.0, so Selkie's invoice comes to 0.00 GBP and is refused."},
]
CASES += [
    # bowling-league-night (openai_agents)
    {"id": "bowling_1", "agent": "bowling", "input": 0, "switch": "notes_filter", "kind": "context_pollution",
     "root": ("desk_notes", 1), "failure": ("publish_lane_sheet", 1),
     "description": "The desk-notes tool returns the latest notes of every league, so Tuesday Trios' 'Pin Pals bowl on lanes 23-24' reaches the Thursday Mixed desk, whose own Alley Cats also bowl on 23-24, and the sheet puts two matches on that pair."},
    {"id": "bowling_2", "agent": "bowling", "input": 1, "switch": "roster_page", "kind": "truncated_result",
     "root": ("league_roster", 1), "failure": ("publish_lane_sheet", 1),
     "description": "The roster tool returns only its first page of 3 of the week's 4 matches (total_matches says 4); the desk holds lanes for three and the published sheet misses Spare Parts v Night Owls."},
    {"id": "bowling_3", "agent": "bowling", "input": 2, "switch": "handoff_pick", "kind": "wrong_routing",
     "root": ("generation gpt-4o-mini", 6), "failure": ("open_bracket", 1),
     "description": "The desk model hands the Tuesday Trios league night to the tournament desk instead of league scoring, and the tournament system has no bracket event for a league night."},
    {"id": "bowling_4", "agent": "bowling", "input": 3, "switch": "status_snapshot", "kind": "stale_data",
     "root": ("lane_status", 1), "failure": ("hold_lanes", 1),
     "description": "The lane-status tool answers the 09:00 snapshot, which does not show lane 5 out of order since 16:05, so the desk tries to hold pair 5-6 and lane control refuses."},
    {"id": "bowling_5", "agent": "bowling", "input": 4, "switch": "window_end", "kind": "off_by_one",
     "root": ("average_window", 1), "failure": ("post_handicaps", 1),
     "description": "The averages window ends one week early (weeks 1 to 1 instead of 1 to 2), so the clerk's handicaps come from week 1 alone and the league secretary refuses the first one against the certified average."},
]
CASES += [
    # rink-ice-day (otlp)
    {"id": "rink_1", "agent": "rink", "input": 0, "switch": "export_split", "kind": "lossy_parsing",
     "root": ("parse_export", 1), "failure": ("publish_schedule", 1),
     "description": "The export parser splits lines on every comma and skips rows that do not give five fields, so the quoted group 'Hawks U14, Hawks U16' (RB-1187) drops out and the booking portal finds it missing."},
    {"id": "rink_2", "agent": "rink", "input": 1, "switch": "area_units", "kind": "unit_error",
     "root": ("skater_limit", 1), "failure": ("open_gate", 1),
     "description": "The skater-limit step reads the Studio pad's 6,700 ft2 as square metres, so the limit comes out at 1,914 skaters, the gate cap at 400, and the gate system refuses it against the fire certificate's 180."},
    {"id": "rink_3", "agent": "rink", "input": 2, "switch": "policy_scope", "kind": "wrong_retrieval",
     "root": ("search_ice_policy", 1), "failure": ("publish_schedule", 1),
     "description": "The policy search is not filtered by pad and returns the Studio rule (every 120 minutes) first for the Main pad, so the plan has no resurface after the Hawks U12 hockey session and the portal cites rule MP-4."},
    {"id": "rink_4", "agent": "rink", "input": 3, "switch": "plant_pad", "kind": "tool_ignores_argument",
     "root": ("ice_plant_reading", 1), "failure": ("set_ice_setpoint", 1),
     "description": "The ice-plant reading ignores its pad argument and returns the Main pad's -4.6 C, so the planner sends the Studio pad straight to -5.5 C and the plant refuses a 1.8 C step from its real -3.7 C."},
    {"id": "rink_5", "agent": "rink", "input": 4, "switch": "setpoint_guess", "kind": "hallucinated_value",
     "root": ("ChatCompletion", 1), "failure": ("set_ice_setpoint", 1),
     "description": "The planning model gives -2.8 C as the figure club's setpoint, a value the policy does not hold (figure -3.5 C), and the ice plant refuses it as above the Main pad's -3.0 C ceiling."},
]
CASES += [
    # pool-lane-day (otlp)
    {"id": "pool_1", "agent": "pool", "input": 0, "switch": "gateway_retry", "kind": "swallowed_error",
     "root": ("read_chemistry", 1), "failure": ("open_pool", 1),
     "description": "When the chemistry gateway times out, the chemistry tool catches the TimeoutError and answers an empty list of readings instead of retrying; the water check passes on nothing and the leisure system will not open a pool with no reading logged that day."},
    {"id": "pool_2", "agent": "pool", "input": 1, "switch": "lap_range", "kind": "off_by_one",
     "root": ("lane_check", 1), "failure": ("book_lanes", 1),
     "description": "The block check counts free lanes up to 9 instead of 8, so public lap swim is given lanes 4-9 in the 06:00 block and the booking system has no lane 9."},
    {"id": "pool_3", "agent": "pool", "input": 2, "switch": "procedure_status", "kind": "wrong_retrieval",
     "root": ("search_procedures", 1), "failure": ("publish_rota", 1),
     "description": "The procedure search returns the superseded 2019 ratio (one lifeguard per 6 lanes) ahead of the current 2024 one (per 3 lanes, minimum 2), so each block is planned with 2 lifeguards and the rota check asks for 3."},
    {"id": "pool_4", "agent": "pool", "input": 3, "switch": "entry_reuse", "kind": "bad_memory_write",
     "root": ("save_day_plan", 1), "failure": ("book_lanes", 1),
     "description": "The day plan saved to ops memory reuses one entry for every block, so every block holds the 19:00 allocation (Riverside Tri Club) and the 06:00 booking from memory names a club with no booking then."},
    {"id": "pool_5", "agent": "pool", "input": 4, "switch": "alloc_keys", "kind": "format_drift",
     "root": ("ChatCompletion", 1), "failure": ("book_lanes", 1),
     "description": "The allocation model writes each club's lanes under 'lane_range' instead of 'lanes'; the parser reads no lanes, lap swim takes all eight and the booking system finds Otters SC without its four lanes."},
]
