"""The record schema: every record type and its fields, built and read in one place.

A run is stored as a stream of records (see ``docs/format.md``), each a JSON
object with ``"v"`` (the format version) and ``"t"`` (the record type):

``run``    the run started (id, name, start time, metadata, the run it continues)
``step``   a step finished (all of its fields; written when it ends)
``open``   a step started (id, name, kind, parent, start): lets a crashed run show what was in flight
``error``  an error occurred (id, step, type, message, cause)
``stage``  an error changed lifecycle stage
``dep``    a dependency found after its step was written
``meta``   metadata known only during the run
``end``    the run ended (outcome, reason, and what the recorder lost or redacted)
``mark``   a person's verdict after the fact (outcome, reason): overrides the recorded outcome
``answer`` a judgement of one step's output (correct, wrong, don't know), who gave it, when, why
``score``  a named number, category or boolean put on a run or a step, where from, who, why, when

Everything that writes records builds them here (the recorder's writer
thread, `run_to_records` for the store, the JSONL writer, imports and
integrations); everything that reads them decodes them here (the JSONL reader
and the store, through `trajdebug.core.jsonl.RunBuilder`); the JSON reporter's
full form of a step (`step_to_dict`) and the OTLP exporter start from the
same fields.

Reading is tolerant field by field: a field of the wrong type or an unknown
value is replaced by its documented default and reported as a problem (a
one-line message naming the field), so a step or a run is never dropped for
one field.  A step kind outside the built-ins (``embedding``, ``chain``,
``reranker``) reads as ``other``, with the kind as recorded kept in the
``recorded_kind`` attribute; a built-in kind in another case (``LLM``) reads
as the built-in.
"""

from __future__ import annotations

from trajdebug.core.schema._decode import (
    Problems,
    choice_field,
    decode_answer,
    decode_dep,
    decode_deps,
    decode_error,
    decode_error_info,
    decode_outcome,
    decode_stage,
    decode_step,
    dedupe,
    dep_from_dict,
    int_field,
    latest_answers,
    mapping_field,
    str_field,
    text_field,
    version_of,
)
from trajdebug.core.schema._records import (
    FORMAT_VERSION,
    KIND_ATTRIBUTE,
    MARK_KEY,
    RECORD_TYPES,
    RECORDER_KEY,
    STATUS_ATTRIBUTE,
    SUPPORTED_VERSIONS,
    KindWarning,
    answer_record,
    answer_to_dict,
    check_kind,
    close_kinds,
    dep_to_dict,
    end_record,
    error_info_to_dict,
    error_record,
    mark_record,
    meta_record,
    open_record,
    plain_step_record,
    read_kind,
    run_record,
    stage_record,
    step_record,
    step_to_record,
)
from trajdebug.core.schema._runs import (
    ID_FIELDS,
    error_to_dict,
    lost_in,
    lost_records,
    redact_record,
    redact_run,
    run_to_dict,
    run_to_lines,
    run_to_records,
    step_to_dict,
)
from trajdebug.core.schema._scores import (
    decode_score,
    make_score,
    numeric,
    parse_value,
    score_record,
    score_text,
    score_to_dict,
)


__all__ = [
    "ID_FIELDS",
    "redact_record",
    "run_to_lines",
    "choice_field",
    "FORMAT_VERSION",
    "KIND_ATTRIBUTE",
    "MARK_KEY",
    "RECORDER_KEY",
    "RECORD_TYPES",
    "STATUS_ATTRIBUTE",
    "SUPPORTED_VERSIONS",
    "answer_record",
    "answer_to_dict",
    "decode_answer",
    "decode_score",
    "make_score",
    "parse_value",
    "score_record",
    "numeric",
    "score_text",
    "score_to_dict",
    "latest_answers",
    "KindWarning",
    "Problems",
    "check_kind",
    "close_kinds",
    "decode_dep",
    "decode_deps",
    "decode_error",
    "decode_error_info",
    "decode_outcome",
    "decode_stage",
    "decode_step",
    "dedupe",
    "dep_from_dict",
    "dep_to_dict",
    "end_record",
    "error_info_to_dict",
    "error_record",
    "error_to_dict",
    "int_field",
    "lost_in",
    "lost_records",
    "mark_record",
    "mapping_field",
    "meta_record",
    "open_record",
    "plain_step_record",
    "read_kind",
    "redact_run",
    "run_record",
    "run_to_dict",
    "run_to_records",
    "stage_record",
    "step_record",
    "step_to_dict",
    "step_to_record",
    "str_field",
    "text_field",
    "version_of",
]
