"""Hardware presets of the Epoch AI paper (Tables 2-4): GPUs, network levels, and the paper's
results.

Figures are SI (FLOP/s, bytes, bytes/s, s). Network bandwidths are stored as the paper quotes
them, *bidirectional* per GPU (Appendix 8.1.2); `NetworkLevel.words_per_s` converts to the
unidirectional 2-byte words/s of Section 5. Sources: ../shared/reference/epoch-model.md section 5
(public companion figures) and hardware-sources.yaml `systems:` (Table 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TypedDict

KIB = 1024
MIB = 1024 * 1024
WORD_BYTES = 2
"""FP16/BF16 training precision: one word is two bytes (Table 2, Appendix 8.1)."""

THREE_MONTHS_S = 0.25 * 365.25 * 86400
"""`t_train`: a quarter of a Julian year, 7.889e6 s (ambiguity 1: 90 days rounds Eq. 15 to 2e30)."""

LOW_LATENCY_DIVISOR = 10
"""Table 4 "LL": all latencies, network and intra-GPU, divided by ten (Section 6.3.1)."""


@dataclass(frozen=True, slots=True)
class GPU:
    """One GPU's arithmetic and memory hierarchy (Appendix 8.1.1)."""

    name: str
    sms: int
    max_clock_hz: float
    sustained: float
    """Sustained clock / maximum boost clock under thermal throttling (measured by the authors)."""
    flop_per_clock_per_sm: float
    """Dense FP16 tensor-core FLOP per clock per SM."""
    hbm_bw: float
    l2_bw: float
    l2_bytes: float
    regs_per_sm_bytes: float
    smem_per_sm_bytes: float
    """L1/shared memory per SM; counted in Table 2's SRAM, not used by the GEMM model."""
    dsmem: bool
    """Hopper distributed shared memory: SMs share tiles, sparing L2 traffic."""
    matmul_latency_s: float

    @property
    def peak_flops(self) -> float:
        """Dense FP16 FLOP/s at the maximum boost clock: the MFU denominator."""
        return self.sms * self.max_clock_hz * self.flop_per_clock_per_sm

    @property
    def sustained_flops(self) -> float:
        return self.peak_flops * self.sustained

    @property
    def smem_bw(self) -> float:
        """32 banks x 4 bytes per clock per SM at the sustained clock."""
        return 32 * 4 * self.sms * self.max_clock_hz * self.sustained

    @property
    def sram_bytes(self) -> float:
        """L2 + per-SM (L1/shared + register file): Table 2's SRAM column, per GPU."""
        return self.l2_bytes + self.sms * (self.smem_per_sm_bytes + self.regs_per_sm_bytes)


@dataclass(frozen=True, slots=True)
class NetworkLevel:
    """One level of the network hierarchy (Appendix 8.1.2), innermost first."""

    name: str
    size: int | None
    """GPUs in one group at this level (a power of two); None for the outermost, unbounded one."""
    bidir_bw: float
    """Per-GPU bidirectional bandwidth, bytes/s (math.inf for an infinite network)."""
    latency_s: float

    @property
    def words_per_s(self) -> float:
        """Unidirectional words/s per GPU: received words are timed against half the bidir."""
        return self.bidir_bw / 2 / WORD_BYTES


@dataclass(frozen=True, slots=True)
class Paper:
    """What the paper prints for a preset (None where it prints nothing)."""

    d_prime: float | None = None
    b_prime: float | None = None
    t_crit_flop: float | None = None
    t_latency_flop: float | None = None
    t_wall_flop: float | None = None
    dense_threshold_flop: float | None = None
    sparse_threshold_flop: float | None = None
    table: str = ""
    """Where the paper prints the simulated thresholds."""


@dataclass(frozen=True, slots=True)
class Preset:
    """A cluster: a GPU, its network levels, the latency t_L of Section 5, and the paper's rows."""

    name: str
    label: str
    scenario: str
    gpu: GPU
    levels: tuple[NetworkLevel, ...]
    t_l_s: float
    """Latency floor per serial step for the closed form (Section 5.1.1: 9 us)."""
    paper: Paper
    gpus_per_node: int = 8

    @property
    def node_network(self) -> NetworkLevel:
        """The link a DGX node uses to talk to other nodes: the first level above the node."""
        for level in self.levels:
            if level.size is None or level.size > self.gpus_per_node:
                return level
        return self.levels[-1]


V100 = GPU(
    "V100 SXM",
    sms=80,
    max_clock_hz=1533e6,
    sustained=0.9,
    flop_per_clock_per_sm=1024,
    hbm_bw=900e9,
    l2_bw=2155e9,
    l2_bytes=6 * MIB,
    regs_per_sm_bytes=256 * KIB,
    smem_per_sm_bytes=128 * KIB,
    dsmem=False,
    matmul_latency_s=4.5e-6,
)
A100 = GPU(
    "A100 SXM",
    sms=108,
    max_clock_hz=1410e6,
    sustained=0.85,
    flop_per_clock_per_sm=2048,
    hbm_bw=1555e9,
    l2_bw=5603e9,
    l2_bytes=40 * MIB,
    regs_per_sm_bytes=256 * KIB,
    smem_per_sm_bytes=192 * KIB,
    dsmem=False,
    matmul_latency_s=4.5e-6,
)
H100 = GPU(
    "H100 SXM",
    sms=132,
    max_clock_hz=1830e6,
    sustained=0.7,
    flop_per_clock_per_sm=4096,
    hbm_bw=3352e9,
    l2_bw=6441e9,
    l2_bytes=50 * MIB,
    regs_per_sm_bytes=256 * KIB,
    smem_per_sm_bytes=256 * KIB,
    dsmem=True,
    matmul_latency_s=4.5e-6,
)

NET_LATENCY_S = 5e-6
"""One-way latency per network level (public companion figures; Section 4.3 quotes ~1-10 us)."""


def _dgx(nvlink_bidir: float, ib_bidir: float) -> tuple[NetworkLevel, ...]:
    return (
        NetworkLevel("NVLink node", 8, nvlink_bidir, NET_LATENCY_S),
        NetworkLevel("InfiniBand", None, ib_bidir, NET_LATENCY_S),
    )


def low_latency(preset: Preset, name: str, label: str, scenario: str, paper: Paper) -> Preset:
    """Preset with every latency (GEMM kernel, network levels, t_L) divided by ten."""
    k = LOW_LATENCY_DIVISOR
    gpu = replace(preset.gpu, matmul_latency_s=preset.gpu.matmul_latency_s / k)
    levels = tuple(replace(lv, latency_s=lv.latency_s / k) for lv in preset.levels)
    return replace(
        preset,
        name=name,
        label=label,
        scenario=scenario,
        gpu=gpu,
        levels=levels,
        t_l_s=preset.t_l_s / k,
        paper=paper,
    )


class _Walls(TypedDict):
    t_latency_flop: float
    t_wall_flop: float


_LAT: _Walls = {"t_latency_flop": 3e30, "t_wall_flop": 2e31}
DGX1_V100 = Preset(
    "v100",
    "DGX-1 (V100)",
    "baseline",
    V100,
    _dgx(300e9, 12.5e9),
    9e-6,
    Paper(
        26.7e3,
        278,
        1e27,
        **_LAT,
        dense_threshold_flop=3e27,
        sparse_threshold_flop=2e27,
        table="Table 3",
    ),
)
DGX_A100 = Preset(
    "a100",
    "DGX A100",
    "baseline",
    A100,
    _dgx(600e9, 50e9),
    9e-6,
    Paper(
        16.7e3,
        401,
        3e28,
        **_LAT,
        dense_threshold_flop=3e28,
        sparse_threshold_flop=2e29,
        table="Table 3",
    ),
)
DGX_H100 = Preset(
    "h100",
    "DGX H100",
    "baseline",
    H100,
    _dgx(900e9, 100e9),
    9e-6,
    Paper(
        26.4e3,
        591,
        2e28,
        **_LAT,
        dense_threshold_flop=2e28,
        sparse_threshold_flop=7e28,
        table="Tables 3, 4",
    ),
)
H100_SUPERPOD = Preset(
    "h100-superpod",
    "H100 SuperPOD",
    "SuperPOD",
    H100,
    (
        NetworkLevel("NVLink node", 8, 900e9, NET_LATENCY_S),
        NetworkLevel("NVLink Network (SuperPOD)", 256, 450e9, NET_LATENCY_S),
        NetworkLevel("InfiniBand", None, 100e9, NET_LATENCY_S),
    ),
    9e-6,
    Paper(5.9e3, 16, 1e34, **_LAT),
)
H100_LL = low_latency(
    DGX_H100,
    "h100-ll",
    "H100 Low Latency",
    "low latency",
    Paper(dense_threshold_flop=1e29, sparse_threshold_flop=7e28, table="Table 4"),
)
H100_GNVL = replace(
    DGX_H100,
    name="h100-gnvl",
    label="H100 Global NVLink",
    scenario="global NVLink",
    levels=(NetworkLevel("global NVLink", None, 900e9, NET_LATENCY_S),),
    paper=Paper(dense_threshold_flop=4e29, sparse_threshold_flop=7e29, table="Table 4"),
)
H100_GNVL_LL = low_latency(
    H100_GNVL,
    "h100-gnvl-ll",
    "H100 Global NVLink + LL",
    "global NVLink + low latency",
    Paper(dense_threshold_flop=5e31, sparse_threshold_flop=1e32, table="Table 4"),
)
H100_INF_LL = replace(
    H100_GNVL_LL,
    name="h100-inf-ll",
    label="H100 Infinite network + LL",
    scenario="infinite network + low latency",
    levels=(NetworkLevel("infinite network", None, math.inf, NET_LATENCY_S / LOW_LATENCY_DIVISOR),),
    paper=Paper(dense_threshold_flop=9e31, sparse_threshold_flop=6e32, table="Table 4"),
)

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        DGX1_V100,
        DGX_A100,
        DGX_H100,
        H100_SUPERPOD,
        H100_LL,
        H100_GNVL,
        H100_GNVL_LL,
        H100_INF_LL,
    )
}
"""Every preset by name, in the order the tables print them."""

SIMULATED_BY_DEFAULT = (
    "v100",
    "a100",
    "h100",
    "h100-ll",
    "h100-gnvl",
    "h100-gnvl-ll",
    "h100-inf-ll",
)
"""The presets of Tables 3 and 4 (the SuperPOD is a Table 2 row only; simulate it on request)."""


def get(name: str) -> Preset:
    """A preset by name (KeyError if unknown).

    >>> get("h100").gpu.sms, f'{get("h100-ll").gpu.matmul_latency_s:.2g}'
    (132, '4.5e-07')
    """
    return PRESETS[name]
