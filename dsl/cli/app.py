"""The `shardc` command line: results on stdout, diagnostics on stderr.

Exit codes: 0 ok, 1 diagnostics (errors in the program), 2 usage, 3 internal error (a bug).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import traceback
from collections.abc import Sequence

from shardc.cli.inputs import (
    COST_MODELS,
    add_cost_model_flag,
    add_objective_flag,
    add_option_flags,
    add_precision_flag,
    options_from,
    parse_binding,
    parse_number,
    read_program,
    usage_error,
)
from shardc.cli.style import print_diagnostics
from shardc.cli.termwrap import write_result
from shardc.driver.files import CliIOError, check_writable, chip_path, write_text
from shardc.lang.visible import visible, visible_lines

__all__ = [
    "COST_MODELS",
    "add_cost_model_flag",
    "add_precision_flag",
    "build_parser",
    "main",
    "parse_binding",
    "parse_number",
]


def _installed_version() -> str:
    """The installed package's version, looked up only when asked for."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("shardc")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown (not installed)"


class _Version(argparse.Action):
    """`--version`."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"shardc {_installed_version()}")
        parser.exit(0)


BUILT_IN = frozenset({"compile", "check", "hw", "lsp"})
"""The commands this module adds itself (`build_parser`); the others are `EXTENSIONS`'."""


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command, or, where `argv` (the arguments to parse)
    begins with a built-in command, only the built-in ones, which parse it alike without
    importing the extensions' modules (start-up: their source is compiled anew in each
    process that writes no bytecode)."""
    p = argparse.ArgumentParser(
        prog="shardc",
        description="Compile sharded tensor programs (.shard) to symbolic cost reports.",
    )
    p.add_argument(
        "--version", action=_Version, nargs=0, help="print the installed version of shardc and exit"
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    c = sub.add_parser("compile", help="compile a program to a cost report")
    c.add_argument("program", help="path to a .shard file ('-' reads standard input)")
    add_option_flags(c, "hw")
    c.add_argument(
        "--calibration",
        metavar="FILE",
        help="a calibration file for --hw (written by `shardc calibrate`): its "
        "efficiency figures give T_expected instead of the chip's shipped one",
    )
    add_option_flags(c, "on")
    c.add_argument("--format", choices=["text", "md", "json", "latex"], default="text")
    add_cost_model_flag(c)
    add_option_flags(c, "bindings")
    c.add_argument("-o", "--output", help="write the report here instead of stdout")
    add_option_flags(c, "optimizer", "attention", "remat")
    c.add_argument(
        "--only",
        metavar="SECTIONS",
        help="text format: the header and only these sections, comma-separated, of "
        "summary, repeats, memory, topology, conditions, decisions, ops, why, regions",
    )
    c.add_argument(
        "--summary",
        action="store_true",
        help="text format: a short report (--only summary,repeats,memory,conditions)",
    )
    add_objective_flag(c)
    c.add_argument(
        "--regions",
        action="store_true",
        help="also lower the program in each region of its symbolic sizes and give "
        "the totals there (text, md, json)",
    )

    k = sub.add_parser("check", help="parse, validate and insert collectives; report problems")
    k.add_argument("program")
    add_option_flags(k, "hw", "bindings", "matmul_precision")
    add_objective_flag(k)

    from shardc.cli import lsp

    lsp.add_arguments(
        sub.add_parser(
            "lsp",
            help="a language server over stdio: diagnostics as you type and costs on hover, "
            "for editors",
        )
    )

    h = sub.add_parser("hw", help="list or show chip specs")
    hs = h.add_subparsers(dest="hw_command", required=True, metavar="ACTION")
    hs.add_parser("list", help="list the chips shardc knows")
    hs.add_parser("schema", help="print the JSON Schema of chip TOML files (for editors)")
    show = hs.add_parser("show", help="show one chip's figures and critical intensities")
    show.add_argument("name", help="chip name or path to a chip TOML")
    if argv is None or not argv or argv[0] not in BUILT_IN:
        for module in _extensions():
            module.add_parser(sub)
    return p


EXTENSIONS = (
    "shardc.cli.limits",
    "shardc.cli.xla",
    "shardc.cli.sweep",
    "shardc.cli.derive",
    "shardc.cli.plan",
    "shardc.cli.calibrate",
    "shardc.cli.test",
    "shardc.cli.show",
)
"""Modules adding subcommands: each has `add_parser(subparsers)`, which registers its commands
with `set_defaults(run=...)`, a function taking the parsed args and returning an exit code.
They must import cheaply (no numpy/sympy at import time)."""


def _extensions():
    import importlib

    out = []
    for name in EXTENSIONS:
        try:
            out.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
    return out


def _sections(args: argparse.Namespace) -> frozenset[str] | None | int:
    """`--only` / `--summary` as section names; an exit code (2) after a usage error."""
    from shardc.driver.document import SECTIONS

    if args.only is None and not args.summary:
        return None
    if args.format != "text":
        return usage_error(
            f"{'--only' if args.only is not None else '--summary'} applies to "
            f"--format text, not {args.format}"
        )
    names = {"summary", "repeats", "memory", "conditions"} if args.summary else set()
    if args.only is not None:
        names |= {n.strip() for n in args.only.split(",") if n.strip()}
        unknown = sorted(names - SECTIONS.keys())
        if unknown or not names:
            return usage_error(
                f"--only: unknown section {', '.join(unknown) or '(none given)'}; "
                f"choose from {', '.join(SECTIONS)}"
            )
    return frozenset(names)


def _cmd_compile(args: argparse.Namespace) -> int:
    from shardc.driver.api import run_pipeline

    only = _sections(args)
    if isinstance(only, int):
        return only
    source = read_program(args.program)
    if args.output:
        try:  # before compiling: a bad -o should not cost a compile
            check_writable(args.output, flag="-o", inputs=(args.program, chip_path(args.hw)))
        except CliIOError as exc:
            return usage_error(str(exc))
    hw = args.hw
    if args.calibration is not None:
        from shardc import hardware

        if hw is None:
            return usage_error("--calibration needs --hw (the chip it calibrates)")
        try:
            hw = hardware.load_calibration(args.calibration, hardware.load(hw))
        except hardware.HardwareError as exc:
            print_diagnostics(f"shardc: error[H001]: {exc}")
            return 1
    result = run_pipeline(source, options_from(args, hw=hw))
    if result.diagnostics.items:
        print_diagnostics(result.rendered())
    if result.report is None:
        return 1
    r = result.report
    reg = args.regions
    text = {
        "text": lambda: r.to_text(regions=reg, only=only),
        "md": lambda: r.to_markdown(regions=reg),
        "json": lambda: r.to_json(regions=reg) + "\n",
        "latex": lambda: r.to_latex(regions=reg),
    }[args.format]()
    if args.output:
        try:
            chip = r.chip.path if r.chip is not None else None
            write_text(
                args.output, text, flag="-o", inputs=(args.program, chip_path(args.hw), chip)
            )
        except CliIOError as exc:
            return usage_error(str(exc))
    elif args.format == "text":
        write_result(text)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from shardc.driver.api import run_pipeline
    from shardc.passes.ir import Collective

    source = read_program(args.program)
    # With --objective the plans are chosen for the whole program, which needs its costs.
    result = run_pipeline(
        source, options_from(args), stop_after=None if args.objective else "insert-collectives"
    )
    if result.diagnostics.items:
        print_diagnostics(result.rendered())
    if result.diagnostics.has_errors or result.compiled is None:
        return 1
    if result.report is not None:
        result.compiled = result.report.program
    n_coll = sum(isinstance(op, Collective) for op in result.compiled.ops)
    n_stmt = len(result.program.statements) if result.program else 0
    print(
        f"{visible(source.name)}: ok ({n_stmt} statements, {len(result.compiled.ops)} ops, "
        f"{n_coll} collectives)"
    )
    return 0


def _cmd_hw(args: argparse.Namespace) -> int:
    from shardc import hardware

    if args.hw_command == "list":
        for name in hardware.available():
            print(hardware.summary_line(hardware.load(name)))
        return 0
    if args.hw_command == "schema":
        from shardc.hardware.json_schema import chip_json_schema_text

        sys.stdout.write(chip_json_schema_text())
        return 0
    try:
        chip = hardware.load(args.name)
    except hardware.HardwareError as exc:
        print_diagnostics(f"shardc: error[H001]: {visible_lines(str(exc))}")
        print("note: known chips: " + ", ".join(hardware.available()), file=sys.stderr)
        return 1
    write_result(hardware.describe(chip) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    # A compile allocates millions of short-lived objects that reference counting frees; with
    # Python's default thresholds the cycle collector still ran ~550 times on a 2,000-einsum
    # compile, four of them full collections over SymPy's and the IR's objects: 10-15% of the
    # run. Fewer, larger young-generation collections (mypy's setting) keep what is collected
    # the same; the peak memory of a 5,000-einsum compile did not change.
    gc.set_threshold(200_000, 30, 30)
    args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
    try:
        match args.command:
            case "compile":
                return _cmd_compile(args)
            case "check":
                return _cmd_check(args)
            case "hw":
                return _cmd_hw(args)
            case "lsp":
                from shardc.cli import lsp

                return lsp.run(args, _installed_version())
            case _ if hasattr(args, "run"):
                return int(args.run(args))
    except SystemExit:
        raise
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a compiler bug, never a user error
        if os.environ.get("SHARDC_DEBUG"):
            traceback.print_exc()
        print_diagnostics(
            f"shardc: internal error (this is a bug in shardc): "
            f"{type(exc).__name__}: {visible_lines(str(exc))}\n"
            "note: rerun with SHARDC_DEBUG=1 to see the traceback"
        )
        return 3
    return 2


if __name__ == "__main__":
    sys.exit(main())
