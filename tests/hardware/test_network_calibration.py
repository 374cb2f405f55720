"""Calibrated collectives: the `[network.<level>]` tables of a calibration file, and the
expected collective time they give (docs/cost-model.md, "Calibrated collectives")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shardc
from shardc import hardware
from shardc.hardware.calibration import (
    NetworkFit,
    calibration_toml,
    read_calibration_toml,
)
from tests.hardware.test_calibration import GOOD
from tests.paths import ROOT

NET = (
    GOOD
    + """[network.ib]
efficiency = 0.75
half_bytes = 8e6
source = "a published nccl-tests table"
"""
)


def _net(old: str, new: str) -> str:
    assert old in NET
    return NET.replace(old, new)


HOSTILE = {
    "unknown level": (
        NET.replace("[network.ib]", "[network.infiniband]"),
        ":12:",
        "unknown network level",
    ),
    "efficiency zero": (_net("efficiency = 0.75", "efficiency = 0"), ":13:", "(0, 1]"),
    "efficiency above one": (_net("efficiency = 0.75", "efficiency = 1.2"), ":13:", "(0, 1]"),
    "efficiency nan": (_net("efficiency = 0.75", "efficiency = nan"), ":13:", "finite"),
    "half negative": (_net("half_bytes = 8e6", "half_bytes = -1"), ":14:", "half_bytes"),
    "half huge": (_net("half_bytes = 8e6", "half_bytes = 1e300"), ":14:", "half_bytes"),
    "half inf": (_net("half_bytes = 8e6", "half_bytes = inf"), ":14:", "finite"),
    "half string": (_net("half_bytes = 8e6", 'half_bytes = "big"'), ":14:", "number"),
    "latency negative": (NET + "latency_s = -1e-6\n", ":16:", "latency_s"),
    "latency a day": (NET + "latency_s = 86400\n", ":16:", "latency_s"),
    "no source": (
        _net('source = "a published nccl-tests table"\n', ""),
        ":12:",
        "[network.ib].source",
    ),
    "empty source": (
        _net('source = "a published nccl-tests table"', 'source = ""'),
        ":15:",
        "non-empty",
    ),
    "unknown key": (_net("half_bytes", "halfbytes"), ":14:", "did you mean 'half_bytes'"),
    "ranks one": (NET + "half_ranks = 1\n", ":16:", "half_ranks"),
    "ranks fraction": (NET + "half_ranks = 2.5\n", ":16:", "whole number"),
    "ranks string": (NET + 'half_ranks = "16"\n', ":16:", "number"),
    "ranks huge": (NET + "half_ranks = 1e300\n", ":16:", "half_ranks"),
    "overlap no source": (GOOD + "[overlap]\ncontention = 0.1\n", "", "[overlap].source"),
    "overlap contention above one": (
        GOOD + '[overlap]\ncontention = 1.5\nsource = "s"\n',
        "",
        "from 0 to 1",
    ),
    "overlap prefetch negative": (
        GOOD + '[overlap]\nprefetch_elements = -1\nsource = "s"\n',
        "",
        "prefetch_elements",
    ),
    "overlap prefetch string": (
        GOOD + '[overlap]\nprefetch_elements = "5e7"\nsource = "s"\n',
        "",
        "number",
    ),
    "overlap unknown key": (
        GOOD + '[overlap]\nprefetch = 1\nsource = "s"\n',
        "",
        "did you mean 'prefetch_elements'",
    ),
    "not a table": ("network = 3\n" + GOOD, ":1:", "[network] must be a table"),
    "level not a table": (GOOD + "[network]\nib = 3\n", "", "[network.ib] must be a table"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_network_table_gets_a_diagnostic(name):
    text, line, words = HOSTILE[name]
    with pytest.raises(hardware.HardwareError) as info:
        read_calibration_toml(text, "cal.toml", "h200")
    message = str(info.value)
    assert message.startswith(f"cal.toml{line}"), message
    assert words in message, message


def test_the_cli_reports_a_hostile_network_table_without_a_traceback(tmp_path, capsys):
    from shardc.cli.app import main

    prog = tmp_path / "ag.shard"
    prog.write_text(allgather(8, 1 << 20))
    cal = tmp_path / "cal.toml"
    cal.write_text(HOSTILE["half negative"][0])
    assert main(["compile", str(prog), "--hw", "h200", "--calibration", str(cal)]) == 1
    err = capsys.readouterr().err
    assert "error[H001]" in err and "half_bytes" in err and "Traceback" not in err


def test_a_network_table_reads_back_equal():
    c = read_calibration_toml(NET + 'latency_s = 2e-6\nnote = "fitted"\n', "c.toml", "h200")
    assert c.network == (
        NetworkFit("ib", 0.75, 8e6, "a published nccl-tests table", 2e-6, "fitted"),
    )
    assert read_calibration_toml(calibration_toml(c), "c.toml", "h200") == c


def test_an_overlap_table_reads_back_and_sets_the_calibrated_schedule(tmp_path):
    """A calibration's `[overlap]` replaces the default prefetch buffer (DeepSpeed's 5e7
    elements) and slowdown (18.9%): PyTorch FSDP, which prefetches a whole wrapped unit, is a
    larger buffer; no slowdown is contention = 0."""
    from shardc.hardware.calibration import OverlapFit

    text = NET + '[overlap]\nprefetch_elements = 1e12\ncontention = 0\nsource = "mine"\n'
    c = read_calibration_toml(text, "c.toml", "h200")
    assert c.overlap == OverlapFit("mine", 1e12, 0.0)
    assert read_calibration_toml(calibration_toml(c), "c.toml", "h200") == c
    fsdp = FSDP.read_text().replace("hardware tpu-v5p", "hardware h200")
    shipped = shardc.compile(fsdp, hw="h200")
    path = tmp_path / "mine.toml"
    path.write_text(
        calibration_toml(
            read_calibration_toml(
                Path(hardware.load("h200").calibration.path).read_text()
                + "\n[overlap]\nprefetch_elements = 1e12\ncontention = 0\n"
                'source = "mine"\n',
                str(path),
                "h200",
            )
        )
    )
    mine = shardc.compile(fsdp, hw=hardware.load_calibration(str(path), hardware.load("h200")))
    assert mine.scheduled_step(expected=True) < shipped.scheduled_step(expected=True)
    d = mine.step_durations(expected=True)
    assert mine.prefetch_ahead(d) == pytest.approx({i: d[i] for i in mine.prefetch_ahead(d)})


def test_a_network_table_with_its_group_size_reads_back_equal():
    c = read_calibration_toml(NET + "half_ranks = 16\n", "c.toml", "h200")
    assert c.network[0].half_ranks == 16.0
    assert read_calibration_toml(calibration_toml(c), "c.toml", "h200") == c


def test_a_ring_beyond_the_fitted_group_pays_each_extra_steps_latency():
    """NCCL issue 1411's curve was measured on 16 ranks (busbw / algbw = 2 x 15/16): up to 16
    ranks the InfiniBand half size is the fitted 8.05 MB; a ring of N > 16 ranks takes N - 1
    steps, so its half size is 8.05 MB x N / 16 (the alpha-beta ring: Thakur, Rabenseifner and
    Gropp 2005, "Optimization of Collective Communication Operations in MPICH")."""
    fit = hardware.load("h100").calibration.network_fit("ib")
    assert fit.half_ranks == 16
    ratio = {}
    for n in (16, 64, 256):
        text = allgather(n, (1 << 26) * n // 16)
        shipped = shardc.compile(text, model="exact")
        flat = shardc.compile(text, model="exact", set={"ranks_ib": 1 << 20})  # never grows
        ratio[n] = r_exp(shipped) / r_exp(flat)
    assert ratio[16] == pytest.approx(1.0, rel=1e-12)
    assert ratio[256] > ratio[64] > 1.0


@pytest.mark.parametrize("name", ["a100", "h100", "h200"])
def test_the_gpu_calibrations_price_nvlink_and_infiniband(name):
    cal = hardware.load(name).calibration
    assert cal is not None and {f.level for f in cal.network} == {"nvlink", "ib"}
    assert all("https://" in f.source for f in cal.network)


def allgather(n: int, elements: int) -> str:
    return (
        f"mesh X={n}\ndim E={elements}, F=1\nhardware h100\n\nA: bf16[E_X, F]\nG = AllGather_X(A)\n"
    )


def reduction(n: int, elements: int, scatter: bool) -> str:
    out = "O[N_X, K]" if scatter else "O[N, K]"
    return (
        f"mesh X={n}\ndim N={elements}, M={8 * n}, K=1\nhardware h100\n\n"
        f"A: bf16[N, M_X]\nB: bf16[M_X, K]\n{out} = A ·_M B\n"
    )


def collective(r):
    return next(c for c in r.ops if c.kind == "collective")


def test_a_large_allgather_reaches_nvidias_stated_bus_bandwidth():
    """Hand count against the NCCL maintainer's figure (nccl-tests issue 212): on 8 H100 over
    NVLink a large non-AllReduce collective shows a busbw of 370 GB/s. An AllGather of 8 GiB
    per rank (nccl-tests' size column) moves 7/8 of it; the model's busbw is
    450e9 * 0.822 * n / (n + 9.4e5), 369.9 GB/s, less the 7 us of hop latency."""
    n = 8 << 30
    r = shardc.compile(allgather(8, n // 2), model="exact")
    c = collective(r)
    assert r.value(c.comm_bytes) == n
    busbw = n * 7 / 8 / r.value(c.t_expected)
    assert busbw == pytest.approx(370e9, rel=0.01)
    assert r.value(c.time) < r.value(c.t_expected)  # the roofline keeps 450 GB/s
    assert n * 7 / 8 / r.value(c.time) == pytest.approx(450e9, rel=0.01)


# all_reduce_perf rows (bytes, busbw GB/s) from NVIDIA/nccl-tests issue 44, the curve whose
# shape n_half_nvlink is fitted to; its plateau (the fit's B) is 21.26 GB/s.
ISSUE_44 = [
    (1048576, 11.06),
    (2097152, 14.89),
    (4194304, 17.46),
    (8388608, 19.73),
    (16777216, 20.05),
    (33554432, 20.51),
    (67108864, 21.40),
    (134217728, 20.34),
]


@pytest.mark.parametrize("size,busbw", ISSUE_44)
def test_the_nvlink_curve_follows_the_published_rows(size, busbw):
    """The fraction of the plateau the model reaches at each published size (bandwidth term
    only, latency aside) is within 5% of the published one."""
    fit = hardware.load("h100").calibration.network_fit("nvlink")
    assert fit.bus_efficiency(size) / fit.efficiency == pytest.approx(busbw / 21.26, rel=0.05)


def test_a_chip_without_network_figures_keeps_the_roofline_for_collectives():
    r = shardc.compile(allgather(8, 1 << 20), hw="tpu-v5e")
    c = collective(r)
    assert r.value(c.t_expected) == r.value(c.time)


def test_set_binds_a_network_efficiency_within_zero_and_one():
    base = shardc.compile(allgather(16, 1 << 24))
    slow = shardc.compile(allgather(16, 1 << 24), set={"eta_ib": 0.1})
    assert r_exp(slow) > r_exp(base)
    with pytest.raises(shardc.CompileError, match="at most 1"):
        shardc.compile(allgather(16, 1 << 24), set={"eta_nvlink": 1.5})


def r_exp(r) -> float:
    return r.value(collective(r).t_expected)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["allgather", "allreduce", "reducescatter"]),
    st.sampled_from([2, 4, 8, 16, 32, 256]),
    st.integers(1, 1 << 26),
    st.floats(0.01, 1.0),
    st.floats(0.01, 1.0),
    st.floats(0, 1e9),
    st.floats(0, 1e9),
    st.sampled_from(["book", "exact"]),
)
def test_expected_collective_time_bounds_the_roofline_and_grows_with_bytes(
    kind, n, elements, eta_nv, eta_ib, half_nv, half_ib, model
):
    """For any efficiency in (0, 1] and half size >= 0: a collective's expected time is at
    least its roofline time, and more bytes never take less time."""
    # a half size of 0 means none; bound it below as --set bounds every figure (1e-150)
    binds = {
        "eta_nvlink": eta_nv,
        "eta_ib": eta_ib,
        "n_half_nvlink": max(half_nv, 1e-30),
        "n_half_ib": max(half_ib, 1e-30),
    }

    def text(e: int) -> str:
        return (
            allgather(n, e * n)
            if kind == "allgather"
            else reduction(n, e * n, kind == "reducescatter")
        )

    small = shardc.compile(text(elements), set=binds, model=model)
    big = shardc.compile(text(2 * elements), set=binds, model=model)
    for r in (small, big):
        c = collective(r)
        assert r.value(c.t_expected) >= r.value(c.time) * (1 - 1e-12)
        assert r.value(r.totals["t_expected_s"]) >= r.value(r.totals["t_lower_s"]) * (1 - 1e-12)
    assert r_exp(big) >= r_exp(small) * (1 - 1e-12)


FSDP = ROOT / "programs" / "mlp-fsdp-train.shard"


def test_the_expected_schedule_exposes_the_first_gather_and_the_last_reduction():
    """FSDP on 16 H100: the first weight gather has nothing before it to hide behind and the
    last gradient reduction nothing after it; the roofline schedule is the one it was."""
    from shardc.passes.schedule import schedule

    r = shardc.compile(FSDP, hw="h100")
    roofline = r.step_durations()
    assert r.scheduled_step() == schedule(r.program, roofline, axis_sizes=r.mesh_sizes())
    durations = r.step_durations(expected=True)
    parts = r.exposed(expected=True)
    gathers = [c.index for c in r.ops if c.kind == "collective" and c.overlap == "prefetch"]
    reductions = [c.index for c in r.ops if c.kind == "collective" and c.overlap == "async"]
    assert parts[gathers[0]] == pytest.approx(durations[gathers[0]])
    assert parts[reductions[-1]] > 0
    assert all(0 <= parts[i] <= durations[i] * (1 + 1e-12) for i in parts)
    step = r.scheduled_step(expected=True)
    assert step >= r.scheduled_step() and sum(parts.values()) <= step
    doc = json.loads(shardc.compile(FSDP, hw="h100").to_json())
    listed = doc["totals"]["utilization_expected"]["exposed_s"]
    assert {e["index"]: e["exposed_s"] for e in listed} == pytest.approx(parts)


def test_the_text_report_lists_the_exposed_collectives():
    text = shardc.compile(FSDP, hw="h100").to_text()
    line = next(x for x in text.splitlines() if x.lstrip().startswith("exposed (expected)"))
    assert "#" in line and "no compute hides" in line


def test_an_uncalibrated_chip_schedules_the_expected_step_as_the_roofline():
    r = shardc.compile(FSDP)  # tpu-v5p: no calibration
    assert r.scheduled_step(expected=True) == r.scheduled_step()


@pytest.mark.parametrize("layout", ["fsdp-tp: X=8, Y=8", "pp-dp-tp: PP=2, Y=8"])
def test_plan_json_gives_the_calibrated_step_beside_the_roofline(layout, capsys):
    from shardc.cli.app import main

    assert (
        main(
            [
                "plan",
                "--card",
                "llama3-8b",
                "--hw",
                "h100",
                "--chips",
                "64",
                "--batch",
                "256Ki",
                "--layout",
                layout,
                "--format",
                "json",
            ]
        )
        == 0
    )
    d = json.loads(capsys.readouterr().out)
    c = d["candidates"][0]
    assert c["evaluated"], c["reason"]
    assert c["t_step_expected_s"] > c["t_step_s"] > 0
    assert c["mfu_expected"] == pytest.approx(c["mfu"] * c["t_step_s"] / c["t_step_expected_s"])
    # the communication the calibrated step leaves exposed, by role: some, never more than
    # the step itself
    exposed = c["t_exposed_by_role_s"]
    assert exposed and set(exposed) <= set(c["t_comms_by_role_s"])
    assert 0 < sum(exposed.values()) < c["t_step_expected_s"]


def test_plan_on_a_chip_without_calibration_expects_the_roofline(capsys):
    from shardc.cli.app import main

    assert (
        main(
            [
                "plan",
                "--card",
                "llama3-8b",
                "--hw",
                "tpu-v5e",
                "--chips",
                "16",
                "--batch",
                "64Ki",
                "--layout",
                "fsdp: X=16",
                "--format",
                "json",
            ]
        )
        == 0
    )
    c = json.loads(capsys.readouterr().out)["candidates"][0]
    assert c["t_step_expected_s"] == c["t_step_s"] and c["mfu_expected"] == c["mfu"]


def test_plan_text_shows_both_steps(capsys):
    from shardc.cli.app import main

    assert (
        main(
            [
                "plan",
                "--card",
                "llama3-8b",
                "--hw",
                "h100",
                "--chips",
                "64",
                "--batch",
                "256Ki",
                "--layout",
                "fsdp-tp: X=8, Y=8",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "expected" in out.splitlines()[4] and "MFU exp." in out


def test_a_calibrated_latency_counts_and_never_undercuts_the_chips():
    """`latency_s` replaces the level's latency by max(alpha, t): a 32-byte AllGather pays the
    calibrated 5 us a hop, and `--set t_hop` above it still bounds the expected time."""
    import dataclasses

    chip = hardware.load("h100")
    fit = dataclasses.replace(chip.calibration.network_fit("nvlink"), latency_s=5e-6)
    cal = dataclasses.replace(chip.calibration, network=(fit,))
    slow = dataclasses.replace(chip, calibration=cal)
    text = allgather(8, 16)
    base = r_exp(shardc.compile(text, hw=chip, model="exact"))
    r = shardc.compile(text, hw=slow, model="exact")
    assert r_exp(r) == pytest.approx(base + 7 * (5e-6 - 1e-6))
    high = shardc.compile(text, hw=slow, model="exact", set={"t_hop": 1e-4})
    assert r_exp(high) >= high.value(collective(high).time)
