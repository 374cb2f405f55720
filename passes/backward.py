"""The `derive-backward` pass: a `backward` statement becomes the backward pass of the statements
above it, written as ordinary statements (the training chapter's Appendix B), so the four cases
insert its collectives.

Rules: for C = A ·_K B, dA = dC ·_(dims of B not in A) B and dB = A ·_(dims of A not in B) dC;
for Y = f(X), dX = dY * f'(X); for +, - and * the usual ones. A parameter's gradient dW is
requested in W's layout ("sharded like its parameter"): under data parallelism that makes the
contraction over the sharded batch end in an AllReduce, under FSDP in a ReduceScatter. The seed
d<Out> is an input with the layout of the forward pass's last result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shardc.lang.layout import Layout
from shardc.lang.send import is_shift
from shardc.lang.source import Span
from shardc.lang.syntax import (
    ArrayDecl,
    Assign,
    Backward,
    Binary,
    Call,
    CollectiveCall,
    Contract,
    Expr,
    Program,
    Reduce,
    Ref,
    Stmt,
    Times,
)
from shardc.passes.context import Context
from shardc.passes.ir import gradient_name

DERIVATIVES = {
    "gelu": "gelu_grad",
    "silu": "silu_grad",
    "relu": "relu_grad",
    "sigmoid": "sigmoid_grad",
    "tanh": "tanh_grad",
    "exp": "exp",
    "square": "square_grad",
}
"""f -> the elementwise function computing f'(x); `neg` and `copy` are linear."""


@dataclass(frozen=True, slots=True)
class _Renamed:
    """A gradient contribution in the dims of a renamed use (`In[T->S]`), to be named back
    (`back`: the renames that undo the use's) before it is added to the array's gradient."""

    expr: Expr
    back: tuple[tuple[str, str], ...]


def named_back(operand: Expr, contribution: Expr) -> Expr:
    """`contribution` as it is, or wrapped to be renamed back when `operand` renames dims."""
    if isinstance(operand, Ref) and operand.renames:
        undo = tuple((new, old) for old, new in operand.renames)
        return _Renamed(contribution, undo)  # type: ignore[return-value]
    return contribution


def derive_backward(program: Program, ctx: Context) -> Program:
    """Run the `derive-backward` pass (the program is returned as is without `backward`).

    The pipeline's `derive-backward` step (passes/pipeline.py) keeps the `backward` statement's
    line, `backward_line(program)`, and the compiled program carries it."""
    return _Deriver(ctx).run(program)


def backward_line(program: Program) -> int | None:
    """The line of a surface program's `backward` statement, if any."""
    return next((s.span.line for s in program.statements if isinstance(s, Backward)), None)


@dataclass
class _Array:
    dims: tuple[str, ...]
    dtype: str
    layout: Layout | None  # None: inferred by the compiler
    param: bool = False
    declared: bool = False
    times: Times = ()
    """The `repeat` blocks around the statement defining it."""


@dataclass
class _Deriver:
    ctx: Context
    arrays: dict[str, _Array] = field(default_factory=dict)
    out: list[Stmt] = field(default_factory=list)
    counter: int = 0
    failed: bool = False
    times: Times = ()
    """The `repeat` blocks of the statement being normalized or differentiated: statements
    emitted for it run as often as it does."""

    def run(self, program: Program) -> Program:
        marks = [i for i, s in enumerate(program.statements) if isinstance(s, Backward)]
        if not marks:
            return program
        if len(marks) > 1:
            self.ctx.diagnostics.error(
                "K010",
                "a program has at most one `backward` statement",
                program.statements[marks[1]].span,
            )
            return program
        at = marks[0]
        forward: list[Stmt] = []
        for stmt in program.statements[:at]:
            forward.extend(self.normalize(stmt))
        span = program.statements[at].span
        assigns = [s for s in forward if isinstance(s, Assign)]
        if not assigns:
            self.ctx.diagnostics.error(
                "K011", "`backward` has no forward computation above it", span
            )
            return program
        self.out = list(forward)
        self.derive(assigns, span)
        if self.failed:
            return program
        return Program(tuple(self.out) + tuple(program.statements[at + 1 :]), program.repeats)

    # ---- the forward pass, one op per statement ----------------------------------------------
    def normalize(self, stmt: Stmt) -> list[Stmt]:
        match stmt:
            case ArrayDecl(name=name, dtype=dtype, layout=layout, param=param):
                self.arrays[name] = _Array(layout.dim_names, dtype, layout, param, True, stmt.times)
                return [stmt]
            case Assign(target=target, layout=layout, expr=expr):
                self.times = stmt.times
                hoisted: list[Stmt] = []
                top = self.flat(expr, hoisted, top=True)
                dims, dtype = self.type_of(top)
                if layout is not None:
                    dims = layout.dim_names
                self.arrays[target] = _Array(dims, dtype, layout, times=stmt.times)
                return [
                    *hoisted,
                    Assign(target, layout, top, stmt.span, stmt.target_span, stmt.times),
                ]
        return [stmt]

    def flat(self, e: Expr, hoisted: list[Stmt], top: bool = False) -> Expr:
        """`e` with every nested operation hoisted into its own statement (named as reports
        name intermediates: `gelu(Tmp)`, `A·B`)."""
        new: Expr
        match e:
            case Ref(name=name, layout=layout):
                if layout is not None and name not in self.arrays:
                    self.arrays[name] = _Array(layout.dim_names, "bf16", layout, False, True)
                return e
            case Contract(lhs=lhs, rhs=rhs, dims=dims):
                new = Contract(
                    self.operand(lhs, hoisted),
                    self.operand(rhs, hoisted),
                    dims,
                    e.span,
                    e.dims_span,
                )
            case Binary(op=op, lhs=lhs, rhs=rhs):
                new = Binary(op, self.operand(lhs, hoisted), self.operand(rhs, hoisted), e.span)
            case Call(fn=fn, args=args):
                new = Call(fn, tuple(self.operand(a, hoisted) for a in args), e.span)
            case CollectiveCall(kind=kind, axes=axes, dim=dim, arg=arg):
                inner = (
                    arg
                    if isinstance(arg, Contract) and kind in ("AllReduce", "ReduceScatter")
                    else None
                )
                if inner is not None:  # AllReduce_X(A ·_J B) keeps its product's partial sums
                    arg2: Expr = Contract(
                        self.operand(inner.lhs, hoisted),
                        self.operand(inner.rhs, hoisted),
                        inner.dims,
                        inner.span,
                        inner.dims_span,
                    )
                else:
                    arg2 = self.operand(arg, hoisted)
                new = CollectiveCall(kind, axes, dim, arg2, e.span, e.sub_span, e.send)
            case Reduce(kind=kind, dims=dims, arg=arg):
                new = Reduce(kind, dims, self.operand(arg, hoisted), e.span, e.sub_span)
        return new

    def operand(self, e: Expr, hoisted: list[Stmt]) -> Ref:
        if isinstance(e, Ref):
            return self.flat(e, hoisted)  # type: ignore[return-value]
        flat = self.flat(e, hoisted)
        name = self.temp_name(flat)
        dims, dtype = self.type_of(flat)
        self.arrays[name] = _Array(dims, dtype, None, times=self.times)
        hoisted.append(Assign(name, None, flat, e.span, e.span, self.times))
        return Ref(name, None, e.span)

    def temp_name(self, e: Expr) -> str:
        """A name for a hoisted value, an identifier so that tools such as export-jax can use
        it: `gelu_Tmp`, `In_W_in`, `A_plus_B`."""
        match e:
            case Call(fn=fn, args=(Ref(name=a),)):
                base = f"{fn}_{a}"
            case Contract(lhs=Ref(name=a), rhs=Ref(name=b)):
                base = f"{a}_{b}"
            case Binary(op=op, lhs=Ref(name=a), rhs=Ref(name=b)):
                base = f"{a}_{ {'+': 'plus', '-': 'minus', '*': 'times'}[op] }_{b}"
            case _:
                base = "t"
        name, k = base, 1
        while name in self.arrays:
            k += 1
            name = f"{base}_{k}"
        return name

    def type_of(self, e: Expr) -> tuple[tuple[str, ...], str]:
        from shardc.lang.dtypes import promote
        from shardc.passes.einsum_plan import output_dims

        match e:
            case Ref(name=name, layout=layout):
                a = self.arrays[name]
                dims = layout.dim_names if layout is not None else e.used_dims(a.dims)
                return dims, a.dtype
            case Contract(lhs=lhs, rhs=rhs, dims=dims):
                (ld, lt), (rd, rt) = self.type_of(lhs), self.type_of(rhs)
                return output_dims(ld, rd, dims), promote(lt, rt)
            case Binary(lhs=lhs, rhs=rhs):
                (ld, lt), (rd, rt) = self.type_of(lhs), self.type_of(rhs)
                return (ld if set(rd) <= set(ld) else rd), promote(lt, rt)
            case Call(args=args):
                return self.type_of(args[0])
            case CollectiveCall(arg=arg):
                return self.type_of(arg)
            case Reduce(kind=kind, dims=rdims, arg=arg):
                dims, dtype = self.type_of(arg)
                if kind == "Broadcast":
                    return rdims, dtype
                return (
                    dims if kind == "softmax" else tuple(d for d in dims if d not in rdims)
                ), dtype
        raise AssertionError(e)

    # ---- the backward pass -------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        self.counter += 1
        name = f"{base}_{self.counter}"
        while name in self.arrays:
            self.counter += 1
            name = f"{base}_{self.counter}"
        return name

    def grad_name(self, x: str) -> str:
        name = gradient_name(x)
        while name in self.arrays:
            name = gradient_name(name)
        return name

    def emit(
        self, name: str, expr: Expr, span: Span, layout: Layout | None = None, partial: bool = False
    ) -> Ref:
        dims, dtype = self.type_of(expr)
        if layout is not None:
            dims = layout.dim_names
        self.arrays[name] = _Array(dims, dtype, layout, times=self.times)
        self.out.append(Assign(name, layout, expr, span, span, self.times, partial))
        return Ref(name, None, span)

    def unrename(self, e: Expr, name: str, span: Span, partial: bool) -> Expr:
        """A contribution computed in a renamed use's dims (`In[T->S]`), named back: the
        product becomes a statement and the term reads it with the renames undone."""
        if not isinstance(e, _Renamed):
            return e
        inner = e.expr
        if isinstance(inner, Ref) and not inner.renames:
            return Ref(inner.name, None, span, e.back)
        tmp = self.emit(
            self.fresh(gradient_name(name)),
            inner,
            span,
            self.term_layout(name, inner, e.back) if partial else None,
            partial=partial,
        )
        return Ref(tmp.name, None, span, e.back)

    def term_layout(
        self, name: str, e: Expr, back: tuple[tuple[str, str], ...] = ()
    ) -> Layout | None:
        """The layout one product of a sum of contributions to d<name> is planned for: the
        gradient's own (in the use's dims, for a renamed use), so that the term's product is
        ranked as the sum is reduced, by a ReduceScatter to a sharded gradient rather than an
        AllReduce, and a term whose alternative is to gather its operands (GQA's keys and
        values, a few KV heads a rank) keeps its partial sums as Megatron-LM's backward pass
        does. None where the gradient has no layout or the product is not a contraction."""
        lay = self.grad_layout(name)
        if lay is None or not isinstance(e, Contract):
            return None
        if back:
            lay = lay.renamed({old: new for new, old in back})
        if set(self.type_of(e)[0]) != set(lay.dim_names):
            return None
        return lay

    def derive(self, assigns: list[Assign], span: Span) -> None:
        last = assigns[-1]
        out = self.arrays[last.target]
        if out.layout is None:
            self.ctx.diagnostics.error(
                "K012",
                f"the forward pass ends in {last.target!r}, whose layout is inferred; "
                "`backward` needs it to give the incoming gradient a layout",
                last.target_span,
                notes=(f"write the layout on the left: {last.target}[...] = ...",),
            )
            self.failed = True
            return
        seed = self.grad_name(last.target)
        self.arrays[seed] = _Array(out.dims, out.dtype, out.layout, False, True, last.times)
        self.out.append(ArrayDecl(seed, out.dtype, out.layout, span, span, times=last.times))
        # Each contribution to a gradient runs as often as the statement it comes from (a
        # layer's dIn once per layer); a sum of several, as often as the array it is for.
        parts: dict[str, list[tuple[Expr, Times]]] = {
            last.target: [(Ref(seed, None, span), last.times)]
        }
        done: dict[str, Ref] = {last.target: Ref(seed, None, span)}

        def grad_of(name: str) -> Ref | None:
            """Sum the contributions to d<name>; a single product is computed straight into
            the gradient's layout, so a sharded parameter gets a ReduceScatter, not an
            AllReduce and a slice."""
            if name in done:
                return done[name]
            exprs = parts.get(name)
            if not exprs:
                return None
            if len(exprs) == 1:
                e, self.times = exprs[0]
                e = self.unrename(e, name, span, partial=False)
                if isinstance(e, Ref) and not self.needs_layout(name):
                    total = e
                else:
                    total = self.emit(self.grad_name(name), e, span, self.grad_layout(name))
            else:
                refs = []
                for e, self.times in exprs:
                    # Each term may stay a partial sum: the sum is reduced once, to the
                    # gradient's layout (Megatron-LM's one reduction per branch point).
                    e = self.unrename(e, name, span, partial=True)
                    refs.append(
                        e
                        if isinstance(e, Ref)
                        else self.emit(
                            self.fresh(gradient_name(name)),
                            e,
                            span,
                            self.term_layout(name, e),
                            partial=True,
                        )
                    )
                expr: Expr = refs[0]
                for r in refs[1:]:
                    expr = Binary("+", expr, r, span)
                self.times = self.arrays[name].times
                total = self.emit(self.grad_name(name), expr, span, self.grad_layout(name))
            done[name] = total
            return total

        for stmt in reversed(assigns):
            g = grad_of(stmt.target)
            if g is None:
                continue  # does not reach the output
            self.times = stmt.times
            for name, contribution in self.rules(stmt.expr, g, span, Ref(stmt.target, None, span)):
                if self.failed:
                    return
                parts.setdefault(name, []).append((contribution, stmt.times))
        # Parameters, and declared inputs: a block sits in a stack, so its input's gradient
        # dIn is part of its backward pass (the training chapter's Appendix B).
        for name, a in list(self.arrays.items()):
            if (a.param or a.declared) and name in parts and name != seed:
                grad_of(name)

    def needs_layout(self, name: str) -> bool:
        a = self.arrays.get(name)
        return a is not None and (a.param or a.declared or a.layout is not None)

    def grad_layout(self, name: str) -> Layout | None:
        a = self.arrays.get(name)
        if a is None or a.layout is None:
            return None
        return a.layout.with_unreduced(frozenset())

    def rules(
        self, e: Expr, g: Ref, span: Span, result: Ref | None = None
    ) -> list[tuple[str, Expr]]:
        """(array, contribution to its gradient) for one forward op with output gradient g;
        `result` is the op's own result where the statement assigns it (exp's slope is its value,
        so the backward pass reads the result instead of computing exp again from the input:
        an attention step keeps the probabilities, not the scores as well)."""
        match e:
            case Ref(name=name):
                return [(name, named_back(e, g))]
            case Contract(lhs=Ref(name=a) as lhs, rhs=Ref(name=b) as rhs):
                ad, bd = self.type_of(lhs)[0], self.type_of(rhs)[0]
                out: list[tuple[str, Expr]] = []
                if self.wants(a):
                    k = tuple(d for d in bd if d not in ad)
                    p = self.product(g, rhs, k, ad, span, a)
                    if p is not None:
                        out.append((a, named_back(lhs, p)))
                if self.wants(b):
                    k = tuple(d for d in ad if d not in bd)
                    p = self.product(lhs, g, k, bd, span, b)
                    if p is not None:
                        out.append((b, named_back(rhs, p)))
                return out
            case Binary(op=op, lhs=Ref(name=a) as lhs, rhs=Ref(name=b) as rhs):
                ld, rd = self.type_of(lhs)[0], self.type_of(rhs)[0]
                if set(ld) != set(rd):
                    return self.broadcast_rules(op, lhs, rhs, ld, rd, g, span)
                if op == "+":
                    return [(a, named_back(lhs, g)), (b, named_back(rhs, g))]
                if op == "-":
                    return [(a, named_back(lhs, g)), (b, named_back(rhs, Call("neg", (g,), span)))]
                return [
                    (a, named_back(lhs, Binary("*", g, rhs, span))),
                    (b, named_back(rhs, Binary("*", g, lhs, span))),
                ]
            case Call(fn=fn, args=(Ref(name=x) as arg,)):
                if fn in ("copy",):
                    return [(x, named_back(arg, g))]
                if fn == "neg":
                    return [(x, named_back(arg, Call("neg", (g,), span)))]
                if fn == "exp" and result is not None:
                    return [(x, named_back(arg, Binary("*", g, result, span)))]
                if fn not in DERIVATIVES:
                    self.unsupported(f"the derivative of {fn}", span)
                    return []
                slope = self.emit(
                    self.fresh(f"{DERIVATIVES[fn]}_{x}"), Call(DERIVATIVES[fn], (arg,), span), span
                )
                return [(x, named_back(arg, Binary("*", g, slope, span)))]
            case Reduce(kind="softmax", dims=dims, arg=Ref(name=x) as arg) if result is not None:
                # dA = P * (g - Sum_S(g * P)), P the softmax's own result
                gp = self.emit(self.fresh(f"softmax_grad_{x}"), Binary("*", g, result, span), span)
                total = self.emit(
                    self.fresh(f"softmax_grad_{x}"), Reduce("Sum", dims, gp, span, span), span
                )
                centred = self.emit(
                    self.fresh(f"softmax_grad_{x}"), Binary("-", g, total, span), span
                )
                return [(x, named_back(arg, Binary("*", result, centred, span)))]
            case Reduce(kind="Sum", arg=Ref(name=x) as arg):
                # d Sum_D(A) = dOut copied along D
                whole = self.type_of(arg)[0]
                return [(x, named_back(arg, Reduce("Broadcast", whole, g, span, span)))]
            case Reduce(kind="Max", arg=Ref(name=x) as arg) if result is not None:
                # dA = dOut copied along D where A is the maximum, 0 elsewhere: the mask
                # max_mask(A - Max_D(A)) is 1 where the difference is 0. Ties each get the
                # whole gradient (jax.grad splits it among them); the cost is the same.
                diff = self.emit(self.fresh(f"max_grad_{x}"), Binary("-", arg, result, span), span)
                mask = self.emit(self.fresh(f"max_grad_{x}"), Call("max_mask", (diff,), span), span)
                return [(x, named_back(arg, Binary("*", mask, g, span)))]
            case Reduce(kind=kind, dims=dims):
                self.unsupported(f"the gradient of {kind}_{{{','.join(dims)}}}", span)
                return []
            case CollectiveCall(kind="Send", send=send, arg=arg) if is_shift(send):
                # A shift by +k moves each block k devices on; its gradient moves the
                # gradient's blocks back by -k (a pipeline sends gradients to earlier stages).
                back = tuple(m.reversed() for m in send)
                return [
                    (
                        x,
                        CollectiveCall(
                            "Send", tuple(m.axis for m in back), None, c, span, span, back
                        ),
                    )
                    for x, c in self.rules(arg, g, span)
                ]
            case CollectiveCall(arg=arg):
                # A collective moves or sums values without changing what they are: its
                # gradient passes through (the compiler inserts the dual collective; a
                # point-to-point copy of a block every device has the like of is the identity).
                return self.rules(arg, g, span)
        self.unsupported("this expression", span)
        return []

    def broadcast_rules(
        self,
        op: str,
        lhs: Ref,
        rhs: Ref,
        ld: tuple[str, ...],
        rd: tuple[str, ...],
        g: Ref,
        span: Span,
    ) -> list[tuple[str, Expr]]:
        """`A[B, D] op b[D]`: the larger operand's gradient as for equal dims; the smaller one's
        summed over the dims it lacks (it was copied along them)."""
        small_is_lhs = set(ld) < set(rd)
        extra = tuple(
            d for d in (rd if small_is_lhs else ld) if d not in (ld if small_is_lhs else rd)
        )

        def term(for_lhs: bool) -> Expr:
            if op == "*":
                return Binary("*", g, rhs if for_lhs else lhs, span)
            if op == "-" and not for_lhs:
                return Call("neg", (g,), span)
            return g

        out: list[tuple[str, Expr]] = []
        for operand, for_lhs in ((lhs, True), (rhs, False)):
            t = term(for_lhs)
            if for_lhs == small_is_lhs:
                t = Reduce("Sum", extra, t, span, span)
            out.append((operand.name, named_back(operand, t)))
        return out

    def wants(self, name: str) -> bool:
        return name in self.arrays

    def product(
        self, x: Ref, y: Ref, k: tuple[str, ...], dims: tuple[str, ...], span: Span, target: str
    ) -> Expr | None:
        if not k:
            self.unsupported(
                f"the gradient of {target!r}: an outer product has no contracted "
                "dims to write it with",
                span,
            )
            return None
        return Contract(x, y, k, span, span)

    def unsupported(self, what: str, span: Span) -> None:
        self.ctx.diagnostics.error(
            "K013",
            f"`backward` cannot derive {what}",
            span,
            notes=(
                "supported: contractions, + - * (a broadcast operand's "
                "gradient summed back), Sum_{D}, Max_{D}, softmax_{S}, and "
                "gelu silu relu sigmoid tanh exp square neg copy",
            ),
        )
        self.failed = True
