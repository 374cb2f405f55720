"""The step schedule: which collectives are on the critical path, and T_step with overlap.

000 part 4's algorithms: weight AllGathers can be prefetched before the matmul that needs them,
and gradient reductions run asynchronously after the gradient is computed; both are off the
critical path. A list schedule over the program graph with one compute and one network resource
gives the step time between perfect overlap (max) and none (sum).
"""

from __future__ import annotations

from collections.abc import Callable

from shardc.passes.graph import op_inputs
from shardc.passes.ir import Collective, CompiledProgram, Input, LocalSlice


def classify(program: CompiledProgram) -> dict[int, str]:
    """op index -> "prefetch" (a parameter's gather), "async" (a parameter gradient's
    reduction) or "" (on the critical path), for every collective."""
    params = set(program.params)
    grads = {f"d{p}" for p in params}
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


def schedule(program: CompiledProgram, durations: dict[int, float],
             network: Callable[[Collective], str] | None = None) -> float:
    """Makespan of a list schedule: ops in program order, each on its resource (compute or
    network) as soon as its inputs are ready and the resource is free. Program order is a
    topological order of the op graph (each op's inputs are produced before it). `network`
    names the resource of each collective (one network resource by default)."""
    ready: dict[str, float] = {}
    free: dict[str, float] = {}
    end = 0.0
    for i, op in enumerate(program.ops):
        if isinstance(op, Input):
            ready[op.out.id] = 0.0
            continue
        start_after = max((ready.get(v, 0.0) for v in op_inputs(op)), default=0.0)
        if isinstance(op, LocalSlice):
            ready[op.out.id] = start_after
            continue
        if isinstance(op, Collective):
            resource = network(op) if network is not None else "network"
        else:
            resource = "compute"
        start = max(start_after, free.get(resource, 0.0))
        finish = start + durations.get(i, 0.0)
        free[resource] = finish
        ready[op.out.id] = finish
        end = max(end, finish)
    return end
