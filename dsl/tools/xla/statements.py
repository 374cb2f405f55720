"""Split a compiled program into source statements ready to lower to JAX one at a time.

Each statement gets the layouts its inputs have when it runs (what shardc produced for earlier
statements), the layout it must produce (requested, or left to XLA), and shardc's own ops for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.lang.layout import Layout, format_axes
from shardc.lang.source import Source, Span
from shardc.lang.syntax import (
    ArrayDecl,
    Assign,
    Binary,
    Call,
    CollectiveCall,
    Contract,
    Expr,
    Program,
    Reduce,
    Ref,
)
from shardc.passes.ir import Collective, CompiledProgram, Input, Op


@dataclass(frozen=True, slots=True)
class Operand:
    """An input of one statement: an array in the layout it has when the statement runs."""

    name: str
    dtype: str
    layout: Layout

    @property
    def dims(self) -> tuple[str, ...]:
        return self.layout.dim_names


@dataclass(frozen=True, slots=True)
class Statement:
    """One assignment: its inputs, the expression, shardc's ops, and what XLA must produce.

    `out_layout` is the requested layout (XLA must produce it) or None (XLA chooses);
    `ours_layout` is what shardc produced. `skip` says why the statement cannot be lowered.
    """

    line: int
    text: str
    target: str
    expr: Expr
    inputs: tuple[Operand, ...]
    ops: tuple[Op, ...]
    out_layout: Layout | None
    ours_layout: Layout
    dtype: str
    explicit: tuple[tuple[Span, Layout], ...]
    skip: str = ""

    def explicit_layout(self, span: Span) -> Layout | None:
        for s, lay in self.explicit:
            if s == span:
                return lay
        return None


def _inside(inner: Span, outer: Span) -> bool:
    return ((outer.line, outer.col) <= (inner.line, inner.col)
            and (inner.end_line, inner.end_col) <= (outer.end_line, outer.end_col))


def referenced(e: Expr) -> list[str]:
    """Array names an expression reads, in order of first use."""
    out: list[str] = []

    def walk(x: Expr) -> None:
        match x:
            case Ref(name=name):
                if name not in out:
                    out.append(name)
            case Contract(lhs=lhs, rhs=rhs) | Binary(lhs=lhs, rhs=rhs):
                walk(lhs)
                walk(rhs)
            case Call(args=args):
                for a in args:
                    walk(a)
            case CollectiveCall(arg=arg) | Reduce(arg=arg):
                walk(arg)

    walk(e)
    return out


def _unreduced_text(name: str, layout: Layout, mesh: tuple[str, ...]) -> str:
    return layout.format(name, mesh)


def statements(program: Program, compiled: CompiledProgram, source: Source) -> list[Statement]:
    """The assignments of a program with their inputs' layouts and shardc's ops."""
    mesh = compiled.mesh_axes
    env: dict[str, Operand] = {}
    ops = list(compiled.ops)
    out: list[Statement] = []
    for stmt in program.statements:
        if isinstance(stmt, ArrayDecl):
            env[stmt.name] = Operand(stmt.name, stmt.dtype, stmt.layout.stripped())
            continue
        if not isinstance(stmt, Assign):
            continue
        mine = tuple(op for op in ops if _inside(op.span, stmt.span))
        for op in mine:
            if isinstance(op, Input):  # an array declared inline, `B = A[I_X]` with A new
                env[op.out.array] = Operand(op.out.array, op.out.dtype, op.out.layout)
        inputs = tuple(env[n] for n in referenced(stmt.expr) if n in env)
        computed = [op for op in mine if not isinstance(op, Input)]
        if computed and computed[-1].out.array == stmt.target:
            final, dtype = computed[-1].out.layout, computed[-1].out.dtype
        elif isinstance(stmt.expr, Ref) and stmt.expr.name in env:
            final, dtype = env[stmt.expr.name].layout, env[stmt.expr.name].dtype
        elif computed:
            final, dtype = computed[-1].out.layout, computed[-1].out.dtype
        else:
            continue
        skip = ""
        derived = source.line_text(stmt.span.line).strip() == "backward"
        if derived:
            # The backward pass's statements all carry the `backward` line; one row says so.
            env[stmt.target] = Operand(stmt.target, dtype, final)
            if any(s.line == stmt.span.line for s in out):
                continue
            skip = ("the statements `backward` derives are not lowered to JAX yet; xla-check "
                    "compares the forward statements (the backward pass is checked on the mesh "
                    "simulator, tests/test_backward.py)")
        for x in inputs:
            if skip:
                break
            if x.layout.unreduced:
                skip = (f"input {_unreduced_text(x.name, x.layout, mesh)} holds partial sums "
                        "{U_" + format_axes(sorted(x.layout.unreduced)) + "}: JAX has no "
                        "spelling for an unreduced array")
                break
        if not skip and any(isinstance(op, Collective) and op.op == "Send" for op in mine):
            skip = ("a point-to-point Send has no JAX spelling in xla-check yet (its shift form "
                    "is jax.lax.ppermute under shard_map, which the lowering does not write)")
        if not skip and final.unreduced:
            skip = (f"the result {final.format(stmt.target, mesh)} keeps partial sums: JAX "
                    "has no spelling for an unreduced array")
        explicit = tuple((op.span, op.out.layout) for op in mine
                         if isinstance(op, Collective) and op.explicit)
        requested = stmt.layout.stripped() if stmt.layout is not None else None
        text = source.line_text(stmt.span.line).strip()
        if stmt.span.end_line == stmt.span.line:
            text = source.line_text(stmt.span.line)[stmt.span.col - 1:stmt.span.end_col - 1]
        out.append(Statement(stmt.span.line, text.strip(), stmt.target, stmt.expr, inputs,
                             tuple(computed), requested, final, dtype, explicit, skip))
        env[stmt.target] = Operand(stmt.target, dtype, final)
    return out
