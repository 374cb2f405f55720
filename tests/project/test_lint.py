"""The habits CI keeps: ruff's lint rules and mypy with no error over the `shardc` package."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from tests.typecheck import ROOT
from tests.typecheck import main as typecheck


def test_ruff_finds_nothing():
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_ruff_format_changes_nothing():
    """The tree is kept as `ruff format` writes it (Python files: [tool.ruff.format])."""
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_mypy_finds_no_error(capsys):
    code = typecheck([])
    out = capsys.readouterr().out
    assert code == 0, out[-6000:]


def test_mypy_holds_the_language_and_the_passes_to_strict():
    """The per-module --strict flags cover `lang` and `passes`, so the mypy run above checks
    them strictly."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    strict = {m for o in config["overrides"] if o.get("disallow_untyped_defs") for m in o["module"]}
    assert {"shardc.lang.*", "shardc.passes.*"} <= strict
    assert config["check_untyped_defs"] is True
