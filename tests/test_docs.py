"""The documentation: every reference in it resolves, no page imports a private module, and the
Python blocks of the pages that promise runnable examples run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
GENERATED = {"docs/benchmarks.quick.md"}
"""Files the docs name that a command writes (`python -m benchmarks --quick`), absent from a clean checkout."""

RUNNABLE = ["docs/importers.md", "docs/recording.md", "docs/testing.md"]
"""Pages whose every ``python`` block runs as written (in order, one interpreter per page)."""

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
_CODE = re.compile(r"`([^`\n]+)`")
_SECTION = re.compile(r"`?([\w./-]+\.md)`?(?:,| ,)?\s*(?:§\s*|section\s+)(\d+)")
_BARE_SECTION = re.compile(r"§\s*\d+")
_NAMED_SECTION = re.compile(r"`?([\w./-]+\.md)`?,\s*\"([^\"]+)\"")
_PRIVATE = re.compile(r"\btrajdebug(?:\.[A-Za-z]\w*)*\._[a-z]\w*")
_FENCE = re.compile(r"^```(\w*)\s*$")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _prose(path: Path) -> list[tuple[int, str]]:
    """The page's lines outside fenced code blocks, numbered from 1."""
    out, fenced = [], False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append((n, line))
    return out


def _headings(path: Path) -> list[str]:
    return [line.lstrip("#").strip() for _, line in _prose(path) if line.startswith("#")]


def _where(path: Path, n: int) -> str:
    return f"{path.relative_to(ROOT)}:{n}"


def _resolve(page: Path, target: str) -> Path | None:
    """A path a page names, relative to the page or to the repository; None when it is in neither."""
    for base in (page.parent, ROOT):
        found = list(base.glob(target)) if "*" in target else [base / target]
        if found and all(p.exists() for p in found):
            return found[0]
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    """A relative link names a file that exists and, after #, a heading of that file."""
    broken = []
    for n, line in _prose(page):
        for m in _LINK.finditer(line):
            target = m.group(1) or m.group(2)
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            file, _, anchor = target.partition("#")
            dest = _resolve(page, file) if file else page
            if dest is None:
                broken.append(f"{_where(page, n)}: no file {file}")
            elif anchor and anchor not in {_slug(h) for h in _headings(dest)}:
                broken.append(f"{_where(page, n)}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_named_file_and_section_exists(page: Path) -> None:
    """A file named in backticks exists; "file.md §N", "file.md, section N" and 'file.md, "Title"' are headings there."""
    broken = []
    for n, line in _prose(page):
        for m in _CODE.finditer(line):
            token = m.group(1).strip()
            if not re.fullmatch(r"[\w./*-]+\.md", token) or token in GENERATED:
                continue
            if _resolve(page, token) is None:
                broken.append(f"{_where(page, n)}: no file {token}")
        for m in _SECTION.finditer(line):
            file, number = m.group(1), m.group(2)
            dest = _resolve(page, file)
            if dest is None:
                broken.append(f"{_where(page, n)}: no file {file}")
            elif not any(re.match(rf"{number}[.)]?\s", h) for h in _headings(dest)):
                broken.append(f"{_where(page, n)}: {file} has no section {number}")
        for m in _NAMED_SECTION.finditer(line):
            file, title = m.group(1), m.group(2)
            dest = _resolve(page, file)
            if dest is None:
                broken.append(f"{_where(page, n)}: no file {file}")
            elif not any(h.startswith(title) for h in _headings(dest)):
                broken.append(f"{_where(page, n)}: {file} has no section {title!r}")
        unnamed = _BARE_SECTION.findall(_SECTION.sub("", line))
        if unnamed:
            broken.append(f"{_where(page, n)}: {unnamed[0]} names no file")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_points_users_at_a_private_module(page: Path) -> None:
    """Docs name public modules only (`trajdebug.analysis`, not `trajdebug.analysis.inference._infer`)."""
    text = page.read_text(encoding="utf-8")
    found = [
        f"{_where(page, text.count(chr(10), 0, m.start()) + 1)}: {m.group(0)}" for m in _PRIVATE.finditer(text)
    ]
    assert not found, "\n".join(found)


def _python_blocks(page: Path) -> list[tuple[int, str]]:
    blocks, current, start, lang = [], [], 0, None
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        fence = _FENCE.match(line.strip())
        if fence and lang is None:
            lang, start, current = fence.group(1) or "text", n + 1, []
        elif fence:
            if lang == "python":
                blocks.append((start, "\n".join(current)))
            lang = None
        elif lang is not None:
            current.append(line)
    return blocks


_RUNNER = """
import sys
blocks = {blocks!r}
scope = {{"__name__": "__main__"}}
for page, line, source in blocks:
    # Padded so that a traceback's line numbers are the page's own.
    exec(compile("\\n" * (line - 1) + source, page, "exec"), scope)
"""


@pytest.mark.parametrize("name", RUNNABLE)
def test_the_python_blocks_of_the_page_run(name: str, tmp_path: Path) -> None:
    """Each python block of the page runs as written, in order, in a fresh interpreter in an empty folder."""
    page = ROOT / name
    blocks = [(name, line, source) for line, source in _python_blocks(page)]
    assert blocks, f"{name} has no python block"
    script = tmp_path / "blocks.py"
    script.write_text(_RUNNER.format(blocks=blocks), encoding="utf-8")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TRAJDEBUG")},
        "TRAJDEBUG_STORE": str(tmp_path / "trajdebug.db"),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
