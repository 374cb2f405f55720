"""Malformed programs: every `tests/errors/NNN-name.shard` fails `shardc check` with exactly the
diagnostics pinned in its sibling `NNN-name.err`.

Each program opens with a `#` line saying what is wrong. To regenerate the expectations run
`SHARDC_UPDATE_GOLDENS=1 pytest tests/cli/test_errors.py` (or `pytest --update-goldens`) and review
the diff: every message must name the mistake in the language's terms.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from shardc.cli.app import main
from tests.paths import ROOT

ERRORS = ROOT / "tests" / "errors"
PROGRAMS = sorted(ERRORS.glob("*.shard"))
MIN_PROGRAMS = 50

HEAD = re.compile(r"^[^:]+:\d+:\d+: error\[[PNSCHKR]\d{3}\]: ")
"""The first line of a diagnostic; a program error always has a position."""


def _updating() -> bool:
    return os.environ.get("SHARDC_UPDATE_GOLDENS", "") not in ("", "0")


def _check(
    program: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    """Run `shardc check tests/errors/NAME.shard` in-process from the repository root."""
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    code = main(["check", program.relative_to(ROOT).as_posix()])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _problems(code: int, out: str, err: str) -> list[str]:
    """What is wrong with one run of `shardc check` on a malformed program, if anything."""
    problems = []
    if code != 1:
        problems.append(f"exit code {code}, expected 1")
    for text in (out, err):
        if "Traceback" in text or "internal error" in text:
            problems.append("the compiler crashed:\n" + text)
    if out:
        problems.append(f"unexpected output on stdout: {out!r}")
    heads = [
        line
        for line in err.splitlines()
        if not line.startswith("  ") and not line.startswith("note: ")
    ]
    if not heads:
        problems.append("no diagnostic on stderr")
    problems.extend(
        f"not a positioned diagnostic: {line!r}" for line in heads if not HEAD.match(line)
    )
    return problems


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_error_program(
    program: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert program.read_text(encoding="utf-8").startswith("#"), (
        f"{program.name} must open with a `#` line saying what is wrong"
    )
    code, out, err = _check(program, capsys, monkeypatch)
    problems = _problems(code, out, err)
    assert not problems, "\n".join(problems)
    golden = program.with_suffix(".err")
    if _updating():
        golden.write_text(err, encoding="utf-8")
        return
    assert golden.exists(), f"missing {golden.name}; run with SHARDC_UPDATE_GOLDENS=1"
    assert err == golden.read_text(encoding="utf-8")


def test_all_error_programs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """All the programs fail cleanly, there are enough of them, and every family is covered."""
    assert len(PROGRAMS) >= MIN_PROGRAMS, f"only {len(PROGRAMS)} error programs"
    failures = {}
    families = set()
    for program in PROGRAMS:
        code, out, err = _check(program, capsys, monkeypatch)
        problems = _problems(code, out, err)
        if problems:
            failures[program.name] = problems
        families.update(re.findall(r"error\[([A-Z])\d{3}\]", err))
    assert not failures, failures
    assert families >= set("PNSCH"), f"families covered: {sorted(families)}"


def test_every_golden_has_a_program() -> None:
    stale = [e.name for e in sorted(ERRORS.glob("*.err")) if not e.with_suffix(".shard").exists()]
    assert not stale, f"expectations without a program: {stale}"


def test_program_names() -> None:
    bad = [
        p.name for p in PROGRAMS if not re.fullmatch(r"\d{3}-[a-z0-9]+(-[a-z0-9]+)*\.shard", p.name)
    ]
    assert not bad, f"error programs are named NNN-short-name.shard: {bad}"
