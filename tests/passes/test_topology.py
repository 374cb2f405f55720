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
