"""Tool results that say they failed: an error payload is an error, even when the call returned normally.

The one check of "did this tool result say it failed?", in the fields the protocols themselves
define (MCP's ``isError``, ``success``, ``ok``, ``status``, an ``error`` with no result), so
it needs no words of any language.  Read by the recorder's writer thread
(`trajdebug.record.tracking`, which records such a result as a ``ToolErrorPayload`` error), by
summary mode (`trajdebug.record.summary`, whose ``error`` feature keeps the fact when the
content is not kept), by the importers (`trajdebug.sources.formats.convert.error_text`) and by
the analysis (`trajdebug.analysis._content.error_text`).  The last two also read a result's
*text* for an error ("Error: user not found"); that reading stays with them, because it takes
words: the importers' one narrow pattern, the analysis's lexicon
(`trajdebug.analysis.lexicon`), which the core must not import and need not own.
"""

from __future__ import annotations

from typing import Any


def error_payload(output: Any) -> str | None:
    """The error message of a tool result that flags itself as an error, else None.

    Recognized: ``{"is_error": true}``, ``{"isError": true}`` (MCP), ``{"success": false|0}``,
    ``{"ok": false}``, ``{"status": "error"|"failed"}`` with an ``error``/``message`` field,
    ``{"error": "..."}`` with no result.
    """
    if not isinstance(output, dict):
        return None
    msg = output.get("error") or output.get("message") or output.get("detail")
    text = msg if isinstance(msg, str) else (str(msg) if msg else "tool reported an error")
    if output.get("is_error") is True or output.get("isError") is True:
        return text
    if "success" in output and output["success"] in (False, 0):
        return text
    if output.get("ok") is False:
        return text
    status = output.get("status")
    if isinstance(status, str) and status.lower() in ("error", "failed", "failure"):
        return text
    if (
        isinstance(output.get("error"), (str, dict))
        and output.get("error")
        and not any(k in output for k in ("result", "results", "data", "rows", "output"))
    ):
        return text
    return None


__all__ = ["error_payload"]
