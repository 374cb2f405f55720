"""Read collectives, what they move and matmul FLOPs out of XLA's optimized HLO text (no JAX).

Each collective's operands are traced back through the module (into fusions, through converts,
reshapes, slices and other collectives) to the jitted function's parameters: which inputs the
moved array comes from, and whether it is an input as declared, a function of inputs, or the
result of a contraction. Device groups: `shardc.tools.xla.groups`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from shardc.lang.dtypes import BYTES, XLA_NAME
from shardc.tools.xla.groups import Groups, balanced, parse_replica_groups

XLA_DTYPE_BYTES: dict[str, float] = {
    # shardc's own dtypes by their HLO names (ints where whole, so bytes print as 1024, not 1024.0)
    **{XLA_NAME[d]: int(b) if b == int(b) else b for d, b in BYTES.items()},
    "f64": 8,
    "s64": 8,
    "u64": 8,
    "s32": 4,
    "u32": 4,
    "s16": 2,
    "u16": 2,
    "u8": 1,
    "pred": 1,
    "u4": 0.5,
    "f8e5m2": 1,
}
"""Bytes per element of the HLO element types shardc's dtypes lower to (and a few more)."""

COLLECTIVE_OPS: dict[str, str] = {
    "all-gather": "AllGather",
    "all-gather-start": "AllGather",
    "reduce-scatter": "ReduceScatter",
    "all-reduce": "AllReduce",
    "all-reduce-start": "AllReduce",
    "all-to-all": "AllToAll",
    "ragged-all-to-all": "AllToAll",
    "collective-permute": "CollectivePermute",
    "collective-permute-start": "CollectivePermute",
}
"""HLO opcodes that communicate, by the name shardc gives them (`-done` halves are skipped)."""

_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([0-9,]*)\]")
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*")


@dataclass(frozen=True, slots=True)
class ArrayShape:
    """One HLO array shape: element type and dimensions."""

    dtype: str
    dims: tuple[int, ...]

    @property
    def elements(self) -> int:
        return math.prod(self.dims)

    @property
    def bytes(self) -> float:
        return self.elements * XLA_DTYPE_BYTES.get(self.dtype, 4)

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.dims))}]"


INPUT, ELEMENTWISE, CONTRACTION = "input", "elementwise", "contraction"
_KIND_RANK = {INPUT: 0, ELEMENTWISE: 1, CONTRACTION: 2}


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a value comes from: the jitted function's parameters (by position) it depends on,
    and the most any path did to them: `input` (moved, converted, reshaped or sliced only),
    `elementwise` (a function of them), `contraction` (through a dot or a reduce)."""

    params: frozenset[int] = frozenset()
    kind: str = INPUT

    def join(self, other: Origin) -> Origin:
        kind = max(self.kind, other.kind, key=_KIND_RANK.__getitem__)
        return Origin(self.params | other.params, kind)

    def at_least(self, kind: str) -> Origin:
        return Origin(self.params, max(self.kind, kind, key=_KIND_RANK.__getitem__))


@dataclass(frozen=True, slots=True)
class HloCollective:
    """A collective in the optimized HLO: `shapes` are its results (several if combined),
    `operands` its operands' shapes and `origins` where each operand comes from."""

    kind: str
    opcode: str
    shapes: tuple[ArrayShape, ...]
    groups: Groups | None
    groups_text: str
    name: str
    operands: tuple[ArrayShape, ...] = ()
    origins: tuple[Origin, ...] = ()

    @property
    def group_size(self) -> int | None:
        return len(self.groups[0]) if self.groups else None

    @property
    def result_elements(self) -> int:
        return sum(s.elements for s in self.shapes)

    @property
    def operand_elements(self) -> int:
        return sum(s.elements for s in self.operands)

    @property
    def v_elements(self) -> int:
        """The sharding chapter's V in elements: the larger side (a reduce-scatter's input is
        G x its output)."""
        n = self.result_elements
        if self.kind == "ReduceScatter" and self.group_size:
            return n * self.group_size
        return n

    @property
    def dtype(self) -> str:
        return self.shapes[0].dtype if self.shapes else "f32"

    @property
    def origin(self) -> Origin | None:
        """Where the moved array comes from (all operands together); None if not traced."""
        if not self.origins:
            return None
        out = self.origins[0]
        for o in self.origins[1:]:
            out = out.join(o)
        return out

    def split(self) -> tuple[HloCollective, ...]:
        """A combined all-reduce, all-gather or reduce-scatter (XLA's combiner passes put
        several arrays in one collective) as one collective per array, as shardc counts them;
        anything else (an all-to-all's tuple form is the pieces of one array) as it is."""
        if (
            self.kind not in ("AllReduce", "AllGather", "ReduceScatter")
            or len(self.operands) < 2
            or len(self.shapes) != len(self.operands)
            or len(self.origins) != len(self.operands)
        ):
            return (self,)
        return tuple(
            HloCollective(
                self.kind,
                self.opcode,
                (shape,),
                self.groups,
                self.groups_text,
                self.name,
                (operand,),
                (origin,),
            )
            for shape, operand, origin in zip(self.shapes, self.operands, self.origins, strict=True)
        )

    def shape_text(self) -> str:
        """`f32[8,4]`; a combined or tuple-form collective: `8 x f32[1,512,2048]`."""
        if len(set(self.shapes)) == 1 and len(self.shapes) > 1:
            return f"{len(self.shapes)} x {self.shapes[0]}"
        text = ", ".join(map(str, self.shapes))
        return f"({text})" if len(self.shapes) > 1 else text


@dataclass(frozen=True, slots=True)
class HloSummary:
    """What one compiled module communicates and how many matmul FLOPs it does per device."""

    collectives: tuple[HloCollective, ...]
    dot_flops: float


def parse_shapes(text: str) -> tuple[ArrayShape, ...]:
    """Every array shape in a (possibly tuple) HLO shape.

    >>> parse_shapes("(f32[2,3]{1,0}, bf16[4]{0})")
    (ArrayShape(dtype='f32', dims=(2, 3)), ArrayShape(dtype='bf16', dims=(4,)))
    """
    return tuple(
        ArrayShape(t, tuple(int(d) for d in dims.split(",") if d))
        for t, dims in _ARRAY.findall(text)
    )


def _split_instruction(line: str) -> tuple[str, str, str, str] | None:
    """(name, shape text, opcode, the rest) of one instruction line, or None."""
    m = _INSTR.match(line)
    if not m:
        return None
    rest = line[m.end() :]
    if rest.startswith("("):
        end = balanced(rest, 0)
    else:
        end = rest.find(" ")
        if end < 0:
            return None
        if "{" in rest[:end]:  # layout: f32[2,3]{1,0}
            end = rest.find(" ", end)
    shape, tail = rest[:end], rest[end:].lstrip()
    op = re.match(r"([\w\-]+)\(", tail)
    if not op:
        return None
    return m.group(1), shape, op.group(1), tail[op.end() - 1 :]


# ---- the module: computations and instructions ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Instr:
    """One HLO instruction: `operands` by name, `attrs` the text after the operand list."""

    name: str
    shape: str
    opcode: str
    operands: tuple[str, ...]
    attrs: str
    index: int | None = None  # a parameter's position


@dataclass
class Module:
    """The computations of an HLO module: instructions by name, each computation's root."""

    entry: str = ""
    comps: dict[str, dict[str, Instr]] = field(default_factory=dict)
    roots: dict[str, str] = field(default_factory=dict)


_COMPUTATION = re.compile(r"^\s*(ENTRY\s+)?%?([\w.\-]+)\s*(?:\(.*\)\s*->.*)?\{\s*$")


def parse_module(hlo_text: str) -> Module:
    """Every computation's instructions (a module with no headers: one computation)."""
    mod = Module()
    comp = ""
    for line in hlo_text.splitlines():
        parts = _split_instruction(line)
        if parts is None:
            head = _COMPUTATION.match(line)
            if head and not line.lstrip().startswith("HloModule"):
                comp = head.group(2)
                if head.group(1):
                    mod.entry = comp
            continue
        name, shape, opcode, tail = parts
        end = balanced(tail, 0)
        args = tail[1 : end - 1]
        index = int(args) if opcode == "parameter" and args.strip().isdigit() else None
        instr = Instr(
            name, shape, opcode, tuple(re.findall(r"%([\w.\-]+)", args)), tail[end:], index
        )
        mod.comps.setdefault(comp, {})[name] = instr
        if line.lstrip().startswith("ROOT"):
            mod.roots[comp] = name
    if not mod.entry and mod.comps:
        mod.entry = list(mod.comps)[-1]
    return mod


# ---- where values come from ---------------------------------------------------------------------

_PASS = frozenset(
    {
        "convert",
        "bitcast",
        "bitcast-convert",
        "copy",
        "copy-start",
        "copy-done",
        "reshape",
        "transpose",
        "broadcast",
        "slice",
        "dynamic-slice",
        "pad",
        "reverse",
        "concatenate",
        "dynamic-update-slice",
        "select",
        "tuple",
        "optimization-barrier",
        "all-gather-done",
        "all-reduce-done",
        "collective-permute-done",
        "async-start",
        "async-done",
        *COLLECTIVE_OPS,
    }
)
"""Opcodes that move, convert, reshape, slice or combine values without computing on them."""

_CONTRACT = frozenset({"dot", "convolution", "reduce", "reduce-window"})
_SOURCELESS = frozenset(
    {
        "constant",
        "iota",
        "partition-id",
        "replica-id",
        "rng",
        "after-all",
        "rng-get-and-update-state",
    }
)


class _Tracer:
    """Origins of values, through fusions (a fused parameter is the fusion's operand)."""

    def __init__(self, mod: Module) -> None:
        self.mod = mod
        self.memo: dict[tuple, Origin] = {}

    def origin(self, comp: str, name: str, bound: tuple[Origin, ...] | None = None) -> Origin:
        key = (comp, name, bound)
        if key not in self.memo:
            self.memo[key] = Origin()  # a cycle (never in HLO) ends here
            self.memo[key] = self._origin(comp, name, bound)
        return self.memo[key]

    def _origin(self, comp: str, name: str, bound: tuple[Origin, ...] | None) -> Origin:
        ins = self.mod.comps.get(comp, {}).get(name)
        if ins is None:
            return Origin(kind=ELEMENTWISE)
        op = ins.opcode
        if op == "parameter":
            if comp == self.mod.entry and ins.index is not None:
                return Origin(frozenset({ins.index}))
            if bound is not None and ins.index is not None and ins.index < len(bound):
                return bound[ins.index]
            return Origin()
        if op in _SOURCELESS:
            return Origin()
        if op == "get-tuple-element":
            m = re.search(r"index=(\d+)", ins.attrs)
            if m and ins.operands:
                return self.element(comp, ins.operands[0], int(m.group(1)), bound)
        args = [self.origin(comp, o, bound) for o in ins.operands]
        if op == "fusion":
            called = re.search(r"calls=%?([\w.\-]+)", ins.attrs)
            if called and called.group(1) in self.mod.roots:
                sub = called.group(1)
                return self.origin(sub, self.mod.roots[sub], tuple(args))
        out = Origin()
        for a in args:
            out = out.join(a)
        if op in _PASS:
            return out
        return out.at_least(CONTRACTION if op in _CONTRACT or _tag(ins) else ELEMENTWISE)

    def element(self, comp: str, name: str, i: int, bound: tuple[Origin, ...] | None) -> Origin:
        """The origin of element `i` of a tuple-shaped value."""
        ins = self.mod.comps.get(comp, {}).get(name)
        if ins is None:
            return Origin(kind=ELEMENTWISE)
        if ins.opcode == "tuple" and i < len(ins.operands):
            return self.origin(comp, ins.operands[i], bound)
        if ins.opcode == "fusion":
            called = re.search(r"calls=%?([\w.\-]+)", ins.attrs)
            if called and called.group(1) in self.mod.roots:
                sub = called.group(1)
                args = tuple(self.origin(comp, o, bound) for o in ins.operands)
                return self.element(sub, self.mod.roots[sub], i, args)
        if (
            ins.opcode in COLLECTIVE_OPS
            and not ins.opcode.endswith("-start")
            and i < len(ins.operands)
        ):
            return self.origin(comp, ins.operands[i], bound)
        return self.origin(comp, name, bound)


# ---- FLOPs and the summary ----------------------------------------------------------------------


def _dot_flops(ins: Instr, shapes: dict[str, ArrayShape]) -> float:
    out = parse_shapes(ins.shape)
    m = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", ins.attrs)
    if not out or not ins.operands or ins.operands[0] not in shapes or m is None:
        return 0.0
    lhs = shapes[ins.operands[0]]
    k = math.prod(lhs.dims[int(i)] for i in re.findall(r"\d+", m.group(1)))
    return 2.0 * out[0].elements * k


def _tag(ins: Instr) -> bool:
    """A float op XLA made out of a dot (its metadata names the dot_general)."""
    m = re.search(r'op_name="([^"]*)"', ins.attrs)
    out = parse_shapes(ins.shape)
    return (
        m is not None
        and m.group(1).endswith("dot_general")
        and len(out) == 1
        and out[0].dtype.startswith(("f", "bf"))
    )  # s32 ops are the slicing's indices


def _rewritten_dot_flops(instrs: dict[str, Instr], shapes: dict[str, ArrayShape]) -> float:
    """Dots XLA's simplifier rewrote as a multiply and a reduce (or a bare multiply, for a
    size-1 contraction), found by the dot's metadata: 2 x the products, as a dot counts them."""
    flops = 0.0
    reduced: set[str] = set()
    for ins in instrs.values():
        if ins.opcode == "reduce" and _tag(ins) and ins.operands and ins.operands[0] in shapes:
            flops += 2.0 * shapes[ins.operands[0]].elements
            reduced.add(ins.operands[0])
    for ins in instrs.values():
        if ins.opcode == "multiply" and _tag(ins) and ins.name not in reduced:
            flops += 2.0 * parse_shapes(ins.shape)[0].elements
    return flops


def summarize(hlo_text: str, n_devices: int) -> HloSummary:
    """The collectives of an optimized HLO module, what they move, and per-device dot FLOPs."""
    mod = parse_module(hlo_text)
    tracer = _Tracer(mod)
    collectives: list[HloCollective] = []
    flops = 0.0
    for comp, instrs in mod.comps.items():
        shapes = {n: a[0] for n, ins in instrs.items() if len(a := parse_shapes(ins.shape)) == 1}
        flops += _rewritten_dot_flops(instrs, shapes)
        for ins in instrs.values():
            if ins.opcode == "dot":
                flops += _dot_flops(ins, shapes)
            kind = COLLECTIVE_OPS.get(ins.opcode)
            if kind is None:
                continue
            results = parse_shapes(ins.shape)
            if ins.opcode in ("all-gather-start", "collective-permute-start"):
                # Async starts return (operands, results[, context scalars]): keep the results.
                results = tuple(r for r in results if r.dims)
                results = results[len(results) // 2 :]
            groups, text = parse_replica_groups(ins.attrs, n_devices)
            operands = tuple(shapes[o] for o in ins.operands if o in shapes)
            try:
                origins = tuple(tracer.origin(comp, o) for o in ins.operands)
            except RecursionError:  # a chain deeper than Python's stack: left untraced
                origins = ()
            collectives.append(
                HloCollective(kind, ins.opcode, results, groups, text, ins.name, operands, origins)
            )
    return HloSummary(tuple(collectives), flops)
