"""Which case is switched on for the run being recorded (None: every agent behaves as designed).

Each agent reads `kit.on(case_id)` at exactly one place per case."""

ACTIVE: str | None = None


def on(case_id: str) -> bool:
    return ACTIVE == case_id
