"""The public Python API: `parse` and `compile`. The CLI is a thin layer over these."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from shardc.lang.diagnostics import CompileError, Diagnostics
from shardc.lang.source import Source
from shardc.lang.syntax import Program

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.hardware import Chip
    from shardc.passes.context import Attention, MatmulPrecision, Optimizer, Remat
    from shardc.passes.ir import CompiledProgram
    from shardc.passes.pipeline import PassName


def as_source(source_or_path: str | Path | Source, name: str | None = None) -> Source:
    """A `Source` from text, a path, or a Source.

    A path (a `Path`, or a one-line string ending in `.shard`) is read as the CLI reads it: a
    regular file, UTF-8, at most `MAX_SOURCE_BYTES`; anything else, a missing file included,
    raises `shardc.driver.files.CliIOError` with a message naming the file.
    """
    from shardc.driver.files import read_text

    if isinstance(source_or_path, Source):
        return source_or_path
    if isinstance(source_or_path, Path):
        return Source(name or str(source_or_path), read_text(str(source_or_path)))
    text = source_or_path
    if "\n" not in text and text.strip().endswith(".shard"):
        # A path, not a program (a program names a `.shard` file only in a comment, which
        # needs a newline to end): read it, so a missing file says so instead of parsing
        # its name as program text.
        return Source(name or text, read_text(text.strip()))
    return Source(name or "<string>", text)


@dataclass
class Compilation:
    """Everything one run produced; `report` is None when there were errors."""

    source: Source
    diagnostics: Diagnostics
    program: Program | None = None
    compiled: CompiledProgram | None = None
    report: Report | None = None

    def rendered(self) -> str:
        return self.diagnostics.render(self.source)


def run_pipeline(source: Source, hw: str | Chip | None = None,
                 model: Literal["exact", "book"] = "exact",
                 bindings: Mapping[str, float] | None = None, *,
                 stop_after: PassName | None = None,
                 optimizer: Optimizer = "adam", remat: Remat = "none",
                 free: Iterable[str] = (), attention: Attention = "materialized",
                 explain: bool = True, idle_axes: bool = True,
                 matmul_precision: MatmulPrecision = "default") -> Compilation:
    """Run the passes (`shardc.passes.pipeline.PIPELINE`) and build the report, collecting
    diagnostics; `stop_after` names the last pass to run."""
    from shardc.passes.context import (
        Attention,
        Context,
        MatmulPrecision,
        Model,
        Optimizer,
        Options,
        Remat,
    )
    from shardc.passes.pipeline import run_passes

    for option, value, allowed in (("model", model, get_args(Model)),
                                   ("optimizer", optimizer, get_args(Optimizer)),
                                   ("remat", remat, get_args(Remat)),
                                   ("attention", attention, get_args(Attention)),
                                   ("matmul_precision", matmul_precision,
                                    get_args(MatmulPrecision))):
        if value not in allowed:
            raise ValueError(f"{option}={value!r}: expected one of "
                             f"{', '.join(map(repr, allowed))}")
    ctx = Context(source, options=Options(hw, model, optimizer, remat, dict(bindings or {}),
                                          frozenset(free), attention, explain=explain,
                                          idle_axes=idle_axes,
                                          matmul_precision=matmul_precision))
    unit = run_passes(ctx, stop_after=stop_after)
    result = Compilation(source, ctx.diagnostics, unit.program, unit.compiled)
    if ctx.diagnostics.has_errors or stop_after is not None or unit.cost is None:
        return result
    from shardc.driver.report import Report

    report = Report(unit.cost, unit.chip, ctx.validated_bindings(), memory=unit.memory,
                    options={"optimizer": ctx.optimizer, "remat": ctx.remat,
                             "attention": ctx.attention},
                    _relower=_relowering(unit, ctx),
                    _recompile=_recompiling(source, hw, model, optimizer, remat, free,
                                            attention, explain, idle_axes, matmul_precision))
    from shardc.driver.regions import settle

    report = settle(report)  # plans chosen by region where they depend on symbolic sizes
    if _overflows(report, ctx.diagnostics):
        return result
    _memory_warning(report, ctx.diagnostics)
    _unused_bindings(report, ctx.diagnostics)
    report.warnings = [d.message for d in ctx.diagnostics.items if d.severity == "warning"]
    result.report = report
    return result


def _relowering(unit, ctx):
    """For `Report.at`: the program lowered again with the plans a `Chooser` picks, costed."""
    import dataclasses

    from shardc.lang.diagnostics import Diagnostics
    from shardc.passes.pipeline import relower

    def run(chooser):
        again = relower(unit, dataclasses.replace(ctx, diagnostics=Diagnostics()), chooser)
        return again.cost, again.memory
    return run


def _recompiling(source: Source, hw, model, optimizer, remat, free, attention, explain,
                 idle_axes, matmul_precision="default"):
    """For `Report.at` with a mesh axis: the program compiled with more sizes bound."""
    def run(bindings: Mapping[str, float]) -> Report:
        result = run_pipeline(source, hw, model, bindings, optimizer=optimizer, remat=remat,
                              free=free, attention=attention, explain=explain,
                              idle_axes=idle_axes, matmul_precision=matmul_precision)
        if result.report is None:
            raise CompileError(result.diagnostics.errors(), source)
        return result.report
    return run


def _overflows(report: Report, diags: Diagnostics) -> bool:
    """K003: a quantity whose every symbol has a number but whose value is not a finite float
    (a size product past 1.8e308, say). Such a report is not printed: it would show inf or nan.
    Evaluating here costs nothing extra, since the printers reuse the report's cache."""
    from shardc.driver.report import OP_FIELDS
    from shardc.passes.symbols import as_expr

    try:
        report.evaluate(conditions=False)  # printers evaluate the conditions they print
    except (ArithmeticError, ValueError) as exc:  # math.pow and friends raise instead of inf
        diags.error("K003", f"a quantity of the report overflows a float ({exc})",
                    notes=(_OVERFLOW_NOTE,))
        return True
    if not report.any_unfinite():  # every formula below was evaluated above: none overflows
        return False
    env = report.environment().keys()
    # Each distinct formula once (a program repeats few), named where it first appears.
    named: dict = {}
    for key, x in report.totals.items():
        named.setdefault(as_expr(x), key)
    for c in report.ops:
        for label, attr in OP_FIELDS:
            named.setdefault(as_expr(getattr(c, attr)), (c, label))
    for x in report.all_expressions(conditions=False):
        named.setdefault(as_expr(x), "an intermediate quantity")
    for expr, where in named.items():
        name = where if isinstance(where, str) else f"op {where[0].index} ({where[0].op}) {where[1]}"
        free = expr.free_symbols
        if free and free <= env and report.value(expr) is None:
            text = str(expr)
            shown = f"{name} = {text}" if len(text) <= 80 else name
            diags.error("K003", f"a quantity overflows a float: {shown}", notes=(_OVERFLOW_NOTE,))
            return True
    return False


_OVERFLOW_NOTE = ("sizes and hardware figures this large give costs past a float's range "
                  "(about 1.8e308); check the sizes bound with --set or declared with `dim`")


def _unused_bindings(report: Report, diags: Diagnostics) -> None:
    """N015: a hardware quantity bound with --set that no formula of the program uses (on a GPU
    the fast link is W_nvlink, so `--set W_ici=...` would silently change nothing)."""
    from shardc.passes.validate import is_hardware_name

    hw = [n for n in report.bindings if is_hardware_name(n)]
    if not hw:
        return
    used = {s.name for e in report.all_expressions() for s in e.free_symbols}
    for name in hw:
        if name not in used:
            names = sorted(n for n in used if is_hardware_name(n))
            diags.warning("N015", f"--set binds {name!r}, which no formula of this program uses",
                          notes=("the program's hardware quantities: " + ", ".join(names)
                                 if names else "the program uses no hardware quantities",))


def _memory_warning(report: Report, diags: Diagnostics) -> None:
    if report.chip is None:
        return
    if report.memory is not None:
        total = report.value(report.memory.total)
        if total is not None and total > report.chip.hbm_bytes:
            diags.warning("K002", f"a training step needs {total / 1e9:.3g} GB per device "
                          f"(parameters, gradients, {report.options['optimizer']} state, "
                          f"activations with remat {report.options['remat']}), more than the "
                          f"{report.chip.hbm_bytes / 1e9:.3g} GB of HBM on {report.chip.name}",
                          notes=("shard parameters and optimizer state further (FSDP), or "
                                 "recompute activations (--remat block)",))
        return
    mem = report.value(report.totals["memory_per_device_bytes"])
    if mem is not None and mem > report.chip.hbm_bytes:
        diags.warning("K001", f"the named arrays need {mem / 1e9:.3g} GB per device, more than "
                      f"the {report.chip.hbm_bytes / 1e9:.3g} GB of HBM on {report.chip.name}",
                      notes=("shard the largest arrays over more mesh axes",))


def parse(source_or_path: str | Path | Source, name: str | None = None) -> Program:
    """Parse and validate a program; raise `CompileError` with positioned diagnostics.

    >>> p = parse("mesh X=2\\ndim I=4, J=8\\nA: bf16[I_X, J]\\n")
    >>> p.statements[-1].layout.format("A")
    'A[I_X, J]'
    """
    source = as_source(source_or_path, name)
    result = run_pipeline(source, stop_after="derive-backward")
    if result.diagnostics.has_errors or result.program is None:
        raise CompileError(result.diagnostics.errors(), source)
    return result.program


def compile(source_or_path: str | Path | Source, hw: str | Chip | None = None,
            model: Literal["exact", "book"] = "exact", set: Mapping[str, float] | None = None,
            name: str | None = None, optimizer: Optimizer = "adam",
            remat: Remat = "none", free: Iterable[str] = (),
            attention: Attention = "materialized", explain: bool = True,
            idle_axes: bool = True, matmul_precision: MatmulPrecision = "default") -> Report:
    """Compile a program to a cost report whose costs are SymPy expressions.

    `hw` is a chip name (`tpu-v5e`), a path to a chip TOML, or a `hardware.Chip`; it overrides
    the program's `hardware` line. `set` binds sizes or hardware symbols (`{"B": 4096}`);
    `free` names declared sizes to leave symbolic (as `shardc sweep` compiles what it varies).
    `explain=False` leaves out what only a printed report shows (decision records, crossover
    sizes; `passes.context.Options.explain`): every number is the same. `idle_axes=False`
    keeps a contraction off mesh axes it does not use (`passes.context.Options.idle_axes`).
    `matmul_precision` ("default", "high", "highest") prices products of f32 operands as JAX's
    `jax.lax.Precision` runs them on the chip (`passes.context.Options.matmul_precision`).

    >>> r = compile("mesh X=2\\ndim B=8, D=4, F=6\\nA: bf16[B, D_X]\\n"
    ...             "W: bf16[D_X, F]\\nC[B, F] = A ·_D W\\n", hw="tpu-v5e")
    >>> [c.op for c in r.ops]
    ['AllGather', 'AllGather', 'einsum']
    """
    source = as_source(source_or_path, name)
    result = run_pipeline(source, hw, model, set, optimizer=optimizer, remat=remat, free=free,
                          attention=attention, explain=explain, idle_axes=idle_axes,
                          matmul_precision=matmul_precision)
    if result.report is None:
        raise CompileError(result.diagnostics.errors(), source)
    return result.report
