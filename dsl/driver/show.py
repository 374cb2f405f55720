"""Which mesh devices hold which block of an array: a picture as a value (`Picture`, one per
array or per value a collective makes), built for arrays and for the values collectives make;
what `jax.debug.visualize_array_sharding` draws, for named axes and symbolic sizes. The table's
geometry is `shardc.driver.show_blocks`'s, the writers `shardc.driver.show_writers`'s.

A table's rows and columns are the blocks of the sharded dimensions; a cell names the device
coordinates holding the block: `X=3` on an axis that splits the array, `Y=*` on an axis it is
replicated over (every coordinate holds a copy), `Y=+` on an axis it holds partial sums over.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shardc.driver.show_blocks import ELIDED, cell_text, legend, side_blocks, table_sides
from shardc.driver.show_writers import pictures_text, to_html, to_markdown, to_text
from shardc.lang.layout import Layout, format_axes
from shardc.passes.sizes import known_sizes

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.passes.ir import Value

MAX_BLOCKS = 8
"""Blocks shown along a table's side before the middle ones are elided (`--max-blocks`)."""
MAX_BLOCKS_LIMIT = 64
"""The most `max_blocks` may be (a table of 64 x 64 cells)."""


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


def picture(
    r: Report, value: Value, name: str, title: str, max_blocks: int = MAX_BLOCKS
) -> Picture:
    """The picture of one value's blocks under the report's sizes (symbolic where unbound)."""
    program = r.program
    sizes = known_sizes((*program.dims, *program.mesh), r.bindings)
    mesh = program.mesh_axes
    row_dims, col_dims, whole = table_sides(value)
    rows = side_blocks(row_dims, sizes, max_blocks)
    cols = side_blocks(col_dims, sizes, max_blocks)
    unreduced = value.layout.unreduced
    cells, group = [], []
    for i, rc in enumerate(rows.coords):
        line, ids = [], []
        for j, cc in enumerate(cols.coords):
            if rc is None or cc is None:
                line.append(ELIDED)
                ids.append(-1)
            else:
                line.append(cell_text(mesh, rc, cc, unreduced))
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
        legend(value, mesh, sizes, whole),
    )


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


__all__ = [
    "MAX_BLOCKS",
    "MAX_BLOCKS_LIMIT",
    "Picture",
    "Pictures",
    "array_names",
    "array_pictures",
    "op_pictures",
    "picture",
    "sharding",
    "unknown_arrays",
]
