"""xla-check and export-jax: HLO reading, costing and code generation without JAX; the check
against XLA's SPMD partitioner, for every program in programs/, with it (skipped without JAX)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from shardc.cli.app import main
from shardc.lang.source import Source
from shardc.tools.xla.check import CheckResult, Prepared, UsageError, devices_needed, prepare
from shardc.tools.xla.codegen import identifier, statement_source
from shardc.tools.xla.compare import (
    AGREE,
    OURS_CHEAPER,
    SAME_COST,
    SKIPPED,
    UNMAPPED,
    XLA_CHEAPER,
    compare,
)
from shardc.tools.xla.export import script
from shardc.tools.xla.groups import SubAxis, map_groups
from shardc.tools.xla.hlo import (
    CONTRACTION,
    INPUT,
    ArrayShape,
    HloCollective,
    HloSummary,
    Origin,
    parse_replica_groups,
    summarize,
)
from shardc.tools.xla.lower import configure_devices
from tests.paths import ROOT

PROGRAMS = sorted((ROOT / "programs").glob("*.shard"))
MAX_DEVICES = 256
configure_devices(MAX_DEVICES)  # before anything starts a JAX backend

HLO = """\
HloModule jit_f, entry_computation_layout={(bf16[128,1024]{1,0})->bf16[128,32768]{1,0}}

%fused_computation (param_0: f32[128,1024], param_1: f32[1024,4096]) -> f32[128,4096] {
  %param_0 = f32[128,1024]{1,0} parameter(0)
  %param_1 = f32[1024,4096]{1,0} parameter(1)
  ROOT %dot.1 = f32[128,4096]{1,0} dot(%param_0, %param_1), lhs_contracting_dims={1}, \
rhs_contracting_dims={0}
}

ENTRY %main {
  %all-gather = f32[2048,8192]{1,0} all-gather(%w), channel_id=1, \
replica_groups=mesh['axis_0'=4,'axis_1'=1,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_0'}, \
dimensions={0}, use_global_device_ids=true
  %all-reduce.1 = (f32[16]{0}, f32[4]{0}) all-reduce(%a, %b), replica_groups=[4,2]<=[8]
  %reduce-scatter = bf16[64,8]{1,0} reduce-scatter(%c), replica_groups={{0,1,2,3},{4,5,6,7}}, \
dimensions={0}
  %all-to-all.1 = (f32[256,1,1024]{2,1,0}, /*index=1*/f32[256,1,1024]{2,1,0}) all-to-all(%x, %y), \
replica_groups=[4,2]<=[8]
  %collective-permute = f32[64,8]{1,0} collective-permute(%z), source_target_pairs={{0,1},{1,0}}
}
"""


def _prepared(text: str, name: str = "t.shard", **bindings: float) -> Prepared:
    p = prepare(Source(name, text), bindings=bindings)
    assert isinstance(p, Prepared), p.rendered()
    return p


# ---- without JAX --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attrs", "groups"),
    [
        ("replica_groups={{0,1},{2,3}}, dimensions={0}", ((0, 1), (2, 3))),
        ("replica_groups={}", ((0, 1, 2, 3),)),
        ("replica_groups=[2,2]<=[4]", ((0, 1), (2, 3))),
        ("replica_groups=[2,2]<=[2,2]T(1,0)", ((0, 2), (1, 3))),
        ("replica_groups=mesh['axis_0'=2,'axis_1'=2] {'axis_0'}", ((0, 2), (1, 3))),
        ("replica_groups=mesh['axis_0'=2,'axis_1'=2] {'axis_1'}", ((0, 1), (2, 3))),
        # A mesh [4,1,2] whose device ids are iota [2,4] transposed: groups of 4 along axis_0.
        (
            "replica_groups=mesh['axis_0'=4,'axis_1'=1,'axis_2'=2], device_ids=([2,4]T(1,0)) "
            "{'axis_0'}",
            ((0, 1, 2, 3), (4, 5, 6, 7)),
        ),
        ("source_target_pairs={{0,1},{1,0}}", ((0, 1), (1, 0))),
        # Sub-axes: 'a':(pre)size is the middle factor of a split pre x size x rest.
        ("replica_groups=mesh['a'=4] {'a':(1)2}", ((0, 2), (1, 3))),
        ("replica_groups=mesh['a'=4] {'a':(2)2}", ((0, 1), (2, 3))),
    ],
)
def test_replica_group_spellings(attrs: str, groups: tuple) -> None:
    assert parse_replica_groups(attrs, 4 if "4," not in attrs else 8)[0] == groups


@pytest.mark.parametrize(
    ("groups", "axes"),
    [
        (((0, 1, 2, 3, 4, 5, 6, 7),), ("X", "Y")),
        (((0, 2, 4, 6), (1, 3, 5, 7)), ("X",)),
        (((0, 1), (2, 3), (4, 5), (6, 7)), ("Y",)),
        (((0, 4), (1, 5), (2, 6), (3, 7)), ("X:(1)2",)),  # the major half of X
        (((0, 2), (1, 3), (4, 6), (5, 7)), ("X:(2)2",)),  # the minor half of X
        (((0, 1, 4, 5), (2, 3, 6, 7)), ("X:(1)2", "Y")),
        (((0, 3), (1, 2), (4, 7), (5, 6)), None),  # members differ on both axes at once
        (((0, 1, 2), (3, 4, 5, 6, 7)), None),  # groups of different shapes
    ],
)
def test_device_groups_map_back_to_mesh_axes_and_sub_axes(groups: tuple, axes) -> None:
    subs = map_groups(groups, {"X": 4, "Y": 2})
    assert (None if subs is None else tuple(s.name for s in subs)) == axes


def test_summarize_reads_collectives_shapes_and_dot_flops() -> None:
    s = summarize(HLO, 8)
    assert [c.kind for c in s.collectives] == [
        "AllGather",
        "AllReduce",
        "ReduceScatter",
        "AllToAll",
        "CollectivePermute",
    ]
    ag, ar, rs, a2a, cp = s.collectives
    assert (ag.group_size, ag.v_elements, ag.dtype) == (4, 2048 * 8192, "f32")
    assert ar.v_elements == 20 and ar.group_size == 2  # a combined all-reduce: both operands
    assert rs.v_elements == 64 * 8 * 4  # V of a reduce-scatter is its input: G x the output
    assert a2a.v_elements == 2 * 256 * 1024
    assert cp.groups == ((0, 1), (1, 0))
    assert s.dot_flops == 2 * 128 * 4096 * 1024


TRACED = """\
HloModule jit_line6_C, \
entry_computation_layout={(bf16[3,6,3]{2,1,0}, bf16[1,3,6]{2,1,0})->bf16[3,6,6]{2,1,0}}

%fused_computation (param_0.2: f32[6,6]) -> f32[1,6,6] {
  %param_0.2 = f32[6,6]{1,0} parameter(0)
  ROOT %bitcast.3 = f32[1,6,6]{2,1,0} bitcast(%param_0.2)
}

%fused_computation.1 (param_0.4: bf16[1,3,6]) -> f32[3,6] {
  %param_0.4 = bf16[1,3,6]{2,1,0} parameter(0)
  %convert.22 = f32[1,3,6]{2,1,0} convert(%param_0.4)
  ROOT %bitcast.4 = f32[3,6]{1,0} bitcast(%convert.22)
}

ENTRY %main.0_spmd (param: bf16[3,6,3], param.1: bf16[1,3,6]) -> bf16[3,6,6] {
  %param = bf16[3,6,3]{2,1,0} parameter(0), sharding={replicated}, metadata={op_name="A"}
  %param.1 = bf16[1,3,6]{2,1,0} parameter(1), sharding={devices=[3,1,1]<=[3]}, \
metadata={op_name="B"}
  %convert = f32[6,3]{1,0} convert(%param)
  %fusion.1 = f32[3,6]{1,0} fusion(%param.1), kind=kLoop, calls=%fused_computation.1
  %all-gather.b = f32[9,6]{1,0} all-gather(%fusion.1), channel_id=2, replica_groups=[1,3]<=[3], \
dimensions={0}
  %dot.1 = f32[6,6]{1,0} dot(%convert, %fusion.1), lhs_contracting_dims={1}, \
rhs_contracting_dims={0}
  %fusion = f32[1,6,6]{2,1,0} fusion(%dot.1), kind=kLoop, calls=%fused_computation
  %all-gather = f32[3,6,6]{2,1,0} all-gather(%fusion), channel_id=1, \
replica_groups=mesh['axis_0'=3] {'axis_0'}, dimensions={0}
  %multiply.9 = f32[2,4]{1,0} multiply(%convert, %convert), \
metadata={op_name="jit(f)/ab,bc->ac/dot_general"}
  ROOT %convert.27 = bf16[3,6,6]{2,1,0} convert(%all-gather)
}
"""


def test_collectives_are_traced_to_the_arrays_they_move() -> None:
    """Through fusions and converts back to the function's parameters: the first gather moves
    parameter 1 as it is, the second the dot's result; a dot rewritten as a multiply counts."""
    s = summarize(TRACED, 3)
    moved_b, moved_c = s.collectives
    assert moved_b.origin == Origin(frozenset({1}), INPUT)
    assert moved_c.origin == Origin(frozenset({0, 1}), CONTRACTION)
    assert moved_c.operands == (ArrayShape("f32", (1, 6, 6)),)
    assert s.dot_flops == 2 * 6 * 6 * 3 + 2 * 2 * 4


def test_statements_explain_what_jax_cannot_spell() -> None:
    q2 = _prepared((ROOT / "programs/q2-allgather-latency.shard").read_text(), "q2")
    skipped = {st.line: st.skip for st in q2.statements if st.skip}
    assert list(skipped) == [11] and "P[B_X, D_Y]{U_Z} holds partial sums" in skipped[11]
    case3 = _prepared((ROOT / "programs/case3.shard").read_text(), "case3")
    assert [bool(st.skip) for st in case3.statements] == [False, False, True]


def test_symbolic_dims_are_bound_and_symbolic_axes_refused() -> None:
    p = _prepared("mesh X=2\ndim B, D\nA: bf16[B, D_X]\nC = A ·_D A[B, D]\n")
    assert p.sizes == {"B": 4096, "D": 4096} and "symbolic" in p.notes[0]
    with pytest.raises(UsageError, match="symbolic"):
        prepare(Source("t", "mesh X\ndim B=8\nA: bf16[B_X]\n"))


def test_generated_code_reshards_where_the_program_asks() -> None:
    p = _prepared((ROOT / "programs/mlp-fsdp-tp.shard").read_text(), "fsdp-tp")
    code = statement_source(p.statements[0])
    assert "constrain(In, 'X', None)" in code and 'jnp.einsum("ab,bc->ac"' in code
    assert identifier("in") == "in_" and identifier("W_in") == "W_in"
    text = script(p, "prog.py")
    compile(text, "prog.py", "exec")  # the exported script is valid Python
    assert "PREDICTED = {11:" in text and "env['W_out'] = make((32768, 8192)" in text


RS_PROGRAM = (
    "mesh X=8\ndim I=64, J=64, K=64\nhardware tpu-v5e\nA: bf16[I, J_X]\n"
    "B: bf16[J_X, K]\nC[I, K_X] = A ·_J B\n"
)
PARTIAL_SUMS = (Origin(frozenset({0, 1}), CONTRACTION),)  # what a dot of A and B leaves


def _row(p: Prepared, *collectives: HloCollective, flops: float | None = None):
    st = p.statements[0]
    size = {**p.sizes, **p.mesh}.__getitem__
    dots = flops if flops is not None else 2 * 64 * 64 * 64 / 8
    return compare(
        st, HloSummary(collectives, dots), p.mesh, size, "exact", p.hardware, None, None, "", ""
    )


def test_xla_cheaper_is_a_failure_and_explained_differences_are_not() -> None:
    p = _prepared(RS_PROGRAM)
    # XLA:CPU's spelling of a reduce-scatter: an all-reduce of the whole C (64 x 64, f32).
    ar = HloCollective(
        "AllReduce",
        "all-reduce",
        (ArrayShape("f32", (64, 64)),),
        (tuple(range(8)),),
        "",
        "ar",
        (ArrayShape("f32", (64, 64)),),
        PARTIAL_SUMS,
    )
    row = _row(p, ar)
    assert row.verdict == OURS_CHEAPER and row.known
    assert any("no reduce-scatter" in e for e in row.explanations)
    row = _row(p)
    assert row.verdict == XLA_CHEAPER
    result = CheckResult("t", p, [row], "test")
    assert not result.ok and result.summary()["failed_lines"] == [p.statements[0].line]


def _reduce_scatter(
    origins: tuple[Origin, ...], rows: int = 8, groups: tuple = (tuple(range(8)),)
) -> HloCollective:
    """A reduce-scatter of C over X: f32[64,64] in, `rows` x 64 out per device."""
    return HloCollective(
        "ReduceScatter",
        "reduce-scatter",
        (ArrayShape("f32", (rows, 64)),),
        groups,
        "",
        "rs",
        (ArrayShape("f32", (64, 64)),),
        origins,
    )


def test_agree_needs_the_same_array_and_the_same_flops() -> None:
    p = _prepared(RS_PROGRAM)
    assert _row(p, _reduce_scatter(PARTIAL_SUMS)).verdict == AGREE
    # The same collective and bytes, but XLA's dots do 8x the FLOPs: not "agree".
    row = _row(p, _reduce_scatter(PARTIAL_SUMS), flops=8 * 2 * 64 * 64 * 64 / 8)
    assert row.verdict == OURS_CHEAPER and any("FLOPs per device" in e for e in row.explanations)
    # The same kind, axes and bytes, but XLA moves the input B: a different array.
    row = _row(p, _reduce_scatter((Origin(frozenset({1})),)))
    assert row.verdict == SAME_COST and not row.byte_count_bug
    assert any("move different arrays" in e and "moves B" in e for e in row.explanations)


def test_a_different_array_is_never_a_byte_count_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both reduce-scatter over X, with different bytes: a failure only when both move the same
    array with the same blocks; a different array (or other blocks) is a different choice."""
    p = _prepared(RS_PROGRAM)
    other = _reduce_scatter((Origin(frozenset({0})),), rows=16)  # XLA moves A, twice the bytes
    row = _row(p, other)
    assert not row.byte_count_bug and CheckResult("t", p, [row], "test").ok
    assert any(
        "shardc's ReduceScatter_{X,K} moves C" in e and "moves A" in e for e in row.explanations
    )
    same = _reduce_scatter(PARTIAL_SUMS, rows=16)  # C with the same 64x64 block, 2x the output
    row = _row(p, same)
    assert not row.byte_count_bug and any("in different blocks" in e for e in row.explanations)
    # The same array, the same blocks in and out, different bytes: one side's V is wrong.
    import shardc.tools.xla.compare as compare_module

    real = compare_module.step_bytes
    monkeypatch.setattr(compare_module, "step_bytes", lambda *a: 2 * real(*a))
    row = _row(p, _reduce_scatter(PARTIAL_SUMS))
    assert row.byte_count_bug and not CheckResult("t", p, [row], "test").ok


def test_groups_that_are_no_mesh_axis_are_reported_not_priced() -> None:
    p = _prepared(
        "mesh X=2, Y=4\ndim I=64, J=64, K=64\nhardware tpu-v5e\nA: bf16[I, J_XY]\n"
        "B: bf16[J_XY, K]\nC[I, K] = A ·_J B\n"
    )
    odd = HloCollective(
        "AllReduce",
        "all-reduce",
        (ArrayShape("f32", (64, 64)),),
        ((0, 5), (1, 4), (2, 7), (3, 6)),
        "{{0,5},{1,4},{2,7},{3,6}}",
        "ar",
        (ArrayShape("f32", (64, 64)),),
        PARTIAL_SUMS,
    )
    row = _row(p, odd, flops=2 * 64 * 64 * 64 / 8)
    assert row.verdict == UNMAPPED and row.xla_cost is None and row.xla[0].time is None
    assert any("unmapped group" in e and "no mesh axis" in e for e in row.explanations)
    assert CheckResult("t", p, [row], "test").ok


def test_a_sub_axis_costs_what_the_same_mesh_axis_would() -> None:
    """A group that is part of a mesh axis is priced as a collective over a mesh axis of its
    size sharing the physical axis: `X:(1)2` of `X=4` is `A` of `A=2 @ici(x), B=2 @ici(x)`."""
    from shardc.tools.xla.costs import collective_seconds, group_seconds

    for chip in ("tpu-v5e", "tpu-v4p", "h100"):
        at = ("", "") if chip == "h100" else (" @ici(x)", " @ici(y)")
        sub = _prepared(f"mesh X=4, Y=2\ndim I=64\nhardware {chip}\nA: f32[I_X]\n")
        same = _prepared(
            f"mesh A=2{at[0]}, B=2{at[0]}, Y=2{at[1]}\ndim I=64\nhardware {chip}\nA: f32[I_A]\n"
        )
        for op in ("AllGather", "AllReduce", "AllToAll", "ReduceScatter"):
            for part, axis in ((SubAxis("X", 2, 2, 4), "A"), (SubAxis("X", 2, 1, 4), "B")):
                got = group_seconds(op, 1e6, (part,), sub.mesh, "exact", sub.hardware).time
                sizes = {a: float(n) for a, n in same.mesh.items()}
                want = collective_seconds(
                    op, 1e6, (axis,), sizes.__getitem__, "exact", same.hardware
                )
                assert got == pytest.approx(want, rel=1e-12) and 0 < want < 1e-3, (chip, op)


def test_cli_without_jax_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jax", None)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["xla-check", str(ROOT / "programs/case1.shard")])
    assert code == 2
    assert "xla-check needs JAX: pip install 'shardc[jax]'" in err.getvalue()


def test_cli_errors_in_the_program_are_diagnostics(tmp_path: Path) -> None:
    bad = tmp_path / "bad.shard"
    bad.write_text("mesh X=2\ndim I=4\nA: bf16[I_Y]\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(["xla-check", str(bad)]) == 1
        assert main(["export-jax", str(bad), "-o", str(tmp_path / "p.py")]) == 1
    assert "bad.shard:3:9: error[S001]" in err.getvalue()


# ---- with JAX -----------------------------------------------------------------------------------


def _checked(path: Path) -> CheckResult | None:
    pytest.importorskip("jax")
    from shardc.tools.xla.check import check

    p = prepare(Source.from_path(path))
    if not isinstance(p, Prepared):
        pytest.skip(f"{path.name} has errors (another issue's work in progress)")
    if devices_needed(p) > MAX_DEVICES:
        pytest.skip(f"{path.name}: {devices_needed(p)} devices")
    return check(p)


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_program_agrees_with_xla_or_costs_no_more(path: Path) -> None:
    result = _checked(path)
    assert result is not None
    assert result.ok, result.summary()
    for row in result.rows:
        if row.verdict not in (AGREE, SKIPPED):
            assert row.explanations, row
        # Byte counts equal XLA's shapes wherever both move the same array the same way.
        for o in row.ours:
            for x in row.xla:
                if o.kind() == x.kind() and o.ref == x.ref and o.blocks == x.blocks:
                    assert o.bytes == x.bytes, row
        # Every collective of XLA's is costed over devices of the program's mesh.
        assert all(x.time is not None and x.time >= 0 for x in row.xla), row
        assert not row.byte_count_bug, row


def test_case3_reduce_scatter_is_all_reduce_plus_slice_on_cpu() -> None:
    result = _checked(ROOT / "programs/case3.shard")
    assert result is not None
    assert [r.verdict for r in result.rows] == [AGREE, OURS_CHEAPER, SKIPPED]
    ar = result.rows[0].xla[0]
    assert (ar.op, ar.axes, ar.bytes, ar.xla_bytes) == (
        "AllReduce",
        ("X",),
        2 * 4096 * 4096,
        4 * 4096 * 4096,
    )


def _checked_text(tmp_path: Path, text: str) -> CheckResult:
    path = tmp_path / "t.shard"
    path.write_text(text)
    result = _checked(path)
    assert result is not None
    return result


def test_gpu_permute_and_sub_axis_are_priced_by_the_shared_cost_code(tmp_path: Path) -> None:
    """On an H100 mesh XLA reshards I_X -> I_Y with a collective-permute and an all-gather over
    half of X. Both get finite times from passes.cost_model and passes.send_cost on NVLink
    (they were priced at 1 B/s, 4,000 s and more, which hid that XLA's choice is cheaper)."""
    from shardc.lang.send import SendAxis
    from shardc.passes.cost_model import collective_time
    from shardc.passes.ir import AxisLink, Topology
    from shardc.passes.send_cost import send_time

    result = _checked_text(
        tmp_path, "mesh X=4, Y=2\ndim I=64, J=64\nhardware h100\nA: f32[I_X, J]\nB[I_Y, J] = A\n"
    )
    (row,) = result.rows
    hw, mesh = result.prepared.hardware, result.prepared.mesh
    permute = next(c for c in row.xla if c.op == "CollectivePermute")
    gather = next(c for c in row.xla if c.op == "AllGather")
    assert gather.axes == ("X:(1)2",) and permute.axes == ("X", "Y")
    assert "nvlink" in hw.figured and hw.links.w["nvlink"] > 1e9  # the chip's figure
    two = Topology((AxisLink("S", "nvlink", size=2),), (), "gpu")
    want = collective_time(
        "AllGather", gather.bytes, ("S",), {"S": 2}.__getitem__, "exact", two, hw.links
    ).time
    assert gather.time == pytest.approx(float(want))
    # Device 1 (X=0, Y=1) sends to device 2 (X=1, Y=0): a point Send along X and Y.
    moves = [SendAxis("X", src=0, dst=1), SendAxis("Y", src=1, dst=0)]
    want = send_time(
        permute.bytes, moves, lambda a: float(mesh[a]), "exact", hw.topology, hw.links
    ).time
    assert permute.time == pytest.approx(float(want))
    for c in (gather, permute):
        assert c.time is not None and 0 < c.time < 1e-3, c
    assert row.xla_cost is not None and 0 < row.xla_cost < 1e-3


def test_xla_moving_another_array_is_not_a_byte_count_bug(tmp_path: Path) -> None:
    """Both gather over X, with different bytes: shardc gathers the input B, XLA slices A
    locally, multiplies and gathers the result C (a third of the FLOPs). Different arrays:
    never "agree", never a byte-count bug."""
    result = _checked_text(
        tmp_path,
        "mesh X=3\ndim I=6, J=3, K=6, L=3\nhardware tpu-v4p\n"
        "A: bf16[L, I, J]\nB: bf16[L_X, J, K]\nC[L, I, K] = A ·_J B\n",
    )
    (row,) = result.rows
    ((o,), (x,)) = row.ours, row.xla
    assert (o.label(), o.array, x.label(), x.array) == ("AllGather_X", "B", "AllGather_X", "C")
    assert o.bytes != x.bytes and not row.byte_count_bug and result.ok
    assert row.verdict != AGREE and row.xla_dot_flops * 3 == row.ours_flops
    assert any("move different arrays" in e for e in row.explanations)


def test_cli_json(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(
            ["xla-check", str(ROOT / "programs/q9-reducescatter.shard"), "--format", "json"]
        )
    data = json.loads(out.getvalue())
    assert code == 0 and data["schema"] == "shardc.xla-check/2"
    (st,) = data["statements"]
    # The sharding chapter's Question 9: shardc picks the book's ReduceScatter; XLA moves A with an
    # AllToAll, which costs more under shardc's model (an AllToAll is a quarter of an AllGather of
    # the whole array).
    assert st["line"] == 11 and st["verdict"] == "ours cheaper"
    assert [c["op"] for c in st["ours"]] == ["ReduceScatter"]
    assert [c["op"] for c in st["xla"]] == ["AllToAll"]
    assert data["summary"]["ok"] is True


def test_exported_script_runs_on_fake_devices(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    prog = tmp_path / "prog.py"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert (
            main(
                [
                    "export-jax",
                    str(ROOT / "programs/case3.shard"),
                    "-o",
                    str(prog),
                    "--set",
                    "I=64",
                    "--set",
                    "J=128",
                    "--set",
                    "K=64",
                ]
            )
            == 0
        )
    run = subprocess.run(
        [sys.executable, str(prog), "--cpu", "--repeat", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "C2[I, K_X] = A ·_J B" in run.stdout and "line 12 not exported" in prog.read_text()
    assert run.stdout.split()[:4] == ["line", "median", "fastest", "shardc"]


def test_export_embeds_user_names_as_data_only(tmp_path: Path, monkeypatch) -> None:
    """A file name that closes a triple-quoted string stays a string in the exported script."""
    payload = 'a"""+str(__import__("os").system("touch pwned"))+"""b.shard'
    src = tmp_path / payload
    src.write_text("mesh X=2\ndim I=8, J=8\nA: f32[I_X, J]\nB = A\n")
    out = tmp_path / 'o"""+str(int("x"))+"""x.py'
    monkeypatch.chdir(tmp_path)
    assert main(["export-jax", str(src), "-o", str(out)]) == 0
    import runpy

    scope = runpy.run_path(str(out), run_name="imported")
    assert scope["PROGRAM"].endswith(payload) and scope["SCRIPT"] == out.name
    assert not (tmp_path / "pwned").exists()


def test_export_refuses_to_overwrite_its_program(tmp_path: Path, capsys) -> None:
    src = tmp_path / "p.shard"
    src.write_text("mesh X=2\ndim I=8\nA: f32[I_X]\n")
    assert main(["export-jax", str(src), "-o", str(src)]) == 2
    assert "-o" in capsys.readouterr().err and src.read_text().startswith("mesh")


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "lots"])
def test_max_devices_must_be_a_positive_whole_number(value: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["xla-check", "programs/case1.shard", "--max-devices", value])
    assert exc.value.code == 2 and "--max-devices" in capsys.readouterr().err


def test_a_statement_larger_than_the_host_is_compiled_not_skipped(tmp_path: Path) -> None:
    """XLA compiles against abstract arrays (`jax.ShapeDtypeStruct`): 64 TiB of inputs are
    never allocated, so no statement is skipped for its size."""
    result = _checked_text(
        tmp_path,
        "mesh X=2\ndim I=4194304, J=4194304\nhardware tpu-v5e\n"
        "A: f32[I_X, J]\nB: f32[J, I]\nC = A ·_J B\n",
    )
    (row,) = result.rows
    assert row.verdict == AGREE and row.xla_dot_flops == row.ours_flops > 1e13
