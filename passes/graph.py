"""The program graph: a networkx DiGraph with value and op nodes, edges value -> op -> value.

networkx is imported by the functions that build the graph, not with this module. The passes
that only walk edges (the schedule, the memory walk) read them from `producers` and
`distinct_inputs`, which give the graph's predecessors in the graph's order without building
it: a compile does not pay for importing networkx (0.1 s, once per process) to look up an op's
inputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardc.passes.ir import CompiledProgram, Op, operands

if TYPE_CHECKING:
    import networkx as nx


def op_inputs(op: Op) -> tuple[str, ...]:
    """The ids of the values an op reads, in operand order."""
    return tuple(v.id for v in operands(op))


def producers(program: CompiledProgram) -> dict[str, int]:
    """value id -> the index of the op that makes it: the value node's first predecessor in
    `build_graph`'s graph (edges are added in program order)."""
    out: dict[str, int] = {}
    for i, op in enumerate(program.ops):
        out.setdefault(op.out.id, i)
    return out


def distinct_inputs(op: Op) -> tuple[str, ...]:
    """The ids of the values an op reads, each once, in operand order: the op node's
    predecessors in `build_graph`'s graph."""
    return tuple(dict.fromkeys(op_inputs(op)))


def build_graph(program: CompiledProgram) -> nx.DiGraph:
    """Nodes `("op", i)` carry `op=`; nodes `("value", id)` carry `value=`. An op's input edges
    are added in operand order, so `g.predecessors(("op", i))` lists its inputs in order."""
    import networkx as nx

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
    """Ops in a topological order of the graph; program order breaks ties.

    `insert-collectives` emits every op after the ops making its inputs, so this is program
    order; it is checked here without building the graph, which a program out of order would
    need."""
    made: set[str] = set()
    for op in program.ops:
        if not made.issuperset(op_inputs(op)):
            return _sorted_on_graph(program)
        made.add(op.out.id)
    return list(enumerate(program.ops))


def _sorted_on_graph(program: CompiledProgram) -> list[tuple[int, Op]]:
    import networkx as nx

    g = build_graph(program)
    producer = producers(program)

    def key(node: tuple[str, int | str]) -> float:  # ("op", index) or ("value", id)
        name = node[1]
        return float(name) if isinstance(name, int) else producer.get(name, -1) + 0.5

    order = nx.lexicographical_topological_sort(g, key=key)
    return [(n[1], g.nodes[n]["op"]) for n in order if n[0] == "op"]
