"""The step schedule: which collectives are on the critical path, and T_step with overlap.

The training chapter's algorithms: weight AllGathers can be prefetched before the matmul that needs them,
and gradient reductions run asynchronously after the gradient is computed; both are off the
critical path. A list schedule over the program graph with one compute and one network resource
gives the step time between perfect overlap (max) and none (sum).
"""

from __future__ import annotations

from collections.abc import Callable

from shardc.passes.graph import build_graph, ops_in_order
from shardc.passes.ir import Collective, CompiledProgram, Input, LocalSlice, gradient_name


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


def schedule(program: CompiledProgram, durations: dict[int, float],
             network: Callable[[Collective], str] | None = None) -> float:
    """Makespan of a list schedule on the program graph: ops in program order (a topological
    order of the graph), each on its resource (compute or network) as soon as its inputs are
    ready and the resource is free. `network` names the resource of each collective (one
    network resource by default)."""
    g = build_graph(program)
    ready: dict[tuple[str, str], float] = {}
    free: dict[str, float] = {}
    end = 0.0
    for i, op in ops_in_order(program):
        made = ("value", op.out.id)
        if isinstance(op, Input):
            ready[made] = 0.0
            continue
        start_after = max((ready.get(v, 0.0) for v in g.predecessors(("op", i))), default=0.0)
        if isinstance(op, LocalSlice):
            ready[made] = start_after
            continue
        if isinstance(op, Collective):
            resource = network(op) if network is not None else "network"
        else:
            resource = "compute"
        start = max(start_after, free.get(resource, 0.0))
        finish = start + durations.get(i, 0.0)
        free[resource] = finish
        ready[made] = finish
        end = max(end, finish)
    return end


def critical_path(program: CompiledProgram, durations: dict[int, float]) -> float:
    """The longest chain of dependent ops (the graph's longest path, each op weighted by its
    duration): the step time with every resource unlimited, so no schedule beats it."""
    import networkx as nx

    g = build_graph(program)
    for u, v in g.edges:
        g.edges[u, v]["weight"] = durations.get(u[1], 0.0) if u[0] == "op" else 0.0
    return float(nx.dag_longest_path_length(g, weight="weight", default_weight=0))
