"""The simulated mesh of `shardc.tools.simulate`: devices, the block of each array every device
holds (its region), numpy implementations of the elementwise functions, and the small index
helpers the per-device ops share."""

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
    Reduction,
    Value,
)
from shardc.passes.sizes import size_of

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
    "max_mask": lambda x: (x == 0).astype(np.float64),
}
"""A float64 implementation of every unary function in
`shardc.lang.syntax.ELEMENTWISE_FUNCTIONS`."""

BINARY_FUNCTIONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.divide,
}


@dataclass(frozen=True, slots=True)
class Machine:
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


def machine(program: CompiledProgram, sizes: dict[str, int]) -> Machine:
    """The mesh of `program` with `sizes` applied (`shardc.passes.sizes`, as every pass)."""
    declared = dict(program.mesh)
    axis_sizes: dict[str, int] = {}
    for axis in program.mesh_axes:
        size = size_of(axis, declared, sizes)
        if size is None or size < 1:
            raise SimulationError(f"mesh axis '{axis}' needs a positive size in `sizes`")
        axis_sizes[axis] = size
    axes = program.mesh_axes
    devices = tuple(itertools.product(*(range(axis_sizes[a]) for a in axes)))
    return Machine(axes, axis_sizes, {**dict(program.dims), **sizes}, devices)


def index(want: Region, origin: Region, dims: tuple[str, ...]) -> tuple[slice, ...]:
    """Slices selecting region `want` inside a block (ordered by `dims`) that starts at `origin`."""
    return tuple(slice(want[d][0] - origin[d][0], want[d][1] - origin[d][0]) for d in dims)


def inside(inner: Region, outer: Region) -> bool:
    return all(outer[d][0] <= lo and hi <= outer[d][1] for d, (lo, hi) in inner.items())


def restrict(
    block: np.ndarray, dims: tuple[str, ...], have: Region, want: Region, out_dims: tuple[str, ...]
) -> np.ndarray:
    """The part of `block` (covering `have`) inside `want`, transposed to `out_dims` order."""
    piece = block[index(want, have, dims)]
    return np.transpose(piece, [dims.index(d) for d in out_dims])


def region_text(region: Region) -> str:
    return ", ".join(f"{d}[{lo}:{hi}]" for d, (lo, hi) in region.items())


def describe(op: Op, order: tuple[str, ...]) -> str:
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
        case Reduction():
            return (
                f"{op.kind} over {','.join(op.dims)} {op.src.format(order)} -> "
                f"{op.out.format(order)}"
            )
    raise SimulationError(f"unknown op {op!r}")


def einsum_spec(op: Einsum) -> str:
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


def product_unreduced(a: Layout, b: Layout) -> frozenset[str]:
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


def check_elementwise(op: Elementwise) -> None:
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


def elementwise_unreduced(op: Elementwise) -> frozenset[str]:
    """The unreduced axes an elementwise op yields; partial sums pass only through linear uses."""
    layouts = [a.layout for a in op.args]
    if op.fn == "*":
        return product_unreduced(*layouts)
    if op.fn in ("+", "-"):
        if layouts[0].unreduced != layouts[1].unreduced:
            raise SimulationError("adds operands with different unreduced axes")
        return layouts[0].unreduced
    if op.fn in LINEAR_FUNCTIONS:
        return layouts[0].unreduced
    if layouts[0].unreduced:
        raise SimulationError(f"applies '{op.fn}' to a partial sum")
    return frozenset()


def align(array: np.ndarray, dims: tuple[str, ...], out_dims: tuple[str, ...]) -> np.ndarray:
    """Transpose to `out_dims` order, with size-1 axes for the dims `array` lacks (broadcasting)."""
    present = [d for d in out_dims if d in dims]
    array = np.transpose(array, [dims.index(d) for d in present])
    shape = iter(array.shape)
    return array.reshape(tuple(next(shape) if d in dims else 1 for d in out_dims))


def apply(
    fn: str, operands: list[tuple[np.ndarray, tuple[str, ...]]], out_dims: tuple[str, ...]
) -> np.ndarray:
    arrays = [align(a, dims, out_dims) for a, dims in operands]
    if fn in BINARY_FUNCTIONS:
        result = BINARY_FUNCTIONS[fn](*arrays)
    else:
        result = UNARY_FUNCTIONS[fn](arrays[0])
    return np.ascontiguousarray(result, dtype=np.float64)


def global_input(op: Input, machine: Machine, inputs: dict[str, np.ndarray]) -> np.ndarray:
    if op.out.array not in inputs:
        raise SimulationError(f"no input array given for '{op.out.array}'")
    array = np.asarray(inputs[op.out.array], dtype=np.float64)
    shape = tuple(machine.dim_size(d) for d in op.out.dims)
    if array.shape != shape:
        raise SimulationError(f"input '{op.out.array}' has shape {array.shape}, expected {shape}")
    return array
