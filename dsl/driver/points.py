"""A report at a point (`at`): more sizes bound, the plans a compile there would choose; and the
last steps of every compile (`finish`): plans by region, K003 overflows, memory warnings."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from shardc.driver import values
from shardc.driver.caches import Memo
from shardc.driver.objective import varies
from shardc.driver.values import any_unfinite, binding, environment, override_env
from shardc.passes.sizes import known_sizes
from shardc.passes.symbols import as_expr

if TYPE_CHECKING:
    from shardc.driver.report import Report
    from shardc.lang.diagnostics import Diagnostics

OVERFLOW_NOTE = (
    "sizes and hardware figures this large give costs past a float's range "
    "(about 1.8e308); check the sizes bound with --set or declared with `dim`"
)


def value(r: Report, expr: Any, **bindings: float) -> float | None:
    """`Report.value`: the one route from a formula, a total's name or a formula's text to a
    number (`values.value`). A name or a text is evaluated at the plans a compile with
    `bindings` chooses (the report `at` the point, remembered per point) where those can
    differ from the report's: where the plans depend on the sizes bound (piecewise over the
    regions), and where `bindings` give every free size a number (a compile there plans as
    declared, `passes.lower.walk.as_declared`). An expression is evaluated as given."""
    if bindings and isinstance(expr, str) and r.recipe is not None:
        free = free_sizes(r)
        if free & bindings.keys() and (free <= bindings.keys() or varies(r)):
            return values.value(at(r, **bindings), expr)
    return values.value(r, expr, **bindings)


def free_sizes(r: Report) -> set[str]:
    """The sizes `r` leaves symbolic: neither declared nor bound."""
    return {n for n, v in r.program.dims_and_mesh.items() if v is None and n not in r.bindings}


def at(r: Report, **bindings: float) -> Report:
    """`Report.at`: the report with `bindings` added to its own, every number evaluated (one
    report per point, kept: `value` at a point asks for each total)."""
    key = tuple(sorted(bindings.items()))
    try:
        hit = r.memo.points.get(key)
    except TypeError:  # an unhashable value: `_at` names the binding
        return _at(r, **bindings)
    if hit is None:
        hit = r.memo.points[key] = _at(r, **bindings)
    return hit


def _at(r: Report, **bindings: float) -> Report:
    from shardc.lang.diagnostics import Diagnostics
    from shardc.lang.numeric import NumberError, whole

    sizes = {n for n, _ in (*r.program.dims, *r.program.mesh)}
    for k, v in bindings.items():
        if k in sizes:
            try:
                whole(v, k)
            except NumberError as exc:
                raise ValueError(
                    f"{exc} (a size must be a whole number from 1 to 2**63 - 1)"
                ) from None
    override_env(r, bindings)
    merged = {**r.bindings, **{k: binding(k, v) for k, v in bindings.items()}}
    known = known_sizes((*r.program.dims, *r.program.mesh), merged)
    for count in r.program.repeats:  # R002's rule, at this point: at least once
        if count.names and set(count.names) <= known.keys() and set(count.names) & bindings.keys():
            runs = count.evaluate({n: known[n] for n in count.names})
            if runs < 1:
                raise ValueError(
                    f"{', '.join(f'{n}={known[n]}' for n in count.names)}: "
                    f"`repeat {count.text}` (line {count.line}) would run "
                    f"{runs} times; a repeat block runs at least once"
                )
    out = moved(r, merged, bindings.keys())
    diags = Diagnostics()
    if overflows(out, diags):  # K003 of a compile at these sizes: no inf or nan shown
        raise ValueError(
            f"at {', '.join(f'{k}={v}' for k, v in bindings.items())}: {diags.items[0].message}"
        )
    return out


def moved(r: Report, merged: dict[str, float], bound: Iterable[str]) -> Report:
    """The report at `merged` (`bound`: the names `at` was given), evaluated."""

    from shardc.lang.diagnostics import CompileError

    bound = set(bound)
    symbolic = free_sizes(r)
    if r.recipe is not None and symbolic & set(r.program.mesh_axes) & bound:
        # The formulas of a symbolic mesh axis assume a full ring; with its size known the
        # topology is the slice's own, so the program is compiled again at this point.
        return recompile(r, merged).evaluate()
    if r.recipe is not None and symbolic & bound and symbolic <= bound:
        # Every size now known: a compile plans as the program declaring them does
        # (`passes.lower.walk.as_declared`: the HBM time in the ranking, reshards priced at
        # the sizes, chains planned jointly), so the program is compiled again at this point.
        # A point a compile refuses (a size its shards do not divide, S004) keeps the plans
        # chosen there among the report's own, as `value` over a grid of sizes expects.
        try:
            return recompile(r, merged).evaluate()
        except CompileError:
            pass
    if r.recipe is not None and symbolic & bound and (varies(r) or symbolic <= bound):
        # Plans chosen "by default" at symbolic sizes: choose them again at this point, as a
        # compile with these sizes bound does (passes/symbolic_plans.py), and cost that
        # program.
        from shardc.driver.region_totals import settle
        from shardc.passes.symbolic_plans import AtPoint

        point = {
            n: float(v) for n, v in known_sizes((*r.program.dims, *r.program.mesh), merged).items()
        }
        from shardc.driver.objective import at_point

        # as a compile there: the whole program's objective picks among the plans
        out = at_point(r, AtPoint(point, whole=True), merged)
        if symbolic - bound:  # sizes still free: by region, as a compile does
            out = settle(out)
        return out.evaluate()
    return dataclasses.replace(
        r, bindings=merged, warnings=list(r.warnings), memo=r.memo.fresh()
    ).evaluate()


def recompile(r: Report, bindings: dict[str, float]) -> Report:
    """The program compiled again with `bindings` (`CompileError` for its diagnostics)."""
    from shardc.driver.recipe import rerun
    from shardc.lang.diagnostics import CompileError

    assert r.recipe is not None
    recipe = rerun(r.recipe, bindings)
    unit, ctx = recipe.unit, recipe.ctx
    out = None
    if not ctx.diagnostics.has_errors and unit.cost is not None:
        from shardc.driver.objective import choose

        again = dataclasses.replace(
            r,
            cost=unit.cost,
            chip=unit.chip,
            bindings=dict(unit.bindings),
            warnings=[],
            memory=unit.memory,
            recipe=recipe,
            shown_region=None,
            settled=False,
            memo=Memo(),
            objective_note=None,
        )
        again = choose(again, recipe.shared["recorder"])  # as a compile at these sizes
        out = finish(again, ctx.diagnostics)
    if out is None:
        raise CompileError(ctx.diagnostics.errors(), recipe.source)
    return out


def finish(r: Report, diags: Diagnostics) -> Report | None:
    """The report a compile returns: plans by region where they depend on symbolic sizes,
    K003 (None: it overflows), K001/K002 and N015 warnings, then the warnings' text."""
    from shardc.driver.region_totals import settle

    r = settle(r)
    if overflows(r, diags):
        return None
    memory_warning(r, diags)
    unused_bindings(r, diags)
    return dataclasses.replace(
        r, warnings=[d.message for d in diags.items if d.severity == "warning"]
    )


def overflows(r: Report, diags: Diagnostics) -> bool:
    """K003: a quantity whose every symbol has a number but whose value is not a finite float
    (a size product past 1.8e308, say). Such a report is not printed: it would show inf or nan.
    Evaluating here costs nothing extra, since the writers reuse the report's numbers."""
    from shardc.driver.document import OP_FIELDS
    from shardc.driver.values import all_expressions

    try:
        r.evaluate(conditions=False)  # the writers evaluate the conditions they print
    except (ArithmeticError, ValueError) as exc:  # math.pow and friends raise instead of inf
        diags.error(
            "K003", f"a quantity of the report overflows a float ({exc})", notes=(OVERFLOW_NOTE,)
        )
        return True
    if not any_unfinite(r):  # every formula below was evaluated above: none overflows
        return False
    env = environment(r).keys()
    # Each distinct formula once (a program repeats few), named where it first appears.
    named: dict = {}
    for key, x in r.totals.items():
        named.setdefault(as_expr(x), key)
    for c in r.ops:
        for label, attr in OP_FIELDS:
            named.setdefault(as_expr(getattr(c, attr)), (c, label))
    for x in all_expressions(r, conditions=False):
        named.setdefault(as_expr(x), "an intermediate quantity")
    for expr, where in named.items():
        name = (
            where if isinstance(where, str) else f"op {where[0].index} ({where[0].op}) {where[1]}"
        )
        free = expr.free_symbols
        if free and free <= env and values.value(r, expr) is None:
            text = str(expr)
            shown = f"{name} = {text}" if len(text) <= 80 else name
            diags.error("K003", f"a quantity overflows a float: {shown}", notes=(OVERFLOW_NOTE,))
            return True
    return False


def unused_bindings(r: Report, diags: Diagnostics) -> None:
    """N015: a hardware quantity bound with --set that no formula of the program uses (on a GPU
    the fast link is W_nvlink, so `--set W_ici=...` would silently change nothing)."""
    from shardc.driver.values import all_expressions
    from shardc.passes.validate import is_hardware_name

    hw = [n for n in r.bindings if is_hardware_name(n)]
    if not hw:
        return
    used = {s.name for e in all_expressions(r) for s in e.free_symbols}
    for name in hw:
        if name not in used:
            names = sorted(n for n in used if is_hardware_name(n))
            diags.warning(
                "N015",
                f"--set binds {name!r}, which no formula of this program uses",
                notes=(
                    "the program's hardware quantities: " + ", ".join(names)
                    if names
                    else "the program uses no hardware quantities",
                ),
            )


def memory_warning(r: Report, diags: Diagnostics) -> None:
    """K002 (a training step) or K001 (the named arrays): more bytes than the chip's HBM."""
    if r.chip is None:
        return
    if r.memory is not None:
        total = values.value(r, r.memory.total)
        if total is not None and total > r.chip.hbm_bytes:
            diags.warning(
                "K002",
                f"a training step needs {total / 1e9:.3g} GB per device "
                f"(parameters, gradients, {r.options['optimizer']} state, "
                f"activations with remat {r.options['remat']}), more than the "
                f"{r.chip.hbm_bytes / 1e9:.3g} GB of HBM on {r.chip.name}",
                notes=(
                    "shard parameters and optimizer state further (FSDP), or "
                    "recompute activations (--remat block)",
                ),
            )
        return
    mem = values.value(r, r.totals["memory_per_device_bytes"])
    if mem is not None and mem > r.chip.hbm_bytes:
        diags.warning(
            "K001",
            f"the named arrays need {mem / 1e9:.3g} GB per device, more than "
            f"the {r.chip.hbm_bytes / 1e9:.3g} GB of HBM on {r.chip.name}",
            notes=("shard the largest arrays over more mesh axes",),
        )


__all__ = [
    "OVERFLOW_NOTE",
    "at",
    "finish",
    "free_sizes",
    "memory_warning",
    "moved",
    "overflows",
    "recompile",
    "unused_bindings",
    "value",
]
