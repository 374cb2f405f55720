"""The documented limits on input (dsl/lang/input_limits.py): a program at each limit compiles,
one past it gets a positioned diagnostic; the capped plan search agrees with the exhaustive one;
line accounting.
"""

from __future__ import annotations

import pytest

from shardc.driver.api import run_pipeline
from shardc.lang.diagnostics import Diagnostics
from shardc.lang.input_limits import MAX_AXES_PER_DIM, MAX_MESH_AXES, MAX_NESTING, MAX_STATEMENTS
from shardc.lang.layout import Layout
from shardc.lang.numeric import MAX_INTEGER
from shardc.lang.parser import parse
from shardc.lang.source import Source
from shardc.passes.einsum_plan import search_plans
from tests.paths import ROOT

HEAD = "mesh X=2\ndim I=8, J=8, K=8\nA: f32[I_X, J]\nB: f32[J, K]\nC: f32[K, J]\n"


def _errors(text: str, stop_after: str | None = None) -> list:
    result = run_pipeline(Source("p.shard", text), stop_after=stop_after)
    return result.diagnostics.errors()


def _one(text: str, code: str, line: int, col: int) -> None:
    errors = _errors(text)
    assert [(d.code, d.span.line, d.span.col) for d in errors] == [(code, line, col)]


def _sum(terms: int) -> str:
    return HEAD + "D = " + " + ".join(["A"] * terms) + "\n"


def _gelu(depth: int) -> str:
    return HEAD + "D = " + "gelu(" * depth + "A" + ")" * depth + "\n"


def _contractions(n: int) -> str:
    terms = ["A"] + ["·_J B" if i % 2 == 0 else "·_K C" for i in range(n - 1)]
    return HEAD + "D = " + " ".join(terms) + "\n"


def _repeats(depth: int) -> str:
    return "mesh X=2\ndim I=8\n" + "repeat 2 {\n" * depth + "A: f32[I_X]\n" + "}\n" * depth


# ---- nesting ----------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [_sum, _contractions], ids=["sum", "contractions"])
def test_a_chain_of_max_nesting_operators_compiles(make) -> None:
    assert _errors(make(MAX_NESTING + 1)) == []


def test_nested_calls_at_the_limit_compile_and_differentiate() -> None:
    assert _errors(_gelu(MAX_NESTING)) == []
    text = (
        "mesh X=2\ndim I=8, J=8\nparam W: f32[I_X, J]\nC[I_X, J] = "
        + "gelu(" * MAX_NESTING
        + "W"
        + ")" * MAX_NESTING
        + "\nbackward\n"
    )
    assert _errors(text) == []


def test_one_operator_past_the_limit_points_at_the_innermost() -> None:
    # 102 terms: 101 `+`; the leftmost is the innermost, level 101.
    _one(_sum(MAX_NESTING + 2), "P012", 6, 7)
    _one(_gelu(MAX_NESTING + 1), "P012", 6, 5 + 5 * MAX_NESTING)


def test_repeat_blocks_at_and_past_the_limit() -> None:
    assert _errors(_repeats(MAX_NESTING)) == []
    _one(_repeats(MAX_NESTING + 1), "P012", 3 + MAX_NESTING, 1)


def test_a_deep_repeat_count_is_refused() -> None:
    text = "mesh X=2\ndim I=8\nrepeat " + " + ".join(["1"] * (MAX_NESTING + 2)) + " {\n"
    _one(text + "A: f32[I_X]\n}\n", "P012", 3, 10)


def test_far_past_the_limit_is_still_a_diagnostic() -> None:
    _one(_gelu(5000), "P012", 6, 5 + 5 * MAX_NESTING)
    _one(_sum(3000), "P012", 6, 7 + 4 * (3000 - MAX_NESTING - 2))


# ---- sizes, mesh axes -------------------------------------------------------------------------


def test_literal_sizes_up_to_max_integer() -> None:
    assert _errors(f"mesh X=2\ndim I={MAX_INTEGER}\n", stop_after="validate") == []
    _one(f"mesh X=2\ndim I={MAX_INTEGER + 1}\n", "P011", 2, 7)
    _one("mesh X=" + "9" * 5000 + "\n", "P011", 1, 8)
    _one("mesh X=2\ndim I=8\nrepeat " + "9" * 400 + " {\nA: f32[I_X]\n}\n", "P011", 3, 8)


def test_mesh_axes_at_and_past_the_limit() -> None:
    def mesh(n: int) -> str:
        return "mesh " + ", ".join(f"M{i}=2" for i in range(n)) + "\ndim I=8\nA: f32[I_M0]\n"

    assert _errors(mesh(MAX_MESH_AXES)) == []
    col = len("mesh ") + sum(len(f"M{i}=2, ") for i in range(MAX_MESH_AXES)) + 1
    _one(mesh(MAX_MESH_AXES + 1), "S011", 1, col)


def test_axes_per_dim_at_and_past_the_limit() -> None:
    def layout(n: int) -> str:
        axes = [f"M{i}" for i in range(n)]
        return (
            f"mesh {', '.join(a + '=2' for a in axes)}\ndim I={2**n}, J={2**n}, K=4\n"
            f"A: f32[I, J_{{{','.join(axes)}}}]\nB: f32[J, K]\nC[I, K] = A ·_J B\n"
        )

    assert _errors(layout(MAX_AXES_PER_DIM)) == []
    _one(layout(MAX_AXES_PER_DIM + 1), "S012", 3, 13)


# ---- program size -----------------------------------------------------------------------------


def test_statements_at_and_past_the_limit() -> None:
    head = "mesh X=2\ndim I=8\n"
    at = head + "".join(f"A{i}: f32[I_X]\n" for i in range(MAX_STATEMENTS - 2))
    diags = Diagnostics()
    assert parse(Source("p", at), diags) is not None and not diags.items
    _one(at + "B: f32[I_X]\n", "P013", MAX_STATEMENTS + 1, 1)
    # `;` separates statements too; comments and blank lines are not statements.
    semis = head + "# c\n\n" + "; ".join(["Z: f32[I]"] * (MAX_STATEMENTS - 1)) + "\n"
    _one(semis, "P013", 5, 11 * (MAX_STATEMENTS - 2) + 1)


def test_a_source_over_the_byte_limit() -> None:
    text = "mesh X=2\n# " + "x" * (4 * 2**20) + "\n"
    assert [d.code for d in _errors(text)] == ["P013"]


# ---- line accounting --------------------------------------------------------------------------


@pytest.mark.parametrize("comment", ["a\x0cb", "a\u2028b\u2029c\x85d\x1ce", "a\x0bb"])
def test_separators_in_comments_do_not_shift_quoted_lines(comment: str) -> None:
    source = Source("p.shard", f"mesh X=2 # {comment}\ndim I=8\nA: f32[I_Q]\n")
    result = run_pipeline(source)
    [d] = result.diagnostics.errors()
    assert (d.code, d.span.line) == ("S001", 3)
    assert "\n  A: f32[I_Q]\n" in d.render(source)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_every_newline_convention_counts_lines_alike(newline: str) -> None:
    source = Source("p.shard", newline.join(["mesh X=2", "dim I=8", "A: f32[I_Q]", ""]))
    [d] = run_pipeline(source).diagnostics.errors()
    assert d.span.line == 3 and source.line_text(3) == "A: f32[I_Q]"


# ---- the plan search --------------------------------------------------------------------------


def _objective(p) -> tuple:
    # A stand-in for the compiler's cost: collectives first, then the axes they run over.
    return (len(p.collectives), sum(len(s.axes) for _, s in p.collectives))


@pytest.mark.parametrize("n", [6, 7, 8])
@pytest.mark.parametrize("split", [0, 2, 3])
def test_local_search_finds_the_exhaustive_best(n: int, split: int) -> None:
    axes = tuple(f"M{i}" for i in range(n))
    lhs = Layout.of({"I": axes[:split], "J": axes[split:]})
    rhs = Layout.of({"J": axes[split:][:1], "K": ()})
    args = (lhs, rhs, ("J",), ("I", "K"), None, axes, lambda d, a: True, False, None, _objective)
    full = search_plans(*args)
    local = search_plans(*args, limit=1)
    assert not full.capped and local.capped and local.tried < full.space
    assert _objective(local.ranked[0]) == _objective(full.ranked[0])
    assert "search capped" in local.note()


def test_a_size_one_axis_moves_no_data() -> None:
    text = "mesh X=1, Y=2\ndim I=8, J=8\nA: f32[I_X, J]\nB[I, J_X] = A\n"
    result = run_pipeline(Source("p.shard", text))
    assert not result.diagnostics.has_errors
    assert [op.kind for op in result.compiled.ops if hasattr(op, "kind")] == []


@pytest.mark.parametrize(
    "name", ["mlp-fsdp-tp-train", "attention-gqa-train", "moe-expert-parallel-train"]
)
def test_local_search_compiles_programs_as_the_exhaustive_search_does(name, monkeypatch) -> None:
    import shardc.passes.einsum_plan as einsum_plan

    text = (ROOT / "programs" / f"{name}.shard").read_text()

    def ops() -> list:
        compiled = run_pipeline(Source(name, text)).compiled
        return [
            (type(o).__name__, getattr(o, "op", None), getattr(o, "axes", None))
            for o in compiled.ops
        ]

    full = ops()
    monkeypatch.setattr(einsum_plan.search_plans, "__defaults__", (1,))
    assert ops() == full
