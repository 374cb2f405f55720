"""The compiled program: per-device local ops and collectives over values with known layouts.

Built by the `insert-collectives` pass from the surface program; every op keeps the span of the
statement it came from, and every inserted collective keeps the reason it was inserted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, assert_never

from shardc.lang.layout import Layout
from shardc.lang.send import SendAxis
from shardc.lang.source import NO_SPAN, Span
from shardc.lang.syntax import CollectiveKind, Count, Times
from shardc.passes.reshard_rules import Step

if TYPE_CHECKING:
    import sympy as sp

    from shardc.passes.symbolic_plans import Candidate


def gradient_name(array: str) -> str:
    """The name of an array's gradient, as `derive-backward` makes it and reports name it.

    >>> gradient_name("W_in")
    'dW_in'
    """
    return f"d{array}"


@dataclass(frozen=True, slots=True)
class Value:
    """An SSA value: one array in one layout. `array` is the user-facing name it belongs to.

    As an operand, `id` is the value read (an earlier op made it: `passes.verify` checks) and
    `array` the name the op shows it by: after `B[I, J_X] = A`, `C = B + A` reads B's blocks
    as `A[I, J_X]` (id `B`, array `A`)."""

    id: str
    array: str
    dtype: str
    layout: Layout

    @property
    def dims(self) -> tuple[str, ...]:
        return self.layout.dim_names

    def format(self, mesh_order: tuple[str, ...] = ()) -> str:
        return self.layout.format(self.array, mesh_order)


@dataclass(frozen=True, slots=True)
class Input:
    """A declared array: its blocks are already on the devices."""

    out: Value
    span: Span = field(default=NO_SPAN, compare=False)
    times: Times = ()
    """The `repeat` blocks it runs in (outermost first): it runs their product of times."""


@dataclass(frozen=True, slots=True)
class Einsum:
    """A local contraction of the two operands' blocks; unreduced axes follow from the layouts."""

    out: Value
    lhs: Value
    rhs: Value
    contract: tuple[str, ...]
    span: Span = field(default=NO_SPAN, compare=False)
    case: str = ""
    times: Times = ()  # as Input.times


@dataclass(frozen=True, slots=True)
class Collective:
    """AllGather / ReduceScatter / AllReduce / AllToAll over `axes`; `dim` is the dim it
    scatters."""

    op: CollectiveKind
    out: Value
    src: Value
    axes: tuple[str, ...]
    dim: str | None = None
    span: Span = field(default=NO_SPAN, compare=False)
    reason: str = ""
    explicit: bool = False
    times: Times = ()  # as Input.times
    send: tuple[SendAxis, ...] = ()
    """A `Send` (point-to-point, dsl/lang/send.py): its entries; `out` has `src`'s layout."""
    combine: str = "sum"
    """`max`: an AllReduce that keeps the largest of the group's values (a maximum over a
    sharded dimension: `Max_{D}`, softmax), at an AllReduce's cost."""


@dataclass(frozen=True, slots=True)
class LocalSlice:
    """A free local reshard: each device keeps a sub-block of what it already holds."""

    out: Value
    src: Value
    span: Span = field(default=NO_SPAN, compare=False)
    reason: str = ""
    times: Times = ()  # as Input.times


@dataclass(frozen=True, slots=True)
class Elementwise:
    """`fn` applied elementwise (`+`, `-`, `*` with broadcasting by dim name, or a unary call)."""

    fn: str
    out: Value
    args: tuple[Value, ...]
    span: Span = field(default=NO_SPAN, compare=False)
    times: Times = ()  # as Input.times


@dataclass(frozen=True, slots=True)
class Reduction:
    """A local reduction of the operand's block over `dims` (`sum` or `max`). Over a dim
    sharded over axes U, a sum is the device's partial sum (`out` unreduced over U); a max is
    the device's partial maximum, which an AllReduce with `combine="max"` completes."""

    kind: str
    out: Value
    src: Value
    dims: tuple[str, ...]
    span: Span = field(default=NO_SPAN, compare=False)
    times: Times = ()  # as Input.times


Op = Input | Einsum | Collective | LocalSlice | Elementwise | Reduction


def operands(op: Op) -> tuple[Value, ...]:
    """The values an op reads, in operand order (an input reads none).

    >>> a = Value("A", "A", "f32", Layout.of({"I": ()}))
    >>> [v.id for v in operands(Elementwise("exp", Value("E", "E", "f32", a.layout), (a,)))]
    ['A']
    """
    match op:
        case Input():
            return ()
        case Einsum(lhs=lhs, rhs=rhs):
            return (lhs, rhs)
        case Collective(src=src) | LocalSlice(src=src) | Reduction(src=src):
            return (src,)
        case Elementwise(args=args):
            return args
    assert_never(op)


@dataclass(frozen=True, slots=True)
class Alternative:
    """One plan the contraction search considered for a statement: the reshard steps on each
    operand and on the result, what it costs, and when it would beat the chosen plan.

    Data only; `shardc.driver.decisions` renders it (a plan in words, its cost, its condition).
    """

    lhs_steps: tuple[Step, ...]
    rhs_steps: tuple[Step, ...]
    out_steps: tuple[Step, ...]
    cost: sp.Expr
    """Communication time in the hardware symbols (`T_ici`, `W_ici`, ...) and the sizes."""
    value: float
    """What ranked it: time (bytes / W_ici without a chip) at the program's sizes when every size
    is known, else at the typical sizes `TYPICAL_DIM` and `TYPICAL_AXIS`."""
    chosen: bool
    wins: sp.Basic | None = None
    """Where sizes are symbolic, the relation over them under which this plan moves fewer bytes
    than the chosen one (`sp.true` / `sp.false` for always / never); None for the chosen plan and
    where the numbers decided."""


@dataclass(frozen=True, slots=True)
class Decision:
    """Which plan a contraction `target = lhs ·_contract rhs` got, and what it beat (or would
    beat, and when): the record that the report's `decisions` section prints."""

    line: int
    target: str
    lhs: str
    rhs: str
    contract: tuple[str, ...]
    alternatives: tuple[Alternative, ...]
    """The distinct plans, best first (at most three); `alternatives[0]` is the chosen one."""
    numeric: bool
    """Every size known: ranked by time at the numbers. Otherwise by the book's rule for each
    axis's case, then by communication at typical sizes ("default")."""
    has_chip: bool
    """Times are in seconds (a chip is chosen); otherwise in bytes over `W_ici`."""
    search: tuple[int, int] | None = None
    """(tried, space) when the plan search was capped; None when it was exhaustive."""
    chosen_moves_no_data: bool = False
    """The chosen plan's collectives move no bytes (latency only): no alternative can win."""
    candidates: tuple[Candidate, ...] = ()
    """Where the ranking depends on symbolic sizes: every plan the search found, keyed as the
    planner keys plans with every size known (`passes.symbolic_plans`); empty otherwise."""
    ordinal: int = -1
    """Which contraction of the program this is (0 for the first), as `Chooser`s count them."""
    chain: tuple[float, float] | None = None
    """Where the plan was chosen with the contractions that consume its result (a chain in one
    statement, `passes.lower.chain`): the chain's time planned so and one product at a time."""

    @property
    def chosen(self) -> Alternative:
        return self.alternatives[0]


@dataclass(frozen=True, slots=True)
class CompiledProgram:
    """The per-device program: mesh and dim sizes (None = symbolic), ops in execution order."""

    name: str
    mesh: tuple[tuple[str, int | None], ...]
    dims: tuple[tuple[str, int | None], ...]
    hardware: str | None
    ops: tuple[Op, ...]
    arrays: tuple[Value, ...]
    decisions: tuple[Decision, ...] = ()
    topology: Topology | None = None
    params: tuple[str, ...] = ()
    """Arrays declared `param` (trainable)."""
    repeats: tuple[Count, ...] = ()
    """Every `repeat` block, in source order (nested ones after their parent)."""
    array_times: tuple[tuple[str, Times], ...] = ()
    """The `repeat` blocks around each array's declaration or assignment (arrays in none are
    left out): such an array exists once per iteration."""
    backward_line: int | None = None
    """The line of the `backward` statement, whose derived ops carry its span; None without
    one. Set by the pipeline from what `derive-backward` returned."""
    sized_choices: int = 0
    """How many plan choices depend on symbolic sizes (`passes.symbolic_plans`): 0 means binding
    them changes no op, only the numbers."""
    aliases: tuple[tuple[str, str], ...] = ()
    """`B = A` (no layout, nothing to do): (B, A), B another name for A's blocks. Memory counts
    the blocks once, under A."""

    @property
    def mesh_axes(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.mesh)

    @property
    def dims_and_mesh(self) -> dict[str, int | None]:
        """Every size name (dims, then mesh axes) with its declared size (None: symbolic)."""
        return {**dict(self.dims), **dict(self.mesh)}

    @property
    def values(self) -> dict[str, Value]:
        return {op.out.id: op.out for op in self.ops}


@dataclass(frozen=True, slots=True)
class PhysicalAxis:
    """A physical ICI axis: how many chips lie along it and whether it closes into a ring."""

    name: str
    length: int | None
    wrap: bool
    why: str  # where `wrap` came from: the chip's rule, an override, or an assumption


@dataclass(frozen=True, slots=True)
class AxisLink:
    """Where one mesh axis lives.

    `level` is ici | nvlink | pcie | ib | dcn. On ICI, `physical` names the physical axes it
    occupies and `stride` is how many chips apart its neighbours are (mesh axes sharing a
    physical axis: the later ones are minor). On NVLink, `inner` is how many of its devices share
    an NVLink domain; the remaining factor crosses InfiniBand (None: all of it is inside).
    """

    axis: str
    level: str
    physical: tuple[str, ...] = ()
    stride: int = 1
    inner: int | None = None
    size: int | None = None
    """The axis's size when known (a group of axes closes a ring only if it spans its physical
    axis)."""


@dataclass(frozen=True, slots=True)
class Topology:
    links: tuple[AxisLink, ...]
    physical: tuple[PhysicalAxis, ...]
    family: str  # "tpu" | "gpu" | "none" (no chip)

    def link(self, axis: str) -> AxisLink:
        for x in self.links:
            if x.axis == axis:
                return x
        return AxisLink(axis, "ici", (axis,))

    def phys(self, name: str) -> PhysicalAxis:
        for p in self.physical:
            if p.name == name:
                return p
        return PhysicalAxis(name, None, True, "assumed")
