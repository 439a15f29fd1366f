"""``--judge`` and ``--judge-config``: the options that put a model on top of ``analyze`` and ``report``.

The options only turn into a `trajdebug.judge.JudgeConfig` (or None: no
judge, nothing sent); the judging happens in `trajdebug.analyze_source`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click


F = TypeVar("F", bound=Callable[..., Any])


def add_judge_options(fn: F) -> F:
    """``--judge`` and ``--judge-config FILE``."""
    fn = click.option(
        "--judge-config",
        "judge_config",
        metavar="FILE",
        type=click.Path(dir_okay=False, exists=True),
        help="A TOML file configuring the judge's endpoint and limits (implies --judge).",
    )(fn)
    return click.option(
        "--judge",
        "use_judge",
        is_flag=True,
        help="Put a model on top of the deterministic ranking: it judges the shortlisted steps "
        "(redacted) and the ranking combines both. The endpoint comes from TRAJDEBUG_JUDGE_BASE_URL, "
        "TRAJDEBUG_JUDGE_MODEL and TRAJDEBUG_JUDGE_API_KEY (or OPENAI_BASE_URL and OPENAI_API_KEY); "
        "the tokens sent and the endpoint are printed on stderr.",
    )(fn)


def judge_config(use_judge: bool, path: str | None) -> Any:
    """The judge's configuration when asked for, else None (nothing is sent).

    Raises:
        click.ClickException: asked for, and nothing (or something invalid) is configured.
    """
    if not use_judge and path is None:
        return None
    from trajdebug.judge import JudgeConfigError, require_config

    try:
        return require_config(path=path)
    except JudgeConfigError as exc:
        raise click.ClickException(str(exc)) from None


def report_usage(judgments: Sequence[Any]) -> None:
    """Say on stderr how many tokens went out and where, and what failed."""
    from trajdebug.judge import notice

    line = notice(judgments)
    if line is not None:
        click.echo(line, err=True)


__all__ = ["add_judge_options", "judge_config", "report_usage"]
