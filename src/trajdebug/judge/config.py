"""Where the judge's model lives and how it may be used: endpoint, model, key, limits.

Nothing is configured by default, and with nothing configured nothing is sent:
`load_config` returns None and the analysis stays the deterministic one.  A
configuration comes from, in this order of precedence:

1. the environment: ``TRAJDEBUG_JUDGE_BASE_URL``, ``TRAJDEBUG_JUDGE_MODEL``,
   ``TRAJDEBUG_JUDGE_API_KEY``, ``TRAJDEBUG_JUDGE_CACHE``;
2. a small TOML file (``--judge-config FILE`` or ``TRAJDEBUG_JUDGE_CONFIG``),
   its keys at the top level or under ``[judge]``;
3. only when the user asked for the judge (``--judge``), the OpenAI-standard
   ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` (the base URL defaulting to
   OpenAI's when only the key is set).

A key is never read from the file: the file names the environment variable
that holds it (``api_key_env``), so a configuration can be committed.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit


Structured = Literal["json_schema", "json_object", "none"]
"""How the answer's shape is asked for: a JSON schema, any JSON object, or only in the prompt."""

OPENAI_BASE_URL = "https://api.openai.com/v1"
"""The base URL used when only ``OPENAI_API_KEY`` is set."""

ENV_BASE_URL = "TRAJDEBUG_JUDGE_BASE_URL"
ENV_MODEL = "TRAJDEBUG_JUDGE_MODEL"
ENV_API_KEY = "TRAJDEBUG_JUDGE_API_KEY"
ENV_CACHE = "TRAJDEBUG_JUDGE_CACHE"
ENV_CONFIG = "TRAJDEBUG_JUDGE_CONFIG"


class JudgeConfigError(ValueError):
    """A judge configuration that cannot be used (the message names the variable, file or field)."""


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    """An OpenAI-compatible chat-completions endpoint and the limits of its use in one analysis."""

    base_url: str
    """The endpoint's base URL, up to and including ``/v1`` (``http://127.0.0.1:11434/v1`` for Ollama)."""
    model: str
    """The model name the endpoint serves."""
    api_key: str | None = field(default=None, repr=False)
    """The bearer token, if the endpoint needs one (never written anywhere, never shown)."""
    timeout: float = 60.0
    """Seconds one request may take before it is abandoned (and retried)."""
    retries: int = 2
    """Further attempts after a failed request (connection error, timeout, HTTP 408, 429, 5xx)."""
    backoff: float = 0.5
    """Seconds before the first retry; doubled for each further one (with jitter; ``Retry-After`` wins)."""
    budget: int = 24_000
    """Tokens (sent and asked for) one run's analysis may spend; a request that would exceed it is not sent."""
    max_answer_tokens: int = 1_000
    """``max_tokens`` of each request: the longest answer asked for."""
    shortlist: int = 5
    """How many of the deterministic ranking's head the model judges (plus the steps on their paths)."""
    max_steps: int = 12
    """At most this many steps are judged per run (the shortlist's head and lineage first)."""
    value_chars: int = 1_200
    """A step's input or output is cut to this many characters in the prompt (after redaction)."""
    expectation: bool = True
    """Ask first for the expected solution outline and judge the steps against it."""
    explain: bool = True
    """Ask, for the chosen root, why it erred."""
    weight: float = 0.5
    """Share of the model in the combined score (0: the deterministic order, 1: the model's)."""
    stream: bool = False
    """Ask for server-sent events instead of one JSON body."""
    structured: Structured = "json_schema"
    """How the answer's shape is asked for; lowered automatically when the endpoint rejects it."""
    temperature: float = 0.0
    """Sampling temperature (0: the most repeatable answers, which also makes the cache useful)."""
    cache: Path | None = None
    """Directory of the on-disk response cache (None: no cache)."""

    @property
    def endpoint(self) -> str:
        """The chat-completions URL requests go to."""
        return self.base_url.rstrip("/") + "/chat/completions"


_NUMBERS: dict[str, tuple[type, float, float]] = {
    "timeout": (float, 0.01, 3600.0),
    "retries": (int, 0, 10),
    "backoff": (float, 0.0, 60.0),
    "budget": (int, 100, 10_000_000),
    "max_answer_tokens": (int, 16, 100_000),
    "shortlist": (int, 1, 50),
    "max_steps": (int, 1, 100),
    "value_chars": (int, 80, 100_000),
    "weight": (float, 0.0, 1.0),
    "temperature": (float, 0.0, 2.0),
}
_FLAGS = ("expectation", "explain", "stream")
_FILE_ONLY = ("api_key_env",)


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/trajdebug/judge`` (``~/.cache/trajdebug/judge`` without it)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "trajdebug" / "judge"


def _check_url(url: str, where: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise JudgeConfigError(f"{where}: {url!r} is not an http(s) URL (e.g. http://127.0.0.1:8000/v1)")
    return url.rstrip("/")


def _read_file(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise JudgeConfigError(f"{path}: cannot read the judge configuration ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise JudgeConfigError(f"{path}: not TOML: {exc}") from None
    table = data.get("judge", data)
    if not isinstance(table, dict):
        raise JudgeConfigError(f"{path}: [judge] must be a table")
    known = {f.name for f in fields(JudgeConfig)} | set(_FILE_ONLY)
    for key in table:
        if key == "api_key":
            raise JudgeConfigError(
                f"{path}: field 'api_key': keep keys out of files; name the variable that holds it with api_key_env"
            )
        if key not in known:
            raise JudgeConfigError(f"{path}: unknown field {key!r} (known: {', '.join(sorted(known))})")
    return dict(table)


def _coerce(key: str, value: Any, where: str) -> Any:
    """A field's value from a file or the environment, checked (a one-line error naming ``where``)."""
    if key in _NUMBERS:
        kind, low, high = _NUMBERS[key]
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise JudgeConfigError(f"{where}: field {key!r} must be a number")
        try:
            number = kind(value)
        except ValueError:
            raise JudgeConfigError(f"{where}: field {key!r} must be a number, not {value!r}") from None
        if not low <= number <= high:
            raise JudgeConfigError(f"{where}: field {key!r} must lie in [{low:g}, {high:g}], not {number}")
        return number
    if key in _FLAGS:
        if not isinstance(value, bool):
            raise JudgeConfigError(f"{where}: field {key!r} must be true or false")
        return value
    if key == "structured":
        if value not in ("json_schema", "json_object", "none"):
            raise JudgeConfigError(f"{where}: field 'structured' must be json_schema, json_object or none")
        return value
    if key == "cache":
        if value is False:
            return None
        if not isinstance(value, str) or not value:
            raise JudgeConfigError(f"{where}: field 'cache' must be a directory path or false")
        return Path(value).expanduser()
    if not isinstance(value, str) or not value.strip():
        raise JudgeConfigError(f"{where}: field {key!r} must be a non-empty string")
    return value.strip()


def load_config(
    env: Mapping[str, str] | None = None,
    *,
    path: str | Path | None = None,
    openai: bool = False,
    **overrides: Any,
) -> JudgeConfig | None:
    """The judge's configuration, or None when no endpoint is configured.

    Args:
        env: The environment to read (default: ``os.environ``).
        path: A TOML file (default: ``TRAJDEBUG_JUDGE_CONFIG`` when set).
        openai: Also read ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` (only when
            the user asked for the judge).
        **overrides: Fields set by the caller, over everything else.

    Raises:
        JudgeConfigError: a file or value is invalid, or an endpoint is
            configured without a model.
    """
    env = os.environ if env is None else env
    file = Path(path) if path is not None else (Path(env[ENV_CONFIG]) if env.get(ENV_CONFIG) else None)
    values: dict[str, Any] = {}
    if file is not None:
        for key, value in _read_file(file).items():
            values[key] = _coerce(key, value, str(file))
    key_env = values.pop("api_key_env", None)
    api_key = env.get(str(key_env)) if key_env else None
    if key_env and not api_key:
        raise JudgeConfigError(f"{file}: field 'api_key_env': the variable {key_env} is not set")
    for name, var in (("base_url", ENV_BASE_URL), ("model", ENV_MODEL)):
        if env.get(var):
            values[name] = _coerce(name, env[var], var)
    api_key = env.get(ENV_API_KEY) or api_key
    if openai:
        if "base_url" not in values and (env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_KEY")):
            values["base_url"] = env.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
        api_key = api_key or env.get("OPENAI_API_KEY")
    if env.get(ENV_CACHE):
        values["cache"] = _coerce("cache", env[ENV_CACHE], ENV_CACHE)
    for key, value in overrides.items():
        if value is not None:
            values[key] = value
    if "base_url" not in values:
        if "model" in values:
            raise JudgeConfigError(f"{ENV_BASE_URL}: a judge model is named but no endpoint (base URL)")
        return None
    values["base_url"] = _check_url(str(values["base_url"]), "base_url")
    if "model" not in values:
        raise JudgeConfigError(
            f"{ENV_MODEL}: no judge model named for {values['base_url']} (set it, or `model` in the judge config)"
        )
    values.setdefault("cache", default_cache_dir(env))
    return JudgeConfig(api_key=api_key or None, **values)


def require_config(
    env: Mapping[str, str] | None = None, *, path: str | Path | None = None, **overrides: Any
) -> JudgeConfig:
    """The configuration the user asked for with ``--judge`` (OpenAI's variables included).

    Raises:
        JudgeConfigError: nothing is configured, or the configuration is invalid.
    """
    config = load_config(env, path=path, openai=True, **overrides)
    if config is None:
        raise JudgeConfigError(
            f"--judge: no model endpoint configured: set {ENV_BASE_URL} and {ENV_MODEL} "
            "(or OPENAI_API_KEY), or give --judge-config FILE"
        )
    return config


def with_options(config: JudgeConfig, **changes: Any) -> JudgeConfig:
    """The configuration with some fields changed (each checked as a file's would be)."""
    checked = {k: v if k in ("api_key", "cache") else _coerce(k, v, "option") for k, v in changes.items()}
    return replace(config, **checked)


__all__ = [
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_CACHE",
    "ENV_CONFIG",
    "ENV_MODEL",
    "OPENAI_BASE_URL",
    "JudgeConfig",
    "JudgeConfigError",
    "Structured",
    "default_cache_dir",
    "load_config",
    "require_config",
    "with_options",
]
