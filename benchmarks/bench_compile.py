"""Compile-time benchmarks: whole-process `shardc compile` of every program in programs/, a
generated N-statement program, and where the time goes (per pass, and at start-up).

Usage: python benchmarks/bench_compile.py [--repeat 5] [--sizes 10,100,500,1000,2000]
Prints Markdown tables for docs/benchmarks.md. Timings are medians of --repeat runs.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.gen import program  # noqa: E402


def whole_process(path: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "shardc.cli.app", "compile", str(path)],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def phases(text: str) -> dict[str, float]:
    """Seconds per phase for one in-process compile (modules already imported)."""
    from shardc import hardware
    from shardc.driver.report import Report
    from shardc.lang.parser import parse
    from shardc.lang.source import Source
    from shardc.passes.context import Context
    from shardc.passes.derive_cost import derive_cost
    from shardc.passes.lower import insert_collectives
    from shardc.passes.validate import validate

    out: dict[str, float] = {}
    src = Source("gen.shard", text)
    ctx = Context(src)
    chip = hardware.load("tpu-v5p")
    t = time.perf_counter()
    prog = parse(src, ctx.diagnostics)
    out["parse"] = time.perf_counter() - t
    t = time.perf_counter()
    prog, bindings = validate(prog, ctx)
    out["validate"] = time.perf_counter() - t
    t = time.perf_counter()
    compiled = insert_collectives(prog, ctx, chip=chip, bindings=bindings)
    out["insert-collectives"] = time.perf_counter() - t
    t = time.perf_counter()
    cost = derive_cost(compiled, ctx, chip=chip, bindings=bindings)
    out["derive-cost"] = time.perf_counter() - t
    t = time.perf_counter()
    report = Report(cost, chip, {})
    report.evaluate()
    out["evaluate (lambdify)"] = time.perf_counter() - t
    t = time.perf_counter()
    report.to_text()
    out["print text"] = time.perf_counter() - t
    return out


def startup(repeat: int) -> dict[str, float]:
    probes = {
        "python -c pass": "pass",
        "import sympy": "import sympy",
        "import lark": "import lark",
        "import shardc.cli.app (no sympy)": "import shardc.cli.app",
        "build the Lark parser": "from shardc.lang.parser import _lark; _lark()",
    }
    out = {}
    for name, code in probes.items():
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
            times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="10,100,500,1000,2000")
    ap.add_argument("--profile", type=int, default=0, help="cProfile a program of N statements")
    args = ap.parse_args()
    print(
        f"machine: {platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {platform.system()}"
    )
    print()
    print("| program | whole-process `shardc compile` (median s) |")
    print("|---|---|")
    for path in sorted((ROOT / "programs").glob("*.shard")):
        print(f"| {path.name} | {whole_process(path, args.repeat):.3f} |")
    print()
    print("| start-up step | median s (whole process) |")
    print("|---|---|")
    for name, t in startup(args.repeat).items():
        print(f"| {name} | {t:.3f} |")
    print()
    print(
        "| statements | whole process (median s) | parse | validate | insert-collectives | "
        "derive-cost | evaluate | print |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            text = program(n)
            path = Path(tmp) / f"gen{n}.shard"
            path.write_text(text)
            whole = whole_process(path, max(1, args.repeat // 2))
            ph = phases(text)
            cells = " | ".join(f"{ph[k]:.3f}" for k in ph)
            print(f"| {n} | {whole:.3f} | {cells} |")
    if args.profile:
        pr = cProfile.Profile()
        pr.enable()
        phases(program(args.profile))
        pr.disable()
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(25)
        print("```")
        print(s.getvalue())
        print("```")


if __name__ == "__main__":
    main()
