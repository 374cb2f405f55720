"""Compile speed of small programs against other checkouts, paired run by run: whole-process
CPU time of `shardc compile` on the book's FSDP step and the programs/ where the whole-program
objective searches (issue 31: numeric programs within 10% of the baseline).

Usage: python benchmarks/bench_small_paired.py --baseline DIR [--baseline DIR2] [--repeat 5]
Each DIR is a checkout (`git worktree add /tmp/start <commit>`), run without installing it.
Prints a Markdown table for docs/benchmarks.md: CPU-second medians per checkout and the median
of the per-run ratios (this checkout over each baseline).
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

FSDP = """mesh X=16
dim B={b}, D=8192, F=32768
hardware tpu-v5p
In: bf16[B_X, D]
param W_in: bf16[D_X, F]
param W_out: bf16[F, D_X]
Tmp[B_X, F] = In ·_D W_in
Out[B_X, D] = Tmp ·_F W_out
backward
"""
"""The training chapter's FSDP step (How to Scale Your Model, "How to Parallelize a
Transformer for Training", FSDP), with the batch declared."""

PROGRAMS = (
    "attention-gqa-train",
    "mlp-fsdp-train",
    "mlp-fsdp-tp-train",
    "mlp-dp-train",
    "moe-expert-parallel-train",
    "case4",
    "q4-matmul-strategies",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, action="append", required=True)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    names = [b.name for b in args.baseline]
    print(
        "| program | "
        + " | ".join(f"{n} (CPU s)" for n in names)
        + " | now (CPU s) | "
        + " | ".join(f"now/{n} (paired median)" for n in names)
        + " |"
    )
    print("|---" * (2 * len(names) + 2) + "|")
    with tempfile.TemporaryDirectory() as tmp:
        cases: dict[str, Path] = {}
        for b in (4096, 8192):
            path = Path(tmp) / f"fsdp-{b}.shard"
            path.write_text(FSDP.format(b=b), encoding="utf-8")
            cases[f"FSDP step, B={b}"] = path
        for name in PROGRAMS:
            cases[name] = ROOT / "programs" / f"{name}.shard"
        for label, path in cases.items():
            cmd = ["compile", str(path)]
            old: list[list[float]] = [[] for _ in names]
            new: list[float] = []
            for _ in range(args.repeat):
                for k, base in enumerate(args.baseline):
                    old[k].append(cpu(base, cmd))
                new.append(cpu(ROOT, cmd))
            ratios = [
                statistics.median(n / o for n, o in zip(new, olds, strict=True)) for olds in old
            ]
            print(
                f"| {label} | "
                + " | ".join(f"{statistics.median(o):.2f}" for o in old)
                + f" | {statistics.median(new):.2f} | "
                + " | ".join(f"{r:.2f}" for r in ratios)
                + " |",
                flush=True,
            )


if __name__ == "__main__":
    main()
