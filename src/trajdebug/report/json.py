"""Runs as JSON data (for ``--json`` and the JSON report).

The shapes are the record schema's full forms (`trajdebug.core.schema`): one
definition of a step's fields for the writer, the reader, this reporter and
the exporter.
"""

from __future__ import annotations

from trajdebug.core.schema import error_to_dict, run_to_dict, step_to_dict


__all__ = ["error_to_dict", "run_to_dict", "step_to_dict"]
