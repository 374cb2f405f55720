"""What every command reads the same way: the program file, `--set NAME=VALUE`, the cost-model
flag, and usage errors (exit 2). `app` and each command's module import these; none of them
imports `app`."""

from __future__ import annotations

import argparse
import re
from decimal import Decimal

from shardc.driver.files import CliIOError, read_text
from shardc.lang.input_limits import MAX_SOURCE_BYTES
from shardc.lang.numeric import NumberError, parse_decimal, parse_number
from shardc.lang.quoting import clipped, quoted
from shardc.lang.source import Source
from shardc.lang.visible import visible_lines

__all__ = ["COST_MODELS", "add_cost_model_flag", "add_objective_flag", "add_precision_flag",
           "parse_binding",
           "parse_number", "read_program", "usage_error"]

COST_MODELS = ("exact", "book")


def add_cost_model_flag(p: argparse.ArgumentParser, *, default: str = "exact",
                        help: str | None = None) -> None:
    """The collective cost model: `--cost-model`, the spelling every subcommand takes, and
    `--model`, its short spelling everywhere but `plan` (where `--model` was the model card)."""
    p.add_argument("--cost-model", "--model", dest="model", choices=COST_MODELS, default=default,
                   metavar="{exact,book}",
                   help=help or f"collective cost model: exact ring or the book's formulas "
                   f"(default {default}; --model is the same flag)")
    add_precision_flag(p)


def add_precision_flag(p: argparse.ArgumentParser) -> None:
    """`--matmul-precision`: how products of f32 operands run, as JAX's `jax.lax.Precision`
    (`passes.context.Options.matmul_precision`); beside every `--cost-model`."""
    p.add_argument("--matmul-precision", dest="matmul_precision",
                   choices=("default", "high", "highest"), default="default",
                   help="f32 products as jax.lax.Precision runs them: on NVIDIA GPUs default "
                   "and high use TF32 tensor cores and highest full f32; on TPUs default is "
                   "one bf16 pass, high three, highest six (default: default)")


def add_objective_flag(p: argparse.ArgumentParser) -> None:
    """`--objective`: what the plans minimize for the whole program
    (`passes.objective.OBJECTIVES`)."""
    p.add_argument("--objective", choices=("t_lower", "t_upper", "step", "statement"),
                   default=None,
                   help="choose the contractions' plans together for the whole program's "
                   "T_lower, T_upper or scheduled step time (default: step for a training "
                   "step, t_lower otherwise), or each for itself (statement); see "
                   "docs/cost-model.md")


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
        raise argparse.ArgumentTypeError(f"{clipped(m.group(1))}={clipped(m.group(2))}: "
                                         f"{exc}") from None


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
