"""Utilization against training compute (Figures 6 and 8) and where it falls below 80% of a
single GPU's sustained utilization (Tables 3 and 4).

Power-of-two clusters make the MFU of "the smallest cluster that finishes in three months" a
sawtooth: just past the compute a cluster saturates, the next one is twice as big and finishes
early. The curve here is its envelope, the limit of fine cluster granularity: for each
power-of-two cluster, the compute it trains in *exactly* three months, and the MFU there.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from shardc.tools.epoch.gemm import GemmModel
from shardc.tools.epoch.presets import THREE_MONTHS_S, Preset
from shardc.tools.epoch.scaling import shape_for
from shardc.tools.epoch.search import MAX_BITS, Best, Point, next_size, search
from shardc.tools.epoch.step import DEFAULT_OPTIONS, Options

THRESHOLD_FRACTION = 0.8
EXACT_DECADES = 0.004
"""Tolerance of a saturating run's root, in decades of compute."""
CERTIFY_DECADES = 0.01
"""How far below its root a certified point may lie, in decades of compute."""
CERTIFY_STEPS = 4
CERTIFY_LEADERS = 6
"""How many of the smaller cluster's leading degree tuples (each one bit larger) a certifying
search tries: enough to certify every point but the few next to the threshold."""
SLOPE = math.log(10)
"""d ln(t_run) / d log10(T) on one cluster at constant utilization (t_run is proportional to
T): the Newton slope of a certifying run."""

Progress = Callable[[str], None]


def sustained_utilization(preset: Preset) -> float:
    """What one GPU achieves on large GEMMs (the GEMM model at 16384^3): the reference of the
    80% threshold, equal to the preset's sustained/boost clock ratio up to 0.1%."""
    return GemmModel(preset.gpu).single_gpu_utilization()


def saturating_run(
    preset: Preset,
    n_bits: int,
    guess: float,
    sparse: bool = False,
    batch_law: str = "baseline",
    options: Options = DEFAULT_OPTIONS,
    tol_decades: float = EXACT_DECADES,
) -> Point | None:
    """The compute that 2**n_bits GPUs train in exactly t_train, and the MFU there.

    Root of log(t_run / t_train) in log T: bracketed from `guess` by Newton steps (SLOPE) that
    overshoot by a margin growing to 0.3 decades, then secant steps (bisection after two on one
    side). The first full search hands its leading degree tuples to the later ones. None if
    the cluster cannot train any model in time.
    """
    run = _saturate(preset, n_bits, guess, sparse, batch_law, options, tol_decades)
    return None if run is None else run[0]


def _saturate(
    preset: Preset,
    n_bits: int,
    guess: float,
    sparse: bool,
    batch_law: str,
    options: Options,
    tol_decades: float,
    hint: np.ndarray | None = None,
) -> tuple[Point, np.ndarray] | None:
    """`saturating_run`, and the leading degree tuples of its first full search (which takes
    its first upper bound from `hint`, see `search`)."""
    leaders: list[np.ndarray] = []

    def g(x: float) -> tuple[float, Best | None]:
        shape = shape_for(10**x, sparse, batch_law)
        best, lead = search(shape, preset, n_bits, options, leaders[0] if leaders else None, hint)
        if best is None and leaders:  # the shape moved away from the warm start
            best, lead = search(shape, preset, n_bits, options, hint=leaders[0])
        if best is None:
            return math.inf, None
        if not leaders:
            leaders.append(lead)
        return math.log(best.t_step * shape.steps / THREE_MONTHS_S), best

    x = math.log10(guess)
    gx, bx = g(x)
    lo = hi = None
    margin = tol_decades  # Newton steps (SLOPE) past the root, by a growing margin
    for _ in range(40):
        if gx <= 0:
            lo = (x, gx, bx)
            if hi is not None:
                break
            x += -gx / SLOPE + margin
        else:
            hi = (x, gx, bx)
            if lo is not None or not math.isfinite(gx):
                break
            x -= gx / SLOPE + margin
        margin = min(4 * margin, 0.3)
        gx, bx = g(x)
    if lo is None or hi is None or not math.isfinite(hi[1]):
        return None
    streak = 0
    while hi[0] - lo[0] > tol_decades and min(-lo[1], hi[1]) > 1e-3:
        (xa, ga, _), (xb, gb, _) = lo, hi
        x = (xa + xb) / 2 if abs(streak) >= 2 else xa - ga * (xb - xa) / (gb - ga)
        x = min(max(x, xa + 0.05 * (xb - xa)), xb - 0.05 * (xb - xa))
        gx, bx = g(x)
        if gx <= 0:
            lo, streak = (x, gx, bx), min(streak, 0) - 1
        else:
            hi, streak = (x, gx, bx), max(streak, 0) + 1
    # the feasible side, unless the other is within 0.1% (t_run can jump where the optimum
    # switches configuration, which ends the search on the interval width)
    x, gx, best = hi if hi[1] < 1e-3 < -lo[1] else lo
    assert best is not None
    return _point(preset, x, gx, best), leaders[0]


def _point(preset: Preset, x: float, gx: float, best: Best, exact: bool = True) -> Point:
    """The run of 10**x FLOP on `best`'s cluster, whose t_run is t_train e**gx."""
    t, t_run = 10**x, THREE_MONTHS_S * math.exp(gx)
    return Point(
        t, t / (best.n_gpu * preset.gpu.peak_flops * t_run), best.n_gpu, t_run, best, exact
    )


def _certify(
    preset: Preset,
    n_bits: int,
    guess: float,
    sparse: bool,
    batch_law: str,
    options: Options,
    candidates: np.ndarray,
) -> tuple[Point, np.ndarray, float] | None:
    """A run on 2**n_bits GPUs that finishes within t_train, at most CERTIFY_DECADES below the
    compute where it takes exactly t_train, searching only `candidates`: Newton steps (SLOPE)
    aimed half that tolerance below the root. Returns the run (exact=False), its leading
    tuples and the utilization it certifies: T / (n peak t_train) at the run's T. The exact
    curve's point is at or above it (a restricted search is never faster, so its root comes
    no later, and utilization at a root is T / (n peak t_train)). None if the steps do not
    settle."""
    x = math.log10(guess)
    lo: tuple[float, float, Best, np.ndarray] | None = None  # feasible: x, g, best, leaders
    hi: float | None = None  # infeasible x
    for _ in range(CERTIFY_STEPS):
        shape = shape_for(10**x, sparse, batch_law)
        best, lead = search(shape, preset, n_bits, options, candidates)
        if best is None:
            return None
        gx = math.log(best.t_step * shape.steps / THREE_MONTHS_S)
        if gx <= 0:
            lo = (x, gx, best, lead) if lo is None or x > lo[0] else lo
        else:
            hi = x if hi is None else min(hi, x)
        if lo is not None and (
            -lo[1] <= CERTIFY_DECADES * SLOPE or (hi is not None and hi - lo[0] <= CERTIFY_DECADES)
        ):
            x, gx, best, lead = lo
            point = _point(preset, x, gx, best, exact=False)
            return point, lead, point.t_flop / (best.n_gpu * preset.gpu.peak_flops * THREE_MONTHS_S)
        x -= gx / SLOPE + CERTIFY_DECADES / 2
        if lo is not None and hi is not None:  # a jump in t_run: stay inside the bracket
            x = min(max(x, lo[0] + 0.25 * (hi - lo[0])), hi - 0.25 * (hi - lo[0]))
    return None


MFU_FLOOR = 0.02
"""Curves end where utilization is below 2%: past the latency wall, in practice."""


def envelope(
    preset: Preset,
    sparse: bool = False,
    t_min: float = 1e24,
    t_max: float = 1e36,
    stop_below: float | None = None,
    progress: Progress | None = None,
    batch_law: str = "baseline",
    options: Options = DEFAULT_OPTIONS,
) -> list[Point]:
    """Utilization against compute: one point per power-of-two cluster from the one that
    saturates near `t_min`, until more GPUs stop helping (the latency wall), MFU_FLOOR,
    `t_max`, or (with `stop_below`) the first point whose MFU is below it."""
    rate = preset.gpu.sustained_flops * THREE_MONTHS_S
    n_bits = max(0, int(math.floor(math.log2(max(t_min / rate, 1.0)))))
    guess = 2**n_bits * rate
    points: list[Point] = []
    guesses: list[float] = []
    hints: list[np.ndarray | None] = []
    kind = "sparse" if sparse else "dense"
    # With `stop_below`, a point only has to be known to lie above it until the curve nears
    # it: such points are certified (`_certify`) from the previous point's leading tuples
    # with one more bit each. The first point that is not certified, the ones after it and
    # the last one above it are exact.
    certifying, leaders = stop_below is not None, None
    while n_bits <= MAX_BITS:
        if progress:
            progress(f"{preset.name} {kind}: {2**n_bits:,} GPUs")
        run = None
        if certifying and leaders is not None:
            run = _certify(
                preset,
                n_bits,
                guess,
                sparse,
                batch_law,
                options,
                next_size(leaders[:CERTIFY_LEADERS]),
            )
            if (
                run is None
                or run[2] <= stop_below
                or run[0].t_flop > t_max
                or _stalled(points, run[0])
            ):
                certifying, run = False, None
                if points and not points[-1].exact:
                    again = _saturate(
                        preset,
                        n_bits - 1,
                        guesses[-1],
                        sparse,
                        batch_law,
                        options,
                        EXACT_DECADES,
                        hints[-1],
                    )
                    if again is not None:
                        points[-1], leaders = again
                        guess = _next_guess(points)
        hint = None if leaders is None else next_size(leaders)
        if run is None:
            run = _saturate(preset, n_bits, guess, sparse, batch_law, options, EXACT_DECADES, hint)
        if run is None or _stalled(points, run[0]):
            break
        p, leaders = run[0], run[1]
        points.append(p)
        guesses.append(guess)
        hints.append(hint)
        if p.t_flop > t_max or p.mfu < max(MFU_FLOOR, stop_below or 0.0):
            break
        guess = _next_guess(points)
        n_bits += 1
    return points


def _stalled(points: list[Point], p: Point) -> bool:
    """Twice the GPUs train less than 2% more: the latency wall."""
    return bool(points) and p.t_flop < points[-1].t_flop * 1.02


def _next_guess(points: list[Point]) -> float:
    p = points[-1]
    return 2 * p.t_flop * (p.mfu / points[-2].mfu if len(points) > 1 else 1.0)


def threshold(points: list[Point], limit: float) -> float | None:
    """Compute at which the curve's MFU first falls below `limit`, interpolated in log T.

    >>> pts = [Point(1e26, 0.6, 1, 0, None), Point(1e28, 0.4, 2, 0, None)]
    >>> f"{threshold(pts, 0.5):.1e}"
    '1.0e+27'
    """
    for a, b in zip(points, points[1:], strict=False):
        if b.mfu < limit <= a.mfu:
            xa, xb = math.log10(a.t_flop), math.log10(b.t_flop)
            return 10 ** (xa + (a.mfu - limit) * (xb - xa) / (a.mfu - b.mfu))
    if points and points[0].mfu < limit:
        return points[0].t_flop
    return None


def find_threshold(
    preset: Preset,
    sparse: bool = False,
    progress: Progress | None = None,
    batch_law: str = "baseline",
    options: Options = DEFAULT_OPTIONS,
    points: list[Point] | None = None,
) -> tuple[float | None, list[Point]]:
    """Tables 3 and 4: where MFU falls below 80% of single-GPU sustained utilization. Uses
    `points` when given (a curve already computed), else computes the curve up to there."""
    limit = THRESHOLD_FRACTION * sustained_utilization(preset)
    if points is None:
        points = envelope(
            preset,
            sparse,
            stop_below=limit,
            progress=progress,
            batch_law=batch_law,
            options=options,
        )
    return threshold(points, limit), points
