"""Published training runs (benchmarks/published_runs.toml) against `plan --layout`: the table in
docs/validation.md is the one the runs give, shardc's prediction is an upper bound on every
evaluated row, and within a published comparison (a scheme's scaling series, and the schemes of
one table side by side) the predicted order never inverts the measured one."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest

from benchmarks.published_runs import evaluate, runs, table

DOC = Path(__file__).resolve().parents[1] / "docs" / "validation.md"


@pytest.fixture(scope="module")
def rows():
    return [evaluate(r) for r in runs()]


def test_the_docs_table_is_the_runs(rows):
    assert table(rows) in DOC.read_text(), \
        "docs/validation.md is stale: paste `python -m benchmarks.published_runs` into it"


def test_every_row_is_evaluated(rows):
    """Pipelines, DP + TP, TP 12, counts that are not powers of two: each published layout
    compiles (a row that cannot would carry its `not evaluated: ...` reason here)."""
    for r in rows:
        assert r.reason is None and r.predicted_mfu is not None, (r.label, r.reason)


def test_shardc_is_an_upper_bound_on_every_published_run(rows):
    """A roofline with ideal collectives cannot be slower than a real run."""
    for r in rows:
        if r.ratio is not None:
            assert r.ratio >= 1.0, f"{r.label}: predicted {r.predicted_mfu:.1%} below " \
                                   f"the measured {r.measured_mfu:.1%}"


def _scheme(r) -> str:
    return r.command.split("--layout '")[1].split(":")[0]


def _series(rows):
    out: dict[tuple[str, str], list] = {}
    for r in rows:
        if r.ratio is not None:
            out.setdefault((r.set, _scheme(r)), []).append(r)
    return out


def test_schemes_are_ranked_as_measured_within_each_published_comparison(rows):
    """Within one set (one model, one sequence length, one paper's table), every pair of rows
    is predicted in the order measured, across schemes too: GPT-3 175B's PTD-P and ZeRO-3 rows
    interleave (ZeRO-3 on 384 GPUs between PTD-P on 768 and on 1,536)."""
    sets: dict[str, list] = {}
    for r in rows:
        if r.ratio is not None:
            sets.setdefault(r.set, []).append(r)
    assert {k for k, v in sets.items() if len({_scheme(x) for x in v}) > 1} >= {
        "narayanan2021-table2-175b", "narayanan2021-table2-530b"}
    assert len([s for s in _series(rows).values() if len(s) > 1]) >= 5
    for key, members in sets.items():
        for a, b in combinations(members, 2):
            if a.measured_mfu < b.measured_mfu:
                a, b = b, a
            assert a.predicted_mfu > b.predicted_mfu, \
                f"{key}: {a.label} measured above {b.label} but predicted at or below"


def test_pipelined_series_scale_strictly_as_measured(rows):
    """PTD-P's weak scaling: more GPUs for the same batch, fewer microbatches per pipeline,
    a larger bubble, as measured."""
    for (_, scheme), members in _series(rows).items():
        if scheme.startswith("pp-") and len(members) > 1:
            by_measured = sorted(members, key=lambda r: -r.measured_mfu)
            predicted = [r.predicted_mfu for r in by_measured]
            assert predicted == sorted(predicted, reverse=True)
            assert len(set(predicted)) == len(predicted)
