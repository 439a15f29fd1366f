"""Case switch: which case of the suite is active for the run being recorded (None: every step as intended)."""

ACTIVE = None


def on(case_id: str) -> bool:
    return ACTIVE == case_id
