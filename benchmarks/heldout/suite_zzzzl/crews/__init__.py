"""The eight field-crew agents of suite_zzzzl (transport, public works and utility field crews)."""

AGENT_MODULES = (
    "culvert_desilting",
    "hydrant_flushing",
    "streetlight_outage",
    "tamping_planner",
    "vegetation_clearance",
    "winter_gritting",
    "sewer_entry",
    "cp_survey",
)
