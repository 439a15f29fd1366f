"""The eight agents of held-out suite ZZZZ (one module each)."""

MODULES = ["bakery", "bikeshop", "florist", "apiary", "kiln", "tailor", "brewery", "landscape"]
