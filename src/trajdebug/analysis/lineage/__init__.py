"""Value lineage: where each value of a run came from, and the steps that damaged or lost one.

`Lineage` indexes every step's input and output values (`StepView`) once per
run; `Lineage.origin` follows a value to the step that introduced it,
`Lineage.droppers` finds the steps that were given a value and did not pass it
on, `Lineage.value_edges` links steps through the values they share, and
`anomalies` reads the transformations that look wrong on their face, and
`slips` finds the one numeric slip that turns a run's number into the one a
failure expected.
"""

from __future__ import annotations

from trajdebug.analysis.lineage._anomalies import GENERIC_FIELDS, PROTOCOL_FIELDS, anomalies, power_of_ten
from trajdebug.analysis.lineage._derivation import run_units
from trajdebug.analysis.lineage._picks import (
    ANSWER_KEY,
    PICKED_KEY,
    Cursor,
    answered_edges,
    counted_loops,
    picked_edges,
    queue_keys,
)
from trajdebug.analysis.lineage._reads import PARTIAL_FORMATS, state_keys, update_index
from trajdebug.analysis.lineage._records import record_lists
from trajdebug.analysis.lineage._totals import (
    COUNT_KEY,
    TOTAL_KEY,
    count_edges,
    counted_collection,
    counted_items,
    items_totalled,
    one_item_short,
    total_edges,
)
from trajdebug.analysis.lineage._trace import (
    MAX_PRODUCERS,
    Derivation,
    Lineage,
    Origin,
    derivation,
    failure_atoms,
    fits_formula,
    formulas,
    operands,
)
from trajdebug.analysis.lineage._views import (
    ENVELOPE_KEYS,
    StepView,
    build_view,
    holds_empty,
    holds_untraced,
    message_atoms,
    semantic,
    trivial,
)
from trajdebug.analysis.lineage._whatif import Slip, slips


__all__ = [
    "Cursor",
    "queue_keys",
    "holds_empty",
    "holds_untraced",
    "ENVELOPE_KEYS",
    "PARTIAL_FORMATS",
    "GENERIC_FIELDS",
    "PROTOCOL_FIELDS",
    "MAX_PRODUCERS",
    "PICKED_KEY",
    "TOTAL_KEY",
    "Derivation",
    "Lineage",
    "Origin",
    "Slip",
    "StepView",
    "anomalies",
    "record_lists",
    "run_units",
    "state_keys",
    "update_index",
    "build_view",
    "derivation",
    "failure_atoms",
    "message_atoms",
    "fits_formula",
    "formulas",
    "one_item_short",
    "operands",
    "power_of_ten",
    "picked_edges",
    "answered_edges",
    "ANSWER_KEY",
    "semantic",
    "slips",
    "total_edges",
    "count_edges",
    "counted_loops",
    "counted_collection",
    "counted_items",
    "items_totalled",
    "COUNT_KEY",
    "trivial",
]
