"""Case switches: which case of the suite is switched on for the run being recorded.

generate.py sets ACTIVE to a case id before a failed recording and to None for the control and
reference recordings. Each agent reads each of its case ids at exactly one place.
"""

ACTIVE = None


def on(case_id: str) -> bool:
    return ACTIVE == case_id
