"""Cost shardc's and XLA's collectives for one statement under shardc's model, and classify.

Both sides go through `passes.cost_model.collective_time` (XLA's over the mesh axes and
sub-axes its device groups span; permutes through `passes.send_cost`) with the sharding
chapter's V (the larger side, per device), so a verdict never depends on whose formulas are
used. Each collective names the array it moves (`arrays`); verdicts and their meaning:
docs/xla-check.md. Known differences are named.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from shardc.lang.layout import DimSharding, Layout, format_axes
from shardc.lang.syntax import DTYPES
from shardc.passes.context import Model
from shardc.passes.ir import Collective, Einsum
from shardc.passes.layout_cost import local_elements, step_bytes
from shardc.passes.reshard import Step
from shardc.tools.xla.arrays import ArrayRef, StatementArrays
from shardc.tools.xla.costs import (
    Hardware,
    Priced,
    collective_seconds,
    group_seconds,
    permute_seconds,
)
from shardc.tools.xla.groups import map_groups
from shardc.tools.xla.hlo import XLA_DTYPE_BYTES, HloSummary
from shardc.tools.xla.statements import Statement

AGREE = "agree"
SAME_COST = "same cost, different choice"
XLA_CHEAPER = "XLA cheaper"
OURS_CHEAPER = "ours cheaper"
UNMAPPED = "unmapped group"
SKIPPED = "skipped"
VERDICTS = (AGREE, SAME_COST, XLA_CHEAPER, OURS_CHEAPER, UNMAPPED, SKIPPED)

BYTE_COUNT_BUG = "byte-count bug"
"""The words that mark a row's explanation as a failure: both sides move the same array with
the same blocks, yet count different bytes."""

FLOPS_RTOL = 1e-6
"""FLOPs agree when they differ by at most this fraction (float rounding of the counts)."""


@dataclass(frozen=True, slots=True)
class Comm:
    """One collective of either side, in shardc's terms: V in the program's dtype, its time
    (None: XLA's device groups could not be costed, `unmapped` says why), the array it moves
    and its per-device blocks (elements in, out)."""

    op: str
    axes: tuple[str, ...]
    dim: str | None
    bytes: float
    time: float | None
    shape: str = ""
    groups: str = ""
    xla_bytes: float | None = None
    dtype: str = ""
    array: str = ""
    ref: ArrayRef | None = None
    blocks: tuple[float, float] = (0.0, 0.0)
    unmapped: str = ""

    def key(self) -> tuple:
        """What must be equal for both sides to insert the same collective."""
        return (self.op, frozenset(self.axes), round(self.bytes, 6), self.ref, self.dtype)

    def kind(self) -> tuple:
        return (self.op, frozenset(self.axes))

    def label(self) -> str:
        ax = format_axes(self.axes) if self.axes else "?"
        return f"{self.op}_{{{ax},{self.dim}}}" if self.dim else f"{self.op}_{ax}"


@dataclass(frozen=True, slots=True)
class Row:
    """The comparison of one statement (`xla_cost` None: some XLA collective has no cost)."""

    line: int
    statement: str
    ours: tuple[Comm, ...]
    xla: tuple[Comm, ...]
    verdict: str
    ours_cost: float
    xla_cost: float | None
    ours_flops: float
    xla_dot_flops: float
    xla_flops: float | None
    xla_bytes_accessed: float | None
    xla_out: str
    ours_out: str
    explanations: tuple[str, ...]
    known: bool  # every difference has a named explanation (else only the generic one)
    reason: str = ""

    @property
    def byte_count_bug(self) -> bool:
        return any(BYTE_COUNT_BUG in e for e in self.explanations)


def ours_comms(
    st: Statement,
    size: Callable[[str], float],
    model: Model,
    hw: Hardware,
    arrays: StatementArrays | None = None,
) -> tuple[Comm, ...]:
    arrays = arrays or StatementArrays(st)
    out = []
    for op in st.ops:
        if isinstance(op, Collective):
            step = Step(op.op, op.axes, op.dim, op.src.layout, op.out.layout)
            v = float(step_bytes(step, op.src.dtype, size))
            t = collective_seconds(op.op, v, op.axes, size, model, hw, op.src.layout, op.out.layout)
            blocks = (
                float(local_elements(op.src.layout, size)),
                float(local_elements(op.out.layout, size)),
            )
            out.append(
                Comm(
                    op.op,
                    op.axes,
                    op.dim,
                    v,
                    t,
                    dtype=op.src.dtype,
                    array=arrays.held.get(op.src.id, op.src.array),
                    ref=arrays.ref(op.src),
                    blocks=blocks,
                )
            )
    return tuple(out)


def ours_dot_flops(st: Statement, size: Callable[[str], float]) -> float:
    total = 0.0
    for op in st.ops:
        if isinstance(op, Einsum):
            seen: dict[str, tuple[str, ...]] = {}
            for v in (op.lhs, op.rhs):
                for d in v.layout.dims:
                    seen.setdefault(d.dim, d.axes)
            lay = Layout(tuple(DimSharding(d, a) for d, a in seen.items()))
            total += 2.0 * float(local_elements(lay, size))
    return total


def xla_comms(
    summary: HloSummary,
    st: Statement,
    mesh: Mapping[str, int],
    model: Model,
    hw: Hardware,
    arrays: StatementArrays | None = None,
) -> tuple[Comm, ...]:
    """XLA's collectives in shardc's terms, each costed over the devices it really uses."""
    arrays = arrays or StatementArrays(st)
    out = []
    for c in (part for whole in summary.collectives for part in whole.split()):
        ref = arrays.xla_ref(c.origin)
        dtype = arrays.program_dtype(c.dtype, ref)
        v = c.v_elements * DTYPES[dtype]
        raw = c.v_elements * XLA_DTYPE_BYTES.get(c.dtype, 4)
        axes: tuple[str, ...] = ()
        if c.groups is None:
            priced = Priced(None, f"the device groups `{c.groups_text}` could not be read")
        elif c.kind == "CollectivePermute":
            axes, priced = permute_seconds(v, c.groups, mesh, model, hw)
        elif (subs := map_groups(c.groups, mesh)) is None:
            priced = Priced(
                None, f"the device groups `{c.groups_text}` are no mesh axis or part of one"
            )
        else:
            axes = tuple(sub.name for sub in subs)
            priced = group_seconds(c.kind, v, subs, mesh, model, hw)
        out.append(
            Comm(
                c.kind,
                axes,
                None,
                v,
                priced.time,
                c.shape_text(),
                c.groups_text,
                raw,
                dtype,
                arrays.label(ref),
                ref,
                (float(c.operand_elements), float(c.result_elements)),
                priced.why,
            )
        )
    return tuple(out)


def _total(comms: tuple[Comm, ...], flops: float, c: float | None) -> float | None:
    if any(x.time is None for x in comms):
        return None
    return sum(x.time or 0.0 for x in comms) + (flops / c if c else 0.0)


def _close(a: float, b: float, rtol: float = 1e-9) -> bool:
    return abs(a - b) <= rtol * max(abs(a), abs(b), 1e-30)


def _take(rest_o: list[Comm], rest_x: list[Comm], o: Comm, x: Comm) -> None:
    rest_o.remove(o)
    rest_x.remove(x)


def explain(
    ours: tuple[Comm, ...],
    xla: tuple[Comm, ...],
    st: Statement,
    xla_out: str,
    ours_out: str,
    flops: tuple[float, float] = (0.0, 0.0),
) -> tuple[list[str], bool]:
    """Named reasons for the differences; `known` is False when none applies (or when both
    sides move the same array with the same blocks and count different bytes)."""
    notes: list[str] = []
    known = True
    if any(x.xla_bytes is not None and not _close(x.xla_bytes, x.bytes) for x in xla):
        notes.append(
            "XLA:CPU computes bf16/f16 in f32, so its collectives move f32 (2x the "
            "bytes); they are costed at the program's dtype, as TPU/GPU would move them"
        )
    for x in xla:
        if x.time is None:
            notes.append(f"{UNMAPPED}: XLA's {x.op} of {x.array} is not costed: {x.unmapped}")
    if not _close(*flops, FLOPS_RTOL):
        notes.append(f"XLA's dots do {flops[1]:.4g} FLOPs per device, shardc's {flops[0]:.4g}")
    rest_o, rest_x = list(ours), list(xla)
    for o in list(rest_o):
        for x in rest_x:
            if o.key() == x.key():
                _take(rest_o, rest_x, o, x)
                break
    if not rest_o and not rest_x:
        return notes, True
    for o in list(rest_o):
        for x in rest_x:
            if (
                o.op == "ReduceScatter"
                and x.op == "AllReduce"
                and set(x.axes) == set(o.axes)
                and o.ref == x.ref
                and _close(x.bytes, o.bytes)
            ):
                notes.append(
                    f"XLA:CPU has no reduce-scatter: where shardc does {o.label()} it "
                    f"all-reduces over {format_axes(o.axes)} and keeps its slice "
                    "(dynamic-slice); on TPU/GPU XLA fuses the pair into a reduce-"
                    "scatter, shardc's choice"
                )
                _take(rest_o, rest_x, o, x)
                break
    gathers_o = [c for c in rest_o if c.op == "AllGather"]
    gathers_x = [c for c in rest_x if c.op == "AllGather"]
    if (
        len(gathers_x) > len(gathers_o) == 1
        and set(gathers_o[0].axes) == {a for c in gathers_x for a in c.axes}
        and all(c.ref == gathers_o[0].ref for c in gathers_x)
        and _close(max(c.bytes for c in gathers_x), gathers_o[0].bytes)
    ):
        notes.append(
            f"XLA gathers one mesh axis at a time ({_labels(gathers_x)}); shardc "
            f"gathers over {format_axes(gathers_o[0].axes)} at once (the sharding "
            "chapter: a multi-axis AllGather uses every axis's links together)"
        )
        rest_o = [c for c in rest_o if c not in gathers_o]
        rest_x = [c for c in rest_x if c not in gathers_x]
    for o in list(rest_o):
        for x in rest_x:
            if o.kind() != x.kind():
                continue
            if o.ref != x.ref:
                notes.append(
                    f"the two sides move different arrays: shardc's {o.label()} moves "
                    f"{o.array} ({_mb(o.bytes)}), XLA's {x.label()} moves {x.array} "
                    f"({_mb(x.bytes)})"
                )
            elif _close(o.blocks[0], x.blocks[0]) and _close(o.blocks[1], x.blocks[1]):
                known = False
                notes.append(
                    f"{BYTE_COUNT_BUG} on one side: both {o.label()} move {o.array} "
                    f"with the same blocks ({o.blocks[0]:.6g} -> {o.blocks[1]:.6g} "
                    f"elements per device) but count V = {_mb(o.bytes)} (shardc), "
                    f"{_mb(x.bytes)} (XLA)"
                )
            else:
                notes.append(
                    f"both {o.label()} move {o.array}, in different blocks: "
                    f"{x.blocks[0]:.6g} -> {x.blocks[1]:.6g} elements per device "
                    f"in XLA, {o.blocks[0]:.6g} -> {o.blocks[1]:.6g} in shardc"
                )
            _take(rest_o, rest_x, o, x)
            break
    if any(c.op == "CollectivePermute" for c in rest_x):
        notes.append(
            "XLA moves blocks with a collective-permute, costed as point-to-point "
            "sends over the links its pairs cross (one shift when every device sends "
            "the same way, else the slowest pair)"
        )
    if st.out_layout is None and xla_out and xla_out != ours_out:
        notes.append(
            f"the result's layout is free: XLA left it as {xla_out}, shardc produced {ours_out}"
        )
    notes = list(dict.fromkeys(notes))  # one note per difference, however often it occurs
    if rest_o or rest_x:
        known = False
        notes.append(
            "XLA's partitioner follows sharding propagation, not a cost search: it "
            f"chose {_labels(rest_x) or 'no collective'} where shardc chose "
            f"{_labels(rest_o) or 'no collective'}"
        )
    return notes, known


def _labels(cs: list[Comm]) -> str:
    return ", ".join(f"{c.label()}({c.array}) ({_mb(c.bytes)})" for c in cs)


def _mb(b: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.3g} B"


def verdict(
    ours: tuple[Comm, ...],
    xla: tuple[Comm, ...],
    flops: tuple[float, float],
    costs: tuple[float, float | None],
) -> str:
    """agree: the same collectives (kind, axes, array, dtype, bytes) and the same FLOPs; else
    unmapped group when XLA's side has no cost; else the cheaper side under shardc's model."""
    if Counter(x.key() for x in ours) == Counter(x.key() for x in xla) and _close(
        *flops, FLOPS_RTOL
    ):
        return AGREE
    t_o, t_x = costs
    if t_x is None:
        return UNMAPPED
    if _close(t_o, t_x):
        return SAME_COST
    return XLA_CHEAPER if t_x < t_o else OURS_CHEAPER


def compare(
    st: Statement,
    summary: HloSummary,
    mesh: Mapping[str, int],
    size: Callable[[str], float],
    model: Model,
    hw: Hardware,
    xla_flops: float | None,
    xla_bytes: float | None,
    xla_out: str,
    ours_out: str,
) -> Row:
    """Classify one statement: agree, same cost, XLA cheaper, ours cheaper, unmapped group."""
    arrays = StatementArrays(st)
    ours = ours_comms(st, size, model, hw, arrays)
    xla = xla_comms(summary, st, mesh, model, hw, arrays)
    flops = (ours_dot_flops(st, size), summary.dot_flops)
    c = hw.flops(st.dtype)
    t_o, t_x = _total(ours, flops[0], c), _total(xla, flops[1], c)
    assert t_o is not None  # shardc's collectives always have a time
    notes, known = explain(ours, xla, st, xla_out, ours_out, flops)
    return Row(
        st.line,
        st.text,
        ours,
        xla,
        verdict(ours, xla, flops, (t_o, t_x)),
        t_o,
        t_x,
        flops[0],
        flops[1],
        xla_flops,
        xla_bytes,
        xla_out,
        ours_out,
        tuple(notes),
        known,
    )


def skipped(st: Statement, reason: str) -> Row:
    return Row(
        st.line, st.text, (), (), SKIPPED, 0.0, 0.0, 0.0, 0.0, None, None, "", "", (), True, reason
    )
