"""The parts the validate pass is built from, each from its own module: sizes with `--set`
applied (`shardc.passes.sizes`), the walk's environment and its diagnostics' helpers
(`.validate_env`), an expression's dtype and dims (`.validate_expr`), mesh axes in a
subscript (`.validate_layout`), the checks of a `Send` (`.validate_send`), the names of
hardware (`.validate`), and conditions in the book's form (`.conditions`). The pass as a whole
is tests/passes/test_validate_pass.py's."""

from __future__ import annotations

import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from shardc.lang.diagnostics import Diagnostics
from shardc.lang.parser import parse
from shardc.lang.source import Source, Span
from shardc.passes.conditions import less_than, separate
from shardc.passes.context import Context
from shardc.passes.sizes import known_sizes, size_of
from shardc.passes.validate import is_hardware_name
from shardc.passes.validate_env import Env, did_you_mean, where
from shardc.passes.validate_expr import check_expr
from shardc.passes.validate_layout import mesh_axes_note, resolve_axes
from shardc.passes.validate_send import check_send


@given(
    st.dictionaries(st.sampled_from("BDFX"), st.none() | st.integers(1, 10**6)),
    st.dictionaries(st.sampled_from("BDFX"), st.integers(1, 10**6) | st.just(0.5)),
)
def test_a_binding_wins_over_the_declared_size(declared, bindings):
    for name in "BDFX":
        got = size_of(name, declared, bindings)
        if name in bindings:
            want = bindings[name]
            assert got == (None if want == 0.5 else want)
        else:
            assert got == declared.get(name)
    sizes = known_sizes(declared.items(), bindings)
    assert list(sizes) == [n for n in declared if n in sizes]  # declaration order
    assert all(v == size_of(n, declared, bindings) for n, v in sizes.items())


def test_the_environment_and_its_helpers():
    env = Env(mesh={"X": 4, "Y": None}, dims={"B": None, "D": 512}, bindings={"B": 64.0})
    assert (env.size("B"), env.size("D"), env.size("X"), env.size("Y")) == (64, 512, 4, None)
    assert did_you_mean("gelo", ["gelu", "silu"]) == "did you mean 'gelu'?"
    assert did_you_mean("zzz", ["gelu", "silu"]) == ""
    assert where(Span.point(3, 1)) == "line 3" and where(0) == "an earlier line"
    assert resolve_axes(("X", "Y"), env) == ("X", "Y")
    assert resolve_axes(("XY",), env) == ("X", "Y")  # `I_XY` is I over X then Y
    assert resolve_axes(("X", "Z"), env) == "Z"
    assert mesh_axes_note(env) == "mesh axes: X, Y"
    assert mesh_axes_note(Env()) == "the mesh declares no axes"


def test_hardware_names():
    assert is_hardware_name("C") and is_hardware_name("C_int8") and is_hardware_name("W_ici")
    assert not is_hardware_name("B") and not is_hardware_name("Cx")


def _send(call: str, mesh: str = "mesh X=4, Y=2") -> tuple[bool, list[str]]:
    text = f"{mesh}\ndim I=8\nA: bf16[I]\nB = {call}(A)\n"
    source = Source("t.shard", text)
    program = parse(source, Diagnostics())
    assert program is not None
    expr = program.statements[-1].expr
    sizes = {"X": 4, "Y": 2, "P": None}
    ctx = Context(source)
    ok = check_send(expr, sizes.get, {a: sizes[a] for a in ("X", "Y", "P") if a in mesh}, ctx)
    return ok, [d.code for d in ctx.diagnostics.items]


@pytest.mark.parametrize(
    ("call", "code"),
    [
        ("Send_{X: 0->3}", None),
        ("Send_{X: +1, Y: -1}", None),
        ("Send_{X: 0->3, Y: 1->0}", None),
        ("Send_{Z: 0->1}", "S001"),
        ("Send_{X: 0->1, X: 1->2}", "C010"),
        ("Send_{X: 0->1, Y: +1}", "C012"),
        ("Send_{X: 0->4}", "C013"),
        ("Send_{X: 2->2}", "C015"),
        ("Send_{X: +4}", "C015"),
    ],
)
def test_the_checks_of_a_send(call, code):
    ok, codes = _send(call)
    assert ok == (code is None) and codes == ([] if code is None else [code])


def test_a_point_send_needs_the_axis_size():
    ok, codes = _send("Send_{P: 0->1}", mesh="mesh X=4, P")
    assert not ok and codes == ["C014"]


I, J, K = sp.symbols("I J K", positive=True, integer=True)  # noqa: E741
C, W = sp.symbols("C W_ici", positive=True)


def test_a_condition_in_the_books_form():
    """T_math > T_comms for the roofline chapter's two-chip example: D/(2X) > C/W_ici."""
    d, x = sp.symbols("D X", positive=True, integer=True)
    rel = separate(2 * I * d * K / (x * C), 4 * I * K / W, lambda s: s in (C, W))
    assert rel == sp.StrictGreaterThan(d / (2 * x), C / W, evaluate=False)


@given(st.integers(1, 50), st.integers(1, 50), st.integers(1, 50))
def test_less_than_decides_as_the_numbers_do(i, j, k):
    for a, b in ((I * (J + K), K * (I + J)), (I * J, I + J), (I + 1, I * J + 1)):
        rel = less_than(a, b)
        point = {I: i, J: j, K: k}
        truth = bool(a.subs(point) < b.subs(point))
        assert (rel if isinstance(rel, bool) else bool(rel.subs(point))) == truth


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ("A ·_J B", ("f32", ("I", "K"))),  # the product's dims; bf16 with f32 promotes
        ("A + S", ("bf16", ("I", "J"))),
        ("exp(A) * S", ("bf16", ("I", "J"))),
        ("Sum_{J}(A)", ("bf16", ("I",))),
        ("A + B", "S010"),
        ("gelo(A)", "N012"),
        ("Q", "N011"),
        ("A ·_K B", "S009"),
    ],
)
def test_an_expressions_dtype_and_dims_or_its_diagnostic(expr, want):
    source = Source("t.shard", f"C = {expr}\n")
    program = parse(source, Diagnostics())
    env = Env(
        mesh={"X": 2},
        mesh_declared=True,
        dims={"I": 8, "J": 8, "K": 8},
        arrays={"A": ("bf16", ("I", "J")), "B": ("f32", ("J", "K")), "S": ("bf16", ("I", "J"))},
    )
    ctx = Context(source)
    got = check_expr(program.statements[0].expr, env, ctx)
    if isinstance(want, tuple):
        assert got is not None and got[1:] == want and not ctx.diagnostics.items
    else:
        assert got is None and [d.code for d in ctx.diagnostics.items] == [want]
