"""The whole-process targets of the speed work that `bench_speed.py` does not cover: start-up
(a one-statement compile against importing SymPy, paired run by run), `plan` for LLaMA 3 70B
on 8,960 v5p chips (wall and CPU, with the default processes and with one) and `limits`.

Usage: python benchmarks/bench_targets.py [--repeat 5] [--only startup,plan,limits]

Each run is one whole process started the way a user starts it (`python -m shardc ...`, byte-code
caches on); CPU is user + system from `wait4` (children included: `plan`'s forked processes),
wall from the parent's clock. The runs of one repetition follow each other, so the paired
differences and ratios are taken within a repetition; the tables give medians (the VM is
shared and noisy: read the ranges too).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

ONE = "mesh X=4\ndim I=1024, J=1024, K=1024\nA: f32[I_X, J]\nB: f32[J, K]\nC[I_X, K] = A ·_J B\n"
PLAN = ["plan", "--card", "llama3-70b", "--hw", "tpu-v5p", "--chips", "8960", "--batch", "4Mi"]


def run(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one process, its output discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv)} failed")
    return wall, usage.ru_utime + usage.ru_stime


def shardc(*args: str) -> list[str]:
    return [PY, "-m", "shardc", *args]


def span(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"


def startup(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "one.shard"
        path.write_text(ONE)
        ours, theirs = [], []
        for _ in range(repeat):
            theirs.append(run([PY, "-c", "import sympy"])[1])
            ours.append(run(shardc("compile", str(path)))[1])
    diff = statistics.median(o - s for o, s in zip(ours, theirs, strict=True))
    print(
        "| one-statement `shardc compile` (CPU s) | `python -c 'import sympy'` (CPU s) | "
        "difference, paired (s) |"
    )
    print("|---|---|---|")
    print(f"| {span(ours)} | {span(theirs)} | {diff:.2f} |")


def commands(repeat: int, which: list[str]) -> None:
    rows = {
        "plan": [
            ("`shardc " + " ".join(PLAN) + "`", shardc(*PLAN)),
            ("`... --jobs 1`", shardc(*PLAN, "--jobs", "1")),
        ],
        "limits": [
            ("`shardc limits`", shardc("limits")),
            ("`shardc limits --format json`", shardc("limits", "--format", "json")),
        ],
    }
    todo = [r for w in which if w in rows for r in rows[w]]
    walls: dict[str, list[float]] = {name: [] for name, _ in todo}
    cpus: dict[str, list[float]] = {name: [] for name, _ in todo}
    for _ in range(repeat):
        for name, argv in todo:
            w, c = run(argv)
            walls[name].append(w)
            cpus[name].append(c)
    print("| command | wall (s) | CPU (s) |")
    print("|---|---|---|")
    for name, _ in todo:
        print(f"| {name} | {span(walls[name])} | {span(cpus[name])} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="startup,plan,limits")
    args = ap.parse_args()
    which = args.only.split(",")
    print(
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, {args.repeat} repetitions; "
        "medians (min-max)\n"
    )
    if "startup" in which:
        startup(args.repeat)
        print()
    if "plan" in which or "limits" in which:
        commands(args.repeat, which)


if __name__ == "__main__":
    main()
