"""The differential test: random valid programs (shardc.testing.strategies: meshes up to 16 devices,
matmuls, chains, reshards, explicit collectives, elementwise ops, training steps) through
xla-check against XLA's SPMD partitioner on fake CPU devices. No program may crash either side
or show a byte-count bug; statements where XLA's plan is cheaper under shardc's own cost model
may not grow past the count recorded here (a ratchet: lower it when the planner improves; the
issue "Never worse than XLA" wants it at 0). `python -m pytest -m slow` runs 1,000 programs."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings

from shardc.lang.source import Source
from shardc.testing.strategies import programs

pytest.importorskip("jax")

from shardc.cli.xla import MAX_DEVICES  # noqa: E402
from shardc.tools.xla.check import Prepared, UsageError, check, devices_needed, prepare  # noqa: E402
from shardc.tools.xla.compare import XLA_CHEAPER  # noqa: E402
from shardc.tools.xla.lower import configure_devices  # noqa: E402

configure_devices(MAX_DEVICES)

XLA_CHEAPER_IN_100 = 0
"""Statements where XLA's plan is cheaper, in the 100 derandomized programs (docs/xla-check.md
gives the counts and their classes). The draws follow `one`'s source: after editing it, record
the new count."""


@dataclass
class Sweep:
    programs: int = 0
    statements: int = 0
    crashes: list[str] = field(default_factory=list)
    byte_bugs: list[str] = field(default_factory=list)
    xla_cheaper: list[str] = field(default_factory=list)
    verdicts: Counter[str] = field(default_factory=Counter)


def _sweep(n: int) -> Sweep:
    out = Sweep()

    @settings(max_examples=n, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def one(case: tuple[str, dict[str, int]]) -> None:
        text, _ = case
        try:
            p = prepare(Source("random.shard", text))
        except UsageError:
            return  # symbolic mesh sizes: xla-check needs a device count
        if not isinstance(p, Prepared) or devices_needed(p) > MAX_DEVICES:
            return
        try:
            result = check(p)
        except Exception as exc:  # noqa: BLE001 - any failure of either side is a finding
            out.crashes.append(f"{type(exc).__name__}: {exc}\n{text}")
            return
        out.programs += 1
        for row in result.rows:
            out.statements += 1
            out.verdicts[row.verdict] += 1
            where = f"line {row.line} of\n{text}"
            if row.byte_count_bug:
                out.byte_bugs.append(where)
            if row.verdict == XLA_CHEAPER:
                out.xla_cheaper.append(where)

    one()
    return out


def test_random_programs_against_xla():
    s = _sweep(100)
    assert s.programs >= 80, s  # most draws are checkable
    assert not s.crashes, "\n\n".join(s.crashes)
    assert not s.byte_bugs, "\n\n".join(s.byte_bugs)
    assert len(s.xla_cheaper) <= XLA_CHEAPER_IN_100, "\n\n".join(s.xla_cheaper)


@pytest.mark.slow
def test_a_thousand_random_programs_against_xla():
    s = _sweep(1000)
    assert not s.crashes, "\n\n".join(s.crashes)
    assert not s.byte_bugs, "\n\n".join(s.byte_bugs)
    print(f"{s.programs} programs, {s.statements} statements: {dict(s.verdicts)}")
