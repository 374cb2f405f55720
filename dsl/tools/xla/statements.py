"""Split a compiled program into source statements ready to lower to JAX one at a time.

Each statement gets the layouts its inputs have when it runs (what shardc produced for earlier
statements), the layout it must produce (requested, or left to XLA), and shardc's own ops for it:
each op belongs to the innermost statement whose span holds it, so a statement `backward` hoists
out of a chain is charged once. The statements `backward` derives become one statement: XLA's
side is `jax.vjp` of the forward statements, shardc's side every op the derived statements hold.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.lang.layout import Layout, format_axes
from shardc.lang.source import NO_SPAN, Source, Span
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
from shardc.passes.ir import Collective, CompiledProgram, Input, Op, gradient_name


@dataclass(frozen=True, slots=True)
class Operand:
    """An input of one statement: an array in the layout it has when the statement runs."""

    name: str
    dtype: str
    layout: Layout
    vid: str = ""
    """The id of shardc's value holding it (`A.1`: C of `C[K_X, J] = A` reusing A's slice)."""

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
    forward: tuple[Statement, ...] = ()
    """For the backward pass: the forward statements XLA differentiates (`jax.vjp` of each)."""
    grads: tuple[Operand, ...] = ()
    """For the backward pass: the declared arrays whose gradients shardc computes, each named as
    the array and in its gradient's requested layout (the jitted function returns them, pinned to
    these layouts)."""

    @property
    def is_backward(self) -> bool:
        return bool(self.forward)

    def explicit_layout(self, span: Span) -> Layout | None:
        for s, lay in self.explicit:
            if s == span:
                return lay
        return None


def _inside(inner: Span, outer: Span) -> bool:
    return (outer.line, outer.col) <= (inner.line, inner.col) and (
        inner.end_line,
        inner.end_col,
    ) <= (outer.end_line, outer.end_col)


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


def _extent(span: Span) -> tuple[int, int]:
    return (span.end_line - span.line, span.end_col - span.col)


def _owners(program: Program, ops: list[Op], derived: set[int]) -> dict[int, list[Op]]:
    """Each op under the innermost assignment whose span holds it (index in the program); the
    ops of the statements `backward` derives under -1: every op from the first that carries the
    `backward` line's span on (they are lowered last; a derived statement reading `W[D, F]`
    reshards W at the span of that use in the forward pass)."""
    spans = [
        (i, s.span)
        for i, s in enumerate(program.statements)
        if isinstance(s, Assign) and i not in derived
    ]
    back = program.statements[min(derived)].span if derived else None
    start = next(
        (k for k, op in enumerate(ops) if back is not None and _inside(op.span, back)), len(ops)
    )
    out: dict[int, list[Op]] = {}
    for k, op in enumerate(ops):
        if k >= start:
            out.setdefault(-1, []).append(op)
            continue
        holders = [(i, sp) for i, sp in spans if _inside(op.span, sp)]
        if holders:
            out.setdefault(min(holders, key=lambda h: _extent(h[1]))[0], []).append(op)
    return out


def statements(program: Program, compiled: CompiledProgram, source: Source) -> list[Statement]:
    """The assignments of a program with their inputs' layouts and shardc's ops."""
    mesh = compiled.mesh_axes
    env: dict[str, Operand] = {}
    declared: dict[str, Operand] = {}
    line = compiled.backward_line
    derived = {
        i
        for i, s in enumerate(program.statements)
        if isinstance(s, Assign | ArrayDecl)
        and line is not None
        and s.span.line == line
        and source.line_text(line).strip().startswith("backward")
    }
    owners = _owners(program, list(compiled.ops), derived)
    out: list[Statement] = []
    back_targets: list[str] = []
    back_line = 0
    seed: Operand | None = None
    n_forward = 0
    values: dict[tuple[str, Layout], str] = {}
    for i, stmt in enumerate(program.statements):
        if isinstance(stmt, ArrayDecl):
            env[stmt.name] = Operand(stmt.name, stmt.dtype, stmt.layout.stripped(), stmt.name)
            if i in derived:
                seed, n_forward = env[stmt.name], len(out)
            else:
                declared[stmt.name] = env[stmt.name]
            continue
        if not isinstance(stmt, Assign):
            continue
        if i in derived:
            back_line = stmt.span.line
            back_targets.append(stmt.target)
            continue
        mine = tuple(owners.get(i, ()))
        for op in mine:
            if isinstance(op, Input):  # an array declared inline, `B = A[I_X]` with A new
                env[op.out.array] = Operand(op.out.array, op.out.dtype, op.out.layout, op.out.id)
                if i not in derived:
                    declared.setdefault(op.out.array, env[op.out.array])
        inputs = tuple(env[n] for n in referenced(stmt.expr) if n in env)
        computed = [op for op in mine if not isinstance(op, Input)]
        requested = stmt.layout.stripped() if stmt.layout is not None else None
        for op in computed:
            values[(op.out.array, op.out.layout)] = op.out.id
        if computed and computed[-1].out.array == stmt.target:
            final, dtype = computed[-1].out.layout, computed[-1].out.dtype
            vid = computed[-1].out.id
        elif isinstance(stmt.expr, Ref) and stmt.expr.name in env:
            # No op: the value was already there (`C[K_X, J] = A` reusing an earlier slice of
            # A), in the requested layout when one is requested.
            src = env[stmt.expr.name]
            final, dtype, vid = src.layout, src.dtype, src.vid
            if requested is not None and not requested.unreduced:
                final = requested
                vid = values.get((stmt.expr.name, requested), vid)
        elif computed:
            final, dtype = computed[-1].out.layout, computed[-1].out.dtype
            vid = computed[-1].out.id
        else:
            continue
        skip = ""
        for x in inputs:
            if x.layout.unreduced:
                skip = (
                    f"input {_unreduced_text(x.name, x.layout, mesh)} holds partial sums "
                    "{U_" + format_axes(sorted(x.layout.unreduced)) + "}: JAX has no "
                    "spelling for an unreduced array"
                )
                break
        if not skip and any(isinstance(op, Collective) and op.op == "Send" for op in mine):
            skip = (
                "a point-to-point Send has no JAX spelling in xla-check yet (its shift form "
                "is jax.lax.ppermute under shard_map, which the lowering does not write)"
            )
        if not skip and final.unreduced:
            skip = (
                f"the result {final.format(stmt.target, mesh)} keeps partial sums: JAX "
                "has no spelling for an unreduced array"
            )
        explicit = tuple(
            (op.span, op.out.layout) for op in mine if isinstance(op, Collective) and op.explicit
        )
        text = source.line_text(stmt.span.line).strip()
        if stmt.span.end_line == stmt.span.line:
            text = source.line_text(stmt.span.line)[stmt.span.col - 1 : stmt.span.end_col - 1]
        out.append(
            Statement(
                stmt.span.line,
                text.strip(),
                stmt.target,
                stmt.expr,
                inputs,
                tuple(computed),
                requested,
                final,
                dtype,
                explicit,
                skip,
            )
        )
        env[stmt.target] = Operand(stmt.target, dtype, final, vid)
    if back_targets and seed is not None:
        back_ops = tuple(op for op in owners.get(-1, ()) if not isinstance(op, Input))
        out.insert(
            n_forward, _backward(out[:n_forward], back_line, back_ops, back_targets, seed, declared)
        )
    return out


def _gradient_of(name: str, targets: list[str], forward: set[str]) -> str | None:
    """The derived statement computing `name`'s gradient (`dW`, or `ddW` where `dW` was
    taken), as `derive-backward` names it."""
    grad = name
    for _ in range(4):
        grad = gradient_name(grad)
        if grad not in forward:
            return grad if grad in targets else None
    return None


def _backward(
    forward: list[Statement],
    line: int,
    ops: tuple[Op, ...],
    targets: list[str],
    seed: Operand,
    declared: dict[str, Operand],
) -> Statement:
    """The statements `backward` derives, as one statement: its inputs are every array the
    forward statements read or made (in the layouts shardc holds them in) and the seed; its
    results the gradients of the declared arrays, in their requested layouts."""
    names = {st.target for st in forward} | set(declared)
    inputs: dict[str, Operand] = {}
    for st in forward:
        for x in st.inputs:
            inputs.setdefault(x.name, x)
    last = forward[-1] if forward else None
    grads = []
    for name, decl in declared.items():
        if name in inputs and _gradient_of(name, targets, names) is not None:
            grads.append(Operand(name, decl.dtype, decl.layout.with_unreduced(frozenset())))
    skip = ""
    if blocked := [st for st in forward if st.skip]:
        skip = (
            f"the forward statement at line {blocked[0].line} cannot be lowered ("
            f"{blocked[0].skip}), so neither can its gradient"
        )
    elif not grads:
        skip = "the backward pass computes no gradient of a declared array"
    elif last is None or last.target != _forward_of(seed.name, names):
        skip = "the seed of the backward pass is not the last forward statement's gradient"
    operands = (*inputs.values(), seed)
    return Statement(
        line,
        "backward",
        "backward",
        Ref(seed.name, None, NO_SPAN),
        operands,
        ops,
        None,
        seed.layout,
        seed.dtype,
        (),
        skip,
        tuple(forward),
        tuple(grads),
    )


def _forward_of(seed: str, names: set[str]) -> str | None:
    """The array whose gradient `seed` is (`dOut` -> `Out`)."""
    x = seed
    while x.startswith("d") and len(x) > 1:
        x = x[1:]
        if x in names:
            return x
    return None
