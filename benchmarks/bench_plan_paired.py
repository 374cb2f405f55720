"""`shardc plan --card llama3-70b --hw tpu-v5p --chips 8960 --batch 4Mi` against another
checkout, alternating run by run: wall and CPU (the process and its forked workers), medians and
paired median ratios (docs/benchmarks.md).

Usage: python benchmarks/bench_plan_paired.py --baseline DIR [--repeat 5]
DIR is a checkout (`git worktree add /tmp/start <commit>`), run without installing it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_regions import LOADER  # noqa: E402

COMMAND = ["plan", "--card", "llama3-70b", "--hw", "tpu-v5p", "--chips", "8960", "--batch", "4Mi"]


def run(root: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole `shardc plan` process from the checkout `root`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", LOADER, str(root), *COMMAND],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    old, new = [], []
    for _ in range(args.repeat):
        old.append(run(args.baseline))
        new.append(run(ROOT))
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| | baseline | this checkout | paired median ratio |")
    print("|---|---|---|---|")
    for i, what in enumerate(("wall (s)", "CPU (s)")):
        a, b = [x[i] for x in old], [x[i] for x in new]
        ratio = statistics.median(n / o for n, o in zip(b, a, strict=True))
        print(f"| {what} | {statistics.median(a):.2f} | {statistics.median(b):.2f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
