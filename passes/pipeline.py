"""The pipeline as data: the `Pass` protocol, the passes in order (`PIPELINE`) and the runner.

As in xDSL's `PassPipeline`, a pass is a frozen dataclass with a kebab-case `name` and one `run`
method; each imports its module when it runs, so start-up pays only for the passes that run.
What the passes have made so far travels as a `Unit`; a pass returns a new one, it never writes
into the context.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, get_args

from shardc.passes.context import Context, Options

if TYPE_CHECKING:
    from shardc.hardware import Chip
    from shardc.lang.syntax import Program
    from shardc.passes.derive_cost import OpCost, ProgramCost
    from shardc.passes.fusion import Fusion
    from shardc.passes.ir import CompiledProgram, Topology
    from shardc.passes.lower.prefixes import Prefixes
    from shardc.passes.memory import Memory
    from shardc.passes.symbolic_plans import Chooser


@dataclass(frozen=True, slots=True)
class Unit:
    """One source and what the passes have made of it so far (None: not made yet)."""

    program: Program | None = None
    """The surface program: parsed, validated, with its backward pass derived."""
    backward_line: int | None = None
    """The line of the program's `backward` statement (None without one)."""
    bindings: Mapping[str, float] = dataclasses.field(default_factory=lambda: MappingProxyType({}))
    """The options' bindings that `validate` passed (`passes.validate.Validated`): the sizes and
    figures every later pass reads."""
    chip: Chip | None = None
    """The chip, once `resolve-hardware` has run: its one home in a compile."""
    topology: Topology | None = None
    """Where each mesh axis lives, once `resolve-topology` has run."""
    compiled: CompiledProgram | None = None
    """The per-device program; it carries the backward line and the params."""
    fusion: Fusion | None = None
    """Which ops run as one kernel (`fuse-elementwise`); None: each op alone."""
    cost: ProgramCost | None = None
    memory: Memory | None = None


class Pass(Protocol):
    name: ClassVar[str]
    options: ClassVar[tuple[str, ...]]
    """The fields of the pass that the user's `Options` of the same name set (`configure`)."""

    def run(self, unit: Unit, ctx: Context) -> Unit: ...


@dataclass(frozen=True, slots=True)
class Parse:
    name: ClassVar[str] = "parse"
    options: ClassVar[tuple[str, ...]] = ()

    def run(self, unit: Unit, ctx: Context) -> Unit:
        from shardc.lang.parser import parse
        from shardc.lang.syntax import leave_symbolic

        program = parse(ctx.source, ctx.diagnostics)
        if program is not None and ctx.options.free:
            program = leave_symbolic(program, ctx.options.free)
        return dataclasses.replace(unit, program=program)


@dataclass(frozen=True, slots=True)
class Validate:
    name: ClassVar[str] = "validate"
    options: ClassVar[tuple[str, ...]] = ()

    def run(self, unit: Unit, ctx: Context) -> Unit:
        from shardc.passes.validate import validate

        assert unit.program is not None
        program, bindings = validate(unit.program, ctx)
        return dataclasses.replace(unit, program=program, bindings=bindings)


@dataclass(frozen=True, slots=True)
class DeriveBackward:
    """The `backward` statement becomes statements, validated like any other."""

    name: ClassVar[str] = "derive-backward"
    options: ClassVar[tuple[str, ...]] = ()

    def run(self, unit: Unit, ctx: Context) -> Unit:
        from shardc.lang.syntax import Backward

        assert unit.program is not None
        if not any(isinstance(s, Backward) for s in unit.program.statements):
            return unit  # nothing to derive: the pass's module is not even imported
        from shardc.passes.backward import backward_line, derive_backward
        from shardc.passes.validate import validate

        derived = derive_backward(unit.program, ctx)
        if derived is unit.program or ctx.diagnostics.has_errors:
            return unit
        program, bindings = validate(derived, ctx)
        return dataclasses.replace(
            unit, program=program, bindings=bindings, backward_line=backward_line(unit.program)
        )


@dataclass(frozen=True, slots=True)
class ResolveHardware:
    """The chip named by the caller (`hw`) or, failing that, by the program's `hardware` line."""

    name: ClassVar[str] = "resolve-hardware"
    options: ClassVar[tuple[str, ...]] = ()

    def run(self, unit: Unit, ctx: Context) -> Unit:
        from shardc import hardware
        from shardc.lang.source import NO_SPAN, Span
        from shardc.lang.syntax import HardwareDecl

        assert unit.program is not None
        hw = ctx.options.hw
        if hw is not None and not isinstance(hw, str):
            return dataclasses.replace(unit, chip=hw)
        span: Span = NO_SPAN
        name = hw
        base: Path | None = None
        if name is None:
            for stmt in unit.program.statements:
                if isinstance(stmt, HardwareDecl):
                    name, span = stmt.name, stmt.span
            # A chip path in the program is relative to the program's own folder.
            if Path(ctx.source.name).is_file():
                base = Path(ctx.source.name).resolve().parent
        if name is None:
            return unit
        try:
            chip = hardware.load(name, base=base) if base is not None else hardware.load(name)
        except hardware.HardwareError as exc:
            ctx.diagnostics.error("H001", str(exc), span)
            return unit
        return dataclasses.replace(unit, chip=chip)


@dataclass(frozen=True, slots=True)
class ResolveTopology:
    name: ClassVar[str] = "resolve-topology"
    options: ClassVar[tuple[str, ...]] = ()

    def run(self, unit: Unit, ctx: Context) -> Unit:
        from shardc.passes.topology import resolve_topology

        assert unit.program is not None
        topology = resolve_topology(unit.program, ctx, unit.chip, unit.bindings)
        return dataclasses.replace(unit, topology=topology)


@dataclass(frozen=True, slots=True)
class InsertCollectives:
    name: ClassVar[str] = "insert-collectives"
    options: ClassVar[tuple[str, ...]] = ("explain", "idle_axes")
    chooser: Chooser | None = None
    """Picks plans whose ranking depends on symbolic sizes (`relower`); None: the default."""
    verify: bool = True
    """Check the program it makes (`passes.verify.verify_ir`: every value an op reads is made
    by an earlier op) and raise `IRError`, a compiler bug, if not. It runs as part of this pass,
    as MLIR's pass manager verifies after each pass, so that every caller that stops after
    `insert-collectives` (`shardc check`, `xla-check`, the planner) and `relower` get it."""
    explain: bool = True
    """Build each contraction's decision record (its alternatives' costs as formulas), which
    only a printed report shows. False for a caller that reads only numbers (the planner):
    they are the same, and a sixth of the time less."""
    idle_axes: bool = True
    """Under the exact model, let a contraction split its product over a mesh axis neither
    operand nor its request uses (`passes.einsum_plan._idle_axes`). False leaves such axes
    idle: the planner, whose generated programs give every axis a role, where the wider search
    cost 15% of its time and changed no ranking."""
    prefixes: Prefixes | None = dataclasses.field(default=None, compare=False, hash=False)
    """The whole-program search's earlier lowerings of this unit and context
    (`passes.lower.prefixes.Prefixes`): this one goes on from the last statement whose
    choices are theirs. None: lowered from the first statement."""

    def run(self, unit: Unit, ctx: Context) -> Unit:
        from shardc.passes.lower import insert_collectives

        assert unit.program is not None
        compiled = insert_collectives(
            unit.program,
            ctx,
            self.chooser,
            chip=unit.chip,
            topology=unit.topology,
            bindings=unit.bindings,
            explain=self.explain,
            idle_axes=self.idle_axes,
            prefixes=self.prefixes,
        )
        if self.verify and not ctx.diagnostics.has_errors:
            from shardc.passes.verify import verify_ir

            verify_ir(compiled)
        compiled = dataclasses.replace(compiled, backward_line=unit.backward_line)
        return dataclasses.replace(unit, compiled=compiled)


@dataclass(frozen=True, slots=True)
class FuseElementwise:
    """Groups ops the way XLA fuses them on the chip's backend (`passes.fusion`): a group's
    HBM bytes are counted once, at its root."""

    name: ClassVar[str] = "fuse-elementwise"
    options: ClassVar[tuple[str, ...]] = ()
    enabled: bool = True
    """False: every op its own kernel (the unfused count, for comparison)."""

    def run(self, unit: Unit, ctx: Context) -> Unit:
        from shardc.passes.fusion import fuse_elementwise

        assert unit.compiled is not None
        if not self.enabled:
            return dataclasses.replace(unit, fusion=None)
        backend = unit.chip.family if unit.chip is not None else "none"
        return dataclasses.replace(unit, fusion=fuse_elementwise(unit.compiled, backend))


@dataclass(frozen=True, slots=True)
class DeriveCost:
    name: ClassVar[str] = "derive-cost"
    options: ClassVar[tuple[str, ...]] = ("explain",)
    memo: dict[tuple[Hashable, ...], OpCost | None] | None = dataclasses.field(
        default=None, compare=False, hash=False
    )
    """Op formulas by shape, kept from one run to the next in one context (`derive_cost`)."""
    lean: bool = False
    """Only the figures the whole-program search compares (`derive_cost`'s `lean`)."""
    explain: bool = True
    """Derive each collective's crossover size, which only a printed report shows."""
    totals: bool = True
    """With `lean`, False: no totals either (the search for the scheduled step)."""

    def run(self, unit: Unit, ctx: Context) -> Unit:
        from shardc.passes.derive_cost import derive_cost

        assert unit.compiled is not None
        cost = derive_cost(
            unit.compiled,
            ctx,
            unit.fusion,
            self.memo,
            chip=unit.chip,
            bindings=unit.bindings,
            lean=self.lean,
            explain=self.explain,
            sums=self.totals,
        )
        return dataclasses.replace(unit, cost=cost)


@dataclass(frozen=True, slots=True)
class TrainingMemory:
    name: ClassVar[str] = "training-memory"
    options: ClassVar[tuple[str, ...]] = ()

    def run(self, unit: Unit, ctx: Context) -> Unit:
        from shardc.passes.memory import training_memory

        assert unit.compiled is not None
        return dataclasses.replace(
            unit, memory=training_memory(unit.compiled, ctx.optimizer, ctx.remat, ctx.attention)
        )


PIPELINE: tuple[Pass, ...] = (
    Parse(),
    Validate(),
    DeriveBackward(),
    ResolveHardware(),
    ResolveTopology(),
    InsertCollectives(),
    FuseElementwise(),
    DeriveCost(),
    TrainingMemory(),
)
"""Every pass, in the order they run."""

PassName = Literal[
    "parse",
    "validate",
    "derive-backward",
    "resolve-hardware",
    "resolve-topology",
    "insert-collectives",
    "fuse-elementwise",
    "derive-cost",
    "training-memory",
]
"""A pass's name, for `stop_after` (tests check it lists `PIPELINE`'s names in order)."""

PASS_NAMES: tuple[PassName, ...] = get_args(PassName)


def configure(passes: tuple[Pass, ...], options: Options) -> tuple[Pass, ...]:
    """`passes` with the fields each lists in `options` (its `Pass.options`) set from the
    user's `options`: `compile(explain=False)` reaches the passes that take `explain` as their
    own parameter, as xDSL builds a pass from its pipeline's arguments.

    >>> from shardc.passes.context import Options
    >>> for p in configure(PIPELINE, Options(idle_axes=False)):
    ...     if p.options:
    ...         print(p.name, {k: getattr(p, k) for k in p.options})
    insert-collectives {'explain': True, 'idle_axes': False}
    derive-cost {'explain': True}
    """
    out: list[Pass] = []
    for p in passes:
        given = {k: getattr(options, k) for k in p.options}
        changed = any(getattr(p, k) != v for k, v in given.items())
        out.append(dataclasses.replace(p, **given) if changed else p)  # type: ignore[type-var]
    return tuple(out)


def run_passes(
    ctx: Context,
    passes: tuple[Pass, ...] | None = None,
    stop_after: PassName | None = None,
    on_pass: Callable[[Pass, Unit], None] | None = None,
) -> Unit:
    """Run `passes` (None: `PIPELINE` as `ctx.options` configure it) in order on `ctx.source`,
    stopping after the one named `stop_after` or at the
    first pass that leaves an error (or no program). `on_pass(pass_, unit)` sees each result.

    >>> from shardc.lang.source import Source
    >>> ctx = Context(Source("<doc>", "mesh X=2\\ndim I=4\\nA: bf16[I_X]\\n"))
    >>> unit = run_passes(ctx, stop_after="validate")
    >>> (unit.program is not None, unit.compiled)
    (True, None)
    """
    if stop_after is not None and stop_after not in PASS_NAMES:
        raise ValueError(
            f"stop_after: no pass named {stop_after!r} (passes: {', '.join(PASS_NAMES)})"
        )
    unit = Unit()
    for p in configure(PIPELINE, ctx.options) if passes is None else passes:
        unit = p.run(unit, ctx)
        if on_pass is not None:
            on_pass(p, unit)
        if unit.program is None or ctx.diagnostics.has_errors or p.name == stop_after:
            break
    return unit


def relower(unit: Unit, ctx: Context, chooser: Chooser) -> Unit:
    """`unit` lowered again, with the plan of every contraction whose ranking depends on
    symbolic sizes picked by `chooser`, then costed: the symbolic program at one choice of
    plans (`Report.at` picks them as a compile at its point would)."""
    passes = (InsertCollectives(chooser), FuseElementwise(), DeriveCost(), TrainingMemory())
    for p in configure(passes, ctx.options):
        unit = p.run(unit, ctx)
    return unit
