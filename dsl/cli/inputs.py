"""What every command reads the same way: the program file, `--set NAME=VALUE`, the cost-model
flag, and usage errors (exit 2). `app` and each command's module import these; none of them
imports `app`."""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, get_args

from shardc.driver.files import CliIOError, read_text
from shardc.lang.input_limits import MAX_SOURCE_BYTES
from shardc.lang.numeric import NumberError, parse_decimal, parse_number
from shardc.lang.quoting import clipped, quoted
from shardc.lang.source import Source
from shardc.lang.visible import visible_lines
from shardc.passes.context import Model

if TYPE_CHECKING:
    from shardc.passes.context import Options

__all__ = [
    "COST_MODELS",
    "add_cost_model_flag",
    "add_objective_flag",
    "add_option_flags",
    "add_precision_flag",
    "options_from",
    "parse_binding",
    "parse_number",
    "read_program",
    "usage_error",
]

COST_MODELS = get_args(Model)


def add_option_flags(
    p: argparse.ArgumentParser,
    *names: str,
    help: Mapping[str, str] | None = None,
    default: Mapping[str, Any] | None = None,
) -> None:
    """A flag for each compile option named, as `passes.context.Options` declares it (flags,
    choices, default, help); `help` and `default` give a command's own wording or default.
    `options_from` reads them back."""
    from shardc.passes.context import OPTIONS

    for name in names:
        declared = OPTIONS[name]
        meta = declared.metadata
        kw: dict[str, Any] = {"dest": name, "help": (help or {}).get(name, meta["help"])}
        if name == "bindings":
            kw.update(action="append", default=[], type=parse_binding, metavar="NAME=VALUE")
        else:
            kw["default"] = (default or {}).get(name, declared.default)
        if meta["choices"]:
            kw["choices"] = meta["choices"]
            if len(meta["flags"]) > 1:  # one spelling of the choices for both flags
                kw["metavar"] = "{" + ",".join(meta["choices"]) + "}"
        p.add_argument(*meta["flags"], **kw)


def options_from(args: argparse.Namespace, **overrides: Any) -> Options:
    """The compile options a command's flags (`add_option_flags`) set, with `overrides`."""
    from shardc.driver.options import options_with
    from shardc.passes.context import OPTIONS

    given = {n: getattr(args, n) for n in OPTIONS if n in vars(args)}
    if "bindings" in given:
        given["bindings"] = dict(given["bindings"])
    return options_with(None, {**given, **overrides})


def add_cost_model_flag(
    p: argparse.ArgumentParser, *, default: str = "exact", help: str | None = None
) -> None:
    """The collective cost model: `--cost-model`, the spelling every subcommand takes, and
    `--model`, its short spelling everywhere but `plan` (where `--model` was the model card);
    and beside it `--matmul-precision`."""
    add_option_flags(
        p,
        "model",
        "matmul_precision",
        help={"model": help} if help else None,
        default={"model": default},
    )


def add_precision_flag(p: argparse.ArgumentParser) -> None:
    """`--matmul-precision`: how products of f32 operands run, as JAX's `jax.lax.Precision`
    (`passes.context.Options.matmul_precision`); beside every `--cost-model`."""
    add_option_flags(p, "matmul_precision")


def add_objective_flag(p: argparse.ArgumentParser) -> None:
    """`--objective`: what the plans minimize for the whole program
    (`passes.objective.OBJECTIVES`)."""
    add_option_flags(p, "objective")


def parse_binding(text: str) -> tuple[str, Decimal]:
    """`NAME=VALUE` for `--set`: the value exact (a Decimal), finite and within a float's range.
    Whether it suits the name (a whole size, a positive figure) is checked once the program says
    what the name is (N016 in passes/validate.py).

    >>> parse_binding("B=4M")
    ('B', Decimal('4000000'))
    """
    m = re.fullmatch(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*=\s*(\S+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {quoted(text)}")
    try:
        parse_number(m.group(2))  # refuses what no float can hold: 1e400, 1e-400
        return m.group(1), parse_decimal(m.group(2))
    except NumberError as exc:
        raise argparse.ArgumentTypeError(
            f"{clipped(m.group(1))}={clipped(m.group(2))}: {exc}"
        ) from None


def read_program(path: str) -> Source:
    """The program at `path` ('-': standard input), read through the bounded reader; a file that
    cannot be read is a usage error (exit 2)."""
    try:
        text = read_text(path, what="program", limit=MAX_SOURCE_BYTES)
    except CliIOError as exc:
        raise SystemExit(usage_error(str(exc))) from None
    return Source("<stdin>" if path == "-" else path, text)


def usage_error(message: str) -> int:
    """Print `shardc: error: MESSAGE` to stderr; the usage exit code, 2."""
    from shardc.cli.style import print_diagnostics

    print_diagnostics(f"shardc: error: {visible_lines(message)}")
    return 2
