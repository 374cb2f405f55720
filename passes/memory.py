"""Memory per device of a training step (000 part 4 "memory", "Gradient checkpointing").

Parameters and their gradients at their layouts; optimizer state (`adam`: two fp32 moments, the
book's 8 bytes per parameter beside bf16 weights, 10 in all); activations kept for the backward
pass under a rematerialization policy: `none` keeps every forward value the backward pass reads,
`matmuls` only the inputs and matmul results (elementwise results are recomputed), `block` only
the block's inputs (the whole forward pass is recomputed).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from shardc.passes.context import Optimizer, Remat
from shardc.passes.graph import build_graph
from shardc.passes.ir import CompiledProgram, Einsum, Elementwise, Input, Op, Value, gradient_name
from shardc.passes.layout_cost import local_bytes, local_elements
from shardc.passes.symbols import as_expr, size_symbol, times_count

OPTIMIZER_BYTES = {"none": 0, "sgd": 0, "adam": 8}
"""Bytes of optimizer state per parameter: Adam keeps two fp32 moments (000 part 4)."""


@dataclass(frozen=True, slots=True)
class Memory:
    parameters: sp.Expr
    gradients: sp.Expr
    optimizer: sp.Expr
    activations: sp.Expr
    saved: tuple[str, ...]
    """The forward values kept for the backward pass under the policy."""

    @property
    def total(self) -> sp.Expr:
        return self.parameters + self.gradients + self.optimizer + self.activations


def kept_activations(program: CompiledProgram,
                     remat: Remat) -> tuple[dict[str, Value], tuple[int, ...]]:
    """The forward values the backward pass reads that the policy keeps (by value id), and the
    indices of the forward compute ops the backward pass runs again to rebuild the rest.

    `none` keeps them all; `matmuls` keeps inputs and matmul results, so the elementwise ops
    producing the others run again; `block` keeps only the block's inputs, so every forward
    compute op they depend on runs again (000 "Gradient checkpointing": 8ND rather than 6ND).
    Collectives are not counted again: the derived backward pass gathers its own weights.
    Liveness is read off the program graph: a value's producer is its one predecessor."""
    line = program.backward_line
    if line is None:
        return {}, ()
    g = build_graph(program)

    def producer(value_node) -> tuple[int, Op] | None:
        op_node = next(iter(g.predecessors(value_node)), None)
        return None if op_node is None else (op_node[1], g.nodes[op_node]["op"])

    params = set(program.params)
    saved: dict[str, Value] = {}
    missing: list[tuple[str, str]] = []
    for i, op in enumerate(program.ops):
        if op.span.line != line:
            continue
        for value_node in g.predecessors(("op", i)):
            made = producer(value_node)
            src = None if made is None or made[1].span.line == line else made[1]
            if src is None or src.out.array in params:
                continue
            keep = (remat == "none"
                    or (remat == "matmuls" and isinstance(src, (Einsum, Input)))
                    or (remat == "block" and isinstance(src, Input)))
            if keep:
                saved[src.out.id] = src.out
            else:
                missing.append(value_node)
    redo: set[int] = set()
    while missing:
        value_node = missing.pop()
        i, op = producer(value_node)  # type: ignore[misc]
        if i in redo or isinstance(op, Input) or value_node[1] in saved:
            continue
        if isinstance(op, (Einsum, Elementwise)):
            redo.add(i)
        missing.extend(g.predecessors(("op", i)))
    return saved, tuple(sorted(redo))


def training_memory(program: CompiledProgram, optimizer: Optimizer,
                    remat: Remat) -> Memory | None:
    """None for a program without parameters; activations kept for the program's own
    backward pass (`program.backward_line`)."""
    if not program.params:
        return None
    params = set(program.params)
    inputs = {op.out.id: op.out for op in program.ops if isinstance(op, Input)}
    # An array made inside `repeat L { }` exists once per iteration (a layer's weights).
    count = {op.out.id: times_count(op.times) for op in program.ops}
    p_vals = [v for v in inputs.values() if v.array in params]
    parameters = sp.Add(*[local_bytes(v.layout, v.dtype, size_symbol) * count[v.id]
                          for v in p_vals])
    param_of = {gradient_name(p): p for p in params}
    g_vals = {v.array: v for v in program.arrays if v.array in param_of}
    # A gradient is accumulated in place: as many copies as its parameter has (a weight used in
    # every tick of a pipeline's `repeat` still has one gradient).
    p_count = {v.array: count[v.id] for v in p_vals}
    gradients = sp.Add(*[local_bytes(v.layout, v.dtype, size_symbol) * p_count[param_of[v.array]]
                         for v in g_vals.values()])
    optimizer_bytes = OPTIMIZER_BYTES[optimizer] * sp.Add(
        *[local_elements(v.layout, size_symbol) * count[v.id] for v in p_vals])
    saved = kept_activations(program, remat)[0]
    activations = sp.Add(*[local_bytes(v.layout, v.dtype, size_symbol) * count[v.id]
                           for v in saved.values()])
    return Memory(as_expr(parameters), as_expr(gradients), as_expr(optimizer_bytes),
                  as_expr(activations), tuple(sorted(v.array for v in saved.values())))
