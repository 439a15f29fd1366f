"""Case switches: which case is switched on for the run being recorded.

Each agent reads each of its switches at exactly one place, with ``kit.on("<case id>")``.
``ACTIVE`` is None for control and reference runs.
"""

ACTIVE = None


def set_active(case_id):
    global ACTIVE
    ACTIVE = case_id


HOOK = None


def on(case_id):
    hit = ACTIVE == case_id
    if hit and HOOK is not None:
        HOOK()
    return hit
