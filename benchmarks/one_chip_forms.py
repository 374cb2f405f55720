"""Candidate forms of the per-op expected time, each fitted to the same H200 rows and split.

docs/calibration.md ("Choosing the form") shows this table: for every candidate form of an
op's expected time, the figures fitted to the rows marked `fit` of the H200's calibration
(`hardware/calibration/h200.toml`, the same split as `validate_one_chip.py --fit`) and each
row's predicted / measured median. The shipped form is the power cap with exposed math; the
others are the ones tried before or beside it. Numpy only; a grid search (no closed form), so
the figures can differ from the shipped fit's in the last grid step:

    python benchmarks/one_chip_forms.py

a = F / (eta_mxu C) is the math at the power-limited clock, b = H / (eta_hbm W_hbm) the HBM
traffic, k = boost / power-limited clock (1980 / 1725 MHz, measured, not fitted), w the wave
quantization of a product (tiles of 128 x 128, 64 rows below 65, over 132 SMs: NVIDIA's
"Matrix Multiplication Background User's Guide", "Wave Quantization"), n the kernels a call
runs (2 for a product with fewer tiles of 128 x 128 than SMs, if the library splits K and
reduces the parts in a second kernel, as CUTLASS's split-K GEMM does; 1 otherwise); every form
is floored at t_dispatch.
"""

from __future__ import annotations

import math
import re

import numpy as np

from shardc import hardware

SMS = 132
"""Streaming multiprocessors of an H100 / H200 SXM (NVIDIA H100 whitepaper, Table 3)."""

FORMS = {
    "max (before)": ("t + max(a, b)", None),
    "partial overlap": ("t + max(a, b) + c min(a, b)", np.arange(0.0, 1.0001, 0.05)),
    "p-norm": ("t + (a^p + b^p)^(1/p)", np.array([1.5, 2.0, 2.5, 3.0, 4.0, 6.0])),
    "waves": ("t + max(w a, b)", None),
    "exposed math": ("t + max(a, b + c a)", np.arange(0.0, 1.0001, 0.02)),
    "power cap": ("max(t + max(a / k, b), a)", None),
    "power cap + overlap": (
        "max(t + max(a / k, b) + c min(a / k, b), a)",
        np.arange(0.0, 1.0001, 0.05),
    ),
    "power cap + p-norm": (
        "max(t + ((a / k)^p + b^p)^(1/p), a)",
        np.array([1.5, 2.0, 2.5, 3.0, 4.0, 6.0]),
    ),
    "power cap + waves": ("max(t + max(w a / k, b), w a)", None),
    "power cap + split-K": ("max(n t + max(a / k, b), a)", None),
    "power cap + exposed math (shipped)": (
        "max(t + max(a / k, b + c a / k), a)",
        np.arange(0.0, 1.0001, 0.02),
    ),
}
ETA_MXU = np.arange(0.60, 0.8001, 0.005)
ETA_HBM = np.arange(0.85, 0.9501, 0.0025)
T_CALL = np.arange(0.0, 30e-6, 0.5e-6)


def waves(case: str) -> float:
    """Whole waves over the SMs per useful tile of a `sweep_B<n>` / `square_<n>` product.

    >>> waves("sweep_B128"), round(waves("sweep_B512"), 3)
    (2.0625, 1.031)
    """
    shape = _product(case)
    if shape is None:
        return 1.0
    rows, cols = shape
    tile_rows = 64 if rows <= 64 else 128
    tiles = math.ceil(rows / tile_rows) * math.ceil(cols / 128)
    return math.ceil(tiles / SMS) * SMS / tiles


def _product(case: str) -> tuple[int, int] | None:
    m = re.fullmatch(r"(?:sweep_B|square_|f32_)(\d+)(?:_\w+)?", case)
    if not m:
        return None
    rows = int(m[1])
    return rows, rows if case.startswith(("square", "f32")) else 8192


def kernels(case: str) -> float:
    """Kernels per call if a product with fewer 128 x 128 tiles than SMs splits K (a second,
    reducing kernel).

    >>> kernels("sweep_B256"), kernels("sweep_B512"), kernels("ew_add_256MiB")
    (2.0, 1.0, 1.0)
    """
    shape = _product(case)
    if shape is None:
        return 1.0
    return 2.0 if math.ceil(shape[0] / 128) * math.ceil(shape[1] / 128) < SMS else 1.0


def model(name: str, a, b, w, k, t, x, n=1.0):
    """The form `name` on broadcast arrays (a, b at eta = 1 already divided by the grids)."""
    fast = a / k
    if name == "max (before)":
        return t + np.maximum(a, b)
    if name == "partial overlap":
        return t + np.maximum(a, b) + x * np.minimum(a, b)
    if name == "p-norm":
        return t + (a**x + b**x) ** (1 / x)
    if name == "waves":
        return t + np.maximum(w * a, b)
    if name == "exposed math":
        return t + np.maximum(a, b + x * a)
    if name == "power cap":
        return np.maximum(t + np.maximum(fast, b), a)
    if name == "power cap + exposed math (shipped)":
        return np.maximum(t + np.maximum(fast, b + x * fast), a)
    if name == "power cap + overlap":
        return np.maximum(t + np.maximum(fast, b) + x * np.minimum(fast, b), a)
    if name == "power cap + p-norm":
        return np.maximum(t + (fast**x + b**x) ** (1 / x), a)
    if name == "power cap + waves":
        return np.maximum(t + np.maximum(w * fast, b), w * a)
    if name == "power cap + split-K":
        return np.maximum(n * t + np.maximum(fast, b), a)
    raise ValueError(name)


def main() -> None:
    chip = hardware.load("h200")
    cal = chip.calibration
    assert cal is not None and cal.clock is not None
    rows = [r for r in cal.rows if r.kind != "dispatch"]
    k = cal.k_boost
    a0 = np.array([r.flops / chip.matmul_rate(r.dtype, r.precision).value for r in rows])
    b0 = np.array([r.bytes / chip.hbm_bw for r in rows])
    w = np.array([waves(r.case) if r.kind == "matmul" else 1.0 for r in rows])
    n = np.array([kernels(r.case) for r in rows])
    med = np.array([r.median_s for r in rows])
    used = np.array([r.role == "fit" for r in rows])
    em, eh, tc = np.meshgrid(ETA_MXU, ETA_HBM, T_CALL, indexing="ij")
    em, eh, tc = em[..., None], eh[..., None], tc[..., None]
    a, b = a0 / em, b0 / eh
    results = {}
    for name, (_, xs) in FORMS.items():
        best = None
        for x in xs if xs is not None else [None]:
            pred = np.maximum(cal.t_dispatch, model(name, a, b, w, k, tc, x, n))
            err = (((pred - med) / med)[..., used] ** 2).sum(axis=-1)
            i = np.unravel_index(int(np.argmin(err)), err.shape)
            if best is None or err[i] < best[0]:
                best = (err[i], i, x, pred[i] / med)
        assert best is not None
        _, i, x, ratio = best
        results[name] = (ETA_MXU[i[0]], ETA_HBM[i[1]], T_CALL[i[2]], x, ratio)
    names = list(FORMS)
    print("| case | role | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for j, r in enumerate(rows):
        cells = []
        for n in names:
            q = results[n][4][j]
            cells.append(f"**{q:.2f}**" if abs(q - 1) > 0.10 + 1e-9 else f"{q:.2f}")
        print(f"| {r.case} | {r.role} | " + " | ".join(cells) + " |")
    inside = [int((abs(results[n][4] - 1) <= 0.10 + 1e-9).sum()) for n in names]
    print("| rows within 10% | | " + " | ".join(f"{c} of {len(rows)}" for c in inside) + " |")
    print(
        "| fitted: eta_mxu, eta_hbm, t_call (, c or p) | | "
        + " | ".join(
            f"{results[n][0]:.3f}, {results[n][1]:.4f}, {results[n][2] * 1e6:.1f} us"
            + (f", {results[n][3]:g}" if results[n][3] is not None else "")
            for n in names
        )
        + " |"
    )


if __name__ == "__main__":
    main()
