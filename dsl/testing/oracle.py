"""The optimality oracle: plans a program's author could write by hand, each compiled, against
the compiler's own plan under the same cost model and objective.

The public checker is `cheaper_plans(source, ...)`: given a program (its text, a path, or a
compiled `Report` of a file), it rewrites one statement at a time into hand-written plans the
language expresses, compiles each, and returns the `Finding`s (hand program, its cost, ours)
that cost strictly less than the compiler's plan of the unchanged program. An empty list means
the compiler was not beaten by any plan tried. `hand_plans(source)` yields the rewrites
themselves; `objective(report)` is the number compared.

What a hand plan of a statement `T[out] = expr` may do (`hand_plans`), for a statement whose
target's layout is written (so later statements read T as before):
- bring each operand that names an array to a layout of its own choosing first: a reshard
  statement `A1[I_XY, J] = A` (slices onto any axes, in any order; the reshard's own plan, a
  permute included), or that reshard followed by one explicit collective: `AllGather` of the
  innermost axes of one or several dims at once (multi-axis: `AllGather_XY`), `AllToAll` of a
  dim's innermost run to another dim, and on an operand holding partial sums `AllReduce` or
  `ReduceScatter` over any subset of them;
- compute the result in any layout, partial sums `{U_X}` included (left unreduced where the
  statement sums), then bring it to `out` by a reshard statement or by one explicit
  collective (`AllReduce`, `ReduceScatter`, `AllGather`, `AllToAll` over any subset of axes).
Every kind of statement is rewritten alike: contractions, elementwise ops and calls,
reductions (`Sum_{K}`) and reshards (`B[...] = A`). Statements whose expression is an explicit
collective are the author's plan already and are left alone.

The number compared is the whole program's objective where the compiler chose its plans for
it (`--objective`: a training step's scheduled step, a forward program's `T_lower`, by
default; `driver.objective`): each hand program is compiled under the same objective and its
value compared with ours. Under `--objective statement` it is the objective (`objective`) the
planner minimizes for a statement: under the
`exact` model the sum of the ops' times as the report's ops table gives them (a collective's
time; a local op's roofline time, the larger of its math at the chip's peak and its HBM
traffic), under the `book` model `T_comms + T_math` (the book's answers rank strategies by
those). In a program of several statements the rewritten statement's share is then
compared: the ops of its line in the compiler's report against the ops of the lines it became
in the hand plan (a hand plan that makes a later statement cheaper by caching a layout is a
whole-program choice, which `--objective statement` does not make). A program whose sizes
are not all numbers has no objective value and is not checked.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shardc.driver import api
from shardc.lang.diagnostics import CompileError, Diagnostics
from shardc.lang.layout import DimSharding, Layout
from shardc.lang.parser import parse
from shardc.lang.source import Source
from shardc.lang.syntax import (
    ArrayDecl,
    Assign,
    Binary,
    Call,
    CollectiveCall,
    Contract,
    DimDecl,
    Expr,
    MeshDecl,
    Reduce,
    Ref,
)
from shardc.passes.reshard_rules import Refusal, transfer

# ---- layouts ------------------------------------------------------------------------------


def layouts(dims: Sequence[str], axes: Sequence[str]) -> Iterator[dict[str, tuple[str, ...]]]:
    """Every layout of `dims` over `axes`: each axis on one dim or none, in each order.

    >>> len(list(layouts(("I", "J"), ("X",))))
    3
    """
    for where in itertools.product((*dims, None), repeat=len(axes)):
        per = {d: [a for a, w in zip(axes, where, strict=True) if w == d] for d in dims}
        for orders in itertools.product(*[itertools.permutations(per[d]) for d in dims]):
            yield dict(zip(dims, orders, strict=True))


def text_of(name: str, layout: dict[str, tuple[str, ...]]) -> str:
    return (
        name + "[" + ", ".join(d + ("_" + "".join(a) if a else "") for d, a in layout.items()) + "]"
    )


def _layout(spec: Mapping[str, tuple[str, ...]], unreduced: Iterable[str] = ()) -> Layout:
    return Layout(tuple(DimSharding(d, tuple(a)) for d, a in spec.items()), frozenset(unreduced))


def _fmt(name: str, lay: Layout) -> str:
    return lay.format(name)


def _coll_text(kind: str, axes: tuple[str, ...], dim: str | None, arg: str) -> str:
    sub = "".join(axes)
    if kind in ("AllGather", "AllReduce"):
        return f"{kind}_{sub}({arg})"
    return f"{kind}_{{{sub},{dim}}}({arg})"


def collectives_from(lay: Layout) -> Iterator[tuple[str, tuple[str, ...], str | None, Layout]]:
    """Every single collective the language can apply to an array in `lay`, with the layout
    it leaves: AllGather of the innermost axes of any dims (several at once), AllToAll of a
    dim's innermost run to another dim, AllReduce and ReduceScatter of any subset of its
    partial sums (onto any dim).

    >>> lay = Layout.of({"I": ("X", "Y"), "J": ()})
    >>> sorted({(k, "".join(a), d) for k, a, d, _ in collectives_from(lay)})[:3]
    [('AllGather', 'XY', None), ('AllGather', 'Y', None), ('AllToAll', 'XY', 'J')]
    """
    dims = lay.dims
    runs = [[d.axes[len(d.axes) - k :] for k in range(len(d.axes) + 1)] for d in dims]
    for pick in itertools.product(*runs):
        gone = tuple(a for run in pick for a in run)
        if gone:
            after = transfer(lay, "AllGather", gone)
            if not isinstance(after, Refusal):
                yield "AllGather", gone, None, after
    for src in dims:
        for k in range(1, len(src.axes) + 1):
            run = src.axes[len(src.axes) - k :]
            for dst in dims:
                if dst.dim != src.dim:
                    after = transfer(lay, "AllToAll", run, dst.dim)
                    if not isinstance(after, Refusal):
                        yield "AllToAll", run, dst.dim, after
    sums = sorted(lay.unreduced)
    for r in range(1, len(sums) + 1):
        for comb in itertools.combinations(sums, r):
            for perm in itertools.permutations(comb):
                if perm == tuple(sorted(perm)):
                    after = transfer(lay, "AllReduce", perm)
                    if not isinstance(after, Refusal):
                        yield "AllReduce", perm, None, after
                for d in dims:
                    after = transfer(lay, "ReduceScatter", perm, d.dim)
                    if not isinstance(after, Refusal):
                        yield "ReduceScatter", perm, d.dim, after


# ---- the program ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Statement:
    index: int
    line: int
    target: str
    layout: Layout
    expr: Expr
    text: str  # the line, comment dropped
    refs: tuple[Ref, ...]
    sums: bool  # the expression sums (a contraction or a reduction): partial sums may stay
    kind: str  # "contract", "reshard", "reduce" or "elementwise": the expression's outer node


@dataclass(frozen=True)
class _Program:
    lines: tuple[str, ...]
    axes: tuple[str, ...]  # mesh axes of more than one device (or of unknown size)
    arrays: dict[str, Layout]  # every array whose layout the program writes, as written
    statements: tuple[_Statement, ...]


def _refs(e: Expr) -> Iterator[Ref]:
    match e:
        case Ref():
            yield e
        case Contract(lhs=lhs, rhs=rhs) | Binary(lhs=lhs, rhs=rhs):
            yield from _refs(lhs)
            yield from _refs(rhs)
        case Call(args=args):
            for a in args:
                yield from _refs(a)
        case CollectiveCall(arg=arg) | Reduce(arg=arg):
            yield from _refs(arg)


def _sums(e: Expr) -> bool:
    match e:
        case Contract() | Reduce():
            return True
        case Binary(lhs=lhs, rhs=rhs):
            return _sums(lhs) or _sums(rhs)
        case Call(args=args):
            return any(_sums(a) for a in args)
    return False


def _read(text: str) -> _Program | None:
    diags = Diagnostics()
    program = parse(Source("<oracle>", text), diags)
    if program is None:
        return None
    lines = tuple(text.split("\n"))
    axes: list[str] = []
    arrays: dict[str, Layout] = {}
    statements: list[_Statement] = []
    for i, s in enumerate(program.statements):
        match s:
            case MeshDecl(axes=mesh):
                axes = [a.name for a in mesh if a.size is None or a.size > 1]
            case DimDecl():
                pass
            case ArrayDecl(name=name, layout=lay):
                arrays[name] = lay
            case Assign(target=target, layout=lay, expr=expr, span=span) if lay is not None:
                arrays[target] = lay
                line = span.line
                if (
                    isinstance(expr, CollectiveCall)
                    or s.times
                    or s.partial
                    or span.end_line != line
                ):
                    continue
                body = lines[line - 1].split("#", 1)[0].rstrip()
                refs = tuple(
                    r
                    for r in _refs(expr)
                    if r.layout is None and not r.renames and r.span.line == line
                )
                kind = (
                    "contract"
                    if isinstance(expr, Contract)
                    else "reshard"
                    if isinstance(expr, Ref)
                    else "reduce"
                    if isinstance(expr, Reduce)
                    else "elementwise"
                )
                statements.append(
                    _Statement(i, line, target, lay, expr, body, refs, _sums(expr), kind)
                )
            case Assign(target=target):
                arrays.pop(target, None)  # its layout is the planner's: not rewritten
    return _Program(lines, tuple(axes), arrays, tuple(statements))


# ---- hand plans -----------------------------------------------------------------------------


Route = tuple[tuple[str, ...], str]
"""Lines to insert before the statement, and the name the statement then reads."""


def operand_routes(name: str, lay: Layout, axes: Sequence[str], tag: str) -> list[Route]:
    """The ways to bring array `name` (in `lay`) to a layout before a statement reads it:
    as it is, a reshard statement to any layout of its dims, that reshard then one explicit
    collective, or (holding partial sums) one reduction of them."""
    out: list[Route] = [((), name)]
    dims = lay.dim_names
    for k, spec in enumerate(layouts(dims, axes)):
        to = _layout(spec, lay.unreduced)
        first = f"{name}{tag}r{k}"
        out.append(((_fmt(first, to) + " = " + name,), first))
        for j, (kind, cax, cdim, _) in enumerate(collectives_from(to)):
            if kind in ("AllReduce", "ReduceScatter"):
                continue  # below, from the array as it is
            second = f"{name}{tag}r{k}c{j}"
            out.append(
                (
                    (
                        _fmt(first, to) + " = " + name,
                        f"{second} = {_coll_text(kind, cax, cdim, first)}",
                    ),
                    second,
                )
            )
    for j, (kind, cax, cdim, _) in enumerate(collectives_from(lay)):
        if kind in ("AllReduce", "ReduceScatter"):
            n = f"{name}{tag}s{j}"
            out.append(((f"{n} = {_coll_text(kind, cax, cdim, name)}",), n))
    return out


def result_routes(
    target: str, out: Layout, axes: Sequence[str], sums: bool, tag: str
) -> list[tuple[str, tuple[str, ...]]]:
    """The ways to compute a statement's result and bring it to `out`: (the left-hand side
    the statement computes into, the lines after it). Directly; into any layout (with any
    partial sums where the statement sums) then a reshard statement; or into a layout one
    explicit collective takes to `out`."""
    routes: list[tuple[str, tuple[str, ...]]] = [(_fmt(target, out), ())]
    dims = out.dim_names
    free = [a for a in axes]
    k = 0
    for spec in layouts(dims, free):
        used = {a for v in spec.values() for a in v}
        left = [a for a in free if a not in used]
        subsets: list[tuple[str, ...]] = [()]
        if sums:
            subsets += [c for r in range(1, len(left) + 1) for c in itertools.combinations(left, r)]
        for sub in subsets:
            mid = _layout(spec, sub)
            if mid == out:
                continue
            name = f"{target}{tag}m{k}"
            k += 1
            routes.append((_fmt(name, mid), (f"{_fmt(target, out)} = {name}",)))
            for kind, cax, cdim, after in collectives_from(mid):
                if after == out:
                    routes.append(
                        (_fmt(name, mid), (f"{target} = {_coll_text(kind, cax, cdim, name)}",))
                    )
    return routes


def _rewrite(
    p: _Program, s: _Statement, routes: Mapping[str, Route], result: tuple[str, tuple[str, ...]]
) -> str:
    line = s.text
    for r in sorted(s.refs, key=lambda r: -r.span.col):
        if r.name in routes:
            start, end = r.span.col - 1, r.span.end_col - 1
            line = line[:start] + routes[r.name][1] + line[end:]
    rhs = line.split("=", 1)[1].strip()
    before = [
        x
        for name in dict.fromkeys(r.name for r in s.refs)
        if name in routes
        for x in routes[name][0]
    ]
    body = [*before, f"{result[0]} = {rhs}", *result[1]]
    lines = list(p.lines)
    lines[s.line - 1] = "\n".join(body)
    return "\n".join(lines)


def _choices(
    p: _Program, s: _Statement, n: int
) -> tuple[list[tuple[str, list[Route]]], list[tuple[str, tuple[str, ...]]]]:
    tag = f"h{n}"
    ops = [
        (name, operand_routes(name, p.arrays[name], p.axes, tag))
        for name in dict.fromkeys(r.name for r in s.refs)
        if name in p.arrays
    ]
    return ops, result_routes(s.target, s.layout, p.axes, s.sums, tag)


KINDS = ("contract", "elementwise", "reshard", "reduce")
"""The kinds of statement `hand_plans` rewrites: by the expression's outer node."""


def hand_plans(
    source: str, *, sample: int | None = None, seed: int = 0, kinds: Iterable[str] = KINDS
) -> Iterator[tuple[int, str]]:
    """Hand-written versions of `source`, one statement (of `kinds`) rewritten in each (the
    module's docstring): every combination of the routes of its operands and of its result,
    or, with `sample`, that many drawn at random (with `seed`) across the statements. Yields
    (the rewritten statement's line, the program text)."""
    p = _read(source)
    wanted = set(kinds)
    statements = [s for s in p.statements if s.kind in wanted] if p is not None else []
    if p is None or not statements:
        return
    spaces = [(s, *_choices(p, s, i)) for i, s in enumerate(statements)]
    if sample is None:
        for s, ops, results in spaces:
            for route_picks in itertools.product(*(r for _, r in ops)):
                routes: dict[str, Route] = {
                    name: pick for (name, _), pick in zip(ops, route_picks, strict=True)
                }
                changed = any(pick[0] for pick in route_picks)
                for result in results:
                    if changed or result != results[0]:
                        yield s.line, _rewrite(p, s, routes, result)
        return
    rnd = random.Random(seed)
    seen: set[str] = set()
    for _ in range(sample * 4):
        if len(seen) >= sample:
            break
        s, ops, results = rnd.choice(spaces)
        # Each side changes with even odds, so plans changing one thing are common.
        routes = {
            name: (rnd.choice(r[1:]) if len(r) > 1 and rnd.random() < 0.5 else r[0])
            for name, r in ops
        }
        result = rnd.choice(results[1:]) if len(results) > 1 and rnd.random() < 0.5 else results[0]
        if (
            all(v == r[0] for (_, r), v in zip(ops, routes.values(), strict=True))
            and result == results[0]
        ):
            continue
        text = _rewrite(p, s, routes, result)
        if text not in seen:
            seen.add(text)
            yield s.line, text


# ---- the check ------------------------------------------------------------------------------


def objective(
    r: Any, model: str | None = None, lines: tuple[int, int] | None = None
) -> float | None:
    """The planner's objective of a compiled program (the module's docstring): under the
    exact model the sum of its ops' times (a collective's time; a local op's roofline time,
    the larger of its math and its HBM traffic), under the book's T_comms + T_math; None
    where sizes are symbolic. With `lines` (first, last), only the ops of those lines count:
    one statement's share."""
    book = (model or r.model) == "book"
    if lines is None and book:
        c, m = r.value("t_comms_s"), r.value("t_math_s")
        return None if c is None or m is None else c + m
    total = 0.0
    for op in r.ops:
        if lines is not None and not lines[0] <= op.line <= lines[1]:
            continue
        e = op.t_math if book and op.kind != "collective" else op.time
        v = r.value(e * op.count)
        if v is None:
            return None
        total += v
    return total


@dataclass(frozen=True)
class Finding:
    """A hand-written plan cheaper than the compiler's: the program, the statement's line it
    rewrites, and the two costs under `objective`."""

    program: str
    line: int
    hand: float
    ours: float

    def __str__(self) -> str:
        return (
            f"line {self.line}: a hand plan costs {self.hand:.4g} s against the "
            f"compiler's {self.ours:.4g} s ({self.ours / self.hand:.3g}x):\n{self.program}"
        )


def _source(source: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(source, Path):
        return source.read_text(encoding="utf-8"), {}
    if isinstance(source, str):
        return source, {}
    name = getattr(getattr(source, "program", None), "name", None)
    if name and Path(name).is_file():
        opts: dict[str, Any] = {"model": source.model}
        if source.chip is not None:
            opts["hw"] = source.chip
        if source.bindings:
            opts["set"] = dict(source.bindings)
        return Path(name).read_text(encoding="utf-8"), opts
    raise TypeError("cheaper_plans takes a program's text, a path or a Report of a file")


def cheaper_plans(
    source: Any,
    *,
    hands: Iterable[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
    first: bool = False,
    rel: float = 1e-9,
    kinds: Iterable[str] = KINDS,
    **options: Any,
) -> list[Finding]:
    """The hand plans of `source` (a program's text, a `Path`, or a `Report` compiled from a
    file, whose model, chip and bindings are reused) that cost strictly less (by more than
    `rel`) than the compiler's own plan under `objective`, each compiled with `options`
    (`shardc.compile`'s keywords). `hands` gives the programs to try (default: `hand_plans`
    of the statements of `kinds`, every one, or `sample` of them drawn with `seed`); `first`
    stops at the first finding.
    Hand programs that do not compile (a layout that does not divide its dim, a collective
    the layout cannot take) are skipped. A stable entry point for test harnesses.

    >>> cheaper_plans("mesh X=2\\ndim I=8, J=8\\nhardware h100\\nA: f32[I_X, J]\\n"
    ...               "B[I, J_X] = A\\n")
    []
    """
    text, opts = _source(source)
    opts.update(options)
    opts.setdefault("explain", False)
    try:
        ours_report = api.compile(text, **opts)
    except CompileError:
        return []
    model = ours_report.model
    # Plans chosen for the whole program (`--objective`, the default but `statement`) are
    # compared by that objective of the whole program: the hand program compiled under it
    # against ours. Each contraction planned for itself: the rewritten statement's share.
    from shardc.driver.objective import objective_of, value

    goal = objective_of(ours_report)
    whole = value(ours_report, goal) if goal != "statement" else None
    per_statement = whole is None
    if per_statement:
        whole = objective(ours_report, model)
    else:
        opts["objective"] = goal
    if whole is None:
        return []
    program = _read(text)
    ours_by_line: dict[int, float | None] = {}
    tries: Iterable[tuple[int, str]] = (
        ((0, h) for h in hands)
        if hands is not None
        else hand_plans(text, sample=sample, seed=seed, kinds=kinds)
    )
    found: list[Finding] = []
    ours: float | None
    hand: float | None
    for line, hand_text in tries:
        try:
            hand_report = api.compile(hand_text, **opts)
        except CompileError:
            continue
        if not per_statement:
            ours, hand = whole, value(hand_report, goal)
        elif line and program is not None and len(program.statements) > 1:
            # One statement's share: the ops of its line in ours, of the lines it became in
            # the hand plan (later statements reading a value its lines cached are not
            # counted: `--objective statement` does not choose plans for the whole program).
            if line not in ours_by_line:
                ours_by_line[line] = objective(ours_report, model, (line, line))
            ours = ours_by_line[line]
            grown = hand_text.count("\n") - text.count("\n")
            hand = objective(hand_report, model, (line, line + grown))
        else:
            ours, hand = whole, objective(hand_report, model)
        if hand is not None and ours is not None and hand < ours * (1 - rel) - 1e-15:
            found.append(Finding(hand_text, line, hand, ours))
            if first:
                break
    return found


# ---- the single-contraction problem of the earlier oracle (kept for its tests) ---------------


@dataclass(frozen=True)
class Problem:
    """One contraction: the program's head (mesh, dims, hardware, the operands' declarations),
    the operands' dims, the contracted dim and the requested result."""

    head: str
    axes: tuple[str, ...]
    a_dims: tuple[str, ...]
    b_dims: tuple[str, ...]
    contract: str
    out: dict[str, tuple[str, ...]]

    def statement(self, a: str = "A", b: str = "B") -> str:
        return f"{text_of('C', self.out)} = {a} ·_{self.contract} {b}\n"

    def ours(self) -> str:
        return self.head + self.statement()

    def hands(self) -> Iterator[str]:
        """The hand-written programs of the contraction (`hand_plans`)."""
        for _, text in hand_plans(self.ours(), kinds=("contract",)):
            yield text


def cheaper_hand(
    problem: Problem, hands: Sequence[str] | None = None
) -> tuple[str, float, float] | None:
    """The first hand plan of `problem` (of `hands`, default every one `hand_plans` makes)
    cheaper than the compiler's, as (program, hand cost, our cost); None when there is none."""
    found = cheaper_plans(problem.ours(), hands=hands, first=True)
    return (found[0].program, found[0].hand, found[0].ours) if found else None


__all__ = [
    "KINDS",
    "Finding",
    "Problem",
    "cheaper_hand",
    "cheaper_plans",
    "collectives_from",
    "hand_plans",
    "layouts",
    "objective",
    "operand_routes",
    "result_routes",
    "text_of",
]


# ---- small programs for the property ------------------------------------------------------


def small_programs():
    """A Hypothesis strategy of programs the oracle checks: two or three mesh axes of 2 or 4
    (at most 16 devices), numeric dims, a chip, and one to three statements, each of a kind:
    a contraction, an elementwise op (with a call), a reshard, a reduction. Every target's
    layout is written; operands are declared in random layouts."""
    from hypothesis import strategies as st

    @st.composite
    def draw_program(draw) -> str:
        n = draw(st.sampled_from([2, 2, 3]))
        names = ("X", "Y", "Z")[:n]
        sizes = draw(
            st.sampled_from(
                [(2, 2), (4, 2), (2, 4), (4, 4)] if n == 2 else [(2, 2, 2), (4, 2, 2), (2, 2, 4)]
            )
        )
        devices = 1
        for s in sizes:
            devices *= s
        dims = {d: devices * draw(st.sampled_from([1, 4, 16, 64, 256])) for d in "IJK"}
        hw = draw(st.sampled_from(["tpu-v5e", "tpu-v5p", "h100"]))
        dtype = draw(st.sampled_from(["bf16", "f32"]))

        def lay(ds: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
            return draw(st.sampled_from(list(layouts(ds, names))))

        decls = {"A": ("I", "J"), "B": ("J", "K"), "E": ("I", "K")}
        lines = [
            f"mesh {', '.join(f'{x}={s}' for x, s in zip(names, sizes, strict=True))}",
            f"dim {', '.join(f'{d}={v}' for d, v in dims.items())}",
            f"hardware {hw}",
        ]
        lines += [
            text_of(a, lay(ds)).replace(f"{a}[", f"{a}: {dtype}[", 1) for a, ds in decls.items()
        ]
        kinds = draw(
            st.lists(
                st.sampled_from(["contract", "elementwise", "reshard", "reduce"]),
                min_size=1,
                max_size=3,
            )
        )
        have_c = False
        for i, kind in enumerate(kinds):
            if kind == "contract" and not have_c:
                lines.append(f"{text_of('C', lay(('I', 'K')))} = A ·_J B")
                have_c = True
            elif kind in ("contract", "elementwise"):
                other = "C" if have_c else "E"
                expr = draw(
                    st.sampled_from([f"{other} + E", f"exp(E) * {other}", f"gelu({other})"])
                )
                lines.append(f"{text_of(f'D{i}', lay(('I', 'K')))} = {expr}")
            elif kind == "reshard":
                src, ds = draw(st.sampled_from(list(decls.items())))
                lines.append(f"{text_of(f'R{i}', lay(ds))} = {src}")
            else:
                src = "C" if have_c and draw(st.booleans()) else "E"
                dim = draw(st.sampled_from(["I", "K"]))
                keep = "K" if dim == "I" else "I"
                lines.append(f"{text_of(f'S{i}', lay((keep,)))} = Sum_{{{dim}}}({src})")
        return "\n".join(lines) + "\n"

    return draw_program()


__all__ += ["small_programs"]
