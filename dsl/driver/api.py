"""The public Python API: `parse` and `compile`. The CLI is a thin layer over these; the
options both take are declared once, in `passes.context.Options`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shardc.driver.options import (  # noqa: F401 (re-exported: the API's argument checks)
    Options,
    checked_bindings,
    checked_hw,
    checked_names,
    described,
    options_with,
)
from shardc.lang.diagnostics import CompileError, Diagnostics
from shardc.lang.source import Source
from shardc.lang.syntax import Program

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.passes.ir import CompiledProgram
    from shardc.passes.pipeline import PassName


def as_source(source_or_path: str | Path | Source, name: str | None = None) -> Source:
    """A `Source` from text, a path, or a Source.

    A path (a `Path`, or a one-line string ending in `.shard`) is read as the CLI reads it: a
    regular file, UTF-8, at most `MAX_SOURCE_BYTES`; anything else, a missing file included,
    raises `shardc.driver.files.CliIOError` with a message naming the file.
    """
    from shardc.driver.files import read_text

    if not isinstance(source_or_path, str | Path | Source):
        raise TypeError(
            "the program must be its text, a path (str or pathlib.Path) or a "
            f"Source, got {described(source_or_path)}"
        )
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a string, got {described(name)}")
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


def run_pipeline(
    source: Source,
    options: Options | None = None,
    *,
    stop_after: PassName | None = None,
    **overrides: Any,
) -> Compilation:
    """Run the passes (`shardc.passes.pipeline.PIPELINE`) and build the report, collecting
    diagnostics; `stop_after` names the last pass to run. `options` (None: the defaults) with
    `overrides` by keyword, each checked against its declaration (`shardc.driver.options`)."""
    from shardc.passes.context import Context
    from shardc.passes.pipeline import run_passes

    options = options_with(options, overrides)
    ctx = Context(source, options=options)
    from shardc.passes.objective import Forced
    from shardc.passes.pipeline import PIPELINE, InsertCollectives, configure

    # The lowering records each contraction's options for the whole-program search.
    shared: dict = {}
    recorder = shared["recorder"] = Forced(shared=shared)
    passes = tuple(
        InsertCollectives(recorder) if isinstance(p, InsertCollectives) else p for p in PIPELINE
    )
    unit = run_passes(ctx, configure(passes, options), stop_after=stop_after)
    result = Compilation(source, ctx.diagnostics, unit.program, unit.compiled)
    if ctx.diagnostics.has_errors or stop_after is not None or unit.cost is None:
        return result
    from shardc.driver.points import finish
    from shardc.driver.recipe import Recipe
    from shardc.driver.report import Report

    on, objective = options.on, options.objective
    shown: dict[str, str] = {
        "optimizer": ctx.optimizer,
        "remat": ctx.remat,
        "attention": ctx.attention,
        **({"on": on} if on != "roofline" else {}),
        **({"objective": objective} if objective is not None else {}),
    }
    report = Report(
        unit.cost,
        unit.chip,
        dict(unit.bindings),
        memory=unit.memory,
        options=shown,
        recipe=Recipe(source, unit, ctx, on, shared),
    )
    from shardc.driver.objective import choose

    # plans for the whole program's objective, wherever it has a number (a size left symbolic
    # that no formula uses changes nothing); where a free size enters it, by region (`finish`)
    report = choose(report, recorder)
    finished = finish(report, ctx.diagnostics)
    if finished is None:  # K003: a number past a float's range
        return result
    result.report = finished
    return result


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


def compile(
    source_or_path: str | Path | Source,
    options: Options | None = None,
    *,
    name: str | None = None,
    **overrides: Any,
) -> Report:
    """Compile a program to a cost report whose costs are SymPy expressions.

    `options` is a `shardc.Options` (None: the defaults); `overrides` set single options by
    keyword, each as `shardc.passes.context.Options` declares it: `hw` is a chip name
    (`tpu-v5e`), a path to a chip TOML, or a `hardware.Chip`, and overrides the program's
    `hardware` line; `set` binds sizes or hardware symbols (`{"B": 4096}`); `free` names declared
    sizes to leave symbolic (as `shardc sweep` compiles what it varies); `model`, `optimizer`,
    `remat`, `attention`, `matmul_precision`, `explain`, `idle_axes`, `on` and `objective`
    (what the plans minimize for the whole program, `passes.objective`) as documented there.
    `name` names the source in diagnostics.

    An argument of the wrong type raises `TypeError` naming it (`hw=3`, `set={"B": None}`), a
    value that is not a number `ValueError` (`set={"B": "x"}`); a number outside its name's
    domain is a diagnostic, `CompileError` with N016, as for `--set`.

    >>> r = compile("mesh X=2\\ndim B=8, D=4, F=6\\nA: bf16[B, D_X]\\n"
    ...             "W: bf16[D_X, F]\\nC[B, F] = A ·_D W\\n", hw="tpu-v5e")
    >>> [c.op for c in r.ops]
    ['AllGather', 'AllGather', 'einsum']
    """
    source = as_source(source_or_path, name)
    result = run_pipeline(source, options, **overrides)
    if result.report is None:
        raise CompileError(result.diagnostics.errors(), source)
    return result.report
