"""Case switches: which case of the suite is switched on for the run being recorded.

Each agent reads its switches through `on(case_id)`, each at exactly one place in its code.
"""

_ACTIVE: str | None = None


def set_case(case_id: str | None) -> None:
    global _ACTIVE
    _ACTIVE = case_id


def on(case_id: str) -> bool:
    return _ACTIVE == case_id
