"""`shardc calibrate`: time micro-benchmarks with JAX on the local accelerator, fit the chip's
calibration (docs/calibration.md) and write it with its provenance.

Loaded by `shardc.cli.app` as an extension; imports only argparse until the command runs.
"""

from __future__ import annotations

import argparse
import sys

from shardc.cli.style import print_diagnostics

DESCRIPTION = """\
Time products across shapes, elementwise ops across sizes, each dtype and matmul precision, and
the dispatch floor with JAX on the first local device; fit eta_mxu, eta_hbm, t_call and
t_dispatch against the chip's peaks (some rows fitted, the others predicted: held out); print
measured against fitted with residuals; and write the calibration file (-o FILE, or standard
output). Load it with `shardc compile --hw NAME --calibration FILE`."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="measure a chip's efficiency with JAX and write its calibration file",
        description=DESCRIPTION,
    )
    p.add_argument("--hw", required=True, help="the chip whose peaks the fit divides by")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the calibration here (default: standard output; the table of "
        "residuals then goes to standard error)",
    )
    p.add_argument(
        "--quick", action="store_true", help="fewer cases and samples (under a minute on one GPU)"
    )
    p.add_argument(
        "--cpu",
        action="store_true",
        help="run on the CPU with tiny sizes (the same code path, for CI)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shardc import hardware
    from shardc.driver.files import CliIOError, check_writable, write_text

    try:
        chip = hardware.load(args.hw)
    except hardware.HardwareError as exc:
        print_diagnostics(f"shardc: error[H001]: {exc}")
        return 1
    if args.output:
        try:
            check_writable(args.output, flag="-o")
        except CliIOError as exc:
            print_diagnostics(f"shardc: error: {exc}")
            return 2
    if args.cpu:
        import os

        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        import jax  # noqa: F401
    except ModuleNotFoundError:
        print(
            "shardc: error: `shardc calibrate` needs JAX (pip install 'shardc[jax]')",
            file=sys.stderr,
        )
        return 1
    from shardc.hardware.calibration import Calibration, calibration_toml
    from shardc.tools.calibrate import bench
    from shardc.tools.calibrate.fit import fit, table

    plan = bench.plan(args.quick, args.cpu)
    if sys.stderr.isatty():  # a rich bar with an ETA (shardc.cli.progress)
        from shardc.cli.progress import Progress

        bar = Progress(True, delay=0.0)
        try:
            rows = bench.run(plan, bar.update)
        finally:
            bar.done()
    else:
        rows = bench.run(plan, _bar)
    # the clocks are read beside the runs, not by them: keep the shipped file's power cap
    clock = chip.calibration.clock if chip.calibration is not None else None
    f = fit(
        rows,
        lambda d, p: chip.matmul_rate(d, p).value,
        chip.hbm_bw,
        clock.k_boost if clock is not None else 1.0,
        exposed=True,
    )
    env = bench.environment()
    command = (
        "shardc calibrate --hw "
        + args.hw
        + (" --quick" if args.quick else "")
        + (" --cpu" if args.cpu else "")
    )
    import datetime

    cal = Calibration(
        chip.name,
        f.eta_mxu,
        f.eta_hbm,
        f.t_call,
        f.t_dispatch,
        "measured",
        (
            ("kind", "measured"),
            ("command", command),
            ("date", datetime.date.today().isoformat()),
            ("software", env["software"]),
            ("device", env["device"]),
            (
                "fit",
                "least squares on the relative error of the median over the rows with role "
                '"fit"; "held-out" rows are predicted',
            ),
        ),
        f.rows,
        # one chip measures no network: keep the shipped collective and overlap figures
        network=chip.calibration.network if chip.calibration is not None else (),
        overlap=chip.calibration.overlap if chip.calibration is not None else None,
        clock=clock,
        exposed=f.exposed,
    )
    header = f"{chip.display_name} calibration written by `{command}`."
    text = calibration_toml(cal, header)
    if args.output:
        try:
            write_text(args.output, text, flag="-o")
        except CliIOError as exc:
            print_diagnostics(f"shardc: error: {exc}")
            return 2
        print(table(f))
    else:
        print(table(f), file=sys.stderr)
        sys.stdout.write(text)
    return 0


def _bar(done: int, total: int, case: str) -> None:
    """Progress off a terminal: a line per case on standard error."""
    width = 30
    fill = width * done // max(total, 1)
    sys.stderr.write(f"[{'#' * fill}{'.' * (width - fill)}] {done}/{total} {case}\n")
    sys.stderr.flush()
