"""`Report.value` at points that bind every size a report leaves free: each point is compiled
once (`Report.at`, kept per point) and its totals read there, against the report's own formulas
at the point (what `value` gave before for reports whose plans do not depend on the sizes) and a
fresh `shardc.compile(..., set=point)` per point. CPU time (`time.process_time`) per point,
medians over --repeat runs.

Usage: python benchmarks/bench_value_points.py [--points 40] [--repeat 3]
Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import shardc  # noqa: E402

TOTALS = ("comm_bytes", "flops", "t_comms_s", "t_lower_s", "t_upper_s")

PROGRAMS = {
    "reshard read again (K free, v5e)": (
        "mesh X=4, Y=2\ndim I=8, J=8, K\nhardware tpu-v5e\nA: bf16[I_Y, J_X, K]\n"
        "B[I_X, J_Y, K] = A\nC = B + A[I_X, J_Y, K]\n",
        "K",
        8,
    ),
    "contraction and gather (B, D, F free, v5e)": (
        "mesh X=4, Y=2\ndim B, D, F\nhardware tpu-v5e\nIn: bf16[B_X, D]\nW: bf16[D, F_Y]\n"
        "Out[B_X, F_Y] = In ·_D W\nZ[B, F_Y] = AllGather_X(Out)\n",
        "B",
        8,
    ),
    "FSDP step (B free, X=16, v5p)": (
        "mesh X=16\ndim B, D=8192, F=32768\nhardware tpu-v5p\nIn: bf16[B_X, D]\n"
        "param W_in: bf16[D_X, F]\nparam W_out: bf16[F, D_X]\nTmp[B_X, F] = In ·_D W_in\n"
        "Out[B_X, D] = Tmp ·_F W_out\nbackward\n",
        "B",
        16,
    ),
}


def point(text: str, size: str, unit: int, i: int) -> dict[str, int]:
    others = {"D": 1024, "F": 1024} if "dim B, D, F" in text else {}
    return {size: unit * (64 + 7 * i), **others}


def run(points: int, repeat: int) -> list[tuple[str, float, float, float]]:
    rows = []
    for label, (text, size, unit) in PROGRAMS.items():
        at, formulas, compiles = [], [], []
        for k in range(repeat):
            shift = k * points  # points no earlier run compiled
            r = shardc.compile(text)
            t0 = time.process_time()
            for i in range(points):
                p = point(text, size, unit, i + shift)
                for name in TOTALS:
                    r.value(name, **p)
            t1 = time.process_time()
            for i in range(points):
                p = point(text, size, unit, i + shift)
                for name in TOTALS:
                    r.value(r.formula(name), **p)
            t2 = time.process_time()
            for i in range(points):
                p = point(text, size, unit, i + shift + repeat * points)
                n = shardc.compile(text, set=p)
                for name in TOTALS:
                    n.value(name)
            t3 = time.process_time()
            at.append((t1 - t0) / points)
            formulas.append((t2 - t1) / points)
            compiles.append((t3 - t2) / points)
        rows.append(
            (
                label,
                statistics.median(at),
                statistics.median(formulas),
                statistics.median(compiles),
            )
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(
        "| program | `value` of 5 totals, per point (ms) | the report's formulas (ms) | "
        "`compile(set=point)` (ms) |"
    )
    print("|---|---|---|---|")
    for label, at, formulas, compiles in run(args.points, args.repeat):
        print(f"| {label} | {at * 1e3:.1f} | {formulas * 1e3:.2f} | {compiles * 1e3:.1f} |")


if __name__ == "__main__":
    main()
