"""The `validate` pass: names, dtypes, mesh axes, divisibility and dims of every expression.

Returns the program with subscripts resolved (`I_XY` -> axes X, Y when XY is not itself an axis;
`·_NH` -> dims N, H when NH is not itself a dim), so later passes see only declared names.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import ClassVar

from shardc.hardware.levels import LEVELS
from shardc.lang.dtypes import RANK
from shardc.lang.layout import DimSharding, Layout, format_axes
from shardc.lang.numeric import NumberError, figure, whole
from shardc.lang.send import SEND_NOTE
from shardc.lang.source import Span
from shardc.lang.syntax import (
    COLLECTIVE_KINDS,
    DTYPES,
    ELEMENTWISE_FUNCTIONS,
    ArrayDecl,
    Assign,
    Binary,
    Call,
    CollectiveCall,
    Contract,
    Count,
    DimDecl,
    Expr,
    HardwareDecl,
    MeshDecl,
    Program,
    Ref,
    Stmt,
)
from shardc.passes.context import Context
from shardc.passes.sizes import size_of
from shardc.passes.validate_send import check_send

DTYPE_RANK = RANK  # promotion order: shardc.lang.dtypes

_ONE_AXIS_ONCE = "a mesh axis may shard at most one dimension of an array"
_COLLECTIVE_EXAMPLES = {
    "AllGather": "AllGather_X(A)", "AllReduce": "AllReduce_X(A)",
    "ReduceScatter": "ReduceScatter_{X,K}(A)", "AllToAll": "AllToAll_{X,K}(A)",
    "Send": "Send_{X: 0->3}(A) or Send_{X: +1}(A)",
}


def promote(a: str, b: str) -> str:
    """The dtype of a result computed from `a` and `b` (the wider one; bf16 wins over f16)."""
    return a if DTYPE_RANK[a] >= DTYPE_RANK[b] else b


@dataclass(slots=True)
class _Env:
    mesh: dict[str, int | None] = field(default_factory=dict)
    mesh_declared: bool = False
    mesh_line: int = 0
    later_mesh_line: int = 0
    dims: dict[str, int | None] = field(default_factory=dict)
    arrays: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    bindings: dict[str, float] = field(default_factory=dict)
    spans: dict[str, Span] = field(default_factory=dict)
    """Where each mesh axis and dimension was declared."""
    array_lines: dict[str, int] = field(default_factory=dict)
    """The line on which each array was first declared or assigned."""
    failed: set[str] = field(default_factory=set)
    """Arrays whose definition had an error: their uses are not reported again."""

    def size(self, name: str) -> int | None:
        return size_of(name, self.dims if name in self.dims else self.mesh, self.bindings)


@dataclass(frozen=True, slots=True)
class Validate:
    """Check a program and resolve its subscripts; report user errors, never raise them."""

    name: ClassVar[str] = "validate"

    def run(self, program: Program, ctx: Context) -> Program:
        check_bindings(program, ctx)
        env = _Env(bindings=ctx.validated_bindings())
        meshes = [s for s in program.statements if isinstance(s, MeshDecl)]
        env.later_mesh_line = meshes[0].span.line if meshes else 0
        out: list[Stmt] = []
        for stmt in program.statements:
            new = _check_stmt(stmt, env, ctx)
            if new is not None:
                out.append(new)
        for count in program.repeats:
            _check_count(count, env, ctx)
        for name in ctx.bindings:
            if name not in env.dims and name not in env.mesh and not _is_hw_name(name):
                ctx.diagnostics.error(
                    "N010", f"--set names {name!r}, which is not a dimension, mesh axis or "
                    "hardware quantity of this program",
                    notes=("known: " + ", ".join([*env.dims, *env.mesh]) if env.dims or env.mesh
                           else "the program declares no dims or mesh axes",))
        return Program(tuple(out), program.repeats)


def validate(program: Program, ctx: Context) -> Program:
    """Run the `validate` pass."""
    return Validate().run(program, ctx)


def check_bindings(program: Program, ctx: Context) -> None:
    """N016: a `--set` value outside its name's domain. Sizes, mesh axes and repeat counts are
    positive whole numbers; hardware figures positive, finite, normal floats. A bad binding is
    reported and dropped, so no later check divides by it. A good Decimal (from the CLI) is
    stored as an int (a size, exact however large) or a float (a figure)."""
    dims = {d.name for s in program.statements if isinstance(s, DimDecl) for d in s.dims}
    axes = {a.name for s in program.statements if isinstance(s, MeshDecl) for a in s.axes}
    counts = {n for c in program.repeats for n in c.names}
    check: Callable[[Decimal | float | int, str], float]
    for name, value in list(ctx.bindings.items()):
        if name in dims or name in axes:
            what = (f"{'mesh axis' if name in axes else 'dimension'} {name!r}"
                    + (" (a repeat count)" if name in counts else ""))
            check = whole
        elif _is_hw_name(name):
            what, check = f"hardware figure {name!r}", figure
        else:
            continue  # N010, below
        try:
            checked = check(value, what)
        except NumberError as exc:
            del ctx.bindings[name]
            rule = ("a size, a mesh axis or a repeat count is a whole number from 1 to 2**63 - 1"
                    if check is whole else "a hardware figure is a positive, finite number")
            message = str(exc).removesuffix(f", got {_shown(value)}")
            ctx.diagnostics.error("N016", f"--set {name}={_shown(value)}: {message}",
                                  notes=(rule,))
            continue
        if isinstance(value, Decimal):
            ctx.bindings[name] = checked


def _shown(value) -> str:
    """A bound value as the user typed it, near enough: `4096`, `0.5`, `1e-320`, `inf`."""
    if isinstance(value, Decimal):
        if value == value.to_integral_value() and abs(value) < 10**21:
            return str(int(value))
        return f"{value:g}"
    return str(value)


def _is_hw_name(name: str) -> bool:
    from shardc.passes.symbols import HARDWARE_NAMES

    return name == "C" or name in HARDWARE_NAMES or name.startswith("C_")


def _did_you_mean(word: str, choices) -> str:
    """A caret label suggesting the closest known name, or "" when none is close.

    >>> _did_you_mean("gelo", ["gelu", "silu"])
    "did you mean 'gelu'?"
    """
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def _where(span: Span | int) -> str:
    line = span.line if isinstance(span, Span) else span
    return f"line {line}" if line > 0 else "an earlier line"


def _check_stmt(stmt: Stmt, env: _Env, ctx: Context) -> Stmt | None:
    d = ctx.diagnostics
    match stmt:
        case MeshDecl(axes=axes):
            if env.mesh_declared:
                d.error("N001", "the mesh is declared twice", stmt.span,
                        f"the first `mesh` is on line {env.mesh_line}",
                        notes=("declare every mesh axis in one `mesh` statement",))
                return None
            env.mesh_declared = True
            env.mesh_line = stmt.span.line
            for ax in axes:
                if ax.name in env.mesh:
                    d.error("N002", f"mesh axis {ax.name!r} is declared twice", ax.span,
                            f"first declared at column {env.spans[ax.name].col}",
                            ("each mesh axis is declared once, with one size",))
                elif ax.name in env.dims:
                    d.error("N003", f"{ax.name!r} is already a dimension; mesh axes and "
                            "dimensions need different names", ax.span,
                            f"dimension {ax.name!r} is declared on "
                            f"{_where(env.spans[ax.name])}")
                elif "_" in ax.name:
                    d.error("N005", f"mesh axis name {ax.name!r} contains '_'", ax.span,
                            notes=("'_' introduces a sharding subscript: I_X is I sharded "
                                   "over X",))
                elif ax.size is not None and ax.size < 1:
                    d.error("N004", f"mesh axis {ax.name!r} has size {ax.size}", ax.span,
                            notes=("a mesh axis has at least one device",))
                else:
                    # A bad attribute is reported but the axis still exists: no cascade of
                    # "unknown mesh axis" errors at every use.
                    _check_mesh_attributes(ax, ctx)
                    env.mesh[ax.name] = ax.size
                    env.spans[ax.name] = ax.span
            _check_physical_sharing(axes, ctx)
            return stmt
        case DimDecl(dims=dims):
            for dim in dims:
                if dim.name in env.mesh:
                    d.error("N003", f"{dim.name!r} is already a mesh axis; mesh axes and "
                            "dimensions need different names", dim.span,
                            f"mesh axis {dim.name!r} is declared on "
                            f"{_where(env.spans[dim.name])}")
                elif "_" in dim.name:
                    d.error("N005", f"dimension name {dim.name!r} contains '_'", dim.span,
                            notes=("'_' introduces a sharding subscript: I_X is I sharded over X",))
                elif dim.name in env.dims and env.dims[dim.name] != dim.size:
                    old = env.dims[dim.name]
                    d.error("N006", f"dimension {dim.name!r} is given two sizes "
                            f"({_fmt_size(old)} and {_fmt_size(dim.size)})", dim.span,
                            f"first declared on {_where(env.spans[dim.name])} with "
                            f"size {_fmt_size(old)}",
                            ("a dimension has one size; `dim I` without a size leaves it "
                             "symbolic",))
                elif dim.size is not None and dim.size < 1:
                    d.error("N004", f"dimension {dim.name!r} has size {dim.size}", dim.span,
                            notes=("a dimension has at least one element",))
                else:
                    env.dims[dim.name] = dim.size
                    env.spans.setdefault(dim.name, dim.span)
            return stmt
        case HardwareDecl():
            return stmt
        case ArrayDecl(name=name, dtype=dtype, layout=layout):
            if not _free_name(name, stmt.span, ctx):
                return None
            if dtype not in DTYPES:
                d.error("N007", f"unknown dtype {dtype!r}", stmt.dtype_span,
                        _did_you_mean(dtype, DTYPES), notes=("dtypes: " + ", ".join(DTYPES),))
                dtype = "bf16"
            if name in env.arrays:
                d.error("N008", f"array {name!r} is declared twice", stmt.span,
                        f"first defined on {_where(env.array_lines.get(name, 0))}",
                        ("to give an array a new layout write `A2[I, J_X] = A`",))
            new_layout = _check_layout(layout, name, stmt.span, env, ctx)
            if new_layout is None:
                env.failed.add(name)
                return None
            env.arrays[name] = (dtype, new_layout.dim_names)
            env.array_lines.setdefault(name, stmt.span.line)
            env.failed.discard(name)
            return ArrayDecl(name, dtype, new_layout, stmt.span, stmt.dtype_span, stmt.param,
                             stmt.times)
        case Assign(target=target, layout=layout, expr=expr):
            if not _free_name(target, stmt.target_span, ctx):
                return None
            checked = _check_expr(expr, env, ctx)
            if checked is None:
                env.failed.add(target)
                return None
            new_expr, dtype, out_dims = checked
            new_layout = None
            if layout is not None:
                new_layout = _check_layout(layout, target, stmt.target_span, env, ctx)
                if new_layout is None:
                    env.failed.add(target)
                    return None
                if sorted(new_layout.dim_names) != sorted(out_dims):
                    d.error("S005", f"{target!r} is written with dims "
                            f"[{', '.join(new_layout.dim_names)}] but the expression gives "
                            f"[{', '.join(out_dims)}]", _through_layout(stmt.target_span, ctx),
                            f"the expression gives [{', '.join(out_dims)}]",
                            notes=("a left-hand side names every dim of the result, in any "
                                   "order",))
                    env.failed.add(target)
                    return None
                out_dims = new_layout.dim_names
            env.arrays[target] = (dtype, out_dims)
            env.array_lines.setdefault(target, stmt.span.line)
            env.failed.discard(target)
            return Assign(target, new_layout, new_expr, stmt.span, stmt.target_span, stmt.times)
    return stmt


def _check_count(count: Count, env: _Env, ctx: Context) -> None:
    """A `repeat` count names declared dims or mesh axes (R001) and is at least 1 (R002)."""
    for name in count.names:
        if name not in env.dims and name not in env.mesh:
            ctx.diagnostics.error(
                "R001", f"the count of `repeat` names {name!r}, which is not a dimension or "
                "mesh axis", count.span, _did_you_mean(name, [*env.dims, *env.mesh]),
                notes=("a count is a whole number, a dim or a mesh axis, or a sum or product "
                       "of those: repeat L {, repeat M + P - 1 {",))
            return
    sizes = {n: v for n in count.names if (v := env.size(n)) is not None}
    if len(sizes) == len(count.names):
        value = count.evaluate(sizes)
        if value < 1:
            ctx.diagnostics.error(
                "R002", f"`repeat {count.text}` runs {value} times", count.span,
                notes=("a repeat block runs at least once",))


LINKS = LEVELS
"""Network levels a mesh axis can live on (`@ici`, ...), innermost (fastest) first."""


def _check_mesh_attributes(ax, ctx: Context) -> bool:
    d = ctx.diagnostics
    if ax.link is not None and ax.link not in LINKS:
        d.error("H010", f"unknown link {ax.link!r} for mesh axis {ax.name!r}", ax.attr_span,
                _did_you_mean(ax.link, LINKS),
                notes=("links: " + ", ".join(f"@{x}" for x in LINKS) + "; without `@` an axis "
                       "uses the chip's fast link (ICI on TPUs, NVLink on GPUs)",))
        return False
    if ax.flag is not None and ax.wrap is None:
        d.error("H011", f"unknown mesh axis attribute {ax.flag!r}", ax.attr_span,
                notes=("after the link, an axis may say `wrap` or `nowrap`",))
        return False
    if ax.physical and ax.link not in (None, "ici"):
        d.error("H012", f"physical axes are named for ICI links only, not @{ax.link}",
                ax.attr_span, notes=("NVLink, PCIe, InfiniBand and DCN are switched: every "
                                     "chip reaches every other one",))
        return False
    if ax.wrap is not None and ax.link not in (None, "ici"):
        d.error("H012", f"`{ax.flag}` applies to ICI rings, not @{ax.link}", ax.attr_span)
        return False
    if len(set(ax.physical)) != len(ax.physical):
        d.error("H013", f"mesh axis {ax.name!r} names a physical axis twice", ax.attr_span)
        return False
    if len(ax.physical) > 1 and ax.size is not None:
        root = round(ax.size ** (1 / len(ax.physical)))
        if root ** len(ax.physical) != ax.size:
            d.error("H014", f"mesh axis {ax.name!r} of size {ax.size} cannot span "
                    f"{len(ax.physical)} physical axes evenly", ax.attr_span,
                    notes=("a mesh axis spanning k physical axes has size n^k: each physical "
                           "axis gets n chips",))
            return False
    return True


def _check_physical_sharing(axes, ctx: Context) -> None:
    """A mesh axis spanning several physical axes has them to itself."""
    users: dict[str, list] = {}
    for ax in axes:
        for p in dict.fromkeys(ax.physical):
            users.setdefault(p, []).append(ax)
    for p, on in users.items():
        spanning = [a for a in on if len(a.physical) > 1]
        if spanning and len(on) > 1:
            a = spanning[0]
            other = next(b for b in on if b is not a)
            ctx.diagnostics.error(
                "H013", f"mesh axis {a.name!r} spans physical axes {', '.join(a.physical)} but "
                f"{other.name!r} also uses {p!r}", a.attr_span,
                notes=("several mesh axes may share one physical axis, or one mesh axis may "
                       "span several, not both",))


def _free_name(name: str, span: Span, ctx: Context) -> bool:
    """Array names may not start like a collective: `AllGather_X` always lexes as one."""
    for kind in COLLECTIVE_KINDS:
        if name.startswith(kind + "_"):
            ctx.diagnostics.error("N014", f"array name {name!r} starts like the collective "
                                  f"{kind}", span, notes=(f"names beginning `{kind}_` are "
                                                          "reserved for collectives",))
            return False
    return True


def _fmt_size(s: int | None) -> str:
    return "symbolic" if s is None else str(s)


def _through_layout(anchor: Span, ctx: Context) -> Span:
    """From `anchor` (a name) through the `]` closing the layout that follows it."""
    text = ctx.source.line_text(anchor.line)
    close = text.find("]", anchor.col - 1)
    if anchor.line <= 0 or close < 0:
        return anchor
    return Span(anchor.line, anchor.col, anchor.line, close + 2)


def _unreduced_span(anchor: Span, ctx: Context) -> Span:
    """The `U_X` of the `{U_X}` after the layout that follows `anchor`; `anchor` if not found."""
    text = ctx.source.line_text(anchor.line)
    depth = 0
    for i in range(max(anchor.col - 1, 0), len(text)):
        ch = text[i]
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "{" and depth == 0:
            close = text.find("}", i)
            end = close + 1 if close >= 0 else len(text) + 1
            return Span(anchor.line, i + 2, anchor.line, max(end, i + 3))
        elif ch in "=#" and depth == 0:
            break
    return anchor


def _resolve_axes(parts: tuple[str, ...], env: _Env) -> tuple[str, ...] | str:
    """Resolve subscript parts to mesh axes, or return the offending part."""
    out: list[str] = []
    for p in parts:
        if p in env.mesh:
            out.append(p)
        elif len(p) > 1 and all(c in env.mesh for c in p):
            out.extend(p)
        else:
            return p
    return tuple(out)


def _comma_note(part: str) -> tuple[str, ...]:
    if len(part.split()) > 1:
        return ("separate mesh axes in a subscript with commas: I_{X,Y}",)
    return ()


def _mesh_axes_note(env: _Env) -> str:
    return "mesh axes: " + ", ".join(env.mesh) if env.mesh else "the mesh declares no axes"


def _check_layout(layout: Layout, array: str, anchor: Span, env: _Env,
                  ctx: Context) -> Layout | None:
    d = ctx.diagnostics
    ok = True
    seen_axes: dict[str, str] = {}
    seen_dims: set[str] = set()
    dims: list[DimSharding] = []
    for ds in layout.dims:
        if ds.dim not in env.dims:
            d.error("N009", f"undeclared dimension {ds.dim!r} in {array!r}", ds.span,
                    _did_you_mean(ds.dim, env.dims),
                    notes=(f"declare it with `dim {ds.dim}` (symbolic) or "
                           f"`dim {ds.dim}=1024`",))
            ok = False
            continue
        if ds.dim in seen_dims:
            d.error("S006", f"dimension {ds.dim!r} appears twice in {array!r}", ds.span,
                    f"second {ds.dim!r}", ("an array names each of its dimensions once",))
            ok = False
            continue
        seen_dims.add(ds.dim)
        axes: tuple[str, ...] = ()
        if ds.axes:
            if not env.mesh_declared:
                later = env.later_mesh_line
                d.error("S007", f"{array!r} is sharded but no mesh is declared", ds.span,
                        notes=(f"the mesh is declared on line {later}, after this statement; "
                               "declare it first" if later else
                               "declare the mesh first, e.g. `mesh X=8, Y=4`",))
                ok = False
                continue
            res = _resolve_axes(ds.axes, env)
            if isinstance(res, str):
                d.error("S001", f"unknown mesh axis {res!r} in {array!r}", ds.span,
                        notes=(_mesh_axes_note(env), *_comma_note(res)))
                ok = False
                continue
            axes = res
            for k, ax in enumerate(axes):
                if ax in axes[:k]:
                    d.error("S002", f"mesh axis {ax!r} appears twice in the sharding of "
                            f"{ds.dim!r} in {array!r}", ds.span, f"second use of {ax!r}",
                            (_ONE_AXIS_ONCE,))
                    ok = False
                elif ax in seen_axes:
                    d.error("S002", f"mesh axis {ax!r} shards two dimensions of {array!r}",
                            ds.span, f"second use of {ax!r}", (_ONE_AXIS_ONCE,))
                    ok = False
                seen_axes.setdefault(ax, ds.dim)
            if ok:
                _check_divisible(ds.dim, axes, array, ds.span, env, ctx)
        dims.append(DimSharding(ds.dim, axes, ds.span))
    unreduced: set[str] = set()
    for part in sorted(layout.unreduced):
        res = _resolve_axes((part,), env)
        if isinstance(res, str):
            d.error("S001", f"unknown mesh axis {res!r} in the partial sums of {array!r}",
                    _unreduced_span(anchor, ctx), notes=(_mesh_axes_note(env),))
            ok = False
            continue
        for ax in res:
            if ax in seen_axes:
                d.error("S003", f"mesh axis {ax!r} both shards {seen_axes[ax]!r} and holds "
                        f"partial sums of {array!r}", _unreduced_span(anchor, ctx),
                        f"{ax!r} already shards {seen_axes[ax]!r}",
                        notes=("an axis is either a sharding axis or an unreduced axis",))
                ok = False
            unreduced.add(ax)
    if not ok:
        return None
    return Layout(tuple(dims), frozenset(unreduced))


def _check_divisible(dim: str, axes: tuple[str, ...], array: str, span: Span, env: _Env,
                     ctx: Context) -> None:
    size = env.size(dim)
    shards = 1
    for ax in axes:
        s = env.size(ax)
        if s is None:
            return
        shards *= s
    if size is not None and size % shards != 0:
        ctx.diagnostics.error(
            "S004", f"dimension {dim!r} of size {size} is not divisible by its "
            f"{shards} shards over {format_axes(axes)} in {array!r}", span,
            notes=("every shard of a dimension has the same size",))


def _check_expr(expr: Expr, env: _Env, ctx: Context
                ) -> tuple[Expr, str, tuple[str, ...]] | None:
    """Return (resolved expr, dtype, dims) or None after reporting."""
    match expr:
        case Ref():
            return _check_ref(expr, env, ctx)
        case Contract():
            return _check_contract(expr, env, ctx)
        case Binary():
            return _check_binary(expr, env, ctx)
        case Call():
            return _check_call(expr, env, ctx)
        case CollectiveCall():
            return _check_collective(expr, env, ctx)
    raise AssertionError(f"unhandled expression {expr!r}")


def _check_ref(expr: Ref, env: _Env, ctx: Context):
    d = ctx.diagnostics
    name, layout = expr.name, expr.layout
    if name in env.failed:
        return None  # its definition was reported already
    if layout is not None:
        new_layout = _check_layout(layout, name, expr.span, env, ctx)
        if new_layout is None:
            return None
        if name in env.arrays:
            dtype, dims = env.arrays[name]
            if sorted(dims) != sorted(new_layout.dim_names):
                d.error("S005", f"{name!r} has dims [{', '.join(dims)}] but is written "
                        f"[{', '.join(new_layout.dim_names)}]", expr.span,
                        f"expected the dims [{', '.join(dims)}], in any order",
                        notes=("a layout on a use names every dim of the array",))
                return None
            if new_layout.unreduced:
                d.error("S008", f"a use of {name!r} cannot request partial sums",
                        _unreduced_span(expr.span, ctx), "partial sums requested here",
                        notes=("only declarations and left-hand sides may say {U_X}",))
                return None
            return Ref(name, new_layout, expr.span), dtype, dims
        env.arrays[name] = ("bf16", new_layout.dim_names)
        env.array_lines.setdefault(name, expr.span.line)
        return Ref(name, new_layout, expr.span), "bf16", new_layout.dim_names
    if name not in env.arrays:
        notes = ("declare it, e.g. `A: bf16[I, J_X]`, or give it a layout at its "
                 "first use",)
        d.error("N011", f"undefined array {name!r}", expr.span,
                _did_you_mean(name, env.arrays), notes=notes)
        return None
    dtype, dims = env.arrays[name]
    return expr, dtype, dims


def _check_contract(expr: Contract, env: _Env, ctx: Context):
    d = ctx.diagnostics
    lc = _check_expr(expr.lhs, env, ctx)
    rc = _check_expr(expr.rhs, env, ctx)
    if lc is None or rc is None:
        return None
    (le, lt, ld), (re_, rt, rd) = lc, rc
    cdims: list[str] = []
    for p in expr.dims:
        if p in env.dims or p in ld or p in rd:
            cdims.append(p)
        elif len(p) > 1 and all(c in env.dims for c in p):
            cdims.extend(p)
        else:
            d.error("N009", f"contraction over undeclared dimension {p!r}", expr.dims_span,
                    _did_you_mean(p, env.dims),
                    notes=(f"declare it with `dim {p}` (symbolic) or `dim {p}=1024`",))
            return None
    for k, dim in enumerate(cdims):
        if dim in cdims[:k]:
            d.error("S006", f"dimension {dim!r} appears twice in the contraction "
                    f"·_{_subscript(expr.dims)}", expr.dims_span,
                    notes=("list each contracted dimension once: ·_{N,H}",))
            return None
    for cd in cdims:
        for side, dims_, e in (("left", ld, expr.lhs), ("right", rd, expr.rhs)):
            if cd not in dims_:
                d.error("S009", f"contraction over {cd!r}, which the {side} operand "
                        f"{_describe(e)} lacks (its dims: {', '.join(dims_)})",
                        expr.dims_span, notes=("both operands of ·_J must have dim J",))
                return None
    out = [x for x in ld if x not in cdims] + [
        x for x in rd if x not in cdims and x not in ld]
    return (Contract(le, re_, tuple(cdims), expr.span, expr.dims_span),
            promote(lt, rt), tuple(out))


def _check_binary(expr: Binary, env: _Env, ctx: Context):
    lc = _check_expr(expr.lhs, env, ctx)
    rc = _check_expr(expr.rhs, env, ctx)
    if lc is None or rc is None:
        return None
    (le, lt, ld), (re_, rt, rd) = lc, rc
    if set(rd) <= set(ld):
        dims = ld
    elif set(ld) < set(rd):
        dims = rd
    else:
        ctx.diagnostics.error(
            "S010", f"cannot broadcast [{', '.join(ld)}] {expr.op} [{', '.join(rd)}]",
            expr.span, "neither operand's dims include the other's",
            notes=("in an elementwise op one operand's dims must include the other's "
                   "(bias[F] + X[B, F])",))
        return None
    return Binary(expr.op, le, re_, expr.span), promote(lt, rt), dims


def _check_call(expr: Call, env: _Env, ctx: Context):
    d = ctx.diagnostics
    fn, args = expr.fn, expr.args
    name_span = Span(expr.span.line, expr.span.col, expr.span.line, expr.span.col + len(fn))
    if fn not in ELEMENTWISE_FUNCTIONS:
        head = fn.rstrip("_")
        if head in COLLECTIVE_KINDS:
            d.error("C002", f"{head} needs the mesh axes it works over", name_span,
                    f"write {_COLLECTIVE_EXAMPLES[head]}",
                    (SEND_NOTE,) if head == "Send" else
                    ("a collective names its mesh axes in a subscript: AllGather_X, "
                     "AllGather_XY or AllGather_{data,model}",))
            return None
        known = [*ELEMENTWISE_FUNCTIONS, *COLLECTIVE_KINDS]
        head, sep, sub = fn.partition("_")
        label = _did_you_mean(head, known)
        if label and sep:
            close = difflib.get_close_matches(head, known, n=1, cutoff=0.6)[0]
            label = f"did you mean {close + sep + sub!r}?"
        d.error("N012", f"unknown function {fn!r}", name_span, label,
                notes=("elementwise functions: " + ", ".join(ELEMENTWISE_FUNCTIONS) + "; "
                       "collectives: " + ", ".join(_COLLECTIVE_EXAMPLES.values()),))
        return None
    if len(args) != 1:
        d.error("N013", f"{fn!r} takes one argument, got {len(args)}", expr.span,
                notes=("elementwise functions apply to one array; combine arrays with "
                       "+, -, * or ·_J",))
        return None
    ac = _check_expr(args[0], env, ctx)
    if ac is None:
        return None
    return Call(fn, (ac[0],), expr.span), ac[1], ac[2]


def _check_collective(expr: CollectiveCall, env: _Env, ctx: Context):
    d = ctx.diagnostics
    kind, parts, dim = expr.kind, expr.axes, expr.dim
    ac = _check_expr(expr.arg, env, ctx)
    if ac is None:
        return None
    ae, at, ad = ac
    if kind == "Send":  # point-to-point: entries `X: 0->3` or `P: +1`, not axes
        if not check_send(expr, env.size, env.mesh, ctx):
            return None
        return CollectiveCall(kind, parts, None, ae, expr.span, expr.sub_span, expr.send), at, ad
    written = f"{kind}_{_subscript(parts) if dim is None else _braced(parts, dim)}"
    if kind in ("ReduceScatter", "AllToAll") and dim is None:
        d.error("C001", f"{written} does not say which dimension it shards", expr.sub_span,
                f"write {kind}_{_braced(parts, 'K')} to shard dimension K",
                notes=(f"{kind}_{{X,K}} works over mesh axis X and shards dim K",))
        return None
    if not parts:
        d.error("C002", f"{kind} needs at least one mesh axis", expr.sub_span,
                f"write {_COLLECTIVE_EXAMPLES[kind]}")
        return None
    res = _resolve_axes(parts, env)
    if isinstance(res, str):
        d.error("S001", f"unknown mesh axis {res!r} in {written}", expr.sub_span,
                notes=(_mesh_axes_note(env),))
        return None
    for k, ax in enumerate(res):
        if ax in res[:k]:
            d.error("C010", f"mesh axis {ax!r} appears twice in {written}", expr.sub_span,
                    f"second use of {ax!r}", ("name each mesh axis of a collective once",))
            return None
    if dim is not None and dim not in ad:
        if dim in env.mesh:
            d.error("C003", f"{written} ends in {dim!r}, which is a mesh axis, not a dimension",
                    expr.sub_span, f"expected a dimension of the argument: {', '.join(ad)}",
                    (f"the last entry of {kind}_{{X,K}} is the dimension K it shards",))
        else:
            d.error("C003", f"{kind} shards dimension {dim!r}, which its argument lacks "
                    f"(dims: {', '.join(ad)})", expr.sub_span,
                    notes=(f"the last entry of {kind}_{{X,K}} is the dimension K it shards",))
        return None
    return CollectiveCall(kind, res, dim, ae, expr.span, expr.sub_span), at, ad


def _subscript(parts: tuple[str, ...]) -> str:
    """A subscript as the program writes it: `X`, `XY` or `{X,Y}`."""
    return parts[0] if len(parts) == 1 else "{" + ",".join(parts) + "}"


def _braced(parts: tuple[str, ...], dim: str) -> str:
    return "{" + ",".join([*parts, dim]) + "}"


def _describe(e: Expr) -> str:
    return f"{e.name!r}" if isinstance(e, Ref) else "(an expression)"
