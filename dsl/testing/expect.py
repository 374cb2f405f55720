"""Checks `# expect:` lines (`shardc.lang.expect`) against a compiled program over its whole
domain of sizes: exactly, region by region (`Report.regions`), where SymPy can decide the
relation for every positive size; else on a Hypothesis sample, each point compiled as a compile
with those sizes bound would (`Report.at`), a failing point shrunk to a small one.

>>> import shardc
>>> from shardc.lang.source import Source
>>> text = "mesh X=4\\ndim B, D\\nA: bf16[B_X, D]\\n# expect: comm_bytes == 0\\n"
>>> [o.passed for o in check_source(Source("p.shard", text)).outcomes]
[True]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shardc.driver import api
from shardc.driver.region_totals import free_sizes
from shardc.lang.diagnostics import CompileError, Diagnostics
from shardc.lang.expect import (
    Expectation,
    ExpectError,
    Found,
    find,
    parse,
)
from shardc.lang.source import Source, Span
from shardc.testing.expect_proofs import (
    bound_holds,
    excluded,
    proven,
    regions_of,
    where_bounds,
)
from shardc.testing.expect_terms import (
    NoValue,
    fails_at,
    resolve,
    where_holds,
)

if TYPE_CHECKING:
    from shardc.driver.report import Report

EXAMPLES = 100
"""Points a sampled expectation is tried at (fewer where a mesh axis is symbolic: each of
those points is a whole compile)."""
MAX_EXPECTATIONS = 1_000
"""`# expect:` lines checked in one file (each may sample a hundred points)."""


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


def _points(
    bounds: Mapping[str, Sequence[int]],
    axes: Sequence[str],
    shardings: Mapping[str, set[tuple[str, ...]]],
    known: Mapping[str, float],
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
            self._regions = regions_of(self.report)
        regions = self._regions
        if regions is None:
            return None
        if len(regions) == 1:
            return regions[0][0]
        for report, bounds in regions:
            try:
                if all(bound_holds(report, b, point) for b in bounds):
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

    def _search(
        self, e: Expectation, names: list[str], compiled: bool
    ) -> tuple[dict[str, int], str] | None:
        from hypothesis import HealthCheck, find, settings
        from hypothesis.errors import NoSuchExample

        mesh = self.report.program.mesh_axes
        bounds = where_bounds(e, names, mesh)
        points = _points(
            bounds, [n for n in names if n in mesh], self.shardings(), self.report.mesh_sizes()
        )
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
            found = find(
                points,
                failing,
                settings=settings(
                    max_examples=examples,
                    database=None,
                    derandomize=True,
                    deadline=None,
                    suppress_health_check=list(HealthCheck),
                ),
            )
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
                    return Outcome(
                        e,
                        False,
                        "vacuous",
                        "the `where` conditions do not hold at "
                        "the program's sizes (none is symbolic): the expectation "
                        "checks nothing",
                    )
                reason = fails_at(report, e, "at the program's sizes")
                if reason is None:
                    return Outcome(e, True, "at the program's sizes (none is symbolic)")
                return Outcome(
                    e,
                    False,
                    "at the program's sizes",
                    f"at the program's own sizes (none is symbolic)\n{reason}",
                )
            regions = regions_of(report)
            if regions is not None:
                box = {
                    report.names()[n]: (lo, hi)
                    for n, (lo, hi) in where_bounds(
                        e, names, report.program.mesh_axes, whole=True
                    ).items()
                }
                live = [r for r, bounds in regions if not excluded(r, bounds, box)]
                if live and all(proven(r, e, box) for r in live):
                    sizes = ", ".join(names)
                    if e.where:
                        of = f" ({len(live)} of {len(regions)} regions)" if len(regions) > 1 else ""
                        how = f"exactly, for every {sizes} the `where` bounds allow{of}"
                    else:
                        how = f"exactly, for every {sizes}" + (
                            f", in each of its {len(regions)} regions" if len(regions) > 1 else ""
                        )
                    return Outcome(e, True, how)
            self.met = 0
            found = self.sample(e, names)
        except NoValue as exc:
            return Outcome(e, False, "no number", str(exc))
        if found is None and not self.met:
            return Outcome(
                e,
                False,
                "vacuous",
                f"no point of the {self.examples} tried meets "
                "the `where` conditions: the expectation checks nothing",
            )
        if found is None:
            return Outcome(
                e,
                True,
                f"on {self.examples} sampled points of {', '.join(names)}; "
                "not proven for every size",
            )
        point, reason = found
        return Outcome(
            e,
            False,
            "counterexample",
            f"at {_point_text(point)} (a counterexample Hypothesis found and shrank)\n{reason}",
        )


def check(report: Report, e: Expectation, examples: int = EXAMPLES) -> Outcome:
    """Decide `e` over the program's whole domain (`Checker.check`)."""
    return Checker(report, examples).check(e)


def check_source(
    source: Source,
    hw: str | None = None,
    examples: int = EXAMPLES,
    compile_options: Mapping[str, Any] | None = None,
) -> FileCheck:
    """Compile a program and check each of its expectations (`FileCheck`)."""
    out = FileCheck(source, find(source))
    if len(out.found) > MAX_EXPECTATIONS:
        extra = out.found[MAX_EXPECTATIONS]
        out.diagnostics.error(
            "E003",
            f"more than {MAX_EXPECTATIONS} expectations in one file "
            f"({len(out.found)}); those from line {extra.line} on are not "
            "checked",
            Span.point(extra.line, extra.col),
        )
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


__all__ = [
    "EXAMPLES",
    "MAX_EXPECTATIONS",
    "Checker",
    "FileCheck",
    "Outcome",
    "check",
    "check_source",
    "render_failure",
]
