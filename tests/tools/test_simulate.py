"""The block-by-block simulator: the book's four matmul cases and each collective pass `check`;
wrong programs (missing collectives, impossible reshards) are caught.
"""

from __future__ import annotations

import numpy as np
import pytest

import shardc.tools.simulate as simulate_module
from shardc.lang.layout import Layout
from shardc.lang.syntax import ELEMENTWISE_FUNCTIONS
from shardc.passes.ir import (
    Collective,
    CompiledProgram,
    Einsum,
    Elementwise,
    Input,
    LocalSlice,
    Op,
    Value,
)
from shardc.tools.simulate import (
    UNARY_FUNCTIONS,
    SimulationError,
    check,
    random_inputs,
    reference,
    simulate,
)

XY = {"X": 2, "Y": 2}
X4 = {"X": 4}
X2Y3 = {"X": 2, "Y": 3}


def val(vid: str, dims: str, unreduced: str = "", array: str = "") -> Value:
    """`val("A", "I_X J")`: one value; each dim is `NAME` or `NAME_AXES` (one-letter axes)."""
    spec = []
    for part in dims.split():
        name, _, axes = part.partition("_")
        spec.append((name, tuple(axes)))
    return Value(vid, array or vid.rstrip("0123456789"), "f32", Layout.of(spec, set(unreduced)))


def prog(mesh: dict[str, int | None], dims: dict[str, int | None], *ops: Op) -> CompiledProgram:
    inputs = tuple(op.out for op in ops if isinstance(op, Input))
    return CompiledProgram("test", tuple(mesh.items()), tuple(dims.items()), None, ops, inputs)


def run_check(program: CompiledProgram, sizes: dict[str, int] | None = None, seed: int = 0) -> None:
    sizes = sizes or {}
    inputs = random_inputs(program, sizes, np.random.default_rng(seed))
    check(program, inputs, sizes, seed=seed)


IJK = {"I": 4, "J": 6, "K": 12}


# ---- correct programs ---------------------------------------------------------------------------


def test_case1_no_communication() -> None:
    a, b, c = val("A", "I_X J"), val("B", "J K_Y"), val("C", "I_X K_Y")
    program = prog(XY, IJK, Input(a), Input(b), Einsum(c, a, b, ("J",)))
    run_check(program)
    inputs = random_inputs(program, {}, np.random.default_rng(1))
    blocks = simulate(program, inputs, {})
    assert sorted(blocks["C"]) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert blocks["C"][(1, 0)].shape == (2, 6)
    full = inputs["A"] @ inputs["B"]
    np.testing.assert_array_equal(blocks["C"][(1, 0)], full[2:4, 0:6])
    np.testing.assert_array_equal(reference(program, inputs, {})["C"], full)


def test_case2_allgather_contracting_dim() -> None:
    a, a1, b, c = val("A", "I J_X"), val("A1", "I J"), val("B", "J K"), val("C", "I K")
    program = prog(
        X4,
        IJK,
        Input(a),
        Input(b),
        Collective("AllGather", a1, a, ("X",)),
        Einsum(c, a1, b, ("J",)),
    )
    run_check(program, {"J": 8})


def test_case3_allreduce() -> None:
    a, b = val("A", "I J_X"), val("B", "J_X K")
    c, c1 = val("C", "I K", "X"), val("C1", "I K")
    program = prog(
        X4,
        IJK,
        Input(a),
        Input(b),
        Einsum(c, a, b, ("J",)),
        Collective("AllReduce", c1, c, ("X",)),
    )
    run_check(program, {"J": 8})


def test_case3_reduce_scatter() -> None:
    a, b = val("A", "I J_X"), val("B", "J_X K")
    c, c1 = val("C", "I K", "X"), val("C1", "I K_X")
    program = prog(
        X4,
        IJK,
        Input(a),
        Input(b),
        Einsum(c, a, b, ("J",)),
        Collective("ReduceScatter", c1, c, ("X",), dim="K"),
    )
    run_check(program, {"J": 8})


def test_case3_on_two_axes_reduce_scatter_then_allgather() -> None:
    a, b = val("A", "I J_XY"), val("B", "J_XY K")
    c, c1, c2 = val("C", "I K", "XY"), val("C1", "I K_XY"), val("C2", "I K")
    program = prog(
        X2Y3,
        IJK,
        Input(a),
        Input(b),
        Einsum(c, a, b, ("J",)),
        Collective("ReduceScatter", c1, c, ("X", "Y"), dim="K"),
        Collective("AllGather", c2, c1, ("X", "Y")),
    )
    run_check(program)


def test_case4_gather_one_operand() -> None:
    a, b, b1, c = val("A", "I_X J"), val("B", "J K_X"), val("B1", "J K"), val("C", "I_X K")
    program = prog(
        XY,
        IJK,
        Input(a),
        Input(b),
        Collective("AllGather", b1, b, ("X",)),
        Einsum(c, a, b1, ("J",)),
    )
    run_check(program)


def test_multi_axis_allgather() -> None:
    a, a1 = val("A", "B_X D_Y"), val("A1", "B D")
    program = prog(X2Y3, {"B": 4, "D": 6}, Input(a), Collective("AllGather", a1, a, ("X", "Y")))
    run_check(program)


def test_allgather_of_both_axes_of_one_dim_and_of_the_minor_axis() -> None:
    a, a1, a2 = val("A", "I_XY J"), val("A1", "I_X J"), val("A2", "I J")
    program = prog(
        X2Y3,
        {"I": 12, "J": 2},
        Input(a),
        Collective("AllGather", a1, a, ("Y",)),
        Collective("AllGather", a2, a, ("X", "Y")),
    )
    run_check(program)


def test_alltoall() -> None:
    a, a1 = val("A", "I_X J"), val("A1", "I J_X")
    program = prog(X4, {"I": 8, "J": 4}, Input(a), Collective("AllToAll", a1, a, ("X",), dim="J"))
    run_check(program)


def test_permute_between_different_axis_sets() -> None:
    """A CollectivePermute whose layouts use different axes (the reshard planner's, issue 17):
    `J_Y -> J_X` with |X| = |Y|, and `L_YX -> L_XY` after a slice, each over both axes."""
    a, a1 = val("A", "J_Y"), val("A1", "J_X")
    b, b1, b2 = val("B", "L_Y K"), val("B1", "L_YX K"), val("B2", "L_XY K")
    program = prog(
        {"X": 2, "Y": 2},
        {"J": 8, "L": 8, "K": 3},
        Input(a),
        Collective("CollectivePermute", a1, a, ("Y", "X")),
        Input(b),
        LocalSlice(b1, b),
        Collective("CollectivePermute", b2, b1, ("Y", "X")),
    )
    run_check(program)


def test_local_slice_to_minor_axis() -> None:
    a, a1, a2 = val("A", "I J"), val("A1", "I_X J"), val("A2", "I_XY J")
    program = prog(XY, {"I": 8, "J": 3}, Input(a), LocalSlice(a1, a), LocalSlice(a2, a1))
    run_check(program)


def test_unreduced_input_is_split_into_partial_sums() -> None:
    a, a1 = val("A", "I_Y J", "X"), val("A1", "I_Y J")
    program = prog(X2Y3, {"I": 6, "J": 2}, Input(a), Collective("AllReduce", a1, a, ("X",)))
    inputs = random_inputs(program, {}, np.random.default_rng(0))
    blocks = simulate(program, inputs, {}, seed=3)
    for y in range(3):
        partials = [blocks["A"][(x, y)] for x in range(2)]
        assert not np.array_equal(partials[0], inputs["A"][2 * y : 2 * y + 2])
        np.testing.assert_array_equal(sum(partials), inputs["A"][2 * y : 2 * y + 2])
        np.testing.assert_array_equal(blocks["A1"][(1, y)], inputs["A"][2 * y : 2 * y + 2])
    run_check(program, seed=3)


def test_unreduced_sums_and_products() -> None:
    a, b, c = val("A", "I J", "X"), val("B", "I J", "X"), val("C", "J")
    s, p, q = val("S", "I J", "X"), val("P", "I J", "X"), val("Q", "I J")
    program = prog(
        XY,
        {"I": 2, "J": 4},
        Input(a),
        Input(b),
        Input(c),
        Elementwise("-", s, (a, b)),
        Elementwise("*", p, (c, s)),
        Collective("AllReduce", q, p, ("X",)),
    )
    run_check(program)


def test_elementwise_broadcasts_bias() -> None:
    bias, c = val("bias", "F"), val("C", "B_X F")
    out, act = val("D", "B_X F"), val("E", "B_X F")
    program = prog(
        XY,
        {"B": 4, "F": 6},
        Input(bias),
        Input(c),
        Elementwise("+", out, (bias, c)),
        Elementwise("gelu", act, (out,)),
    )
    run_check(program)


def test_einsum_output_order_and_batch_dims() -> None:
    a, b = val("A", "B_X I J"), val("B", "B_X J K_Y")
    c = val("C", "K_Y B_X I")
    program = prog(
        XY, {"B": 2, "I": 3, "J": 4, "K": 2}, Input(a), Input(b), Einsum(c, a, b, ("J",))
    )
    run_check(program)


def test_collective_may_reorder_dims() -> None:
    a, a1 = val("A", "I_X J"), val("A1", "J I")
    program = prog(X4, {"I": 8, "J": 3}, Input(a), Collective("AllGather", a1, a, ("X",)))
    run_check(program)


@pytest.mark.parametrize("fn", sorted(ELEMENTWISE_FUNCTIONS))
def test_every_unary_function(fn: str) -> None:
    a, b = val("A", "I_X J"), val("B", "I_X J")
    run_check(prog(XY, {"I": 4, "J": 3}, Input(a), Elementwise(fn, b, (a,))))


def test_unary_functions_cover_the_language() -> None:
    assert UNARY_FUNCTIONS.keys() == ELEMENTWISE_FUNCTIONS.keys()
    x = np.arange(-3.0, 4.0)
    for fn, impl in UNARY_FUNCTIONS.items():
        assert np.all(np.isfinite(impl(x))), fn
    np.testing.assert_allclose(UNARY_FUNCTIONS["gelu"](np.array([1.0])), [0.8411919906082768])


def test_symbolic_sizes_come_from_sizes() -> None:
    a, b, c = val("A", "I_X J"), val("B", "J K"), val("C", "I_X K")
    program = prog(
        {"X": None}, {"I": None, "J": 3, "K": None}, Input(a), Input(b), Einsum(c, a, b, ("J",))
    )
    run_check(program, {"X": 4, "I": 8, "K": 2})
    with pytest.raises(SimulationError, match="mesh axis 'X'"):
        run_check(program, {"I": 8, "K": 2})
    with pytest.raises(SimulationError, match="dimension 'I'"):
        run_check(program, {"X": 4, "K": 2})


def test_random_inputs_are_small_integers() -> None:
    a, b, a1 = val("A", "I_X J"), val("B", "J"), val("A1", "I J")
    program = prog(X4, {"I": 8, "J": 3}, Input(a), Input(b), LocalSlice(a1, a))
    inputs = random_inputs(program, {"J": 5}, np.random.default_rng(0))
    assert sorted(inputs) == ["A", "B"]
    assert inputs["A"].shape == (8, 5) and inputs["A"].dtype == np.float64
    assert np.all(inputs["A"] == np.round(inputs["A"]))
    assert inputs["A"].min() >= -3 and inputs["A"].max() <= 3


# ---- wrong programs -----------------------------------------------------------------------------


def test_einsum_over_misaligned_contraction_shards() -> None:
    a, b, c = val("A", "I J_X"), val("B", "J K"), val("C", "I K")
    program = prog(XY, IJK, Input(a), Input(b), Einsum(c, a, b, ("J",)))
    with pytest.raises(SimulationError, match="misaligned J on device"):
        run_check(program)


def test_case3_result_used_without_allreduce() -> None:
    a, b, c = val("A", "I J_X"), val("B", "J_X K"), val("C", "I K")
    program = prog(X4, IJK, Input(a), Input(b), Einsum(c, a, b, ("J",)))
    with pytest.raises(SimulationError, match=r"unreduced over \['X'\]"):
        run_check(program, {"J": 8})
    # Declared unreduced but fed to a nonlinear function, or to a matmul as if summed.
    cu, g, d, e = val("C", "I K", "X"), val("G", "I K"), val("D", "K L"), val("E", "I L")
    for bad in (Elementwise("relu", g, (cu,)), Einsum(e, cu, d, ("K",))):
        program = prog(
            X4, {**IJK, "J": 8, "L": 2}, Input(a), Input(b), Input(d), Einsum(cu, a, b, ("J",)), bad
        )
        with pytest.raises(SimulationError):
            run_check(program)


def test_check_reports_a_wrong_block(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, c = val("A", "I J_X"), val("B", "J_X K"), val("C", "I K", "X")
    program = prog(X4, IJK, Input(a), Input(b), Einsum(c, a, b, ("J",)))
    honest = simulate_module.simulate

    def corrupted(*args: object, **kwargs: object) -> dict[str, dict[tuple[int, ...], np.ndarray]]:
        blocks = honest(*args, **kwargs)
        blocks["C"][(2,)][0, 0] += 1.0
        return blocks

    monkeypatch.setattr(simulate_module, "simulate", corrupted)
    message = r"value 'C' C\[I, K\]\{U_X\} on device \(X=0\) \(summed over its X group\) differs"
    with pytest.raises(SimulationError, match=message):
        run_check(program, {"J": 8})


def test_allgather_of_the_major_axis_is_not_a_gather() -> None:
    a, a1 = val("A", "I_XY J"), val("A1", "I_Y J")
    program = prog(XY, {"I": 8, "J": 2}, Input(a), Collective("AllGather", a1, a, ("X",)))
    with pytest.raises(SimulationError, match="collective cannot produce layout A1?\\[I_Y, J\\]"):
        run_check(program)


def test_allgather_moves_partial_sums_but_cannot_reduce() -> None:
    a, a1 = val("A", "I_X J", "Y"), val("A1", "I J", "Y")
    run_check(prog(XY, {"I": 4, "J": 2}, Input(a), Collective("AllGather", a1, a, ("X",))))
    a2 = val("A2", "I J")
    program = prog(XY, {"I": 4, "J": 2}, Input(a), Collective("AllGather", a2, a, ("X", "Y")))
    with pytest.raises(SimulationError, match="cannot sum partials"):
        run_check(program)


def test_allreduce_needs_unreduced_axes() -> None:
    a, a1 = val("A", "I J"), val("A1", "I J")
    program = prog(XY, {"I": 4, "J": 2}, Input(a), Collective("AllReduce", a1, a, ("X",)))
    with pytest.raises(SimulationError, match="needs those axes unreduced"):
        run_check(program)


def test_local_slice_needing_another_devices_data() -> None:
    a, a1 = val("A", "I_X J"), val("A1", "I_YX J")
    program = prog(XY, {"I": 8, "J": 2}, Input(a), LocalSlice(a1, a))
    with pytest.raises(SimulationError, match="lives on another device"):
        run_check(program)
    a2 = val("A2", "I_Y J")
    with pytest.raises(SimulationError, match="lives on another device"):
        run_check(prog(XY, {"I": 8, "J": 2}, Input(a), LocalSlice(a2, a)))


def test_elementwise_unreduced_misuse() -> None:
    a, b, c = val("A", "I J", "X"), val("B", "I J"), val("C", "I J_X")
    s, p = val("S", "I J", "X"), val("P", "I J", "X")
    with pytest.raises(SimulationError, match="different unreduced axes"):
        run_check(prog(XY, {"I": 2, "J": 4}, Input(a), Input(b), Elementwise("+", s, (a, b))))
    with pytest.raises(SimulationError, match="varies over"):
        run_check(prog(XY, {"I": 2, "J": 4}, Input(a), Input(c), Elementwise("*", p, (a, c))))


def test_elementwise_operands_must_hold_the_output_block() -> None:
    bias, c, d = val("bias", "F_Y"), val("C", "B_X F"), val("D", "B_X F")
    program = prog(XY, {"B": 4, "F": 6}, Input(bias), Input(c), Elementwise("+", d, (bias, c)))
    with pytest.raises(SimulationError, match="holds F\\[0:3\\]"):
        run_check(program)


def test_layouts_that_cannot_exist() -> None:
    with pytest.raises(SimulationError, match="does not split into 4 equal blocks"):
        run_check(prog(X4, {"I": 6}, Input(val("A", "I_X"))))
    with pytest.raises(SimulationError, match="unknown mesh axis 'Z'"):
        run_check(prog(X4, {"I": 8}, Input(val("A", "I_Z"))))
    with pytest.raises(SimulationError, match="uses a mesh axis twice"):
        run_check(prog(XY, {"I": 8}, Input(val("A", "I_X", "X"))))
