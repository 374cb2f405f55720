"""The public Python API: `parse` and `compile`. The CLI is a thin layer over these."""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
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
    from shardc.passes.objective import Objective
    from shardc.passes.pipeline import PassName


def as_source(source_or_path: str | Path | Source, name: str | None = None) -> Source:
    """A `Source` from text, a path, or a Source.

    A path (a `Path`, or a one-line string ending in `.shard`) is read as the CLI reads it: a
    regular file, UTF-8, at most `MAX_SOURCE_BYTES`; anything else, a missing file included,
    raises `shardc.driver.files.CliIOError` with a message naming the file.
    """
    from shardc.driver.files import read_text

    if not isinstance(source_or_path, str | Path | Source):
        raise TypeError("the program must be its text, a path (str or pathlib.Path) or a "
                        f"Source, got {_described(source_or_path)}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a string, got {_described(name)}")
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
                 bindings: Mapping[str, float | Decimal] | None = None, *,
                 stop_after: PassName | None = None,
                 optimizer: Optimizer = "adam", remat: Remat = "none",
                 free: Iterable[str] = (), attention: Attention = "materialized",
                 explain: bool = True, idle_axes: bool = True,
                 matmul_precision: MatmulPrecision = "default",
                 on: Literal["roofline", "expected"] = "roofline",
                 objective: Objective | None = None) -> Compilation:
    """Run the passes (`shardc.passes.pipeline.PIPELINE`) and build the report, collecting
    diagnostics; `stop_after` names the last pass to run. `on="expected"` states the
    report's conditions on the calibrated rates (`Report.conditions`). `objective` names what
    the plans minimize for the whole program (`passes.objective`; None: the default)."""
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

    hw = checked_hw(hw)
    bindings = checked_bindings(bindings)
    free = checked_names(free, "free")
    for flag, flag_value in (("explain", explain), ("idle_axes", idle_axes)):
        if not isinstance(flag_value, bool):
            raise TypeError(f"{flag} must be True or False, got {_described(flag_value)}")
    for option, value, allowed in (("model", model, get_args(Model)),
                                   ("optimizer", optimizer, get_args(Optimizer)),
                                   ("remat", remat, get_args(Remat)),
                                   ("attention", attention, get_args(Attention)),
                                   ("matmul_precision", matmul_precision,
                                    get_args(MatmulPrecision))):
        if value not in allowed:
            raise ValueError(f"{option}={value!r}: expected one of "
                             f"{', '.join(map(repr, allowed))}")
    from shardc.passes.objective import OBJECTIVES, Forced

    if objective is not None and objective not in OBJECTIVES:
        raise ValueError(f"objective={objective!r}: expected one of "
                         f"{', '.join(map(repr, OBJECTIVES))} (or None: the default)")
    ctx = Context(source, options=Options(hw, model, optimizer, remat, dict(bindings or {}),
                                          frozenset(free), attention, explain=explain,
                                          idle_axes=idle_axes,
                                          matmul_precision=matmul_precision,
                                          objective=objective))
    from shardc.passes.pipeline import PIPELINE, InsertCollectives

    # The lowering records each contraction's options for the whole-program search.
    shared: dict = {}
    recorder = Forced(shared=shared)
    passes = tuple(InsertCollectives(recorder) if isinstance(p, InsertCollectives) else p
                   for p in PIPELINE)
    unit = run_passes(ctx, passes, stop_after=stop_after)
    result = Compilation(source, ctx.diagnostics, unit.program, unit.compiled)
    if ctx.diagnostics.has_errors or stop_after is not None or unit.cost is None:
        return result
    from shardc.driver.points import finish
    from shardc.driver.recipe import Recipe
    from shardc.driver.report import Report

    options: dict[str, str] = {"optimizer": ctx.optimizer, "remat": ctx.remat,
                               "attention": ctx.attention,
                               **({"on": on} if on != "roofline" else {}),
                               **({"objective": objective} if objective is not None else {})}
    report = Report(unit.cost, unit.chip, ctx.validated_bindings(), memory=unit.memory,
                    options=options, recipe=Recipe(source, unit, ctx, on, shared))
    from shardc.driver.regions import free_sizes

    if not free_sizes(report):  # every size known: plans for the whole program's objective
        from shardc.driver.objective import choose

        report = choose(report, recorder)
    finished = finish(report, ctx.diagnostics)
    if finished is None:  # K003: a number past a float's range
        return result
    result.report = finished
    return result


def _described(value) -> str:
    from shardc.lang.quoting import quoted

    return f"{type(value).__name__} {quoted(value)}"


def checked_hw(hw):
    """`hw` as `compile` takes it: None, a chip name or TOML path (str or Path), or a `Chip`;
    `TypeError` naming the parameter otherwise."""
    from shardc.hardware.chip import Chip

    if hw is None or isinstance(hw, str | Chip):
        return hw
    if isinstance(hw, Path):
        return str(hw)
    raise TypeError(f"hw must be a chip name ('tpu-v5e'), a path to a chip TOML or a "
                    f"shardc.hardware.Chip, got {_described(hw)}")


_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def checked_bindings(bindings) -> dict[str, float | Decimal]:
    """`set` as `compile` takes it: a mapping of names to numbers (`{"B": 4096}`, `{"B": "4M"}`,
    numpy numbers too). A key that is not a name, or a value that is not a number, raises
    `TypeError` or `ValueError` naming it; whether a number suits its name (a whole size, a
    positive figure) is the compiler's check (N016), as for `--set`.

    >>> checked_bindings({"B": "4Ki", "C": 1.97e14})
    {'B': Decimal('4096'), 'C': 197000000000000.0}
    >>> checked_bindings({"B": "x"})
    Traceback (most recent call last):
    ...
    shardc.lang.numeric.NumberError: set['B']: 'x' is not a number (try 4096, 4_096, 1e6,
    4M = 4*10^6 or 4Mi = 4*2^20)
    """
    from shardc.lang.numeric import real
    from shardc.lang.quoting import quoted

    if bindings is None:
        return {}
    if not isinstance(bindings, Mapping):
        raise TypeError("set must be a mapping of names to numbers ({'B': 4096}), got "
                        f"{_described(bindings)}")
    out: dict[str, float | Decimal] = {}
    for key, value in bindings.items():
        if not isinstance(key, str):
            raise TypeError(f"set: a key must be a name such as 'B', got {_described(key)}")
        if not _NAME.fullmatch(key):
            raise ValueError(f"set: {quoted(key)} is not a name (a letter, then letters, "
                             "digits or '_')")
        if isinstance(value, str):  # read as --set reads it: "4M", "1e6"
            out[key] = real(value, f"set[{key!r}]")  # NumberError (a ValueError) for "x"
        elif isinstance(value, bool) or not isinstance(value, numbers.Real | Decimal):
            raise TypeError(f"set[{key!r}] must be a number, got {_described(value)}")
        else:
            # exact for whole numbers (a huge int is N016's to refuse, not an OverflowError)
            out[key] = (value if isinstance(value, Decimal) else Decimal(int(value))
                        if isinstance(value, numbers.Integral) else float(value))
    return out


def checked_names(names, what: str) -> frozenset[str]:
    """A collection of names (`free=["B"]`); a bare string is refused, since `free="BD"` would
    read as the names B and D."""
    from shardc.lang.quoting import quoted

    if isinstance(names, str) or not isinstance(names, Iterable):
        raise TypeError(f"{what} must be a list of names (['B']), got {_described(names)}")
    out = []
    for n in names:
        if not isinstance(n, str) or not _NAME.fullmatch(n):
            raise (TypeError if not isinstance(n, str) else ValueError)(
                f"{what}: {quoted(n)} is not a name")
        out.append(n)
    return frozenset(out)


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
            idle_axes: bool = True, matmul_precision: MatmulPrecision = "default",
            on: Literal["roofline", "expected"] = "roofline",
            objective: Objective | None = None) -> Report:
    """Compile a program to a cost report whose costs are SymPy expressions.

    `hw` is a chip name (`tpu-v5e`), a path to a chip TOML, or a `hardware.Chip`; it overrides
    the program's `hardware` line. `set` binds sizes or hardware symbols (`{"B": 4096}`);
    `free` names declared sizes to leave symbolic (as `shardc sweep` compiles what it varies).
    `explain=False` leaves out what only a printed report shows (decision records, crossover
    sizes; `passes.context.Options.explain`): every number is the same. `idle_axes=False`
    keeps a contraction off mesh axes it does not use (`passes.context.Options.idle_axes`).
    `matmul_precision` ("default", "high", "highest") prices products of f32 operands as JAX's
    `jax.lax.Precision` runs them on the chip (`passes.context.Options.matmul_precision`).
    `on="expected"` states the conditions on the calibrated rates (`Report.conditions`).
    `objective` ("t_lower", "t_upper", "step"; None: "step" for a training step, "t_lower"
    otherwise) is what the plans minimize for the whole program (`passes.objective`).

    An argument of the wrong type raises `TypeError` naming it (`hw=3`, `set={"B": None}`), a
    value that is not a number `ValueError` (`set={"B": "x"}`); a number outside its name's
    domain is a diagnostic, `CompileError` with N016, as for `--set`.

    >>> r = compile("mesh X=2\\ndim B=8, D=4, F=6\\nA: bf16[B, D_X]\\n"
    ...             "W: bf16[D_X, F]\\nC[B, F] = A ·_D W\\n", hw="tpu-v5e")
    >>> [c.op for c in r.ops]
    ['AllGather', 'AllGather', 'einsum']
    """
    source = as_source(source_or_path, name)
    result = run_pipeline(source, hw, model, set, optimizer=optimizer, remat=remat, free=free,
                          attention=attention, explain=explain, idle_axes=idle_axes,
                          matmul_precision=matmul_precision, on=on, objective=objective)
    if result.report is None:
        raise CompileError(result.diagnostics.errors(), source)
    return result.report
