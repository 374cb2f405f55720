"""Text about a chip for `shardc hw show NAME` (`describe`) and `shardc hw list` (`summary_line`).

Numbers are printed the book's way (`9e10`) with a human-readable size beside them.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from shardc.hardware.schema import DTYPES, PRECISIONS

_UNITS = {
    "f32": "vector units",
    "tf32": "tensor cores",
    "bf16": "matrix units",
    "f16": "matrix units",
    "fp8": "matrix units",
    "int8": "matrix units",
    "int4": "matrix units",
}
"""Where each `[flops]` rate runs: f32 on the vector units (CUDA cores, a TPU's VPU), the
others on the tensor cores (GPU) or MXUs (TPU)."""

if TYPE_CHECKING:
    from shardc.hardware.chip import Chip

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def describe(chip: Chip) -> str:
    """Multi-line description: rates, memory, links, latency, wraparound, critical intensities.

    >>> from shardc.hardware.chip import load
    >>> text = describe(load("tpu-v5e"))
    >>> ("W_uni * t_hop = 4.5e10 * 1e-6 = 45 kB" in text,
    ...  "C / W_hbm   1.97e14 / 8.1e11 = 243" in text)
    (True, True)
    """
    lines = [
        f"{chip.name}: {chip.display_name} ({chip.vendor} {chip.family})",
        f"  file        {chip.path}",
    ]
    if chip.aliases:
        lines.append(f"  aliases     {', '.join(chip.aliases)}")
    lines.append("compute (dense peak per chip)")
    for dtype, rate in chip.flops.items():
        unit = "OP/s" if dtype.startswith("int") else "FLOP/s"
        lines.append(
            f"  {dtype:<11} {_e(rate)} {unit} ({_si(rate, unit)}) on the {_units(chip, dtype)}"
        )
    lines.extend(f"  {line}" for line in _fallback_lines(chip))
    lines.append(_f32_products(chip))
    lines += [
        "memory",
        f"  HBM         {_e(chip.hbm_bytes)} B ({_si(chip.hbm_bytes, 'B')}) at "
        f"{_e(chip.hbm_bw)} B/s ({_si(chip.hbm_bw, 'B/s')})",
    ]
    lines += _link_lines(chip)
    lines += _network_lines(chip)
    lines += _intensity_lines(chip)
    lines += _calibration_lines(chip)
    return "\n".join(lines)


def _calibration_lines(chip: Chip) -> list[str]:
    """The calibration behind T_expected (`hardware.calibration`), or that there is none."""
    cal = chip.calibration
    if cal is None:
        return ["calibration", "  none: T_expected equals T_lower (shardc calibrate writes one)"]
    return [
        "calibration (T_expected)",
        f"  eta_mxu     {cal.eta_mxu:g}   eta_hbm {cal.eta_hbm:g}   "
        f"t_call {cal.t_call * 1e6:.3g} us   t_dispatch {cal.t_dispatch * 1e6:.3g} us"
        + (f"   c_expose {cal.exposed:g}" if cal.exposed is not None else ""),
        *(
            [
                f"  clock       {cal.clock.boost_mhz:g} MHz boost, {cal.clock.sustained_mhz:g} MHz "
                f"at the power limit (k_boost {cal.k_boost:.4g})"
            ]
            if cal.clock is not None
            else []
        ),
        f"  source      {cal.describe_source()}",
    ]


def summary_line(chip: Chip) -> str:
    """One line for `shardc hw list`: name, bf16 rate, HBM, W_ici (W_nvlink) and topology.

    >>> from shardc.hardware.chip import load
    >>> line = summary_line(load("tpu-v5e"))
    >>> line[:58]
    'tpu-v5e      TPU v5e             bf16 1.97e14 FLOP/s  HBM '
    >>> line[58:]
    '16 GB at 8.1e11 B/s  W_ici 9e10 B/s  2D torus (full-axis-16)'
    """
    bf16 = chip.flops["bf16"]
    return (
        f"{chip.name:<12} {chip.display_name:<19} bf16 {_e(bf16)} FLOP/s  "
        f"HBM {_si(chip.hbm_bytes, 'B')} at {_e(chip.hbm_bw)} B/s  "
        f"{_fast(chip)} {_e(chip.axis_bw)} B/s  {_topology(chip)}"
    )


def _fast(chip: Chip) -> str:
    """The symbol of the chip's fast link in formulas (`--set` binds it)."""
    return "W_ici" if chip.link_kind == "ici" else "W_nvlink"


def _fallback_lines(chip: Chip) -> list[str]:
    used: dict[str, list[str]] = {}
    for dtype in DTYPES:
        if dtype not in chip.flops:
            used.setdefault(chip.flops_for(dtype)[1], []).append(dtype)
    if not used:
        return []
    parts = [f"{', '.join(missing)} at the {source} rate" for source, missing in used.items()]
    return [f"fallback    {'; '.join(parts)} (no figure of their own)"]


def _units(chip: Chip, dtype: str) -> str:
    units = _UNITS[dtype]
    if units == "matrix units":
        return "tensor cores" if chip.family == "gpu" else "MXUs"
    return units


def _f32_products(chip: Chip) -> str:
    """What an f32 product runs at under each `--matmul-precision` (jax.lax.Precision)."""
    parts = []
    for p in PRECISIONS:
        r = chip.matmul_rate("f32", p)
        parts.append(f"{p} {_e(r.value)} ({r.basis})")
    return f"  f32 matmul  {', '.join(parts)} (jax.lax.Precision)"


def _topology(chip: Chip) -> str:
    if chip.wraparound == "switched":
        return f"NVLink domain of {chip.nvlink_domain} (switched)"
    return f"{chip.ici_axes}D torus ({chip.wraparound})"


def _link_lines(chip: Chip) -> list[str]:
    kind = "ICI" if chip.link_kind == "ici" else "NVLink"
    uni, t_hop = chip.link_bw_uni, chip.hop_latency_s
    return [
        f"interconnect: {kind}, {_topology(chip)}",
        f"  link        {_e(uni)} B/s one way, {_e(chip.link_bw_bidi)} B/s both ways; "
        f"{chip.links_per_axis} link{'s' if chip.links_per_axis > 1 else ''} per mesh axis",
        f"  {_fast(chip):<11} {_e(chip.axis_bw)} B/s per chip for a collective over one mesh axis",
        f"  hop latency {_e(t_hop)} s; latency-bound below W_uni * t_hop = "
        f"{_e(uni)} * {_e(t_hop)} = {_si(chip.latency_bound_bytes, 'B')}",
        textwrap.fill(
            f"{chip.wraparound}: {chip.wraparound_note}",
            width=100,
            initial_indent="  wraparound  ",
            subsequent_indent=" " * 14,
        ),
    ]


def _network_lines(chip: Chip) -> list[str]:
    lines = []
    if chip.dcn_bw_per_chip is not None:
        per_host = (
            f"; {_e(chip.dcn_bw_per_chip * chip.chips_per_host)} B/s per host shared by "
            f"its {chip.chips_per_host} chips"
            if chip.chips_per_host
            else ""
        )
        lat = (
            f"; latency {_e(chip.dcn_latency_s)} s (assumed)"
            if chip.dcn_latency_s is not None
            else ""
        )
        lines.append(
            f"  DCN         {_e(chip.dcn_bw_per_chip)} B/s per chip (egress){per_host}{lat}"
        )
    if chip.chips_per_host is not None:
        lines.append(f"  host        {chip.chips_per_host} chips")
    if chip.ib_bw_per_gpu is not None:
        latency = "" if chip.ib_latency_s is None else f", latency {_e(chip.ib_latency_s)} s"
        lines.append(f"  InfiniBand  {_e(chip.ib_bw_per_gpu)} B/s per GPU one way{latency}")
    if chip.pcie_bw is not None:
        lines.append(f"  PCIe        {_e(chip.pcie_bw)} B/s per chip one way")
    if chip.pod_shape is not None:
        lines.append(f"  {'pod' if chip.family == 'tpu' else 'node':<11} {chip.pod_shape}")
    return ["network", *lines] if lines else []


def _intensity_lines(chip: Chip) -> list[str]:
    c = chip.flops["bf16"]
    rows = [("W_hbm", chip.hbm_bw), (_fast(chip), chip.axis_bw)]
    if chip.scaleout_bw is not None:
        rows.append(("W_dcn" if chip.dcn_bw_per_chip is not None else "W_ib", chip.scaleout_bw))
    # Each other dtype's products turn compute-bound at its own rate over W_hbm.
    others = [f"{d} {chip.matmul_rate(d).value / chip.hbm_bw:.0f}" for d in DTYPES if d != "bf16"]
    return [
        "critical intensities (bf16, FLOP/byte)",
        *(f"  C / {label:<7} {_e(c)} / {_e(bw)} = {c / bw:.0f}" for label, bw in rows),
        f"  C_dtype / W_hbm for other products: {', '.join(others)} (f32 at default precision)",
    ]


def _e(x: float) -> str:
    """`9e10`, `1.97e14`, `3.125e9`: the book's spelling of a figure."""
    mantissa, exponent = f"{x:.4e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _si(x: float, unit: str) -> str:
    """`16 GB`, `45 kB`, `197 TFLOP/s`: decimal prefixes, three significant figures."""
    for scale, prefix in _PREFIXES:
        if x >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"
