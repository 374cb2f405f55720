"""passes/topology.py on a GPU cluster: a collective over whole NVLink domains is priced as
NCCL's rings run it over a node's NICs (docs/cost-model.md, "Several levels: hierarchical
collectives"; docs/validation.md, the ZeRO-3 rows)."""

from __future__ import annotations

import pytest

import shardc


def _gather(gpus: int):
    r = shardc.compile(
        f"mesh X={gpus}\ndim D={gpus * 2**20}\nhardware a100\nA: bf16[D_X]\nB = AllGather_X(A)\n"
    )
    (c,) = [c for c in r.ops if c.kind == "collective"]
    return r, c


@pytest.mark.parametrize("gpus", [16, 768, 1536])
def test_an_allgather_over_whole_nodes_sends_an_eighth_through_each_nic(gpus: int) -> None:
    """Each GPU's 25 GB/s NIC carries an eighth of the gathered bytes, (nodes - 1) / nodes of
    them, as NCCL's one ring per NIC does: a DGX A100 node's eight NICs together reach an
    AllReduce bus bandwidth of 192 GB/s (NCCL issue 812), not one NIC's 25 GB/s per GPU."""
    r, c = _gather(gpus)
    levels = dict(c.levels)
    assert list(levels) == ["nvlink", "ib"]
    v = r.value(c.comm_bytes)
    nodes = gpus // 8
    assert r.value(levels["ib"]) == pytest.approx(
        v / 8 * (nodes - 1) / nodes / 2.5e10 + (nodes - 1) * 1e-6
    )
    assert r.value(levels["nvlink"]) == pytest.approx(v * 7 / 8 / 3e11 + 7 * 1e-6)


def test_the_expected_gather_is_never_faster_than_the_roofline_at_scale() -> None:
    """The calibrated time (80% of the NICs' rate, the half size growing with the ring) is at
    least the roofline's, and a ring twice as long takes longer for the same bytes per GPU."""
    times = []
    for gpus in (768, 1536):
        r, c = _gather(gpus)
        expected = r.step_durations(expected=True)[c.index]
        assert expected >= r.value(c.time)
        times.append(expected / r.value(c.comm_bytes))
    assert times[1] > times[0]


def _nccl_ring_latency_s(gpus: int, intra_us: float, inter_us: float, base_us: float) -> float:
    """NCCL's own latency model of a ring AllGather over `gpus` ranks on nodes of eight
    (NVIDIA/nccl, src/graph/tuning.cc, the 2.7 release of 2020): a base latency, then
    `nRanks - nNodes` steps inside the nodes and `nNodes - 1` across them."""
    nodes = gpus // 8
    return (base_us + (gpus - nodes) * intra_us + (nodes - 1) * inter_us) * 1e-6


@pytest.mark.parametrize("gpus", [384, 768, 1536])
def test_a_small_gathers_fixed_cost_grows_with_the_ring_as_nccls_latency_model(
    gpus: int,
) -> None:
    """A gather of 8 bytes a rank costs what the ring's steps cost. The calibrated time (NCCL
    issue 1411's 16-rank half size, grown with the ring) is 0.5-1x NCCL's tuning table for
    the Simple protocol that large messages use (3.4 us a step inside a node over NVLink, 9.6
    us across, 8.4 us base); the roofline (1 us a step, inter-node steps only on InfiniBand) is
    below the table's fastest protocol, LL (0.47 x 1.8 us inside on several nodes, 2.7 us
    across, 3.6 us base), so it stays a bound (docs/cost-model.md, "Rings larger than the
    fitted one")."""
    r = shardc.compile(
        f"mesh X={gpus}\ndim D={gpus * 4}\nhardware a100\nA: bf16[D_X]\nB = AllGather_X(A)\n"
    )
    (c,) = [c for c in r.ops if c.kind == "collective"]
    expected = r.step_durations(expected=True)[c.index]
    simple = _nccl_ring_latency_s(gpus, 3.4, 9.6, 8.4)
    assert 0.5 * simple <= expected <= simple
    assert r.value(c.time) <= _nccl_ring_latency_s(gpus, 0.47 * 1.8, 2.7, 3.6) <= expected


def test_the_fixed_cost_of_a_gather_doubles_with_its_ring() -> None:
    """(N - 1) steps: twice the ranks, about twice the fixed cost of a small gather."""
    times = []
    for gpus in (768, 1536):
        r = shardc.compile(
            f"mesh X={gpus}\ndim D={gpus * 4}\nhardware a100\nA: bf16[D_X]\nB = AllGather_X(A)\n"
        )
        (c,) = [c for c in r.ops if c.kind == "collective"]
        times.append(r.step_durations(expected=True)[c.index])
    assert 1.9 < times[1] / times[0] < 2.1
