"""Held-out suite I: eight small agents with planted silent faults, written blind (see README.md)."""
