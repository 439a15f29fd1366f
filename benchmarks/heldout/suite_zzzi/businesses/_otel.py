"""A small helper for the otlp agents: one span per step, input and output as OpenInference attributes."""
import json
from contextlib import contextmanager


def _text(v):
    return v if isinstance(v, str) else json.dumps(v)


@contextmanager
def span(tracer, name, kind, value=None):
    attrs = {"openinference.span.kind": kind}
    if value is not None:
        attrs["input.value"] = _text(value)
        attrs["input.mime_type"] = "text/plain" if isinstance(value, str) else "application/json"
    with tracer.start_as_current_span(name, attributes=attrs) as sp:
        box = {}
        yield box
        if "out" in box:
            sp.set_attribute("output.value", _text(box["out"]))
            sp.set_attribute("output.mime_type", "text/plain" if isinstance(box["out"], str) else "application/json")


def step(tracer, name, kind, value, fn, *args):
    """Run fn(*args) inside a span that records `value` as input and fn's result as output."""
    with span(tracer, name, kind, value) as box:
        box["out"] = fn(*args)
        return box["out"]
