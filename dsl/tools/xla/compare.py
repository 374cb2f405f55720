"""Cost shardc's and XLA's collectives for one statement under shardc's model, and classify.

Both sides go through `passes.cost_model.collective_time` with the sharding chapter's V (the larger side, per
device), so a verdict never depends on whose formulas are used. Known differences are named.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from shardc.lang.dtypes import promote
from shardc.lang.layout import DimSharding, Layout, format_axes
from shardc.lang.syntax import DTYPES
from shardc.passes.cost_model import Model
from shardc.passes.ir import Collective, Einsum
from shardc.passes.layout_cost import local_elements, step_bytes
from shardc.passes.reshard import Step
from shardc.tools.xla.costs import Hardware, collective_seconds
from shardc.tools.xla.hlo import XLA_DTYPE_BYTES, HloCollective, HloSummary
from shardc.tools.xla.statements import Statement

AGREE = "agree"
SAME_COST = "same cost, different choice"
XLA_CHEAPER = "XLA cheaper"
OURS_CHEAPER = "ours cheaper"
SKIPPED = "skipped"
VERDICTS = (AGREE, SAME_COST, XLA_CHEAPER, OURS_CHEAPER, SKIPPED)

XLA_TO_DTYPE = {"f32": "f32", "bf16": "bf16", "f16": "f16", "f8e4m3fn": "fp8", "s8": "int8",
                "s4": "int4"}


@dataclass(frozen=True, slots=True)
class Comm:
    """One collective of either side, in shardc's terms: V in the program's dtype, its time."""

    op: str
    axes: tuple[str, ...]
    dim: str | None
    bytes: float
    time: float
    shape: str = ""
    groups: str = ""
    xla_bytes: float | None = None
    dtype: str = ""

    def key(self) -> tuple[str, frozenset[str], float]:
        return (self.op, frozenset(self.axes), round(self.bytes, 6))

    def label(self) -> str:
        ax = format_axes(self.axes) if self.axes else "?"
        return f"{self.op}_{{{ax},{self.dim}}}" if self.dim else f"{self.op}_{ax}"


@dataclass(frozen=True, slots=True)
class Row:
    """The comparison of one statement."""

    line: int
    statement: str
    ours: tuple[Comm, ...]
    xla: tuple[Comm, ...]
    verdict: str
    ours_cost: float
    xla_cost: float
    ours_flops: float
    xla_dot_flops: float
    xla_flops: float | None
    xla_bytes_accessed: float | None
    xla_out: str
    ours_out: str
    explanations: tuple[str, ...]
    known: bool  # every difference has a named explanation (else only the generic one)
    reason: str = ""


def ours_comms(st: Statement, size: Callable[[str], float], model: Model,
               hw: Hardware) -> tuple[Comm, ...]:
    out = []
    for op in st.ops:
        if isinstance(op, Collective):
            step = Step(op.op, op.axes, op.dim, op.src.layout, op.out.layout)
            v = float(step_bytes(step, op.src.dtype, size))
            t = collective_seconds(op.op, v, op.axes, size, model, hw)
            out.append(Comm(op.op, op.axes, op.dim, v, t, dtype=op.src.dtype))
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


def statement_dtypes(st: Statement) -> set[str]:
    out = {x.dtype for x in st.inputs} | {st.dtype}
    for op in st.ops:
        out.add(op.out.dtype)
    return out


def _axes_of_groups(c: HloCollective, mesh: Mapping[str, int]) -> tuple[str, ...]:
    """The mesh axes a collective's device groups span (device ids are row-major coords)."""
    if not c.groups:
        return ()
    names, sizes = list(mesh), list(mesh.values())
    varying: set[str] = set()
    for group in c.groups:
        coords = [_coords(d, sizes) for d in group]
        for k, name in enumerate(names):
            if len({co[k] for co in coords}) > 1:
                varying.add(name)
    return tuple(a for a in names if a in varying)


def _coords(device: int, sizes: list[int]) -> tuple[int, ...]:
    out = []
    for s in reversed(sizes):
        out.append(device % s)
        device //= s
    return tuple(reversed(out))


def _program_dtype(c: HloCollective, axes: tuple[str, ...], ours: tuple[Comm, ...],
                   dtypes: set[str], widest: str) -> str | None:
    """The program dtype an XLA collective moves: XLA:CPU computes bf16 and f16 in f32."""
    own = XLA_TO_DTYPE.get(c.dtype)
    if c.dtype != "f32":
        return own
    for o in ours:  # the same collective of shardc's, moving the same number of elements
        if (o.op, frozenset(o.axes)) == (c.kind, frozenset(axes)) and _close(
                o.bytes / DTYPES[o.dtype], float(c.v_elements)):
            return o.dtype
    return own if "f32" in dtypes else widest


def xla_comms(summary: HloSummary, st: Statement, mesh: Mapping[str, int], model: Model,
              hw: Hardware, ours: tuple[Comm, ...] = ()) -> tuple[Comm, ...]:
    dtypes = statement_dtypes(st)
    widest = st.dtype
    for d in dtypes:
        widest = promote(widest, d)
    out = []
    for c in summary.collectives:
        axes = _axes_of_groups(c, mesh)
        dtype = _program_dtype(c, axes, ours, dtypes, widest)
        per = DTYPES[dtype] if dtype else XLA_DTYPE_BYTES.get(c.dtype, 4)
        v = c.v_elements * per
        raw = c.v_elements * XLA_DTYPE_BYTES.get(c.dtype, 4)
        regular = bool(axes) and c.group_size == math.prod(mesh[a] for a in axes)
        if regular:
            t = collective_seconds(c.kind, v, axes, lambda a: float(mesh[a]), model, hw)
        else:  # groups that are not whole mesh axes: one pseudo-axis of the group's size
            n = float(c.group_size or math.prod(mesh.values()))
            t = collective_seconds(c.kind, v, ("?",), _constant(n), model, hw)
        out.append(Comm(c.kind, axes, None, v, t, c.shape_text(), c.groups_text, raw,
                        dtype or c.dtype))
    return tuple(out)


def _total(comms: tuple[Comm, ...], flops: float, c: float | None) -> float:
    return sum(x.time for x in comms) + (flops / c if c else 0.0)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-30)


def explain(ours: tuple[Comm, ...], xla: tuple[Comm, ...], st: Statement,
            xla_out: str, ours_out: str) -> tuple[list[str], bool]:
    """Named reasons for the differences; `known` is False when none applies."""
    notes: list[str] = []
    known = True
    if any(x.xla_bytes is not None and not _close(x.xla_bytes, x.bytes) for x in xla):
        notes.append("XLA:CPU computes bf16/f16 in f32, so its collectives move f32 (2x the "
                     "bytes); they are costed at the program's dtype, as TPU/GPU would move them")
    if Counter(c.key() for c in ours) == Counter(c.key() for c in xla):
        return notes, True
    rest_o, rest_x = list(ours), list(xla)
    for o in list(rest_o):
        for x in rest_x:
            if o.key() == x.key():
                rest_o.remove(o)
                rest_x.remove(x)
                break
    for o in list(rest_o):
        if o.op != "ReduceScatter":
            continue
        for x in rest_x:
            if x.op == "AllReduce" and set(x.axes) == set(o.axes) and _close(x.bytes, o.bytes):
                notes.append(f"XLA:CPU has no reduce-scatter: where shardc does {o.label()} it "
                             f"all-reduces over {format_axes(o.axes)} and keeps its slice "
                             "(dynamic-slice); on TPU/GPU XLA fuses the pair into a reduce-"
                             "scatter, shardc's choice")
                rest_o.remove(o)
                rest_x.remove(x)
                break
    gathers_o = [c for c in rest_o if c.op == "AllGather"]
    gathers_x = [c for c in rest_x if c.op == "AllGather"]
    axes_o = {a for c in gathers_o for a in c.axes}
    if (len(gathers_x) > len(gathers_o) == 1 and axes_o == {a for c in gathers_x for a in c.axes}
            and _close(max(c.bytes for c in gathers_x), gathers_o[0].bytes)):
        notes.append(f"XLA gathers one mesh axis at a time ({_labels(gathers_x)}); shardc "
                     f"gathers over {format_axes(gathers_o[0].axes)} at once (the sharding chapter: a multi-axis "
                     "AllGather uses every axis's links together)")
        rest_o = [c for c in rest_o if c not in gathers_o]
        rest_x = [c for c in rest_x if c not in gathers_x]
        gathers_o, gathers_x = [], []
    if gathers_o and gathers_x and {frozenset(c.axes) for c in gathers_o} == {
            frozenset(c.axes) for c in gathers_x}:
        notes.append(f"both gather over {format_axes(gathers_o[0].axes)}, but a different "
                     f"operand: XLA moves {_mb(sum(c.bytes for c in gathers_x))}, shardc "
                     f"{_mb(sum(c.bytes for c in gathers_o))}")
        rest_o = [c for c in rest_o if c not in gathers_o]
        rest_x = [c for c in rest_x if c not in gathers_x]
    if any(c.op == "CollectivePermute" for c in rest_x):
        notes.append("XLA moves blocks with a collective-permute; shardc's model costs it as "
                     "one transfer of V in one direction of a link along the longest path")
    if st.out_layout is None and xla_out and xla_out != ours_out:
        notes.append(f"the result's layout is free: XLA left it as {xla_out}, shardc produced "
                     f"{ours_out}")
    if rest_o or rest_x:
        known = False
        notes.append("XLA's partitioner follows sharding propagation, not a cost search: it "
                     f"chose {_labels(rest_x) or 'no collective'} where shardc chose "
                     f"{_labels(rest_o) or 'no collective'}")
    return notes, known


def _labels(cs: list[Comm]) -> str:
    return ", ".join(f"{c.label()} ({_mb(c.bytes)})" for c in cs)


def _mb(b: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b:.3g} B"


def compare(st: Statement, summary: HloSummary, mesh: Mapping[str, int],
            size: Callable[[str], float], model: Model, hw: Hardware, xla_flops: float | None,
            xla_bytes: float | None, xla_out: str, ours_out: str) -> Row:
    """Classify one statement: agree, same cost, XLA cheaper, ours cheaper."""
    ours = ours_comms(st, size, model, hw)
    xla = xla_comms(summary, st, mesh, model, hw, ours)
    of = ours_dot_flops(st, size)
    c = hw.flops(st.dtype)
    t_o, t_x = _total(ours, of, c), _total(xla, summary.dot_flops, c)
    same = Counter(x.key() for x in ours) == Counter(x.key() for x in xla)
    if same:
        verdict = AGREE
    elif _close(t_o, t_x):
        verdict = SAME_COST
    else:
        verdict = XLA_CHEAPER if t_x < t_o else OURS_CHEAPER
    notes, known = explain(ours, xla, st, xla_out, ours_out)
    kinds_o = Counter((x.op, frozenset(x.axes)) for x in ours)
    if verdict != AGREE and kinds_o == Counter((x.op, frozenset(x.axes)) for x in xla):
        notes.append("the same collectives move different bytes: a byte-count bug on one side")
        known = False
    return Row(st.line, st.text, ours, xla, verdict, t_o, t_x, of, summary.dot_flops, xla_flops,
               xla_bytes, xla_out, ours_out, tuple(notes), known)


def skipped(st: Statement, reason: str) -> Row:
    return Row(st.line, st.text, (), (), SKIPPED, 0.0, 0.0, 0.0, 0.0, None, None, "", "", (),
               True, reason)


def _constant(n: float) -> Callable[[str], float]:
    """Every axis name to `n` (one pseudo-axis of a group's size)."""
    return lambda _axis: n
