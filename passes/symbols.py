"""The one place SymPy symbols are made: sizes (positive integers) and hardware quantities.

Hardware symbols follow the book: C (peak FLOP/s, bf16), W_hbm, W_ici (bidirectional per axis),
t_hop (per-hop ICI latency). Other dtypes get C_int8, C_fp8, ...; a program dim named C renames
the bf16 rate to C_bf16 so the two never print alike. The calibration's efficiency figures
(`hardware.calibration`) are symbols too: eta_mxu, eta_hbm (fractions of C and W_hbm reached),
t_call (per op) and t_dispatch (per program call); they appear only in the expected time, as do
the calibrated network's eta_<level> (peak fraction of a level's bus bandwidth), n_half_<level>
(the bytes per rank at which a collective reaches half of it) and alpha_<level> (its per-step
latency).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, SupportsFloat

import sympy as sp

from shardc.hardware.levels import LEVELS, PER_HOP
from shardc.lang.dtypes import NAMES as DTYPE_NAMES
from shardc.passes.memo import FIGURE_SYMBOL, SIZE_SYMBOL, memoized

if TYPE_CHECKING:
    from shardc.hardware import Chip
    from shardc.lang.syntax import Count
    from shardc.passes.cost_model import Links


def as_expr(value: sp.Basic | int | float) -> sp.Basic:
    """A SymPy object from a number or an expression, never from text (no `sympify`: user text
    is parsed by `shardc.driver.user_expr`, not evaluated).

    >>> as_expr(3), as_expr(0.5), as_expr(sp.Symbol("B"))
    (3, 0.500000000000000, B)
    """
    if isinstance(value, sp.Basic):
        return value
    if isinstance(value, bool):
        raise TypeError(f"not a number: {value!r}")
    if isinstance(value, int):
        return sp.Integer(value)
    if isinstance(value, float):
        return sp.Float(value)
    import numbers

    if isinstance(value, numbers.Integral):
        return sp.Integer(int(value))
    if isinstance(value, numbers.Real):
        return sp.Float(float(value))
    raise TypeError(f"not a number or an expression: {type(value).__name__}")


@memoized(SIZE_SYMBOL, lambda name: name)
def size_symbol(name: str) -> sp.Symbol:
    """A dimension or mesh-axis size (SymPy interns symbols, but building one with its
    assumptions costs 7 us: a 2,000-statement program asks 26,000 times)."""
    return sp.Symbol(name, positive=True, integer=True)


def count_expr(count: Count) -> sp.Expr:
    """A `repeat` count (`shardc.lang.syntax.Count`) as an expression over the size symbols."""
    expr: sp.Expr = count.fold(sp.Integer, size_symbol)
    return expr


def times_count(times: Sequence[Count]) -> sp.Expr:
    """How often an op inside the given `repeat` blocks runs: the product of their counts."""
    return sp.Mul(*[count_expr(c) for c in times]) if times else sp.Integer(1)


@memoized(FIGURE_SYMBOL, lambda name, sign="positive": (name, sign))
def figure_symbol(name: str, sign: str = "positive") -> sp.Symbol:
    """A chip figure's symbol (`sign`: "positive" or "nonnegative"): built once, as
    `size_symbol` is (the planner asks for `C` once per plan search)."""
    return sp.Symbol(name, **{sign: True})


@dataclass(frozen=True, slots=True)
class HardwareSymbols:
    """Symbols for one compilation (renamed if a program name would clash)."""

    taken: frozenset[str] = frozenset()

    def flops(self, dtype: str) -> sp.Symbol:
        name = "C" if dtype == "bf16" and "C" not in self.taken else f"C_{dtype}"
        return figure_symbol(name)

    @property
    def w_hbm(self) -> sp.Symbol:
        return figure_symbol("W_hbm")

    @property
    def w_ici(self) -> sp.Symbol:
        return figure_symbol("W_ici")

    @property
    def t_hop(self) -> sp.Symbol:
        return figure_symbol("t_hop")

    @property
    def eta_mxu(self) -> sp.Symbol:
        """The sustained fraction of the peak FLOP/s a product reaches (a calibration)."""
        return figure_symbol("eta_mxu")

    @property
    def eta_hbm(self) -> sp.Symbol:
        """The achievable fraction of W_hbm (a calibration)."""
        return figure_symbol("eta_hbm")

    @property
    def t_call(self) -> sp.Symbol:
        """The fixed cost of one op (a kernel launch; a calibration)."""
        return figure_symbol("t_call", "nonnegative")

    @property
    def t_dispatch(self) -> sp.Symbol:
        """The floor of one program call (an empty jitted call; a calibration)."""
        return figure_symbol("t_dispatch", "nonnegative")

    @property
    def k_boost(self) -> sp.Symbol:
        """The boost clock over the power-limited one (a calibration's `[clock]`; 1 without
        one): a short or memory-bound kernel's math runs this much faster than eta_mxu says."""
        return figure_symbol("k_boost")

    @property
    def c_expose(self) -> sp.Symbol:
        """The share of a memory-bound product's math left exposed beside its HBM traffic (a
        calibration's `[matmul].exposed`)."""
        return figure_symbol("c_expose", "nonnegative")

    @property
    def eta_attn(self) -> sp.Symbol:
        """The sustained fraction of the peak FLOP/s a flash-attention kernel's products reach
        (a calibration's `[attention]`; eta_mxu without one)."""
        return sp.Symbol("eta_attn", positive=True)

    def eta_net(self, level: str) -> sp.Symbol:
        """The peak fraction of a level's bus bandwidth a large collective reaches (a
        calibration)."""
        return figure_symbol(f"eta_{level}")

    def n_half(self, level: str) -> sp.Symbol:
        """The bytes per rank at which a collective on a level reaches half of eta_<level>."""
        return figure_symbol(f"n_half_{level}", "nonnegative")

    def ranks(self, level: str) -> sp.Symbol:
        """The group size at which a level's half size was measured (a calibration)."""
        return figure_symbol(f"ranks_{level}")

    def alpha(self, level: str) -> sp.Symbol:
        """A level's calibrated per-step latency (per hop on ICI and NVLink)."""
        return figure_symbol(f"alpha_{level}")

    def calibration(self) -> tuple[sp.Symbol, ...]:
        return (self.eta_mxu, self.eta_hbm, self.t_call, self.t_dispatch)

    def w(self, level: str) -> sp.Symbol:
        """Bandwidth of a network level: W_ici, W_nvlink, W_pcie, W_ib, W_dcn."""
        return figure_symbol(f"W_{level}")

    def t(self, level: str) -> sp.Symbol:
        """Latency of a level: t_hop per ICI/NVLink/PCIe hop, t_ib and t_dcn per step."""
        return self.t_hop if level in PER_HOP else figure_symbol(f"t_{level}")

    def links(self) -> Links:
        from shardc.passes.cost_model import Links

        return Links({lv: self.w(lv) for lv in LEVELS}, {lv: self.t(lv) for lv in LEVELS})

    def all_for(self, dtypes: set[str]) -> list[sp.Symbol]:
        return [
            *(self.flops(d) for d in sorted(dtypes)),
            self.w_hbm,
            *self.calibration(),
            *dict.fromkeys([*(self.w(lv) for lv in LEVELS), *(self.t(lv) for lv in LEVELS)]),
            *(f(lv) for lv in LEVELS for f in (self.eta_net, self.n_half, self.ranks, self.alpha)),
            self.k_boost,
            self.c_expose,
            self.eta_attn,
        ]

    def is_hardware(self, sym: sp.Symbol) -> bool:
        n = sym.name
        return (
            n in HARDWARE_NAMES
            or (n == "C" and "C" not in self.taken)
            or (n.startswith("C_") and n[2:] in DTYPE_NAMES)
        )


CALIBRATION_NAMES = ("eta_mxu", "eta_hbm", "t_call", "t_dispatch")
"""The efficiency symbols, in the order of `HardwareSymbols.calibration`."""

NETWORK_CALIBRATION_NAMES = frozenset(
    f"{p}_{lv}" for lv in LEVELS for p in ("eta", "n_half", "ranks", "alpha")
)
"""The calibrated network's symbols: eta_ib, n_half_ib, ranks_ib, alpha_ib, ... (one of each
a level)."""

HARDWARE_NAMES = frozenset(
    {
        "W_hbm",
        "t_hop",
        "k_boost",
        "c_expose",
        "eta_attn",
        *CALIBRATION_NAMES,
        *(f"W_{lv}" for lv in LEVELS),
        *(f"t_{lv}" for lv in LEVELS if lv not in PER_HOP),
        *NETWORK_CALIBRATION_NAMES,
    }
)
"""Names of the hardware symbols other than the FLOP/s rates (C, C_int8, ...)."""


def on_expected(
    expr: sp.Basic, syms: HardwareSymbols, dtypes: Iterable[str] = DTYPE_NAMES
) -> sp.Basic:
    """A roofline formula or condition restated on the expected time: every FLOP/s rate C is
    C * eta_mxu and W_hbm is W_hbm * eta_hbm (the network keeps its rates: it is not
    calibrated). A condition `program part > C/W_hbm` becomes `> C eta_mxu/(W_hbm eta_hbm)`;
    the per-op launch cost t_call is a constant that no condition compares.

    >>> s = HardwareSymbols()
    >>> on_expected(s.flops("bf16") / s.w_hbm, s)
    C*eta_mxu/(W_hbm*eta_hbm)
    """
    rates = {syms.flops(d): syms.flops(d) * syms.eta_mxu for d in dtypes}
    return expr.xreplace({**rates, syms.w_hbm: syms.w_hbm * syms.eta_hbm})


def chip_links(chip: Chip) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """A chip's bandwidth and latency per network level (None where it has no figure)."""
    return ({lv: chip.bandwidth(lv) for lv in LEVELS}, {lv: chip.latency(lv) for lv in LEVELS})


def planning_figures(
    chip: Chip | None,
    bindings: Mapping[str, SupportsFloat],
    taken: frozenset[str] = frozenset(),
    precision: str = "default",
) -> tuple[Links, dict[str, float]]:
    """Numbers for planning: (Links by level, {symbol name: value}) from the chip, then
    `--set` bindings. A level without a figure counts bandwidth only (W=1, t=0)."""
    from shardc.passes.cost_model import Links

    syms = HardwareSymbols(taken)
    values = (
        {s.name: v for s, v in hardware_values(chip, syms, precision).items()}
        if chip is not None
        else {}
    )
    values.update({k: float(v) for k, v in bindings.items()})
    links = Links(
        {lv: float(values.get(syms.w(lv).name, 1.0)) for lv in LEVELS},
        {lv: float(values.get(syms.t(lv).name, 0.0)) for lv in LEVELS},
    )
    return links, values


def hardware_values(
    chip: Chip, syms: HardwareSymbols, precision: str = "default"
) -> dict[sp.Symbol, float]:
    """Numbers for every hardware symbol the chip has a figure for. `C_<dtype>` is the peak
    rate of a product of that dtype (`Chip.matmul_rate`): an f32 product's follows the
    `--matmul-precision` (TF32 on an NVIDIA GPU by default, bf16 passes on a TPU)."""
    out: dict[sp.Symbol, float] = {}
    for d in DTYPE_NAMES:
        out[syms.flops(d)] = float(chip.matmul_rate(d, precision).value)
    out[syms.w_hbm] = float(chip.hbm_bw)
    cal = getattr(chip, "calibration", None)
    if cal is not None:
        out.update(
            zip(
                syms.calibration(),
                (cal.eta_mxu, cal.eta_hbm, cal.t_call, cal.t_dispatch),
                strict=True,
            )
        )
        if cal.clock is not None:
            out[syms.k_boost] = float(cal.k_boost)
        if cal.exposed is not None:
            out[syms.c_expose] = float(cal.exposed)
        if cal.attention is not None:
            out[syms.eta_attn] = float(cal.attention.efficiency)
    w, t = chip_links(chip)
    for fit in getattr(cal, "network", ()):
        out[syms.eta_net(fit.level)] = float(fit.efficiency)
        out[syms.n_half(fit.level)] = float(fit.half_bytes)
        if fit.half_ranks is not None:
            out[syms.ranks(fit.level)] = float(fit.half_ranks)
        if fit.latency_s is not None:  # the expected time takes max(alpha, the chip's)
            out[syms.alpha(fit.level)] = float(fit.latency_s)
    for level, value in w.items():
        if value is not None:
            out[syms.w(level)] = float(value)
    for level, value in t.items():
        if value is not None:
            out[syms.t(level)] = float(value)
    return out
