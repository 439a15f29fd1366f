"""The eight agents of suite_zzzzf, one module each (see ../README.md)."""

AGENT_MODULES = (
    "balloon",
    "escape",
    "linen",
    "kennel",
    "marina",
    "bowling",
    "rink",
    "pool",
)
