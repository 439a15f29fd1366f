"""trajdebug's benchmarks: localization quality on a fault-injection suite and on real
annotated failures, against baselines; recording, analysis and I/O speed, against the
OpenTelemetry SDK.  Run ``python -m benchmarks`` from the repository root.
"""
