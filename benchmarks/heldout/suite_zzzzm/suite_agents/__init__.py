"""The eight construction-trade agents of suite_zzzzm (one module each)."""

MODULES = (
    "crane_lift",
    "facade_submittal",
    "pour_desk",
    "trench_shoring",
    "hazmat_survey",
    "firestop_register",
    "scaffold_tags",
    "rebar_cutlist",
)
