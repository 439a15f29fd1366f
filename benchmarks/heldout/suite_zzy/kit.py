"""Case switches: which case is switched on for the current recording (None: every step behaves)."""

ACTIVE: str | None = None


def on(case_id: str) -> bool:
    """True when `case_id` is the case being recorded. Each case id is read at exactly one place."""
    return ACTIVE == case_id
