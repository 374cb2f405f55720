"""Any shardc command, whole process, against the same command from another checkout, paired
run by run: CPU-time medians and the median of the per-run ratios.

Usage: python benchmarks/bench_paired.py --baseline DIR [--repeat 5] -- COMMAND ARGS...
  e.g. ... --baseline /tmp/start -- plan --model llama3-70b --hw tpu-v5p --chips 8960
DIR is a checkout (`git worktree add /tmp/start <commit>`), run without installing it (the
package-dir mapping by hand, as bench_regions.py does).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_regions import cpu  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    old, new = [], []
    for _ in range(args.repeat):
        old.append(cpu(args.baseline, cmd))
        new.append(cpu(ROOT, cmd))
    ratio = statistics.median(n / o for n, o in zip(new, old, strict=True))
    print(
        f"| `shardc {' '.join(cmd)}` | {statistics.median(old):.2f} | "
        f"{statistics.median(new):.2f} | {ratio:.2f} |"
    )


if __name__ == "__main__":
    main()
