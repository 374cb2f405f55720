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
from shardc.tools.xla.compare import AGREE, OURS_CHEAPER, SKIPPED, XLA_CHEAPER, compare
from shardc.tools.xla.export import script
from shardc.tools.xla.hlo import (
    ArrayShape,
    HloCollective,
    HloSummary,
    parse_replica_groups,
    summarize,
)
from shardc.tools.xla.lower import configure_devices

ROOT = Path(__file__).resolve().parent.parent
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


@pytest.mark.parametrize(("attrs", "groups"), [
    ("replica_groups={{0,1},{2,3}}, dimensions={0}", ((0, 1), (2, 3))),
    ("replica_groups={}", ((0, 1, 2, 3),)),
    ("replica_groups=[2,2]<=[4]", ((0, 1), (2, 3))),
    ("replica_groups=[2,2]<=[2,2]T(1,0)", ((0, 2), (1, 3))),
    ("replica_groups=mesh['axis_0'=2,'axis_1'=2] {'axis_0'}", ((0, 2), (1, 3))),
    ("replica_groups=mesh['axis_0'=2,'axis_1'=2] {'axis_1'}", ((0, 1), (2, 3))),
    # A mesh [4,1,2] whose device ids are iota [2,4] transposed: groups of 4 along axis_0.
    ("replica_groups=mesh['axis_0'=4,'axis_1'=1,'axis_2'=2], device_ids=([2,4]T(1,0)) "
     "{'axis_0'}", ((0, 1, 2, 3), (4, 5, 6, 7))),
    ("source_target_pairs={{0,1},{1,0}}", ((0, 1), (1, 0))),
])
def test_replica_group_spellings(attrs: str, groups: tuple) -> None:
    assert parse_replica_groups(attrs, 4 if "4," not in attrs else 8)[0] == groups


def test_summarize_reads_collectives_shapes_and_dot_flops() -> None:
    s = summarize(HLO, 8)
    assert [c.kind for c in s.collectives] == ["AllGather", "AllReduce", "ReduceScatter",
                                                "AllToAll", "CollectivePermute"]
    ag, ar, rs, a2a, cp = s.collectives
    assert (ag.group_size, ag.v_elements, ag.dtype) == (4, 2048 * 8192, "f32")
    assert ar.v_elements == 20 and ar.group_size == 2  # a combined all-reduce: both operands
    assert rs.v_elements == 64 * 8 * 4  # V of a reduce-scatter is its input: G x the output
    assert a2a.v_elements == 2 * 256 * 1024
    assert cp.groups == ((0, 1), (1, 0))
    assert s.dot_flops == 2 * 128 * 4096 * 1024


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


def test_xla_cheaper_is_a_failure_and_explained_differences_are_not() -> None:
    p = _prepared("mesh X=8\ndim I=64, J=64, K=64\nhardware tpu-v5e\nA: bf16[I, J_X]\n"
                  "B: bf16[J_X, K]\nC[I, K_X] = A ·_J B\n")
    st = p.statements[0]
    size = {**p.sizes, **p.mesh}.__getitem__
    flops = 2 * 64 * 64 * 64 / 8
    # XLA:CPU's spelling of a reduce-scatter: an all-reduce of the whole C (64 x 64, f32).
    ar = HloCollective("AllReduce", "all-reduce", (ArrayShape("f32", (64, 64)),),
                       (tuple(range(8)),), "", "ar")
    rs_as_ar = HloSummary((ar,), flops)
    row = compare(st, rs_as_ar, p.mesh, size, "exact", p.hardware, None, None, "", "")
    assert row.verdict == OURS_CHEAPER and row.known
    assert any("no reduce-scatter" in e for e in row.explanations)
    nothing = HloSummary((), flops)
    row = compare(st, nothing, p.mesh, size, "exact", p.hardware, None, None, "", "")
    assert row.verdict == XLA_CHEAPER
    result = CheckResult("t", p, [row], "test")
    assert not result.ok and result.summary()["failed_lines"] == [st.line]


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
        # Byte counts equal XLA's shapes wherever both insert the same collective.
        for o in row.ours:
            for x in row.xla:
                if (o.op, set(o.axes)) == (x.op, set(x.axes)) and len(row.ours) == 1 == len(
                        row.xla):
                    assert o.bytes == x.bytes, row


def test_case3_reduce_scatter_is_all_reduce_plus_slice_on_cpu() -> None:
    result = _checked(ROOT / "programs/case3.shard")
    assert result is not None
    assert [r.verdict for r in result.rows] == [AGREE, OURS_CHEAPER, SKIPPED]
    ar = result.rows[0].xla[0]
    assert (ar.op, ar.axes, ar.bytes, ar.xla_bytes) == ("AllReduce", ("X",), 2 * 4096 * 4096,
                                                        4 * 4096 * 4096)


def test_cli_json(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["xla-check", str(ROOT / "programs/q9-reducescatter.shard"), "--format",
                     "json"])
    data = json.loads(out.getvalue())
    assert code == 0 and data["schema"] == "shardc.xla-check/1"
    (st,) = data["statements"]
    # The sharding chapter's Question 9: shardc picks the book's ReduceScatter; XLA moves A with an AllToAll,
    # which costs more under shardc's model (an AllToAll is a quarter of an AllGather of the
    # whole array).
    assert st["line"] == 11 and st["verdict"] == "ours cheaper"
    assert [c["op"] for c in st["ours"]] == ["ReduceScatter"]
    assert [c["op"] for c in st["xla"]] == ["AllToAll"]
    assert data["summary"]["ok"] is True


def test_exported_script_runs_on_fake_devices(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    prog = tmp_path / "prog.py"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["export-jax", str(ROOT / "programs/case3.shard"), "-o", str(prog),
                     "--set", "I=64", "--set", "J=128", "--set", "K=64"]) == 0
    run = subprocess.run([sys.executable, str(prog), "--cpu", "--repeat", "2"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "C2[I, K_X] = A ·_J B" in run.stdout and "line 12 not exported" in prog.read_text()


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


def test_a_statement_too_large_for_the_host_is_not_given_to_xla() -> None:
    from shardc.tools.xla.check import MAX_HOST_BYTES, host_bytes, too_large

    p = prepare(Source("huge.shard", "mesh X=2\ndim I=4194304, J=4194304\nA: f32[I_X, J]\n"
                       "B: f32[J, I]\nC = A ·_J B\n"))
    (st,) = [s for s in p.statements if s.target == "C"]
    assert host_bytes(st, p.sizes) > MAX_HOST_BYTES and "GiB" in too_large(st, p.sizes)
