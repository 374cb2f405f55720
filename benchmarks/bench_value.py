"""Evaluating a report at many points: `Report.value(name, **bindings)` with its cached
lambdified functions, against building the function on every call (what `value` did before the
cache), paired run by run. CPU time (`time.process_time`), medians over --repeat runs.

Usage: python benchmarks/bench_value.py [--calls 1000] [--repeat 5]
Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import sympy as sp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import shardc  # noqa: E402
from shardc.driver.values import finite, override_env  # noqa: E402

PROGRAM = ROOT / "programs" / "mlp-fsdp-tp-layers-train.shard"


def uncached(report, name: str, **bindings: float) -> float | None:
    """`value` as it was: a fresh `sp.lambdify` per call."""
    expr = report.formula(name)
    args = sorted(expr.free_symbols, key=lambda s: s.name)
    env = override_env(report, bindings, tuple(args))
    return finite(sp.lambdify(args, expr, modules="math")(*[env[a] for a in args]))


def run(calls: int, repeat: int) -> list[tuple[str, float, float]]:
    report = shardc.compile(PROGRAM)
    size = report.program.dims[0][0]
    rows = []
    for name in ("t_comms_s", "t_lower_s"):
        new, old = [], []
        for _ in range(repeat):
            report._functions.clear()  # each run pays for its first compile
            t0 = time.process_time()
            a = [report.value(name, **{size: 1024 + i}) for i in range(calls)]
            t1 = time.process_time()
            b = [uncached(report, name, **{size: 1024 + i}) for i in range(calls)]
            t2 = time.process_time()
            assert a == b, "the cached function disagrees with a fresh one"
            new.append(t1 - t0)
            old.append(t2 - t1)
        rows.append(
            (
                name,
                statistics.median(old),
                statistics.median(new),
                statistics.median(o / n for o, n in zip(old, new, strict=True)),
            )
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(
        f"| quantity | {args.calls} calls, lambdify per call (s) | cached (s) | "
        "ratio (paired median) |"
    )
    print("|---|---|---|---|")
    for name, old, new, ratio in run(args.calls, args.repeat):
        print(f"| {name} | {old:.3f} | {new:.4f} | {ratio:.0f}x |")


if __name__ == "__main__":
    main()
