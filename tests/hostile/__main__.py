"""`python -m tests.hostile [-k SUBSTRING] [-j N]`: run the corpus, print one row per case."""

from __future__ import annotations

import argparse
from concurrent.futures import ThreadPoolExecutor

from tests.hostile import harness
from tests.hostile.cases import CASES


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.hostile")
    ap.add_argument("-k", dest="pattern", default="")
    ap.add_argument("-j", dest="jobs", type=int, default=2)
    ap.add_argument("-v", dest="verbose", action="store_true")
    args = ap.parse_args()
    cases = [c for c in CASES if args.pattern in c.name]
    failed = 0
    with ThreadPoolExecutor(args.jobs) as pool:
        for case, o in zip(cases, pool.map(harness.run, cases), strict=True):
            status = "ok" if not o.problems else "FAIL"
            failed += bool(o.problems)
            print(
                f"{status:4} {case.name:34} exit={o.code} {o.seconds:5.1f}s "
                f"{o.cpu_seconds:5.1f}s CPU {o.peak_bytes / 2**20:5.0f}MiB"
            )
            for p in o.problems:
                print("       - " + p.replace("\n", "\n         ")[:800])
            if args.verbose:
                print("       stderr: " + o.stderr[-300:].replace("\n", "\n         "))
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
