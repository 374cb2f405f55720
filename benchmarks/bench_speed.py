"""Compile speed in every output format, paired run by run with JAX lowering + compiling the
same program on fake CPU devices.

Usage: python benchmarks/bench_speed.py [--kinds chain,program,layers,shapes]
           [--sizes 200,1000,2000] [--repeat 3] [--formats text,json,md,latex] [--no-jax]

Programs (benchmarks/gen.py): `chain` (the plain f32 chain of Case 1 / Case 3 einsums on a 4x2
mesh), `program` (the project's MLP chain: bf16, gelu, rotating shardings, mesh 2x4),
`layers` (LLaMA 3 8B transformer layers, FSDP + TP on 2x4; n counts layers, 9 einsums each)
and `shapes` (a chain whose shardings are drawn at random: many distinct statement shapes).
Each run is one whole process; its CPU time (user + system) and peak RSS come from `wait4`.
Within a repetition every format and JAX run back to back, and each ratio is taken within the
repetition (the machine is shared and noisy); the tables give medians. The marginal cost per
einsum is the slope between the smallest and the largest size, the growth exponent the slope
of log(time) against log(einsums) between them.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import gen  # noqa: E402

PY = sys.executable
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPATH"] = str(ROOT)
"""Byte-code caches as an installed package has them (a shell may set PYTHONDONTWRITEBYTECODE:
then every module is compiled from source on every run, 0.1 s of a small compile)."""


# The child reports its own peak RSS: `wait4`'s would include the parent's pages at fork.
REPORT_RSS = (
    "import atexit, resource, runpy, sys; atexit.register(lambda: print('MAXRSS', "
    "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__') "
    "if sys.argv[0].endswith('.py') else runpy.run_module(sys.argv[0], "
    "run_name='__main__', alter_sys=True)"
)


def run(cmd: list[str]) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MB) of one whole process, output discarded: `cmd` is a module
    name or a script, then its arguments."""
    proc = subprocess.Popen(
        [PY, "-c", REPORT_RSS, *cmd],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err[-2000:]!r}")
    rss = [line.split()[1] for line in err.splitlines() if line.startswith("MAXRSS ")]
    return usage.ru_utime + usage.ru_stime, int(rss[-1]) / 1024 if rss else float("nan")


def program_text(kind: str, n: int) -> str:
    if kind == "program":
        return gen.program(n).replace("mesh X=8, Y=4", "mesh X=2, Y=4")
    return {"chain": gen.chain, "layers": gen.layers, "shapes": gen.shapes}[kind](n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kinds", default="chain,program,layers,shapes")
    ap.add_argument("--sizes", default="200,1000,2000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--formats", default="text,json,md,latex")
    ap.add_argument("--no-jax", action="store_true")
    args = ap.parse_args()
    formats = args.formats.split(",")
    from importlib.metadata import version

    jv = "" if args.no_jax else f"; jax {version('jax')}"
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}{jv}; CPU time of each whole process, medians of "
        f"{args.repeat}"
    )
    from benchmarks.bench_xla import jax_script

    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.kinds.split(","):
            sizes = [int(s) for s in args.sizes.split(",")]
            if kind == "layers":
                sizes = [max(1, n // 9) for n in sizes]  # about as many einsums
            print()
            print(f"### {kind}")
            print()
            print(
                "| n | einsums | format | shardc CPU (s) | peak RSS (MB) | JAX CPU (s) | "
                "shardc / JAX (paired median) |"
            )
            print("|---|---|---|---|---|---|---|")
            slopes: dict[str, list[tuple[int, float]]] = {f: [] for f in formats}
            for n in sizes:
                text = program_text(kind, n)
                einsums = text.count("·_")
                shard = Path(tmp) / f"{kind}{n}.shard"
                shard.write_text(text)
                script = Path(tmp) / f"{kind}{n}_jax.py"
                if not args.no_jax:
                    script.write_text(jax_script(text))
                ours: dict[str, list[tuple[float, float]]] = {f: [] for f in formats}
                theirs: list[float] = []
                for _ in range(args.repeat):
                    for f in formats:
                        ours[f].append(run(["shardc", "compile", str(shard), "--format", f]))
                    if not args.no_jax:
                        theirs.append(run([str(script)])[0])
                for f in formats:
                    t = statistics.median(c for c, _ in ours[f])
                    rss = max(m for _, m in ours[f])
                    slopes[f].append((einsums, t))
                    if theirs:
                        ratio = statistics.median(
                            c / j for (c, _), j in zip(ours[f], theirs, strict=True)
                        )
                        jt = f"{statistics.median(theirs):.2f}"
                        rt = f"{ratio:.2f}"
                    else:
                        jt = rt = "-"
                    print(f"| {n} | {einsums} | {f} | {t:.2f} | {rss:.0f} | {jt} | {rt} |")
            print()
            for f in formats:
                (e0, t0), (e1, t1) = slopes[f][0], slopes[f][-1]
                if e1 > e0:
                    per = (t1 - t0) / (e1 - e0) * 1e3
                    growth = math.log(t1 / t0) / math.log(e1 / e0)
                    print(
                        f"- {f}: {per:.2f} ms per einsum from {e0} to {e1} einsums; "
                        f"growth exponent {growth:.2f}"
                    )


if __name__ == "__main__":
    main()
