"""The lexicon: every English phrase the analysis reads is in one module, counted; no other analysis module
compiles a pattern of English words, and no function of the analysis runs over 80 lines."""

from __future__ import annotations

import ast
import re
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from trajdebug.analysis import lexicon
from trajdebug.analysis.diagnosers._tools import environmental
from trajdebug.analysis.lexicon import ENGLISH, Lexicon


ANALYSIS = Path(lexicon.__file__).resolve().parent

NOT_ENGLISH = {
    ("_sql.py", "_SQL_VERB"): "SQL keywords: the grammar of SQL, not a language of prose",
    ("_sql.py", "_SQL_STATEMENT"): "SQL keywords: the grammar of SQL, not a language of prose",
    ("diagnosers/_tools.py", "_QUERY"): "SQL keywords",
    ("reference/_fields.py", "_VOLATILE"): "the mask token <uuid> that reference._profile writes for a UUID",
}
"""Patterns with letters that are not English words, each with the reason."""

_SYNTAX = re.compile(r"\\[a-zA-Z]|\[[^\]]*\]|\(\?[a-zA-Z:!=<]+|\{[\d,]+\}")
"""What is regex syntax rather than words: escapes (``\\b``), classes, group flags, counts."""
_WORD = re.compile(r"[A-Za-z]{3,}")


def _compiled_patterns() -> list[tuple[str, str, str]]:
    """Every ``re.compile`` of a literal pattern in the analysis outside the lexicon: (module, name, pattern)."""
    out = []
    for path in sorted(ANALYSIS.rglob("*.py")):
        rel = path.relative_to(ANALYSIS).as_posix()
        if rel == "lexicon.py":
            continue
        tree = ast.parse(path.read_text())
        names = {
            id(n.value): n.targets[0].id
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "compile"
                and node.args
            ):
                arg = node.args[0]
                literal = [
                    c.value
                    for c in ast.walk(arg)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                ]
                out.append((rel, names.get(id(node), "?"), "".join(literal)))
    return out


def test_the_lexicon_counts_its_phrases() -> None:
    """Every field of the lexicon is a pattern or a word set, and the count of phrases adds them all up."""
    counts = ENGLISH.count()
    assert set(counts) == {f.name for f in fields(Lexicon)}
    assert all(n >= 1 for n in counts.values())
    assert counts["stopwords"] == len(ENGLISH.stopwords)
    assert counts["yes"] == lexicon._alternatives(ENGLISH.yes.pattern) >= 10
    # The count is what the docs state (docs/architecture.md, "The language boundary").
    assert len(counts) == 69 and sum(counts.values()) == 915


def test_alternatives_are_counted_at_any_depth_and_not_in_classes() -> None:
    """`a|b(c|d)` is three phrases; a ``|`` inside a character class or escaped is none."""
    assert lexicon._alternatives(r"a|b(?:c|d)") == 3
    assert lexicon._alternatives(r"[|]x\|y") == 1


def test_no_other_analysis_module_compiles_english_words() -> None:
    """Outside the lexicon, a compiled pattern of the analysis holds no word of three letters or more."""
    found = _compiled_patterns()
    assert len(found) > 20  # the scan sees the analysis's patterns
    worded = {
        (mod, name): words
        for mod, name, pattern in found
        if (words := _WORD.findall(_SYNTAX.sub(" ", pattern))) and (mod, name) not in NOT_ENGLISH
    }
    assert worded == {}


def test_the_scan_would_see_an_english_pattern() -> None:
    """The scan's word test flags a phrase pattern and passes a pattern of syntax only."""
    assert _WORD.findall(_SYNTAX.sub(" ", r"\b(?:not found|invalid)\b"))
    assert not _WORD.findall(_SYNTAX.sub(" ", r"(?<![\w.,])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])"))


def test_a_rule_reads_the_lexicon_it_is_given() -> None:
    """Another lexicon changes what a rule reads: the environment words are data, not code."""
    german = replace(ENGLISH, environment=re.compile(r"zeitüberschreitung", re.I))
    assert environmental("Zeitüberschreitung beim Lesen", lexicon=german)
    assert not environmental("Zeitüberschreitung beim Lesen")
    assert environmental("connection refused")


@pytest.mark.parametrize("path", sorted(ANALYSIS.rglob("*.py")), ids=lambda p: p.relative_to(ANALYSIS).as_posix())
def test_no_function_of_the_analysis_runs_over_80_lines(path: Path) -> None:
    """Every function (and method) under trajdebug/analysis is at most 80 lines long."""
    long = [
        f"{n.name} ({n.end_lineno - n.lineno + 1} lines)"
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 80
    ]
    assert long == []


def test_analyze_passes_its_lexicon_to_the_rules(tmp_path: Path) -> None:
    """The lexicon given to `analyze` is the one every diagnoser reads (through its context)."""
    from tests.test_localize import sql_agent_run

    from trajdebug.analysis import analyze

    seen: list[Lexicon] = []

    def probe(step: Any, ctx: Any) -> list[Any]:
        seen.append(ctx.lexicon)
        return []

    german = replace(ENGLISH, yes=re.compile(r"\bja\b", re.I))
    analyze(sql_agent_run(tmp_path), diagnosers=[probe], lexicon=german)
    assert seen and all(lex is german for lex in seen)


def test_a_plural_loses_one_ending_and_a_singular_stays_as_it_is() -> None:
    """`Lexicon.singular` cuts one plural ending (``days`` -> ``day``), never a whole word, never twice."""
    assert ENGLISH.singular("days") == "day"
    assert ENGLISH.singular("day") == "day"
    assert ENGLISH.singular("s") == "s"
    assert ENGLISH.singular("glasses") == "glasse"


def test_a_unit_is_compared_without_its_plural_ending_and_in_one_spelling() -> None:
    """``days`` is ``day``, ``boxes`` ``box``, ``miles`` ``mile``'s, ``percent`` ``%`` and ``$`` ``usd``; a
    two-letter unit keeps its ``s`` (``ms`` is no ``m``), and milligrams stay apart from micrograms."""
    u = ENGLISH.unit
    assert u("days") == u("day") == "day"
    assert u("Boxes") == u("box") and u("inches") == u("inch") and u("miles") == u("mile")
    assert u("percent") == u("pct") == u("%") == "%"
    assert u("$") == u("USD") == u("dollars")
    assert u("ms") == "ms" != u("m") and u("celsius") == "celsius"
    assert u("micrograms") != u("mg") and u("milligrams") == u("mg")
