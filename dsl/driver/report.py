"""The cost report: SymPy formulas from `derive-cost`, evaluated against a chip and bindings.

`Report.value(expr)` evaluates any expression; all report numbers are computed at once by one
walk over the formulas (`shardc.driver.evaluate`, the numbers `sympy.lambdify` would give).
Printers live in `shardc.driver.printers`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sympy as sp

from shardc.driver.evaluate import UNSUPPORTED, evaluate
from shardc.driver.formulas import code_printer, latex, text
from shardc.driver.document import OP_FIELDS
from shardc.driver.json_report import SCHEMA, report_dict, report_json, topology_dict
from shardc.driver.render import write
from shardc.lang.dtypes import NAMES as DTYPE_NAMES
from shardc.passes.derive_cost import ProgramCost
from shardc.passes.memo import MAX_ENTRIES, register
from shardc.passes.sizes import known_sizes
from shardc.passes.symbols import as_expr, hardware_values, on_expected, size_symbol

if TYPE_CHECKING:
    from shardc.hardware import Chip
    from shardc.lang.diagnostics import Diagnostics
    from shardc.passes.memory import Memory

_VALUES: dict[Any, float | None] = register("report.values")
_FUNCTIONS: dict[Any, Callable[..., Any]] = register("report.functions")
"""Generated functions evaluating a list of formulas, kept for the next report whose formulas
are the same (at most 256: each holds the source of its formulas)."""
"""Each formula's value under the values of its symbols, shared by every report of the process
(`Report.at`, the regions and a recompile evaluate the same formulas again)."""


@dataclass(repr=False)
class Report:
    """Costs of one compiled program; formulas are SymPy, numbers come from `value`."""

    cost: ProgramCost
    chip: Chip | None
    bindings: dict[str, float]
    warnings: list[str] = field(default_factory=list)
    memory: Memory | None = None
    """The training step's memory (parameters, gradients, optimizer, activations), if any."""
    options: dict[str, str] = field(default_factory=dict)
    _cache: dict[sp.Expr, float | None] = field(default_factory=dict, repr=False)
    _names: dict[str, sp.Symbol] | None = field(default=None, repr=False)
    _env: dict[sp.Symbol, float] | None = field(default=None, repr=False)
    _functions: dict[sp.Expr, tuple[tuple[sp.Symbol, ...], Callable[..., Any]]] = field(
        default_factory=dict, repr=False)
    _relower: Callable[[Any], tuple[ProgramCost, Memory | None]] | None = field(
        default=None, repr=False)
    """Lowers the program again with a `passes.regions.Chooser` (set by `compile`)."""
    _recompile: Callable[[Mapping[str, float]], Report] | None = field(default=None, repr=False)
    """Compiles the program again with more sizes bound (set by `compile`): `at` uses it for
    a mesh axis, whose size decides the topology (wraparound, axes of one chip)."""
    _regions: Any = field(default=False, repr=False)
    shown_region: tuple[str, float] | None = field(default=None, repr=False)
    """Where the plan this report's ops, decisions and conditions show holds, and its share of
    the sample, when the plans depend on sizes left symbolic (`shardc.driver.regions.settle`);
    None where one plan holds everywhere."""
    _q: dict[Any, dict[str, Any]] = field(default_factory=dict, repr=False)
    _q_by_id: dict[int, tuple[Any, dict[str, Any]]] = field(default_factory=dict, repr=False)
    """`_q` by object (kept with it, so a reused id never matches): a report asks for the
    same few objects tens of thousands of times, and a SymPy hash is a Python call."""

    # ---- accessors ---------------------------------------------------------------------------
    @property
    def program(self):
        return self.cost.program

    @property
    def name(self) -> str:
        return self.program.name

    @property
    def model(self) -> str:
        return self.cost.model

    @property
    def ops(self):
        return self.cost.ops

    @property
    def totals(self) -> dict[str, sp.Expr]:
        return self.cost.totals

    @property
    def conditions(self):
        """The compute-bound conditions: on the roofline, or with `on="expected"` (`--on
        expected`) on the calibrated rates (`passes.symbols.on_expected`)."""
        if self.options.get("on") != "expected":
            return self.cost.conditions
        return tuple(dataclasses.replace(
            c, relation=on_expected(c.relation, self.cost.symbols),
            text=f"{c.text}, on T_expected's rates") for c in self.cost.conditions)

    @property
    def decisions(self):
        """The decision records with their cases (`shardc.driver.decisions.Decisions`)."""
        from shardc.driver.decisions import Decisions

        return Decisions.of(self.program.decisions, self.ops)

    @property
    def hardware_name(self) -> str | None:
        return self.chip.name if self.chip is not None else None

    # ---- evaluation --------------------------------------------------------------------------
    def environment(self) -> dict[sp.Symbol, float]:
        """Numbers for every bound symbol: sizes, chip figures, then --set overrides (a copy)."""
        if self._env is None:
            self._env = self._environment()
        return dict(self._env)

    def _environment(self) -> dict[sp.Symbol, float]:
        sizes = known_sizes((*self.program.dims, *self.program.mesh), self.bindings)
        env: dict[sp.Symbol, float] = {size_symbol(n): float(v) for n, v in sizes.items()}
        syms = self.cost.symbols
        dtypes = set(DTYPE_NAMES)
        if self.chip is not None:
            env.update(hardware_values(self.chip, syms, self.cost.matmul_precision))
        hw_by_name = {s.name: s for s in syms.all_for(dtypes)}
        for name, value in self.bindings.items():
            if name in hw_by_name or name not in sizes:
                env[hw_by_name.get(name, size_symbol(name))] = float(value)
        return env

    def _evaluate_all(self, exprs: list[sp.Expr]) -> None:
        """Every formula's value under the environment, computed by one walk over those no
        earlier report has evaluated under the same values (`_VALUES`, process-wide)."""
        env = self.environment()
        ready: list[sp.Expr] = []
        keys: list[tuple] = []
        # Distinct objects first (by id, no SymPy hash), then distinct formulas: a report
        # lists the same few objects tens of thousands of times.
        for e in dict.fromkeys({id(e): e for e in exprs}.values()):
            if e in self._cache:
                continue
            free = e.free_symbols
            if not free <= env.keys():
                self._cache[e] = None
                continue
            key = (e, frozenset((s, env[s]) for s in free))
            if key in _VALUES:
                self._cache[e] = _VALUES[key]
            else:
                ready.append(e)
                keys.append(key)
        if not ready:
            return
        if len(_VALUES) + len(ready) > MAX_ENTRIES:
            _VALUES.clear()
        # The walk gives lambdify's numbers bit for bit (shardc.driver.evaluate); a formula
        # with a node it does not know goes through lambdify as before.
        walked = evaluate(ready, env)
        rest = [(e, k) for e, k, v in zip(ready, keys, walked, strict=True) if v is UNSUPPORTED]
        for e, key, v in zip(ready, keys, walked, strict=True):
            if v is not UNSUPPORTED:
                self._cache[e] = _VALUES[key] = _finite(v)
        if rest:
            self._lambdify_all([e for e, _ in rest], [k for _, k in rest], env)

    def _lambdify_all(self, ready: list[sp.Expr], keys: list[tuple],
                      env: dict[sp.Symbol, float]) -> None:
        """`ready`'s values through one generated function (kept for the same formulas)."""
        args = sorted({s for e in ready for s in e.free_symbols}, key=lambda s: s.name)
        # The same formulas under other values (a plan's candidates, a size edited in a
        # notebook): the generated function is kept, keyed by the formulas.
        fkey = (tuple(ready), tuple(args))
        fn = _FUNCTIONS.get(fkey)
        if fn is None:
            if len(_FUNCTIONS) >= 256:
                _FUNCTIONS.clear()
            fn = _FUNCTIONS[fkey] = sp.lambdify(args, ready, modules="math",
                                                printer=code_printer())
        try:
            values = fn(*[env[a] for a in args])
        except ZeroDivisionError:
            # A formula divides by a cost that is 0 at these sizes (a ratio over the
            # communication of a mesh axis of one device): it has no number; the others do.
            values = [_divided(e, args, env) for e in ready]
        for e, key, v in zip(ready, keys, values, strict=True):
            self._cache[e] = _VALUES[key] = _finite(v)

    def names(self) -> dict[str, sp.Symbol]:
        """Every name a binding or a formula may use: the program's dims and mesh axes, the
        names its formulas use, and the hardware figures (`C`, `W_ici`, `t_hop`, ...)."""
        if self._names is None:
            names = {s.name: s for s in self.cost.symbols.all_for(set(DTYPE_NAMES))}
            for n, _ in (*self.program.dims, *self.program.mesh):
                names.setdefault(n, size_symbol(n))
            for e in self.totals.values():
                for s in as_expr(e).free_symbols:
                    names.setdefault(s.name, s)
            self._names = names
        return self._names

    def formula(self, name_or_text: str) -> sp.Expr:
        """The SymPy formula of a total (`t_comms_s`, `flops`, ...) or of a formula over this
        report's names (`t_math_s / t_comms_s`, `2*B*D`).

        Raises `KeyError` naming what is unknown (a typo is an error, not a default), and
        `shardc.driver.user_expr.ExprError` for text that is not a formula.
        """
        if name_or_text in self.totals:
            return as_expr(self.totals[name_or_text])
        known = self.names()
        expr = self.parse(name_or_text)
        # A total's name inside a formula stands for the total (`t_math_s / t_comms_s`).
        totals = {s: as_expr(self.totals[s.name]) for s in expr.free_symbols
                  if s.name in self.totals and s.name not in known}
        bad = sorted({s.name for s in expr.free_symbols} - known.keys() - self.totals.keys())
        if bad:
            raise KeyError(f"unknown quantity {', '.join(map(repr, bad))} in "
                           f"{name_or_text!r}; totals are {', '.join(self.totals)}; names "
                           f"are {', '.join(sorted(known))}")
        return expr.xreplace(totals) if totals else expr

    def _override_env(self, overrides: Mapping[str, float], own: tuple[sp.Symbol, ...] = ()
                      ) -> dict[sp.Symbol, float]:
        env = self.environment()
        known = self.names()
        if own:  # a formula may bring names of its own (derive's N)
            known = {**{s.name: s for s in own}, **known}
        for k, v in overrides.items():
            if k not in known:
                raise KeyError(f"unknown name {k!r} to bind; names are "
                               f"{', '.join(sorted(known))}")
            env[known[k]] = _binding(k, v)
        from shardc.driver.mesh_limits import check_mesh_bindings

        check_mesh_bindings(self, overrides)
        return env

    def function(self, expr: sp.Expr) -> tuple[tuple[sp.Symbol, ...], Callable[..., Any]]:
        """`expr` compiled once (`sp.lambdify` over numpy) with its arguments, sorted by name:
        the report's cache behind `value` with bindings and `at`."""
        expr = as_expr(expr)
        hit = self._functions.get(expr)
        if hit is None:
            args = tuple(sorted(expr.free_symbols, key=lambda s: s.name))
            hit = (args, sp.lambdify(args, expr, modules=["math", "numpy"]))
            self._functions[expr] = hit
        return hit

    def value(self, expr: sp.Expr | str | float | int, **bindings: float) -> float | None:
        """Evaluate an expression, a total's name (`"t_math_s"`) or a formula's text with the
        report's bindings, and `bindings` on top (`value("t_comms_s", B=8192)`).

        Returns None when a symbol has no value (no chip, or a size left symbolic). Raises
        `KeyError` for a name that is neither a total nor a name of this report.
        """
        if (bindings and isinstance(expr, str) and self._relower is not None
                and self.program.sized_choices
                and any(self.program.dims_and_mesh.get(k, 0) is None
                        and k not in self.bindings for k in bindings)):
            # A total where plans depend on the sizes bound here (piecewise over the regions,
            # `driver.regions.settle`): the plans a compile at the point chooses (`at`), exact
            # also where the sample the regions were found on has no point.
            if expr in self.totals:
                return self.at(**bindings).value(expr)
            if expr.isidentifier() and expr not in self.names():
                moved = self.at(**bindings)
                if expr in moved.totals:  # a total only the plans there have (t_recompute_s)
                    return moved.value(expr)
        if isinstance(expr, str):
            expr = self.formula(expr)
        expr = as_expr(expr)
        if bindings:
            args, fn = self.function(expr)
            env = self._override_env(bindings, args)
            if any(a not in env for a in args):
                return None
            return _finite(fn(*[env[s] for s in args]))
        if expr not in self._cache:
            self._evaluate_all([expr])
        return self._cache[expr]

    def any_unfinite(self) -> bool:
        """Whether a formula evaluated so far has a number for every symbol but no finite
        value (an overflow); the cheap first check of K003, before naming the formula."""
        env = self.environment().keys()
        return any(v is None and e.free_symbols and e.free_symbols <= env
                   for e, v in self._cache.items())

    def at(self, **bindings: float) -> Report:
        """This report with `bindings` added to its own (`r.at(B=8192, X=16)`), every number
        evaluated. The formulas are the same objects; names are checked as `value` checks."""
        from shardc.lang.numeric import NumberError, whole

        sizes = {n for n, _ in (*self.program.dims, *self.program.mesh)}
        for k, v in bindings.items():
            if k in sizes:
                try:
                    whole(v, k)
                except NumberError as exc:
                    raise ValueError(f"{exc} (a size must be a whole number from 1 to "
                                     "2**63 - 1)") from None
        self._override_env(bindings)
        merged = {**self.bindings, **{k: _binding(k, v) for k, v in bindings.items()}}
        known = known_sizes((*self.program.dims, *self.program.mesh), merged)
        for count in self.program.repeats:  # R002's rule, at this point: at least once
            if count.names and set(count.names) <= known.keys() and set(count.names) & bindings.keys():
                runs = count.evaluate({n: known[n] for n in count.names})
                if runs < 1:
                    raise ValueError(f"{', '.join(f'{n}={known[n]}' for n in count.names)}: "
                                     f"`repeat {count.text}` (line {count.line}) would run "
                                     f"{runs} times; a repeat block runs at least once")
        out = self._moved(merged, bindings.keys())
        from shardc.lang.diagnostics import Diagnostics

        diags = Diagnostics()
        if overflows(out, diags):  # K003 of a compile at these sizes: no inf or nan shown
            raise ValueError(f"at {', '.join(f'{k}={v}' for k, v in bindings.items())}: "
                             f"{diags.items[0].message}")
        return out

    def _moved(self, merged: dict[str, float], bound) -> Report:
        """The report at `merged` (`bound`: the names `at` was given), evaluated."""
        symbolic = {n for n, v in self.program.dims_and_mesh.items()
                    if v is None and n not in self.bindings}
        if self._recompile is not None and symbolic & set(self.program.mesh_axes) & bound:
            # The formulas of a symbolic mesh axis assume a full ring; with its size known the
            # topology is the slice's own, so the program is compiled again at this point.
            return self._recompile(merged).evaluate()
        if self._relower is not None and self.program.sized_choices and (
                symbolic & bound):
            # Plans chosen "by default" at symbolic sizes: choose them again at this point, as a
            # compile with these sizes bound does (passes/regions.py), and cost that program.
            from shardc.passes.regions import AtPoint

            point = {n: float(v) for n, v in known_sizes(
                (*self.program.dims, *self.program.mesh), merged).items()}
            cost, memory = self._relower(AtPoint(point))
            out = Report(cost, self.chip, merged, list(self.warnings), memory,
                         dict(self.options), _relower=self._relower,
                         _recompile=self._recompile)
            if symbolic - set(bound):  # sizes still free: by region, as a compile does
                from shardc.driver.regions import settle

                out = settle(out)
            return out.evaluate()
        return dataclasses.replace(self, bindings=merged, warnings=list(self.warnings),
                                   _cache={}, _q={}, _q_by_id={}, _env=None,
                                   _names=self._names,
                                   _functions=self._functions).evaluate()

    def parse(self, text: str) -> sp.Expr:
        """Parse a formula over this program's names (`N`, `S`, `E` stay sizes, not SymPy's):
        hardware names are the chip's symbols, any other name a size. The grammar is
        `grammar/expr.lark`; raises `shardc.driver.user_expr.ExprError`."""
        from shardc.driver.user_expr import formula

        return formula(text, self.symbol)

    def symbol(self, name: str) -> sp.Symbol:
        """The symbol a name stands for in this report: a hardware figure, else a size."""
        hw = {s.name: s for s in self.cost.symbols.all_for(set(DTYPE_NAMES))}
        return hw.get(name, size_symbol(name))

    def all_expressions(self, conditions: bool = True) -> list[sp.Expr]:
        """Every formula of the report (`conditions=False`: not the conditions' sides, which
        are derived on first use)."""
        out: list[sp.Expr] = []
        for c in self.ops:
            out.extend(getattr(c, f) for _, f in OP_FIELDS)
            out.extend((c.t_bandwidth, c.t_latency))
        out.extend(self.totals.values())
        for a in self.cost.arrays:
            out.extend((a.bytes_per_device, a.bytes_total, a.count))
        for cond in self.conditions if conditions else ():
            out.extend((cond.relation.lhs, cond.relation.rhs))
        if self.memory is not None:
            m = self.memory
            out.extend((m.parameters, m.gradients, m.optimizer, m.activations, m.total))
        for c in self.ops:
            out.extend(x for _, x in c.levels)
            out.append(c.count)
            if c.crossover_bytes is not None:
                out.append(c.crossover_bytes)
        for b in self.cost.blocks:
            out.append(b.count)
            out.extend(b.per_iteration.values())
            out.extend(b.total.values())
        return [as_expr(e) for e in out]

    def evaluate(self, conditions: bool = True) -> Report:
        """Compute every number of the report at once (one lambdify); `conditions=False`
        leaves the conditions to be derived when something reads them."""
        self._evaluate_all(self.all_expressions(conditions))
        return self

    def holds(self, rel) -> bool | None:
        lhs, rhs = self.value(rel.lhs), self.value(rel.rhs)
        if lhs is None or rhs is None:
            return None
        return bool(lhs > rhs) if isinstance(rel, sp.StrictGreaterThan) else bool(
            rel.subs({rel.lhs: lhs, rel.rhs: rhs}))

    def bound(self) -> str | None:
        vals = {k: self.value(self.totals[f]) for k, f in (
            ("compute", "t_math_s"), ("hbm", "t_hbm_s"), ("comms", "t_comms_s"))}
        if any(v is None for v in vals.values()):
            return None
        return max(vals, key=lambda k: (vals[k] or 0.0, k == "compute"))

    @property
    def calibrated(self) -> bool:
        """Whether the chip has a calibration (else T_expected is the roofline's T_lower)."""
        return self.chip is not None and self.chip.calibration is not None

    def step_durations(self, expected: bool = False) -> dict[int, float] | None:
        """Each op's time over the step (all its runs; twice for an op the backward pass
        recomputes under --remat), by op index; None unless every op has a number. Under
        `--remat none` the collectives run again (the AllGathers of sequence-parallel inputs
        kept sharded) are left to `busy_after`. `expected`: each op's calibrated expected time
        instead of its roofline time."""
        durations: dict[int, float] = {}
        hidden = self.busy_after()
        for c in self.ops:
            v = self.value((c.t_expected if expected else c.time) * c.count)
            if v is None:
                return None
            again = c.index in self.cost.recomputed and c.index not in hidden
            durations[c.index] = v * (2 if again else 1)
        return durations

    def busy_after(self) -> dict[int, float]:
        """Under `--remat none`, each collective the backward pass runs again (an AllGather of
        a sequence-parallel input kept sharded) and its time: the network carries it again but
        compute does not wait for it, as Megatron-LM overlaps it with the input-gradient
        matmul (Korthikanti et al. 2022, section 4.2.2). `passes.schedule.schedule` keeps the
        network busy that long after the op."""
        if self.options.get("remat") != "none":
            return {}
        out = {}
        for c in self.ops:
            if c.index in self.cost.recomputed and c.kind == "collective":
                out[c.index] = self.value(c.time * c.count) or 0.0
        return out

    def mesh_sizes(self) -> dict[str, float]:
        """The mesh axes whose size is a number (`--set` applied)."""
        return {n: float(v) for n, v in known_sizes(self.program.mesh, self.bindings).items()}

    def scheduled_step(self, expected: bool = False) -> float | None:
        """T_step of the list schedule (passes/schedule.py: prefetched gathers, async
        reductions, collective matmuls); None unless every op has a number. `expected`: the
        same schedule over each op's expected time, parameters' gathers prefetched whole
        rather than decomposed (the first one exposed)."""
        from shardc.passes.schedule import schedule

        durations = self.step_durations(expected)
        # the expected schedule: FSDP's weight gathers are prefetched whole, not decomposed
        # into a collective matmul, so the first is exposed (passes/schedule.py)
        return None if durations is None else schedule(self.program, durations,
                                                       axis_sizes=self.mesh_sizes(),
                                                       weights=not (expected and self.calibrated),
                                                       busy_after=self.busy_after())

    def exposed(self, expected: bool = False) -> dict[int, float] | None:
        """Each collective's exposed part in the scheduled step (`passes.schedule.exposed`):
        the seconds it runs while no compute does, by op index; None unless every op has a
        number. `expected`: in the schedule over each op's expected time."""
        from shardc.passes.schedule import exposed

        durations = self.step_durations(expected)
        return None if durations is None else exposed(self.program, durations,
                                                      axis_sizes=self.mesh_sizes(),
                                                      weights=not (expected and self.calibrated))

    def utilization(self, expected: bool = False) -> dict[str, float] | None:
        """MFU and HFU of the scheduled step on the report's chip, with the model FLOPs; None
        without a chip or a number for every op.

        MFU = model FLOPs / (devices x peak x T_step), the model FLOPs being every einsum
        counted once over the mesh (no recomputation, no replicated work, no elementwise ops:
        Chowdhery et al. 2022, "PaLM", appendix B); HFU = every FLOP a device runs /
        (peak x T_step). The peak is the chip's bf16 matrix rate. `expected`: over the
        expected schedule (`MFU (expected)`)."""
        if self.chip is None:
            return None
        step = self.scheduled_step(expected)
        devices = self.value(sp.Mul(*[size_symbol(n) for n, _ in self.program.mesh]))
        per_device = self.value(self.totals["flops_per_device"])
        model = [self.value(c.flops * c.count) for c in self.ops if c.kind == "einsum"]
        if not step or devices is None or per_device is None or None in model:
            return None
        peak = self.chip.flops_for("bf16")[0]
        total = float(sum(m for m in model if m is not None))
        return {"model_flops": total, "mfu": total / (devices * peak * step),
                "hfu": per_device / (peak * step)}

    def op_bound(self, c) -> str | None:
        if c.fused_into is not None:  # its bytes and time are its fused group's root's
            return f"fused into #{c.fused_into}"
        if c.kind == "collective":
            bw, lat = self.value(c.t_bandwidth), self.value(c.t_latency)
            if bw is None or lat is None:
                return None
            return "latency" if lat > bw else "bandwidth"
        m, h = self.value(c.t_math), self.value(c.t_hbm)
        if m is None or h is None or (m == 0 and h == 0):
            return None
        return "compute" if m >= h else "hbm"

    # ---- output ------------------------------------------------------------------------------
    def q(self, expr) -> dict[str, Any]:
        """A formula as JSON: `{"expr", "latex", "value"}`; one (shared) dict per distinct
        formula of this report."""
        seen = self._q_by_id.get(id(expr))
        if seen is not None and seen[0] is expr:
            return seen[1]
        hit = self._q.get(expr)
        if hit is None:
            e = as_expr(expr)
            hit = self._q[expr] = {"expr": text(e), "latex": latex(e), "value": self.value(e)}
        self._q_by_id[id(expr)] = (expr, hit)
        return hit

    def to_dict(self) -> dict[str, Any]:
        return report_dict(self)

    def topology_dict(self) -> list[dict[str, Any]]:
        return topology_dict(self)

    def to_json(self, indent: int | None = 2, regions: bool = False) -> str:
        """The report as `shardc.report/1` JSON (`regions` is the default now: kept as a
        spelling)."""
        return report_json(self, indent)

    def to_text(self, regions: bool = False, only: Iterable[str] | None = None) -> str:
        """The text report; `only`: the header and just these sections
        (`shardc.driver.document.SECTIONS`: summary, memory, ...). The totals by region are
        the default now (`regions` is kept as a spelling)."""
        return write(self, "text", only)

    def to_markdown(self, regions: bool = False) -> str:
        return write(self, "md")

    # ---- regions -------------------------------------------------------------------------
    def regions(self) -> tuple[Any, ...] | None:
        """The whole program in each region of its symbolic sizes (`passes.regions.Variant`s,
        largest share first; `shardc.driver.regions.find`); empty with one region, None past
        the limits."""
        if self._regions is False:
            from shardc.driver.regions import find

            self._regions = find(self)
        return self._regions

    def piecewise(self, name: str) -> sp.Expr:
        """A total as a `Piecewise` over the regions; the total itself with one region."""
        from shardc.driver.regions import piecewise

        return piecewise(self, name)

    def to_latex(self, regions: bool = False) -> str:
        """The LaTeX report, with the totals as cases over the regions."""
        return write(self, "latex")

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        return write(self, "html")

    def __repr__(self) -> str:
        from shardc.driver.notebook import short_repr

        return short_repr(self)

    def ops_frame(self) -> Any:
        """The ops as a pandas DataFrame (pandas is optional: ImportError without it)."""
        from shardc.driver.notebook import ops_frame

        return ops_frame(self)

    def arrays_frame(self) -> Any:
        """The arrays as a pandas DataFrame (pandas is optional: ImportError without it)."""
        from shardc.driver.notebook import arrays_frame

        return arrays_frame(self)

    def __str__(self) -> str:
        return self.to_text()


def _binding(name: str, value: Any) -> float:
    """A keyword of `value`/`at` as a float, through the checked conversions every number of a
    report goes through (`shardc.lang.numeric`): a hardware figure in a chip figure's range
    (`C=0` would divide by zero), except that a latency (`t_hop`, `t_dcn`, ...) may be 0, which
    only drops the latency terms; anything else a size's point, above 0 to 2**63 - 1.
    `TypeError` or `ValueError` naming the keyword."""
    from shardc.lang.numeric import NumberError, figure, positive, real
    from shardc.passes.validate import is_hardware_name

    try:
        if is_hardware_name(name):
            if name.startswith("t_") and real(value, name) == 0:
                return 0.0
            return figure(value, f"hardware figure {name!r}")
        return positive(value, name)
    except NumberError as exc:  # a ValueError already: raised as one, without the chain
        raise ValueError(str(exc)) from None


def _divided(e: sp.Expr, args: list[sp.Symbol], env: dict[sp.Symbol, float]) -> float | None:
    """One formula's value, None where it divides by zero."""
    try:
        return sp.lambdify(args, e, modules="math", printer=code_printer())(
            *[env[a] for a in args])
    except ZeroDivisionError:
        return None


def _finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def overflows(report: Report, diags: Diagnostics) -> bool:
    """K003: a quantity whose every symbol has a number but whose value is not a finite float
    (a size product past 1.8e308, say). Such a report is not printed: it would show inf or nan.
    Evaluating here costs nothing extra, since the printers reuse the report's cache."""
    from shardc.passes.symbols import as_expr

    try:
        report.evaluate(conditions=False)  # printers evaluate the conditions they print
    except (ArithmeticError, ValueError) as exc:  # math.pow and friends raise instead of inf
        diags.error("K003", f"a quantity of the report overflows a float ({exc})",
                    notes=(OVERFLOW_NOTE,))
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
            diags.error("K003", f"a quantity overflows a float: {shown}", notes=(OVERFLOW_NOTE,))
            return True
    return False


OVERFLOW_NOTE = ("sizes and hardware figures this large give costs past a float's range "
                 "(about 1.8e308); check the sizes bound with --set or declared with `dim`")
