"""Fuzzing the front end: every input either compiles or gets diagnostics with positions.

The default run is a few seconds (SHARDC_FUZZ_N inputs, default 300); `pytest -m fuzz` (or
SHARDC_FUZZ_LARGE=1) runs 10,000. Inputs and the judge are in tests/cli/test_fuzz_inputs.py.
"""

from __future__ import annotations

import os

import pytest

from tests.cli.test_fuzz_inputs import fuzz, run_one

KNOWN: tuple[str, ...] = ()
"""Problems of crashes found and not fixed yet (listed for the lead, reported but not failed).
Both crashes the first 10,000-input run found are fixed; their reproducers are below."""

REGRESSIONS = [
    # A use with {U_X} and no layout crashed validate (`'tuple' object has no attribute 'dims'`).
    "dim I=4\nA: bf16[I]\nx = A{U_X}\n",
    # One physical axis named twice crashed the sharing check (StopIteration).
    "mesh X @ici(y,y)\n",
]


def _report(result: dict) -> str:
    return "\n".join(
        f"{f['command']}: {f['problem']}\n  minimal input: {f['minimal']!r}"
        for f in result["failures"]
    )


def _unknown(result: dict) -> list[dict]:
    return [f for f in result["failures"] if not any(k in f["problem"] for k in KNOWN)]


def test_fuzz_small_budget() -> None:
    n = int(os.environ.get("SHARDC_FUZZ_N", "300"))
    result = fuzz(n, seed=int(os.environ.get("SHARDC_FUZZ_SEED", "0")))
    assert result["inputs"] == n
    assert not _unknown(result), _report(result)


@pytest.mark.fuzz
def test_fuzz_ten_thousand(request: pytest.FixtureRequest) -> None:
    selected = "fuzz" in (request.config.getoption("markexpr") or "").replace("not fuzz", "")
    if not selected and not os.environ.get("SHARDC_FUZZ_LARGE"):
        pytest.skip("10,000 inputs (about a minute): run `pytest -m fuzz` or SHARDC_FUZZ_LARGE=1")
    result = fuzz(max(10_000, int(os.environ.get("SHARDC_FUZZ_N", "0"))), seed=1)
    assert result["inputs"] >= 10_000
    assert not _unknown(result), _report(result)


@pytest.mark.parametrize("text", REGRESSIONS)
def test_fuzz_regressions(text: str, tmp_path) -> None:
    for outcome in run_one(text, tmp_path):
        assert outcome.ok and outcome.code == 1, outcome
