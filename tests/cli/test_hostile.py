"""The hostile-input corpus (tests/hostile/cases.py) in CI: each case in its own process under a
CPU-time and a memory limit (tests/hostile/harness.py), forked from one that has imported shardc
(tests/hostile/zygote.py). Cases run two at a time; a failure shows what shardc printed.
"""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.hostile import harness
from tests.hostile.cases import CASES

_BY_NAME = {c.name: c for c in CASES}


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest) -> dict[str, harness.Outcome]:
    """Run the selected cases once, two at a time (the machines have two cores). The selection
    is this module's tests in the session; under pytest-xdist the README's `--dist loadfile`
    gives them all to one worker, which runs each case once (the socket to the zygote is in a
    temporary folder of that worker's own)."""
    wanted = [
        item.callspec.params["name"]
        for item in request.session.items
        if item.module is request.module
        and hasattr(item, "callspec")
        and not _missing(_BY_NAME[item.callspec.params["name"]])
    ]
    cases = [_BY_NAME[n] for n in wanted]
    try:
        with ThreadPoolExecutor(2) as pool:
            return dict(zip(wanted, pool.map(harness.run, cases), strict=True))
    finally:
        harness.close()


def _missing(case: harness.Case) -> list[str]:
    """The packages `case` needs that are not installed."""
    return [m for m in case.needs if importlib.util.find_spec(m) is None]


def test_case_names_are_unique() -> None:
    assert len(_BY_NAME) == len(CASES)


@pytest.mark.parametrize("name", sorted(_BY_NAME))
def test_hostile_input(name: str, outcomes: dict[str, harness.Outcome]) -> None:
    if missing := _missing(_BY_NAME[name]):
        pytest.skip(f"needs {', '.join(missing)} (pip install '.[test,jax]')")
    o = outcomes[name]
    assert not o.problems, (
        f"{name}: exit {o.code} in {o.seconds:.1f} s\n"
        + "\n".join(o.problems)
        + f"\nstderr:\n{o.stderr[-1500:]}"
    )
