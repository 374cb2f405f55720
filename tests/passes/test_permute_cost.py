"""A CollectivePermute is priced over its pairs of devices (passes/permute_cost.py), one rule for
the planner, the report and xla-check's pricing of XLA's collective-permutes."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardc.lang.layout import DimSharding, Layout
from shardc.passes.cost_model import Links
from shardc.passes.ir import AxisLink, PhysicalAxis, Topology
from shardc.passes.layout_cost import transfer_time
from shardc.passes.permute_cost import permute_pairs

pytest.importorskip("jax")

from shardc.tools.xla.costs import Hardware, permute_seconds  # noqa: E402

LINKS = Links.uniform(1.0, 0.0)
MESHES = [
    {"X": 2, "Y": 2},
    {"X": 2, "Y": 2, "Z": 2},
    {"X": 4, "Y": 2},
    {"X": 3, "Y": 3},
    {"X": 4, "Y": 1, "Z": 2},
    {"X": 4, "Y": 4},
]


def machine(mesh: dict[str, int], wrap: bool) -> Topology:
    """Each mesh axis its own physical axis, a ring (3+ chips, wraparound) or a line."""
    return Topology(
        tuple(AxisLink(a, "ici", (a.lower(),), 1, None, n) for a, n in mesh.items()),
        tuple(PhysicalAxis(a.lower(), n, wrap, "test") for a, n in mesh.items()),
        "tpu",
    )


@st.composite
def same_block_layouts(draw) -> tuple[dict[str, int], Layout, Layout]:
    """A mesh and two layouts of [I, K] whose blocks have the same shape (a permute's ends)."""
    mesh = draw(st.sampled_from(MESHES))

    def layout() -> Layout:
        axes = draw(st.permutations(list(mesh)))
        used = axes[: draw(st.integers(0, len(axes)))]
        cut = draw(st.integers(0, len(used)))
        return Layout((DimSharding("I", tuple(used[:cut])), DimSharding("K", tuple(used[cut:]))))

    src = layout()
    shape = [math.prod(mesh[a] for a in src.axes_of(d)) for d in ("I", "K")]
    dst = draw(
        st.sampled_from(
            [
                x
                for x in (layout() for _ in range(30))
                if [math.prod(mesh[a] for a in x.axes_of(d)) for d in ("I", "K")] == shape
            ]
            or [src]
        )
    )
    return mesh, src, dst


def blocks(
    layout: Layout, mesh: dict[str, int], names: tuple[str, ...], coords: tuple[int, ...]
) -> tuple[int, ...]:
    """The block (index per dim) a device holds."""
    c = dict(zip(names, coords, strict=True))
    out = []
    for d in layout.dims:
        i = 0
        for a in d.axes:
            i = i * mesh[a] + c[a]
        out.append(i)
    return tuple(out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(same_block_layouts())
def test_every_block_goes_to_a_device_that_holds_it_and_each_device_gets_one(case) -> None:
    mesh, src, dst = case
    names, pairs = permute_pairs(src, dst, mesh)
    assert sorted(s for s, _ in pairs) == sorted(t for _, t in pairs)  # a permutation
    assert len({s for s, _ in pairs}) == math.prod(mesh[a] for a in names)
    for s, t in pairs:
        assert blocks(src, mesh, names, s) == blocks(dst, mesh, names, t)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(same_block_layouts(), st.booleans(), st.sampled_from(["exact", "book"]))
def test_the_planner_prices_a_permute_as_xla_check_prices_the_same_pairs(case, wrap, model) -> None:
    """The planner's price of its permute equals xla-check's price of a collective-permute
    with the same source-target pairs (as device ids over the whole mesh)."""
    mesh, src, dst = case
    topo = machine(mesh, wrap)
    names, pairs = permute_pairs(src, dst, mesh)
    order = list(mesh)
    rest = [a for a in order if a not in names]
    ids = []
    for s, t in pairs:
        for other in _coords([mesh[a] for a in rest]):
            full = [dict(zip(names, s, strict=True)), dict(zip(names, t, strict=True))]
            for f in full:
                f.update(zip(rest, other, strict=True))
            ids.append(tuple(_id([f[a] for a in order], [mesh[a] for a in order]) for f in full))
    size = {a: float(n) for a, n in mesh.items()}.__getitem__
    ours = transfer_time("CollectivePermute", 1e3, names, src, dst, size, model, topo, LINKS).time
    hw = Hardware(LINKS, lambda dtype: None, "B", topo)
    _, xla = permute_seconds(1e3, tuple(ids), mesh, model, hw)
    assert xla.time == pytest.approx(float(ours), rel=1e-12)


def _coords(sizes: list[int]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for n in sizes:
        out = [(*c, i) for c in out for i in range(n)]
    return out


def _id(coords: list[int], sizes: list[int]) -> int:
    i = 0
    for c, n in zip(coords, sizes, strict=True):
        i = i * n + c
    return i


def test_a_size_one_axis_moves_nothing() -> None:
    """`[K_YX] -> [K_XY]` with Y=1 is the same layout: every device keeps its block."""
    src, dst = Layout.of({"K": ("Y", "X")}), Layout.of({"K": ("X", "Y")})
    size = {"X": 2.0, "Y": 1.0}.__getitem__
    t = transfer_time(
        "CollectivePermute",
        16.0,
        ("Y", "X"),
        src,
        dst,
        size,
        "exact",
        machine({"X": 2, "Y": 1}, True),
        LINKS,
    )
    assert t.time == 0


def test_a_swap_on_lines_of_two_sends_half_the_block_along_each() -> None:
    """`[J_Y] -> [J_X]` on 2x2 lines: the off-diagonal devices swap blocks, each along both
    axes, one direction of a link (W/2) each: V/W, where the old per-axis rule agreed; and XLA's
    Y <-> Z swap of `B[I_X, K_Y] -> [I_X, K_Z]` (the issue's elementwise reproducer) too."""
    src, dst = Layout.of({"J": ("Y",)}), Layout.of({"J": ("X",)})
    size = {"X": 2.0, "Y": 2.0}.__getitem__
    t = transfer_time(
        "CollectivePermute",
        64.0,
        ("Y", "X"),
        src,
        dst,
        size,
        "exact",
        machine({"X": 2, "Y": 2}, True),
        LINKS,
    )
    assert t.time == 64.0


def test_finer_blocks_priced_alike_under_other_dim_names() -> None:
    """The nearest holders of a permute into finer blocks are matched once per pattern of
    sharded dims (`permute_cost._nearest`): the same reshard of another array, its dims
    renamed, reordered and with more unsharded ones, costs what it costs alone."""
    from shardc.passes import memo
    from shardc.passes.permute_cost import permute_time

    mesh = {"X": 4, "Y": 2}
    topo = machine(mesh, True)
    size_of, known = mesh.__getitem__, mesh.get

    def lay(**dims: tuple[str, ...]) -> Layout:
        return Layout(tuple(DimSharding(d, a) for d, a in dims.items()))

    first = (lay(J=(), K=("Y",)), lay(J=("Y",), K=("X",)))
    renamed = (lay(G=(), H=(), S=("Y",), T=()), lay(G=("Y",), H=(), S=("X",), T=()))
    alone = []
    for src, dst in (first, renamed):
        memo.clear()
        alone.append(permute_time(8e6, src, dst, size_of, known, "exact", topo, LINKS))
    memo.clear()
    shared = [
        permute_time(8e6, src, dst, size_of, known, "exact", topo, LINKS)
        for src, dst in (first, renamed)
    ]
    assert alone == shared
    assert memo.PERMUTE_NEAR.hits == 1


def test_the_nearest_holders_memo_tells_apart_calls_with_other_pairs():
    """`_nearest` returns the costliest send of the fixed `pairs` too; its memo key left them
    out, so a second call differing only in its pairs got the first call's answer (here
    (1, 1) for pairs that move nothing, whose costliest send is (0, 0))."""
    from shardc.passes import permute_cost

    src = Layout((DimSharding("I", ("X",)), DimSharding("K", ())))
    dst = Layout((DimSharding("I", ("Y",)), DimSharding("K", ())))
    found = permute_pairs(src, dst, {"X": 2, "Y": 4})
    assert found is not None
    names, pairs = found
    n = {"X": 2, "Y": 4}
    moved = permute_cost._nearest(src, dst, names, n, pairs, "exact", None)
    still = [(h, h) for h, _ in pairs]
    assert moved[2] == (1.0, 1.0)
    assert permute_cost._nearest(src, dst, names, n, still, "exact", None)[2] == (0.0, 0.0)
