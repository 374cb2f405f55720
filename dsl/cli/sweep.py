"""`shardc sweep`: evaluate a program's quantities over a grid of sizes; a table, csv, json, or
a plot (T_math against T_comms per strategy, or a roofline). The logic is in `shardc.tools.sweep`.

Loaded by `shardc.cli.app` as an extension; imports only argparse until the command runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from shardc.cli.style import print_diagnostics
from shardc.lang.visible import visible

DESCRIPTION = """\
Evaluate any reported quantity (t_math_s, t_comms_s, ..., intensity, flops_per_s, bound, or a
formula such as t_math_s/t_comms_s) over one or two grid axes: --set B=1e3:1e7:log40 (N points,
log- or lin-spaced; numbers like 4096, 4M or 1e6 fix a size). Crossovers where T_math meets
T_comms and T_hbm are refined on the grid's first axis. See docs/sweep.md."""
NEEDS_MATPLOTLIB = "--plot needs matplotlib: pip install 'shardc[plot]'"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from shardc.cli.inputs import add_cost_model_flag, add_objective_flag, add_option_flags

    p = subparsers.add_parser(
        "sweep",
        help="evaluate quantities over a grid of sizes; table, csv, json or a plot",
        description=DESCRIPTION,
    )
    p.add_argument(
        "programs",
        nargs="+",
        metavar="PROG",
        help="one .shard file, or several to compare (one plot, a legend entry each)",
    )
    add_option_flags(
        p, "hw", help={"hw": "chip name or TOML (overrides the programs' hardware line)"}
    )
    add_cost_model_flag(p)
    add_objective_flag(p)
    p.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="a number (4096, 4M, 1e6) or a grid "
        "START:STOP:linN or START:STOP:logN; one or two grids",
    )
    p.add_argument(
        "--y",
        dest="quantities",
        action="append",
        default=[],
        metavar="QUANTITY",
        help="what to evaluate (repeatable; default: t_math_s t_hbm_s t_comms_s t_lower_s bound)",
    )
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--plot", metavar="OUT.png", help="also draw a plot (needs matplotlib)")
    p.add_argument(
        "--kind",
        choices=["lines", "roofline"],
        default="lines",
        help="lines: quantities against the swept size, crossovers marked "
        "(default); roofline: FLOP/s against arithmetic intensity",
    )
    p.add_argument(
        "--label",
        dest="labels",
        action="append",
        default=[],
        metavar="TEXT",
        help="legend entry per program, in order (default: the file names)",
    )
    p.add_argument("--title", help="the plot's title")
    p.add_argument(
        "--progress",
        action="store_true",
        help="report progress on stderr even when it is not a terminal",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shardc.cli.inputs import usage_error
    from shardc.tools import sweep as sw
    from shardc.tools.sweep import SweepError

    try:
        # The arguments' own mistakes come first, whether or not matplotlib is installed, and
        # before a compile.
        _, grids = sw.parse_settings(args.settings)
        for q in args.quantities:
            sw.check_quantity(q)
        if args.plot and len(grids) != 1:
            raise SweepError(
                "--plot draws one grid axis; bind "
                + ", ".join(g.name for g in grids[1:])
                + " to a number"
            )
    except SweepError as exc:
        return usage_error(str(exc))
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return usage_error(NEEDS_MATPLOTLIB)
        from shardc.driver.files import CliIOError, check_writable, chip_path

        try:  # before the sweep: a bad path should not cost it
            check_writable(args.plot, flag="--plot", inputs=(*args.programs, chip_path(args.hw)))
        except CliIOError as exc:
            return usage_error(str(exc))
    try:
        return _run(args)
    except SweepError as exc:
        return usage_error(str(exc))


def _run(args: argparse.Namespace) -> int:
    from shardc.cli.inputs import usage_error
    from shardc.tools import sweep as sw
    from shardc.tools import sweep_plot, sweep_render

    fixed, grids = sw.parse_settings(args.settings)
    if args.labels and len(args.labels) != len(args.programs):
        raise sw.SweepError(
            f"--label given {len(args.labels)} times for {len(args.programs)} programs"
        )
    if args.plot and len(grids) != 1:
        raise sw.SweepError(
            "--plot draws one grid axis; bind "
            + ", ".join(g.name for g in grids[1:])
            + " to a number"
        )
    quantities = list(dict.fromkeys(args.quantities)) or list(sw.DEFAULT_QUANTITIES)
    plotted = _plotted(args, quantities)
    extra = ("intensity", "flops_per_s") if args.plot and args.kind == "roofline" else ()
    sweeps: list[sw.Sweep] = []
    chips: list[str] = []  # the programs' own `hardware ./chip.toml` files
    from shardc.cli.progress import for_command

    progress = for_command(
        args.progress, machine_output=args.format != "table", stages=2 * len(args.programs)
    )  # a compile and a sweep each
    try:
        for path in args.programs:
            code = _sweep_one(
                args, path, fixed, grids, quantities, [*plotted, *extra], sweeps, chips, progress
            )
            if code:
                return code
    finally:
        if progress:
            progress.done()
    render = {
        "table": sweep_render.render_table,
        "csv": sweep_render.render_csv,
        "json": sweep_render.to_json,
    }[args.format]
    sys.stdout.write(render(sweeps))
    if args.plot:
        from shardc.driver.files import CliIOError

        labels = args.labels or sweep_plot.short_labels([s.program for s in sweeps])
        inputs = (*args.programs, *chips)
        try:
            if args.kind == "roofline":
                out = sweep_plot.plot_roofline(sweeps, args.plot, labels, args.title, inputs)
            else:
                out = sweep_plot.plot_lines(sweeps, args.plot, plotted, labels, args.title, inputs)
        except OSError as exc:
            return usage_error(f"cannot write {args.plot!r}: {exc.strerror or exc}")
        except CliIOError as exc:
            return usage_error(str(exc))
        print(f"shardc: wrote {visible(str(out))}", file=sys.stderr)
    return 0


def _sweep_one(
    args: argparse.Namespace,
    path: str,
    fixed: dict[str, float],
    grids: tuple,
    quantities: list[str],
    evaluated: list[str],
    sweeps: list,
    chips: list[str],
    progress: Any,
) -> int:
    """Compile one program and sweep it (appended to `sweeps`, its own chip file to `chips`;
    `evaluated`: the plot's own quantities, evaluated but not printed); an exit code after
    diagnostics, else 0."""
    from shardc.cli.inputs import options_from, read_program
    from shardc.driver.api import run_pipeline
    from shardc.tools import sweep as sw

    if progress:
        progress(f"compiling {path}")
    source = read_program(path)
    options = options_from(args)
    parsed = run_pipeline(source, options, stop_after="validate")
    if parsed.diagnostics.has_errors or parsed.program is None:
        print_diagnostics(parsed.rendered())
        return 1
    sw.check_names([*fixed, *(g.name for g in grids)], parsed.program, source.name)
    # The swept sizes are compiled symbolic, so each point gets the plan a compile with its
    # sizes bound chooses; where the program needs them known, at the program's values.
    swept = [g.name for g in grids if g.name in sw.known_names(parsed.program)]
    result = run_pipeline(source, options, set=fixed, free=swept)
    if swept and result.report is None:
        result = run_pipeline(source, options, set=fixed)
    if result.diagnostics.items:
        print_diagnostics(result.rendered())
    if result.report is None:
        return 1
    if result.report.chip is not None:  # a program's own `hardware ./chip.toml`
        chips.append(result.report.chip.path)
    if progress:
        progress(f"sweeping {path}")
    # the plot's own quantities are evaluated but not printed
    sweeps.append(sw.sweep(result.report, grids, quantities, evaluated))
    return 0


def _plotted(args: argparse.Namespace, quantities: list[str]) -> list[str]:
    """The lines plot's quantities: the numeric ones asked for, or T_math against T_comms (and
    T_hbm for a single program)."""
    if not args.plot or args.kind != "lines":
        return []
    if args.quantities:
        numeric = [q for q in quantities if q != "bound"]
        if not numeric:
            from shardc.tools.sweep import SweepError

            raise SweepError("--plot draws numbers: give a --y other than bound")
        return numeric
    if len(args.programs) > 1:
        return ["t_math_s", "t_comms_s"]
    return ["t_math_s", "t_hbm_s", "t_comms_s"]
