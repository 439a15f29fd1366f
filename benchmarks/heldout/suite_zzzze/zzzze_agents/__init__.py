"""The eight agents of held-out suite zzzze (one module each, plus `common`)."""

MODULES = ("ringing", "glacier", "dendro", "herbarium", "avalanche", "telescope", "seismic", "buoy")
