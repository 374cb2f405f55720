"""`shardc limits` results: the closed-form table (Table 2 analogue), the simulated thresholds
(Tables 3 and 4 analogues) with the paper's values beside ours, as text or JSON.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from shardc.driver.json_text import strict_dumps
from shardc.driver.text_table import aligned
from shardc.lang.units import fmt_sci
from shardc.tools.epoch import closed_form as cf
from shardc.tools.epoch import curves
from shardc.tools.epoch.presets import PRESETS, THREE_MONTHS_S, Preset
from shardc.tools.epoch.search import Point

SCHEMA = "shardc.limits/1"
"""The `schema` of `to_dict`, described by `shardc/driver/schemas/limits.schema.json`."""


@dataclass(frozen=True, slots=True)
class SimulatedRow:
    """Thresholds of one preset, and the curves they were read from."""

    preset: Preset
    sustained: float
    dense_threshold_flop: float | None
    sparse_threshold_flop: float | None
    dense_curve: tuple[Point, ...]
    sparse_curve: tuple[Point, ...]


@dataclass(frozen=True, slots=True)
class Limits:
    closed_form: tuple[tuple[Preset, cf.ClosedFormRow], ...]
    simulated: tuple[SimulatedRow, ...]
    deepseek: tuple[float, float]
    """Appendix 8.3 with alpha = 0.33 - 0.1364: H100 T_critical and T_limit, FLOP."""


def compute(
    closed: Sequence[Preset],
    simulated: Sequence[Preset],
    full_curves: bool = False,
    progress: curves.Progress | None = None,
) -> Limits:
    """Evaluate the closed form for `closed` and simulate `simulated` (dense curves to the
    latency wall with `full_curves`, as the plot needs; else each curve up to its threshold)."""
    rows = tuple((p, cf.evaluate(p)) for p in closed)
    sim = []
    for p in simulated:
        dense = curves.envelope(p, False, progress=progress) if full_curves else None
        t_dense, dense = curves.find_threshold(p, False, progress, points=dense)
        t_sparse, sparse = curves.find_threshold(p, True, progress)
        sim.append(
            SimulatedRow(
                p, curves.sustained_utilization(p), t_dense, t_sparse, tuple(dense), tuple(sparse)
            )
        )
    h100 = cf.evaluate(PRESETS["h100"])
    crit = cf.appendix_83(
        cf.DEEPSEEK_ALPHA,
        cf.T_CRITICAL_GENERAL,
        C=h100.node.mac_per_s,
        d_p=h100.d_prime,
        b_p=h100.b_prime,
    )
    wall = cf.appendix_83(cf.DEEPSEEK_ALPHA, cf.T_LIMIT_GENERAL, t_L=9e-6)
    return Limits(rows, tuple(sim), (crit, wall))


def _json_num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(f"{x:.4g}")


def _ratio(ours: float | None, paper: float | None) -> str:
    if ours is None or paper is None or not math.isfinite(ours):
        return ""
    return f"(x{ours / paper:.2f})"


def to_text(lim: Limits) -> str:
    """The report: a settings block, then the closed-form and simulated tables."""
    out = [
        "shardc limits: data-movement limits of three-month training runs (Erdil and "
        'Schneider-Joseph, "Data Movement Limits to Frontier Model Training", Epoch AI 2024)',
        f"  3 months = {THREE_MONTHS_S:.4g} s; FLOP = 2 MAC; words are FP16 (2 bytes); "
        "ratios are ours / paper",
    ]
    if lim.closed_form:
        out += [
            "",
            'closed form (Table 2 analogue: a DGX node as one "GPU", b = 4e6, L = 100, '
            "dense; Eqs. 13-18)",
        ]
        rows = []
        for p, r in lim.closed_form:
            pp = p.paper
            rows.append(
                (
                    p.name,
                    f"{r.node.mac_per_s:.3g}",
                    f"{r.node.net_words_per_s:.3g}",
                    f"{r.node.dram_words_per_s:.3g}",
                    f"{r.node.sram_words / 1e6:.0f}M",
                    f"{r.sram_ratio:.2f}",
                    f"{_kilo(r.d_prime)} / {_kilo(pp.d_prime)}",
                    _pair(r.b_prime, pp.b_prime, ".3g"),
                    _with_ratio(r.t_crit_flop, pp.t_crit_flop),
                    _pair(r.t_latency_flop, pp.t_latency_flop),
                    _pair(r.t_wall_flop, pp.t_wall_flop),
                )
            )
        out += aligned(
            (
                "preset",
                "C MAC/s",
                "B_net w/s",
                "B_DRAM",
                "SRAM w",
                "S/d^2",
                "d_prime ours / paper",
                "b_prime ours / paper",
                "T_crit FLOP ours / paper",
                "T_latency (Eq. 15)",
                "T_wall (Eq. 18)",
            ),
            rows,
            right={1, 2, 3, 4, 5},
        )
        r0 = lim.closed_form[0][1]
        out += [
            f"  T_wall / T_latency = {r0.t_wall_flop / r0.t_latency_flop:.6g} "
            "(Eq. 18 over Eq. 14: a latency-minimizing schedule instead of an efficient one)",
            f"  Appendix 8.3, DeepSeek batch scaling (alpha = {cf.DEEPSEEK_ALPHA:.3f}): h100 "
            f"T_crit {fmt_sci(lim.deepseek[0])} (paper: about 3 OOM above Table 2), "
            f"T_limit {fmt_sci(lim.deepseek[1])} (paper: up to 3e+36)",
        ]
    if lim.simulated:
        out += [
            "",
            "simulated (Tables 3 and 4 analogues: training compute at which MFU falls "
            "below 80% of single-GPU sustained utilization)",
        ]
        simulated: list[tuple[str, ...]] = []
        for s in lim.simulated:
            pp = s.preset.paper
            simulated.append(
                (
                    s.preset.name,
                    s.preset.scenario,
                    f"{s.sustained:.2f}",
                    _with_ratio(s.dense_threshold_flop, pp.dense_threshold_flop),
                    _with_ratio(s.sparse_threshold_flop, pp.sparse_threshold_flop),
                )
            )
        out += aligned(
            (
                "preset",
                "scenario",
                "sustained",
                "dense FLOP ours / paper",
                "sparse FLOP ours / paper",
            ),
            simulated,
            right={2},
        )
    return "\n".join(out) + "\n"


def _kilo(x: float | None) -> str:
    """26.4k, as Table 2 prints d'.

    >>> _kilo(26384.8), _kilo(5863.3), _kilo(None), _kilo(0.0)
    ('26.4k', '5.9k', '-', '0')
    """
    return "-" if x is None else "0" if x == 0 else f"{x / 1e3:.1f}k"


def _with_ratio(ours: float | None, paper: float | None) -> str:
    return f"{_pair(ours, paper)} {_ratio(ours, paper)}".rstrip()


def _pair(ours: float | None, paper: float | None, fmt: str = "") -> str:
    if fmt:
        a = "inf" if ours is not None and math.isinf(ours) else format(ours, fmt)
        return f"{a} / {'-' if paper is None else format(paper, fmt)}"
    return f"{fmt_sci(ours)} / {fmt_sci(paper, 0)}"


def to_dict(lim: Limits) -> dict:
    """The JSON document: `closed_form` and `simulated` rows (ours), `paper` (the same rows as
    printed in the paper, null where it prints nothing). Infinite values are null."""
    closed = [
        {
            "preset": p.name,
            "d_prime": _json_num(r.d_prime),
            "b_prime": _json_num(r.b_prime),
            "t_crit_flop": _json_num(r.t_crit_flop),
            "t_latency_flop": _json_num(r.t_latency_flop),
            "t_wall_flop": _json_num(r.t_wall_flop),
        }
        for p, r in lim.closed_form
    ]
    sim = [
        {
            "preset": s.preset.name,
            "scenario": s.preset.scenario,
            "dense_threshold_flop": _json_num(s.dense_threshold_flop),
            "sparse_threshold_flop": _json_num(s.sparse_threshold_flop),
        }
        for s in lim.simulated
    ]
    paper_closed = [
        {
            "preset": p.name,
            "d_prime": p.paper.d_prime,
            "b_prime": p.paper.b_prime,
            "t_crit_flop": p.paper.t_crit_flop,
            "t_latency_flop": p.paper.t_latency_flop,
            "t_wall_flop": p.paper.t_wall_flop,
        }
        for p, _ in lim.closed_form
    ]
    paper_sim = [
        {
            "preset": s.preset.name,
            "scenario": s.preset.scenario,
            "dense_threshold_flop": s.preset.paper.dense_threshold_flop,
            "sparse_threshold_flop": s.preset.paper.sparse_threshold_flop,
        }
        for s in lim.simulated
    ]
    return {
        "schema": SCHEMA,
        "closed_form": closed,
        "simulated": sim,
        "paper": {"closed_form": paper_closed, "simulated": paper_sim},
    }


def to_json(lim: Limits) -> str:
    return strict_dumps(to_dict(lim), indent=2) + "\n"
