"""The report's API in-process against another checkout, paired run by run: `value` with a
size bound (1000 calls), `at` (20 points), and writing the text, JSON, Markdown, LaTeX and HTML
of a compiled report (the document model and its writers).

Usage: python benchmarks/bench_report.py --baseline DIR [--repeat 5] [--program PATH]
DIR is a checkout (`git worktree add /tmp/base COMMIT`), loaded without installing it, as
bench_regions.py does. Prints a Markdown table: CPU seconds (medians) and the median of the
per-run ratios now/before.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_regions import LOADER  # noqa: E402

CHILD = LOADER.replace(
    "from shardc.cli import main\nsys.exit(main(sys.argv[1:]))",
    r"""
import json, time
import shardc
program = sys.argv[1]
out = {}
def timed(name, fn):
    t = time.process_time(); fn(); out[name] = time.process_time() - t
r = shardc.compile(program)
size = r.program.dims[0][0]
timed("value x1000", lambda: [r.value("t_lower_s", **{size: 1024 + i}) for i in range(1000)])
timed("at x20", lambda: [r.at(**{size: 2048 * (i + 1)}) for i in range(20)])
def fresh():
    return shardc.compile(program)
for fmt, write in (("text", lambda x: x.to_text()), ("json", lambda x: x.to_json()),
                   ("md", lambda x: x.to_markdown()), ("latex", lambda x: x.to_latex()),
                   ("html", lambda x: x._repr_html_())):
    rs = [fresh() for _ in range(3)]
    timed(f"write {fmt} x3", lambda: [write(x) for x in rs])
print(json.dumps(out))
""",
)


def run(root: Path, program: str) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), program],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--program", default=str(ROOT / "programs" / "mlp-fsdp-tp-layers-train.shard"))
    args = ap.parse_args()
    old: list[dict[str, float]] = []
    new: list[dict[str, float]] = []
    for _ in range(args.repeat):
        old.append(run(args.baseline, args.program))
        new.append(run(ROOT, args.program))
    print("| operation | before (s) | now (s) | ratio now/before (paired median) |")
    print("|---|---|---|---|")
    for key in old[0]:
        ratio = statistics.median(n[key] / o[key] for n, o in zip(new, old, strict=True))
        print(
            f"| {key} | {statistics.median(o[key] for o in old):.3f} | "
            f"{statistics.median(n[key] for n in new):.3f} | {ratio:.2f} |"
        )


if __name__ == "__main__":
    main()
