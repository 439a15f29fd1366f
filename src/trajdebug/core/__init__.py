"""The ground floor: what every other part of trajdebug stands on.

The model (frozen dataclasses for runs, steps, dependencies, errors), the
record schema and its codec, the own JSON Lines format, values, escaping,
redaction, the plugin loader, chat-message shapes, a run's dependency graph
(``graph``) and the error lifecycle (``lifecycle``: the one state machine the
recorder drives and the analysis replays, and its hindsight analysis).  Nothing here imports
anything above it; the recorder, the readers, the analysis and the report all
import from here (the ``floors`` contract in ``pyproject.toml``).
"""
