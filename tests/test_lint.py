"""The habits CI keeps: ruff's lint rules and mypy with no error over the `shardc` package."""

from __future__ import annotations

import subprocess
import sys

from tests.typecheck import ROOT
from tests.typecheck import main as typecheck


def test_ruff_finds_nothing():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_mypy_finds_no_error(capsys):
    code = typecheck([])
    out = capsys.readouterr().out
    assert code == 0, out[-6000:]
