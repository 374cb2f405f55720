"""Named-axis layouts: which mesh axes shard which dimension, and which axes hold partial sums.

`A[I_XY, J]{U_Z}` is `Layout((DimSharding("I", ("X", "Y")), DimSharding("J")), unreduced={"Z"})`.
The axes of one dimension are ordered major first: I_XY splits I into X blocks, each into Y.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from shardc.lang.source import NO_SPAN, Span


@dataclass(frozen=True, slots=True)
class DimSharding:
    """One dimension of an array and the mesh axes sharding it, major first."""

    dim: str
    axes: tuple[str, ...] = ()
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


def format_axes(axes: tuple[str, ...] | list[str]) -> str:
    """`X` / `XY` for one-letter axes, `{data,model}` otherwise.

    >>> format_axes(("X", "Y")), format_axes(("data",)), format_axes(("data", "model"))
    ('XY', 'data', '{data,model}')
    """
    axes = tuple(axes)
    if len(axes) == 1:
        return axes[0]
    if all(len(a) == 1 for a in axes):
        return "".join(axes)
    return "{" + ",".join(axes) + "}"


@dataclass(frozen=True, slots=True)
class Layout:
    """The sharding of every dimension of an array, plus its unreduced (partial-sum) axes."""

    dims: tuple[DimSharding, ...]
    unreduced: frozenset[str] = frozenset()
    # Derived once, on first use, and kept: the planners key memos by layouts and ask a layout
    # for its axes many times (or never: most layouts a search makes are dropped).
    _hash: int | None = field(default=None, init=False, compare=False, repr=False)
    _axes: tuple[str, ...] | None = field(default=None, init=False, compare=False, repr=False)
    _names: tuple[str, ...] | None = field(default=None, init=False, compare=False, repr=False)

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash((self.dims, self.unreduced))
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self) -> tuple[type[Layout], tuple[tuple[DimSharding, ...], frozenset[str]]]:
        # Rebuilt by the constructor: the cached hash of strings differs between processes.
        return (Layout, (self.dims, self.unreduced))

    @staticmethod
    def of(
        spec: dict[str, tuple[str, ...]] | list[tuple[str, tuple[str, ...]]],
        unreduced: frozenset[str] | set[str] = frozenset(),
    ) -> Layout:
        items = spec.items() if isinstance(spec, dict) else spec
        return Layout(tuple(DimSharding(d, tuple(a)) for d, a in items), frozenset(unreduced))

    @property
    def dim_names(self) -> tuple[str, ...]:
        names = self._names
        if names is None:
            names = tuple(d.dim for d in self.dims)
            object.__setattr__(self, "_names", names)
        return names

    def axes_of(self, dim: str) -> tuple[str, ...]:
        for d in self.dims:
            if d.dim == dim:
                return d.axes
        raise KeyError(dim)

    def dim_of_axis(self, axis: str) -> str | None:
        for d in self.dims:
            if axis in d.axes:
                return d.dim
        return None

    @property
    def sharding_axes(self) -> tuple[str, ...]:
        axes = self._axes
        if axes is None:
            axes = tuple(a for d in self.dims for a in d.axes)
            object.__setattr__(self, "_axes", axes)
        return axes

    @property
    def used_axes(self) -> frozenset[str]:
        """Axes that shard a dimension or hold partial sums."""
        return frozenset(self.sharding_axes) | self.unreduced

    def with_axes(self, dim: str, axes: tuple[str, ...]) -> Layout:
        return Layout(
            tuple(DimSharding(d.dim, axes if d.dim == dim else d.axes) for d in self.dims),
            self.unreduced,
        )

    def with_unreduced(self, unreduced: frozenset[str] | set[str]) -> Layout:
        return Layout(self.dims, frozenset(unreduced))

    def stripped(self) -> Layout:
        """The same layout with spans dropped (for hashing/equality in planners)."""
        return Layout(tuple(DimSharding(d.dim, d.axes) for d in self.dims), self.unreduced)

    def renamed(self, names: Mapping[str, str]) -> Layout:
        """The same shardings with dims renamed (`{"T": "S"}`); spans dropped.

        >>> Layout((DimSharding("T", ("X",)), DimSharding("D", ()))).renamed({"T": "S"}).format("A")
        'A[S_X, D]'
        """
        return Layout(
            tuple(DimSharding(names.get(d.dim, d.dim), d.axes) for d in self.dims), self.unreduced
        )

    def relabels(self, other: Layout) -> bool:
        """This layout is `other` with some dims renamed (`In[T->S, D]`): the same blocks, each
        position's axes and the partial sums unchanged.

        >>> Layout.of({"S": ("X",), "D": ()}).relabels(Layout.of({"T": ("X",), "D": ()}))
        True
        """
        return (
            len(self.dims) == len(other.dims)
            and self.unreduced == other.unreduced
            and all(a.axes == b.axes for a, b in zip(self.dims, other.dims, strict=True))
        )

    def reordered(self, dims: tuple[str, ...], unreduced: frozenset[str] | None = None) -> Layout:
        """This layout over `dims`, in their order (each one of its dims; a dim `dims` lack is
        dropped: a broadcast operand's), with its unreduced axes, or `unreduced` where given.

        >>> Layout.of({"I": ("X",), "J": ()}, {"Y"}).reordered(("J", "I")).format("A")
        'A[J, I_X]{U_Y}'
        >>> Layout.of({"I": ("X",), "J": ()}, {"Y"}).reordered(("I",), frozenset()).format()
        '[I_X]'
        """
        return Layout(
            tuple(DimSharding(n, self.axes_of(n)) for n in dims),
            self.unreduced if unreduced is None else unreduced,
        )

    def format(self, name: str = "", mesh_order: tuple[str, ...] = ()) -> str:
        """`A[I_X, J]{U_Y}`.

        >>> Layout.of({"I": ("X",), "J": ()}, {"Y"}).format("A")
        'A[I_X, J]{U_Y}'
        """
        inner = ", ".join(d.dim + (f"_{format_axes(d.axes)}" if d.axes else "") for d in self.dims)
        text = f"{name}[{inner}]"
        if self.unreduced:
            order = {a: i for i, a in enumerate(mesh_order)}
            axes = sorted(self.unreduced, key=lambda a: (order.get(a, len(order)), a))
            text += "{U_" + format_axes(axes) + "}"
        return text
