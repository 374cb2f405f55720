"""`shardc limits`: the data-movement limits of frontier training runs (the Epoch AI
model): the closed form of Table 2 and the simulated thresholds of Tables 3 and 4.

Loaded by `shardc.cli.app` as an extension; imports only argparse until the command runs.
"""

from __future__ import annotations

import argparse
import sys

from shardc.cli.inputs import usage_error
from shardc.cli.termwrap import write_result
from shardc.lang.visible import visible

DESCRIPTION = """\
Closed-form limits (Table 2 analogue: d', b', T_critical; the latency-bound limit, Eq. 15; the
latency wall, Eq. 18) and simulated thresholds (Tables 3 and 4 analogues: the training compute
at which model FLOP utilization falls below 80% of a single GPU's sustained utilization), with
the paper's values beside ours. See docs/limits.md for the model and its decisions."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "limits",
        help="data-movement limits of frontier training runs (Epoch AI model)",
        description=DESCRIPTION,
    )
    p.add_argument(
        "--preset",
        action="extend",
        nargs="+",
        metavar="NAME",
        default=[],
        help="hardware preset(s) to report (repeatable; default: every preset in "
        "the closed form and the Table 3/4 presets in the simulation)",
    )
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument(
        "--plot",
        metavar="OUT.png",
        help="also plot utilization against training compute (needs matplotlib)",
    )
    p.add_argument(
        "--progress",
        action="store_true",
        help="report search progress on stderr even when it is not a terminal",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shardc.tools.epoch import presets

    unknown = [n for n in args.preset if n not in presets.PRESETS]
    if unknown:
        return usage_error(f"unknown preset {unknown[0]!r}; known: " + ", ".join(presets.PRESETS))
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return usage_error(
                "--plot needs matplotlib, which is not installed; "
                "install it with: pip install 'shardc[plot]'"
            )
        from shardc.driver.files import CliIOError, check_writable

        try:  # before the long computation: a bad path should not cost it
            check_writable(args.plot, flag="--plot")
        except CliIOError as exc:
            return usage_error(str(exc))

    from shardc.tools.epoch import results as report

    names = list(dict.fromkeys(args.preset))
    closed = [presets.PRESETS[n] for n in (names or presets.PRESETS)]
    simulated = [presets.PRESETS[n] for n in (names or presets.SIMULATED_BY_DEFAULT)]
    from shardc.cli.progress import for_command

    progress = for_command(
        args.progress, machine_output=args.format == "json", stages=2 * len(simulated)
    )  # a dense and a sparse search each
    try:
        lim = report.compute(closed, simulated, full_curves=bool(args.plot), progress=progress)
    finally:
        if progress:
            progress.done()
    if args.format == "json":
        sys.stdout.write(report.to_json(lim))
    else:
        write_result(report.to_text(lim))
    if args.plot:
        from shardc.driver.files import CliIOError
        from shardc.tools.epoch.plot import plot_utilization

        try:
            out = plot_utilization(lim, args.plot)
        except OSError as exc:
            return usage_error(f"--plot {args.plot!r}: cannot write: {exc.strerror or exc}")
        except CliIOError as exc:
            return usage_error(str(exc))
        except ValueError as exc:  # matplotlib: an extension it has no writer for
            return usage_error(f"--plot {args.plot!r}: {exc}")
        print(f"shardc: wrote {visible(str(out))}", file=sys.stderr)
    return 0
