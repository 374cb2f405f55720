"""The surface program: frozen dataclasses for statements and expressions, with source spans.

Produced by `shardc.lang.parser.parse`; Lark objects never reach this module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

from shardc.lang.dtypes import BYTES
from shardc.lang.layout import Layout
from shardc.lang.send import SendAxis
from shardc.lang.source import NO_SPAN, Span

DTYPES: dict[str, float] = BYTES
"""Bytes per element of each dtype the language accepts (`shardc.lang.dtypes.BYTES`, kept here
for the modules that import it from the syntax)."""

CollectiveKind = Literal[
    "AllGather", "ReduceScatter", "AllReduce", "AllToAll", "Send", "CollectivePermute"
]
"""CollectivePermute is inserted by the compiler (a reshard that only moves blocks between
devices, e.g. I_XY -> I_YX); programs cannot write it."""
COLLECTIVE_KINDS: tuple[CollectiveKind, ...] = (
    "AllGather",
    "ReduceScatter",
    "AllReduce",
    "AllToAll",
    "Send",
)
BinaryOp = Literal["+", "-", "*", "/"]
"""`/` only in what the compiler writes (softmax's normalisation), not in the language."""
ReduceKind = Literal["Sum", "Max", "softmax", "Broadcast"]
"""`Broadcast` only in what the compiler writes (the gradient of a sum)."""


@dataclass(frozen=True, slots=True)
class Sized:
    """A named size: a mesh axis or a dimension; `size` None leaves it symbolic."""

    name: str
    size: int | None
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class MeshAxis:
    """A mesh axis: its size, and where it lives: `X=16 @ici(x, y) nowrap`.

    `link` is the network level (None: the chip's fast link); `physical` names the physical
    axes it occupies (several mesh axes may share one; one mesh axis may span several); `wrap`
    overrides the chip's wraparound rule.
    """

    name: str
    size: int | None
    link: str | None = None
    physical: tuple[str, ...] = ()
    wrap: bool | None = None
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    attr_span: Span = field(default=NO_SPAN, compare=False, repr=False)
    flag: str | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class MeshDecl:
    axes: tuple[MeshAxis, ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class DimDecl:
    dims: tuple[Sized, ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class HardwareDecl:
    name: str
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


CountTree: TypeAlias = "int | str | tuple[str, CountTree, CountTree]"
"""A count as a tree: a whole number, a name, or (op, left, right)."""


@dataclass(frozen=True, slots=True)
class Count:
    """The count of a `repeat` block: whole numbers, dims and mesh axes under `+`, `-`, `*`.

    `text` is the count written back in a normal form (`M + P - 1`, `2 * (L - 1)`); the cost pass
    turns it into a SymPy expression over the size symbols. `line` tells blocks apart."""

    text: str
    names: tuple[str, ...]
    line: int
    tree: CountTree = field(default=1, compare=False, repr=False)
    """The count as a tree: a whole number, a name, or (op, left, right) with op in + - *."""
    span: Span = field(default=NO_SPAN, compare=False, repr=False)

    def fold(self, number: Callable[[int], Any], name: Callable[[str], Any]) -> Any:
        """The count computed with `number` and `name` giving its leaves (+ - * on the rest)."""

        def walk(t: CountTree) -> Any:
            if isinstance(t, int):
                return number(t)
            if isinstance(t, str):
                return name(t)
            op, lhs, rhs = t
            a, b = walk(lhs), walk(rhs)
            return a + b if op == "+" else a - b if op == "-" else a * b

        return walk(self.tree)

    def evaluate(self, sizes: dict[str, int]) -> int:
        """The count with every name given a size."""
        return int(self.fold(int, sizes.__getitem__))


Times = tuple[Count, ...]
"""The counts of the `repeat` blocks around a statement, outermost first; () outside any."""


@dataclass(frozen=True, slots=True)
class ArrayDecl:
    name: str
    dtype: str
    layout: Layout
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    dtype_span: Span = field(default=NO_SPAN, compare=False, repr=False)
    param: bool = False
    """`param W: ...`: trainable; `backward` derives its gradient dW, sharded like W."""
    times: Times = ()
    """Inside `repeat L { }`: one array per iteration (a layer's weights)."""


@dataclass(frozen=True, slots=True)
class Backward:
    """`backward`: derive the backward pass of every statement above it."""

    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Ref:
    """A use of an array; with a layout it declares a new array or requests that layout."""

    name: str
    layout: Layout | None = None
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    renames: tuple[tuple[str, str], ...] = ()
    """`A[T->S, D]`: (old, new) per renamed dim; `layout` names the new dims."""

    def source_dims(self, dims: tuple[str, ...]) -> tuple[str, ...]:
        """`dims` (named as this use names them) back in the array's own names.

        >>> Ref("In", renames=(("T", "S"),)).source_dims(("B", "S", "D"))
        ('B', 'T', 'D')
        """
        back = {new: old for old, new in self.renames}
        return tuple(back.get(d, d) for d in dims)

    def used_dims(self, dims: tuple[str, ...]) -> tuple[str, ...]:
        """The array's `dims` as this use names them.

        >>> Ref("In", renames=(("T", "S"),)).used_dims(("B", "T", "D"))
        ('B', 'S', 'D')
        """
        to = dict(self.renames)
        return tuple(to.get(d, d) for d in dims)


@dataclass(frozen=True, slots=True)
class Contract:
    """`lhs ·_{dims} rhs`: sum over `dims`; shared dims not contracted are batch dims."""

    lhs: Expr
    rhs: Expr
    dims: tuple[str, ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    dims_span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Binary:
    """Elementwise `+`, `-` or `*` with broadcasting by dimension name."""

    op: BinaryOp
    """`/` only in what the compiler writes (softmax's normalisation), not in the language."""
    lhs: Expr
    rhs: Expr
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Call:
    """An elementwise function such as `gelu(A)`."""

    fn: str
    args: tuple[Expr, ...]
    span: Span = field(default=NO_SPAN, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class CollectiveCall:
    """An explicit collective: `AllGather_X(A)`, `ReduceScatter_{X,K}(C)`, `AllToAll_{X,J}(A)`."""

    kind: CollectiveKind
    axes: tuple[str, ...]
    dim: str | None
    arg: Expr
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    sub_span: Span = field(default=NO_SPAN, compare=False, repr=False)
    send: tuple[SendAxis, ...] = ()
    """`Send_{X: 0->3}(A)`, `Send_{P: +1}(A)`: the entries of a point-to-point send
    (dsl/lang/send.py); `axes` are their mesh axes."""


@dataclass(frozen=True, slots=True)
class Reduce:
    """`Sum_{D}(A)`, `Max_{D}(A)`: A reduced over `dims` (the result lacks them);
    `softmax_{S}(A)`: exp(A - Max_S(A)) / Sum_S(exp(A - Max_S(A))), the dims of A."""

    kind: ReduceKind
    """`Broadcast` only in what the compiler writes (the gradient of a sum): `arg` copied along
    the dims of `dims` (the result's, in order) it lacks."""
    dims: tuple[str, ...]
    arg: Expr
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    sub_span: Span = field(default=NO_SPAN, compare=False, repr=False)


Expr = Ref | Contract | Binary | Call | CollectiveCall | Reduce


@dataclass(frozen=True, slots=True)
class Assign:
    """`C[layout]{U_X} = expr`; `layout` None lets the compiler infer it."""

    target: str
    layout: Layout | None
    expr: Expr
    span: Span = field(default=NO_SPAN, compare=False, repr=False)
    target_span: Span = field(default=NO_SPAN, compare=False, repr=False)
    times: Times = ()
    """Inside `repeat L { }`: the statement runs L times."""
    partial: bool = False
    """A compiler-made term of a sum (one contribution to a gradient): its partial sums may stay
    unreduced, so that the sum is reduced once (the derived backward pass sets it)."""


Stmt = MeshDecl | DimDecl | HardwareDecl | ArrayDecl | Assign | Backward


@dataclass(frozen=True, slots=True)
class Program:
    """The statements in order. A `repeat` block is flattened by the parser: its statements
    carry its count in `times`, and `repeats` lists every block (nested ones too)."""

    statements: tuple[Stmt, ...]
    repeats: tuple[Count, ...] = ()


def leave_symbolic(program: Program, names: frozenset[str]) -> Program:
    """`program` with the declared sizes of `names` (dims or mesh axes) dropped, so that they
    are symbolic: how `shardc sweep` compiles the sizes it varies.

    >>> p = Program((DimDecl((Sized("B", 8), Sized("D", 4))),))
    >>> leave_symbolic(p, frozenset({"B"})).statements[0].dims[0].size is None
    True
    """
    if not names:
        return program

    def free(stmt: Stmt) -> Stmt:
        if isinstance(stmt, DimDecl):
            return replace(
                stmt, dims=tuple(replace(d, size=None) if d.name in names else d for d in stmt.dims)
            )
        if isinstance(stmt, MeshDecl):
            return replace(
                stmt, axes=tuple(replace(a, size=None) if a.name in names else a for a in stmt.axes)
            )
        return stmt

    return replace(program, statements=tuple(free(s) for s in program.statements))


ELEMENTWISE_FUNCTIONS: dict[str, int] = {
    "gelu": 8,
    "silu": 4,
    "relu": 1,
    "sigmoid": 4,
    "tanh": 4,
    "exp": 1,
    "log": 1,
    "sqrt": 1,
    "rsqrt": 1,
    "square": 1,
    "neg": 1,
    "abs": 1,
    "copy": 0,
    # derivatives, used by the backward pass (`passes/backward.py`)
    "gelu_grad": 10,
    "silu_grad": 6,
    "relu_grad": 1,
    "sigmoid_grad": 5,
    "tanh_grad": 5,
    "square_grad": 1,
    "max_mask": 1,
}
"""Unary elementwise functions the language knows, with the FLOPs counted per element.

The counts are a convention (docs/cost-model.md): elementwise work is almost always HBM-bound,
so only the order of magnitude matters.
"""

LINEAR_FUNCTIONS = frozenset({"neg", "copy"})
"""Unary functions that are linear, so partial sums {U_X} pass through them unreduced."""

BINARY_FLOPS = 1
"""FLOPs per output element of `+`, `-`, `*`."""
