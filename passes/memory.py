"""Memory per device of a training step (000 part 4 "memory", "Gradient checkpointing").

Parameters and their gradients at their layouts; optimizer state (`adam`: two fp32 moments, the
book's 8 bytes per parameter beside bf16 weights, 10 in all); activations kept for the backward
pass under a rematerialization policy: `none` keeps every forward value the backward pass reads,
`matmuls` only the inputs and matmul results (elementwise results are recomputed), `block` only
the block's inputs (the whole forward pass is recomputed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import sympy as sp

from shardc.passes.graph import op_inputs
from shardc.passes.ir import CompiledProgram, Einsum, Elementwise, Input, Value
from shardc.passes.layout_cost import local_bytes, local_elements
from shardc.passes.symbols import as_expr, size_symbol, times_count

Optimizer = Literal["none", "sgd", "adam"]
Remat = Literal["none", "block", "matmuls"]
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


def kept_activations(program: CompiledProgram, backward_line: int | None,
                     remat: Remat) -> tuple[dict[str, Value], tuple[int, ...]]:
    """The forward values the backward pass reads that the policy keeps (by value id), and the
    indices of the forward compute ops the backward pass runs again to rebuild the rest.

    `none` keeps them all; `matmuls` keeps inputs and matmul results, so the elementwise ops
    producing the others run again; `block` keeps only the block's inputs, so every forward
    compute op they depend on runs again (000 "Gradient checkpointing": 8ND rather than 6ND).
    Collectives are not counted again: the derived backward pass gathers its own weights."""
    if backward_line is None:
        return {}, ()
    params = set(program.params)
    forward = {op.out.id: (i, op) for i, op in enumerate(program.ops)
               if op.span.line != backward_line}
    saved: dict[str, Value] = {}
    missing: list[str] = []
    for op in program.ops:
        if op.span.line != backward_line:
            continue
        for vid in op_inputs(op):
            src = forward.get(vid, (0, None))[1]
            if src is None or src.out.array in params:
                continue
            keep = (remat == "none"
                    or (remat == "matmuls" and isinstance(src, (Einsum, Input)))
                    or (remat == "block" and isinstance(src, Input)))
            if keep:
                saved[vid] = src.out
            else:
                missing.append(vid)
    redo: set[int] = set()
    while missing:
        vid = missing.pop()
        i, op = forward[vid]
        if i in redo or isinstance(op, Input) or vid in saved:
            continue
        if isinstance(op, (Einsum, Elementwise)):
            redo.add(i)
        missing.extend(op_inputs(op))
    return saved, tuple(sorted(redo))


def training_memory(program: CompiledProgram, backward_line: int | None, optimizer: Optimizer,
                    remat: Remat) -> Memory | None:
    """None for a program without parameters."""
    if not program.params:
        return None
    params = set(program.params)
    inputs = {op.out.id: op.out for op in program.ops if isinstance(op, Input)}
    # An array made inside `repeat L { }` exists once per iteration (a layer's weights).
    count = {op.out.id: times_count(op.times) for op in program.ops}
    p_vals = [v for v in inputs.values() if v.array in params]
    parameters = sp.Add(*[local_bytes(v.layout, v.dtype, size_symbol) * count[v.id]
                          for v in p_vals])
    grads = {f"d{p}" for p in params}
    g_vals = {v.array: v for v in program.arrays if v.array in grads}
    # A gradient is accumulated in place: as many copies as its parameter has (a weight used in
    # every tick of a pipeline's `repeat` still has one gradient).
    p_count = {v.array: count[v.id] for v in p_vals}
    gradients = sp.Add(*[local_bytes(v.layout, v.dtype, size_symbol) * p_count[v.array[1:]]
                         for v in g_vals.values()])
    optimizer_bytes = OPTIMIZER_BYTES[optimizer] * sp.Add(
        *[local_elements(v.layout, size_symbol) * count[v.id] for v in p_vals])
    saved = kept_activations(program, backward_line, remat)[0]
    activations = sp.Add(*[local_bytes(v.layout, v.dtype, size_symbol) * count[v.id]
                           for v in saved.values()])
    return Memory(as_expr(parameters), as_expr(gradients), as_expr(optimizer_bytes),
                  as_expr(activations), tuple(sorted(v.array for v in saved.values())))
