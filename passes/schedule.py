"""The step schedule: which collectives are on the critical path, and T_step with overlap.

The training chapter's algorithms: weight AllGathers can be prefetched before the matmul that needs
them, and gradient reductions run asynchronously after the gradient is computed; both are off the
critical path. A list schedule over the program graph with one compute and one network resource
gives the step time between perfect overlap (max) and none (sum).

A gather into a matmul and a ReduceScatter out of one overlap it chunk by chunk (a collective
matmul: Wang et al. 2023, "Overlap Communication with Dependent Computation via Decomposition in
Large Deep Learning Models"; the training chapter analyses tensor parallelism with its
communication overlapped, and the Epoch AI paper assumes all but data-parallel and pipeline
fill communication overlaps arithmetic). Over a group of n devices the matmul starts on the
block a device holds while the other n - 1 arrive: it ends no sooner than its own time after it
starts, nor sooner than 1/n of it after the last block arrives; a ReduceScatter starts after
the first 1/n of its matmul and ends no sooner than 1/n of its own time after the matmul.

That is the roofline's schedule. The calibrated step (`expected_schedule`) runs the same list
schedule over each op's expected time with overlap that can fail: no collective matmuls, a
prefetch bounded by its buffer (`PREFETCH_ELEMENTS`) and by free HBM, and compute slowed beside
the collectives it hides (`CONTENTION`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Collection, Mapping

from shardc.passes.graph import build_graph, distinct_inputs, ops_in_order, producers
from shardc.passes.ir import (
    Collective,
    CompiledProgram,
    Einsum,
    Elementwise,
    Input,
    LocalSlice,
    gradient_name,
)

CONTENTION = 0.189
"""The calibrated schedule's slowdown of compute that runs beside a collective: the average
18.9% (at most 40%) measured for GPT and LLaMA layers on four A100s, H100s, MI250s and MI210s
while the collectives shared the SMs and HBM ("Characterizing Compute-Communication Overlap in
GPU-Accelerated Distributed Deep Learning: Performance and Power Implications", arXiv
2507.03114, 2025, abstract)."""

PREFETCH_ELEMENTS = 5e7
"""How far ahead of its use a parameter's gather may run, in parameter elements: DeepSpeed
ZeRO-3's prefetch buffer, `stage3_prefetch_bucket_size`, default 5e7 ("Maximum number of
parameter elements to fetch ahead of use", deepspeed/runtime/zero/config.py), the ZeRO-3 that
Narayanan et al. 2021 measured (Table 2). A gather beyond it waits for its use."""


def classify(program: CompiledProgram) -> dict[int, str]:
    """op index -> "prefetch" (a parameter's gather), "async" (a parameter gradient's
    reduction) or "" (on the critical path), for every collective."""
    params = set(program.params)
    grads = {gradient_name(p) for p in params}
    out: dict[int, str] = {}
    for i, op in enumerate(program.ops):
        if not isinstance(op, Collective):
            continue
        if op.src.array in params and op.op in ("AllGather", "AllToAll", "CollectivePermute"):
            out[i] = "prefetch"
        elif op.out.array in grads or op.src.array in grads:
            out[i] = "async"
        else:
            out[i] = ""
    return out


def collective_matmuls(
    program: CompiledProgram, axis_sizes: Mapping[str, float], weights: bool = True
) -> tuple[dict[int, dict[str, tuple[int, float]]], dict[int, tuple[int, float]]]:
    """The collective matmuls of a program: for each einsum, the AllGathers that feed it (by the
    operand's value id: the gather's op index and its group size n), and for each ReduceScatter
    of an einsum's result, that einsum and n. Groups of unknown or unit size are left out.
    `weights=False` leaves out the gathers of parameters (FSDP's, which frameworks prefetch
    whole rather than decompose: PyTorch FSDP, ZeRO-3), so the first one is exposed."""
    params = set(program.params)
    producer = producers(program)
    feeds: dict[int, dict[str, tuple[int, float]]] = {}
    drains: dict[int, tuple[int, float]] = {}

    def group(op: Collective) -> float | None:
        sizes = [axis_sizes.get(a) for a in op.axes]
        if not sizes or any(n is None for n in sizes):
            return None
        n = math.prod(float(x) for x in sizes if x is not None)
        return n if n > 1 else None

    for i, op in enumerate(program.ops):
        if isinstance(op, Einsum):
            for v in (op.lhs, op.rhs):
                j = producer.get(v.id)
                src = program.ops[j] if j is not None else None
                if (
                    j is not None
                    and isinstance(src, Collective)
                    and src.op == "AllGather"
                    and not src.send
                    and (weights or src.src.array not in params)
                    and (n := group(src)) is not None
                ):
                    feeds.setdefault(i, {})[v.id] = (j, n)
        elif isinstance(op, Collective) and op.op == "ReduceScatter" and not op.send:
            j = _last_product(program, producer, op.src.id)
            if j is not None and (n := group(op)) is not None:
                drains[i] = (j, n)
    return feeds, drains


def _last_product(program: CompiledProgram, producer: Mapping[str, int], value: str) -> int | None:
    """The einsum a ReduceScatter's source comes from: its producer, or, for a sum of partial
    terms (a gradient's contributions added before their one reduction), the last einsum among
    the terms, which the reduction can drain block by block as it would that einsum's."""
    j = producer.get(value)
    while j is not None:
        op = program.ops[j]
        if isinstance(op, Einsum):
            return j
        if not (isinstance(op, Elementwise) and op.fn == "+"):
            return None
        made = [k for k in (producer.get(a.id) for a in op.args) if k is not None]
        j = max(made, default=None)
    return None


def schedule(
    program: CompiledProgram,
    durations: dict[int, float],
    network: Callable[[Collective], str] | None = None,
    axis_sizes: Mapping[str, float] | None = None,
    weights: bool = True,
    busy_after: Mapping[int, float] | None = None,
) -> float:
    """Makespan of the list schedule (`timeline`)."""
    return timeline(program, durations, network, axis_sizes, weights, busy_after)[0]


def exposed(
    program: CompiledProgram,
    durations: dict[int, float],
    network: Callable[[Collective], str] | None = None,
    axis_sizes: Mapping[str, float] | None = None,
    weights: bool = True,
) -> dict[int, float]:
    """Each collective's exposed part in the list schedule (`timeline`): the time it runs
    while the compute resource is idle, by op index. A gather the first matmul waits on and the
    last reduction, which nothing follows, are exposed whole; a gradient reduction overlaps
    only the compute after it (the backward of earlier layers); a collective matmul hides all
    but its first or last block; a TP collective on the activations' path is exposed."""
    _, spans = timeline(program, durations, network, axis_sizes, weights)
    return exposed_parts(spans)


def exposed_parts(spans: Mapping[int, tuple[float, float, str]]) -> dict[int, float]:
    """Each network span's seconds during which no compute span runs (`timeline`'s spans)."""
    # One compute resource: its busy spans are disjoint, so sorted by start they are sorted by
    # end too, and each collective looks only at the spans that can meet it.
    busy = sorted((a, b) for a, b, kind in spans.values() if kind == "compute" and b > a)
    ends = [y for _, y in busy]
    out: dict[int, float] = {}
    for i, (a, b, kind) in spans.items():
        if kind != "network":
            continue
        hidden, k = 0.0, bisect.bisect_right(ends, a)
        while k < len(busy) and busy[k][0] < b:
            hidden += max(0.0, min(b, busy[k][1]) - max(a, busy[k][0]))
            k += 1
        out[i] = max(0.0, (b - a) - hidden)
    return out


def timeline(
    program: CompiledProgram,
    durations: dict[int, float],
    network: Callable[[Collective], str] | None = None,
    axis_sizes: Mapping[str, float] | None = None,
    weights: bool = True,
    busy_after: Mapping[int, float] | None = None,
    ahead: Mapping[int, float] | None = None,
    blocking: Collection[int] = (),
) -> tuple[float, dict[int, tuple[float, float, str]]]:
    """(Makespan, each op's (start, finish, "compute" | "network")) of a list schedule on the
    program graph: ops in program order (a topological
    order of the graph), each on its resource (compute or network) as soon as its inputs are
    ready and the resource is free. `network` names the resource of each collective (one
    network resource by default). With `axis_sizes` (the mesh axes' sizes), gathers into and
    ReduceScatters out of an einsum overlap it chunk by chunk (collective matmuls); without,
    a collective and its matmul run one after the other. `busy_after` keeps an op's resource
    busy that long after its result is ready (a collective the backward pass runs again, off
    the critical path: the network carries it, nothing waits for it). `ahead` bounds a
    prefetch: the op starts no sooner than that many seconds before the compute resource is
    free for the work after it (a gather whose buffer holds only part of the weight). A
    collective in `blocking` holds the compute resource too: it starts when compute is free and
    nothing computes until it ends (a synchronous collective, which the stream waits for)."""
    feeds, drains = collective_matmuls(program, axis_sizes, weights) if axis_sizes else ({}, {})
    ready: dict[tuple[str, str], float] = {}
    started: dict[int, float] = {}
    spans: dict[int, tuple[float, float, str]] = {}
    free: dict[str, float] = {}
    end = 0.0
    for i, op in ops_in_order(program):
        made = ("value", op.out.id)
        if isinstance(op, Input):
            ready[made] = 0.0
            continue
        fed = feeds.get(i, {})
        start_after = max(
            (
                started[fed[v][0]] if v in fed else ready.get(("value", v), 0.0)
                for v in distinct_inputs(op)
            ),
            default=0.0,
        )
        if i in drains:  # a ReduceScatter starts on its matmul's first block
            e, n = drains[i]
            start_after = started[e] + durations.get(e, 0.0) / n
        if isinstance(op, LocalSlice):
            ready[made] = start_after
            continue
        if isinstance(op, Collective):
            resource = network(op) if network is not None else "network"
        else:
            resource = "compute"
        start = max(start_after, free.get(resource, 0.0))
        if ahead is not None and i in ahead:
            start = max(start, free.get("compute", 0.0) - ahead[i])
        if i in blocking:
            start = max(start, free.get("compute", 0.0))
        took = durations.get(i, 0.0)
        finish = start + took
        for j, n in fed.values():  # the last block arrives, then its share of the matmul
            finish = max(finish, ready[("value", program.ops[j].out.id)] + took / n)
        if i in drains:
            e, n = drains[i]
            finish = max(finish, ready[("value", program.ops[e].out.id)] + took / n)
        started[i] = start
        # a matmul waiting on its last gathered block is idle, not busy, past its own time
        spans[i] = (
            (start, finish, "network")
            if isinstance(op, Collective)
            else (start, min(finish, start + took), "compute")
        )
        free[resource] = finish + (busy_after.get(i, 0.0) if busy_after else 0.0)
        if i in blocking:
            free["compute"] = finish
        ready[made] = finish
        end = max(end, free[resource])
    return end, spans


def expected_schedule(
    program: CompiledProgram,
    durations: dict[int, float],
    busy_after: Mapping[int, float] | None = None,
    ahead: Mapping[int, float] | None = None,
    contention: float = CONTENTION,
    blocking: Collection[int] = (),
) -> tuple[float, dict[int, float]]:
    """The calibrated step of a GPU program and each collective's exposed part: overlap that
    can fail (docs/cost-model.md, "Overlap in the calibrated step").

    - No collective matmuls: NCCL's collectives are whole kernels, so a tensor-parallel gather
      or ReduceScatter on the activations' path runs before or after its matmul, exposed
      (Megatron-LM overlaps only the backward pass's re-gather, `busy_after`: Korthikanti et
      al. 2022, section 4.2.2).
    - A collective in `blocking` holds the compute: nothing runs beside it, not even work that
      does not need it (context parallelism's gathers of the keys and values: "the
      all-gather communication latency is exposed in the critical path": Dubey et al. 2024,
      "The Llama 3 Herd of Models", section 3.3.2; `shardc.tools.plan.accounting`).
    - A parameter's gather runs ahead of its use only as far as `ahead` allows (the prefetch
      buffer, `PREFETCH_ELEMENTS`); the first gather has nothing before it and is exposed.
    - A gradient reduction overlaps only the compute after it (the backward of earlier
      layers); the last one is exposed.
    - The compute that hides a collective runs `contention` slower for that time: the makespan
      grows by `contention` x the hidden communication."""
    end, spans = timeline(program, durations, None, None, False, busy_after, ahead, blocking)
    parts = exposed_parts(spans)
    hidden = sum(b - a for i, (a, b, kind) in spans.items() if kind == "network") - sum(
        parts.values()
    )
    return end + contention * max(0.0, hidden), parts


def critical_path(program: CompiledProgram, durations: dict[int, float]) -> float:
    """The longest chain of dependent ops (the graph's longest path, each op weighted by its
    duration): the step time with every resource unlimited, so no schedule beats it."""
    import networkx as nx

    g = build_graph(program)
    for u, v in g.edges:
        g.edges[u, v]["weight"] = durations.get(u[1], 0.0) if u[0] == "op" else 0.0
    return float(nx.dag_longest_path_length(g, weight="weight", default_weight=0))
