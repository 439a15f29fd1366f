"""Held-out suite H: eight small agents in new domains, each with planted silent faults (written blind).

`generate.py` records every case (failed run, control, failed run with references, ground truth);
README.md says what the suite holds and how it was written.
"""
