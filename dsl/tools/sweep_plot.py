"""A sweep as plots (matplotlib, imported here only): quantities against one size, and the
roofline. `shardc sweep --plot`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    pass
from shardc.lang.units import fmt_grid
from shardc.tools.sweep import UNITS, Sweep, SweepError, label_of


def short_labels(names: Sequence[str]) -> list[str]:
    """Legend labels: program stems without their common prefix and suffix.

    >>> short_labels(["programs/mlp-dp-train.shard", "programs/mlp-fsdp-tp-train.shard"])
    ['dp', 'fsdp-tp']
    """
    stems = [Path(n).stem for n in names]
    if len(stems) < 2:
        return stems
    pre = len(_common([s.split("-") for s in stems]))
    post = len(_common([s.split("-")[::-1] for s in stems]))
    out = []
    for s in stems:
        parts = s.split("-")
        mid = parts[pre : len(parts) - post] if len(parts) > pre + post else parts
        out.append("-".join(mid))
    return out if len(set(out)) == len(out) else stems


def _common(lists: list[list[str]]) -> list[str]:
    out = []
    for items in zip(*lists, strict=False):
        if len(set(items)) != 1:
            break
        out.append(items[0])
    return out


def _figure(width: float = 7.5, height: float = 5.0):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots()


def _loggable(*arrays: np.ndarray) -> bool:
    """No negative values and some positive ones (zeros, e.g. no communication, are masked)."""
    finite = [np.asarray(a)[np.isfinite(a)] for a in arrays]
    return all(np.all(v >= 0) for v in finite) and any(np.any(v > 0) for v in finite)


def plot_lines(
    sweeps: Sequence[Sweep],
    path: str | Path,
    quantities: Sequence[str],
    labels: Sequence[str],
    title: str | None = None,
    inputs: tuple[str | None, ...] = (),
) -> Path:
    """The quantities against the swept size, log-log, one color per program (per quantity
    for one program), T_math dashed, with a dashed vertical line where T_math meets T_comms
    (and T_hbm), and a dotted one where the plan changes (`Sweep.plan_changes`). A quantity
    equal in several programs is drawn once."""
    fig, ax = _figure()
    g = sweeps[0].grids[0]
    x = g.values
    many = len(sweeps) > 1
    styles = {"t_math_s": "--", "t_lower_s": ":", "t_upper_s": "-."}
    drawn: list[tuple[str, np.ndarray]] = []
    color_of: dict[tuple[int, str], str] = {}
    for qi, q in enumerate(quantities):
        groups: list[list[int]] = []
        for k, s in enumerate(sweeps):
            for grp in groups:
                if np.allclose(
                    sweeps[grp[0]].values[q], s.values[q], rtol=1e-12, atol=0, equal_nan=True
                ):
                    grp.append(k)
                    break
            else:
                groups.append([k])
        for grp in groups:
            if many:
                shared = len(grp) > 1
                color = ("black" if len(grp) == len(sweeps) else "0.35") if shared else f"C{grp[0]}"
                who = (
                    ("all" if len(grp) == len(sweeps) else " & ".join(labels[k] for k in grp))
                    if shared
                    else labels[grp[0]]
                )
                label = f"{who}: {label_of(q)}"
            else:
                color = "black" if q == "t_math_s" else f"C{qi}"
                label = label_of(q)
            y = sweeps[grp[0]].values[q]
            ax.plot(x, y, styles.get(q, "-"), color=color, lw=2, label=label)
            drawn.append((q, y))
            for k in grp:
                color_of[(k, q)] = color
    shown = set(quantities)
    marks = [
        (k, c)
        for k, s in enumerate(sweeps)
        for c in s.crossovers
        if c.a in shown and c.b in shown and not c.jump
    ]  # a jump is a plan change
    ax.set_xscale("log" if np.all(x > 0) else "linear")
    if _loggable(*(y for _, y in drawn)):
        ax.set_yscale("log", nonpositive="mask")
    for n, (k, c) in enumerate(marks):
        color = color_of[(k, c.b)] if many else "0.3"
        y_at = (
            np.interp(c.at, x, sweeps[k].values[c.a])
            if g.scale == "lin"
            else np.exp(
                np.interp(np.log(c.at), np.log(x), np.log(np.abs(sweeps[k].values[c.a]) + 1e-300))
            )
        )
        ax.axvline(c.at, color=color, ls="--", lw=1, alpha=0.8)
        ax.plot([c.at], [y_at], "o", color=color, ms=6, zorder=5)
        text = f"{label_of(c.a)} = {label_of(c.b)}\n{c.axis} = {fmt_grid(c.at)}"
        ax.annotate(
            text,
            (c.at, 1 - 0.11 * (n % 4) - 0.02),
            xycoords=("data", "axes fraction"),
            xytext=(4, 0),
            textcoords="offset points",
            va="top",
            fontsize=8,
            color=color,
            bbox={"facecolor": "white", "alpha": 0.85, "lw": 0, "pad": 1},
        )
    for k, s in enumerate(sweeps):
        # several programs: a dotted line in the program's color (one legend entry says what
        # they are); one program: each change labelled with its plans
        color = f"C{k}" if many else "0.45"
        for n, pc in enumerate(s.plan_changes):
            ax.axvline(pc.at, color=color, ls=":", lw=1.5, alpha=0.9)
            if not many:
                ax.annotate(
                    f"plan {pc.before} -> {pc.after}\n{pc.axis} = {fmt_grid(pc.at)}",
                    (pc.at, 0.02 + 0.1 * (n % 3)),
                    xycoords=("data", "axes fraction"),
                    xytext=(4, 0),
                    textcoords="offset points",
                    va="bottom",
                    fontsize=8,
                    color=color,
                    bbox={"facecolor": "white", "alpha": 0.85, "lw": 0, "pad": 1},
                )
    if many and any(s.plan_changes for s in sweeps):
        ax.plot([], [], ls=":", color="0.45", label="plan changes (dotted, per program)")
    ax.set_xlabel(f"{g.name} ({'global batch size' if g.name == 'B' else 'swept size'})")
    units = {UNITS.get(q) for q in quantities}
    ax.set_ylabel("time per step (s)" if units == {"s"} else ", ".join(map(label_of, quantities)))
    s0 = sweeps[0]
    ax.set_title(
        title
        or f"{' vs '.join(label_of(q) for q in quantities)} against {g.name} "
        f"({s0.hardware or 'no chip'}, {s0.model} model)",
        fontsize=11,
    )
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", alpha=0.1)
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, path, inputs)


def plot_roofline(
    sweeps: Sequence[Sweep],
    path: str | Path,
    labels: Sequence[str],
    title: str | None = None,
    inputs: tuple[str | None, ...] = (),
) -> Path:
    """Achieved FLOP/s (FLOPs / T_lower) against arithmetic intensity (FLOPs per HBM byte) for
    each swept point, under the chip's roofline min(C, intensity * W_hbm) (the roofline chapter)."""
    roofs = {s.roof for s in sweeps if s.roof is not None}
    if len(roofs) != 1:
        raise SweepError(
            "a roofline needs one chip with C and W_hbm for every program"
            if not roofs
            else "a roofline draws one chip: the programs differ"
        )
    ((c, w),) = roofs
    if not all("intensity" in s.values and "flops_per_s" in s.values for s in sweeps):
        raise SweepError("a roofline needs intensity and flops_per_s to evaluate at every point")
    from matplotlib.colors import LogNorm, Normalize
    from matplotlib.lines import Line2D

    fig, ax = _figure(8.0, 5.2)
    g = sweeps[0].grids[0]
    xs = np.concatenate([s.values["intensity"] for s in sweeps])
    ys = np.concatenate([s.values["flops_per_s"] for s in sweeps])
    xs, ys = xs[np.isfinite(xs) & (xs > 0)], ys[np.isfinite(ys) & (ys > 0)]
    if not len(xs) or not len(ys):
        raise SweepError("no point has a positive intensity and FLOP/s to plot")
    critical = c / w
    lo, hi = min(xs.min(), critical) / 4, max(xs.max(), critical) * 4
    grid = np.geomspace(lo, hi, 400)
    roof = np.minimum(c, grid * w)
    floor = min(ys.min(), roof.min()) / 2
    ax.fill_between(
        grid,
        roof,
        floor,
        where=grid <= critical,
        color="#f4b6b6",
        alpha=0.5,
        lw=0,
        label=f"HBM-bandwidth-bound (intensity < {critical:.0f})",
    )
    ax.fill_between(
        grid,
        roof,
        floor,
        where=grid >= critical,
        color="#bfe3b4",
        alpha=0.5,
        lw=0,
        label="compute-bound",
    )
    ax.plot(
        grid,
        roof,
        color="black",
        lw=2.2,
        label=f"roofline min(C, intensity x W_hbm): C = {c:.3g}, W_hbm = {w:.3g}",
    )
    ax.axvline(critical, color="0.3", ls="--", lw=1)
    ax.annotate(
        f"critical intensity\nC / W_hbm = {critical:.0f}",
        (critical, floor),
        xytext=(5, 8),
        textcoords="offset points",
        fontsize=9,
        color="0.2",
    )
    x = g.values
    norm = LogNorm(x.min(), x.max()) if g.scale == "log" else Normalize(x.min(), x.max())
    markers = "osD^v<>ph*"
    handles = []
    for k, s in enumerate(sweeps):
        m = markers[k % len(markers)]
        ax.plot(s.values["intensity"], s.values["flops_per_s"], "-", color="0.55", lw=0.8, zorder=2)
        points = ax.scatter(
            s.values["intensity"],
            s.values["flops_per_s"],
            c=x,
            cmap="viridis",
            norm=norm,
            marker=m,
            s=26,
            edgecolors="black",
            linewidths=0.3,
            zorder=3,
        )
        handles.append(
            Line2D(
                [],
                [],
                ls="-",
                color="0.55",
                marker=m,
                markerfacecolor="0.8",
                markeredgecolor="black",
                label=labels[k],
            )
        )
    fig.colorbar(points, ax=ax, label=f"{g.name} (swept)", pad=0.01)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(floor, c * 30)  # room above the roof for the legend
    ax.set_xlabel("arithmetic intensity (FLOPs per HBM byte, per device)")
    ax.set_ylabel("achieved FLOP/s per device (FLOPs / T_lower)")
    s0 = sweeps[0]
    ax.set_title(
        title
        or f"Roofline on {s0.hardware}, {g.name} from {fmt_grid(x[0])} to "
        f"{fmt_grid(x[-1])} ({s0.model} model)",
        fontsize=11,
    )
    ax.grid(True, which="major", alpha=0.3)
    area, _ = ax.get_legend_handles_labels()
    ax.legend(handles=[*area, *handles], fontsize=8, loc="upper left", framealpha=0.95)
    return _save(fig, path, inputs)


def _save(fig, path: str | Path, inputs: tuple[str | None, ...] = ()) -> Path:
    """Save the figure to `path` whole (`shardc.driver.files.atomic_path`: checked, then a
    temporary file renamed over it); `inputs` are the files it must not be."""
    from shardc.driver.files import atomic_path

    with atomic_path(str(path), flag="--plot", inputs=inputs) as tmp:
        fig.savefig(tmp, dpi=130)
    return Path(path)
