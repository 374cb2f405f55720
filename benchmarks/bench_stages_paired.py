"""Where a numeric compile's CPU time goes, against another checkout, paired run by run: each
stage of `shardc compile` timed inside one process whose modules are imported beforehand
(start-up left out), for the programs whose whole-process ratio issue 31 budgets.

Usage: python benchmarks/bench_stages_paired.py --baseline DIR [--repeat 3]
DIR is a checkout (`git worktree add /tmp/start <commit>`), run without installing it. Each run
is a fresh process per checkout (the process-wide memos start empty). Prints a Markdown table
for docs/benchmarks.md: per program and stage, the CPU-millisecond medians in each checkout.
A stage the baseline lacks (the whole-program search) shows as "-".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_numeric_paired import small  # noqa: E402
from benchmarks.bench_regions import IMPORT_CHECKOUT  # noqa: E402
from benchmarks.bench_small_paired import FSDP  # noqa: E402
from benchmarks.gen import layers, shapes  # noqa: E402

STAGES = (
    ("compile", ""),
    ("per-statement lowering", "shardc.passes.pipeline:InsertCollectives.run"),
    ("plan searches in it", "shardc.passes.einsum_plan:search_plans"),
    ("whole-program search", "shardc.driver.objective:_choose"),
    ("report text", "shardc.driver.sections:sections"),
)
"""(label, module:function): each stage's CPU time, summed over its calls (the lowering's
first call only: the search lowers its candidates through the same pass)."""

CHILD = (
    IMPORT_CHECKOUT
    + r"""
import importlib, io, contextlib, json, pkgutil, time
for pkg in ("shardc.passes", "shardc.driver", "shardc.lang", "shardc.hardware"):
    for info in pkgutil.walk_packages(importlib.import_module(pkg).__path__, pkg + "."):
        try:
            importlib.import_module(info.name)
        except Exception:
            pass
times = {}
def wrap(label, spec):
    mod, name = spec.split(":")
    try:
        owner = importlib.import_module(mod)
        *path, last = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        f = getattr(owner, last)
    except (ImportError, AttributeError):
        return
    depth = [0]
    first = label == "per-statement lowering"
    def timed(*a, **k):
        depth[0] += 1
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            depth[0] -= 1
            if depth[0] == 0 and not (first and label in times):
                times[label] = times.get(label, 0.0) + time.process_time() - t
    setattr(owner, last, timed)
    if not path:
        for m in list(sys.modules.values()):
            if m is not None and getattr(m, last, None) is f:
                setattr(m, last, timed)
for label, spec in json.loads(sys.argv[2]):
    if spec:
        wrap(label, spec)
from shardc.cli.app import main
t = time.process_time()
with contextlib.redirect_stdout(io.StringIO()):
    main(["compile", sys.argv[1]])
times["compile"] = time.process_time() - t
print(json.dumps(times))
"""
)


def stages(root: Path, program: Path) -> dict[str, float]:
    """One run: each stage's CPU seconds in a fresh process of the checkout at `root`."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(program), json.dumps(STAGES)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    times: dict[str, float] = json.loads(out.stdout.splitlines()[-1])
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    cases = {
        "FSDP step, B=4096": FSDP.format(b=4096),
        "attention-gqa-train": (ROOT / "programs" / "attention-gqa-train.shard").read_text(
            encoding="utf-8"
        ),
        "layers(4)": layers(4),
        "shapes(200)": shapes(200, 1),
        "oracle kinds x 50 (h100)": small(50),
    }
    print("| program | stage | before (CPU ms) | now (CPU ms) | now - before (ms) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in cases.items():
            path = Path(tmp) / "p.shard"
            path.write_text(text, encoding="utf-8")
            old: list[dict[str, float]] = []
            new: list[dict[str, float]] = []
            for _ in range(args.repeat):
                old.append(stages(args.baseline, path))
                new.append(stages(ROOT, path))
            for label, _ in STAGES:
                a = [r[label] * 1e3 for r in old if label in r]
                b = [r[label] * 1e3 for r in new if label in r]
                ma = f"{statistics.median(a):.0f}" if a else "-"
                mb = f"{statistics.median(b):.0f}" if b else "-"
                diff = statistics.median(b) - (statistics.median(a) if a else 0.0) if b else 0.0
                print(f"| {name} | {label} | {ma} | {mb} | {diff:+.0f} |", flush=True)


if __name__ == "__main__":
    main()
