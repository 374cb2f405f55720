"""Which array a collective moves, on either side, in the statement's own names.

shardc's side: the collective's source value, traced back through the statement's ops to its
inputs. XLA's side: `hlo.Origin`, the jitted function's parameters, which are the statement's
inputs in order. Two collectives move the same array when both come from the same inputs by the
same kind of computation: moved only (an input), a function of them (elementwise), or a
contraction (a dot or a reduction).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.lang.dtypes import FROM_XLA, promote
from shardc.passes.ir import Collective, Einsum, Elementwise, LocalSlice, Reduction, Value
from shardc.tools.xla.hlo import CONTRACTION, ELEMENTWISE, INPUT, Origin
from shardc.tools.xla.statements import Statement

_RANK = {INPUT: 0, ELEMENTWISE: 1, CONTRACTION: 2}
_NARROW_FLOATS = ("bf16", "f16", "fp8")
"""Dtypes XLA:CPU computes in f32 (it converts before communicating)."""


@dataclass(frozen=True, slots=True)
class ArrayRef:
    """An array by where it comes from: the statement's inputs, and what was done to them."""

    sources: frozenset[str]
    kind: str = INPUT

    def join(self, other: ArrayRef, kind: str = INPUT) -> ArrayRef:
        kinds = (self.kind, other.kind, kind)
        return ArrayRef(self.sources | other.sources, max(kinds, key=_RANK.__getitem__))


class StatementArrays:
    """The arrays of one statement: each value's `ArrayRef`, and the names shardc gives them."""

    def __init__(self, st: Statement) -> None:
        self.st = st
        self.inputs = {x.name for x in st.inputs}
        # shardc's value ids of the inputs: `C[K_X, J] = A` holds C in A's slice `A.1`. The
        # first input holding a value names it (an input of the value's own name first).
        self.held: dict[str, str] = {}
        for x in st.inputs:
            if x.vid and (x.vid not in self.held or x.vid == x.name):
                self.held[x.vid] = x.name
        self.producers = {op.out.id: op for op in st.ops}
        self.memo: dict[str, ArrayRef] = {}
        self.names: dict[ArrayRef, list[str]] = {}
        for x in st.inputs:
            self._name(ArrayRef(frozenset({x.name})), x.name)
        for op in st.ops:
            self._name(self.ref(op.out), op.out.array)

    def _name(self, ref: ArrayRef, name: str) -> None:
        names = self.names.setdefault(ref, [])
        if name not in names:
            names.append(name)

    def ref(self, v: Value) -> ArrayRef:
        """Where a value of shardc's comes from (the statement's inputs stop the walk)."""
        if v.id not in self.memo:
            self.memo[v.id] = ArrayRef(frozenset({v.array}))  # a cycle (never) ends here
            self.memo[v.id] = self._ref(v)
        return self.memo[v.id]

    def _ref(self, v: Value) -> ArrayRef:
        op = self.producers.get(v.id)
        if v.id in self.held:
            return ArrayRef(frozenset({self.held[v.id]}))
        if v.id in self.inputs or op is None:
            return ArrayRef(frozenset({v.array}))
        match op:
            case Collective(src=src) | LocalSlice(src=src):
                return self.ref(src)
            case Einsum(lhs=lhs, rhs=rhs):
                return self.ref(lhs).join(self.ref(rhs), CONTRACTION)
            case Reduction(src=src):
                return self.ref(src).join(self.ref(src), CONTRACTION)
            case Elementwise(args=args):
                out = ArrayRef(frozenset(), ELEMENTWISE)
                for a in args:
                    out = out.join(self.ref(a), ELEMENTWISE)
                return out
        return ArrayRef(frozenset({v.array}))

    def xla_ref(self, origin: Origin | None) -> ArrayRef | None:
        """XLA's origin in the statement's names (parameter i is the statement's input i)."""
        if origin is None or any(i >= len(self.st.inputs) for i in origin.params):
            return None
        return ArrayRef(frozenset(self.st.inputs[i].name for i in origin.params), origin.kind)

    def label(self, ref: ArrayRef | None) -> str:
        """The array's name in the statement (`B`, `C`), or what it is computed from."""
        if ref is None:
            return "an array not traced"
        names = self.names.get(ref, [])
        if len(names) == 1:
            return names[0]
        what = ", ".join(sorted(ref.sources)) or "constants"
        if ref.kind == CONTRACTION:
            return f"a contraction of {what}"
        if ref.kind == ELEMENTWISE:
            return f"a function of {what}"
        return what

    def program_dtype(self, hlo_dtype: str, ref: ArrayRef | None) -> str:
        """The dtype an XLA collective moves on TPU/GPU: its own, except that XLA:CPU computes
        bf16, f16 and fp8 in f32: an f32 collective of such inputs moves their dtype."""
        dtypes = {x.name: x.dtype for x in self.st.inputs}
        source = self.st.dtype
        if ref is not None and ref.sources:
            found = [dtypes[s] for s in sorted(ref.sources) if s in dtypes]
            if found:
                source = found[0]
                for d in found[1:]:
                    source = promote(source, d)
        own = FROM_XLA.get(hlo_dtype)
        if own is None or (own == "f32" and source in _NARROW_FLOATS):
            return source
        return own
