"""`shardc lsp`: starts the language server (shardc.tools.lsp) over stdio."""

from __future__ import annotations

import argparse
import math

from shardc.lang.input_limits import LSP_COMPILE_SECONDS

__all__ = ["add_arguments", "run"]


def _budget(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 3600):
        raise argparse.ArgumentTypeError(f"expected seconds above 0 and at most 3600, got {text!r}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--time-budget",
        type=_budget,
        default=LSP_COMPILE_SECONDS,
        metavar="SECONDS",
        help="CPU seconds one compile of a document may take (default "
        f"{LSP_COMPILE_SECONDS:g}); past it the compile is stopped and the "
        "document gets a diagnostic saying so",
    )


def run(args: argparse.Namespace, version: str) -> int:
    from shardc.tools.lsp.server import serve

    return serve(version=version, time_budget=args.time_budget)
