"""shardc against JAX/XLA on the same programs: whole-process compile time from 10 to 2,000
statements, peak memory, and the rate of sweeping a report formula over a grid of sizes.

Usage: python benchmarks/bench_xla.py [--sizes 10,50,100,200,500,1000,2000] [--repeat 3]
Needs JAX (`pip install '.[jax]'`). Prints Markdown tables (docs/xla-check.md). The programs
are benchmarks/gen.py's MLP chain on a mesh X=2, Y=4: 8 fake CPU devices for JAX.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.gen import program  # noqa: E402

BOOK_EXAMPLE = ROOT / "programs" / "q4-matmul-strategies.shard"
SHARDC = (
    "import resource, sys; from shardc.cli.app import main; code = main(['compile', sys.argv[1]]); "
    "print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); "
    "sys.exit(code)"
)
JAX_SCRIPT = """\
import json, os, resource, sys, time
t0 = time.perf_counter()
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count={devices}"
os.environ["JAX_PLATFORMS"] = "cpu"
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

mesh = Mesh(np.array(jax.devices()[:{devices}]).reshape({shape}), {axes},
            axis_types=(AxisType.Auto,) * {n_axes})
{prelude}
{function}
args = [{args}]
t1 = time.perf_counter()
lowered = jax.jit(program).lower(*args)
t2 = time.perf_counter()
compiled = lowered.compile()
t3 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "lower": t2 - t1, "compile": t3 - t2,
                  "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}}))
"""


def chain(n: int) -> str:
    """gen.py's chain of n statements on 8 devices (X=2, Y=4; every size stays divisible)."""
    return program(n).replace("mesh X=8, Y=4", "mesh X=2, Y=4")


def jax_script(text: str) -> str:
    """A standalone script lowering and compiling the whole program with JAX (no shardc)."""
    from shardc.lang.source import Source
    from shardc.tools.xla.check import Prepared, prepare
    from shardc.tools.xla.codegen import PRELUDE, program_source, spec_args
    from shardc.tools.xla.lower import JAX_DTYPES

    p = prepare(Source("gen.shard", text))
    assert isinstance(p, Prepared)
    function = program_source(p.statements)
    defined: set[str] = set()
    args = []
    for st in p.statements:
        for x in st.inputs:
            if x.name not in defined:
                shape = tuple(p.sizes[d] for d in x.dims)
                args.append(
                    f"jax.ShapeDtypeStruct({shape}, jnp.{JAX_DTYPES[x.dtype]}, "
                    f"sharding=spec({spec_args(x.layout)}))"
                )
                defined.add(x.name)
        defined.add(st.target)
    return JAX_SCRIPT.format(
        devices=8,
        shape=tuple(p.mesh.values()),
        axes=tuple(p.mesh),
        n_axes=len(p.mesh),
        prelude=PRELUDE,
        function=function,
        args=",\n        ".join(args),
    )


def timed(cmd: list[str]) -> tuple[float, str, str]:
    t0 = time.perf_counter()
    run = subprocess.run(
        cmd,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return time.perf_counter() - t0, run.stdout, run.stderr


def shardc_run(path: Path) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one whole-process `shardc compile`."""
    t, _, err = timed([sys.executable, "-c", SHARDC, str(path)])
    rss = re.search(r"MAXRSS (\d+)", err)
    return t, (int(rss.group(1)) / 1024 if rss else float("nan"))


def jax_run(path: Path) -> tuple[float, dict]:
    t, out, _ = timed([sys.executable, str(path)])
    return t, json.loads(out.strip().splitlines()[-1])


def sweep_rate(points: int = 1_000_000) -> tuple[str, float]:
    """Points per second evaluating two-chip's T_lower over a grid of (B, D, F) with numpy."""
    import numpy as np
    import sympy as sp

    import shardc

    report = shardc.compile(str(ROOT / "programs" / "two-chip.shard"))
    expr = report.totals["t_lower_s"]
    env = report.environment()
    free = sorted(expr.free_symbols - set(env), key=lambda s: s.name)
    fn = sp.lambdify(
        free, expr.subs({s: v for s, v in env.items() if s in expr.free_symbols}), modules="numpy"
    )
    side = round(points ** (1 / len(free)))
    axes = np.meshgrid(*[np.linspace(1024, 65536, side) for _ in free], indexing="ij")
    fn(*axes)  # warm up
    t0 = time.perf_counter()
    fn(*axes)
    return f"T_lower({', '.join(s.name for s in free)})", side ** len(free) / (
        time.perf_counter() - t0
    )


def importtime() -> list[tuple[str, float]]:
    """The costliest imports of a book-example compile (cumulative, from -X importtime)."""
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "shardc.cli.app", "compile", str(BOOK_EXAMPLE)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    rows = []
    for line in run.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if m and len(m.group(2)) <= 2:
            rows.append((m.group(3), int(m.group(1)) / 1e6))
    return sorted(rows, key=lambda r: -r[1])[:6]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10,50,100,200,500,1000,2000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import jax

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {platform.system()}; jax {jax.__version__}"
    )
    print()
    print(
        "| statements | einsums | shardc compile (s) | shardc peak RSS (MB) | ms / statement | "
        "JAX whole process (s) | JAX lower + compile (s) | JAX peak RSS (MB) | "
        "JAX / shardc |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            text = chain(n)
            shard, script = Path(tmp) / f"gen{n}.shard", Path(tmp) / f"gen{n}_jax.py"
            shard.write_text(text)
            script.write_text(jax_script(text))
            ours = [shardc_run(shard) for _ in range(args.repeat)]
            theirs = [jax_run(script) for _ in range(max(1, args.repeat - 1))]
            t_ours = statistics.median(t for t, _ in ours)
            t_jax = statistics.median(t for t, _ in theirs)
            inner = statistics.median(d["lower"] + d["compile"] for _, d in theirs)
            einsums = text.count("·_")
            print(
                f"| {n} | {einsums} | {t_ours:.3f} | {max(m for _, m in ours):.0f} | "
                f"{1e3 * t_ours / n:.2f} | {t_jax:.3f} | {inner:.3f} | "
                f"{max(d['maxrss_kib'] for _, d in theirs) / 1024:.0f} | "
                f"{t_jax / t_ours:.2f} |"
            )
    print()
    book = statistics.median(shardc_run(BOOK_EXAMPLE)[0] for _ in range(5))
    print(
        f"whole-process `shardc compile {BOOK_EXAMPLE.relative_to(ROOT)}`: {book:.3f} s "
        "(median of 5)"
    )
    print()
    print("| import (cumulative, top level) | s |")
    print("|---|---|")
    for name, t in importtime():
        print(f"| {name} | {t:.3f} |")
    print()
    what, rate = sweep_rate()
    print(
        f"sweep: {what} of programs/two-chip.shard over a numpy grid: {rate:.3g} points/s "
        "(one sympy.lambdify, numpy backend)"
    )


if __name__ == "__main__":
    main()
