"""`shardc xla-check` and `shardc export-jax` (the optional extra `shardc[jax]`).

Imports only argparse at load time; JAX (and XLA's device count flag) are set up in `run`.
"""

from __future__ import annotations

import argparse
import sys

from shardc.cli.style import print_diagnostics
from shardc.cli.termwrap import write_result
from shardc.lang.visible import visible, visible_lines

NEEDS_JAX = "shardc: error: {cmd} needs JAX: pip install 'shardc[jax]'"
MAX_DEVICES = 256
"""Largest mesh checked on fake CPU devices; XLA:CPU compiles slow down past a few hundred."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    from shardc.cli.inputs import add_cost_model_flag, add_option_flags

    x = sub.add_parser(
        "xla-check",
        help="compare shardc's collectives with XLA's SPMD "
        "partitioner on fake CPU devices (needs JAX)",
    )
    x.add_argument("programs", nargs="+", metavar="PROG", help="paths to .shard files")
    x.add_argument(
        "--format",
        choices=["text", "json", "md"],
        default="text",
        help="md: one table row per statement (the table in docs/xla-check.md)",
    )
    add_option_flags(
        x, "hw", help={"hw": "chip name or TOML (overrides the program's hardware line)"}
    )
    add_cost_model_flag(x)
    add_option_flags(x, "bindings")
    x.add_argument(
        "--max-devices",
        type=_positive_devices,
        default=MAX_DEVICES,
        help=f"skip programs whose mesh has more devices (default {MAX_DEVICES})",
    )
    x.set_defaults(run=run_check)

    e = sub.add_parser(
        "export-jax",
        help="write a runnable JAX script that times each statement (profile it on real chips)",
    )
    e.add_argument("program", metavar="PROG")
    e.add_argument("-o", "--output", required=True, help="the script to write (prog.py)")
    add_option_flags(e, "hw")
    add_cost_model_flag(e)
    add_option_flags(e, "bindings")
    e.set_defaults(run=run_export)


def _positive_devices(text: str) -> int:
    """--max-devices: a positive whole number up to MAX_XLA_DEVICES (argparse names the flag on
    error)."""
    from shardc.lang.input_limits import MAX_XLA_DEVICES
    from shardc.lang.numeric import NumberError, parse_decimal, whole

    try:
        n = whole(parse_decimal(text), "the number of devices")
    except NumberError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if n > MAX_XLA_DEVICES:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_XLA_DEVICES:,} fake CPU devices (XLA:CPU starts a thread per device "
            f"and compiles for every one), got {n:,}"
        )
    return n


def _prepare(path: str, args: argparse.Namespace):
    """shardc's side of one program: `Prepared`, or an exit code after printing diagnostics."""
    from shardc.cli.inputs import read_program
    from shardc.tools.xla.check import Prepared, UsageError, prepare

    source = read_program(path)
    try:
        prepared = prepare(
            source,
            args.hw,
            args.model,
            dict(args.bindings),
            getattr(args, "matmul_precision", "default"),
        )
    except UsageError as exc:
        print_diagnostics(f"shardc: error: {visible(source.name)}: {visible_lines(str(exc))}")
        return 2
    if not isinstance(prepared, Prepared):  # a Compilation with errors
        print_diagnostics(prepared.rendered())
        return 1
    if prepared.compilation.diagnostics.items:
        print_diagnostics(prepared.compilation.rendered())
    return prepared


def run_check(args: argparse.Namespace) -> int:
    """Exit 0 when every program agrees with XLA or is no more expensive under shardc's model;
    1 on diagnostics or when XLA's choice is cheaper (a bug in shardc's search); 2 on usage."""
    from shardc.tools.xla.check import check, devices_needed
    from shardc.tools.xla.lower import configure_devices

    prepared = []
    status = 0
    for path in args.programs:
        p = _prepare(path, args)
        if isinstance(p, int):
            status = max(status, p)
            continue
        n = devices_needed(p)
        if n > args.max_devices:
            print(
                f"shardc: note: {visible(p.compilation.source.name)}: not checked: its mesh "
                f"has {n} devices, more than --max-devices {args.max_devices} fake CPU devices",
                file=sys.stderr,
            )
            continue
        prepared.append(p)
    if not prepared:
        return status
    configure_devices(max(devices_needed(p) for p in prepared))
    try:
        import jax
    except ImportError:
        print(NEEDS_JAX.format(cmd="xla-check"), file=sys.stderr)
        return 2
    from shardc.tools.xla.render import markdown, text, to_json

    have = len(jax.devices())
    for p in [p for p in prepared if devices_needed(p) > have]:
        # XLA_FLAGS already set a device count before shardc could (`configure_devices`).
        print(
            f"shardc: note: {visible(p.compilation.source.name)}: not checked: its mesh has "
            f"{devices_needed(p)} devices, and XLA_FLAGS gives JAX {have}",
            file=sys.stderr,
        )
        prepared.remove(p)
    results = [check(p) for p in prepared]
    if args.format == "json":
        sys.stdout.write(to_json(results))
    elif args.format == "md":
        sys.stdout.write(markdown(results))
    else:
        write_result("\n".join(text(r) for r in results))
    if not all(r.ok for r in results):
        status = max(status, 1)
    return status


def run_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from shardc.driver.files import CliIOError, check_writable, chip_path, write_text
    from shardc.tools.xla.export import script

    try:  # before compiling: a bad -o is a usage error whatever the program holds
        check_writable(args.output, flag="-o", inputs=(args.program, chip_path(args.hw)))
    except CliIOError as exc:
        print_diagnostics(f"shardc: error: {visible_lines(str(exc))}")
        return 2
    p = _prepare(args.program, args)
    if isinstance(p, int):
        return p
    out = Path(args.output)
    try:
        report = p.compilation.report
        chip = report.chip.path if report is not None and report.chip is not None else None
        write_text(
            args.output,
            script(p, out.name),
            flag="-o",
            inputs=(args.program, chip_path(args.hw), chip),
        )
    except CliIOError as exc:
        print_diagnostics(f"shardc: error: {visible_lines(str(exc))}")
        return 1
    skipped = [st for st in p.statements if st.skip]
    for st in skipped:
        print(f"shardc: note: line {st.line} not exported: {st.skip}", file=sys.stderr)
    print(
        f"{visible(str(out))}: {len(p.statements) - len(skipped)} statements on "
        f"{devices_needed(p)} devices"
    )
    return 0


def devices_needed(p) -> int:
    from shardc.tools.xla.check import devices_needed as needed

    return needed(p)
