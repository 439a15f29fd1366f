"""Which case is switched on. Each switch is read at exactly one place in an agent."""

ACTIVE: str | None = None


def plant(case_id: str | None) -> None:
    global ACTIVE
    ACTIVE = case_id


def on(case_id: str) -> bool:
    return ACTIVE == case_id
