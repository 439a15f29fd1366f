"""Where runs come from: the store, the own JSON Lines files and foreign traces.

`trajdebug.sources.load` opens any SOURCE (`load_runs`); `trajdebug.sources.formats`
reads and writes the foreign formats (OpenTelemetry/OpenInference, message
logs, transcripts) and converts them.  The own format's records live on the
ground floor (`trajdebug.core.jsonl`), because the recorder and the store write
them too.  This module imports nothing, so reading one format does not pull in
the store.
"""
