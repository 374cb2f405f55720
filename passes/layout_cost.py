"""Bytes of a layout's per-device block and the communication time of reshard steps.

Works over numbers (planning) or SymPy expressions (reports): `size_of` supplies either.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import sympy as sp

from shardc.lang.layout import DimSharding, Layout
from shardc.lang.syntax import DTYPES
from shardc.passes.context import Model
from shardc.passes.cost_model import (
    CollectiveTime,
    Links,
    Num,
    collective_time,
    is_number,
    sprod,
)
from shardc.passes.ir import Topology
from shardc.passes.memo import ELEMENTS, memoized, typed
from shardc.passes.permute_cost import permute_time
from shardc.passes.reshard_rules import Step

SizeOf = Callable[[str], Num]


def local_elements(layout: Layout, size_of: SizeOf) -> Num:
    """Elements of one device's block: each dim divided by the sizes of its axes."""
    out: Num = 1
    for d in layout.dims:
        n = size_of(d.dim)
        split: Num = 1
        for a in d.axes:
            x = size_of(a)
            if not isinstance(x, (int, float)):
                break
            split = split * x
        else:
            if isinstance(n, (int, float)):
                out = out * n / split
                continue
        # a symbol: the block's formula, one per sizes
        sizes = tuple((size_of(d.dim), tuple(size_of(a) for a in d.axes)) for d in layout.dims)
        return _symbolic_elements(
            tuple((typed(n), tuple(typed(a) for a in axes)) for n, axes in sizes)
        )
    return out


@memoized(ELEMENTS, lambda sizes: sizes)
def _symbolic_elements(
    sizes: tuple[tuple[tuple[type, Num], tuple[tuple[type, Num], ...]], ...],
) -> Num:
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
    """Bytes of one device's block: whole bytes, since storage is. A dtype narrower than a
    byte (int4, two elements a byte, packed) takes `ceil(n / 2)` bytes for a block of `n`
    elements: 3 int4 elements occupy 2 bytes, not 1.5 (`ceiling` in a formula).

    >>> sizes = {"I": 3, "J": 8}.__getitem__
    >>> one = lambda d: Layout((DimSharding(d),))
    >>> local_bytes(one("I"), "int4", sizes), local_bytes(one("J"), "int4", sizes)
    (2, 4)
    """
    n = local_elements(layout, size_of)
    symbolic = isinstance(n, sp.Basic)
    b = dtype_bytes(dtype, symbolic)
    if float(b).is_integer():
        return b * n
    if symbolic:
        return sp.ceiling(b * n)
    return math.ceil(b * n)


def step_bytes(step: Step, dtype: str, size_of: SizeOf) -> Num:
    """The sharding chapter's V: the per-device size of the larger side of the collective (a
    CollectivePermute sends the block of its result: the same as its source's, or a part of
    it where it also slices, `passes.permute_cost`)."""
    if step.kind in ("AllGather", "CollectivePermute"):
        return local_bytes(step.dst, dtype, size_of)
    return local_bytes(step.src, dtype, size_of)


def numbers_of(size_of: SizeOf) -> Callable[[str], int | None]:
    """The sizes `size_of` gives as numbers, None where it gives a symbol."""

    def known(name: str) -> int | None:
        n = size_of(name)
        return int(n) if is_number(n) else None

    return known


def step_time(
    step: Step,
    dtype: str,
    size_of: SizeOf,
    model: Model,
    topo: Topology | None,
    links: Links,
    known: Callable[[str], int | None] | None = None,
) -> CollectiveTime:
    """A step's time; a CollectivePermute over its pairs of devices where the mesh axes' sizes
    are `known` (by default, where `size_of` gives numbers): `passes.permute_cost`."""
    if step.kind == "slice":
        return CollectiveTime(0, 0, 0)
    return transfer_time(
        step.kind,
        step_bytes(step, dtype, size_of),
        step.axes,
        step.src,
        step.dst,
        size_of,
        model,
        topo,
        links,
        known,
    )


def transfer_time(
    kind: str,
    v: Num,
    axes: Sequence[str],
    src: Layout,
    dst: Layout,
    size_of: SizeOf,
    model: Model,
    topo: Topology | None,
    links: Links,
    known: Callable[[str], int | None] | None = None,
) -> CollectiveTime:
    """A collective of V = `v` bytes from `src` to `dst` over `axes`: `collective_time`, but a
    CollectivePermute over its pairs of devices (`passes.permute_cost`) where the mesh axes'
    sizes are `known` (by default, where `size_of` gives numbers) and few enough to list."""
    if kind == "CollectivePermute":
        t = permute_time(v, src, dst, size_of, known or numbers_of(size_of), model, topo, links)
        if t is not None:
            return t
    return collective_time(kind, v, axes, size_of, model, topo, links)


def steps_time(
    steps: Sequence[Step],
    dtype: str,
    size_of: SizeOf,
    model: Model,
    topo: Topology | None,
    links: Links,
) -> Num:
    total: Num = 0
    for s in steps:
        total = total + step_time(s, dtype, size_of, model, topo, links).time
    return total


@dataclass(frozen=True, slots=True)
class Pricing:
    """What the reshard planner ranks plans by, in numbers: one array's dtype and dim sizes, the
    cost model, the topology and the link figures per level (`w`, `t`; none: W=1, t=0, bytes
    over W). Tuples throughout: it is part of the planner's memo key. `Pricing("f32", ())`
    ranks by bytes over W alone (every dim 1: the sizes cancel).

    >>> lay, whole = Layout.of({"I": ("X",)}), Layout.of({"I": ()})
    >>> Pricing("f32", (("I", 1024.0),)).time([Step("AllGather", ("X",), None, lay, whole)],
    ...                                       {"X": 4.0})
    3072.0
    """

    dtype: str
    dims: tuple[tuple[str, float], ...]
    """The sizes of the array's dims that are known (the planner keeps blocks whole in them)."""
    typical_dim: float = 1.0
    """The size a dim not in `dims` is priced at (the lowering's TYPICAL_DIM)."""
    model: Model = "exact"
    topology: Topology | None = None
    w: tuple[tuple[str, float], ...] = ()
    t: tuple[tuple[str, float], ...] = ()
    _hash: int = field(default=0, init=False, compare=False, repr=False)
    _links: Links | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Hashed once: a memo key part, and the topology's hash walks every link.
        object.__setattr__(
            self,
            "_hash",
            hash(
                (self.dtype, self.dims, self.typical_dim, self.model, self.topology, self.w, self.t)
            ),
        )

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[Pricing], tuple[object, ...]]:
        # Rebuilt by the constructor: the cached hash of strings differs between processes.
        return (
            Pricing,
            (self.dtype, self.dims, self.typical_dim, self.model, self.topology, self.w, self.t),
        )

    @staticmethod
    def of(
        dtype: str,
        dims: Mapping[str, float],
        typical_dim: float,
        model: Model,
        topology: Topology | None,
        links: Links,
    ) -> Pricing:
        return Pricing(
            dtype,
            tuple(dims.items()),
            typical_dim,
            model,
            topology,
            tuple((lv, float(x)) for lv, x in links.w.items()),
            tuple((lv, float(x)) for lv, x in links.t.items()),
        )

    def links(self) -> Links:
        """The link figures as `Links`, made once: each price a collective's memo keys by them
        (`Links.memo_key`, made once per object too)."""
        out = self._links
        if out is None:
            out = Links(dict(self.w), dict(self.t)) if self.w else Links.uniform(1.0, 0.0)
            object.__setattr__(self, "_links", out)
        return out

    def size_of(self, axis_sizes: Mapping[str, float]) -> SizeOf:
        dims = dict(self.dims)

        def size_of(name: str) -> float:
            if name in dims:
                return dims[name]
            return axis_sizes[name] if name in axis_sizes else self.typical_dim

        return size_of

    def time(
        self, steps: Sequence[Step], axis_sizes: Mapping[str, float], links: Links | None = None
    ) -> float:
        """Seconds (or bytes / W) of `steps` with the mesh axes at `axis_sizes`: `steps_time`."""
        return float(
            steps_time(
                steps,
                self.dtype,
                self.size_of(axis_sizes),
                self.model,
                self.topology,
                links or self.links(),
            )
        )

    def block_bytes(self, dims: Sequence[str], shards: float) -> float:
        """Bytes of one device's block of an array over `dims` split `shards` ways in all."""
        whole = Layout(tuple(DimSharding(d) for d in dims))
        return float(local_bytes(whole, self.dtype, self.size_of({}))) / shards

    def collective(
        self,
        kind: str,
        axes: tuple[str, ...],
        v: float,
        axis_sizes: Mapping[str, float],
        links: Links,
        src: Layout | None = None,
        dst: Layout | None = None,
    ) -> float:
        """Seconds of one collective with V = `v` bytes over `axes`, as `step_time` prices it
        (a CollectivePermute needs its layouts, `src` and `dst`)."""
        size_of = self.size_of(axis_sizes)
        if src is not None and dst is not None:
            return float(
                transfer_time(
                    kind, v, axes, src, dst, size_of, self.model, self.topology, links
                ).time
            )
        assert kind != "CollectivePermute", "a permute is priced over its layouts"
        return float(collective_time(kind, v, axes, size_of, self.model, self.topology, links).time)
