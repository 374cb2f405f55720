"""The sharding chapter's rules for one collective (`shardc.passes.reshard_rules.transfer`) and
the search for the cheapest reshard (`shardc.passes.reshard_search`), stated as properties over
small layouts: what each collective does to a layout, each refusal, and that the search returns
a connected plan of legal steps that costs no more than the plan it is given."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from shardc.lang.layout import Layout
from shardc.passes.layout_cost import Pricing
from shardc.passes.reshard_rules import Refusal, Step, transfer
from shardc.passes.reshard_search import cheapest_plan, lower_bound

AXES = ("X", "Y", "Z")
SIZES = {"X": 2.0, "Y": 4.0, "Z": 2.0}
PRICING = Pricing("f32", (("I", 1024.0), ("J", 512.0)))


@st.composite
def layouts(draw, unreduced: bool = True) -> Layout:
    """Dims I and J; each mesh axis shards one of them, or is a partial sum, or is unused."""
    order = draw(st.permutations(AXES))
    where = {
        a: draw(st.sampled_from(("I", "J", "U", "-") if unreduced else ("I", "J", "-")))
        for a in order
    }
    return Layout.of(
        {
            "I": tuple(a for a in order if where[a] == "I"),
            "J": tuple(a for a in order if where[a] == "J"),
        },
        {a for a in order if where[a] == "U"},
    )


def _axes(lay: Layout) -> list[str]:
    return [a for d in lay.dims for a in d.axes]


@given(layouts())
def test_allgather_of_the_innermost_axis_removes_only_it(lay):
    for d in lay.dims:
        if d.axes:
            out = transfer(lay, "AllGather", (d.axes[-1],))
            assert isinstance(out, Layout) and out.unreduced == lay.unreduced
            assert _axes(out) == [a for a in _axes(lay) if a != d.axes[-1]]
            if len(d.axes) > 1:  # an outer axis is not innermost
                assert transfer(lay, "AllGather", (d.axes[0],)) == Refusal(
                    "not-innermost", (d.axes[0],), d.dim
                )
    for a in AXES:
        if lay.dim_of_axis(a) is None:
            assert transfer(lay, "AllGather", (a,)) == Refusal("not-sharded", (a,))


@given(layouts())
def test_reductions_act_on_partial_sums_only(lay):
    for a in AXES:
        if a in lay.unreduced:
            assert transfer(lay, "AllReduce", (a,)) == lay.with_unreduced(lay.unreduced - {a})
            scattered = transfer(lay, "ReduceScatter", (a,), "J")
            assert isinstance(scattered, Layout) and a not in scattered.unreduced
            assert scattered.dims[1].axes == (*lay.dims[1].axes, a)  # J gains it innermost
            assert scattered.dims[0] == lay.dims[0]
        else:
            assert transfer(lay, "AllReduce", (a,)) == Refusal("no-partial-sums", (a,))


@given(layouts())
def test_alltoall_moves_an_innermost_axis_to_the_other_dim(lay):
    for d, other in ((lay.dims[0], "J"), (lay.dims[1], "I")):
        if d.axes:
            moved = transfer(lay, "AllToAll", (d.axes[-1],), other)
            assert isinstance(moved, Layout) and sorted(_axes(moved)) == sorted(_axes(lay))
            assert moved.dim_of_axis(d.axes[-1]) == other
            assert transfer(lay, "AllToAll", (d.axes[-1],), d.dim) == Refusal(
                "wrong-source", (d.axes[-1],), d.dim
            )


def _gather_then_slice(src: Layout, dst: Layout) -> list[Step]:
    """A valid plan, if rarely the best: gather everything, then slice to `dst`."""
    whole = Layout.of({"I": (), "J": ()})
    steps = []
    if _axes(src):
        steps.append(Step("AllGather", tuple(_axes(src)), None, src, whole))
    if _axes(dst):
        steps.append(Step("slice", tuple(_axes(dst)), None, whole, dst))
    return steps


@given(layouts(unreduced=False), layouts(unreduced=False))
def test_the_search_returns_a_legal_plan_no_dearer_than_its_bound(src, dst):
    bound = _gather_then_slice(src, dst)
    plan = cheapest_plan(src, dst, SIZES, PRICING, bound)
    if src == dst:
        assert PRICING.time(plan, SIZES) == 0
        return
    assert plan and plan[0].src == src and plan[-1].dst == dst
    assert all(a.dst == b.src for a, b in zip(plan, plan[1:], strict=False))
    for s in plan:
        if s.kind in ("AllGather", "AllToAll", "AllReduce", "ReduceScatter"):
            assert transfer(s.src, s.kind, s.axes, s.dim) == s.dst, s
    cost = PRICING.time(plan, SIZES)
    assert cost <= PRICING.time(bound, SIZES) * (1 + 1e-12)
    assert lower_bound(src, dst, SIZES, PRICING, bound) <= cost * (1 + 1e-12)
