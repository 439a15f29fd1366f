"""Model, tokens and cost of LLM steps and runs.

Every source states an LLM call's envelope in its own words; `trajdebug.core.chat`
brings them to ``llm.*`` attributes (``llm.model``, ``llm.usage.prompt_tokens``,
``llm.usage.completion_tokens``, ``llm.usage.total_tokens`` and, when the source
states it, ``llm.usage.cost``).  This module reads them back as a `Usage`:

- from the step's attributes (recorded with ``s.usage(...)``, or set by an
  importer or integration from OpenInference ``llm.token_count.*``, GenAI
  ``gen_ai.usage.*``, LangChain ``llm_output`` or the Agents SDK's usage);
- else from the step's output when it is a provider response (an OpenAI-style
  ``usage`` block returned by a recorded ``kind="llm"`` step).

A cost the source states is kept as it is; otherwise it is priced from the
model's entry in a price table (`Prices`): the packaged ``data/prices.toml``,
overridden entry by entry by the file named in ``$TRAJDEBUG_PRICES`` (TOML or
JSON, same layout).  A model with no entry has tokens and no cost.
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from trajdebug.core.chat import normalize_llm_step
from trajdebug.core.model import Run, Step


PRICES_ENV = "TRAJDEBUG_PRICES"
"""The environment variable naming a price file that overrides the packaged entries."""

_KEYS = ("llm.usage.prompt_tokens", "llm.usage.completion_tokens", "llm.usage.total_tokens", "llm.usage.cost")


@dataclass(frozen=True, slots=True)
class Price:
    """A model's price in US dollars per million tokens."""

    input: float
    output: float


@dataclass(frozen=True, slots=True)
class Prices:
    """A price table: model name to `Price` (matched exactly or by its longest dated prefix)."""

    models: Mapping[str, Price] = field(default_factory=dict)

    def lookup(self, model: str | None) -> Price | None:
        """The price of ``model``: its exact entry, else the longest entry it extends with ``-``, ``:`` or ``@``."""
        if not model:
            return None
        name = model.strip().lower()
        for candidate in (name, name.rsplit("/", 1)[-1]):
            if candidate in self.models:
                return self.models[candidate]
            best = ""
            for key in self.models:
                if len(key) > len(best) and candidate.startswith(key) and candidate[len(key)] in "-:@":
                    best = key
            if best:
                return self.models[best]
        return None

    def cost(self, model: str | None, prompt: int | None, completion: int | None) -> float | None:
        """The cost of a call, or None when the model has no price or no tokens are known."""
        price = self.lookup(model)
        if price is None or (prompt is None and completion is None):
            return None
        return ((prompt or 0) * price.input + (completion or 0) * price.output) / 1_000_000

    def merged(self, other: Prices) -> Prices:
        """This table with ``other``'s entries replacing its own."""
        return Prices({**self.models, **other.models})


def _parse_prices(data: Mapping[str, Any]) -> Prices:
    table = data.get("models", data)
    out: dict[str, Price] = {}
    if not isinstance(table, Mapping):
        raise ValueError("a price file maps model names to {input = ..., output = ...}")
    for name, entry in table.items():
        if not isinstance(entry, Mapping):
            raise ValueError(f"price of {name!r}: expected a table with input and output")
        try:
            out[str(name).lower()] = Price(float(entry.get("input", 0.0)), float(entry.get("output", 0.0)))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"price of {name!r}: {exc}") from None
    return Prices(out)


def load_prices(path: str | Path) -> Prices:
    """Read a price file (``.json``, else TOML): ``[models."name"] input = 2.5, output = 10.0`` per million tokens."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    data = json.loads(text) if p.suffix.lower() == ".json" else tomllib.loads(text)
    return _parse_prices(data)


# The packaged table, read once; a user's file, read again when its path or mtime changes.
_CACHE: dict[Any, Prices] = {}


def default_prices() -> Prices:
    """The packaged table, with the entries of ``$TRAJDEBUG_PRICES`` (when set) replacing its own."""
    base = _CACHE.get("packaged")
    if base is None:
        text = resources.files("trajdebug").joinpath("data/prices.toml").read_text(encoding="utf-8")
        base = _CACHE["packaged"] = _parse_prices(tomllib.loads(text))
    user = os.environ.get(PRICES_ENV)
    if not user:
        return base
    key = (user, Path(user).stat().st_mtime_ns)
    if key not in _CACHE:
        _CACHE[key] = base.merged(load_prices(user))
    return _CACHE[key]


@dataclass(frozen=True, slots=True)
class Usage:
    """Model, tokens and cost of one LLM call or the sum over several (``calls``)."""

    models: tuple[str, ...] = ()
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cost: float | None = None
    calls: int = 0

    @property
    def model(self) -> str | None:
        """The model, or the models joined with ", " when the calls used several."""
        return ", ".join(self.models) or None

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            tuple(dict.fromkeys((*self.models, *other.models))),
            _plus(self.prompt_tokens, other.prompt_tokens),
            _plus(self.completion_tokens, other.completion_tokens),
            _plus(self.total_tokens, other.total_tokens),
            _plus(self.cost, other.cost),
            self.calls + other.calls,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON data: model, tokens, cost (None where unknown), calls."""
        return {
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "cost": None if self.cost is None else round(self.cost, 8),
            "calls": self.calls,
        }


def _plus(a: Any, b: Any) -> Any:
    if a is None:
        return b
    return a if b is None else a + b


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    try:
        return int(v) if v is not None else None
    except (TypeError, ValueError):
        return None


def _float(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    try:
        return float(v) if v is not None else None
    except (TypeError, ValueError):
        return None


def step_usage(step: Step, prices: Prices | None = None) -> Usage | None:
    """The model, tokens and cost of an LLM step, or None when the step states none of them."""
    attrs = step.attributes or {}
    env: Mapping[str, Any] = attrs
    has = any(k in attrs for k in _KEYS)
    if not has and step.kind != "llm":
        return None
    if not has:
        # A recorded LLM step may have returned the provider's response: its
        # envelope (usage, model) is read the way every importer reads it.
        env = {**attrs, **normalize_llm_step(step.input, step.output, attrs)[2]}
    model = env.get("llm.model") or env.get("model")
    prompt = _int(env.get("llm.usage.prompt_tokens"))
    completion = _int(env.get("llm.usage.completion_tokens"))
    total = _int(env.get("llm.usage.total_tokens"))
    if total is None and (prompt is not None or completion is not None):
        total = (prompt or 0) + (completion or 0)
    cost = _float(env.get("llm.usage.cost"))
    if cost is None:
        cost = (prices or default_prices()).cost(str(model) if model else None, prompt, completion)
    if model is None and total is None and cost is None:
        return None
    return Usage((str(model),) if model else (), prompt, completion, total, cost, 1)


def run_usage(run: Run, prices: Prices | None = None) -> Usage:
    """The sum over a run's LLM steps (``calls`` = 0 when the run states none)."""
    return total_usage(step_usage(s, prices) for s in run.steps)


def total_usage(usages: Iterable[Usage | None]) -> Usage:
    """The sum of several usages (None entries skipped)."""
    out = Usage()
    for u in usages:
        if u is not None:
            out = out + u
    return out


def format_cost(cost: float | None) -> str:
    """A cost for people, in fixed notation: ``$0.0123``, ``$12.35``, ``$0.000049`` (two significant digits
    below $0.0001, never ``$4.9e-05``: nu64b); empty when unknown."""
    if cost is None:
        return ""
    if cost == 0:
        return "$0"
    if abs(cost) >= 1:
        return f"${cost:,.2f}"
    if abs(cost) >= 0.0001:
        return f"${cost:.4f}"
    places = min(1 - math.floor(math.log10(abs(cost))), 20)
    return f"${cost:.{places}f}".rstrip("0").rstrip(".")


def format_tokens(n: int | None) -> str:
    """A token count for people: ``1,234``; empty when unknown."""
    return "" if n is None else f"{n:,}"


__all__ = [
    "PRICES_ENV",
    "Price",
    "Prices",
    "Usage",
    "default_prices",
    "format_cost",
    "format_tokens",
    "load_prices",
    "run_usage",
    "step_usage",
    "total_usage",
]
