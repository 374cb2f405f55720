"""Costs of fused groups (`fuse-elementwise`, passes/fusion.py): each group as one kernel,
its HBM bytes counted once and charged to its root (docs/cost-model.md, "Fusion")."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import sympy as sp

from shardc.passes.fusion import Fusion
from shardc.passes.ir import CompiledProgram, Value, operands
from shardc.passes.layout_cost import local_bytes
from shardc.passes.symbols import HardwareSymbols, size_symbol

if TYPE_CHECKING:
    # derive_cost calls fused_costs; at run time this module needs no name of it.
    from shardc.passes.derive_cost import OpCost


def fused_costs(
    costs: list[OpCost],
    program: CompiledProgram,
    fusion: Fusion,
    syms: HardwareSymbols,
    flash: bool,
) -> list[OpCost]:
    """Each fused group as one kernel: it reads each value from outside the group once and
    writes each value an op outside the group reads (or that no op reads: a result); what
    passes between its ops stays on chip. The root carries those bytes and the group's time
    (its matmul's T_math against the group's T_hbm); the other members carry none. FLOPs are
    unchanged."""
    core: frozenset[str] = frozenset()
    if flash and program.backward_line is not None:
        from shardc.passes.memory import attention_core

        core = frozenset(attention_core(program, program.backward_line, backward=True))
    read_by: dict[str, set[int]] = {}
    for j, op in enumerate(program.ops):
        for v in operands(op):
            read_by.setdefault(v.id, set()).add(j)
    group_of = fusion.by_op()
    by_index = {c.index: c for c in costs}
    out = []
    for c in costs:
        g = group_of.get(c.index)
        if g is None:
            out.append(c)
        elif c.index != g.root:
            out.append(
                dataclasses.replace(
                    c,
                    hbm_bytes=sp.S.Zero,
                    t_hbm=sp.S.Zero,
                    t_math=sp.S.Zero,
                    time=sp.S.Zero,
                    fused_into=g.root,
                )
            )
        else:
            inside = set(g.members)
            made = {program.ops[i].out.id: program.ops[i].out for i in inside}
            reads: dict[str, Value] = {}
            for i in g.members:
                for v in operands(program.ops[i]):
                    if v.id not in made:
                        reads.setdefault(v.id, v)
            writes = [
                v
                for vid, v in made.items()
                if not read_by.get(vid, set()) <= inside or vid not in read_by
            ]
            hbm = sum(
                (
                    local_bytes(v.layout, v.dtype, size_symbol)
                    for v in (*reads.values(), *writes)
                    if v.id not in core
                ),
                sp.S.Zero,
            )
            t_math = sp.Add(*[by_index[i].t_math for i in g.members if i in by_index])
            t_hbm = hbm / syms.w_hbm
            time = sp.Max(t_math, t_hbm, evaluate=False) if t_math != 0 else t_hbm
            out.append(
                dataclasses.replace(
                    c, hbm_bytes=hbm, t_hbm=t_hbm, t_math=t_math, time=time, fusion=g.kind
                )
            )
    return out
