"""Sources are cited by their public names (docs/sources.md), never by the numbers of the
project's internal source folder ("000 part 4", "002 Question 4", "seed 003", `_004` keys): a
reader with only the book cannot resolve those. Scans code, docs, programs and goldens; not
tests/data/book-problems.yaml, a verbatim copy of the shared corpus, whose entries name its
files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.paths import ROOT

SCANNED = (
    "README.md",
    "CHANGELOG.md",
    "CONTRIBUTING.md",
    "docs",
    "dsl",
    "passes",
    "hardware",
    "grammar",
    "programs",
    "tests",
    "benchmarks",
)
SUFFIXES = {".md", ".py", ".shard", ".toml", ".json", ".lark", ".txt", ".ipynb", ".yaml"}
INTERNAL_ID = re.compile(
    r"\bseeds?[ /_-]?0\d\d\b"  # seed 003, seeds/002
    r"|\b00[0-4]\b(?=[ ,]+(?:part|Part|question|Question|section|chapter|§|Q\d))"  # 000 part 4
    r"|\b(?:part|Part|Question|question|section)\s+\d+\s+(?:of|in)\s+00[0-4]\b"
    r"|[A-Za-z]_00[0-4](?![0-9])"  # t_step_overlap_004_s
    r"|\b(?:in|from|see|per)\s+00[0-4]\b"
)


def _files() -> list[Path]:
    out = []
    for name in SCANNED:
        p = ROOT / name
        paths = [p] if p.is_file() else [q for q in p.rglob("*") if q.is_file()]
        out += [
            q
            for q in paths
            if q.suffix in SUFFIXES
            and "__pycache__" not in q.parts
            and q.name != Path(__file__).name
            and q.parent.name != "data"
        ]
    return sorted(out)


def test_the_scan_finds_an_internal_id():
    for text in (
        "see 002 Question 4",
        "the 000 part 4 table",
        "seed 003",
        "t_step_overlap_004_s",
        "Question 4 of 002",
    ):
        assert INTERNAL_ID.search(text), text
    for text in ("N004", "MAX_ENTRIES = 50_000", "32,000", "0.004", "error[S004]", "1_000"):
        assert not INTERNAL_ID.search(text), text


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_internal_source_numbers(path):
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}"
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if INTERNAL_ID.search(line)
    ]
    assert not hits, (
        "cite the book's chapters and the papers by name (docs/sources.md):\n" + "\n".join(hits)
    )


COMMIT = re.compile(
    r"(?<![0-9A-Za-z_.])(?=[0-9a-f]*[0-9])(?=(?:[0-9]*[a-f]){2})[0-9a-f]{7,40}"
    r"(?![0-9A-Za-z_])|`(?=[0-9]*[a-f])[0-9a-f]{7,40}`"
)
"""A commit hash: 7 to 40 hex digits with a digit and at least two letters (`2.41071e9` is a
number, `defaced` a word), or with one letter where it is quoted as code (`068857b`)."""
HISTORY = re.compile(
    r"\b(?:this|that|the|a later|each) stop\b|\bstop \d+\b|\bthe last row\b"
    r"|\bstarting commit\b|\bthis session\b|\bthe session's\b",
    re.I,
)
USER_DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])


def test_the_history_scan_finds_history():
    for text in (
        "against 34ff0ca",
        "(`2b3e021`,",
        "(`068857b`)",
        "the stop's start",
        "stop 24",
        "the last row",
    ):
        assert COMMIT.search(text) or HISTORY.search(text), text
    for text in ("2.41071e9", "defaced", "0x1f", "1e-12", "the bus stops", "a row"):
        assert not COMMIT.search(text) and not HISTORY.search(text), text


@pytest.mark.parametrize("path", USER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_docs_hold_no_history(path):
    """The user docs say what is true now and how to reproduce it; commit hashes and the story
    of how a figure got there belong in CHANGELOG.md."""
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if COMMIT.search(line) or HISTORY.search(line)
    ]
    assert not hits, "move the history to CHANGELOG.md:\n" + "\n".join(hits)
