"""The warm path (a notebook, the language server): a book example compiled once, then compiled
again in the same process after a small edit to one statement, with and without printing the
text report. CPU time of each recompile, medians.

Usage: python benchmarks/bench_warm.py [--repeat 11] [--stats]

Edits, each applied alone to the original program: a size (`B=128` -> `B=256`), the last
contraction's requested layout (its first subscript dropped), and an appended comment (the text
changes, the program does not).
`passes.memo.clear()` empties the process-wide caches before the cold compile, so "cold" is a
first compile after the imports.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROGRAMS = (
    "programs/q4-matmul-strategies.shard",
    "programs/mlp-fsdp-train.shard",
    "programs/mlp-fsdp-tp-layers-train.shard",
)


def edits(text: str) -> dict[str, str]:
    """Three small edits of `text`: a size, the last statement's request, a comment."""
    out = {}
    m = re.search(r"\b([A-Z])=(\d+)", text.split("dim", 1)[1]) if "dim" in text else None
    if m:
        out["a size"] = text.replace(m.group(0), f"{m.group(1)}={int(m.group(2)) * 2}", 1)
    lines = text.rstrip("\n").split("\n")
    for k in range(len(lines) - 1, -1, -1):
        m2 = re.match(r"^(\w+)(\[[^\]]*\])(\s*=\s*.*·_.*)$", lines[k])
        if m2:  # the request without its first subscript: `Out[B_X, D]` -> `Out[B, D]`
            request = re.sub(r"_\{?[A-Z]+\}?", "", m2.group(2), count=1)
            if request != m2.group(2):
                changed = lines[:k] + [m2.group(1) + request + m2.group(3)] + lines[k + 1 :]
                out["a request"] = "\n".join(changed) + "\n"
            break
    out["a comment"] = text + "# edited\n"
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument(
        "--stats",
        action="store_true",
        help="then each process-wide table's hits, misses and size (passes.memo)",
    )
    args = ap.parse_args()
    import shardc
    from shardc.passes import memo

    shardc.compile("mesh X=2\ndim I=4\nA: f32[I_X]\nB = A\n")  # imports, grammar tables
    print("| program | edit | cold compile (ms) | warm compile (ms) | warm compile + text (ms) |")
    print("|---|---|---|---|---|")
    for path in PROGRAMS:
        text = (ROOT / path).read_text()
        memo.clear()
        t = time.process_time()
        shardc.compile(text).to_text()
        cold = (time.process_time() - t) * 1e3
        for what, edited in edits(text).items():
            compiled, printed = [], []
            for k in range(args.repeat):
                source = edited if k % 2 == 0 else text  # alternate: an edit, then back
                t = time.process_time()
                r = shardc.compile(source)
                t1 = time.process_time()
                r.to_text()
                t2 = time.process_time()
                if k % 2 == 0:
                    compiled.append((t1 - t) * 1e3)
                    printed.append((t2 - t) * 1e3)
            print(
                f"| {Path(path).name} | {what} | {cold:.0f} | "
                f"{statistics.median(compiled):.1f} | {statistics.median(printed):.1f} |"
            )
    if args.stats:
        print("\n| table | hits | misses | entries | size |\n|---|---|---|---|---|")
        for s in memo.stats():
            print(f"| `{s.name}` | {s.hits:,} | {s.misses:,} | {s.size:,} | {s.maxsize:,} |")


if __name__ == "__main__":
    main()
