"""The geometry of a sharding picture: which blocks lie along each side of the table, which
device coordinates hold each cell, and the legend under it (`shardc.driver.show` builds on it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sympy as sp

from shardc.driver.formulas import text as formula_text
from shardc.passes.symbols import size_symbol

if TYPE_CHECKING:
    from shardc.passes.ir import Value

ELIDED = "..."
"""A row, column or cell standing for the blocks left out."""
REPLICATED = "*"
PARTIAL = "+"


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


def side_blocks(
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


def cell_text(
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


def table_sides(
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


def _count(axes: Sequence[str], sizes: dict[str, int]) -> str:
    return formula_text(math.prod((_size(a, sizes) for a in axes), start=sp.Integer(1)))


def legend(
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
