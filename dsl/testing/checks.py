"""Checkers for users' property tests: each takes a compiled report and raises AssertionError
with a readable message, or returns None.

- `check_simulates`: the mesh simulator (`shardc.tools.simulate`) runs the per-device program
  block by block with numpy and every block equals the unsharded computation;
- `check_at_points`: the symbolic report's totals, evaluated at a point, equal those of a
  compile with the point's sizes bound;
- `check_no_cheaper_plan`: no hand-written plan of a contraction statement costs less than the
  compiler's (the optimality oracle, `shardc.testing.oracle`).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from shardc.driver import api
from shardc.lang.diagnostics import CompileError
from shardc.lang.source import Source
from shardc.passes.ir import Einsum, Input
from shardc.testing import oracle
from shardc.testing.oracle import Problem
from shardc.tools.simulate import SimulationError, check, random_inputs
from shardc.tools.simulate_machine import describe

if TYPE_CHECKING:
    from shardc.driver.report import Report

MAX_ELEMENTS = 2**22
"""The most elements one array of a simulated program may have (the simulator holds each
value on every device)."""
MAX_DEVICES = 512
"""The most devices `check_simulates` simulates."""
TOLERANCE = 1e-9


def _sizes(report: Report) -> dict[str, int]:
    """The sizes the report has a number for (declared, or bound by `set` or `at`)."""
    env = report.environment()
    names = report.names()
    out = {}
    for n, _ in (*report.program.dims, *report.program.mesh):
        v = env.get(names[n])
        if v is not None:
            out[n] = int(v)
    return out


def simulation_sizes(report: Report, sizes: Mapping[str, int] | None = None) -> dict[str, int]:
    """The sizes `check_simulates` runs a program at: `sizes`, then the report's own where
    small enough, else a symbolic (or too large) mesh axis is 2 and a dim the mesh's device
    count (which every sharding of it divides).

    >>> import shardc
    >>> r = shardc.compile("mesh X=4\\ndim B, D=8\\nA: f32[B_X, D]\\n")
    >>> simulation_sizes(r)
    {'X': 4, 'B': 4, 'D': 8}
    """
    given = dict(sizes or {})
    known = _sizes(report)
    mesh: dict[str, int] = {}
    for n, _ in report.program.mesh:
        v = given.get(n, known.get(n, 2))
        mesh[n] = v
    devices = math.prod(mesh.values())
    out = dict(mesh)
    for n, _ in report.program.dims:
        size = given.get(n, known.get(n))
        out[n] = size if size is not None and (n in given or size <= 4 * devices) else devices
    return out


def check_simulates(report: Report, sizes: Mapping[str, int] | None = None, seed: int = 0) -> None:
    """Run the compiled per-device program on simulated devices (numpy, random integer
    inputs) and compare every value's blocks with the unsharded program; AssertionError
    naming the op and the error where one differs.

    Sizes: `sizes`, else the report's own where they are small, else small ones that every
    sharding divides (`simulation_sizes`): the plans are the report's, run at those sizes.

    >>> import shardc
    >>> check_simulates(shardc.compile("mesh X=2\\ndim I=4, J=4, K=4\\n"
    ...                                "A: f32[I, J_X]\\nB: f32[J_X, K]\\nC = A ·_J B\\n"))
    """
    program = report.program
    run = simulation_sizes(report, sizes)
    devices = math.prod(run[n] for n, _ in program.mesh)
    if devices > MAX_DEVICES:
        raise ValueError(
            f"check_simulates: {devices} devices is more than the {MAX_DEVICES} "
            "it simulates; bind smaller mesh axes (sizes={...})"
        )
    for op in program.ops:
        elements = math.prod(run.get(d, 1) for d in op.out.dims)
        if elements > MAX_ELEMENTS:
            raise ValueError(
                f"check_simulates: {op.out.array} would have {elements:,} "
                f"elements, more than {MAX_ELEMENTS:,}; pass smaller sizes "
                "(sizes={...})"
            )
    rng = np.random.default_rng(seed)
    try:
        check(program, random_inputs(program, run, rng), run, seed=seed)
    except SimulationError as exc:
        message = str(exc)
        m = re.match(r"value '([^']+)'", message)
        op = next((o for o in program.ops if m and o.out.id == m.group(1)), None)
        where = ""
        if op is not None:
            line = op.span.line if op.span.line > 0 else None
            where = (
                f"op {describe(op, tuple(n for n, _ in program.mesh))}"
                + (f" (line {line})" if line else "")
                + ": "
            )
        shown = ", ".join(f"{k}={v}" for k, v in run.items())
        raise AssertionError(
            f"{report.name}: the simulated devices disagree with the unsharded "
            f"program at {shown}: {where}{message}"
        ) from None


def _source_of(report: Report, source: str | Path | Source | None) -> str | Path | Source | None:
    if source is not None:
        return source
    path = Path(report.name)
    return path if report.name.endswith(".shard") and path.is_file() else None


def check_at_points(
    report: Report,
    points: Iterable[Mapping[str, float]],
    source: str | Path | Source | None = None,
    **options: Any,
) -> None:
    """At each point (sizes the report leaves symbolic, `{"B": 4096}`), every total of the
    symbolic report, its formula evaluated there, equals the same total of a compile with those
    sizes bound; AssertionError naming the point, the total and both values otherwise.

    The compile at a point compiles `source` (the program's text or path; by default the file
    the report was compiled from, if it is one) with the report's chip, model and options, and
    `options` on top (`compile`'s keywords); without a source it is `report.at(**point)`, the
    program lowered again with the point's sizes.

    >>> import shardc
    >>> text = "mesh X=4\\ndim B, D\\nhardware tpu-v5e\\nA: bf16[B_X, D]\\nC = AllGather_X(A)\\n"
    >>> check_at_points(shardc.compile(text), [{"B": 64, "D": 8}], source=text)
    """
    src = _source_of(report, source)
    kwargs: dict[str, Any] = {
        "hw": report.chip,
        "model": report.model,
        **{
            k: v
            for k, v in report.options.items()
            if k in ("optimizer", "remat", "attention", "on")
        },
        **options,
    }
    for point in points:
        point = dict(point)
        shown = ", ".join(f"{k}={v}" for k, v in point.items())
        if src is not None:
            try:
                there = api.compile(src, set={**_sizes(report), **point}, **kwargs)
            except CompileError as exc:
                raise AssertionError(f"{report.name}: no compile at {shown}:\n{exc}") from None
        else:
            there = report.at(**point)
        for name in report.totals:
            if name not in there.totals:
                continue
            ours = report.value(report.totals[name], **point)
            theirs = there.value(name)
            if ours is None and theirs is None:
                continue
            if (
                ours is None
                or theirs is None
                or not math.isclose(ours, theirs, rel_tol=TOLERANCE, abs_tol=1e-300)
            ):
                raise AssertionError(
                    f"{report.name}: at {shown}, {name} of the symbolic report is {ours!r} "
                    f"({report.totals[name]}), a compile there gives {theirs!r} "
                    f"({there.totals[name]})"
                )


def contraction_problems(
    report: Report, source: str | Path | Source | None = None
) -> list[tuple[int, Problem]]:
    """(line, `oracle.Problem`) for each statement `C[...] = X ·_J Y` of the program whose
    operands are declared arrays, contracted over one dim: the program's lines before the
    statement are the problem's head (X and Y bound to the oracle's names A and B)."""
    src = _source_of(report, source)
    if src is None:
        raise ValueError(
            f"{report.name}: check_no_cheaper_plan needs the program's text "
            "(source=...), to write the hand plans after its lines"
        )
    text = api.as_source(src).text
    lines = re.split(r"\r\n|\r|\n", text)
    program = report.program
    axes = tuple(n for n, _ in program.mesh)
    inputs = {op.out.array: op.out for op in program.ops if isinstance(op, Input)}
    out: list[tuple[int, Problem]] = []
    seen: set[int] = set()
    for op in program.ops:
        if not isinstance(op, Einsum) or len(op.contract) != 1 or op.span.line in seen:
            continue
        line = op.span.line
        a, b = inputs.get(op.lhs.array), inputs.get(op.rhs.array)
        if (
            a is None
            or b is None
            or line <= 0
            or {"A", "B", "C"} & (inputs.keys() - {a.array, b.array})
        ):
            continue
        final = [o.out for o in program.ops if o.span.line == line and o.out.array == op.out.array]
        result = final[-1].layout
        if result.unreduced:
            continue
        seen.add(line)
        head = "\n".join(lines[: line - 1]) + "\n"
        head += "".join(f"{n} = {v.array}\n" for n, v in (("A", a), ("B", b)) if n != v.array)
        out.append(
            (
                line,
                Problem(
                    head,
                    axes,
                    a.dims,
                    b.dims,
                    op.contract[0],
                    {d: result.axes_of(d) for d in result.dim_names},
                ),
            )
        )
    return out


@dataclass(frozen=True)
class Cheaper:
    """A hand-written plan that costs less than the compiler's: the statement's line, the
    hand program, and both costs under the oracle's objective."""

    line: int
    program: str
    hand: float
    ours: float


def cheaper_plans(
    report: Report,
    source: str | Path | Source | None = None,
    max_hands: int | None = 200,
    seed: int = 0,
) -> list[Cheaper]:
    """The hand-written plans (`shardc.testing.oracle`) of the report's program that cost less
    than the compiler's, at most one; `max_hands` of them tried, drawn with `seed` (None: all).
    ValueError for a program the oracle cannot cost (a size left symbolic, no chip)."""
    src = _source_of(report, source)
    if src is None:
        raise ValueError(
            f"{report.name}: check_no_cheaper_plan needs the program's text "
            "(source=...), to write the hand plans after its lines"
        )
    free = [
        n
        for n, v in report.program.dims_and_mesh.items()
        if v is None and report.names()[n] not in report.environment()
    ]
    if free or report.chip is None:
        raise ValueError(
            f"{report.name}: the oracle compares costs in seconds: it needs every "
            f"size and a chip ({', '.join(free) or 'no chip'} has no value; "
            "compile with set={...} and a `hardware` line)"
        )
    every = getattr(oracle, "cheaper_plans", None)
    if every is not None:
        # The oracle over every kind of statement: its own rewrites, objective and options.
        found = every(
            api.as_source(src).text,
            sample=max_hands,
            seed=seed,
            first=True,
            hw=report.chip,
            model=report.model,
        )
        return [Cheaper(f.line, f.program, f.hand, f.ours) for f in found]
    problems = contraction_problems(report, src)
    if not problems:
        raise ValueError(f"{report.name}: no statement `C = X ·_J Y` of declared arrays to check")
    rnd = random.Random(seed)
    for line, problem in problems:
        hands = list(problem.hands())
        if max_hands is not None and len(hands) > max_hands:
            hands = rnd.sample(hands, max_hands)
        hit = oracle.cheaper_hand(problem, hands)
        if hit is not None:
            return [Cheaper(line, hit[0], hit[1], hit[2])]
    return []


def check_no_cheaper_plan(
    report: Report,
    source: str | Path | Source | None = None,
    max_hands: int | None = 200,
    seed: int = 0,
) -> None:
    """No hand-written plan of a statement (each operand resharded to any layout, or sliced
    then gathered explicitly, then the statement and the reshard of its result) costs less than
    the compiler's plan under the oracle's objective; AssertionError with the cheaper hand
    program and both costs otherwise (`cheaper_plans`). `max_hands` compiles that many hand
    plans, drawn with `seed` (None: all of them, hundreds on a two-axis mesh).

    >>> import shardc
    >>> text = ("mesh X=2\\ndim I=256, J=256, K=256\\nhardware tpu-v5e\\nA: bf16[I_X, J]\\n"
    ...         "B: bf16[J, K_X]\\nC = A ·_J B\\n")
    >>> check_no_cheaper_plan(shardc.compile(text), source=text, max_hands=20)
    """
    for c in cheaper_plans(report, source, max_hands, seed):
        raise AssertionError(
            f"{report.name}:{c.line}: a hand-written plan costs {c.hand:.6g} s, "
            f"the compiler's {c.ours:.6g} s ({c.ours / c.hand:.3g}x):\n"
            f"{c.program}"
        )


__all__ = [
    "Cheaper",
    "check_at_points",
    "check_no_cheaper_plan",
    "check_simulates",
    "cheaper_plans",
    "contraction_problems",
    "simulation_sizes",
]
