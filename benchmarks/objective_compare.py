"""The whole-program objective of every program under tests/ and programs/, in this checkout
and (with --baseline) another, side by side: the search must never choose a plan whose
objective is higher than the baseline's (issue 31, the search beyond two options per product).

Usage: python benchmarks/objective_compare.py [--baseline DIR | --load FILE] [--save FILE]
[--checkout DIR] [--objective NAME ...]
DIR is a checkout (`git worktree add /tmp/start <commit>`), run without installing it. Prints one
line per program and objective whose value differs, then a count; exits 1 if any is higher here.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_regions import IMPORT_CHECKOUT  # noqa: E402

PROBE = (
    IMPORT_CHECKOUT
    + r"""
import json, warnings
from pathlib import Path
warnings.simplefilter("ignore")
import shardc
from shardc.driver.objective import objective_of, value
out = {}
for path in sys.argv[2:]:
    for objective in json.loads(sys.argv[1]):
        key = f"{path} {objective}"
        try:
            r = shardc.compile(Path(path).read_text(), objective=objective)
            out[key] = value(r, objective_of(r))
        except Exception as exc:  # a program that does not compile: not this comparison
            out[key] = type(exc).__name__
print(json.dumps(out))
"""
)


def values(checkout: Path, files: list[str], objectives: list[str | None]) -> dict[str, object]:
    """Each file's objective value (or the error it raised) compiled by `checkout`."""
    cmd = [sys.executable, "-c", PROBE, str(checkout), json.dumps(objectives), *files]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True)
    got: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", type=Path)
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the checkout to compare")
    ap.add_argument("--objective", action="append", default=None)
    ap.add_argument("--save", type=Path, help="write this checkout's values as JSON")
    ap.add_argument("--load", type=Path, help="the baseline's values, saved with --save")
    args = ap.parse_args()
    objectives = args.objective or [None, "t_lower", "t_upper", "step"]
    files = sorted(
        str(p.relative_to(ROOT))
        for d in ("tests", "programs")
        for p in (ROOT / d).rglob("*.shard")
        if "errors" not in p.parts
    )
    now = values(args.checkout.resolve(), files, objectives)
    if args.save:
        args.save.write_text(json.dumps(now, indent=1))
    if args.load:
        before = json.loads(args.load.read_text())
    elif args.baseline:
        before = values(args.baseline.resolve(), files, objectives)
    else:
        return
    worse = 0
    for key in sorted(now):
        a, b = before.get(key), now[key]
        if a == b:
            continue
        if isinstance(a, float) and isinstance(b, float):
            flag = "WORSE" if b > a * (1 + 1e-12) else "better" if b < a else "same"
            worse += flag == "WORSE"
            print(f"{flag:6} {key}: {a:.6g} -> {b:.6g} ({b / a:.4f}x)")
        else:
            print(f"differs {key}: {a} -> {b}")
    print(f"{len(now)} values compared, {worse} worse")
    sys.exit(1 if worse else 0)


if __name__ == "__main__":
    main()
