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
output). Load it with `shardc compile --hw NAME --calibration FILE`. With --from, fit the
median of earlier runs instead (no JAX needed)."""


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
    p.add_argument(
        "--from",
        dest="runs",
        nargs="+",
        metavar="FILE",
        help="time nothing: fit again to the rows of these calibration files (earlier runs "
        "of `shardc calibrate` on the chip), each case at its median over the runs",
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
    if args.runs and (args.cpu or args.quick):
        print_diagnostics("shardc: error: --from times nothing: drop --cpu and --quick")
        return 2
    if args.output:
        try:
            check_writable(args.output, flag="-o")
        except CliIOError as exc:
            print_diagnostics(f"shardc: error: {exc}")
            return 2
    measured = _merged(args, chip) if args.runs else _measured(args, chip)
    if isinstance(measured, int):
        return measured
    rows, clock, software, device, command = measured
    from shardc.hardware.calibration import Calibration, calibration_toml
    from shardc.tools.calibrate.fit import fit, table

    f = fit(
        rows,
        lambda d, p: chip.matmul_rate(d, p).value,
        chip.hbm_bw,
        clock.k_boost if clock is not None else 1.0,
        exposed=True,
    )
    import datetime

    shipped = chip.calibration
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
            ("software", software),
            ("device", device),
            (
                "fit",
                "least squares on the relative error of the median over the rows with role "
                '"fit"; "held-out" rows are predicted',
            ),
        ),
        f.rows,
        # one chip measures no network and no attention kernel: keep the shipped collective,
        # overlap and flash-attention figures
        network=shipped.network if shipped is not None else (),
        overlap=shipped.overlap if shipped is not None else None,
        clock=clock,
        exposed=f.exposed,
        attention=shipped.attention if shipped is not None else None,
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


def _measured(args: argparse.Namespace, chip):
    """Time the cases here: (rows, clock, software, device, command), or an exit status."""
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
    from shardc.tools.calibrate import bench

    plan = bench.plan(args.quick, args.cpu)
    clocks = bench.Clocks()
    reading = not args.cpu and clocks.start()
    try:
        if sys.stderr.isatty():  # a rich bar with an ETA (shardc.cli.progress)
            from shardc.cli.progress import Progress

            bar = Progress(True, delay=0.0)
            try:
                rows = bench.run(plan, bar.update, clocks if reading else None)
            finally:
                bar.done()
        else:
            rows = bench.run(plan, _bar, clocks if reading else None)
    finally:
        clocks.stop()
    # the power cap's clocks as read beside the runs (NVML); else the shipped file's
    limit = f", power limit {clocks.power_limit_w:.0f} W" if clocks.power_limit_w else ""
    clock, words = _clock(
        bench.clock_fit(clocks.samples, plan.cases) if reading else None,
        "read beside the runs (NVML)" + limit,
        chip,
        limit,
    )
    env = bench.environment()
    command = (
        f"shardc calibrate --hw {args.hw}"
        + (" --quick" if args.quick else "")
        + (" --cpu" if args.cpu else "")
    )
    return (
        rows,
        clock,
        env["software"],
        env["device"] + words,
        command,
    )


def _merged(args: argparse.Namespace, chip):
    """The earlier runs' rows at their median: (rows, clock, ...), or an exit status."""
    import os

    from shardc import hardware
    from shardc.tools.calibrate.merge import MergeError, merge

    runs = []
    for path in args.runs:
        try:
            loaded = hardware.load_calibration(path, chip)
        except hardware.HardwareError as exc:
            print_diagnostics(f"shardc: error[H001]: {exc}")
            return 1
        assert loaded.calibration is not None
        runs.append(loaded.calibration)
    try:
        m = merge(runs)
    except MergeError as exc:
        print_diagnostics(f"shardc: error: --from: {exc}")
        return 1
    clock, words = _clock(m.clock, f"the median of the {m.runs} runs", chip)
    names = " ".join(os.path.basename(p) for p in args.runs)
    dates = ", ".join(m.dates)
    device = (m.device.split("; SM clock")[0] if m.device else chip.display_name) + (
        f"; the median of {m.runs} runs ({dates})" + words
    )
    return m.rows, clock, m.software, device, f"shardc calibrate --hw {args.hw} --from {names}"


def _clock(found, source: str, chip, suffix: str = ""):
    """The clocks found (read or merged; `source` says where from), else the shipped file's:
    (clock, the provenance's words for it)."""
    if found is not None:
        return found, _clock_words(found, source)
    shipped = chip.calibration.clock if chip.calibration is not None else None
    return shipped, _clock_words(shipped, "the shipped file's" + suffix)


def _clock_words(clock, source: str) -> str:
    """The clocks behind the power cap, for the provenance's device line."""
    if clock is None:
        return "; SM clocks not read and none shipped: no power cap"
    power = f" at {clock.power_w:.0f} W" if clock.power_w else ""
    return (
        f"; SM clock {clock.boost_mhz:.0f} MHz at most in the products, "
        f"{clock.sustained_mhz:.0f} MHz{power} in the largest ({source})"
    )


def _bar(done: int, total: int, case: str) -> None:
    """Progress off a terminal: a line per case on standard error."""
    width = 30
    fill = width * done // max(total, 1)
    sys.stderr.write(f"[{'#' * fill}{'.' * (width - fill)}] {done}/{total} {case}\n")
    sys.stderr.flush()
