"""Content inference: the data dependencies a run's recording could not see.

Identity tracking at record time misses values that were serialized into text
(f-strings, prompt templates, ``json.dumps``), numbers parsed back out of text,
and every flow in an imported trace.  Inference matches the content of earlier
outputs inside later inputs and adds ``inferred`` edges with a confidence
(value fingerprints, k-gram shingles; see `infer_dependencies`).
"""

from __future__ import annotations

from trajdebug.analysis.inference._control import (
    CARRIED_KEY,
    CHANGED_KEY,
    CHOSE_KEY,
    RETRIED_KEY,
    WROTE_KEY,
    carried_edges,
    carried_keys,
    carried_map,
    control_edges,
    env_edges,
    mutation_edges,
    retry_edges,
    world_readers,
)
from trajdebug.analysis.inference._edges import (
    ITEM_KEY,
    answer_edges,
    entry_edges,
    item_edges,
    structural_edges,
    thin_inferred,
    with_context,
)
from trajdebug.analysis.inference._infer import ContentIndex, Match, infer_dependencies, previous_turns
from trajdebug.analysis.inference._named import NAMED_KEY, UNRECORDED_KEY, named_edges


__all__ = [
    "CARRIED_KEY",
    "CHANGED_KEY",
    "CHOSE_KEY",
    "ITEM_KEY",
    "RETRIED_KEY",
    "NAMED_KEY",
    "UNRECORDED_KEY",
    "WROTE_KEY",
    "ContentIndex",
    "Match",
    "answer_edges",
    "carried_edges",
    "carried_keys",
    "carried_map",
    "control_edges",
    "entry_edges",
    "env_edges",
    "infer_dependencies",
    "item_edges",
    "mutation_edges",
    "named_edges",
    "previous_turns",
    "retry_edges",
    "structural_edges",
    "thin_inferred",
    "with_context",
    "world_readers",
]
