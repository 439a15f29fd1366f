"""The ten agents of the development suite (see ../README.md)."""

AGENT_MODULES = [
    "hotel",
    "restaurant",
    "expense",
    "land_area",
    "invoice",
    "research",
    "inventory",
    "ledger",
    "crm",
    "scheduling",
]
