"""Executes a compiled per-device program block by block on simulated devices with numpy.

`check` compares every block with the unsharded computation: it is what proves the collectives
the compiler inserts right. A collective reads only its group's blocks, a local op only its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from shardc.lang.layout import Layout, format_axes
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
from shardc.tools.simulate_machine import (
    UNARY_FUNCTIONS,
    Blocks,
    Device,
    Machine,
    SimulationError,
    align,
    apply,
    check_elementwise,
    describe,
    einsum_spec,
    elementwise_unreduced,
    global_input,
    index,
    inside,
    machine,
    product_unreduced,
    region_text,
    restrict,
)

# ---- the per-device program: one function per op kind -------------------------------------------


def _run_input(
    op: Input, m: Machine, inputs: dict[str, np.ndarray], rng: np.random.Generator
) -> Blocks:
    array, out = global_input(op, m, inputs), op.out
    blocks = {
        d: array[index(r, {k: (0, 0) for k in r}, out.dims)].copy()
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


def _run_einsum(op: Einsum, m: Machine, lhs: Blocks, rhs: Blocks) -> Blocks:
    spec = einsum_spec(op)
    contracted = set(op.contract)
    partial = product_unreduced(op.lhs.layout, op.rhs.layout) | {
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


def _gather(op: Collective, m: Machine, src: Blocks) -> Blocks:
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
            place = index(common, want, op.out.dims)
            block[place] = restrict(src[member], op.src.dims, have, common, op.out.dims)
            covered[place] = True
        if not covered.all():
            raise SimulationError(
                f"collective cannot produce layout {op.out.format(m.axes)} on device "
                f"{m.device_text(d)}: {int((~covered).sum())} of {covered.size} elements of "
                f"{region_text(want)} are held by no device of its {format_axes(op.axes)} group"
            )
        out[d] = block
    return out


def _reduce(op: Collective, m: Machine, src: Blocks) -> Blocks:
    """AllReduce / ReduceScatter: sum the group's partial blocks, each restricted to the output."""
    out: Blocks = {}
    for d in m.devices:
        want = m.region(op.out.layout, d)
        pieces = []
        for member in m.group(d, op.axes):
            have = m.region(op.src.layout, member)
            fits = have == want if op.op == "AllReduce" else inside(want, have)
            if not fits:
                raise SimulationError(
                    f"device {m.device_text(d)} needs {region_text(want)} but group member "
                    f"{m.device_text(member)} holds {region_text(have)}"
                )
            pieces.append(restrict(src[member], op.src.dims, have, want, op.out.dims))
        out[d] = np.ascontiguousarray(sum(pieces[1:], pieces[0].copy()))
    return out


def _reduce_max(op: Collective, m: Machine, src: Blocks) -> Blocks:
    """AllReduce of the maximum: the elementwise maximum of the group's blocks."""
    out: Blocks = {}
    for d in m.devices:
        out[d] = np.ascontiguousarray(np.maximum.reduce([src[g] for g in m.group(d, op.axes)]))
    return out


def _run_collective(op: Collective, m: Machine, src: Blocks) -> Blocks:
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
        case "AllReduce" if op.combine == "max":
            if before != after:
                raise SimulationError("an AllReduce of the maximum keeps the unreduced axes")
            return _reduce_max(op, m, src)
        case "AllReduce" | "ReduceScatter":
            if not axes <= before or after != before - axes:
                raise SimulationError(
                    f"{op.op} over {sorted(axes)} needs those axes unreduced and removes exactly "
                    f"them: unreduced {sorted(before)} -> {sorted(after)}"
                )
            return _reduce(op, m, src)
    raise SimulationError(f"unknown collective '{op.op}'")


def _send(op: Collective, m: Machine, src: Blocks) -> Blocks:
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


def roll_blocks(
    array: np.ndarray,
    dims: tuple[str, ...],
    layout: Layout,
    shifts: dict[str, int],
    axis_sizes: dict[str, int],
) -> np.ndarray:
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
        split = shape[:i] + sizes + (shape[i] // math.prod(sizes),) + shape[i + 1 :]
        array = np.roll(array.reshape(split), k, axis=i + axes.index(axis)).reshape(shape)
    return array


def _run_local_slice(op: LocalSlice, m: Machine, src: Blocks) -> Blocks:
    if set(op.src.dims) != set(op.out.dims) or op.src.layout.unreduced != op.out.layout.unreduced:
        raise SimulationError("a local slice keeps the dimensions and unreduced axes")
    out: Blocks = {}
    for d in m.devices:
        have, want = m.region(op.src.layout, d), m.region(op.out.layout, d)
        if not inside(want, have):
            raise SimulationError(
                f"device {m.device_text(d)} needs {region_text(want)} but holds only "
                f"{region_text(have)}; that data lives on another device"
            )
        out[d] = restrict(src[d], op.src.dims, have, want, op.out.dims).copy()
    return out


def _run_elementwise(op: Elementwise, m: Machine, args: list[Blocks]) -> Blocks:
    check_elementwise(op)
    unreduced = elementwise_unreduced(op)
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
                    f"operand {arg.format(m.axes)} holds {region_text(have)} on device "
                    f"{m.device_text(d)} but the output block is {region_text(want)}"
                )
        out[d] = apply(
            op.fn, [(b[d], a.dims) for a, b in zip(op.args, args, strict=True)], op.out.dims
        )
    return out


def _run(
    op: Op,
    m: Machine,
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
        case Reduction():
            return _run_reduction(op, m, get(op.src))
    raise SimulationError(f"unknown op {op!r}")


def _broadcast(array: np.ndarray, src: Value, out: Value, sizes: dict[str, int]) -> np.ndarray:
    """`array` (dims of `src`) copied along the dims of `out` it lacks (each of size `sizes`)."""
    expanded = align(array, src.dims, out.dims)
    return np.ascontiguousarray(
        np.broadcast_to(
            expanded,
            tuple(
                sizes[d] if d not in src.dims else expanded.shape[i] for i, d in enumerate(out.dims)
            ),
        )
    )


def _run_reduction(op: Reduction, m: Machine, src: Blocks) -> Blocks:
    """Each device reduces its own block (a sum over a sharded dim is a partial sum; a max, a
    partial maximum that an AllReduce of the maximum completes); a broadcast copies its block
    along the new (unsharded) dims."""
    if op.kind == "broadcast":
        sizes = {d: m.dim_size(d) for d in op.dims}
        return {d: _broadcast(b, op.src, op.out, sizes) for d, b in src.items()}
    if not set(op.dims) <= set(op.src.dims) or set(op.out.dims) != set(op.src.dims) - set(op.dims):
        raise SimulationError("reduces dims its operand lacks, or keeps the wrong dims")
    axes = tuple(op.src.dims.index(d) for d in op.dims)
    kept = tuple(d for d in op.src.dims if d not in op.dims)
    fn = np.sum if op.kind == "sum" else np.max
    out: Blocks = {}
    for d, block in src.items():
        r = fn(block, axis=axes)
        out[d] = np.ascontiguousarray(np.transpose(r, [kept.index(x) for x in op.out.dims]))
    return out


def _operand(blocks: dict[str, Blocks], layouts: dict[str, Layout], value: Value) -> Blocks:
    if value.id not in blocks:
        raise SimulationError(f"uses value '{value.id}' before it is defined")
    have = layouts[value.id]
    if have != value.layout and not value.layout.relabels(have):
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
    m = machine(program, sizes)
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
                f"{describe(op, m.axes)} (value '{op.out.id}'): {error}"
            ) from None
        blocks[op.out.id] = result
        layouts[op.out.id] = op.out.layout
    return blocks


def reference(
    program: CompiledProgram, inputs: dict[str, np.ndarray], sizes: dict[str, int]
) -> dict[str, np.ndarray]:
    """The unsharded computation: every value as one global array (collectives are identities)."""
    m = machine(program, sizes)
    result: dict[str, np.ndarray] = {}
    for op in program.ops:
        try:
            match op:
                case Input():
                    result[op.out.id] = global_input(op, m, inputs)
                case Einsum():
                    lhs, rhs = result[op.lhs.id], result[op.rhs.id]
                    result[op.out.id] = np.einsum(einsum_spec(op), lhs, rhs)
                case Collective(op="Send", send=send) if send and send[0].is_shift:
                    shifts = {s.axis: s.shift for s in send}
                    result[op.out.id] = roll_blocks(
                        result[op.src.id],
                        op.src.dims,
                        op.src.layout,
                        shifts,  # type: ignore[arg-type]
                        m.axis_sizes,
                    )
                case Collective() | LocalSlice():
                    src = result[op.src.id]
                    result[op.out.id] = np.transpose(
                        src, [op.src.dims.index(d) for d in op.out.dims]
                    )
                case Elementwise():
                    check_elementwise(op)
                    args = [(result[a.id], a.dims) for a in op.args]
                    result[op.out.id] = apply(op.fn, args, op.out.dims)
                case Reduction(kind="broadcast"):
                    sizes = {d: m.dim_size(d) for d in op.dims}
                    result[op.out.id] = _broadcast(result[op.src.id], op.src, op.out, sizes)
                case Reduction():
                    src = result[op.src.id]
                    fn = np.sum if op.kind == "sum" else np.max
                    r = fn(src, axis=tuple(op.src.dims.index(d) for d in op.dims))
                    kept = tuple(d for d in op.src.dims if d not in op.dims)
                    result[op.out.id] = np.transpose(r, [kept.index(x) for x in op.out.dims])
                case _:
                    raise SimulationError(f"unknown op {op!r}")
        except KeyError as error:
            raise SimulationError(f"{describe(op, m.axes)}: value {error} is undefined") from None
        except (SimulationError, ValueError) as error:
            raise SimulationError(f"{describe(op, m.axes)}: {error}") from None
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
    m = machine(program, sizes)
    partial_max = {
        op.out.id
        for op in program.ops
        if isinstance(op, Reduction)
        and op.kind == "max"
        and any(op.src.layout.axes_of(d) for d in op.dims)
    }
    for op in program.ops:
        value = op.out
        if value.id in partial_max:
            continue  # each device's maximum of its block: the AllReduce after it is checked
        unreduced = value.layout.unreduced
        origin = {d: (0, 0) for d in value.dims}
        for d in m.devices:
            region = m.region(value.layout, d)
            want = expected[value.id][index(region, origin, value.dims)]
            members = m.group(d, unreduced) if unreduced else [d]
            got = sum(blocks[value.id][g] for g in members)
            if np.shape(got) != want.shape or not np.allclose(got, want, rtol=1e-9, atol=1e-9):
                error = np.max(np.abs(got - want)) if np.shape(got) == want.shape else "shape"
                summed = f" (summed over its {format_axes(sorted(unreduced))} group)"
                raise SimulationError(
                    f"value '{value.id}' {value.format(m.axes)} on device {m.device_text(d)}"
                    f"{summed if unreduced else ''} differs from the unsharded result at "
                    f"{region_text(region)} (max error {error})"
                )


def random_inputs(
    program: CompiledProgram,
    sizes: dict[str, int],
    rng: np.random.Generator,
    low: int = -3,
    high: int = 4,
) -> dict[str, np.ndarray]:
    """One integer-valued float64 global array per input, shaped by its dims' sizes."""
    m = machine(program, sizes)
    arrays: dict[str, np.ndarray] = {}
    for op in program.ops:
        if isinstance(op, Input) and op.out.array not in arrays:
            shape = tuple(m.dim_size(d) for d in op.out.dims)
            arrays[op.out.array] = rng.integers(low, high, size=shape).astype(np.float64)
    return arrays


__all__ = [
    "UNARY_FUNCTIONS",
    "SimulationError",
    "check",
    "random_inputs",
    "reference",
    "roll_blocks",
    "simulate",
]
