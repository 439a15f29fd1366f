"""Case switches: which case of the suite is active for the run being recorded.

Each agent reads one switch at exactly one place (``kit.on("<case>")``); with no case active every agent
behaves as it does in production.
"""

ACTIVE: str | None = None


def activate(case: str | None) -> None:
    global ACTIVE
    ACTIVE = case


def on(case: str) -> bool:
    return ACTIVE == case
