"""The `validate` pass: names, dtypes, mesh axes, divisibility and dims of every expression.

Returns the program with subscripts resolved (`I_XY` -> axes X, Y when XY is not itself an axis;
`·_NH` -> dims N, H when NH is not itself a dim), so later passes see only declared names.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import NamedTuple

from shardc.hardware.levels import LEVELS
from shardc.lang.numeric import NumberError, figure, whole
from shardc.lang.quoting import quoted
from shardc.lang.source import Span
from shardc.lang.syntax import (
    COLLECTIVE_KINDS,
    DTYPES,
    ArrayDecl,
    Assign,
    Count,
    DimDecl,
    HardwareDecl,
    MeshAxis,
    MeshDecl,
    Program,
    Stmt,
)
from shardc.lang.units import fmt_size
from shardc.passes.context import Context
from shardc.passes.validate_env import Env, did_you_mean, where
from shardc.passes.validate_expr import check_expr
from shardc.passes.validate_layout import check_layout, through_layout


class Validated(NamedTuple):
    """What `validate` returns: the program with its subscripts resolved, and the options'
    bindings that passed N016 (ints and floats; the later passes read these, not the options)."""

    program: Program
    bindings: Mapping[str, float]


def validate(program: Program, ctx: Context) -> Validated:
    """The `validate` pass: check a program and resolve its subscripts; report user errors
    (into `ctx.diagnostics`), never raise them. Layouts: `validate_layout`; expressions:
    `validate_expr`; what the walk knows: `validate_env.Env`."""
    bindings = check_bindings(program, ctx)
    env = Env(bindings=dict(bindings))
    meshes = [s for s in program.statements if isinstance(s, MeshDecl)]
    env.later_mesh_line = meshes[0].span.line if meshes else 0
    out: list[Stmt] = []
    for stmt in program.statements:
        new = _check_stmt(stmt, env, ctx)
        if new is not None:
            out.append(new)
    for count in program.repeats:
        _check_count(count, env, ctx)
    for name in bindings:
        if name not in env.dims and name not in env.mesh and not is_hardware_name(name):
            ctx.diagnostics.error(
                "N010",
                f"--set names {quoted(name)}, which is not a dimension, mesh axis or "
                "hardware quantity of this program",
                notes=(
                    "known: " + ", ".join([*env.dims, *env.mesh])
                    if env.dims or env.mesh
                    else "the program declares no dims or mesh axes",
                ),
            )
    return Validated(Program(tuple(out), program.repeats), MappingProxyType(bindings))


def check_bindings(program: Program, ctx: Context) -> dict[str, float]:
    """N016: a `--set` value outside its name's domain. Sizes, mesh axes and repeat counts are
    positive whole numbers; hardware figures positive, finite, normal floats. A bad binding is
    reported and dropped, so no later check divides by it. A good Decimal (from the CLI) is
    stored as an int (a size, exact however large) or a float (a figure). Returns the bindings
    that passed, in the options' order; the options are left as given."""
    dims = {d.name for s in program.statements if isinstance(s, DimDecl) for d in s.dims}
    axes = {a.name for s in program.statements if isinstance(s, MeshDecl) for a in s.axes}
    counts = {n for c in program.repeats for n in c.names}
    check: Callable[[Decimal | float | int, str], float]
    out: dict[str, float] = {}
    for name, value in ctx.options.bindings.items():
        if name in dims or name in axes:
            what = f"{'mesh axis' if name in axes else 'dimension'} {name!r}" + (
                " (a repeat count)" if name in counts else ""
            )
            check = whole
        elif name in ("eta_mxu", "eta_hbm") or (name.startswith("eta_") and is_hardware_name(name)):
            what, check = f"efficiency {name!r}", _efficiency
        elif name == "c_expose":
            what, check = f"exposed share {name!r}", _share
        elif is_hardware_name(name):
            what, check = f"hardware figure {name!r}", figure
        else:
            # N010, below: the name is unknown; the value is only kept as a float (exact
            # Decimals from the command line are finite and in a float's range).
            out[name] = float(value) if isinstance(value, Decimal) else value
            continue
        try:
            checked = check(value, what)
        except NumberError as exc:
            rule = (
                "a size, a mesh axis or a repeat count is a whole number from 1 to 2**63 - 1"
                if check is whole
                else "an efficiency is a fraction in (0, 1]"
                if check is _efficiency
                else "an exposed share is a fraction from 0 to 1"
                if check is _share
                else "a hardware figure is a positive, finite number"
            )
            message = str(exc).removesuffix(f", got {_shown(value)}")
            ctx.diagnostics.error("N016", f"--set {name}={_shown(value)}: {message}", notes=(rule,))
            continue
        out[name] = checked if isinstance(value, Decimal) else value
    return out


def _efficiency(value: Decimal | float | int, what: str) -> float:
    """A calibration's efficiency bound with --set: a fraction in (0, 1], so that T_expected
    stays at or above T_lower."""
    out = figure(value, what)
    if out > 1:
        raise NumberError(f"{what} must be at most 1, got {_shown(value)}")
    return out


def _share(value: Decimal | float | int, what: str) -> float:
    """A share bound with --set (c_expose): a finite fraction from 0 to 1; 0 only adds
    nothing, so T_expected stays at or above T_lower."""
    if isinstance(value, bool) or not isinstance(value, (Decimal, float, int)):
        raise NumberError(f"{what} must be a number, got {_shown(value)}")
    finite = value.is_finite() if isinstance(value, Decimal) else math.isfinite(value)
    if finite and value < 0:
        raise NumberError(f"{what} must be from 0 to 1, got {_shown(value)}")
    return 0.0 if value == 0 else _efficiency(value, what)


def _shown(value: Decimal | float) -> str:
    """A bound value as the user typed it, near enough: `4096`, `0.5`, `1e-320`, `inf`."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**21:
        value = Decimal(value)  # a Python int of hundreds of digits: shown as 1.000000e+400
    if isinstance(value, Decimal):
        if value == value.to_integral_value() and abs(value) < 10**21:
            return str(int(value))
        return f"{value:g}" if value.adjusted() < 30 else f"{value:.6e}"
    return str(value)


def is_hardware_name(name: str) -> bool:
    from shardc.passes.symbols import HARDWARE_NAMES

    return name == "C" or name in HARDWARE_NAMES or name.startswith("C_")


def _check_stmt(stmt: Stmt, env: Env, ctx: Context) -> Stmt | None:
    d = ctx.diagnostics
    match stmt:
        case MeshDecl(axes=axes):
            if env.mesh_declared:
                d.error(
                    "N001",
                    "the mesh is declared twice",
                    stmt.span,
                    f"the first `mesh` is on line {env.mesh_line}",
                    notes=("declare every mesh axis in one `mesh` statement",),
                )
                return None
            env.mesh_declared = True
            env.mesh_line = stmt.span.line
            for ax in axes:
                if ax.name in env.mesh:
                    d.error(
                        "N002",
                        f"mesh axis {ax.name!r} is declared twice",
                        ax.span,
                        f"first declared at column {env.spans[ax.name].col}",
                        ("each mesh axis is declared once, with one size",),
                    )
                elif ax.name in env.dims:
                    d.error(
                        "N003",
                        f"{ax.name!r} is already a dimension; mesh axes and "
                        "dimensions need different names",
                        ax.span,
                        f"dimension {ax.name!r} is declared on {where(env.spans[ax.name])}",
                    )
                elif "_" in ax.name:
                    d.error(
                        "N005",
                        f"mesh axis name {ax.name!r} contains '_'",
                        ax.span,
                        notes=("'_' introduces a sharding subscript: I_X is I sharded over X",),
                    )
                elif ax.size is not None and ax.size < 1:
                    d.error(
                        "N004",
                        f"mesh axis {ax.name!r} has size {ax.size}",
                        ax.span,
                        notes=("a mesh axis has at least one device",),
                    )
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
                    d.error(
                        "N003",
                        f"{dim.name!r} is already a mesh axis; mesh axes and "
                        "dimensions need different names",
                        dim.span,
                        f"mesh axis {dim.name!r} is declared on {where(env.spans[dim.name])}",
                    )
                elif "_" in dim.name:
                    d.error(
                        "N005",
                        f"dimension name {dim.name!r} contains '_'",
                        dim.span,
                        notes=("'_' introduces a sharding subscript: I_X is I sharded over X",),
                    )
                elif dim.name in env.dims and env.dims[dim.name] != dim.size:
                    old = env.dims[dim.name]
                    d.error(
                        "N006",
                        f"dimension {dim.name!r} is given two sizes "
                        f"({fmt_size(old)} and {fmt_size(dim.size)})",
                        dim.span,
                        f"first declared on {where(env.spans[dim.name])} with size {fmt_size(old)}",
                        ("a dimension has one size; `dim I` without a size leaves it symbolic",),
                    )
                elif dim.size is not None and dim.size < 1:
                    d.error(
                        "N004",
                        f"dimension {dim.name!r} has size {dim.size}",
                        dim.span,
                        notes=("a dimension has at least one element",),
                    )
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
                d.error(
                    "N007",
                    f"unknown dtype {dtype!r}",
                    stmt.dtype_span,
                    did_you_mean(dtype, DTYPES),
                    notes=("dtypes: " + ", ".join(DTYPES),),
                )
                dtype = "bf16"
            if name in env.arrays:
                d.error(
                    "N008",
                    f"array {name!r} is declared twice",
                    stmt.span,
                    f"first defined on {where(env.array_lines.get(name, 0))}",
                    ("to give an array a new layout write `A2[I, J_X] = A`",),
                )
            new_layout = check_layout(layout, name, stmt.span, env, ctx)
            if new_layout is None:
                env.failed.add(name)
                return None
            env.arrays[name] = (dtype, new_layout.dim_names)
            env.array_lines.setdefault(name, stmt.span.line)
            env.failed.discard(name)
            return ArrayDecl(
                name, dtype, new_layout, stmt.span, stmt.dtype_span, stmt.param, stmt.times
            )
        case Assign(target=target, layout=layout, expr=expr):
            if not _free_name(target, stmt.target_span, ctx):
                return None
            checked = check_expr(expr, env, ctx)
            if checked is None:
                env.failed.add(target)
                return None
            new_expr, dtype, out_dims = checked
            new_layout = None
            if layout is not None:
                new_layout = check_layout(layout, target, stmt.target_span, env, ctx)
                if new_layout is None:
                    env.failed.add(target)
                    return None
                if sorted(new_layout.dim_names) != sorted(out_dims):
                    d.error(
                        "S005",
                        f"{target!r} is written with dims "
                        f"[{', '.join(new_layout.dim_names)}] but the expression gives "
                        f"[{', '.join(out_dims)}]",
                        through_layout(stmt.target_span, ctx),
                        f"the expression gives [{', '.join(out_dims)}]",
                        notes=("a left-hand side names every dim of the result, in any order",),
                    )
                    env.failed.add(target)
                    return None
                out_dims = new_layout.dim_names
            env.arrays[target] = (dtype, out_dims)
            env.array_lines.setdefault(target, stmt.span.line)
            env.failed.discard(target)
            return Assign(
                target, new_layout, new_expr, stmt.span, stmt.target_span, stmt.times, stmt.partial
            )
    return stmt


def _check_count(count: Count, env: Env, ctx: Context) -> None:
    """A `repeat` count names declared dims or mesh axes (R001) and is at least 1 (R002)."""
    for name in count.names:
        if name not in env.dims and name not in env.mesh:
            ctx.diagnostics.error(
                "R001",
                f"the count of `repeat` names {name!r}, which is not a dimension or mesh axis",
                count.span,
                did_you_mean(name, [*env.dims, *env.mesh]),
                notes=(
                    "a count is a whole number, a dim or a mesh axis, or a sum or product "
                    "of those: repeat L {, repeat M + P - 1 {",
                ),
            )
            return
    sizes = {n: v for n in count.names if (v := env.size(n)) is not None}
    if len(sizes) == len(count.names):
        value = count.evaluate(sizes)
        if value < 1:
            ctx.diagnostics.error(
                "R002",
                f"`repeat {count.text}` runs {value} times",
                count.span,
                notes=("a repeat block runs at least once",),
            )
        return
    # Some names symbolic: the count as a polynomial in them. `L - L` is 0 whatever L is (its
    # per-iteration costs were 0/0 = nan), and `1 - L` or `-L`, with no positive term, is at
    # most 0 for every size of at least 1.
    poly = count.fold(
        _Poly.number, lambda n: _Poly.number(sizes[n]) if n in sizes else _Poly.name(n)
    )
    most = poly.most_when_nonpositive()
    if most is not None and most < 1:
        free = ", ".join(sorted(set(count.names) - sizes.keys()))
        runs = f"{most} times" if poly.is_constant() else f"at most {most} times"
        ctx.diagnostics.error(
            "R002",
            f"`repeat {count.text}` runs {runs} for every value of {free}",
            count.span,
            notes=("a repeat block runs at least once",),
        )


class _Poly:
    """A repeat count over its symbolic names: integer coefficients by monomial (a sorted tuple
    of names, repeated for powers); + - * as the count's tree combines them."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict[tuple[str, ...], int]) -> None:
        self.terms = {m: c for m, c in terms.items() if c}

    @classmethod
    def number(cls, n: int) -> _Poly:
        return cls({(): n})

    @classmethod
    def name(cls, name: str) -> _Poly:
        return cls({(name,): 1})

    def __add__(self, other: _Poly) -> _Poly:
        out = dict(self.terms)
        for m, c in other.terms.items():
            out[m] = out.get(m, 0) + c
        return _Poly(out)

    def __sub__(self, other: _Poly) -> _Poly:
        return self + _Poly({m: -c for m, c in other.terms.items()})

    def __mul__(self, other: _Poly) -> _Poly:
        out: dict[tuple[str, ...], int] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                out[m] = out.get(m, 0) + c1 * c2
        return _Poly(out)

    def is_constant(self) -> bool:
        return all(not m for m in self.terms)

    def most_when_nonpositive(self) -> int | None:
        """The largest value the count takes with every name at least 1, when no term can make
        it larger (no positive coefficient on a name): the value at all names = 1. None when
        some term grows with a name."""
        if any(m and c > 0 for m, c in self.terms.items()):
            return None
        return sum(self.terms.values())


LINKS = LEVELS
"""Network levels a mesh axis can live on (`@ici`, ...), innermost (fastest) first."""


def _check_mesh_attributes(ax: MeshAxis, ctx: Context) -> bool:
    d = ctx.diagnostics
    if ax.link is not None and ax.link not in LINKS:
        d.error(
            "H010",
            f"unknown link {ax.link!r} for mesh axis {ax.name!r}",
            ax.attr_span,
            did_you_mean(ax.link, LINKS),
            notes=(
                "links: " + ", ".join(f"@{x}" for x in LINKS) + "; without `@` an axis "
                "uses the chip's fast link (ICI on TPUs, NVLink on GPUs)",
            ),
        )
        return False
    if ax.flag is not None and ax.wrap is None:
        d.error(
            "H011",
            f"unknown mesh axis attribute {ax.flag!r}",
            ax.attr_span,
            notes=("after the link, an axis may say `wrap` or `nowrap`",),
        )
        return False
    if ax.physical and ax.link not in (None, "ici"):
        d.error(
            "H012",
            f"physical axes are named for ICI links only, not @{ax.link}",
            ax.attr_span,
            notes=(
                "NVLink, PCIe, InfiniBand and DCN are switched: every chip reaches every other one",
            ),
        )
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
            d.error(
                "H014",
                f"mesh axis {ax.name!r} of size {ax.size} cannot span "
                f"{len(ax.physical)} physical axes evenly",
                ax.attr_span,
                notes=(
                    "a mesh axis spanning k physical axes has size n^k: each physical "
                    "axis gets n chips",
                ),
            )
            return False
    return True


def _check_physical_sharing(axes: Iterable[MeshAxis], ctx: Context) -> None:
    """A mesh axis spanning several physical axes has them to itself."""
    users: dict[str, list[MeshAxis]] = {}
    for ax in axes:
        for p in dict.fromkeys(ax.physical):
            users.setdefault(p, []).append(ax)
    for p, on in users.items():
        spanning = [a for a in on if len(a.physical) > 1]
        if spanning and len(on) > 1:
            a = spanning[0]
            other = next(b for b in on if b is not a)
            ctx.diagnostics.error(
                "H013",
                f"mesh axis {a.name!r} spans physical axes {', '.join(a.physical)} but "
                f"{other.name!r} also uses {p!r}",
                a.attr_span,
                notes=(
                    "several mesh axes may share one physical axis, or one mesh axis may "
                    "span several, not both",
                ),
            )


def _free_name(name: str, span: Span, ctx: Context) -> bool:
    """Array names may not start like a collective: `AllGather_X` always lexes as one."""
    for kind in COLLECTIVE_KINDS:
        if name.startswith(kind + "_"):
            ctx.diagnostics.error(
                "N014",
                f"array name {name!r} starts like the collective {kind}",
                span,
                notes=(f"names beginning `{kind}_` are reserved for collectives",),
            )
            return False
    return True
