"""Write one source statement as the text of a JAX function.

`xla-check` executes this text and `export-jax` writes it out, so the script a user profiles
is exactly what was checked. Layout requests and explicit collectives become
`with_sharding_constraint`; XLA chooses everything else.
"""

from __future__ import annotations

import keyword
import string

from shardc.lang.layout import Layout
from shardc.lang.syntax import Binary, Call, CollectiveCall, Contract, Expr, Reduce, Ref
from shardc.passes.einsum_plan import output_dims
from shardc.tools.xla.statements import Statement

UNARY = {
    "gelu": "jax.nn.gelu({}, approximate=True)",
    "silu": "jax.nn.silu({})",
    "relu": "jax.nn.relu({})",
    "sigmoid": "jax.nn.sigmoid({})",
    "tanh": "jnp.tanh({})",
    "exp": "jnp.exp({})",
    "log": "jnp.log({})",
    "sqrt": "jnp.sqrt({})",
    "rsqrt": "jax.lax.rsqrt({})",
    "square": "jnp.square({})",
    "neg": "jnp.negative({})",
    "abs": "jnp.abs({})",
    "copy": "{}",
}
"""JAX spelling of each unary function of the language (gelu: the tanh form, as simulated)."""

PRELUDE = """\
def spec(*axes):
    return NamedSharding(mesh, P(*axes))


def constrain(x, *axes):
    return jax.lax.with_sharding_constraint(x, spec(*axes))
"""
"""Helpers the generated functions use; `mesh`, `jax`, `jnp`, `NamedSharding`, `P` in scope."""


class CodegenError(Exception):
    """A statement the generator cannot write (an explicit collective with no known layout)."""


def spec_args(layout: Layout) -> str:
    """`A[I_XY, J]` -> `("X", "Y"), None`: the arguments of `P(...)`."""
    parts = []
    for d in layout.dims:
        if not d.axes:
            parts.append("None")
        elif len(d.axes) == 1:
            parts.append(repr(d.axes[0]))
        else:
            parts.append("(" + ", ".join(map(repr, d.axes)) + ")")
    return ", ".join(parts)


def _transpose(x: str, dims: tuple[str, ...], want: tuple[str, ...]) -> str:
    if dims == want:
        return x
    return f"jnp.transpose({x}, {tuple(dims.index(d) for d in want)})"


def _broadcast(x: str, dims: tuple[str, ...], out: tuple[str, ...]) -> str:
    present = tuple(d for d in out if d in dims)
    x = _transpose(x, dims, present)
    missing = tuple(i for i, d in enumerate(out) if d not in dims)
    return f"jnp.expand_dims({x}, {missing})" if missing else x


RESERVED = frozenset({"jax", "jnp", "np", "P", "mesh", "spec", "constrain", "NamedSharding"})


def identifier(name: str) -> str:
    """A Python identifier for an array name that shadows nothing the generated code uses.
    Only a plain identifier (as the language's grammar makes them, no dunder) reaches the
    generated code; anything else is a `CodegenError`.

    >>> identifier("W_in"), identifier("in"), identifier("jnp"), identifier("t1")
    ('W_in', 'in_', 'jnp_', 't1_')
    """
    if not name.isidentifier() or name.startswith("_") or "__" in name:
        raise CodegenError(f"{name!r} is not a plain identifier; it cannot be written as code")
    clash = keyword.iskeyword(name) or name in RESERVED or (name[:1] == "t" and name[1:].isdigit())
    return f"{name}_" if clash else name


class _Writer:
    def __init__(self, st: Statement | None) -> None:
        self.st = st
        self.lines: list[str] = []
        self.count = 0

    def let(self, code: str) -> str:
        self.count += 1
        name = f"t{self.count}"
        self.lines.append(f"    {name} = {code}")
        return name

    def ev(
        self, e: Expr, env: dict[str, tuple[str, tuple[str, ...]]]
    ) -> tuple[str, tuple[str, ...]]:
        match e:
            case Ref(name=name, layout=layout):
                x, dims = env[name]
                dims = e.used_dims(dims)  # `In[T->S, D]`: the same data, T called S
                if layout is not None:
                    want = layout.stripped()
                    x = self.let(
                        f"constrain({_transpose(x, dims, want.dim_names)}, {spec_args(want)})"
                    )
                    dims = want.dim_names
                return x, dims
            case Contract(lhs=lhs, rhs=rhs, dims=contract):
                (a, da), (b, db) = self.ev(lhs, env), self.ev(rhs, env)
                out = output_dims(da, db, contract)
                names = sorted(set(da) | set(db))
                letter = {n: string.ascii_letters[i] for i, n in enumerate(names)}
                sub = (
                    f"{''.join(letter[d] for d in da)},{''.join(letter[d] for d in db)}->"
                    f"{''.join(letter[d] for d in out)}"
                )
                return self.let(f'jnp.einsum("{sub}", {a}, {b})'), out
            case Binary(op=op, lhs=lhs, rhs=rhs):
                (a, da), (b, db) = self.ev(lhs, env), self.ev(rhs, env)
                if op not in BINARY_OPS:
                    raise CodegenError(f"cannot write the operator {op!r}")
                out = da if set(db) <= set(da) else db
                return self.let(f"{_broadcast(a, da, out)} {op} {_broadcast(b, db, out)}"), out
            case Call(fn=fn, args=args):
                x, dims = self.ev(args[0], env)
                return self.let(UNARY[fn].format(x)), dims
            case Reduce(kind=kind, dims=rdims, arg=arg):
                x, dims = self.ev(arg, env)
                axes = tuple(dims.index(d) for d in rdims)
                if kind == "softmax":
                    return self.let(f"jax.nn.softmax({x}, axis={axes[0]})"), dims
                fn = "jnp.sum" if kind == "Sum" else "jnp.max"
                return (
                    self.let(f"{fn}({x}, axis={axes})"),
                    tuple(d for d in dims if d not in rdims),
                )
            case CollectiveCall(kind=kind, arg=arg):
                x, dims = self.ev(arg, env)
                layout = self.st.explicit_layout(e.span) if self.st is not None else None
                if layout is None or self.st is None:
                    raise CodegenError(f"no layout known for {kind} at {e.span.line}")
                x = self.let(
                    f"constrain({_transpose(x, dims, layout.dim_names)}, "
                    f"{spec_args(layout)})  # {comment(kind)}"
                )
                return x, layout.dim_names
        raise CodegenError(f"cannot write {type(e).__name__}")


def comment(text: str) -> str:
    """`text` safe inside a `#` comment: one line, no character that ends it.

    >>> print(comment("C = A" + chr(13) + "print(1)"))
    C = A\\rprint(1)
    """
    return repr(str(text))[1:-1]


BINARY_OPS = frozenset({"+", "-", "*", "/"})


def function_name(st: Statement) -> str:
    return f"line{int(st.line)}_{identifier(st.target)}"


def statement_source(st: Statement) -> str:
    """`def lineN_T(inputs...): ...` computing the statement, dims in shardc's order (for the
    backward pass, `backward_source`)."""
    if st.is_backward:
        return backward_source(st)
    w = _Writer(st)
    params = [identifier(x.name) for x in st.inputs]
    env = {x.name: (identifier(x.name), x.dims) for x in st.inputs}
    x, dims = w.ev(st.expr, env)
    result = _transpose(x, dims, st.ours_layout.dim_names)
    head = f"def {function_name(st)}({', '.join(params)}):\n    # {comment(st.text)}\n"
    return head + "\n".join([*w.lines, f"    return {result}"]) + "\n"


def backward_source(st: Statement) -> str:
    """`def lineN_backward(arrays..., seed)`: XLA's own autodiff of the forward statements
    (`jax.vjp` of each statement's function, the forward ones defined beside it, last first),
    from the arrays in the layouts shardc holds them in and the seed; it returns the gradients
    of the declared arrays, in the order of `st.grads`. Contributions to one array are summed."""
    params = [identifier(x.name) for x in st.inputs]
    seed = st.inputs[-1]
    dims = {x.name: x.dims for x in st.inputs}
    cot: dict[str, str] = {st.forward[-1].target: identifier(seed.name)}
    lines = [
        f"def {function_name(st)}({', '.join(params)}):",
        f"    # {comment('XLA differentiates each forward statement (jax.vjp), last first')}",
    ]
    k = 0
    for f in reversed(st.forward):
        if f.target not in cot:
            continue  # does not reach the output
        k += 1
        args = ", ".join(identifier(x.name) for x in f.inputs)
        outs = [f"g{k}_{j}" for j in range(len(f.inputs))]
        lines.append(f"    y{k}, vjp{k} = jax.vjp({function_name(f)}, {args})")
        lines.append(f"    {', '.join(outs)}, = vjp{k}({cot[f.target]}.astype(y{k}.dtype))")
        for x, var in zip(f.inputs, outs, strict=True):
            if x.dtype in ("int8", "int4"):
                continue  # no gradient (float0)
            if x.name in cot:
                lines.append(f"    {var} = {cot[x.name]} + {var}")
            cot[x.name] = var
    results = []
    for g in st.grads:
        if g.name not in cot:
            raise CodegenError(f"XLA's autodiff gives no gradient of {g.name!r}")
        results.append(_transpose(cot[g.name], dims[g.name], g.layout.dim_names))
    lines.append(f"    return ({', '.join(results)},)")
    return "\n".join(lines) + "\n"


def program_source(stmts: list[Statement], name: str = "program") -> str:
    """The statements as one function of the arrays they read before defining them, returning
    the last result: requested layouts become constraints, XLA chooses everything else."""
    if not name.isidentifier() or "__" in name:
        raise CodegenError(f"{name!r} is not a plain identifier")
    w = _Writer(None)
    env: dict[str, tuple[str, tuple[str, ...]]] = {}
    params: list[str] = []
    x = "None"
    for st in stmts:
        if st.is_backward:
            continue  # the forward statements only (the backward pass: `backward_source`)
        w.st = st
        for op in st.inputs:
            if op.name not in env:
                env[op.name] = (identifier(op.name), op.dims)
                params.append(identifier(op.name))
        x, dims = w.ev(st.expr, env)
        want = st.ours_layout.dim_names
        if st.out_layout is not None:
            x = w.let(
                f"constrain({_transpose(x, dims, want)}, "
                f"{spec_args(st.out_layout.reordered(want))})"
            )
        elif dims != want:
            x = w.let(_transpose(x, dims, want))
        env[st.target] = (x, want)
    return "\n".join([f"def {name}({', '.join(params)}):", *w.lines, f"    return {x}"]) + "\n"
