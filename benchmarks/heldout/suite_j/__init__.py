"""Held-out suite J: eight small agents in eight domains, five planted silent faults each (40 cases)."""
