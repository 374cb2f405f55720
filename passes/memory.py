"""Memory per device of a training step (the training chapter "memory", "Gradient checkpointing").

Parameters and their gradients at their layouts; optimizer state (`adam`: two fp32 moments, the
book's 8 bytes per parameter beside bf16 weights, 10 in all); activations kept for the backward
pass under a rematerialization policy: `none` keeps every forward value the backward pass reads
(sequence-parallel inputs sharded, gathered again: Megatron-LM's storage), `gathered` keeps them
as read (the gathered copies), `matmuls` only the inputs and matmul results (elementwise
results are recomputed), `block` only the block's inputs (the whole forward pass is recomputed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy as sp

from shardc.lang.dtypes import nbytes
from shardc.lang.layout import Layout
from shardc.passes.context import Attention, Optimizer, Remat
from shardc.passes.graph import distinct_inputs, producers
from shardc.passes.ir import (
    Collective,
    CompiledProgram,
    Einsum,
    Elementwise,
    Input,
    Op,
    Value,
    gradient_name,
)
from shardc.passes.layout_cost import local_bytes, local_elements
from shardc.passes.symbols import as_expr, size_symbol, times_count


@dataclass(frozen=True, slots=True)
class OptimizerState:
    """What an optimizer keeps per parameter beside the weights and their gradients."""

    master: bool
    """An fp32 master copy of weights narrower than fp32 (mixed-precision training updates the
    fp32 copy and casts it down: Micikevicius et al. 2018)."""
    moment_bytes: int
    """Bytes of moment estimates per parameter."""
    text: str

    def bytes_per_parameter(self, dtype: str) -> int:
        """State bytes for one parameter stored as `dtype`.

        >>> adam = OPTIMIZERS["adam"]
        >>> adam.bytes_per_parameter("bf16"), adam.bytes_per_parameter("f32")
        (12, 8)
        """
        return (
            MASTER_BYTES if self.master and nbytes(dtype) < MASTER_BYTES else 0
        ) + self.moment_bytes


MASTER_BYTES = 4
OPTIMIZERS: dict[str, OptimizerState] = {
    "adam": OptimizerState(
        True,
        8,
        "mixed-precision Adam: fp32 master weights and two fp32 "
        "moments (ZeRO's 16 bytes per parameter with bf16 weights and "
        "gradients: Rajbhandari et al. 2020)",
    ),
    "adam-8bit": OptimizerState(
        True, 2, "Adam with 8-bit moments (Dettmers et al. 2022) and fp32 master weights"
    ),
    "adam-no-master": OptimizerState(
        False,
        8,
        "Adam's two fp32 moments updating the weights "
        "in place, no master copy (the book's 8 bytes per "
        "parameter of state)",
    ),
    "sgd": OptimizerState(True, 0, "SGD without momentum: the fp32 master weights only"),
    "none": OptimizerState(False, 0, "no optimizer state"),
}
"""Per `--optimizer`: the state kept per parameter. It is sharded as the parameter is (FSDP
shards it; data parallelism replicates it: ZeRO stage 1 is not modelled)."""


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


def kept_activations(
    program: CompiledProgram, remat: Remat, attention: Attention = "materialized"
) -> tuple[dict[str, Value], tuple[int, ...]]:
    """The forward values the backward pass reads that the policy keeps (by value id), and the
    indices of the ops the backward pass runs again to rebuild the rest.

    - `none` keeps every value the backward pass reads; one that reaches it through
      collectives is kept at its most sharded layout and gathered again (below), as
      Megatron-LM's sequence parallelism stores its inputs: no compute op runs again.
    - `gathered` keeps every value as the backward pass reads it (the gathered copy where it
      reads the gathered copy): nothing runs again, at the gathered copies' memory.
    - Under `none`, `gathered` and `selective` an elementwise result that only elementwise gradients
      read (not a matmul), made from values the backward pass reads anyway, runs again from them:
      silu(gate) of a SwiGLU MLP, which Megatron-LM's fused kernel does not keep.
    - `selective` keeps them too, except the attention core (`attention_core`), which runs
      again from the queries and keys (Korthikanti et al. 2022, section 5).
    - `matmuls` keeps inputs and matmul results; the elementwise ops making the others run
      again.
    - `block` keeps only the block's inputs; every forward compute op they depend on runs again
      (the book's "Gradient checkpointing": 8ND rather than 6ND).

    Every policy but `gathered` keeps a value that reaches the backward pass through
    collectives once, at its most sharded reduced layout (the layer input as it arrives, a matmul's
    result after its ReduceScatter), and the collectives from there to the copy the backward pass
    reads run again, as Megatron-LM's sequence parallelism stores the sharded input and gathers
    it again (Korthikanti et al. 2022, section 4.2.2); so do the collectives on the way to an op
    run again (Megatron-LM's full recomputation repeats them). Parameters are counted as
    parameters; the derived backward pass gathers its own weights. `flash` attention never
    keeps the attention core. Liveness is read off the program graph: a value's producer is
    its one predecessor."""
    line = program.backward_line
    if line is None:
        return {}, ()
    made_by = producers(program)

    def producer(value_node: tuple[str, str]) -> tuple[int, Op] | None:
        i = made_by.get(value_node[1])
        return None if i is None else (i, program.ops[i])

    def chain(value_node: tuple[str, str]) -> list[tuple[tuple[str, str], int, Op]]:
        """The value, then back through the collectives that made it, to the first op that
        is not a collective: [(value node, producer index, producer op), ...]."""
        out = []
        while (made := producer(value_node)) is not None:
            out.append((value_node, *made))
            if not isinstance(made[1], Collective):
                break
            value_node = ("value", distinct_inputs(made[1])[0])
        return out

    def spread(v: Value) -> tuple[bool, int]:
        return (not v.layout.unreduced, sum(len(d.axes) for d in v.layout.dims))

    params = set(program.params)
    saved: dict[str, Value] = {}
    redo: set[int] = set()
    seen: set[tuple[str, str]] = set()
    core = (
        attention_core(program, line)
        if remat == "selective" or attention == "flash"
        else frozenset()
    )
    # What the backward pass reads, and whether a matmul reads it: an elementwise result that
    # only elementwise gradients read, made from values the backward pass keeps anyway, is made
    # again from them (Megatron-LM's fused activation kernels keep silu's input, not silu(x):
    # their backward pass computes it again).
    read: set[str] = set()
    by_matmul: set[str] = set()
    for op in program.ops:
        if op.span.line == line:
            ins = distinct_inputs(op)
            read.update(ins)
            if isinstance(op, Einsum):
                by_matmul.update(ins)

    def fused(origin: Op, value_id: str) -> bool:
        return (
            isinstance(origin, Elementwise)
            and value_id not in by_matmul
            and all(v in read or v in params for v in distinct_inputs(origin))
        )

    def need(value_node: tuple[str, str]) -> None:
        """The backward pass (or an op it runs again) reads this value: keep it or rebuild it."""
        if value_node in seen:
            return
        seen.add(value_node)
        links = chain(value_node)
        if not links:
            return
        _, i, origin = links[-1]
        if origin.span.line == line or origin.out.array in params:
            return
        keeps_all = remat in ("none", "gathered", "selective") and origin.out.id not in core
        if keeps_all and len(links) == 1 and fused(origin, origin.out.id):
            redo.add(i)
            for vid in distinct_inputs(origin):
                need(("value", vid))
            return
        if keeps_all and remat == "gathered":  # as read: nothing runs again
            op = links[0][2]
            saved[op.out.id] = op.out
            return
        if (
            isinstance(origin, Input)
            or keeps_all
            or (remat == "matmuls" and isinstance(origin, Einsum) and origin.out.id not in core)
        ):
            k = max(range(len(links)), key=lambda j: spread(links[j][2].out))
            best = links[k][2].out
            saved[best.id] = best
            # the collectives from the kept copy to the one read run again
            redo.update(j for _, j, _ in links[:k])
            return
        redo.update(j for _, j, _ in links[:-1])  # the collectives on the way, and
        if isinstance(origin, (Einsum, Elementwise)):
            redo.add(i)  # the op itself
        for vid in distinct_inputs(origin):
            need(("value", vid))

    for op in program.ops:
        if op.span.line == line:
            for vid in distinct_inputs(op):
                need(("value", vid))
    return saved, tuple(sorted(redo))


def attention_core(program: CompiledProgram, line: int, backward: bool = False) -> frozenset[str]:
    """The values `--remat selective` recomputes (Korthikanti et al. 2022, "Reducing Activation
    Recomputation in Large Transformer Models", section 5: the attention core, large in memory
    and cheap to recompute): the result of a product of two activations that is larger than
    either (the scores Q.K, T x S per head from T x H and S x H), and what elementwise ops and
    collectives make from it (the probabilities). Sizes are the program's, a symbolic one
    taken as 4096 (the lowering's typical size). With `backward`, also the backward pass's
    values over the same dims (the gradients of the scores and probabilities), which
    FlashAttention's backward pass does not write to HBM either."""
    sizes = {n: v if v is not None else 4096 for n, v in program.dims}
    params = set(program.params)

    def elements(v: Value) -> int:
        return math.prod(sizes.get(d, 4096) for d in v.dims)

    core: set[str] = set()
    shapes: set[frozenset[str]] = set()
    for op in program.ops:
        if op.span.line == line:
            if backward and frozenset(op.out.dims) in shapes:
                core.add(op.out.id)
            continue
        if isinstance(op, Einsum):
            if (
                op.lhs.array not in params
                and op.rhs.array not in params
                and elements(op.out) > max(elements(op.lhs), elements(op.rhs))
            ):
                core.add(op.out.id)
                shapes.add(frozenset(op.out.dims))
        elif isinstance(op, Elementwise):
            if any(a.id in core for a in op.args):
                core.add(op.out.id)
        elif isinstance(op, Collective) and op.src.id in core:
            core.add(op.out.id)
    return frozenset(core)


def flash_statistics(program: CompiledProgram, count: dict[str, sp.Expr]) -> list[sp.Expr]:
    """What FlashAttention keeps for its backward pass beside the queries, keys, values and
    output: one fp32 log-sum-exp per query row and head (Dao et al. 2022, algorithm 2), the
    scores' dims less those only the keys have (S), at the scores' sharding. Under block
    remat the recomputed forward pass makes them again."""
    line = program.backward_line
    core = attention_core(program, line) if line is not None else frozenset()
    out = []
    for op in program.ops:
        if isinstance(op, Einsum) and op.out.id in core and op.span.line != line:
            rows = Layout(tuple(d for d in op.out.layout.dims if d.dim in op.lhs.dims))
            out.append(local_bytes(rows, "f32", size_symbol) * count.get(op.out.id, 1))
    return out


def training_memory(
    program: CompiledProgram,
    optimizer: Optimizer,
    remat: Remat,
    attention: Attention = "materialized",
) -> Memory | None:
    """None for a program without parameters; activations kept for the program's own
    backward pass (`program.backward_line`)."""
    if not program.params:
        return None
    params = set(program.params)
    inputs = {op.out.id: op.out for op in program.ops if isinstance(op, Input)}
    # An array made inside `repeat L { }` exists once per iteration (a layer's weights).
    count = {op.out.id: times_count(op.times) for op in program.ops}
    p_vals = [v for v in inputs.values() if v.array in params]
    parameters = sp.Add(
        *[local_bytes(v.layout, v.dtype, size_symbol) * count[v.id] for v in p_vals]
    )
    param_of = {gradient_name(p): p for p in params}
    g_vals = {v.array: v for v in program.arrays if v.array in param_of}
    # A gradient is accumulated in place: as many copies as its parameter has (a weight used in
    # every tick of a pipeline's `repeat` still has one gradient).
    p_count = {v.array: count[v.id] for v in p_vals}
    gradients = sp.Add(
        *[
            local_bytes(v.layout, v.dtype, size_symbol) * p_count[param_of[v.array]]
            for v in g_vals.values()
        ]
    )
    state = OPTIMIZERS[optimizer]
    optimizer_bytes = sp.Add(
        *[
            state.bytes_per_parameter(v.dtype) * local_elements(v.layout, size_symbol) * count[v.id]
            for v in p_vals
        ]
    )
    saved = kept_activations(program, remat, attention)[0]
    activations = sp.Add(
        *[local_bytes(v.layout, v.dtype, size_symbol) * count[v.id] for v in saved.values()],
        *(flash_statistics(program, count) if attention == "flash" and remat != "block" else ()),
    )
    return Memory(
        as_expr(parameters),
        as_expr(gradients),
        as_expr(optimizer_bytes),
        as_expr(activations),
        tuple(sorted(v.array for v in saved.values())),
    )
