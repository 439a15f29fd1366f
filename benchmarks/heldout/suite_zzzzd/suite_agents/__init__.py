"""The eight agents of held-out suite zzzzd (one module each; see ../README.md)."""

MODULES = (
    "radiocarbon_lab",
    "glacier_survey",
    "ringing_station",
    "harbour_pilot",
    "seismic_review",
    "avalanche_bulletin",
    "telescope_night",
    "bridge_inspection",
)
