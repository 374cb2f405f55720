"""Executes a compiled per-device program block by block on simulated devices with numpy.

`check` compares every block with the unsharded computation: it is what proves the collectives
the compiler inserts right. A collective reads only its group's blocks, a local op only its own.
"""

from __future__ import annotations

import itertools
import math
import string
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from shardc.lang.layout import Layout, format_axes
from shardc.lang.send import format_send
from shardc.lang.syntax import LINEAR_FUNCTIONS
from shardc.passes.ir import (
    Collective,
    CompiledProgram,
    Einsum,
    Elementwise,
    Input,
    LocalSlice,
    Op,
    Value,
)

Device = tuple[int, ...]
"""A device's coordinates, one per mesh axis in mesh order."""
Blocks = dict[Device, np.ndarray]
Region = dict[str, tuple[int, int]]
"""The half-open index range `[lo, hi)` a block covers, per dimension name."""


class SimulationError(Exception):
    """The compiled program is wrong: a block cannot be computed, or differs from the reference."""


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _gelu_grad(x: np.ndarray) -> np.ndarray:
    """d/dx of the tanh approximation of gelu."""
    c = np.sqrt(2.0 / np.pi)
    u = c * (x + 0.044715 * x**3)
    t = np.tanh(u)
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t**2) * c * (1.0 + 3 * 0.044715 * x**2)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


# log/sqrt/rsqrt take abs (and +1) so random integer inputs stay finite; only equality matters.
UNARY_FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "gelu": _gelu,
    "silu": lambda x: x * _sigmoid(x),
    "relu": lambda x: np.maximum(x, 0.0),
    "sigmoid": _sigmoid,
    "tanh": np.tanh,
    "exp": np.exp,
    "log": lambda x: np.log(np.abs(x) + 1.0),
    "sqrt": lambda x: np.sqrt(np.abs(x)),
    "rsqrt": lambda x: 1.0 / np.sqrt(np.abs(x) + 1.0),
    "square": np.square,
    "neg": np.negative,
    "abs": np.abs,
    "copy": lambda x: x.copy(),
    # derivatives (the backward pass's f'(x))
    "gelu_grad": lambda x: _gelu_grad(x),
    "silu_grad": lambda x: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x))),
    "relu_grad": lambda x: (x > 0).astype(np.float64),
    "sigmoid_grad": lambda x: _sigmoid(x) * (1.0 - _sigmoid(x)),
    "tanh_grad": lambda x: 1.0 - np.tanh(x) ** 2,
    "square_grad": lambda x: 2.0 * x,
}
"""A float64 implementation of every unary function in `shardc.lang.syntax.ELEMENTWISE_FUNCTIONS`."""

BINARY_FUNCTIONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
}


@dataclass(frozen=True, slots=True)
class _Machine:
    """The simulated mesh: axis and dimension sizes, devices, regions and groups."""

    axes: tuple[str, ...]
    axis_sizes: dict[str, int]
    dim_sizes: dict[str, int | None]
    devices: tuple[Device, ...]

    def device_text(self, device: Device) -> str:
        return "(" + ", ".join(f"{a}={c}" for a, c in zip(self.axes, device, strict=True)) + ")"

    def dim_size(self, dim: str) -> int:
        size = self.dim_sizes.get(dim)
        if size is None:
            raise SimulationError(f"dimension '{dim}' has no size; pass it in `sizes`")
        return size

    def region(self, layout: Layout, device: Device) -> Region:
        """The block of each dimension this device holds: mixed radix over the axes, major first."""
        region: Region = {}
        for d in layout.dims:
            index, count = 0, 1
            for axis in d.axes:
                size = self.axis_sizes[axis]
                index = index * size + device[self.axes.index(axis)]
                count *= size
            block = self.dim_size(d.dim) // count
            region[d.dim] = (index * block, (index + 1) * block)
        return region

    def group(self, device: Device, axes: tuple[str, ...] | frozenset[str]) -> list[Device]:
        """The devices that differ from `device` only in `axes` (itself included)."""
        positions = [self.axes.index(a) for a in sorted(axes, key=self.axes.index)]
        members = []
        for coords in itertools.product(*(range(self.axis_sizes[self.axes[p]]) for p in positions)):
            member = list(device)
            for p, c in zip(positions, coords, strict=True):
                member[p] = c
            members.append(tuple(member))
        return members

    def validate(self, value: Value) -> None:
        """Reject layouts no device assignment can realise, before any block is computed."""
        layout, text = value.layout, value.format(self.axes)
        if len(set(layout.dim_names)) != len(layout.dim_names):
            raise SimulationError(f"value '{value.id}' {text} repeats a dimension")
        used = [*layout.sharding_axes, *layout.unreduced]
        for axis in used:
            if axis not in self.axis_sizes:
                raise SimulationError(f"value '{value.id}' {text} uses unknown mesh axis '{axis}'")
        if len(set(used)) != len(used):
            raise SimulationError(f"value '{value.id}' {text} uses a mesh axis twice")
        for d in layout.dims:
            shards = math.prod(self.axis_sizes[a] for a in d.axes)
            if self.dim_size(d.dim) % shards:
                raise SimulationError(
                    f"value '{value.id}' {text}: {d.dim} (size {self.dim_size(d.dim)}) "
                    f"does not split into {shards} equal blocks"
                )


def _machine(program: CompiledProgram, sizes: dict[str, int]) -> _Machine:
    axis_sizes: dict[str, int] = {}
    for axis, declared in program.mesh:
        size = sizes.get(axis, declared)
        if size is None or size < 1:
            raise SimulationError(f"mesh axis '{axis}' needs a positive size in `sizes`")
        axis_sizes[axis] = size
    axes = program.mesh_axes
    devices = tuple(itertools.product(*(range(axis_sizes[a]) for a in axes)))
    return _Machine(axes, axis_sizes, {**dict(program.dims), **sizes}, devices)


def _index(want: Region, origin: Region, dims: tuple[str, ...]) -> tuple[slice, ...]:
    """Slices selecting region `want` inside a block (ordered by `dims`) that starts at `origin`."""
    return tuple(slice(want[d][0] - origin[d][0], want[d][1] - origin[d][0]) for d in dims)


def _inside(inner: Region, outer: Region) -> bool:
    return all(outer[d][0] <= lo and hi <= outer[d][1] for d, (lo, hi) in inner.items())


def _restrict(
    block: np.ndarray, dims: tuple[str, ...], have: Region, want: Region, out_dims: tuple[str, ...]
) -> np.ndarray:
    """The part of `block` (covering `have`) inside `want`, transposed to `out_dims` order."""
    piece = block[_index(want, have, dims)]
    return np.transpose(piece, [dims.index(d) for d in out_dims])


def _region_text(region: Region) -> str:
    return ", ".join(f"{d}[{lo}:{hi}]" for d, (lo, hi) in region.items())


def _describe(op: Op, order: tuple[str, ...]) -> str:
    match op:
        case Input():
            return f"input {op.out.format(order)}"
        case Einsum():
            lhs, rhs, out = (v.format(order) for v in (op.lhs, op.rhs, op.out))
            return f"einsum {lhs} ·_{{{','.join(op.contract)}}} {rhs} -> {out}"
        case Collective() if op.send:
            return f"{format_send(op.send)} {op.src.format(order)} -> {op.out.format(order)}"
        case Collective():
            axes = [*op.axes, op.dim] if op.dim else list(op.axes)
            sub = format_axes(axes) if len(axes) == 1 else "{" + ",".join(axes) + "}"
            return f"{op.op}_{sub} {op.src.format(order)} -> {op.out.format(order)}"
        case LocalSlice():
            return f"local slice {op.src.format(order)} -> {op.out.format(order)}"
        case Elementwise():
            args = ", ".join(a.format(order) for a in op.args)
            return f"{op.fn}({args}) -> {op.out.format(order)}"
    raise SimulationError(f"unknown op {op!r}")


def _einsum_spec(op: Einsum) -> str:
    """The np.einsum subscripts of a contraction, after checking its dims are consistent."""
    lhs, rhs, out = op.lhs.dims, op.rhs.dims, op.out.dims
    operands = set(lhs) | set(rhs)
    if not set(op.contract) <= operands:
        raise SimulationError(f"contracts dims {sorted(set(op.contract) - operands)} it lacks")
    if set(out) != operands - set(op.contract) or len(set(out)) != len(out):
        raise SimulationError(f"output dims {list(out)} are not the operands' uncontracted dims")
    names = sorted(operands)
    if len(names) > len(string.ascii_letters):
        raise SimulationError("too many dimensions for one einsum")
    letter = {n: string.ascii_letters[i] for i, n in enumerate(names)}
    return (
        ",".join("".join(letter[d] for d in dims) for dims in (lhs, rhs))
        + "->"
        + "".join(letter[d] for d in out)
    )


def _product_unreduced(a: Layout, b: Layout) -> frozenset[str]:
    """Unreduced axes of a product: sum_i p_i * q = (sum_i p_i) * q only if q ignores those axes."""
    if a.unreduced and b.unreduced:
        raise SimulationError("multiplies two partial sums")
    for x, y in ((a, b), (b, a)):
        if x.unreduced & y.used_axes:
            raise SimulationError(
                f"multiplies a partial sum over {sorted(x.unreduced)} by an operand that varies "
                f"over {sorted(x.unreduced & y.used_axes)}"
            )
    return a.unreduced | b.unreduced


def _check_elementwise(op: Elementwise) -> None:
    """Check the arity of an elementwise op and that its output has exactly its operands' dims."""
    arity = 2 if op.fn in BINARY_FUNCTIONS else 1 if op.fn in UNARY_FUNCTIONS else 0
    if not arity:
        raise SimulationError(f"unknown elementwise function '{op.fn}'")
    if len(op.args) != arity:
        raise SimulationError(f"'{op.fn}' takes {arity} operand(s), got {len(op.args)}")
    out_dims = op.out.dims
    operand_dims = set().union(*(a.dims for a in op.args))
    if operand_dims != set(out_dims) or len(set(out_dims)) != len(out_dims):
        raise SimulationError(f"output dims {list(out_dims)} are not the union of its operands'")


def _elementwise_unreduced(op: Elementwise) -> frozenset[str]:
    """The unreduced axes an elementwise op yields; partial sums pass only through linear uses."""
    layouts = [a.layout for a in op.args]
    if op.fn == "*":
        return _product_unreduced(*layouts)
    if op.fn in ("+", "-"):
        if layouts[0].unreduced != layouts[1].unreduced:
            raise SimulationError("adds operands with different unreduced axes")
        return layouts[0].unreduced
    if op.fn in LINEAR_FUNCTIONS:
        return layouts[0].unreduced
    if layouts[0].unreduced:
        raise SimulationError(f"applies '{op.fn}' to a partial sum")
    return frozenset()


def _align(array: np.ndarray, dims: tuple[str, ...], out_dims: tuple[str, ...]) -> np.ndarray:
    """Transpose to `out_dims` order, with size-1 axes for the dims `array` lacks (broadcasting)."""
    present = [d for d in out_dims if d in dims]
    array = np.transpose(array, [dims.index(d) for d in present])
    shape = iter(array.shape)
    return array.reshape(tuple(next(shape) if d in dims else 1 for d in out_dims))


def _apply(
    fn: str, operands: list[tuple[np.ndarray, tuple[str, ...]]], out_dims: tuple[str, ...]
) -> np.ndarray:
    arrays = [_align(a, dims, out_dims) for a, dims in operands]
    if fn in BINARY_FUNCTIONS:
        result = BINARY_FUNCTIONS[fn](*arrays)
    else:
        result = UNARY_FUNCTIONS[fn](arrays[0])
    return np.ascontiguousarray(result, dtype=np.float64)


def _global_input(op: Input, machine: _Machine, inputs: dict[str, np.ndarray]) -> np.ndarray:
    if op.out.array not in inputs:
        raise SimulationError(f"no input array given for '{op.out.array}'")
    array = np.asarray(inputs[op.out.array], dtype=np.float64)
    shape = tuple(machine.dim_size(d) for d in op.out.dims)
    if array.shape != shape:
        raise SimulationError(f"input '{op.out.array}' has shape {array.shape}, expected {shape}")
    return array


# ---- the per-device program: one function per op kind -------------------------------------------


def _run_input(
    op: Input, m: _Machine, inputs: dict[str, np.ndarray], rng: np.random.Generator
) -> Blocks:
    array, out = _global_input(op, m, inputs), op.out
    blocks = {
        d: array[_index(r, {k: (0, 0) for k in r}, out.dims)].copy()
        for d in m.devices
        for r in [m.region(out.layout, d)]
    }
    unreduced = out.layout.unreduced
    if not unreduced:
        return blocks
    # Split each block into partial sums over its U-group: the group's origin keeps the rest.
    positions = [m.axes.index(a) for a in unreduced]
    origins = {d for d in m.devices if all(d[p] == 0 for p in positions)}
    for d in m.devices:
        if d not in origins:
            blocks[d] = rng.integers(-3, 4, size=blocks[d].shape).astype(np.float64)
    for d in sorted(origins):
        others = [g for g in m.group(d, unreduced) if g != d]
        blocks[d] = blocks[d] - sum((blocks[g] for g in others), np.zeros_like(blocks[d]))
    return blocks


def _run_einsum(op: Einsum, m: _Machine, lhs: Blocks, rhs: Blocks) -> Blocks:
    spec = _einsum_spec(op)
    contracted = set(op.contract)
    partial = _product_unreduced(op.lhs.layout, op.rhs.layout) | {
        a for v in (op.lhs, op.rhs) for d in v.layout.dims if d.dim in contracted for a in d.axes
    }
    shared = [d for d in op.lhs.dims if d in op.rhs.dims]
    out: Blocks = {}
    for d in m.devices:
        rl, rr, ro = (m.region(v.layout, d) for v in (op.lhs, op.rhs, op.out))
        for dim in shared:
            if rl[dim] != rr[dim]:
                raise SimulationError(
                    f"misaligned {dim} on device {m.device_text(d)}: lhs holds "
                    f"{dim}[{rl[dim][0]}:{rl[dim][1]}], rhs {dim}[{rr[dim][0]}:{rr[dim][1]}]"
                )
        for dim in op.out.dims:
            held = rl[dim] if dim in rl else rr[dim]
            if ro[dim] != held:
                raise SimulationError(
                    f"output block {dim}[{ro[dim][0]}:{ro[dim][1]}] on device {m.device_text(d)} "
                    f"is not the {dim}[{held[0]}:{held[1]}] its operands hold"
                )
        out[d] = np.einsum(spec, lhs[d], rhs[d])
    # Checked after alignment: a misaligned contraction is the more basic error.
    if partial != op.out.layout.unreduced:
        raise SimulationError(
            f"the local result is unreduced over {sorted(partial)} but the output layout says "
            f"{sorted(op.out.layout.unreduced)}"
        )
    return out


def _gather(op: Collective, m: _Machine, src: Blocks) -> Blocks:
    """AllGather / AllToAll: assemble each output block from what the group's members hold."""
    out: Blocks = {}
    for d in m.devices:
        want = m.region(op.out.layout, d)
        shape = tuple(hi - lo for lo, hi in (want[k] for k in op.out.dims))
        block, covered = np.zeros(shape), np.zeros(shape, dtype=bool)
        for member in m.group(d, op.axes):
            have = m.region(op.src.layout, member)
            common = {k: (max(lo, have[k][0]), min(hi, have[k][1])) for k, (lo, hi) in want.items()}
            if any(lo >= hi for lo, hi in common.values()):
                continue
            place = _index(common, want, op.out.dims)
            block[place] = _restrict(src[member], op.src.dims, have, common, op.out.dims)
            covered[place] = True
        if not covered.all():
            raise SimulationError(
                f"collective cannot produce layout {op.out.format(m.axes)} on device "
                f"{m.device_text(d)}: {int((~covered).sum())} of {covered.size} elements of "
                f"{_region_text(want)} are held by no device of its {format_axes(op.axes)} group"
            )
        out[d] = block
    return out


def _reduce(op: Collective, m: _Machine, src: Blocks) -> Blocks:
    """AllReduce / ReduceScatter: sum the group's partial blocks, each restricted to the output."""
    out: Blocks = {}
    for d in m.devices:
        want = m.region(op.out.layout, d)
        pieces = []
        for member in m.group(d, op.axes):
            have = m.region(op.src.layout, member)
            fits = have == want if op.op == "AllReduce" else _inside(want, have)
            if not fits:
                raise SimulationError(
                    f"device {m.device_text(d)} needs {_region_text(want)} but group member "
                    f"{m.device_text(member)} holds {_region_text(have)}"
                )
            pieces.append(_restrict(src[member], op.src.dims, have, want, op.out.dims))
        out[d] = np.ascontiguousarray(sum(pieces[1:], pieces[0].copy()))
    return out


def _run_collective(op: Collective, m: _Machine, src: Blocks) -> Blocks:
    if set(op.src.dims) != set(op.out.dims):
        raise SimulationError("changes the array's dimensions")
    unknown = [a for a in op.axes if a not in m.axis_sizes]
    if unknown or not op.axes or len(set(op.axes)) != len(op.axes):
        raise SimulationError(f"bad collective axes {list(op.axes)}")
    if op.dim is not None and op.dim not in op.out.dims:
        raise SimulationError(f"scatters dim '{op.dim}' the array does not have")
    before, after, axes = op.src.layout.unreduced, op.out.layout.unreduced, set(op.axes)
    match op.op:
        case "AllGather" | "AllToAll" | "CollectivePermute":
            if before != after or before & axes:
                raise SimulationError(
                    f"{op.op} moves data but cannot sum partials: unreduced {sorted(before)} -> "
                    f"{sorted(after)} over axes {sorted(axes)}"
                )
            return _gather(op, m, src)
        case "Send":
            return _send(op, m, src)
        case "AllReduce" | "ReduceScatter":
            if not axes <= before or after != before - axes:
                raise SimulationError(
                    f"{op.op} over {sorted(axes)} needs those axes unreduced and removes exactly "
                    f"them: unreduced {sorted(before)} -> {sorted(after)}"
                )
            return _reduce(op, m, src)
    raise SimulationError(f"unknown collective '{op.op}'")


def _send(op: Collective, m: _Machine, src: Blocks) -> Blocks:
    """A point-to-point Send: in the shift form device d gets the block of the device k steps
    back along each axis named; in the point form the devices at the `to` coordinates get the
    blocks of those at the `from` coordinates (the axes not named the same on both ends)."""
    if op.src.layout != op.out.layout or [x.axis for x in op.send] != list(op.axes):
        raise SimulationError("a Send keeps its layout and moves along the axes it names")
    out: Blocks = {}
    for d in m.devices:
        origin = list(d)
        for move in op.send:
            p = m.axes.index(move.axis)
            if move.shift is not None:
                origin[p] = (d[p] - move.shift) % m.axis_sizes[move.axis]
            elif d[p] == move.dst:
                origin[p] = move.src  # type: ignore[assignment]
            else:
                origin = list(d)
                break
        out[d] = src[tuple(origin)].copy()
    return out


def roll_blocks(array: np.ndarray, dims: tuple[str, ...], layout: Layout,
                shifts: dict[str, int], axis_sizes: dict[str, int]) -> np.ndarray:
    """The global array after every device sends its block `shifts[a]` steps on along each
    axis a: the blocks of the dim a shards roll along a's digit of their index (numpy.roll of
    the whole dim when a is its only, or outermost, axis); an axis that shards nothing changes
    nothing.

    >>> roll_blocks(np.arange(4.0), ("I",), Layout.of({"I": ("X",)}), {"X": 1}, {"X": 2})
    array([2., 3., 0., 1.])
    """
    for axis, k in shifts.items():
        dim = layout.dim_of_axis(axis)
        if dim is None:
            continue
        i, axes = dims.index(dim), layout.axes_of(dim)
        sizes = tuple(axis_sizes[a] for a in axes)
        shape = array.shape
        split = shape[:i] + sizes + (shape[i] // math.prod(sizes),) + shape[i + 1:]
        array = np.roll(array.reshape(split), k, axis=i + axes.index(axis)).reshape(shape)
    return array


def _run_local_slice(op: LocalSlice, m: _Machine, src: Blocks) -> Blocks:
    if set(op.src.dims) != set(op.out.dims) or op.src.layout.unreduced != op.out.layout.unreduced:
        raise SimulationError("a local slice keeps the dimensions and unreduced axes")
    out: Blocks = {}
    for d in m.devices:
        have, want = m.region(op.src.layout, d), m.region(op.out.layout, d)
        if not _inside(want, have):
            raise SimulationError(
                f"device {m.device_text(d)} needs {_region_text(want)} but holds only "
                f"{_region_text(have)}; that data lives on another device"
            )
        out[d] = _restrict(src[d], op.src.dims, have, want, op.out.dims).copy()
    return out


def _run_elementwise(op: Elementwise, m: _Machine, args: list[Blocks]) -> Blocks:
    _check_elementwise(op)
    unreduced = _elementwise_unreduced(op)
    if unreduced != op.out.layout.unreduced:
        raise SimulationError(
            f"the result is unreduced over {sorted(unreduced)} but the output layout says "
            f"{sorted(op.out.layout.unreduced)}"
        )
    out: Blocks = {}
    for d in m.devices:
        want = m.region(op.out.layout, d)
        for arg in op.args:
            have = m.region(arg.layout, d)
            if any(have[k] != want[k] for k in arg.dims):
                raise SimulationError(
                    f"operand {arg.format(m.axes)} holds {_region_text(have)} on device "
                    f"{m.device_text(d)} but the output block is {_region_text(want)}"
                )
        out[d] = _apply(
            op.fn, [(b[d], a.dims) for a, b in zip(op.args, args, strict=True)], op.out.dims
        )
    return out


def _run(
    op: Op,
    m: _Machine,
    inputs: dict[str, np.ndarray],
    rng: np.random.Generator,
    get: Callable[[Value], Blocks],
) -> Blocks:
    match op:
        case Input():
            return _run_input(op, m, inputs, rng)
        case Einsum():
            return _run_einsum(op, m, get(op.lhs), get(op.rhs))
        case Collective():
            return _run_collective(op, m, get(op.src))
        case LocalSlice():
            return _run_local_slice(op, m, get(op.src))
        case Elementwise():
            return _run_elementwise(op, m, [get(a) for a in op.args])
    raise SimulationError(f"unknown op {op!r}")


def _operand(blocks: dict[str, Blocks], layouts: dict[str, Layout], value: Value) -> Blocks:
    if value.id not in blocks:
        raise SimulationError(f"uses value '{value.id}' before it is defined")
    if layouts[value.id] != value.layout:
        raise SimulationError(f"uses value '{value.id}' with a layout it was not produced in")
    return blocks[value.id]


# ---- public API ---------------------------------------------------------------------------------


def simulate(
    program: CompiledProgram, inputs: dict[str, np.ndarray], sizes: dict[str, int], seed: int = 0
) -> dict[str, dict[Device, np.ndarray]]:
    """Run the per-device program; return every value's block on every device.

    >>> from shardc.passes.ir import CompiledProgram, Input, Value
    >>> a = Value("A", "A", "f32", Layout.of({"I": ("X",)}))
    >>> p = CompiledProgram("p", (("X", 2),), (("I", 4),), None, (Input(a),), (a,))
    >>> simulate(p, {"A": np.arange(4.0)}, {})["A"][(1,)]
    array([2., 3.])
    """
    m = _machine(program, sizes)
    rng = np.random.default_rng(seed)
    blocks: dict[str, Blocks] = {}
    layouts: dict[str, Layout] = {}
    for op in program.ops:
        try:
            if op.out.id in blocks:
                raise SimulationError(f"defines value '{op.out.id}' twice")
            m.validate(op.out)
            result = _run(op, m, inputs, rng, lambda v: _operand(blocks, layouts, v))
        except SimulationError as error:
            raise SimulationError(
                f"{_describe(op, m.axes)} (value '{op.out.id}'): {error}"
            ) from None
        blocks[op.out.id] = result
        layouts[op.out.id] = op.out.layout
    return blocks


def reference(
    program: CompiledProgram, inputs: dict[str, np.ndarray], sizes: dict[str, int]
) -> dict[str, np.ndarray]:
    """The unsharded computation: every value as one global array (collectives are identities)."""
    m = _machine(program, sizes)
    result: dict[str, np.ndarray] = {}
    for op in program.ops:
        try:
            match op:
                case Input():
                    result[op.out.id] = _global_input(op, m, inputs)
                case Einsum():
                    lhs, rhs = result[op.lhs.id], result[op.rhs.id]
                    result[op.out.id] = np.einsum(_einsum_spec(op), lhs, rhs)
                case Collective(op="Send", send=send) if send and send[0].is_shift:
                    shifts = {s.axis: s.shift for s in send}
                    result[op.out.id] = roll_blocks(result[op.src.id], op.src.dims, op.src.layout,
                                                    shifts, m.axis_sizes)  # type: ignore[arg-type]
                case Collective() | LocalSlice():
                    src = result[op.src.id]
                    result[op.out.id] = np.transpose(
                        src, [op.src.dims.index(d) for d in op.out.dims]
                    )
                case Elementwise():
                    _check_elementwise(op)
                    args = [(result[a.id], a.dims) for a in op.args]
                    result[op.out.id] = _apply(op.fn, args, op.out.dims)
                case _:
                    raise SimulationError(f"unknown op {op!r}")
        except KeyError as error:
            raise SimulationError(f"{_describe(op, m.axes)}: value {error} is undefined") from None
        except (SimulationError, ValueError) as error:
            raise SimulationError(f"{_describe(op, m.axes)}: {error}") from None
    return result


def check(
    program: CompiledProgram, inputs: dict[str, np.ndarray], sizes: dict[str, int], seed: int = 0
) -> None:
    """Simulate and compare every block (summed over its unreduced group) with the reference.

    >>> from shardc.passes.ir import CompiledProgram, Input, Value
    >>> a = Value("A", "A", "f32", Layout.of({"I": ("X",)}, {"Y"}))
    >>> p = CompiledProgram("p", (("X", 2), ("Y", 2)), (("I", 4),), None, (Input(a),), (a,))
    >>> check(p, {"A": np.arange(4.0)}, {})
    """
    expected = reference(program, inputs, sizes)
    blocks = simulate(program, inputs, sizes, seed)
    m = _machine(program, sizes)
    for op in program.ops:
        value = op.out
        unreduced = value.layout.unreduced
        origin = {d: (0, 0) for d in value.dims}
        for d in m.devices:
            region = m.region(value.layout, d)
            want = expected[value.id][_index(region, origin, value.dims)]
            members = m.group(d, unreduced) if unreduced else [d]
            got = sum(blocks[value.id][g] for g in members)
            if np.shape(got) != want.shape or not np.allclose(got, want, rtol=1e-9, atol=1e-9):
                error = np.max(np.abs(got - want)) if np.shape(got) == want.shape else "shape"
                summed = f" (summed over its {format_axes(sorted(unreduced))} group)"
                raise SimulationError(
                    f"value '{value.id}' {value.format(m.axes)} on device {m.device_text(d)}"
                    f"{summed if unreduced else ''} differs from the unsharded result at "
                    f"{_region_text(region)} (max error {error})"
                )


def random_inputs(
    program: CompiledProgram,
    sizes: dict[str, int],
    rng: np.random.Generator,
    low: int = -3,
    high: int = 4,
) -> dict[str, np.ndarray]:
    """One integer-valued float64 global array per input, shaped by its dims' sizes."""
    m = _machine(program, sizes)
    arrays: dict[str, np.ndarray] = {}
    for op in program.ops:
        if isinstance(op, Input) and op.out.array not in arrays:
            shape = tuple(m.dim_size(d) for d in op.out.dims)
            arrays[op.out.array] = rng.integers(low, high, size=shape).astype(np.float64)
    return arrays
