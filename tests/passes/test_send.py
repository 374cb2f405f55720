"""Point-to-point sends, `Send_{X: 0->3, Y: 0->3}(A)` and `Send_{P: +1}(A)`: parsing, the checks,
the costs (the TPU chapter's Question 5 on a TPU v5e 4x4, rings against lines, shifts), the
simulator against numpy.roll, the backward pass and the printed forms."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shardc
from shardc.cli.app import main
from shardc.driver.api import run_pipeline
from shardc.lang.send import SendAxis, SendSyntaxError, format_send, parse_send
from shardc.lang.source import Source
from shardc.lang.syntax import Assign, CollectiveCall
from shardc.passes.cost_model import Links
from shardc.passes.ir import Collective
from shardc.passes.send_cost import _routed, _shift_leg, by_distance, send_time
from shardc.testing.strategies import layout_text, meshes
from shardc.tools.simulate import check, random_inputs, reference, roll_blocks, simulate

Q5 = """\
mesh X=4, Y=4
dim a=8, b=128, c=8192
hardware tpu-v5e
A: bf16[a, b, c]
B = Send_{X: 0->3, Y: 0->3}(A)
"""
V = 2 * 8 * 128 * 8192


def send_op(r):
    (c,) = [c for c in r.ops if c.op.startswith("Send_")]
    return c


def code(text: str, **bindings: float) -> str | None:
    """The first diagnostic's code, or None when the program compiles."""
    try:
        shardc.compile(text, set=bindings)
    except shardc.CompileError as err:
        return err.diagnostics[0].code
    return None


def report(text: str, model: str = "exact", **bindings: float):
    return shardc.compile(text, model=model, set=bindings)


# ---- syntax --------------------------------------------------------------------------------------
def test_point_and_shift_forms_parse():
    prog = shardc.parse(
        "mesh X=4, Y=4, P=2\ndim I=8\nA: bf16[I]\nB = Send_{X: 0->3, Y:2->1}(A)\n"
        "C = Send_{P: +1}(A)\nD = Send_{X: -2, Y: +5}(A)\n"
    )
    b, c, d = (s.expr for s in prog.statements if isinstance(s, Assign))
    assert isinstance(b, CollectiveCall) and b.kind == "Send" and b.axes == ("X", "Y")
    assert b.send == (SendAxis("X", src=0, dst=3), SendAxis("Y", src=2, dst=1))
    assert c.send == (SendAxis("P", shift=1),)
    assert [m.shift for m in d.send] == [-2, 5]
    assert format_send(b.send) == "Send_{X: 0->3, Y: 2->1}"
    assert format_send(d.send) == "Send_{X: -2, Y: +5}"
    # spans point at each entry, for the diagnostics
    assert (b.send[1].span.col, b.send[1].span.end_col) == (20, 26)


@pytest.mark.parametrize(
    "entry",
    ["X", "X: 3", "X: 0-3", "X: -1->2", "X: 0->", "X: +", "0->3", "X: 1.5", "X: 0->3 Y: 1->2"],
)
def test_malformed_entries_are_c011(entry):
    assert code(f"mesh X=4, Y=4\ndim I=8\nA: bf16[I]\nB = Send_{{{entry}}}(A)\n") == "C011"
    assert isinstance(parse_send(f"Send_{{{entry}}}"), SendSyntaxError)


def test_send_without_subscript_and_reserved_names():
    assert code("mesh X=4\ndim I=8\nA: bf16[I]\nB = Send(A)\n") == "C002"
    assert code("mesh X=4\ndim I=8\nA: bf16[I]\nB = Send_{}(A)\n") == "P008"
    assert code("mesh X=4\ndim I=8\nSend_x: bf16[I]\n") == "N014"
    # `Send` alone is still a valid array name
    assert code("mesh X=4\ndim I=8\nSend: bf16[I]\nB = Send_{X: +1}(Send)\n") is None


# ---- checks --------------------------------------------------------------------------------------
HEAD = "mesh X=4, Y=4, P\ndim I=8\nA: bf16[I]\n"


@pytest.mark.parametrize(
    "stmt, expected",
    [
        ("B = Send_{Z: 0->1}(A)", "S001"),
        ("B = Send_{X: 0->1, X: 1->2}(A)", "C010"),
        ("B = Send_{X: 0->1, Y: +1}(A)", "C012"),
        ("B = Send_{X: 0->4}(A)", "C013"),
        ("B = Send_{P: 0->1}(A)", "C014"),
        ("B = Send_{X: +0}(A)", "C015"),
        ("B = Send_{X: -8}(A)", "C015"),
        ("B = Send_{P: +0}(A)", "C015"),
        ("B = Send_{X: 2->2, Y: 1->1}(A)", "C015"),
        ("B = Send_{X: 2->2, Y: 1->3}(A)", None),  # one axis may stay put
        ("B = Send_{P: +3}(A)", None),  # a shift needs no size
        ("S: bf16[I_X]\nB = Send_{X: 0->1}(S)", "C016"),
        ("S: bf16[I]{U_X}\nB[I]{U_X} = Send_{X: 0->1}(S)", "C016"),
        ("S: bf16[I_X]\nB = Send_{X: +1}(S)", None),
        ("S: bf16[I_X]\nB = Send_{Y: 0->1}(S)", None),
    ],
)
def test_checks(stmt, expected):
    assert code(HEAD + stmt + "\n") == expected


def test_a_bound_size_allows_the_point_form():
    assert code(HEAD + "B = Send_{P: 0->1}(A)\n", P=2) is None
    assert code(HEAD + "B = Send_{P: 0->2}(A)\n", P=2) == "C013"
    assert code(HEAD + "B = Send_{P: +2}(A)\n", P=2) == "C015"


def test_malformed_programs_never_crash(tmp_path, capsys):
    bad = [
        "B = Send_{X: 0->3(A)",
        "B = Send_{X: 0->3}",
        "B = Send_{X: 0->3}(A, A)",
        "B = Send_{X: 0->3}()",
        "B = Send_{X: 99999999999999999999->0}(A)",
        "B = Send_{X: +99999999999999999999}(A)",
        "B = Send_{X: 0->3}(Nope)",
        "B = Send_{X: 0->3}(A) + Send_{Y: +1}",
        "B[I_X] = Send_{X: 0 -> 3}(A)",
        "Send_{X: 0->3}(A) = A",
        "B = Send_{X:: 0->3}(A)",
        "B = Send_{x: 0->3}(A)",
    ]
    for i, stmt in enumerate(bad):
        p = tmp_path / f"bad{i}.shard"
        p.write_text("mesh X=4, Y=4\ndim I=8\nA: bf16[I]\n" + stmt + "\n", encoding="utf-8")
        rc = main(["compile", str(p)])
        out, err = capsys.readouterr()
        assert rc in (0, 1), (stmt, err)
        assert "Traceback" not in err and "internal error" not in err, (stmt, err)


# ---- costs: the TPU chapter's Question 5 ---------------------------------------------------------
@pytest.mark.parametrize("model", ["book", "exact"])
def test_q5_numbers(model):
    r = report(Q5, model)
    c = send_op(r)
    assert r.value(c.comm_bytes) == V
    assert r.value(c.t_latency / r.parse("t_hop")) == 6
    assert r.value(c.t_latency) == pytest.approx(6e-6)
    assert r.value(c.t_bandwidth) == pytest.approx(V / 9e10)  # two ports at 4.5e10 each
    want = max(V / 9e10, 6e-6) if model == "book" else V / 9e10 + 6e-6
    assert r.value(c.time) == pytest.approx(want)
    assert r.op_bound(c) == "bandwidth"
    assert r.value(c.crossover_bytes) == pytest.approx(6e-6 * 9e10)
    assert sp.simplify(c.t_bandwidth - 2 * r.parse("a*b*c") / r.parse("W_ici")) == 0


@pytest.mark.parametrize(
    "mesh, send, hops, ports",
    [
        ("X=16", "X: 0->15", 1, 1),  # a ring of 16: one hop the other way round
        ("X=16 nowrap", "X: 0->15", 15, 1),
        ("X=16", "X: 0->8", 8, 2),  # half way round a ring: both ways, two ports
        ("X=16", "X: 3->14", 5, 1),
        ("X=16, Y=16", "X: 0->8, Y: 1->0", 9, 3),
        ("X=4", "X: 1->3", 2, 1),  # a v5e axis of 4 is a line
        # X's neighbours are 8 chips apart on a ring of 16: half way round, both ways
        ("X=2 @ici(x), Y=8 @ici(x) wrap", "X: 0->1", 8, 2),
        ("X=16 @ici(x, y) wrap", "X: 0->15", 2, 2),  # a 4x4 torus: (0,0) -> (3,3)
        ("X=16 @ici(x, y)", "X: 0->15", 6, 2),  # a v5e 4x4 does not wrap
    ],
)
def test_point_hops_and_ports(mesh, send, hops, ports):
    r = report(f"mesh {mesh}\ndim I=64\nhardware tpu-v5e\nA: bf16[I]\nB = Send_{{{send}}}(A)\n")
    c = send_op(r)
    assert r.value(c.t_latency / r.parse("t_hop")) == hops
    assert r.value(c.t_bandwidth) == pytest.approx(128 / (ports * 4.5e10))


@pytest.mark.parametrize(
    "mesh, send, load, hops",
    [
        ("X=16", "X: +1", 1, 1),
        ("X=16", "X: -1", 1, 1),
        ("X=16", "X: +8", 4, 8),  # both ways as short: half each way
        ("X=16", "X: +11", 5, 5),
        ("X=4", "X: +1", 1, 3),  # a line: the wrapped block goes back 3 hops
        ("X=4", "X: +2", 2, 2),
        ("X=4", "X: -1", 1, 3),
        ("X=8, Y=4", "X: +1, Y: +2", 2, 9),  # links of two axes in parallel; hops add
        ("X=2 @ici(x), Y=8 @ici(x) wrap", "X: +1", 4, 8),  # 8 chips on, half each way
        ("X=16 @ici(x, y) wrap", "X: +1", 1, 2),  # a 4x4 torus, routed: the carry on x, then y
        ("X=16 @ici(x, y)", "X: +1", 1, 6),  # lines: 15 -> 0 runs back 3 + 3 hops
    ],
)
def test_shift_load_and_hops(mesh, send, load, hops):
    r = report(f"mesh {mesh}\ndim I=64\nhardware tpu-v5e\nA: bf16[I]\nB = Send_{{{send}}}(A)\n")
    c = send_op(r)
    assert r.value(c.t_latency / r.parse("t_hop")) == hops
    assert r.value(c.t_bandwidth) == pytest.approx(load * 128 / 4.5e10)


def test_shift_closed_form_matches_routing_device_by_device():
    """The per-axis formulas against `_routed`, which routes every device's block."""
    for n in range(2, 12):
        for k in range(1, n):
            for ring in (True, False):
                leg = _shift_leg("x", k, n, n, ring and n >= 3, 1)
                ((load, far),) = _routed(k, [n], [ring and n >= 3])
                assert (leg.load, leg.hops) == (load, far), (n, k, ring)


def test_symbolic_shift_and_switched_levels():
    r = report("mesh P\ndim B, D\nA: bf16[B, D]\nY = Send_{P: -1}(A)\n")
    c = send_op(r)
    assert c.t_latency == r.parse("t_hop")
    assert sp.simplify(c.t_bandwidth - 4 * r.parse("B*D/W_ici")) == 0
    line = report("mesh P nowrap\ndim B, D\nhardware tpu-v5e\nA: bf16[B, D]\nY = Send_{P: +2}(A)\n")
    assert send_op(line).t_latency == line.parse("(P - 2)*t_hop")
    dcn = report(
        "mesh X=4, P=2 @dcn\ndim B=64\nhardware tpu-v5e\nA: bf16[B]\nY = Send_{X: +1, P: +1}(A)\n"
    )
    c = send_op(dcn)
    assert [lv for lv, _ in c.levels] == ["ici", "dcn"]
    assert dcn.value(c.time) == pytest.approx(128 / 4.5e10 + 3e-6 + 128 / 3.125e9 + 1e-5)
    gpu = report("mesh N=16\ndim B=64\nhardware h100\nA: bf16[B]\nY = Send_{N: +1}(A)\n")
    assert [lv for lv, _ in send_op(gpu).levels] == ["nvlink", "ib"]
    inside = report("mesh N=16\ndim B=64\nhardware h100\nA: bf16[B]\nY = Send_{N: 0->7}(A)\n")
    assert [lv for lv, _ in send_op(inside).levels] == ["nvlink"]


def test_send_time_without_topology_is_a_ring():
    t = send_time(
        100,
        [SendAxis("X", src=0, dst=3)],
        {"X": 4}.__getitem__,
        "exact",
        None,
        Links.uniform(2.0, 1.0),
    )
    assert (t.bandwidth, t.latency, t.time) == (100.0, 1, 101.0)


TOPOLOGIES = {
    "mesh X=16\nhardware tpu-v5e": {"X": 16},
    "mesh X=16 nowrap\nhardware tpu-v5e": {"X": 16},
    "mesh X=4, Y=2\nhardware tpu-v5e": {"X": 4, "Y": 2},
    "mesh X=2 @ici(x), Y=8 @ici(x) wrap\nhardware tpu-v5e": {"X": 2, "Y": 8},
    "mesh X=16 @ici(x, y) wrap\nhardware tpu-v5e": {"X": 16},
    "mesh X=16 @ici(x, y)\nhardware tpu-v5e": {"X": 16},
    "mesh X=4, P=2 @dcn\nhardware tpu-v5e": {"X": 4, "P": 2},
    "mesh N=16, M=2\nhardware h100": {"N": 16, "M": 2},
    "mesh X=8, Y=4": {"X": 8, "Y": 4},
}


@settings(max_examples=150, deadline=None)
@given(st.data(), st.sampled_from(sorted(TOPOLOGIES)), st.sampled_from(["book", "exact"]))
def test_point_sends_at_one_distance_cost_the_same_on_axes_priced_by_distance(data, mesh, model):
    """`by_distance`, which `passes.permute_cost` prices a permute's sends by: along an axis it
    names, every point entry at the same distance takes the same time, with or without entries
    along the other axes."""
    sizes = TOPOLOGIES[mesh]
    topo = compiled(f"{mesh}\ndim I=64\nA: bf16[I]\n").topology
    axis = data.draw(st.sampled_from(sorted(sizes)))
    n = sizes[axis]
    d = data.draw(st.integers(0, n - 1))
    i, k = data.draw(st.integers(0, n - 1 - d)), data.draw(st.integers(0, n - 1 - d))
    j, m = i + d, k + d
    if data.draw(st.booleans()):
        i, j = j, i  # the other way along the axis: the same distance
    others = [
        SendAxis(a, src=data.draw(st.integers(0, sizes[a] - 1)), dst=0)
        for a in sorted(sizes)
        if a != axis and data.draw(st.booleans())
    ]
    links = Links.uniform(2.0, 1.0)

    def time(src: int, dst: int):
        point = [*([SendAxis(axis, src=src, dst=dst)] if src != dst else []), *others]
        return send_time(64.0, point, sizes.__getitem__, model, topo, links)

    if by_distance(axis, topo):
        assert time(i, j) == time(k, m)


@pytest.mark.parametrize(
    "mesh, by",
    [
        ("mesh X=16\nhardware tpu-v5e", {"X": True}),
        ("mesh X=4, P=2 @dcn\nhardware tpu-v5e", {"X": True, "P": False}),
        ("mesh X=16 @ici(x, y) wrap\nhardware tpu-v5e", {"X": False}),
        ("mesh N=16, M=2\nhardware h100", {"N": False, "M": False}),
    ],
)
def test_which_axes_price_point_sends_by_distance(mesh, by):
    topo = compiled(f"{mesh}\ndim I=64\nA: bf16[I]\n").topology
    assert {a: by_distance(a, topo) for a in by} == by
    assert by_distance("X", None)


# ---- the simulator -------------------------------------------------------------------------------
def compiled(text: str):
    result = run_pipeline(Source("<send>", text))
    assert not result.diagnostics.has_errors, result.rendered()
    return result.compiled


def test_shift_rolls_the_blocks_like_numpy_roll():
    prog = compiled(
        "mesh P=4\ndim I=8, J=3\nA: f32[I_P, J]\nB = Send_{P: +1}(A)\nC = Send_{P: -3}(B)\n"
    )
    inputs = random_inputs(prog, {}, np.random.default_rng(0))
    ref = reference(prog, inputs, {})
    b = next(op.out.id for op in prog.ops if op.out.array == "B")
    c = next(op.out.id for op in prog.ops if op.out.array == "C")
    np.testing.assert_array_equal(ref[b], np.roll(inputs["A"], 2, axis=0))
    np.testing.assert_array_equal(ref[c], np.roll(inputs["A"], 4, axis=0))
    blocks = simulate(prog, inputs, {})
    np.testing.assert_array_equal(blocks[b][(1,)], inputs["A"][0:2])  # device 1 got device 0's
    check(prog, inputs, {})


def test_point_form_copies_the_block_and_keeps_the_value():
    prog = compiled("mesh X=4, Y=2\ndim I=4\nA: f32[I]{U_Y}\nB[I]{U_Y} = Send_{X: 0->3}(A)\n")
    inputs = random_inputs(prog, {}, np.random.default_rng(1))
    blocks = simulate(prog, inputs, {}, seed=1)
    b = next(op.out.id for op in prog.ops if op.out.array == "B")
    for y in range(2):
        np.testing.assert_array_equal(blocks[b][(3, y)], blocks["A"][(0, y)])
        np.testing.assert_array_equal(blocks[b][(1, y)], blocks["A"][(1, y)])
    check(prog, inputs, {}, seed=1)


@st.composite
def shift_programs(draw):
    mesh = draw(meshes())
    a = draw(layout_text(("I", "J"), mesh, allow_unreduced=True))
    moved = [n for n, s in mesh.sizes if s > 1 and draw(st.booleans())]
    if not moved:
        moved = [n for n, s in mesh.sizes if s > 1][:1]
    sizes = dict(mesh.sizes)
    shifts = {}
    for n in moved:
        k = draw(st.integers(-2 * sizes[n], 2 * sizes[n]).filter(lambda k, s=sizes[n]: k % s))
        shifts[n] = k
    sub = ", ".join(f"{n}: {k:+d}" for n, k in shifts.items())
    scale = mesh.devices * 2
    text = (
        f"{mesh.decl()}\ndim I={scale}, J={mesh.devices}\nA: f32{a}\n"
        f"B{a} = Send_{{{sub}}}(A)\nC = gelu(B)\n"
    )
    return text, shifts, sizes


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shift_programs(), st.integers(0, 2**16))
def test_simulated_shifts_equal_numpy_roll(prog, seed):
    text, shifts, axis_sizes = prog
    if not shifts:
        return  # a one-device mesh: nothing to send (C015 would say so)
    p = compiled(text)
    rng = np.random.default_rng(seed)
    sizes = {n: s for n, s in (*p.dims, *p.mesh)}
    inputs = random_inputs(p, sizes, rng)
    check(p, inputs, sizes, seed=seed)  # every block against the reference
    (send,) = [op for op in p.ops if isinstance(op, Collective) and op.op == "Send"]
    ref = reference(p, inputs, sizes)
    # the reference against numpy.roll: a dim's index split into its axes' digits
    want = inputs["A"].copy()
    for dim_pos, d in enumerate(send.src.layout.dims):
        for axis in d.axes:
            if axis in shifts:
                digits = tuple(axis_sizes[x] for x in d.axes)
                shape = want.shape
                split = (
                    shape[:dim_pos]
                    + digits
                    + (shape[dim_pos] // math.prod(digits),)
                    + shape[dim_pos + 1 :]
                )
                want = np.roll(
                    want.reshape(split), shifts[axis], axis=dim_pos + d.axes.index(axis)
                ).reshape(shape)
    np.testing.assert_array_equal(ref[send.out.id], want)


def test_roll_of_the_only_axis_is_numpy_roll():
    a = np.arange(24.0).reshape(12, 2)
    from shardc.lang.layout import Layout

    lay = Layout.of({"I": ("P",), "J": ()})
    for k in range(-5, 6):
        np.testing.assert_array_equal(
            roll_blocks(a, ("I", "J"), lay, {"P": k}, {"P": 4}), np.roll(a, 3 * k, axis=0)
        )


# ---- backward ------------------------------------------------------------------------------------
PIPE = """\
mesh P=4
dim B=8, D=4, F=4
hardware tpu-v5e
param W: bf16[D, F]
X: bf16[B_P, D]
H[B_P, F] = X ·_D W
Out[B_P, F] = Send_{P: +1}(H)
backward
"""


def test_shift_gradient_is_the_reverse_shift():
    r = report(PIPE)
    sends = [c for c in r.ops if c.op.startswith("Send_")]
    assert [c.op for c in sends] == ["Send_{P: +1}", "Send_{P: -1}"]
    assert sends[1].src.startswith("dOut[") and sends[1].dst.startswith("dH[")
    prog = compiled(PIPE)
    sizes = {n: s for n, s in (*prog.dims, *prog.mesh)}
    check(prog, random_inputs(prog, sizes, np.random.default_rng(2)), sizes)
    # the adjoint: <roll(x, +k), y> = <x, roll(y, -k)>
    from shardc.lang.layout import Layout

    lay = Layout.of({"B": ("P",)})
    x, y = np.random.default_rng(3).normal(size=(2, 8))
    fwd = roll_blocks(x, ("B",), lay, {"P": 1}, {"P": 4})
    back = roll_blocks(y, ("B",), lay, {"P": -1}, {"P": 4})
    assert float(fwd @ y) == pytest.approx(float(x @ back))


def test_point_gradient_is_the_identity():
    r = report(
        "mesh X=4\ndim B=8, D=4, F=4\nparam W: bf16[D, F]\nX: bf16[B, D]\n"
        "H[B, F] = X ·_D W\nOut[B, F] = Send_{X: 0->2}(H)\nbackward\n"
    )
    assert [c.op for c in r.ops if c.op.startswith("Send_")] == ["Send_{X: 0->2}"]


# ---- printed forms -------------------------------------------------------------------------------
def test_every_format_prints_the_send():
    r = report(Q5)
    assert "Send_{X: 0->3, Y: 0->3}" in r.to_text()
    assert "Send_{X: 0->3, Y: 0->3}" in r.to_markdown()
    d = json.loads(r.to_json())
    (op,) = [o for o in d["ops"] if o["kind"] == "collective"]
    assert op["op"] == "Send_{X: 0->3, Y: 0->3}" and op["axes"] == ["X", "Y"]
    assert op["regime"] == "bandwidth" and op["crossover_bytes"]["value"] > 0
    assert r"Send\_\{X: 0$\to$3, Y: 0$\to$3\}" in r.to_latex()


def test_xla_check_skips_a_send_with_its_reason():
    from shardc.tools.xla.check import prepare

    p = prepare(Source("q5.shard", Q5))
    (st_,) = [s for s in p.statements if s.target == "B"]
    assert "point-to-point Send" in st_.skip
