"""Read collectives and matmul FLOPs out of XLA's optimized HLO text (no JAX needed).

Replica groups come in three spellings (explicit lists, iota `[G,S]<=[dims]T(perm)`, and the
mesh form `mesh['axis_0'=4,...], device_ids=(...) {'axis_0'}`); each becomes lists of device ids.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from shardc.lang.dtypes import BYTES, XLA_NAME

XLA_DTYPE_BYTES: dict[str, float] = {
    # shardc's own dtypes by their HLO names (ints where whole, so bytes print as 1024, not 1024.0)
    **{XLA_NAME[d]: int(b) if b == int(b) else b for d, b in BYTES.items()},
    "f64": 8, "s64": 8, "u64": 8, "s32": 4, "u32": 4, "s16": 2, "u16": 2, "u8": 1, "pred": 1,
    "u4": 0.5, "f8e5m2": 1,
}
"""Bytes per element of the HLO element types shardc's dtypes lower to (and a few more)."""

COLLECTIVE_OPS: dict[str, str] = {
    "all-gather": "AllGather", "all-gather-start": "AllGather",
    "reduce-scatter": "ReduceScatter",
    "all-reduce": "AllReduce", "all-reduce-start": "AllReduce",
    "all-to-all": "AllToAll", "ragged-all-to-all": "AllToAll",
    "collective-permute": "CollectivePermute", "collective-permute-start": "CollectivePermute",
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


@dataclass(frozen=True, slots=True)
class HloCollective:
    """A collective in the optimized HLO: `shapes` are its results (several if combined)."""

    kind: str
    opcode: str
    shapes: tuple[ArrayShape, ...]
    groups: tuple[tuple[int, ...], ...] | None
    groups_text: str
    name: str

    @property
    def group_size(self) -> int | None:
        return len(self.groups[0]) if self.groups else None

    @property
    def result_elements(self) -> int:
        return sum(s.elements for s in self.shapes)

    @property
    def v_elements(self) -> int:
        """The sharding chapter's V in elements: the larger side (a reduce-scatter's input is G x its output)."""
        n = self.result_elements
        if self.kind == "ReduceScatter" and self.group_size:
            return n * self.group_size
        return n

    @property
    def dtype(self) -> str:
        return self.shapes[0].dtype if self.shapes else "f32"

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
    return tuple(ArrayShape(t, tuple(int(d) for d in dims.split(",") if d))
                 for t, dims in _ARRAY.findall(text))


def _balanced(text: str, start: int) -> int:
    """Index just past the bracket group opening at `text[start]`."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    stack = [pairs[text[start]]]
    i = start + 1
    while i < len(text) and stack:
        c = text[i]
        if c in pairs:
            stack.append(pairs[c])
        elif c == stack[-1]:
            stack.pop()
        i += 1
    return i


def _split_instruction(line: str) -> tuple[str, str, str, str] | None:
    """(name, shape text, opcode, the rest) of one instruction line, or None."""
    m = _INSTR.match(line)
    if not m:
        return None
    rest = line[m.end():]
    if rest.startswith("("):
        end = _balanced(rest, 0)
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
    return m.group(1), shape, op.group(1), tail[op.end() - 1:]


def _iota(dims: list[int], perm: list[int] | None) -> np.ndarray:
    ids = np.arange(math.prod(dims)).reshape(dims)
    return ids.transpose(perm) if perm else ids


def _ints(text: str) -> list[int]:
    return [int(t) for t in re.findall(r"\d+", text)]


def parse_replica_groups(attrs: str, n_devices: int) -> tuple[tuple[tuple[int, ...], ...] | None,
                                                               str]:
    """The device groups of a collective's attributes, and their text as printed.

    >>> parse_replica_groups("replica_groups={{0,1},{2,3}}, dimensions={0}", 4)[0]
    ((0, 1), (2, 3))
    >>> parse_replica_groups("replica_groups=[2,2]<=[2,2]T(1,0), x", 4)[0]
    ((0, 2), (1, 3))
    >>> parse_replica_groups("replica_groups=mesh['a'=2,'b'=2] {'a'}, x", 4)[0]
    ((0, 2), (1, 3))
    """
    m = re.search(r"source_target_pairs=\{((?:\{\d+,\d+\},?)*)\}", attrs)
    if m:
        pairs = re.findall(r"\{(\d+),(\d+)\}", m.group(1))
        return tuple((int(a), int(b)) for a, b in pairs), m.group(0)
    m = re.search(r"replica_groups=", attrs)
    if not m:
        return None, ""
    i = m.end()
    if attrs.startswith("{", i):
        end = _balanced(attrs, i)
        text = attrs[i:end]
        groups = tuple(tuple(_ints(g)) for g in re.findall(r"\{([\d,\s]*)\}", text[1:-1]))
        if not groups:
            groups = (tuple(range(n_devices)),)
        return groups, text
    m = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", attrs[i:])
    if m:
        shape = _ints(m.group(1))
        ids = _iota(_ints(m.group(2)), _ints(m.group(3)) if m.group(3) else None)
        return tuple(tuple(int(x) for x in row) for row in ids.reshape(shape[0], -1)), m.group(0)
    m = re.match(r"mesh\[([^\]]*)\](?:,\s*device_ids=\(\[([\d,]+)\](?:T\(([\d,]+)\))?\))?"
                 r"\s*\{([^}]*)\}", attrs[i:])
    if m:
        axes = re.findall(r"'([^']+)'=(\d+)", m.group(1))
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        if m.group(2):
            ids = _iota(_ints(m.group(2)), _ints(m.group(3)) if m.group(3) else None)
            ids = ids.reshape(sizes)
        else:
            ids = np.arange(math.prod(sizes)).reshape(sizes)
        chosen = re.findall(r"'([^']+)'", m.group(4))
        if any(":" in c or c not in names for c in chosen) or ":" in m.group(4):
            return None, m.group(0)  # sub-axis spellings: group size comes from the shapes
        keep = [k for k, n in enumerate(names) if n not in chosen]
        order = keep + [names.index(c) for c in chosen]
        group = math.prod(sizes[names.index(c)] for c in chosen)
        flat = ids.transpose(order).reshape(-1, group)
        return tuple(tuple(int(x) for x in row) for row in flat), m.group(0)
    return None, attrs[i:i + 40]


def _dot_flops(shape: str, args: str, shapes: dict[str, ArrayShape]) -> float:
    out = parse_shapes(shape)
    operands = re.findall(r"%([\w.\-]+)", args.split(")", 1)[0])
    m = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", args)
    if not out or not operands or operands[0] not in shapes or m is None:
        return 0.0
    lhs = shapes[operands[0]]
    k = math.prod(lhs.dims[int(i)] for i in _ints(m.group(1)))
    return 2.0 * out[0].elements * k


def summarize(hlo_text: str, n_devices: int) -> HloSummary:
    """The collectives of an optimized HLO module and its per-device dot FLOPs."""
    shapes: dict[str, ArrayShape] = {}
    instrs: list[tuple[str, str, str, str]] = []
    for line in hlo_text.splitlines():
        parts = _split_instruction(line)
        if parts is None:
            continue
        instrs.append(parts)
        arrays = parse_shapes(parts[1])
        if len(arrays) == 1:
            shapes[parts[0]] = arrays[0]
    collectives: list[HloCollective] = []
    flops = 0.0
    for name, shape, opcode, args in instrs:
        if opcode == "dot":
            flops += _dot_flops(shape, args, shapes)
        kind = COLLECTIVE_OPS.get(opcode)
        if kind is None:
            continue
        results = parse_shapes(shape)
        if opcode in ("all-gather-start", "collective-permute-start"):
            # Async starts return (operands, results[, context scalars]): keep the results.
            results = tuple(r for r in results if r.dims)
            results = results[len(results) // 2:]
        groups, text = parse_replica_groups(args, n_devices)
        collectives.append(HloCollective(kind, opcode, results, groups, text, name))
    return HloSummary(tuple(collectives), flops)
