"""`xla-check`: compile each statement with shardc and with XLA's SPMD partitioner, compare.

`prepare` runs shardc (no JAX); `check` lowers and compiles each statement with JAX on fake CPU
devices and classifies it. Symbolic dims are checked at the planner's typical size, 4096.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shardc.driver.api import Compilation, run_pipeline
from shardc.lang.source import Source
from shardc.passes.context import MatmulPrecision, Model
from shardc.passes.ir import gradient_name
from shardc.passes.sizes import size_of
from shardc.tools.xla.compare import (
    OURS_CHEAPER,
    SAME_COST,
    SKIPPED,
    VERDICTS,
    XLA_CHEAPER,
    Row,
    compare,
    skipped,
)
from shardc.tools.xla.costs import Hardware, hardware
from shardc.tools.xla.hlo import summarize
from shardc.tools.xla.statements import Statement, statements

TYPICAL_DIM = 4096
"""Symbolic dims are bound to this (the planner's typical size) so both sides see numbers."""


class UsageError(Exception):
    """The program cannot be checked as asked (a symbolic mesh axis without --set)."""


@dataclass
class Prepared:
    """shardc's side of a check: the compilation, the statements, sizes and hardware numbers."""

    compilation: Compilation
    statements: list[Statement]
    mesh: dict[str, int]
    sizes: dict[str, int]
    hardware: Hardware
    chip: str | None
    model: Model
    notes: list[str] = field(default_factory=list)


@dataclass
class CheckResult:
    program: str
    prepared: Prepared
    rows: list[Row]
    jax_version: str

    def summary(self) -> dict[str, Any]:
        counts = Counter(r.verdict for r in self.rows)
        generic = [r.line for r in self.rows if r.verdict != SKIPPED and not r.known]
        failed = [r.line for r in self.rows if r.verdict == XLA_CHEAPER or r.byte_count_bug]
        return {
            "statements": len(self.rows),
            **{v: counts.get(v, 0) for v in VERDICTS},
            "generic_explanation_lines": generic,
            "failed_lines": failed,
            "ok": not failed,
        }

    @property
    def ok(self) -> bool:
        return bool(self.summary()["ok"])


def _symbolic(compilation: Compilation) -> tuple[list[str], list[str]]:
    prog = compilation.compiled
    assert prog is not None
    return ([a for a, s in prog.mesh if s is None], [d for d, s in prog.dims if s is None])


def prepare(
    source: Source,
    hw: str | None = None,
    model: Model = "exact",
    bindings: Mapping[str, float] | None = None,
    matmul_precision: MatmulPrecision = "default",
) -> Prepared | Compilation:
    """Run shardc on the program; a Compilation (with its diagnostics) when it has errors."""
    bindings = dict(bindings or {})
    first = run_pipeline(
        source,
        hw=hw,
        model=model,
        set=bindings,
        stop_after="insert-collectives",
        matmul_precision=matmul_precision,
    )
    if first.diagnostics.has_errors or first.compiled is None:
        return first
    axes, dims = _symbolic(first)
    missing = [a for a in axes if a not in bindings]
    if missing:
        raise UsageError(
            f"mesh axes {', '.join(missing)} are symbolic: the number of devices "
            f"must be known (--set {missing[0]}=8)"
        )
    notes = []
    free = [d for d in dims if d not in bindings]
    if free:
        # The planner's typical size, rounded up so that any sharding divides it.
        declared_mesh = dict(first.compiled.mesh)
        devices = math.prod(size_of(a, declared_mesh, bindings) or 1 for a in declared_mesh)
        size = math.lcm(TYPICAL_DIM, devices)
        notes.append(
            f"{', '.join(free)} symbolic: checked at {size} (the planner's typical "
            "size, a multiple of the device count); bind with --set"
        )
        bindings.update({d: size for d in free})
    result = run_pipeline(
        source, hw=hw, model=model, set=bindings, matmul_precision=matmul_precision
    )
    if result.diagnostics.has_errors or result.compiled is None or result.program is None:
        return result
    prog = result.compiled
    declared = prog.dims_and_mesh
    mesh = {a: size_of(a, declared, bindings) or 1 for a in prog.mesh_axes}
    sizes = {d: size_of(d, declared, bindings) or TYPICAL_DIM for d, _ in prog.dims}
    chip = result.report.chip if result.report is not None else None
    return Prepared(
        result,
        statements(result.program, prog, source),
        mesh,
        sizes,
        hardware(
            chip,
            bindings,
            frozenset(sizes) | frozenset(mesh),
            getattr(prog, "topology", None),
            matmul_precision,
        ),
        getattr(chip, "name", None),
        model,
        notes,
    )


def devices_needed(prepared: Prepared) -> int:
    return math.prod(prepared.mesh.values()) if prepared.mesh else 1


def check(prepared: Prepared) -> CheckResult:
    """Compile every statement with XLA and compare (JAX must have enough devices)."""
    import jax

    from shardc.tools.xla.lower import LoweringError, compile_statement, make_mesh

    mesh = make_mesh(prepared.mesh or {"_one": 1})
    mesh_order = tuple(prepared.mesh)
    rows: list[Row] = []

    def size(name: str) -> float:
        return float(prepared.sizes.get(name, prepared.mesh.get(name, 1)))

    for st in prepared.statements:
        if st.skip:
            rows.append(skipped(st, st.skip))
            continue
        try:
            res = compile_statement(st, mesh, prepared.sizes)
        except LoweringError as exc:
            rows.append(skipped(st, str(exc)))
            continue
        summary = summarize(res.hlo, math.prod(prepared.mesh.values()) if prepared.mesh else 1)
        ours_out = st.ours_layout.format(st.target, mesh_order)
        if st.is_backward:  # both return the gradients pinned to their parameters' layouts
            ours_out = ", ".join(
                g.layout.format(gradient_name(g.name), mesh_order) for g in st.grads
            )
        rows.append(
            compare(
                st,
                summary,
                prepared.mesh,
                size,
                prepared.model,
                prepared.hardware,
                res.flops,
                res.bytes_accessed,
                ours_out if st.is_backward else res.out_spec,
                ours_out,
            )
        )
    name = prepared.compilation.source.name
    return CheckResult(name, prepared, rows, jax.__version__)


__all__ = [
    "OURS_CHEAPER",
    "SAME_COST",
    "CheckResult",
    "Prepared",
    "UsageError",
    "check",
    "devices_needed",
    "prepare",
]
