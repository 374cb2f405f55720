"""Shared pytest options: `--update-goldens` rewrites golden files instead of comparing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from tests.paths import ROOT

# The property tests draw the same examples on every run (`derandomize`), so that the README's
# test command and CI give one answer for one commit. `SHARDC_HYPOTHESIS=explore` draws new
# ones each run (and `pytest -m slow` runs the long properties): what that finds becomes an
# `@example` (tests/tools/test_thresholds.py has one). No deadline: hypothesis's default fails an
# example that takes 200 ms of wall clock, which a loaded machine turns into a flaky test.
settings.register_profile("ci", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("SHARDC_HYPOTHESIS", "ci"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        help="rewrite tests/golden and tests/errors expectations",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--update-goldens"):
        os.environ["SHARDC_UPDATE_GOLDENS"] = "1"
    # Every test that starts JAX in this process (each pytest-xdist worker runs this hook too)
    # gets the most fake devices any test's mesh needs, whichever starts it first (a backend
    # keeps the count it started with).
    from shardc.cli.xla import MAX_DEVICES
    from shardc.tools.xla.lower import configure_devices

    configure_devices(MAX_DEVICES)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (the README's test command): one worker per CPU this process may run on.
    pytest-xdist's own count is psutil's physical cores, one on a two-vCPU machine whose vCPUs
    are the hyperthreads of one core; `PYTEST_XDIST_AUTO_NUM_WORKERS` still overrides both."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or config.option.numprocesses != "auto":
        return None
    if not hasattr(os, "sched_getaffinity"):  # not Linux: pytest-xdist's own count
        return None
    return max(1, len(os.sched_getaffinity(0)))


@pytest.fixture
def in_repo_root(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(ROOT)
    return ROOT


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `slow` (long property runs) run only when asked for: `pytest -m slow`."""
    if "slow" in (config.getoption("markexpr") or "").replace("not slow", ""):
        return
    skip = pytest.mark.skip(reason="a long property run: `pytest -m slow` runs it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
