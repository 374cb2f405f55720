"""Validation on one chip: shardc's T_lower and T_expected against single ops timed on an H200.

The measured rows live in the H200's calibration file (`hardware/calibration/h200.toml`, each
`[[rows]]` with its median, minimum and 90th percentile). For every row this script writes a
one-op .shard program, compiles it against the chip (with its calibration) and prints the
Markdown table of docs/validation.md ("One chip"):

    python benchmarks/validate_one_chip.py

`--fit TABLE.md -o FILE` reads a measured table (the Markdown of single-op timings: `| case |
median | min | p90 |`, case names as below), marks the rows fitted and held out, fits the
calibration (`shardc.tools.calibrate.fit`) and writes the calibration file:

    python benchmarks/validate_one_chip.py --fit measured-h200.md -o hardware/calibration/h200.toml

Case names are those of `shardc calibrate`'s full run (`shardc.tools.calibrate.bench.plan`):
`square_<n>` is [n, n] x [n, n]; `sweep_B<n>` is [B, 8192] x [8192, 8192];
`ew_<add|mul|silu_mul>_<size>MiB` two bf16 operands of that size; `f32_8192_<precision>` an f32
8192^3 product at jax.lax.Precision DEFAULT, HIGH or HIGHEST; `f16_8192`.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path

from shardc import hardware
from shardc.driver.api import compile
from shardc.hardware.calibration import Calibration, ClockFit, Row, calibration_toml
from shardc.tools.calibrate import bench
from shardc.tools.calibrate.fit import fit, table

DEPENDS = {
    "f32": "f32 rate: the chip file's TF32 (default, high) or f32 (highest) rate, "
    "with --matmul-precision",
    "silu": "fusion: silu and * in one kernel (3 array passes), as XLA fuses them",
}


def program(name: str) -> str:
    """A one-op .shard program for a case of `shardc calibrate` (`bench.case`): the work the
    bench times, with its held-out rows (every other size of each sweep, every fused
    silu(A) * B, the f16 and f32 products) as the bench marks them.

    >>> print(program("sweep_B16"))
    # sweep_B16
    dim M=16, K=8192, N=8192
    A: bf16[M, K]
    W: bf16[K, N]
    C = A ·_K W
    <BLANKLINE>
    """
    case = bench.case(name)
    if case.kind == "matmul":
        m, k, n = case.shape
        dims = f"M={m}, K={k}, N={n}"
        body = f"A: {case.dtype}[M, K]\nW: {case.dtype}[K, N]\nC = A ·_K W\n"
    else:
        r, c = case.shape
        dims = f"R={r}, M={c}"
        expr = {"add": "A + B", "mul": "A * B", "silu_mul": "silu(A) * B"}[case.op]
        body = f"A: {case.dtype}[R, M]\nB: {case.dtype}[R, M]\nC = {expr}\n"
    return f"# {name}\ndim {dims}\n{body}"


def row(name: str, median: float, low: float, p90: float) -> Row:
    """A calibration row of a measured table: the bench's case timed at these seconds."""
    return bench.case(name).row(median, low, p90)


def _seconds(text: str) -> float:
    value, unit = text.split()
    return float(value) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def read_table(path: str) -> list[Row]:
    """The rows of a measured Markdown table, and the dispatch floor from its text."""
    text = Path(path).read_text(encoding="utf-8")
    rows = []
    floor = re.search(r"dispatch floor[^.]*?was\s+(\d+(?:\.\d+)?) us", text)
    if floor:
        t = float(floor[1]) * 1e-6
        rows.append(row("dispatch", t, t, t))
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"[a-z0-9_A-Z]+", cells[0]) and cells[0] != "case":
            rows.append(row(cells[0], *(_seconds(c) for c in cells[1:])))
    return rows


def read_clock(path: str) -> ClockFit | None:
    """The SM clocks the table's text reports: `SM clock <boost> MHz ..., <sustained> MHz at
    <power> W` (the start of a loop, and the power-limited clock of the large products).

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
    ...     _ = f.write("SM clock 1980 MHz idle-to-start, 1725 MHz at 566 W during the runs")
    >>> read_clock(f.name); os.unlink(f.name)
    ClockFit(boost_mhz=1980.0, sustained_mhz=1725.0, power_w=566.0)
    """
    text = Path(path).read_text(encoding="utf-8")
    m = re.search(
        r"SM clock\s+(\d+(?:\.\d+)?)\s*MHz[^.]*?(\d+(?:\.\d+)?)\s*MHz\s+at\s+"
        r"(\d+(?:\.\d+)?)\s*W",
        text,
    )
    return ClockFit(float(m[1]), float(m[2]), float(m[3])) if m else None


def write_fit(table_path: str, out: str, chip_name: str = "h200") -> None:
    chip = hardware.load(chip_name)
    clock = read_clock(table_path)
    f = fit(
        read_table(table_path),
        lambda d, p: chip.matmul_rate(d, p).value,
        chip.hbm_bw,
        clock.k_boost if clock is not None else 1.0,
        exposed=True,
    )
    print(table(f), file=sys.stderr)
    cal = Calibration(
        chip.name,
        f.eta_mxu,
        f.eta_hbm,
        f.t_call,
        f.t_dispatch,
        "measured",
        (
            ("kind", "measured"),
            (
                "command",
                "single ops timed with JAX: a loop of calls lasting at least 5 ms ended by "
                "block_until_ready, 30 samples after 3 warm-up calls; fitted by "
                "benchmarks/validate_one_chip.py --fit",
            ),
            ("date", "2026-11-27"),
            ("software", "JAX 0.11.2, XLA:GPU (cuBLASLt)"),
            (
                "device",
                "NVIDIA H200 SXM (SM clock 1980 MHz at start, 1725 MHz power-limited at "
                "566 W in large products)",
            ),
            (
                "fit",
                "least squares on relative error of the median over the rows with role "
                '"fit"; "held-out" rows (every other size, the fused silu(A) * B, the f32 '
                "products at each precision) are predicted",
            ),
        ),
        f.rows,
        # one chip measures no network: keep the shipped collective figures
        network=chip.calibration.network if chip.calibration is not None else (),
        clock=clock,
        exposed=f.exposed,
    )
    header = (
        "NVIDIA H200 SXM calibration: efficiency figures fitted to single ops timed on one "
        "GPU.\nWritten by benchmarks/validate_one_chip.py --fit; the rows are the "
        "measurements."
    )
    Path(out).write_text(calibration_toml(cal, header), encoding="utf-8")


def _fmt(t: float) -> str:
    return f"{t * 1e3:.3f} ms" if t >= 1e-3 else f"{t * 1e6:.1f} us"


def validate(
    chip_name: str = "h200", calibration: str | None = None, rows: str | None = None
) -> str:
    """The Markdown table of docs/validation.md: every measured row against T_lower and
    T_expected of its one-op program (the chip's shipped calibration, or the file
    `calibration`, as `shardc calibrate` writes it). `rows`: price the rows of this file (another
    run) with that calibration instead of the calibration's own rows."""
    chip = hardware.load(chip_name)
    if calibration is not None:
        chip = hardware.load_calibration(calibration, chip)
    cal = chip.calibration
    assert cal is not None, f"{chip_name} has no calibration"
    if rows is not None:
        other = hardware.load_calibration(rows, chip).calibration
        assert other is not None
        cal = replace(cal, rows=other.rows)
    out = [
        "| case | role | T_lower | T_expected | median | min | T_lower/min | "
        "T_expected/median | depends on |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in cal.rows:
        if r.kind == "dispatch":
            continue
        rep = compile(
            program(r.case), hw=chip, name=f"{r.case}.shard", matmul_precision=r.precision
        )  # type: ignore[arg-type]
        low = rep.value(rep.totals["t_lower_s"])
        exp = rep.value(rep.totals["t_expected_s"])
        dep = next((v.split(":")[0] for k, v in DEPENDS.items() if k in r.case), "")
        if r.dtype == "f16":
            dep = "f16 rate"
        out.append(
            f"| {r.case} | {r.role} | {_fmt(low)} | {_fmt(exp)} | {_fmt(r.median_s)} | "
            f"{_fmt(r.min_s)} | {low / r.min_s:.2f} | {exp / r.median_s:.2f} | {dep} |"
        )
    return "\n".join(out) + "\n"


PROGRAMS = Path(__file__).parent / "one_chip"
"""The whole programs timed on the chip (benchmarks/device_one_chip.sh)."""


def read_programs(path: str) -> dict[str, tuple[float, float]]:
    """Each program's (median, fastest) seconds as one jit, from the output of the scripts
    `shardc export-jax` writes (`## NAME` before each program's table, its `all` row)."""
    out: dict[str, tuple[float, float]] = {}
    name = ""
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            name = line[3:].strip()
        cells = line.split()
        if name and cells[:1] == ["all"]:
            out[name] = (float(cells[1]) * 1e-3, float(cells[3]) * 1e-3)
    return out


def validate_programs(chip_name: str, measured: str) -> str:
    """The whole programs of benchmarks/one_chip/ against their measured times: T_lower must
    stay under the fastest call, T_expected is compared with the median."""
    chip = hardware.load(chip_name)
    out = [
        "| program | T_lower | T_expected | median | min | T_lower/min | median/T_lower | "
        "T_expected/median |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, (median, low) in read_programs(measured).items():
        source = (PROGRAMS / f"{name}.shard").read_text(encoding="utf-8")
        rep = compile(source, hw=chip, name=f"{name}.shard")
        t_low = rep.value(rep.totals["t_lower_s"])
        t_exp = rep.value(rep.totals["t_expected_s"])
        out.append(
            f"| {name} | {_fmt(t_low)} | {_fmt(t_exp)} | {_fmt(median)} | {_fmt(low)} | "
            f"{t_low / low:.2f} | {median / t_low:.2f} | {t_exp / median:.2f} |"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fit", metavar="TABLE.md", help="fit the calibration to a measured table")
    p.add_argument("-o", "--output", help="with --fit: the calibration file to write")
    p.add_argument("--hw", default="h200")
    p.add_argument(
        "--programs",
        metavar="OUTPUT.txt",
        help="the whole programs' table instead, from the output of benchmarks/device_one_chip.sh",
    )
    p.add_argument(
        "--rows",
        metavar="FILE",
        help="the measured rows of this calibration file (another run), priced with the "
        "chip's calibration",
    )
    p.add_argument(
        "--calibration",
        metavar="FILE",
        help="validate the rows of this calibration file (`shardc calibrate -o FILE`) "
        "instead of the chip's shipped one",
    )
    args = p.parse_args()
    if args.fit:
        if not args.output:
            p.error("--fit needs -o FILE")
        write_fit(args.fit, args.output, args.hw)
        return
    if args.programs:
        sys.stdout.write(validate_programs(args.hw, args.programs))
        return
    sys.stdout.write(validate(args.hw, args.calibration, args.rows))


if __name__ == "__main__":
    main()
