"""Held-out suite L: eight small agents in eight domains, five silent faults each (written blind)."""
