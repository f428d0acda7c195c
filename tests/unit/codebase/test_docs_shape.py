"""The docs say how things are, and say it where a reader looks: the README names every
kind before anything else and gives no timing before its docs index; docs/benchmarks.md
stays one readable page; no docs heading, and no comment or docstring of the code,
names an issue number (history lives in CHANGELOG.md)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from deployplane.kinds import KINDS

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
DOC_PAGES = sorted([README, ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")])
CODE_DIRS = ("operator", "bench", "tools")
ISSUE_NUMBER = re.compile(r"\b[Ii]ssues?\s+#?\d+|(?<![\w&/])#\d+\b")
TIMING = re.compile(r"\b\d[\d.,]*\s*(?:min|s|ms|seconds|minutes)\b")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of a Markdown text outside its fenced code blocks."""
    lines: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


def _code_words(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of every comment and string literal (docstrings included)."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [
        (token.start[0], token.string)
        for token in tokens
        if token.type in (tokenize.COMMENT, tokenize.STRING)
    ]


def test_readme_names_the_three_kinds_in_its_first_ten_lines() -> None:
    opening = "\n".join(README.read_text(encoding="utf-8").splitlines()[:10])
    kinds = [kind.kind for kind in KINDS]
    assert len(kinds) == 3
    for kind in kinds:
        assert kind in opening, f"README's first 10 lines do not name {kind}"


def test_readme_gives_no_timing_before_its_docs_index() -> None:
    text = README.read_text(encoding="utf-8")
    assert "\n## Documentation\n" in text
    before = text.split("\n## Documentation\n", 1)[0]
    timings = [
        f"line {number}: {line}" for number, line in _prose_lines(before) if TIMING.search(line)
    ]
    assert not timings, "a timing figure before the docs index:\n" + "\n".join(timings)


def test_readme_links_only_pages_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(((?:docs/)?[\w./-]+\.md|LICENSE)(?:#[\w-]+)?\)", text)
    assert targets
    missing = sorted({t for t in targets if not (ROOT / t).is_file()})
    assert not missing, f"README links pages that do not exist: {missing}"


def test_benchmarks_page_is_under_400_lines() -> None:
    lines = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8").count("\n")
    assert lines < 400, f"docs/benchmarks.md has {lines} lines: keep it to method and figures"


@pytest.mark.parametrize("page", DOC_PAGES, ids=_rel)
def test_no_heading_names_an_issue(page: Path) -> None:
    headings = [
        f"line {number}: {line}"
        for number, line in _prose_lines(page.read_text(encoding="utf-8"))
        if line.startswith("#") and ISSUE_NUMBER.search(line.lstrip("#"))
    ]
    assert not headings, "headings by topic, history in CHANGELOG.md:\n" + "\n".join(headings)


@pytest.mark.parametrize("page", DOC_PAGES, ids=_rel)
def test_no_page_names_an_issue(page: Path) -> None:
    found = [
        f"line {number}: {line}"
        for number, line in _prose_lines(page.read_text(encoding="utf-8"))
        if re.search(r"\b[Ii]ssues?\s+#?\d+", line)
    ]
    assert not found, "docs say how it is now; history in CHANGELOG.md:\n" + "\n".join(found)


def test_no_comment_or_docstring_names_an_issue() -> None:
    found = [
        f"{_rel(path)}:{line}: {text.strip()[:80]}"
        for directory in CODE_DIRS
        for path in sorted((ROOT / directory).rglob("*.py"))
        for line, text in _code_words(path)
        if ISSUE_NUMBER.search(text)
    ]
    assert not found, "the first line says what it is; no issue numbers:\n" + "\n".join(found)


def test_the_issue_pattern_finds_what_it_should() -> None:
    for text in ("before issue 36", "Issue 7's properties", "issues 34 and 37", "(#12)"):
        assert ISSUE_NUMBER.search(text), text
    for text in ("ca.issue(name)", "issuer_name", "&#39;", "a/#1", "the issue's goal"):
        assert not ISSUE_NUMBER.search(text), text
