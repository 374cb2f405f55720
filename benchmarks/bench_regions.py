"""The price of regions: compiling a generated N-statement program with its sizes symbolic
(`dim B, D, F`), where every contraction's plan depends on them, as a whole process, against
the same process from an older checkout (before regions), paired run by run.

Usage: python benchmarks/bench_regions.py --baseline DIR [--statements 200] [--repeat 5]
  DIR is a checkout of the commit to compare with (e.g. `git worktree add /tmp/base 34ff0ca`).
Prints a Markdown table for docs/benchmarks.md: CPU time of the child process (user + system),
medians, and the median of the per-run ratios, for each output format.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.gen import program  # noqa: E402

# Runs the CLI of the checkout at argv[1] without installing it: the package-dir mapping of
# pyproject.toml, by hand (dsl/ is `shardc`; passes/, hardware/, grammar/ its subpackages).
IMPORT_CHECKOUT = r"""
import importlib.util, sys
root = sys.argv.pop(1)
def load(name, path, sub):
    spec = importlib.util.spec_from_file_location(name, f"{path}/__init__.py",
                                                  submodule_search_locations=[path])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    if sub:
        spec.loader.exec_module(mod)
    return spec, mod
spec, pkg = load("shardc", f"{root}/dsl", False)
for sub in ("passes", "hardware", "grammar"):
    load(f"shardc.{sub}", f"{root}/{sub}", True)
spec.loader.exec_module(pkg)
"""
LOADER = IMPORT_CHECKOUT + "from shardc.cli import main\nsys.exit(main(sys.argv[1:]))\n"


def cpu(root: Path, args: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-c", LOADER, str(root), *args],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--statements", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    text = program(args.statements).replace("dim B=65536, D=8192, F=32768", "dim B, D, F")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"gen{args.statements}-symbolic.shard"
        path.write_text(text)
        print("| format | before (s) | now (s) | ratio now/before (paired median) |")
        print("|---|---|---|---|")
        for fmt in ("text", "json", "md"):
            cmd = ["compile", str(path), "--format", fmt]
            old, new = [], []
            for _ in range(args.repeat):
                old.append(cpu(args.baseline, cmd))
                new.append(cpu(ROOT, cmd))
            ratio = statistics.median(n / o for n, o in zip(new, old, strict=True))
            print(
                f"| {fmt} | {statistics.median(old):.2f} | {statistics.median(new):.2f} | "
                f"{ratio:.2f} |"
            )


if __name__ == "__main__":
    main()
