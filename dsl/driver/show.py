"""Which mesh devices hold which block of an array: a picture as a value (`Picture`, one per
array or per value a collective makes) and its plain-text, Markdown and HTML writers; what
`jax.debug.visualize_array_sharding` draws, for named axes and symbolic sizes.

A table's rows and columns are the blocks of the sharded dimensions; a cell names the device
coordinates holding the block: `X=3` on an axis that splits the array, `Y=*` on an axis it is
replicated over (every coordinate holds a copy), `Y=+` on an axis it holds partial sums over.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sympy as sp

from shardc.driver.escape import html_text, md_code, md_text
from shardc.driver.formulas import text as formula_text
from shardc.lang.layout import Layout, format_axes
from shardc.passes.sizes import known_sizes
from shardc.passes.symbols import size_symbol

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.passes.ir import Value

MAX_BLOCKS = 8
"""Blocks shown along a table's side before the middle ones are elided (`--max-blocks`)."""
MAX_BLOCKS_LIMIT = 64
"""The most `max_blocks` may be (a table of 64 x 64 cells)."""
ELIDED = "..."
"""A row, column or cell standing for the blocks left out."""
REPLICATED = "*"
PARTIAL = "+"


@dataclass(frozen=True, slots=True)
class Picture:
    """One array's blocks on the mesh: `cells[i][j]` names the devices holding the block at row
    `i`, column `j` (`ELIDED` where blocks are left out); `group[i][j]` numbers the distinct
    blocks (for colour), -1 on an elided cell."""

    name: str
    """The array, or `#2` for the value op 2 (a collective) makes."""
    title: str
    """`A: bf16[I_X, J]`, or `#2 line 11 AllGather_X: B[J, K_X] -> B[J, K]`."""
    row_dims: tuple[str, ...]
    col_dims: tuple[str, ...]
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    cells: tuple[tuple[str, ...], ...]
    group: tuple[tuple[int, ...], ...]
    notes: tuple[str, ...]

    def __str__(self) -> str:
        return to_text(self)

    def _repr_html_(self) -> str:
        return to_html(self)


# ---- building ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Side:
    """The blocks along one side of the table: the shown block indices (None: elided) with each
    one's label and its coordinate on each mesh axis that splits this side."""

    labels: tuple[str, ...]
    coords: tuple[dict[str, str] | None, ...]


def _size(name: str, sizes: dict[str, int]) -> sp.Expr:
    return sp.Integer(sizes[name]) if name in sizes else size_symbol(name)


def _compact(expr: sp.Expr) -> str:
    """A formula without spaces, for a label or a cell: `I*(X-1)/X`."""
    return formula_text(expr).replace(" ", "")


def _blocks_of(
    dim: str, axes: tuple[str, ...], sizes: dict[str, int], max_blocks: int
) -> list[tuple[str, dict[str, str]] | None]:
    """The shown blocks of one dimension: (label, coordinate per axis), None where elided."""
    extent = _size(dim, sizes)
    counts = [_size(a, sizes) for a in axes]
    n = math.prod(counts, start=sp.Integer(1))
    known = all(a in sizes for a in axes)
    if known:
        total = int(n)
        shown: list[int | None] = list(range(total))
        if total > max_blocks:
            shown = [*range(max_blocks - 1), None, total - 1]
    else:
        shown = [0, None, -1]  # the first, the last, and the elided ones between

    def label(start: sp.Expr, end: sp.Expr) -> str:
        return f"{dim}[{_compact(start)}:{_compact(end)}]"

    out: list[tuple[str, dict[str, str]] | None] = []
    for b in shown:
        if b is None:
            out.append(None)
        elif b == -1:  # the last block of a symbolic count: every coordinate at its end
            out.append(
                (
                    label(extent * (n - 1) / n, extent),
                    {a: _compact(c - 1) for a, c in zip(axes, counts, strict=True)},
                )
            )
        else:
            coords: dict[str, str] = {a: "0" for a in axes}
            rest = b
            for a, c in reversed(list(zip(axes, counts, strict=True))):  # minor axis fastest
                if rest:  # (a block past the first has every count known)
                    coords[a] = str(rest % int(c))
                    rest //= int(c)
            out.append((label(extent * b / n, extent * (b + 1) / n), coords))
    return out


def _side(
    dims: Sequence[tuple[str, tuple[str, ...]]], sizes: dict[str, int], max_blocks: int
) -> _Side:
    """The blocks of several dimensions combined (major first), one elided row for any block
    whose index in some dimension is elided; at most `max_blocks` of them, the middle ones
    elided."""
    combos: list[tuple[str, dict[str, str]] | None] = [("", {})]
    for dim, axes in dims:
        blocks = _blocks_of(dim, axes, sizes, max_blocks)
        nxt: list[tuple[str, dict[str, str]] | None] = []
        for head in combos:
            for b in blocks:
                if head is None or b is None:
                    if nxt and nxt[-1] is None:
                        continue
                    nxt.append(None)
                else:
                    nxt.append(((head[0] + ", " if head[0] else "") + b[0], {**head[1], **b[1]}))
        combos = nxt
    if len(combos) > max_blocks:  # several dimensions: at most `max_blocks` rows still
        combos = [*combos[: max_blocks - 1], None, combos[-1]]
        if combos[-3] is None:
            del combos[-3]
    return _Side(
        tuple(ELIDED if c is None else c[0] for c in combos),
        tuple(None if c is None else c[1] for c in combos),
    )


def _cell(
    mesh: tuple[str, ...], row: dict[str, str], col: dict[str, str], unreduced: frozenset[str]
) -> str:
    """`X=0 Y=*`: a coordinate on each mesh axis, `*` a replica, `+` a partial sum."""
    parts = []
    for a in mesh:
        value = row.get(a, col.get(a))
        if value is None:
            value = PARTIAL if a in unreduced else REPLICATED
        parts.append(f"{a}={value}")
    return " ".join(parts)


def _sides(
    value: Value,
) -> tuple[list[tuple[str, tuple[str, ...]]], list[tuple[str, tuple[str, ...]]], list[str]]:
    """Which dimensions make the rows and which the columns, and those left whole: rank 1 and 2
    as JAX draws them (a vector along the columns; rows the first dimension, columns the
    second); a higher rank's rows are every sharded dimension but the last, combined, and its
    columns the last, every other dimension whole in each block (and the column's label where
    at most one dimension is sharded)."""
    dims = [(d.dim, d.axes) for d in value.layout.dims]
    if len(dims) <= 2:
        return dims[:-1], dims[-1:], []
    sharded = [d for d in dims if d[1]]
    whole = [d for d in dims if not d[1]]
    if len(sharded) <= 1:  # the whole dimensions make the one column
        return sharded, whole, []
    return sharded[:-1], sharded[-1:], [d for d, _ in whole]


def picture(
    r: Report, value: Value, name: str, title: str, max_blocks: int = MAX_BLOCKS
) -> Picture:
    """The picture of one value's blocks under the report's sizes (symbolic where unbound)."""
    program = r.program
    sizes = known_sizes((*program.dims, *program.mesh), r.bindings)
    mesh = program.mesh_axes
    row_dims, col_dims, whole = _sides(value)
    rows = _side(row_dims, sizes, max_blocks)
    cols = _side(col_dims, sizes, max_blocks)
    unreduced = value.layout.unreduced
    cells, group = [], []
    for i, rc in enumerate(rows.coords):
        line, ids = [], []
        for j, cc in enumerate(cols.coords):
            if rc is None or cc is None:
                line.append(ELIDED)
                ids.append(-1)
            else:
                line.append(_cell(mesh, rc, cc, unreduced))
                ids.append(i * len(cols.coords) + j)
        cells.append(tuple(line))
        group.append(tuple(ids))
    col_labels = cols.labels if col_dims or row_dims else ("(a scalar)",)
    return Picture(
        name,
        title,
        tuple(d for d, _ in row_dims),
        tuple(d for d, _ in col_dims),
        rows.labels,
        col_labels,
        tuple(cells),
        tuple(group),
        _notes(value, mesh, sizes, whole),
    )


def _count(axes: Sequence[str], sizes: dict[str, int]) -> str:
    return formula_text(math.prod((_size(a, sizes) for a in axes), start=sp.Integer(1)))


def _notes(
    value: Value, mesh: tuple[str, ...], sizes: dict[str, int], whole: list[str]
) -> tuple[str, ...]:
    """The legend under a table: the block's shape, the replicas, the partial sums."""
    layout = value.layout
    shape = [
        formula_text(
            _size(d.dim, sizes) / math.prod((_size(a, sizes) for a in d.axes), start=sp.Integer(1))
        )
        for d in layout.dims
    ]
    used = set(layout.sharding_axes)
    n_blocks = _count(layout.sharding_axes, sizes)
    notes = [
        f"{n_blocks} block{'s' if n_blocks != '1' else ''} of "
        f"{' x '.join(shape) if shape else 'one element (a scalar)'}"
    ]
    replicated = [a for a in mesh if a not in used and a not in layout.unreduced]
    if replicated:
        notes.append(
            f"{' '.join(a + '=' + REPLICATED for a in replicated)}: each block is on "
            f"every device along {', '.join(replicated)} "
            f"({_count(replicated, sizes)} copies)"
        )
    partial = [a for a in mesh if a in layout.unreduced]
    if partial:
        notes.append(
            f"{' '.join(a + '=' + PARTIAL for a in partial)}: the devices along "
            f"{', '.join(partial)} each hold a partial sum of the block "
            f"({_count(partial, sizes)} of them; a reduction over "
            f"{', '.join(partial)} completes it)"
        )
    if whole:
        notes.append(f"{', '.join(whole)}: not sharded, whole in every block")
    return tuple(notes)


def array_pictures(
    r: Report, names: Sequence[str] = (), max_blocks: int = MAX_BLOCKS
) -> list[Picture]:
    """A picture per array of the program (its declared or requested layout), in program
    order, or of the arrays `names` (each must be one: `unknown_arrays` says which are not)."""
    arrays = {v.array: v for v in r.program.arrays}
    chosen = list(dict.fromkeys(names)) or list(arrays)
    drawn: dict[tuple[Layout, str], Picture] = {}  # arrays repeat layouts (a layer's)
    out = []
    for n in chosen:
        if n not in arrays:
            continue
        v = arrays[n]
        title = f"{n}: {v.dtype}{v.layout.format('', r.program.mesh_axes)}"
        key = (v.layout.stripped(), v.dtype)
        if key not in drawn:
            drawn[key] = picture(r, v, n, title, max_blocks)
        out.append(dataclasses.replace(drawn[key], name=n, title=title))
    return out


def op_pictures(
    r: Report, names: Sequence[str] = (), max_blocks: int = MAX_BLOCKS
) -> list[Picture]:
    """A picture per value a collective makes (of the arrays `names`, if given)."""
    from shardc.passes.ir import Collective

    mesh = r.program.mesh_axes
    line_of = {c.index: c for c in r.ops}
    out = []
    for index, op in enumerate(r.program.ops):
        if not isinstance(op, Collective) or (names and op.out.array not in names):
            continue
        cost = line_of.get(index)
        kind = cost.op if cost is not None else op.op
        what = f"{kind}_{format_axes(op.axes)}" if op.axes else kind
        line = f" line {op.span.line}" if op.span.line > 0 else ""
        out.append(
            picture(
                r,
                op.out,
                f"#{index}",
                f"#{index}{line} {what}: {op.src.format(mesh)} -> {op.out.format(mesh)}",
                max_blocks,
            )
        )
    return out


class Pictures(tuple):
    """Pictures, shown as text (`str`), Markdown and HTML (a notebook)."""

    def __str__(self) -> str:
        return pictures_text(self)

    def _repr_markdown_(self) -> str:
        return "\n".join(to_markdown(p) for p in self)

    def _repr_html_(self) -> str:
        return "\n".join(to_html(p) for p in self)


def sharding(
    r: Report, arrays: Sequence[str] = (), ops: bool = False, max_blocks: int | None = None
) -> Pictures:
    """`Report.sharding`: the pictures of the arrays (all, or `arrays`), then with `ops` those
    of the values collectives make; `ValueError` for a name that is no array or a
    `max_blocks` out of range, `TypeError` for a value of the wrong type, each naming it."""
    max_blocks = MAX_BLOCKS if max_blocks is None else max_blocks
    if isinstance(arrays, str) or not all(isinstance(a, str) for a in arrays):
        raise TypeError(f"arrays must be names (strings), got {arrays!r:.200}")
    if isinstance(max_blocks, bool) or not isinstance(max_blocks, int):
        raise TypeError(f"max_blocks must be a whole number, got {max_blocks!r:.200}")
    if not 2 <= max_blocks <= MAX_BLOCKS_LIMIT:
        raise ValueError(f"max_blocks must be from 2 to {MAX_BLOCKS_LIMIT}, got {max_blocks}")
    unknown = unknown_arrays(r, arrays)
    if unknown:
        raise ValueError(
            f"no array {unknown[0]!r:.200} in {r.name}; its arrays: " + ", ".join(array_names(r))
        )
    made = op_pictures(r, arrays, max_blocks) if ops else []
    return Pictures([*array_pictures(r, arrays, max_blocks), *made])


def unknown_arrays(r: Report, names: Sequence[str]) -> list[str]:
    """The names in `names` that are no array of the program."""
    arrays = {v.array for v in r.program.arrays}
    return [n for n in dict.fromkeys(names) if n not in arrays]


def array_names(r: Report) -> list[str]:
    return [v.array for v in r.program.arrays]


# ---- writers -------------------------------------------------------------------------------
def to_text(p: Picture) -> str:
    """The picture in ASCII: a box per block, the legend under it.

    The box's row labels sit on the left, column labels on top; every cell is centred."""
    head = ["", *p.cols]
    body = [[label, *cells] for label, cells in zip(p.rows, p.cells, strict=True)]
    widths = [max(len(row[k]) for row in [head, *body]) for k in range(len(head))]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(cells: list[str]) -> str:
        first = f" {cells[0].ljust(widths[0])} "
        rest = [f" {c.center(w)} " for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "|" + "|".join([first, *rest]) + "|"

    out = [p.title, rule, line(head), rule]
    for row in body:
        out += [line(row), rule]
    out += [f"  {n}" for n in p.notes]
    return "\n".join(out) + "\n"


def pictures_text(pictures: Sequence[Picture]) -> str:
    """Pictures one after another, a blank line between."""
    return "\n".join(to_text(p) for p in pictures)


def to_markdown(p: Picture) -> str:
    """The picture as a Markdown table (the language server's hover)."""
    out = [
        f"**{md_text(p.title)}**",
        "",
        "| " + " | ".join(["", *(md_code(c, table=True) for c in p.cols)]) + " |",
        "|" + "---|" * (len(p.cols) + 1),
    ]
    for label, cells in zip(p.rows, p.cells, strict=True):
        out.append(
            "| " + " | ".join([md_code(label, table=True), *(md_text(c) for c in cells)]) + " |"
        )
    out += ["", *(f"- {md_text(n)}" for n in p.notes)]
    return "\n".join(out) + "\n"


PALETTE = (
    "#c6dbef",
    "#fdd0a2",
    "#c7e9c0",
    "#dadaeb",
    "#fcbba1",
    "#d9d9d9",
    "#fee391",
    "#9ecae1",
    "#a1d99b",
    "#bcbddc",
)
"""Cell backgrounds for the HTML table, one per block (light: the text stays dark)."""


def to_html(p: Picture) -> str:
    """The picture as an HTML table, each block's cell coloured (the notebook)."""
    e = html_text
    cell = "border:1px solid #888;padding:2px 8px"
    out = [
        f"<div class='shardc-picture'><b>{e(p.title)}</b>"
        f"<table style='border-collapse:collapse;text-align:center'><tr><th></th>"
        + "".join(f"<th style='{cell}'><code>{e(c)}</code></th>" for c in p.cols)
        + "</tr>"
    ]
    for label, cells, ids in zip(p.rows, p.cells, p.group, strict=True):
        row = [f"<th style='{cell};text-align:left'><code>{e(label)}</code></th>"]
        for c, g in zip(cells, ids, strict=True):
            colour = f";background:{PALETTE[g % len(PALETTE)]}" if g >= 0 else ""
            row.append(f"<td style='{cell}{colour}'>{e(c)}</td>")
        out.append("<tr>" + "".join(row) + "</tr>")
    out.append("</table>" + "".join(f"<small>{e(n)}</small><br>" for n in p.notes) + "</div>")
    return "\n".join(out)


__all__ = [
    "ELIDED",
    "MAX_BLOCKS",
    "MAX_BLOCKS_LIMIT",
    "PALETTE",
    "Picture",
    "Pictures",
    "array_names",
    "array_pictures",
    "op_pictures",
    "picture",
    "pictures_text",
    "sharding",
    "to_html",
    "to_markdown",
    "to_text",
    "unknown_arrays",
]
