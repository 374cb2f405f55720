"""Sources are cited by their public names (docs/sources.md), never by the numbers of the
project's internal source folder ("000 part 4", "002 Question 4", "seed 003", `_004` keys): a
reader with only the book cannot resolve those. Scans code, docs, programs and goldens; not
tests/data/book-problems.yaml, a verbatim copy of the shared corpus, whose entries name its files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("README.md", "docs", "dsl", "passes", "hardware", "grammar", "programs", "tests",
           "benchmarks")
SUFFIXES = {".md", ".py", ".shard", ".toml", ".json", ".lark", ".txt", ".ipynb", ".yaml"}
INTERNAL_ID = re.compile(
    r"\bseeds?[ /_-]?0\d\d\b"                                # seed 003, seeds/002
    r"|\b00[0-4]\b(?=[ ,]+(?:part|Part|question|Question|section|chapter|§|Q\d))"  # 000 part 4
    r"|\b(?:part|Part|Question|question|section)\s+\d+\s+(?:of|in)\s+00[0-4]\b"
    r"|[A-Za-z]_00[0-4](?![0-9])"                             # t_step_overlap_004_s
    r"|\b(?:in|from|see|per)\s+00[0-4]\b")


def _files() -> list[Path]:
    out = []
    for name in SCANNED:
        p = ROOT / name
        paths = [p] if p.is_file() else [q for q in p.rglob("*") if q.is_file()]
        out += [q for q in paths if q.suffix in SUFFIXES and "__pycache__" not in q.parts
                and q.name != Path(__file__).name and q.parent.name != "data"]
    return sorted(out)


def test_the_scan_finds_an_internal_id():
    for text in ("see 002 Question 4", "the 000 part 4 table", "seed 003", "t_step_overlap_004_s",
                 "Question 4 of 002"):
        assert INTERNAL_ID.search(text), text
    for text in ("N004", "MAX_ENTRIES = 50_000", "32,000", "0.004", "error[S004]", "1_000"):
        assert not INTERNAL_ID.search(text), text


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_internal_source_numbers(path):
    hits = [f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}"
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
            if INTERNAL_ID.search(line)]
    assert not hits, "cite the book's chapters and the papers by name (docs/sources.md):\n" + \
        "\n".join(hits)
