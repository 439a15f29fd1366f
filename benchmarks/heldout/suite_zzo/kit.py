"""Case switches: which case is active. Each agent reads its switches at one place each."""

ACTIVE: str | None = None


def set_case(case_id: str | None) -> None:
    global ACTIVE
    ACTIVE = case_id


def on(case_id: str) -> bool:
    return ACTIVE == case_id
