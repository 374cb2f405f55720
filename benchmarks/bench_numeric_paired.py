"""Numeric compile speed against another checkout, paired run by run (issue 31's planner
work must stay within 10%): whole-process CPU time of `shardc compile` on generated programs
whose sizes are all numbers (every contraction decided by numbers, so the plan search and the
reshard search dominate), and on the small programs the optimality oracle draws.

Usage: python benchmarks/bench_numeric_paired.py --baseline DIR [--repeat 5]
DIR is a checkout (`git worktree add /tmp/start <commit>`), run without installing it.
Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_regions import cpu  # noqa: E402
from benchmarks.gen import chain, layers, program, shapes  # noqa: E402

SMALL = """mesh X=4, Y=2
dim I=1024, J=512, K=2048
hardware {hw}
A: f32[I_X, J]
B: f32[J, K_X]
E: f32[I, K_Y]
"""


def small(n: int) -> str:
    """`n` statements of each kind the oracle draws (contraction, elementwise, reduction,
    reshard) in rotating layouts, on the three chips."""
    outs = ["[I_X, K]", "[I, K_XY]", "[I_Y, K_X]", "[I, K]"]
    lines = [SMALL.format(hw="h100").rstrip("\n")]
    for i in range(n):
        o = outs[i % len(outs)]
        lines.append(f"C{i}{o} = A ·_J B")
        lines.append(f"D{i}{outs[(i + 1) % 4]} = exp(E) * C{i}")
        lines.append(f"S{i}[I_{'XY'[i % 2]}] = Sum_{{K}}(E)")
        lines.append(f"R{i}[J_{'XY'[i % 2]}, I] = A")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    cases = {
        "program(200)": program(200),
        "shapes(200)": shapes(200, 1),
        "chain(500)": chain(500),
        "layers(4)": layers(4),
        "oracle kinds x 50 (h100)": small(50),
    }
    print("| numeric program | before (CPU s) | now (CPU s) | ratio now/before (paired median) |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in cases.items():
            path = Path(tmp) / "p.shard"
            path.write_text(text, encoding="utf-8")
            cmd = ["compile", str(path)]
            old, new = [], []
            for _ in range(args.repeat):
                old.append(cpu(args.baseline, cmd))
                new.append(cpu(ROOT, cmd))
            ratio = statistics.median(n / o for n, o in zip(new, old, strict=True))
            print(
                f"| {name} | {statistics.median(old):.2f} | {statistics.median(new):.2f} | "
                f"{ratio:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
