"""The utilization plot of `shardc limits --plot`: MFU against training compute per preset,
the analogue of the paper's Figures 6 (DGX generations) and 8 (H100 hardware scenarios).

matplotlib is optional (`pip install 'shardc[plot]'`); it is imported here only.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from shardc.tools.epoch.curves import THRESHOLD_FRACTION  # noqa: E402
from shardc.tools.epoch.results import Limits, SimulatedRow  # noqa: E402

PANELS = (
    (
        "Figure 6 analogue: DGX nodes, InfiniBand above the node",
        ("v100", "a100", "h100", "h100-superpod"),
    ),
    (
        "Figure 8 analogue: H100 with better interconnects",
        ("h100", "h100-ll", "h100-gnvl", "h100-gnvl-ll", "h100-inf-ll"),
    ),
)


def _panel(ax: plt.Axes, rows: list[SimulatedRow], walls: dict[float, float]) -> None:
    for k, row in enumerate(rows):
        color = f"C{k}"
        xs = [p.t_flop for p in row.dense_curve]
        ys = [100 * p.mfu for p in row.dense_curve]
        ax.plot(xs, ys, color=color, lw=1.8, label=row.preset.label)
        limit = 100 * THRESHOLD_FRACTION * row.sustained
        if row.dense_threshold_flop is not None:
            ax.plot([row.dense_threshold_flop], [limit], "o", color=color, ms=6)
        paper = row.preset.paper.dense_threshold_flop
        if paper is not None:
            ax.plot([paper], [limit], "x", color=color, ms=8, mew=2)
    for t_l, wall in sorted(walls.items()):
        if any(r.preset.t_l_s == t_l for r in rows):
            ax.axvline(wall, color="0.5", ls=":", lw=1)
            ax.text(
                wall,
                98,
                f"latency wall \n(Eq. 18, \nt_L = {t_l * 1e6:.2g} us) ",
                color="0.4",
                fontsize=8,
                va="top",
                ha="right",
            )
    ax.set_xscale("log")
    ax.set_xlim(1e24, 1e34)
    ax.set_ylim(0, 100)
    ax.set_xlabel("training compute (FLOP), three-month dense run")
    ax.set_ylabel("model FLOP utilization (%)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")


def plot_utilization(lim: Limits, path: str | Path) -> Path:
    """Write the figure; a panel per group of presets that were simulated."""
    by_name = {row.preset.name: row for row in lim.simulated}
    panels = [(title, [by_name[n] for n in names if n in by_name]) for title, names in PANELS]
    panels = [(t, rows) for t, rows in panels if rows]
    extra = [r for r in lim.simulated if not any(r in rows for _, rows in panels)]
    if extra:
        panels.append(("other presets", extra))
    walls = {p.t_l_s: r.t_wall_flop for p, r in lim.closed_form}
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False)
    for ax, (title, rows) in zip(axes[0], panels, strict=True):
        _panel(ax, rows, walls)
        ax.set_title(title, fontsize=10)
    fig.suptitle(
        "Utilization of three-month training runs (the Epoch AI paper's model as simulated by "
        "shardc). o: our threshold, x: the paper's (Tables 3, 4)",
        fontsize=10,
    )
    fig.tight_layout()
    from shardc.driver.files import atomic_path

    try:
        with atomic_path(str(path), flag="--plot") as tmp:  # checked, then renamed over it
            fig.savefig(tmp, dpi=130)
    finally:
        plt.close(fig)
    return Path(path)
