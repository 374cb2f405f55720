"""A pytest plugin that logs each test's CPU seconds: `python -m pytest -p benchmarks.pytest_cpu`
with `SHARDC_CPU_LOG=FILE` appends one tab-separated line per test (node id, CPU seconds of the
pytest process and of the children it waited for, wall seconds) as the test ends, so a run on a
loaded machine can be ranked while it goes. CPU time, unlike the wall clock, hardly moves with
the machine's load (docs/benchmarks.md, "The test suite's time"). `python -m
benchmarks.pytest_cpu FILE...` sums such logs by test file.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path

import pytest


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    path = os.environ.get("SHARDC_CPU_LOG")
    if not path:
        yield
        return
    me0, kids0 = _cpu()
    wall0 = time.perf_counter()
    yield
    me1, kids1 = _cpu()
    wall = time.perf_counter() - wall0
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{item.nodeid}\t{me1 - me0:.3f}\t{kids1 - kids0:.3f}\t{wall:.3f}\n")


def by_file(paths: list[str]) -> dict[str, list[float]]:
    """Per test file: [CPU of pytest, CPU of children, wall, tests]."""
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for p in paths:
        for line in Path(p).read_text(encoding="utf-8").splitlines():
            node, me, kids, wall = line.rsplit("\t", 3)
            row = out[node.split("::", 1)[0]]
            row[0] += float(me)
            row[1] += float(kids)
            row[2] += float(wall)
            row[3] += 1
    return out


def main(argv: list[str]) -> int:
    rows = sorted(by_file(argv).items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
    total = [sum(r[i] for _, r in rows) for i in range(4)]
    print(f"{'file':60} {'cpu':>8} {'kids':>8} {'wall':>8} {'tests':>6}")
    for name, (me, kids, wall, n) in [*rows, ("TOTAL", total)]:
        print(f"{name:60} {me:8.1f} {kids:8.1f} {wall:8.1f} {int(n):6d}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
