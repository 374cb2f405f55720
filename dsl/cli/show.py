"""`shardc show`: which mesh devices hold which block of each array (and, with `--ops`, of each
value a collective makes), as `jax.debug.visualize_array_sharding` draws it. The pictures are
`shardc.driver.show`'s; on a terminal they are rich tables, each block's cell coloured.

Loaded by `shardc.cli.app` as an extension; imports only argparse until the command runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

from shardc.cli.inputs import (
    add_cost_model_flag,
    add_option_flags,
    options_from,
    read_program,
    usage_error,
)
from shardc.cli.style import print_diagnostics

DESCRIPTION = """\
Draw, for each array of the program (or the ARRAYs named), which mesh devices hold which
block: rows and columns are the blocks of the sharded dimensions, a cell the device
coordinates holding the block (X=3; Y=* a replica on every device along Y; Y=+ a partial sum
over Y). A rank-3 or higher array's rows are its sharded dimensions but the last, combined.
Sizes left symbolic show the first and last block. See docs/language.md, section 11.1."""
MAX_BLOCKS_LIMIT = 64
"""`shardc.driver.show.MAX_BLOCKS_LIMIT`, the most `--max-blocks` may be, for the parser
without importing SymPy (a test keeps the two equal)."""


def max_blocks(text: str) -> int:
    """`--max-blocks N`: a whole number from 2 to `MAX_BLOCKS_LIMIT`."""
    from shardc.lang.quoting import clipped

    value = text.strip()
    if not value.isdigit() or not 2 <= int(value) <= MAX_BLOCKS_LIMIT:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 2 to {MAX_BLOCKS_LIMIT}, got {clipped(text)!r}"
        )
    return int(value)


MAX_BLOCKS = 8
"""`shardc.driver.show.MAX_BLOCKS`, for the help text without importing SymPy (a test keeps
the two equal)."""


class _Intermixed(argparse.ArgumentParser):
    """A parser taking its positionals among its options (`show F --ops A`): Python 3.11's
    argparse gives a `*` positional nothing once an option follows the first positional."""

    _inside = False

    def parse_known_args(self, args=None, namespace=None):
        if self._inside:  # parse_known_intermixed_args calls back here
            return super().parse_known_args(args, namespace)
        self._inside = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inside = False


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "show",
        help="draw which mesh devices hold which block of each array",
        description=DESCRIPTION,
    )
    p.__class__ = _Intermixed  # (the subparsers make every parser of one class)
    p.add_argument("program", help="path to a .shard file ('-' reads standard input)")
    p.add_argument(
        "arrays",
        nargs="*",
        metavar="ARRAY",
        help="the arrays to draw (default: every array, in program order)",
    )
    p.add_argument(
        "--ops",
        action="store_true",
        help="also draw each value a collective makes (of the ARRAYs, if named)",
    )
    add_option_flags(
        p, "hw", help={"hw": "chip name or path to a chip TOML (the plan may depend on it)"}
    )
    add_cost_model_flag(p)
    add_option_flags(
        p, "bindings", help={"bindings": "bind a dim or mesh axis (its blocks are drawn)"}
    )
    p.add_argument(
        "--max-blocks",
        type=max_blocks,
        default=MAX_BLOCKS,
        metavar="N",
        help=f"blocks drawn along a side before the middle ones are elided (2 to "
        f"{MAX_BLOCKS_LIMIT}; default {MAX_BLOCKS})",
    )
    p.add_argument(
        "--format",
        choices=["text", "md", "html"],
        default="text",
        help="text (a rich table on a terminal, ASCII boxes elsewhere), md or html",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from shardc.driver import show
    from shardc.driver.api import run_pipeline
    from shardc.lang.quoting import quoted

    source = read_program(args.program)
    result = run_pipeline(source, options_from(args))
    if result.diagnostics.items:
        print_diagnostics(result.rendered())
    if result.report is None:
        return 1
    r = result.report
    unknown = show.unknown_arrays(r, args.arrays)
    if unknown:
        import difflib

        names = show.array_names(r)
        close = difflib.get_close_matches(unknown[0], names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return usage_error(
            f"show: no array {quoted(unknown[0])} in {source.name}{hint}; its "
            f"arrays: {', '.join(names)}"
        )
    pictures = show.array_pictures(r, args.arrays, args.max_blocks)
    if args.ops:
        made = show.op_pictures(r, args.arrays, args.max_blocks)
        if not made:
            of = f" of {', '.join(args.arrays)}" if args.arrays else ""
            print(f"note: --ops: no collective makes a value{of} in this program", file=sys.stderr)
        pictures += made
    if not pictures:
        print("note: the program has no array to draw", file=sys.stderr)
    if args.format == "md":
        sys.stdout.write("\n".join(show.to_markdown(p) for p in pictures))
    elif args.format == "html":
        sys.stdout.write("\n".join(show.to_html(p) for p in pictures) + "\n")
    elif sys.stdout.isatty():
        from shardc.cli.style import wants_colour

        draw(pictures, sys.stdout, colour=wants_colour(sys.stdout))
    else:
        from shardc.lang.visible import visible

        sys.stdout.write(visible(show.pictures_text(pictures), keep="\n"))
    return 0


CELL_STYLES = (
    "black on #9ecae1",
    "black on #fdae6b",
    "black on #a1d99b",
    "black on #bcbddc",
    "black on #fc9272",
    "black on #d9d9d9",
    "black on #fee391",
    "black on #c6dbef",
    "black on #c7e9c0",
    "black on #dadaeb",
)
"""A background per block on a terminal (JAX's visualizer colours each device's blocks)."""


def draw(pictures: list[Any], stream: IO[str], *, colour: bool = True, **options: Any) -> None:
    """The pictures as rich tables on `stream` (a terminal; `options` go to the Console)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from shardc.cli.style import console

    out = console(stream, no_color=not colour, **options)
    for k, p in enumerate(pictures):
        table = Table(
            title=Text(p.title, style="bold"),
            title_justify="left",
            box=box.SQUARE,
            show_lines=True,
            header_style="bold",
        )
        table.add_column("")
        for c in p.cols:
            table.add_column(Text(c), justify="center")
        for label, cells, ids in zip(p.rows, p.cells, p.group, strict=True):
            table.add_row(
                Text(label, style="bold"),
                *(
                    Text(c, style=CELL_STYLES[g % len(CELL_STYLES)] if g >= 0 and colour else "")
                    for c, g in zip(cells, ids, strict=True)
                ),
            )
        out.print(table)
        for n in p.notes:
            out.print(Text("  " + n, style="dim"))
        if k + 1 < len(pictures):
            out.print()
