"""Case switch: which case is on for the run being recorded (None: every step behaves)."""

ACTIVE = None


def select(case_id):
    global ACTIVE
    ACTIVE = case_id


def on(case_id):
    return ACTIVE == case_id
