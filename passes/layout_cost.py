"""Bytes of a layout's per-device block and the communication time of reshard steps.

Works over numbers (planning) or SymPy expressions (reports): `size_of` supplies either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sympy as sp

from shardc.lang.layout import Layout
from shardc.lang.syntax import DTYPES
from shardc.passes.cost_model import (
    CollectiveTime,
    Links,
    Model,
    Num,
    collective_time,
    is_number,
    sprod,
)
from shardc.passes.ir import Topology
from shardc.passes.memo import memoized, typed
from shardc.passes.reshard import Step

SizeOf = Callable[[str], Num]


def local_elements(layout: Layout, size_of: SizeOf) -> Num:
    """Elements of one device's block: each dim divided by the sizes of its axes."""
    sizes = tuple((size_of(d.dim), tuple(size_of(a) for a in d.axes)) for d in layout.dims)
    if all(is_number(n) and all(is_number(a) for a in axes) for n, axes in sizes):
        out: Num = 1
        for n, axes in sizes:
            out = out * n / sprod(axes)
        return out
    return _symbolic_elements(tuple((typed(n), tuple(typed(a) for a in axes))
                                    for n, axes in sizes))


@memoized("layout_cost.elements", lambda sizes: sizes)
def _symbolic_elements(sizes: tuple) -> Num:
    out: Num = 1
    for (_, n), axes in sizes:
        out = out * n / sprod(a for _, a in axes)
    return out


def global_elements(layout: Layout, size_of: SizeOf) -> Num:
    return sprod(size_of(d.dim) for d in layout.dims)


def dtype_bytes(dtype: str, symbolic: bool) -> Num:
    """Bytes per element, exact: 1/2 for int4 stays a rational in formulas."""
    b = DTYPES[dtype]
    if float(b).is_integer():
        return int(b)
    return sp.Rational(b).limit_denominator(8) if symbolic else b


def local_bytes(layout: Layout, dtype: str, size_of: SizeOf) -> Num:
    n = local_elements(layout, size_of)
    return dtype_bytes(dtype, isinstance(n, sp.Basic)) * n


def step_bytes(step: Step, dtype: str, size_of: SizeOf) -> Num:
    """The sharding chapter's V: the per-device size of the larger side of the collective."""
    if step.kind == "AllGather":
        return local_bytes(step.dst, dtype, size_of)
    return local_bytes(step.src, dtype, size_of)


def step_time(step: Step, dtype: str, size_of: SizeOf, model: Model, topo: Topology | None,
              links: Links) -> CollectiveTime:
    if step.kind == "slice":
        return CollectiveTime(0, 0, 0)
    v = step_bytes(step, dtype, size_of)
    return collective_time(step.kind, v, step.axes, size_of, model, topo, links)


def steps_time(steps: Sequence[Step], dtype: str, size_of: SizeOf, model: Model,
               topo: Topology | None, links: Links) -> Num:
    total: Num = 0
    for s in steps:
        total = total + step_time(s, dtype, size_of, model, topo, links).time
    return total
