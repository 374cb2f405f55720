"""The program graph: a networkx DiGraph with value and op nodes, edges value -> op -> value."""

from __future__ import annotations

import networkx as nx

from shardc.passes.ir import Collective, CompiledProgram, Einsum, Elementwise, Input, LocalSlice, Op


def op_inputs(op: Op) -> tuple[str, ...]:
    match op:
        case Input():
            return ()
        case Einsum(lhs=lhs, rhs=rhs):
            return (lhs.id, rhs.id)
        case Collective(src=src) | LocalSlice(src=src):
            return (src.id,)
        case Elementwise(args=args):
            return tuple(a.id for a in args)
    raise AssertionError(op)


def build_graph(program: CompiledProgram) -> nx.DiGraph:
    """Nodes `("op", i)` carry `op=`; nodes `("value", id)` carry `value=`."""
    g = nx.DiGraph()
    for i, op in enumerate(program.ops):
        node = ("op", i)
        g.add_node(node, op=op, kind="op")
        g.add_node(("value", op.out.id), value=op.out, kind="value")
        g.add_edge(node, ("value", op.out.id))
        for vid in op_inputs(op):
            g.add_edge(("value", vid), node)
    return g


def ops_in_order(program: CompiledProgram) -> list[tuple[int, Op]]:
    """Ops in a topological order of the graph; program order breaks ties."""
    g = build_graph(program)
    producer = {op.out.id: i for i, op in enumerate(program.ops)}

    def key(node) -> float:
        return float(node[1]) if node[0] == "op" else producer.get(node[1], -1) + 0.5

    order = nx.lexicographical_topological_sort(g, key=key)
    return [(n[1], g.nodes[n]["op"]) for n in order if n[0] == "op"]
