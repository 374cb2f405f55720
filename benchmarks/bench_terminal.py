"""What rich costs at start-up: wall-clock milliseconds (medians) of a short command piped, on a
terminal with `NO_COLOR=1` (no rich: the text is written as is) and on a terminal with colour
(rich imported to colour the headers); and rich's own import times (`python -X importtime`).

    python benchmarks/bench_terminal.py --repeat 15

The terminal is a pseudo-terminal from `script -qc` (util-linux); without `script` only the
piped runs and the import times are measured.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

COMMAND = [sys.executable, "-m", "shardc", "hw", "show", "tpu-v5e"]


def _walls(
    runs: list[tuple[str, list[str], dict[str, str]]], repeat: int
) -> list[tuple[str, float]]:
    """Each run's median wall time in ms; the runs interleaved (one of each per round), so
    that a change of the machine's load falls on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    for _ in range(repeat):
        for name, argv, env in runs:
            start = time.perf_counter()
            subprocess.run(
                argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
            )
            times[name].append(time.perf_counter() - start)
    return [(name, statistics.median(t) * 1e3) for name, t in times.items()]


def _import_ms(module: str, repeat: int) -> float:
    """The cumulative import time of `module` in a fresh interpreter, in ms (the median)."""
    times = []
    for _ in range(repeat):
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"import {module}"],
            capture_output=True,
            text=True,
            check=True,
        ).stderr
        last = [line for line in err.splitlines() if re.search(rf"\|\s+{re.escape(module)}$", line)]
        times.append(int(last[-1].split("|")[1]) / 1e3)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=15)
    args = p.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"
    runs = [("piped", COMMAND, env)]
    if shutil.which("script"):
        inner = ["script", "-qec", shlex.join(COMMAND), "/dev/null"]
        runs += [
            ("terminal, NO_COLOR=1", inner, {**env, "NO_COLOR": "1"}),
            ("terminal, colour", inner, env),
        ]
    rows = _walls(runs, args.repeat)
    print(f"`{' '.join(['shardc', *COMMAND[3:]])}`, median of {args.repeat} runs")
    print("| run | wall ms |\n|---|---|")
    for name, ms in rows:
        print(f"| {name} | {ms:.0f} |")
    print("\n| import | ms |\n|---|---|")
    for module in ("rich.console", "rich.table", "rich.progress"):
        print(f"| `{module}` | {_import_ms(module, args.repeat):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
