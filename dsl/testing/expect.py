"""Checks `# expect:` lines (`shardc.lang.expect`) against a compiled program over its whole
domain of sizes: exactly, region by region (`Report.regions`), where SymPy can decide the
relation for every positive size; else on a Hypothesis sample, each point compiled as a compile
with those sizes bound would (`Report.at`), a failing point shrunk to a small one.

>>> import shardc
>>> from shardc.lang.source import Source, Span
>>> text = "mesh X=4\\ndim B, D\\nA: bf16[B_X, D]\\n# expect: comm_bytes == 0\\n"
>>> [o.passed for o in check_source(Source("p.shard", text)).outcomes]
[True]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sympy as sp

from shardc.driver import api
from shardc.driver.printers import SUMMARY
from shardc.driver.regions import free_sizes
from shardc.lang.diagnostics import CompileError, Diagnostics
from shardc.lang.expect import (
    BinOp,
    Call,
    Collective,
    Collectives,
    Expectation,
    ExpectError,
    Found,
    Name,
    Neg,
    Node,
    Num,
    Relation,
    find,
    parse,
)
from shardc.lang.source import Source, Span
from shardc.passes.symbols import as_expr

if TYPE_CHECKING:
    from shardc.driver.report import Report

LABELS = {label: key for label, key, _ in SUMMARY if label.isidentifier()}
"""The text report's labels that are names (`T_comms`, `FLOPs`), by the total they show."""
FUNCTIONS: dict[str, Callable[..., sp.Expr]] = {"Max": sp.Max, "Min": sp.Min, "sqrt": sp.sqrt,
                                                 "abs": sp.Abs}
EXAMPLES = 100
"""Points a sampled expectation is tried at (fewer where a mesh axis is symbolic: each of
those points is a whole compile)."""
DIM_RANGE = (1, 2**40)
AXIS_RANGE = (1, 1024)
"""Where the sample draws a symbolic dim and a symbolic mesh axis (a `where` narrows them)."""
MAX_EXPECTATIONS = 1_000
"""`# expect:` lines checked in one file (each may sample a hundred points)."""
TOLERANCE = 1e-9
"""Relative: `==` and the non-strict comparisons forgive float rounding this small."""


class NoValue(Exception):
    """A quantity without a number at a point: a chip figure with no chip."""


@dataclass(frozen=True)
class Outcome:
    """One expectation's verdict: `how` it was decided, and on failure a readable `message`
    (the point and both sides' values)."""

    expectation: Expectation
    passed: bool
    how: str
    message: str = ""

    @property
    def where(self) -> str:
        return f"{self.expectation.found.source.name}:{self.expectation.line}"


@dataclass
class FileCheck:
    """A program's expectations checked: `outcomes` in order, `diagnostics` for the lines that
    are not expectations (E001, E002) and for a program that does not compile; `failed` lists
    the lines of both kinds that failed."""

    source: Source
    found: list[Found] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    diagnostics: Diagnostics = field(default_factory=Diagnostics)

    @property
    def ok(self) -> bool:
        return not self.diagnostics.has_errors and all(o.passed for o in self.outcomes)


# ---- names ---------------------------------------------------------------------------------
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "**": 4}


def _node_text(node: Node) -> str:
    """An operand as the user would write it, parenthesized only where needed."""
    match node:
        case Num(text):
            return text
        case Name(name):
            return name
        case Neg(operand):
            return f"-{_child(operand, 3, strict=False)}"
        case BinOp(op, left, right):
            p = _PRECEDENCE[op]
            a = _child(left, p, strict=op == "**")
            b = _child(right, p, strict=op in ("-", "/"))
            return f"{a} {op} {b}" if p == 1 else f"{a}{op}{b}"
        case Call(func, args):
            return f"{func}({', '.join(_node_text(a) for a in args)})"
    raise TypeError(node)


def _child(node: Node, outer: int, strict: bool) -> str:
    inner = (_PRECEDENCE[node.op] if isinstance(node, BinOp) else 3 if isinstance(node, Neg)
             else 5)
    text = _node_text(node)
    return f"({text})" if inner < outer or (strict and inner == outer) else text


def known_names(report: Report) -> str:
    """What an expectation may name, for a message: the totals, the text report's labels and
    the sizes (and the chip's figures, not listed)."""
    sizes = [n for n, _ in (*report.program.dims, *report.program.mesh)]
    labels = [k for k, v in LABELS.items() if v in report.totals]
    return (f"totals: {', '.join(report.totals)}; labels: {', '.join(labels)}; sizes: "
            f"{', '.join(sizes)}; and the chip's figures (C, W_hbm, W_ici, ...)")


def to_sympy(node: Node, report: Report) -> sp.Expr:
    """An expectation's operand over `report`: a total's name (or its text label) stands for
    its formula, any other name for the size or chip figure it names. `ExpectError` (E002)
    for an unknown name, and for what is not a real quantity (`1/0`, `sqrt(-1)`)."""
    try:
        out = _to_sympy(node, report)
    except (TypeError, ValueError, ArithmeticError) as exc:
        if isinstance(exc, ExpectError):
            raise
        raise ExpectError(f"{_node_text(node)} is not a quantity SymPy can build: {exc}",
                          node.span) from None
    if out.has(sp.zoo, sp.nan, sp.oo, -sp.oo, sp.I):
        raise ExpectError(f"{_node_text(node)} is not a finite real quantity ({out})",
                          node.span)
    return out


def _to_sympy(node: Node, report: Report) -> sp.Expr:
    match node:
        case Num(_, value):
            return sp.Integer(int(value)) if value == value.to_integral_value() else (
                sp.Rational(str(value)))
        case Name(name):
            key = name if name in report.totals else LABELS.get(name)
            if key is not None and key in report.totals:
                return as_expr(report.totals[key])
            names = report.names()
            if name in names:
                return names[name]
            raise ExpectError(f"unknown quantity {name!r}; {known_names(report)}", node.span,
                              "not a total, label, size or chip figure of this program")
        case Neg(operand):
            return -to_sympy(operand, report)
        case BinOp(op, left, right):
            a, b = to_sympy(left, report), to_sympy(right, report)
            if op == "+":
                return a + b
            if op == "-":
                return a - b
            if op == "*":
                return a * b
            if op == "/":
                if b.is_zero:
                    raise ExpectError("division by zero", node.span)
                return a / b
            if not (b.is_Integer and abs(int(b)) <= 16):
                raise ExpectError("'**' takes a whole number up to 16 as its exponent",
                                  node.span)
            if a.is_zero and b.is_negative:
                raise ExpectError("division by zero (0 to a negative power)", node.span)
            return a ** b
        case Call(func, args):
            if func not in FUNCTIONS:
                raise ExpectError(f"unknown function {func!r}; an expectation may call "
                                  + ", ".join(FUNCTIONS), node.span)
            values = [to_sympy(a, report) for a in args]
            if func != "Max" and func != "Min" and len(values) != 1:
                raise ExpectError(f"{func} takes 1 argument, got {len(values)}", node.span)
            return FUNCTIONS[func](*values)
    raise TypeError(node)


def axes_of(c: Collective, mesh: Sequence[str]) -> tuple[str, ...]:
    """A collective's subscript as mesh axes: `_{X,Y}`, `_XY` (single-letter axes), `_data`."""
    out: list[str] = []
    for entry in c.subscript:
        if entry in mesh:
            out.append(entry)
        elif all(ch in mesh for ch in entry):
            out.extend(entry)
        else:
            raise ExpectError(f"{entry!r} in {c.text} is not a mesh axis of this program "
                              f"(mesh axes: {', '.join(mesh)})", c.span,
                              "a collective in an expectation names its mesh axes only")
    return tuple(out)


def resolve(report: Report, e: Expectation) -> None:
    """Raise `ExpectError` (E002) for a name the program does not have."""
    if isinstance(e.claim, Collectives):
        for c in e.claim.items:
            axes_of(c, report.program.mesh_axes)
    else:
        for n in e.claim.operands:
            to_sympy(n, report)
    for w in e.where:
        for n in w.operands:
            to_sympy(n, report)


# ---- one point -----------------------------------------------------------------------------
def _compare(op: str, a: float, b: float) -> bool:
    close = math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=0.0)
    return {"==": close, "!=": not close, "<": a < b and not close, ">": a > b and not close,
            "<=": a <= b or close, ">=": a >= b or close}[op]


def _number(report: Report, expr: sp.Expr, text: str, point: str,
            bindings: Mapping[str, int]) -> float:
    import warnings

    import numpy as np

    try:
        # past a float's range numpy warns and gives inf, which `value` turns into None
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            v = report.value(expr, **bindings) if bindings else report.value(expr)
    except (ArithmeticError, TypeError) as exc:  # OverflowError: past a float's range
        raise NoValue(f"{text} has no number {point}: {exc}") from None
    if v is None and expr.free_symbols <= report.environment().keys() | {
            report.names()[n] for n in bindings}:
        raise NoValue(f"{text} has no number {point}: it overflows a float (or divides by 0)")
    if v is None:
        env = report.environment()
        missing = sorted(s.name for s in expr.free_symbols if s not in env)
        why = (" (the program names no chip: add a `hardware` line, or pass --hw)"
               if report.chip is None else "")
        raise NoValue(f"{text} has no number {point}: "
                      f"{', '.join(missing) or 'a term'} has no value{why}")
    return v


def _relation_fails(report: Report, rel: Relation, point: str,
                    bindings: Mapping[str, int]) -> str | None:
    """Why `rel` fails in `report` (its values, with `bindings`), or None where it holds."""
    values = [(_node_text(n), to_sympy(n, report)) for n in rel.operands]
    numbers = [_number(report, x, t, point, bindings) for t, x in values]
    for i, op in enumerate(rel.ops):
        if not _compare(op, numbers[i], numbers[i + 1]):
            lines = []
            for (t, x), v in ((values[i], numbers[i]), (values[i + 1], numbers[i + 1])):
                shown = str(x)
                lines.append(f"    {t} = {v:.6g}" if shown in (t, f"{v:g}") or len(shown) > 200
                             else f"    {t} = {shown} = {v:.6g}")
            return (f"  {values[i][0]} {op} {values[i + 1][0]} is false:\n"
                    + "\n".join(lines))
    return None


def _holds(report: Report, rel: Relation, bindings: Mapping[str, int]) -> bool:
    try:
        return _relation_fails(report, rel, "", bindings) is None
    except NoValue:
        return False


def collectives_of(report: Report, line: int | None) -> list[tuple[str, tuple[str, ...], str]]:
    """The collectives a program (or its statement on `line`) runs, in order."""
    return [(c.op, tuple(c.axes), c.array) for c in report.ops
            if c.kind == "collective" and (line is None or c.line == line)]


def _listed(items: Sequence[tuple[str, tuple[str, ...], str]]) -> str:
    return "[" + ", ".join(f"{op}_{''.join(axes) if all(len(a) == 1 for a in axes) else '{' + ','.join(axes) + '}'}({arr})"
                           for op, axes, arr in items) + "]"


def _collectives_fail(report: Report, e: Expectation, claim: Collectives) -> str | None:
    line = e.line if e.found.statement else None
    have = collectives_of(report, line)
    mesh = report.program.mesh_axes
    want = [(c.op, axes_of(c, mesh), c.operand) for c in claim.items]
    scope = f"line {line}'s collectives" if line is not None else "collectives"
    if claim.op == "==" and have != want:
        return f"  {scope} are {_listed(have)}, expected {_listed(want)}"
    if claim.op == "!=" and have == want:
        return f"  {scope} are {_listed(have)}"
    if claim.op == "in" and want[0] not in have:
        return f"  {claim.items[0].text} is not among {scope} {_listed(have)}"
    if claim.op == "not in" and want[0] in have:
        return f"  {claim.items[0].text} is among {scope} {_listed(have)}"
    return None


def where_holds(report: Report, e: Expectation, bindings: Mapping[str, int] | None = None
                ) -> bool:
    """Whether the expectation's `where` conditions hold in `report` (with `bindings`)."""
    return all(_holds(report, w, bindings or {}) for w in e.where)


def fails_at(report: Report, e: Expectation, point: str = "",
             bindings: Mapping[str, int] | None = None) -> str | None:
    """Why `e` fails in `report` (a report at one point, or with `bindings` the sizes it
    leaves symbolic), None where it holds or its `where` does not."""
    bindings = bindings or {}
    if not where_holds(report, e, bindings):
        return None
    if isinstance(e.claim, Collectives):
        return _collectives_fail(report, e, e.claim)
    return _relation_fails(report, e.claim, point, bindings)


# ---- exactly, region by region ---------------------------------------------------------------
def _decided(op: str, a: sp.Expr, b: sp.Expr) -> bool | None:
    """Whether `a op b` holds for every positive value of its symbols (None: undecided)."""
    d = a - b
    try:
        zero = sp.expand(d) == 0 or sp.cancel(d) == 0
    except (TypeError, ValueError, sp.PolynomialError):
        zero = False
    if op == "==":
        return True if zero else None
    if op == "!=":
        return None if zero else (True if d.is_zero is False else None)
    if zero:
        return op in ("<=", ">=")
    sign = {">": d.is_positive, ">=": d.is_nonnegative, "<": d.is_negative,
            "<=": d.is_nonpositive}[op]
    return True if sign else None


def _enclosure(expr: sp.Expr, box: Mapping[sp.Symbol, tuple[Any, Any]]
               ) -> tuple[Any, Any] | None:
    """Bounds on `expr` over the box of sizes (interval arithmetic: `AccumBounds`, which
    encloses the true range); None where SymPy cannot bound it (floor, Max of intervals)."""
    from sympy.calculus.accumulationbounds import AccumBounds

    try:
        v = expr.xreplace({s: AccumBounds(sp.Integer(lo), sp.oo if hi == math.inf
                                          else sp.Integer(hi))
                           for s, (lo, hi) in box.items() if s in expr.free_symbols})
        if isinstance(v, AccumBounds):
            return v.min, v.max
        if v.is_number and v.is_extended_real:
            return v, v
    except (TypeError, ValueError, ArithmeticError, AttributeError):
        return None
    return None


def _inside(op: str, d: sp.Expr, box: Mapping[sp.Symbol, tuple[Any, Any]]) -> bool:
    """Whether `d op 0` holds over the whole box, by its enclosure."""
    bounds = _enclosure(d, box) if box else None
    if bounds is None:
        return False
    lo, hi = bounds
    try:
        return bool({"<": hi < 0, "<=": hi <= 0, ">": lo > 0, ">=": lo >= 0,
                     "!=": lo > 0 or hi < 0}.get(op, False))
    except TypeError:  # a comparison SymPy leaves undecided
        return False


def _numbers(report: Report) -> dict[sp.Symbol, sp.Expr]:
    return {s: sp.Rational(v) for s, v in report.environment().items()}


def _excluded(report: Report, bounds: Sequence[sp.Basic],
              box: Mapping[sp.Symbol, tuple[Any, Any]]) -> bool:
    """Whether a region lies outside the box of the `where` bounds: one of its bounds is
    false at every point of the box."""
    env = _numbers(report)
    flip = {sp.StrictLessThan: ">=", sp.LessThan: ">", sp.StrictGreaterThan: "<=",
            sp.GreaterThan: "<"}
    for b in bounds:
        op = flip.get(type(b))
        if op is not None and _inside(op, (b.lhs - b.rhs).xreplace(env), box):
            return True
    return False


def _proven(report: Report, e: Expectation,
            box: Mapping[sp.Symbol, tuple[Any, Any]] | None = None) -> bool:
    """Whether `e` holds at every size of `report` (one region), by SymPy: for every positive
    value of the sizes, or over the `box` of them the `where` bounds give (interval
    arithmetic). The numbers the report has (chip figures, bound sizes) are put in first."""
    if isinstance(e.claim, Collectives):
        return _collectives_fail(report, e, e.claim) is None
    env = _numbers(report)
    exprs = [to_sympy(n, report).xreplace(env) for n in e.claim.operands]
    return all(_decided(op, exprs[i], exprs[i + 1])
               or _inside(op, exprs[i] - exprs[i + 1], box or {})
               for i, op in enumerate(e.claim.ops))


def _regions(report: Report) -> list[tuple[Report, tuple[sp.Basic, ...]]] | None:
    """The reports of the regions with the bounds that hold there (one report, no bounds,
    where plans hold at every size), None where there are too many to list."""
    regions = report.regions()
    if regions is None:
        return None
    return [(v.result, tuple(v.bounds)) for v in regions] if regions else [(report, ())]


def _bound_holds(report: Report, bound: sp.Basic, point: Mapping[str, int]) -> bool:
    """Whether a region's bound (`D*F < 0.33*B*D + 2*B*F`) holds at `point`."""
    a = report.value(bound.lhs, **point)
    b = report.value(bound.rhs, **point)
    if a is None or b is None:
        raise ValueError("no number")
    return bool({sp.StrictLessThan: a < b, sp.StrictGreaterThan: a > b, sp.LessThan: a <= b,
                 sp.GreaterThan: a >= b}.get(type(bound), False))


# ---- the sample ----------------------------------------------------------------------------
def _bounds(e: Expectation, names: Sequence[str], mesh: Sequence[str], whole: bool = False
            ) -> dict[str, list[Any]]:
    """Each free size's range: the sample's defaults (`whole`: 1 to infinity), narrowed by
    `where` terms `B >= 4096`."""
    out: dict[str, list[Any]] = {n: [1, math.inf] if whole else list(
        AXIS_RANGE if n in mesh else DIM_RANGE) for n in names}
    for w in e.where:
        for i, op in enumerate(w.ops):
            a, b = w.operands[i], w.operands[i + 1]
            if isinstance(a, Num) and isinstance(b, Name):
                a, b = b, a
                op = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
            if not (isinstance(a, Name) and isinstance(b, Num) and a.name in out):
                continue
            v = float(b.value)
            lo, hi = out[a.name]
            if op in (">", ">="):
                lo = max(lo, math.floor(v) + 1 if op == ">" or v != int(v) else int(v))
            elif op in ("<", "<="):
                hi = min(hi, math.ceil(v) - 1 if op == "<" or v != int(v) else int(v))
            elif op == "==" and v == int(v):
                lo, hi = int(v), int(v)
            out[a.name] = [lo, max(lo, hi)]
    return out


def _points(bounds: Mapping[str, Sequence[int]], axes: Sequence[str],
            shardings: Mapping[str, set[tuple[str, ...]]], known: Mapping[str, float]
            ) -> Any:
    """Points of the free sizes that a compile accepts: mesh axes first, then each dim a
    multiple of every product of the axes that shard it (S004: shards of equal size)."""
    from hypothesis import strategies as st

    @st.composite
    def draw(draw: Any) -> dict[str, int]:
        sizes: dict[str, float] = dict(known)
        point: dict[str, int] = {}
        for n in axes:
            lo, hi = bounds[n]
            point[n] = sizes[n] = draw(st.integers(lo, hi))
        for n, (lo, hi) in bounds.items():
            if n in point:
                continue
            step = 1
            for group in shardings.get(n, ()):
                step = math.lcm(step, math.prod(int(sizes.get(a, 1)) for a in group))
            first, last = -(-lo // step), hi // step
            point[n] = step * draw(st.integers(first, max(first, last)))
        return {n: point[n] for n in bounds}

    return draw()


def _point_text(point: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items())


class Checker:
    """Checks expectations against one compiled program; the reports at the points sampled are
    kept, for the next expectation of the same program draws the same points."""

    def __init__(self, report: Report, examples: int = EXAMPLES) -> None:
        self.report = report
        self.examples = examples
        self._at: dict[tuple[tuple[str, int], ...], Report | None] = {}
        self._regions: Any = False
        self.met = 0
        """Points of the last search where the `where` conditions held."""
        self._shardings: dict[str, set[tuple[str, ...]]] | None = None

    def at(self, point: Mapping[str, int]) -> Report | None:
        """The report a compile with `point` bound gives; None where there is none (a size the
        program refuses)."""
        key = tuple(point.items())
        if key not in self._at:
            try:
                self._at[key] = self.report.at(**point)
            except (ValueError, CompileError):
                self._at[key] = None
        return self._at[key]

    def shardings(self) -> dict[str, set[tuple[str, ...]]]:
        """The mesh axes that shard each dim, in each layout the program gives it."""
        if self._shardings is None:
            from shardc.passes.ir import Einsum

            out: dict[str, set[tuple[str, ...]]] = {}
            for op in self.report.program.ops:
                values = [op.out, *((op.lhs, op.rhs) if isinstance(op, Einsum) else ())]
                for v in values:
                    for d in v.layout.dims:
                        if d.axes:
                            out.setdefault(d.dim, set()).add(tuple(d.axes))
            self._shardings = out
        return self._shardings

    def region(self, point: Mapping[str, int]) -> Report | None:
        """The report of the region `point` lies in (`Report.regions`; the report itself where
        one plan holds everywhere), whose formulas give its numbers with `point` bound: what
        the sample tries first, each counterexample then checked by a compile there (`at`).
        None where the regions are too many to list."""
        if self._regions is False:
            self._regions = _regions(self.report)
        regions = self._regions
        if regions is None:
            return None
        if len(regions) == 1:
            return regions[0][0]
        for report, bounds in regions:
            try:
                if all(_bound_holds(report, b, point) for b in bounds):
                    return report
            except (ValueError, KeyError, TypeError):
                return None
        return regions[-1][0]

    def sample(self, e: Expectation, names: list[str]) -> tuple[dict[str, int], str] | None:
        """A counterexample point, shrunk by Hypothesis, with why it fails; None if none. The
        search evaluates the regions' formulas; a compile at the point found (`at`) confirms
        it, and where it does not, the search runs again on compiles."""
        found = self._search(e, names, compiled=False)
        if found is not None and self.region(found[0]) is not None:
            at = self.at(found[0])
            reason = None if at is None else fails_at(at, e, f"at {_point_text(found[0])}")
            if reason is None:
                found = self._search(e, names, compiled=True)
            else:
                found = (found[0], reason)
        return found

    def _search(self, e: Expectation, names: list[str], compiled: bool
                ) -> tuple[dict[str, int], str] | None:
        from hypothesis import HealthCheck, find, settings
        from hypothesis.errors import NoSuchExample

        mesh = self.report.program.mesh_axes
        bounds = _bounds(e, names, mesh)
        points = _points(bounds, [n for n in names if n in mesh], self.shardings(),
                         self.report.mesh_sizes())
        why: dict[tuple[tuple[str, int], ...], str] = {}

        def failing(point: dict[str, int]) -> bool:
            text = f"at {_point_text(point)}"
            region = None if compiled else self.region(point)
            try:
                if region is not None:
                    if not where_holds(region, e, point):
                        return False
                    self.met += 1
                    reason = fails_at(region, e, text, point)
                else:
                    at = self.at(point)
                    if at is None or not where_holds(at, e):
                        return False
                    self.met += 1
                    reason = fails_at(at, e, text)
            except ValueError:
                return False  # a size the program refuses (a mesh too large): not in the domain
            if reason is not None:
                why[tuple(point.items())] = reason
            return reason is not None

        examples = self.examples
        if compiled and any(n in mesh for n in names):
            examples = max(10, examples // 4)
        try:
            found = find(points, failing, settings=settings(
                max_examples=examples, database=None, derandomize=True, deadline=None,
                suppress_health_check=list(HealthCheck)))
        except NoSuchExample:
            return None
        return found, why.get(tuple(found.items()), "")

    def check(self, e: Expectation) -> Outcome:
        """Decide `e` over the program's whole domain. Raises `ExpectError` (E002) for a name
        the program does not have."""
        report = self.report
        resolve(report, e)
        names = free_sizes(report)
        try:
            if not names:
                if not where_holds(report, e):
                    return Outcome(e, False, "vacuous", "the `where` conditions do not hold at "
                                   "the program's sizes (none is symbolic): the expectation "
                                   "checks nothing")
                reason = fails_at(report, e, "at the program's sizes")
                if reason is None:
                    return Outcome(e, True, "at the program's sizes (none is symbolic)")
                return Outcome(e, False, "at the program's sizes",
                               f"at the program's own sizes (none is symbolic)\n{reason}")
            regions = _regions(report)
            if regions is not None:
                box = {report.names()[n]: (lo, hi) for n, (lo, hi) in _bounds(
                    e, names, report.program.mesh_axes, whole=True).items()}
                live = [r for r, bounds in regions if not _excluded(r, bounds, box)]
                if live and all(_proven(r, e, box) for r in live):
                    sizes = ", ".join(names)
                    if e.where:
                        of = f" ({len(live)} of {len(regions)} regions)" if len(
                            regions) > 1 else ""
                        how = f"exactly, for every {sizes} the `where` bounds allow{of}"
                    else:
                        how = f"exactly, for every {sizes}" + (
                            f", in each of its {len(regions)} regions" if len(regions) > 1
                            else "")
                    return Outcome(e, True, how)
            self.met = 0
            found = self.sample(e, names)
        except NoValue as exc:
            return Outcome(e, False, "no number", str(exc))
        if found is None and not self.met:
            return Outcome(e, False, "vacuous", f"no point of the {self.examples} tried meets "
                           "the `where` conditions: the expectation checks nothing")
        if found is None:
            return Outcome(e, True, f"on {self.examples} sampled points of {', '.join(names)}; "
                           "not proven for every size")
        point, reason = found
        return Outcome(e, False, "counterexample",
                       f"at {_point_text(point)} (a counterexample Hypothesis found and "
                       f"shrank)\n{reason}")


def check(report: Report, e: Expectation, examples: int = EXAMPLES) -> Outcome:
    """Decide `e` over the program's whole domain (`Checker.check`)."""
    return Checker(report, examples).check(e)


def check_source(source: Source, hw: str | None = None, examples: int = EXAMPLES,
                 compile_options: Mapping[str, Any] | None = None) -> FileCheck:
    """Compile a program and check each of its expectations (`FileCheck`)."""
    out = FileCheck(source, find(source))
    if len(out.found) > MAX_EXPECTATIONS:
        extra = out.found[MAX_EXPECTATIONS]
        out.diagnostics.error("E003", f"more than {MAX_EXPECTATIONS} expectations in one file "
                              f"({len(out.found)}); those from line {extra.line} on are not "
                              "checked", Span.point(extra.line, extra.col))
        out.found = out.found[:MAX_EXPECTATIONS]
    parsed = [parse(f, out.diagnostics) for f in out.found]
    try:
        report = api.compile(source, hw=hw, **dict(compile_options or {}))
    except CompileError as exc:
        out.diagnostics.items.extend(exc.diagnostics)
        return out
    checker = Checker(report, examples)
    for e in parsed:
        if e is None:
            continue
        try:
            out.outcomes.append(checker.check(e))
        except ExpectError as exc:
            out.diagnostics.error("E002", exc.message, exc.span, exc.label)
    return out


def render_failure(o: Outcome) -> str:
    """`file:line: expectation failed: TEXT`, then why, the point and both sides' values."""
    return f"{o.where}: expectation failed: {o.expectation.text}\n  {o.message}"


__all__ = ["EXAMPLES", "Checker", "FileCheck", "LABELS", "NoValue", "Outcome", "check",
           "check_source", "where_holds",
           "collectives_of", "fails_at", "known_names", "render_failure", "resolve", "to_sympy"]
