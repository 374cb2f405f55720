"""Where the repository is, for tests in any folder under tests/: one home, so that a test file
can move between folders (tests/mirror.py moves them) without its paths changing."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The repository root: programs/, docs/, tests/golden/ and the package folders are under it."""
TESTS = ROOT / "tests"
"""tests/: its data folders (golden/, errors/, data/, book/, hostile/) and the test packages."""
