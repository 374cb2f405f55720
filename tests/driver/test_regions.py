"""Symbolic answers equal numeric answers: a report compiled with sizes left symbolic, evaluated
at a point (`Report.at`), runs the same collectives with the same bytes and gives the same totals
as compiling with those sizes bound; and the regions a decision lists are where its plans win."""

from __future__ import annotations

import functools
import json
import os

import pytest
import sympy as sp
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import shardc
from shardc.cli.app import main
from shardc.driver import decision_regions
from shardc.driver.boundaries import boundaries
from shardc.passes.symbolic_plans import AtPoint, Candidate, RegionFinder, plan_key, winners
from shardc.testing.strategies import programs

EXAMPLES = int(os.environ.get("SHARDC_REGION_EXAMPLES", "150"))

FSDP = """mesh X
dim B, D=8192, F=32768
hardware tpu-v5p
In: bf16[B_X, D]
param W_in: bf16[D_X, F]
param W_out: bf16[F, D_X]
Tmp[B_X, F] = In ·_D W_in
Out[B_X, D] = Tmp ·_F W_out
backward
"""


@functools.cache
def fsdp16(**options: str) -> shardc.Report:
    """The FSDP step compiled at X=16 with `options`, once per module: the tests below read the
    report and never change it."""
    return shardc.compile(FSDP, set={"X": 16}, **options)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """`shardc ARGS` in this process: its stdout (the command must succeed)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_a_decisions_regions_in_words():
    """Each contraction of the FSDP step has two regions, split where its own plans cross
    (`shardc.driver.decision_regions`): gather the weight above B = 7659.4, move activations
    below; the larger share first."""
    r = fsdp16(objective="statement")
    first = r.decisions[0]
    regions = decision_regions.regions(first)
    assert [decision_regions.region_text(g) for g in regions] == ["B > 7659.4", "B < 7659.4"]
    assert regions[0].share > regions[1].share
    assert decision_regions.candidate_text(first, regions[0].order) == (
        "AllGather_X(W_in), local einsum"
    )


def collectives(r):
    return [(c.op, c.axes, c.array, c.src, c.dst) for c in r.ops if c.kind == "collective"]


def assert_same(symbolic, numeric):
    assert collectives(symbolic) == collectives(numeric)
    for a, b in zip(symbolic.ops, numeric.ops, strict=True):
        assert symbolic.value(a.comm_bytes) == numeric.value(b.comm_bytes)
    for name in numeric.totals:
        want, got = numeric.value(name), symbolic.value(name)
        if want is None:
            assert got is None, name
        else:
            assert got == pytest.approx(want, rel=1e-9, abs=0), name


@pytest.mark.parametrize("b", [512, 4096, 7008, 8000, 40800, 60000, 1 << 20])
def test_the_fsdp_step_at_a_batch_is_the_compile_at_it(b):
    """The issue's example: with B symbolic the default plan gathers activations; at a large
    batch the compile gathers the weights, and so must the symbolic report evaluated there."""
    r = fsdp16()
    assert_same(r.at(B=b), shardc.compile(FSDP, set={"X": 16, "B": b}))


STRATEGY = dict(
    prog=programs(symbolic=True),
    hw=st.sampled_from([None, "tpu-v5e", "h100"]),
    model=st.sampled_from(["exact", "book"]),
    scales=st.lists(
        st.lists(st.integers(1, 1 << 14), min_size=4, max_size=4), min_size=5, max_size=5
    ),
)


def assert_totals_at(symbolic, point, numeric):
    """The default report's totals (piecewise over its regions) at `point` are the compile's:
    `value` of a total at a point takes the plans a compile there chooses."""
    for name in numeric.totals:
        want, got = numeric.value(name), symbolic.value(name, **point)
        if want is None:
            continue  # a hardware symbol without a number: nothing to compare
        assert got == pytest.approx(want, rel=1e-9, abs=0), (name, point)


def check_point(prog, hw, model, scales):
    """Compile with the symbolic sizes left symbolic, then at five points: `at` must give what
    compiling at the point gives, and so must the default report's totals evaluated there
    (piecewise over the regions where plans depend on the sizes)."""
    text, sizes = prog
    assume(sizes)
    try:
        r = shardc.compile(text, hw=hw, model=model)
    except shardc.CompileError as exc:  # a mesh the chip cannot hold (H016): not this property
        assume(not all(d.code.startswith("H") for d in exc.diagnostics))
        raise
    check_report(r, text, sizes, hw, model, scales)


def check_report(r, text, sizes, hw, model, scales):
    for v in r.regions() or ():  # exact boundaries: no float in a region's relation
        for b in boundaries(r, v):
            assert not b.relation.atoms(sp.Float), b.relation
            if b.value is not None and b.value.is_number:
                assert isinstance(b.value, sp.Rational)
    for row in scales:
        point = {d: s * k for (d, s), k in zip(sorted(sizes.items()), row, strict=False)}
        numeric = shardc.compile(text, hw=hw, model=model, set=point)
        assert_same(r.at(**point), numeric)
        assert_totals_at(r, point, numeric)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(**STRATEGY)
@example(
    prog=(
        "mesh X=1, Y=2\ndim I=2, J, K, L=2\nOut = In[I_XY, J] ·_J W1[J_XY, K] *_K W2[K_XY, L]\n",
        {"K": 2, "J": 2},
    ),
    hw=None,
    model="exact",
    scales=[[1, 1, 1, 1], [1, 3, 1, 1]],
)
@example(  # L left symbolic and unused: the compile runs the whole program's search
    prog=(
        "mesh X=2\ndim I=2, J=2, K=4, L\nA: bf16[I_X, J]\nB: bf16[J, K_X]\nC = A ·_J B\n"
        "D[I_X, K] = C\nE = gelu(D) * D\n",
        {"L": 2},
    ),
    hw="tpu-v5e",
    model="exact",
    scales=[[1, 1, 1, 1]],
)
def test_symbolic_at_a_point_equals_compiling_at_it(prog, hw, model, scales):
    """The example: a chain in one statement with sizes the program leaves symbolic is planned
    one product at a time, also where `set` binds them (a joint plan there differed from
    `at`'s)."""
    check_point(prog, hw, model, scales)


@pytest.mark.parametrize("model", ["exact", "book"])
def test_the_training_step_on_a_2x3x1_mesh_at_tiny_sizes(model):
    """The draw that stopped the property after the regions-by-default merge (T_comms 8.0 us
    against 6.0 at I=K=6): the default report, `at` and `value` at the point are the compile's,
    Megatron-SP's re-gathers and T_expected included."""
    prog = (
        "mesh X=2, Y=3, Z=1\ndim I, J=6, K, L=6\nIn: bf16[I, J]\n"
        "param W1: bf16[J_ZX, K]\nparam W2: bf16[K_ZX, J]\nTmp[I, K] = In ·_J W1\n"
        "Out[I_X, J] = gelu(Tmp) ·_K W2\nbackward\n",
        {"I": 6, "K": 6},
    )
    text, sizes = prog
    check_report(
        shardc.compile(text, hw="tpu-v5e", model=model),
        text,
        sizes,
        "tpu-v5e",
        model,
        [[1, 1, 1, 1], [1, 2, 1, 1], [3, 1, 1, 1]],
    )


@pytest.mark.slow
@settings(
    max_examples=10_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(**STRATEGY)
def test_symbolic_at_a_point_equals_compiling_at_it_10000(prog, hw, model, scales):
    check_point(prog, hw, model, scales)


def test_a_plan_whose_shards_do_not_divide_at_the_point_is_not_run_there():
    """A CI draw: at J=2 or 4 and K=1, the report at the point ran dW2's AllToAll of
    `gelu_Tmp` onto `K_ZY` (K=1 over Y=3), a plan the compile there cannot run
    (`symbolic_plans.divides`)."""
    text = (
        "mesh X=2, Y=3, Z=1\ndim I=6, J, K, L\nIn: bf16[I_XY, J]\nparam W1: bf16[J, K_Z]\n"
        "param W2: bf16[K, J_ZX]\nTmp = In ·_J W1\nOut[I_X, J_Z] = gelu(Tmp) ·_K W2\nbackward\n"
    )
    r = shardc.compile(text, model="exact")
    check_report(r, text, {"J": 2, "K": 1, "L": 1}, None, "exact", [[1, 1, 1, 1], [2, 1, 1, 1]])


def test_a_gathered_copy_is_read_alike_at_the_point_and_in_the_compile():
    """A draw (h100 at K=4; here without a chip at K=2): the compile with K bound read dW1's
    `dTmp` from the copy dIn's product gathered, the report at K from dTmp's own layout (one
    more AllGather of dW1): with K left symbolic by the program, both read the operand as it
    is (`contract.cached_operands`)."""
    text = (
        "mesh X=2, Y=1, Z=1\ndim I=4, J=2, K, L=2\nIn: bf16[I, J_YZ]\nparam W1: bf16[J, K_Z]\n"
        "param W2: bf16[K_X, J_Y]\nTmp = In ·_J W1\nOut[I, J_YZ] = gelu(Tmp) ·_K W2\nbackward\n"
    )
    r = shardc.compile(text, model="exact")
    check_report(r, text, {"K": 2}, None, "exact", [[1, 1, 1, 1], [2, 1, 1, 1]])


def test_an_elementwise_layout_at_a_point_is_the_compiles():
    """`silu(A + B) + bias` with I symbolic: the compile with I=8 bound weighed what `+ bias`
    pays to align `A + B`'s layout, the report at I=8 did not (4.0 us of comms against 3.0):
    with a size the program leaves free, neither does (`elementwise.combine`)."""
    text = (
        "mesh X=4, Y=2, Z=1\ndim I, J=8, K=8, L\nA: bf16[I_ZY, K]\nB: f32[I_ZX, K]\n"
        "bias: bf16[K_ZX]\nC = silu(A + B) + bias\n"
    )
    r = shardc.compile(text, hw="h100", model="exact")
    check_report(r, text, {"I": 8, "L": 1}, "h100", "exact", [[1, 1, 1, 1], [2, 1, 1, 1]])


def test_at_point_takes_the_planners_key():
    """`AtPoint` orders plans as the planner does: time, then FLOPs, then collectives, then
    enumeration order."""
    import sympy as sp

    B = sp.Symbol("B", positive=True, integer=True)
    cands = [Candidate(0, 2 * B, B, 1), Candidate(1, B + 100, B, 1), Candidate(2, B + 100, B, 0)]
    assert AtPoint({"B": 50}).choose(0, cands) == 0
    assert AtPoint({"B": 100}).choose(0, cands) == 2  # a tie on time: fewer collectives
    assert AtPoint({"B": 500}).choose(0, cands) == 2
    assert plan_key(1.0, 2.0, 3) < plan_key(1.0, 2.0, 4)
    # a plan whose blocks of B do not divide at the point is not one a compile there runs
    split = Candidate(3, 0 * B, B, 0, shards=((B, sp.Integer(3)),))
    assert AtPoint({"B": 50}, whole=True).choose(0, [*cands, split]) == 0
    assert AtPoint({"B": 51}, whole=True).choose(0, [*cands, split]) == 3
    assert AtPoint({"B": 50}).choose(0, [*cands, split]) == 3  # a region's sample point


def test_regions_of_two_plans_meet_at_their_crossover():
    import sympy as sp

    B = sp.Symbol("B", positive=True, integer=True)
    cands = [Candidate(0, 4096 + 0 * B, B, 1), Candidate(1, B, B, 1)]
    regions = RegionFinder().regions(cands)
    assert {r.order for r in regions} == {0, 1}
    by = {r.order: r for r in regions}
    assert by[1].condition.canonical == (B < 4096).canonical
    assert by[0].condition.canonical == (B > 4096).canonical
    won = winners(cands, {"B": __import__("numpy").array([1.0, 4095.0, 4097.0, 1e9])})
    assert won.tolist() == [1, 1, 0, 0]


def test_the_fsdp_step_has_two_regions_split_at_the_crossover():
    """Each contraction planned for itself (the whole step's regions:
    tests/passes/test_objective.py)."""
    r = fsdp16(objective="statement")
    regions = r.regions()
    assert len(regions) == 2
    by_plan = {tuple(c.op for c in v.result.ops if c.kind == "collective")[0]: v for v in regions}
    gather, move = by_plan["AllGather"], by_plan["AllToAll"]
    (bound,) = gather.bounds
    B = next(iter(bound.free_symbols))
    assert bound.subs(B, 7700) and not bound.subs(B, 7600)
    assert move.condition.subs(B, 7600) and not move.condition.subs(B, 7700)
    # The piecewise total is each region's total on its side of the boundary.
    t = r.piecewise("t_comms_s")
    for b in (4096, 60000):
        want = r.at(B=b).value("t_comms_s")
        assert r.value(t, B=b) == pytest.approx(want, rel=1e-9)


MLP = """mesh X=16
dim B, D=8192, F=32768
hardware tpu-v5p
In: bf16[B_X, D]
W_in: bf16[D_X, F]
W_out: bf16[F, D_X]
Tmp = In ·_D W_in
Out[B_X, D] = gelu(Tmp) ·_F W_out
"""


def test_a_candidate_whose_later_options_differ_still_wins_its_region():
    """docs/testing.md's MLP: a compile at B = 4096 runs the program that moves activations
    through both products (T_lower 6.03 ms against 8.59 for the per-statement plans there).
    That program's second product meets other options than the per-statement lowering's (its
    operand arrives in another layout), so the regions must rank each pick among its own
    lowering's options (they once kept the per-statement plans from B = 3943): four regions
    (split at 4498, 8027 and 11543), each the compile's. Between 4498 and 8027 the first
    product gathers both operands and the second moves its result (its third option, found by
    the search's descent: T_lower 7.97 ms at B = 6416, where the two best options per product
    give 9.40)."""
    r = shardc.compile(MLP)
    regions = r.regions()
    assert len(regions) == 4
    for b in (2048, 3936, 4096, 4496, 4512, 6416, 6432, 7664, 8016, 8032, 11536, 11552, 16384):
        assert_totals_at(r, {"B": b}, shardc.compile(MLP, set={"B": b}))


UNUSED_L = (
    "mesh X=2\ndim I=2, J=2, K=4, L\nA: bf16[I_X, J]\nB: bf16[J, K_X]\nC = A ·_J B\n"
    "D[I_X, K] = C\nE = gelu(D) * D\n"
)


def test_a_size_no_formula_uses_leaves_the_report_the_compile_that_binds_it():
    """L is declared and used nowhere: the whole program's search has a number to minimize, so
    the report runs it as the compile with L bound does (gather B, not A: T_lower 1 us against
    2 us; HBM bytes 44, not 40), and its plans depend on no free size."""
    r = shardc.compile(UNUSED_L, hw="tpu-v5e", model="exact")
    at = shardc.compile(UNUSED_L, hw="tpu-v5e", model="exact", set={"L": 2})
    assert r.regions() == () and collectives(r) == collectives(at)
    assert r.value("hbm_bytes") == at.value("hbm_bytes") == 44
    assert_same(r.at(L=2), at)
    assert_totals_at(r, {"L": 2}, at)


def test_the_search_splits_on_a_size_no_choice_depends_on():
    """With L used only by a statement of its own, no contraction's plans depend on it, but the
    whole program's search does (T_hbm, which L grows, bounds T_lower past about 100k): the
    report has the search's regions, and its piecewise totals are the compile's on each
    side. Past L = 249,999,997 the two programs' T_lower agree within one part in 10^9 and
    the tie goes to the lower T_upper (gathering B), in the regions as in a compile there
    (`passes.objective.preferred`)."""
    text = UNUSED_L + "F: bf16[L, K]\nG = gelu(F) * F\n"
    r = shardc.compile(text, hw="tpu-v5e", model="exact")
    assert len(r.regions()) == 3
    for n in (1, 1000, 100_000, 1_000_000, 300_000_000):
        at = shardc.compile(text, hw="tpu-v5e", model="exact", set={"L": n})
        assert_totals_at(r, {"L": n}, at)
        for name in ("hbm_bytes", "t_comms_s"):
            assert r.value(r.totals[name], L=n) == pytest.approx(at.value(name), rel=1e-9)


def test_one_region_where_no_choice_depends_on_the_sizes():
    fixed = FSDP.replace("dim B,", "dim B=65536,")
    assert shardc.compile(fixed, set={"X": 16}).regions() == ()


def test_compile_regions_flag_prints_totals_by_region(tmp_path, capsys):
    path = tmp_path / "fsdp.shard"
    path.write_text(FSDP)
    args = ("compile", str(path), "--set", "X=16", "--regions", "--objective", "statement")
    out = run(capsys, *args)
    assert "totals by region" in out and "where B > 7659.4" in out
    d = json.loads(run(capsys, *args, "--format", "json"))
    assert len(d["regions"]) == 2 and "Piecewise" in d["totals_piecewise"]["t_comms_s"]
    tex = fsdp16(objective="statement").to_latex(regions=True)
    assert "\\text{T\\_comms} &= \\begin{cases}" in tex and "\\text{where B > 7659.4}" in tex
    assert "\\text{T\\_math} &= \\frac{12 B D F}{C X}" in tex  # one formula: no cases


def _derive_json(tmp_path, capsys, model):
    path = tmp_path / "fsdp.shard"
    path.write_text(FSDP)
    args = ("derive", str(path), "--solve-for", "B", "--model", model, "--set", "X=16")
    out = run(capsys, *args, "--format", "json", "--objective", "statement")
    return json.loads(out)["by_region"]


def _gathering_region(by):
    (region,) = [r for r in by["regions"] if r["intervals"][0][0] > 1]
    return {c["name"]: c for c in region["conditions"]}


def test_derive_solves_the_books_fsdp_condition_on_the_weight_gathering_region(tmp_path, capsys):
    """The training chapter: FSDP is compute-bound when B/X > C/W_ici, 40,800 tokens at X=16
    on a v5p (book model); the exact model prices the axis of 16 as a line: 2*C*(X-1)/W."""
    book = _gathering_region(_derive_json(tmp_path, capsys, "book"))["compute-bound"]
    assert book["solved"]["expr"] == "C*X/W_ici" and book["solved"]["value"] == 40800
    assert book["intervals"][0][0] == pytest.approx(40800)
    exact = _gathering_region(_derive_json(tmp_path, capsys, "exact"))["compute-bound"]
    assert exact["solved"]["expr"] == "2*C*(X - 1)/W_ici"
    assert exact["intervals"][0][0] == pytest.approx(76500)


def test_the_solved_threshold_is_the_crossover_of_numeric_compiles():
    """Bisection over compiles with B bound (multiples of 16, so B_X divides) finds the first B
    where the compiled step is compute-bound; derive's exact threshold, 76,500, is just below."""

    def holds(k: int) -> bool:
        r = shardc.compile(FSDP, set={"X": 16, "B": 16 * k})
        (c,) = [c for c in r.conditions if c.name == "compute-vs-comms"]
        return bool(r.holds(c.relation))

    lo, hi = 1, 1 << 16
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if holds(mid) else (mid, hi)
    assert 16 * lo < 76500 <= 16 * hi


FSDP_TP_3D = (
    "mesh X @ici(x, y), Y @ici(z)\ndim B=65536, D=8192, F=28672\nhardware tpu-v5p\n"
    "In: bf16[B_X, D_Y]\nparam W_in: bf16[D_X, F_Y]\nparam W_out: bf16[F_Y, D_X]\n"
    "Tmp = In[B_X, D] ·_D W_in\nOut[B_X, D_Y] = gelu(Tmp) ·_F W_out\nbackward\n"
)


@pytest.mark.parametrize(("x", "y"), [(1, 64), (4, 16), (16, 4), (64, 1)])
def test_a_symbolic_mesh_axis_at_a_point_is_the_compile_at_it(x, y):
    """With a mesh axis symbolic the formulas assume full rings; at a point the topology is the
    slice's own (wraparound, an axis of one chip moves nothing), as compiling there gives."""
    for model in ("book", "exact"):
        r = shardc.compile(FSDP_TP_3D, model=model)
        assert_same(r.at(X=x, Y=y), shardc.compile(FSDP_TP_3D, model=model, set={"X": x, "Y": y}))


def test_a_point_that_does_not_compile_raises():
    """X spans two physical axes, so it must be a square: at X = 2 there is no such mesh."""
    r = shardc.compile(FSDP_TP_3D)
    with pytest.raises(shardc.CompileError, match="H014"):
        r.at(X=2, Y=32)


DP_STEP = (
    FSDP.replace("mesh X\n", "mesh X=16\n").replace("D_X, F]", "D, F]").replace("F, D_X]", "F, D]")
)


def test_derive_gives_each_condition_where_it_holds_over_all_regions(tmp_path, capsys):
    """The closed form `B > C*X/W_ici` is only half the answer on the data-parallel step: below
    the plan change (5,736 tokens) the compiler moves activations instead of reducing the
    weight gradients, and that plan is compute-bound at every batch. The union is sorted and
    the pieces that meet at a region boundary are joined."""
    path = tmp_path / "dp.shard"
    path.write_text(DP_STEP)
    base = ("derive", str(path), "--solve-for", "B", "--model", "book", "--objective", "statement")
    d = json.loads(run(capsys, *base, "--format", "json"))
    assert d["solve_for"] == "B"
    conds = {c["name"]: c for c in d["conditions"]}
    (lo, cut), (threshold, top) = conds["compute-bound"]["intervals"]
    assert lo == 1 and cut == pytest.approx(5736.14, rel=1e-4)
    assert threshold == pytest.approx(40800) and top == pytest.approx(2.0**48)
    assert conds["compute-bound"]["solved"]["intervals"] == conds["compute-bound"]["intervals"]
    # no closed form, but intervals: two regions' pieces joined at the boundary
    ((start, end),) = conds["compute-vs-hbm"]["intervals"]
    assert conds["compute-vs-hbm"]["solved"] is None and 400 < start < 500 and end == top
    text = run(capsys, *base)
    assert "    holds: B < 5736.14 or B > 40800\n" in text


def test_the_default_fsdp_report_is_piecewise_and_shows_one_region_plan():
    """No flag: the totals are piecewise over the two regions, and every section shows the
    plan of one region (the weight-gathering one), never one contraction's plan of each."""
    from shardc.driver.region_totals import plan_of

    r = fsdp16(objective="statement")  # each contraction alone
    regions = r.regions()
    assert len(regions) == 2 and r.shown_region is not None
    assert isinstance(r.totals["t_comms_s"], sp.Piecewise)
    assert plan_of(r) == plan_of(regions[0].result)  # the largest region's plan, whole
    ops = {c.op for c in r.ops if c.kind == "collective"}
    assert ops == {"AllGather", "ReduceScatter"}  # weights gathered everywhere, no AllToAll
    text = r.to_text()
    assert "plans: 2 regions" in text and "decided by default" not in text
    assert "totals by region" in text and text == r.to_text(regions=True)
    d = json.loads(r.to_json())
    assert d["totals"]["t_comms_s"]["expr"].startswith("Piecewise(")
    assert len(d["regions"]) == 2 and d["shown_region"]["condition"] == "B > 7659.4"
    # Boundaries exact: solved in the sizes and the chip's symbols, the value the exact
    # rational of the chip's decimal figures (7659.400634765625), never `1.0*B`.
    assert {v["relation"] for v in d["regions"]} == {"31372905/4096 < B", "B < 31372905/4096"}
    assert "B > 31372905/4096" in d["totals"]["t_comms_s"]["expr"]
    assert "1.0*" not in json.dumps(d["totals"])
    for v in d["regions"]:
        (b,) = v["boundaries"]
        assert b["size"] == "B" and b["exact"] == "31372905/4096"
        assert b["formula"] == (
            "X*(X - 1)*(4*D*F - W_ici*X*t_hop)/(4*(D*floor(X**2/4) + F*X**2 - F*X))"
        )
        assert b["value"] == 7659.400634765625
    for b in (4096, 60000):  # each side of the boundary: the compile at that batch
        want = shardc.compile(FSDP, set={"X": 16, "B": b}, objective="statement")
        assert r.value("t_comms_s", B=b) == pytest.approx(want.value("t_comms_s"), rel=1e-9)
        assert r.value(r.totals["t_comms_s"], B=b) == pytest.approx(
            want.value("t_comms_s"), rel=1e-9
        )


def test_past_the_cap_the_report_shows_one_plan_labelled_with_its_region(monkeypatch):
    """Six layers with B, D and F symbolic have more than 16 regions: the report shows the
    plan that wins on most of the sample at each choice, with the region it holds in (the
    chip's figures as exact numbers, never floats) and the limit it went past (the count of
    regions, whatever the machine's speed)."""
    import json
    import re

    from benchmarks.gen import program

    text = program(6).replace("dim B=65536, D=8192, F=32768", "dim B, D, F")
    r = shardc.compile(text)
    assert r.regions() is None and r.shown_region is not None
    where, share, past = r.shown_region
    assert 0 < share < 1 and " and " in where and past == "regions"
    assert not re.search(r"\d\.\d|\de-\d", where), where  # 1/5100, not 0.000196078
    # the products' roofline times, as a compile with the sizes bound ranks plans by them
    assert "B*F + Max(B*D*F/15300, 3*B*D/280 + 3*B*F/280 + 12*D*F/35) + 1440000 <" in where
    out = r.to_text()
    assert "plans: more than 16 regions: every section" in out and f"where {where}" in out
    assert "regions: more than 16 regions for this program;" in out
    assert "decided by default" not in out and " s to find" not in out
    d = json.loads(r.to_json())
    assert d["regions"] is None and d["shown_region"]["condition"] == where
    assert d["regions_limit"] == "regions" and d["note"].startswith("more than 16 regions: ")


@pytest.mark.parametrize("budget, past", [(18, None), (17, "statements")])
def test_the_statement_budget_is_a_count_not_a_time(monkeypatch, budget, past):
    """The FSDP step lowers six statements (two forward, four derived) each time, three times
    to find its two regions (once to its choice, which branches, then once per region): a
    budget of 18 statements finds both, one of 17 stops before and the label names the count,
    on any machine."""
    import json

    import shardc.lang.input_limits as limits

    monkeypatch.setattr(limits, "REGIONS_STATEMENTS", budget)
    monkeypatch.setattr("shardc.driver.region_totals.REGIONS_STATEMENTS", budget)
    r = shardc.compile(FSDP, set={"X": 16}, objective="statement")
    if past is None:
        assert len(r.regions()) == 2 and r.shown_region is not None
        assert r.shown_region.past is None
        return
    assert r.regions() is None and r.shown_region is not None
    assert r.shown_region.past == "statements"
    out = r.to_text()
    assert "plans: more than 17 statements to lower to find the regions: every section" in out
    assert "more than 16" not in out and "CPU" not in out
    d = json.loads(r.to_json())
    assert d["regions_limit"] == "statements" and "17 statements" in d["note"]
    assert d["shown_region"]["condition"] == r.shown_region.where


def test_past_the_cpu_net_the_report_says_it_was_the_time(monkeypatch):
    """The CPU net under the count (here none at all: the FSDP step's enumeration stops at
    its first lowering) is named as a time."""
    import shardc.lang.input_limits as limits

    monkeypatch.setattr(limits, "REGIONS_NET_SECONDS", 0.0)
    r = shardc.compile(FSDP, set={"X": 16}, objective="statement")
    assert r.regions() is None and r.shown_region is not None
    assert r.shown_region.past == "seconds"
    assert "plans: more than 0 s of CPU time to find the regions: every section" in r.to_text()


def test_the_fsdp_boundary_is_where_compiles_change_plan():
    """The exact boundary, 31372905/4096 = 7659.4006: the compile at the multiple of 16 just
    below gathers activations, the one just above gathers weights; and the formula at the
    report's sizes and the chip's figures is that rational."""
    r = fsdp16(objective="statement")
    (gather,) = [v for v in r.regions() if "AllToAll" not in collectives_text(v.result)]
    (b,) = boundaries(r, gather)
    assert (b.size, b.op, b.value) == ("B", ">", sp.Rational(31372905, 4096))
    env = {s: sp.Rational(repr(float(x))) for s, x in r.environment().items()}
    assert sp.cancel(b.formula.xreplace(env)) == b.value
    below = shardc.compile(FSDP, set={"X": 16, "B": 7648}, objective="statement")
    above = shardc.compile(FSDP, set={"X": 16, "B": 7664}, objective="statement")
    assert "AllToAll" in collectives_text(below)
    assert "AllToAll" not in collectives_text(above)


def test_a_boundary_in_the_book_model_keeps_exact_rationals():
    """The book's Max(latency, bytes/W) terms leave no size linear, but with one size free the
    relation is a half-line (`passes.symbolic_plans.cheaper`), solved where each Max takes the
    argument it takes at the boundary: the bandwidth terms, the book's formula. The relation
    holds the chip's figures as exact rationals, never a float."""
    r = shardc.compile(FSDP, set={"X": 16}, model="book", objective="statement")
    for v in r.regions():
        for b in boundaries(r, v):
            assert not b.relation.atoms(sp.Float)
            assert str(b.formula) == "4*D*F*(X - 1)/(D*X + 4*F*X - 4*F)" and b.value == 7680


def collectives_text(r):
    from shardc.driver.region_totals import collectives as names

    return names(r)


def test_a_region_narrower_than_the_scan_step_keeps_its_interval() -> None:
    """The scan's points are 1.7% apart; a region such as 7491 <= B < 7612 (1.6% wide) is
    found from the relation's own numbers."""
    from shardc.tools.derive_by_region import intervals

    b = sp.Symbol("B", positive=True)
    ((lo, hi),) = intervals(sp.And(b >= 7491, b < 7612), b, {})
    assert lo == pytest.approx(7491) and hi == pytest.approx(7612)
    assert intervals(sp.And(b >= 7491, b < 7491.5), b, {}) != []


def test_derive_past_its_budget_keeps_the_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past REGIONS_SECONDS the regions still come, with intervals and no closed forms."""
    import shardc.lang.input_limits as limits
    from shardc.tools.derive_by_region import solve_by_region

    r = fsdp16()
    assert r.regions()  # found within the budget; only the solving runs past it
    monkeypatch.setattr(limits, "REGIONS_SECONDS", 0.0)
    out = solve_by_region(r, "B")
    assert out is not None and len(out["regions"]) == len(r.regions()) > 1
    assert all(c["solved"] is None for g in out["regions"] for c in g["conditions"])
    assert all(g["intervals"] for g in out["regions"])
