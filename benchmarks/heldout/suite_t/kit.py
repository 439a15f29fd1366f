"""Switches for the suite's planted conditions: one switch per case."""
from contextlib import contextmanager


_ON: set = set()


@contextmanager
def planted(fid):
    _ON.add(fid)
    try:
        yield
    finally:
        _ON.discard(fid)


def active(fid):
    return fid in _ON
