"""The Epoch AI paper's closed-form model (sections 2-5, Appendix 8.3) as SymPy expressions.

Every expression counts MAC (1 MAC = 2 FLOP) and words (one FP16 number) unless its name says
FLOP, exactly as the paper's equations do; `table2` and `latency_limits` evaluate them for a
preset (through `lambdify`) and return FLOP. Equation numbers are the paper's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy as sp

from shardc.tools.epoch.presets import THREE_MONTHS_S, WORD_BYTES, Preset


def _pos(names: str) -> tuple[sp.Symbol, ...]:
    return sp.symbols(names, positive=True)


# The one place symbols are made (all positive reals; degrees and sizes are treated as reals so
# that the equations can be solved and differentiated).
b, L, E, d_model, d_ff, N_p = _pos("b L E d_model d_ff N_p")
C, B_net, B_DRAM, S, d_p, b_p, t_train, t_L = _pos("C B_net B_DRAM S d_p b_p t_train t_L")
I, J, K, N_I, N_J, N_K, n = _pos("I J K N_I N_J N_K n")  # noqa: E741 (the paper's names)
N_DP, N_TP, N_PP, N_EP, N_ff, N_m, i, m, N = _pos("N_DP N_TP N_PP N_EP N_ff N_m i m N")
b0, L0, T0, T = _pos("b0 L0 T0 T")
alpha = sp.Symbol("alpha", real=True)
c_DP, c_PP, c_TP = _pos("c_DP c_PP c_TP")

FLOP_PER_MAC = 2

# ---- Section 2: the toy model ------------------------------------------------------------------
PARAMS_EQ1 = 2 * L * E * d_model * d_ff
FORWARD_MAC = 2 * L * d_model * d_ff * b
TRAIN_MAC = 6 * L * d_model * d_ff * b
"""Forward plus backward: each GEMM's two backward GEMMs cost what it does (Section 2)."""
TRAIN_COMPUTE_EQ12 = 60 * N_p**2 / E
"""MAC for a Chinchilla run: D = 20 N_p tokens, 3 MAC per active parameter per token."""

# ---- Section 3: communication ------------------------------------------------------------------
ALLREDUCE_WORDS_EQ2 = 2 * (n - 1) / n
"""Words each of n GPUs must receive to all-reduce one word."""
NET_WORDS_EQ3 = 2 * (I * J * (N_K - 1) + K * J * (N_I - 1) + I * K * (N_J - 1))
"""Network words of a GEMM (I,K)x(K,J) sharded over N_I N_J N_K GPUs, forward + backward."""
DRAM_WORDS = 3 * (I * J * N_K + K * J * N_I + I * K * N_J)
"""DRAM words summed over GPUs, forward + backward, ideal caching (Section 3.1.2)."""
DP_WORDS = 2 * N_p * (N_DP - 1)
"""Table 1: data parallelism, words per gradient step summed over the cluster."""
TP_WORDS_PER_WORKER = 4 * L * b * (d_ff * (N_m - 1) + d_model * (N_ff - 1)) / (N_ff * N_m)
"""Section 3.1.4, per tensor-parallel worker per batch (N_TP = N_ff * N_m)."""
TP_WORDS_2D = 8 * L * b * sp.sqrt(d_model * d_ff / N_TP)
"""The large-N_TP limit with square weight tiles (Section 3.1.4)."""
PP_WORDS = 2 * b * d_model * (N_PP * i - 1)
EP_WORDS = 2 * b * d_model * (L - 1) * (N_EP - 1) / N_EP
BUBBLE_EQ5 = (N_PP - 1) / (N_PP - 1 + m)
_z = (i - 1) * sp.Max(0, N_PP - m)
BUBBLE_EQ22 = (N_PP - 1 + _z) / (N_PP - 1 + _z + i * m)
ZB_H2_MIN_MICROBATCHES = 2 * N_PP - 1
BANDWIDTH_5D = c_DP * N_DP + c_PP * N_PP + c_TP * sp.sqrt(N_TP)
"""Section 3.3: total bandwidth of 3D parallelism, up to a constant (N = N_DP N_PP N_TP)."""


def tp_2d_optimum() -> tuple[sp.Expr, sp.Expr]:
    """N_m minimising TP traffic at fixed N_TP, and the traffic there (Section 3.1.4).

    >>> nm, words = tp_2d_optimum()
    >>> nm
    sqrt(N_TP)*sqrt(d_model)/sqrt(d_ff)
    """
    traffic = TP_WORDS_PER_WORKER.subs(N_ff, N_TP / N_m)
    (n_m,) = [s for s in sp.solve(sp.diff(traffic, N_m), N_m) if s.is_positive]
    return n_m, sp.factor_terms(sp.expand(traffic.subs(N_m, n_m)))


def optimum_5d() -> dict[sp.Symbol, sp.Expr]:
    """The Section 3.3 optimum: N_DP, N_PP ~ N^(1/4) and N_TP ~ N^(1/2) (exact Lagrange form)."""
    return {
        N_DP: (N * c_PP * c_TP**2 / (4 * c_DP**3)) ** sp.Rational(1, 4),
        N_PP: (N * c_DP * c_TP**2 / (4 * c_PP**3)) ** sp.Rational(1, 4),
        N_TP: 2 * sp.sqrt(N * c_DP * c_PP) / c_TP,
    }


def p2p_frequencies(pp_levels: list[int], ep_levels: list[int], depth: int, interleave: int = 1):
    """P_PP(h), P_EP(h), P_P2P(h) for h = 0..H (Appendix 8.1.2), exact rationals.

    `pp_levels[h-1]` is N_PP(h), the pipeline factor placed on level h (innermost first).

    >>> pp, ep, p2p = p2p_frequencies([2, 2], [1, 4], depth=9)
    >>> pp, ep, sum(p2p)
    ([5/8, 1/4, 1/8], [1/4, 0, 3/4], 1)
    """
    H = len(pp_levels)
    rest = [math.prod(pp_levels[h:]) for h in range(H)] + [1]  # prod_{k>=h} N_PP(k)
    above = [interleave * r - 1 if r > 1 else 0 for r in rest]  # interfaces at level >= h
    pp = [sp.Rational(depth - interleave * math.prod(pp_levels), depth - 1)]
    pp += [sp.Rational(above[h] - above[h + 1], depth - 1) for h in range(H)]
    n_ep = math.prod(ep_levels)
    ep = [sp.Rational(1, n_ep)]
    ep += [sp.Rational(ep_levels[h] - 1, math.prod(ep_levels[h:])) for h in range(H)]
    cum_pp = [sum(pp[: h + 1]) for h in range(H + 1)]
    cum_ep = [sum(ep[: h + 1]) for h in range(H + 1)]
    p2p = [cum_pp[0] * cum_ep[0]]
    p2p += [cum_pp[h] * cum_ep[h] - cum_pp[h - 1] * cum_ep[h - 1] for h in range(1, H + 1)]
    return pp, ep, p2p


# ---- Section 4: intra-GPU arithmetic intensity ---------------------------------------------------
def balanced_square_gemm(mac_per_s: float, bytes_per_s: float, word_bytes: float = 1) -> float:
    """Side M = N = K at which 1/M + 1/N + 1/K = bandwidth/compute (Section 4.1.1).

    >>> round(balanced_square_gemm(1e15, 3.35e12), 1)   # H100, FP8: 3 x 298.5
    895.5
    """
    return 3 * mac_per_s * word_bytes / bytes_per_s


# ---- Section 5.1: the utilization cliff ----------------------------------------------------------
N_DP_EQ8 = b / (b_p * 2 * L * E)
N_TP_EQ9 = d_ff * d_model / d_p**2
N_CRITICAL_EQ10 = b * N_p / (4 * L * E * d_p**2 * b_p)
T_CRITICAL_EQ11 = N_CRITICAL_EQ10 * C * t_train
N_P_CRITICAL = (b / L) * C * t_train / (240 * d_p**2 * b_p)
T_CRITICAL_EQ13 = ((b / L) * C * t_train / (d_p**2 * b_p)) ** 2 / (960 * E)
T_LATENCY_EQ14 = ((b / L) * t_train / t_L) ** 2 / (960 * E)
D_PRIME_EQ16 = 4 * C / (3 * B_net)
SRAM_HOLDS_WEIGHTS = S / d_p**2 >= 4
B_PRIME = sp.Piecewise((16, SRAM_HOLDS_WEIGHTS), (C / B_DRAM, True))
"""16 tokens when a replica's SRAM holds weights and gradients; else the DRAM bound C/B_DRAM."""

# ---- Section 5.2: the latency wall ---------------------------------------------------------------
N_P_LIMIT_EQ17 = (b / L) * t_train / (80 * t_L)
T_LIMIT_EQ18 = 3 * ((b / L) * t_train / t_L) ** 2 / (320 * E)


def derive_t_critical() -> sp.Expr:
    """Eq. 13 from Eqs. 10-12: solve N_critical C t_train = 60 N_p^2 / E for N_p."""
    (n_p,) = sp.solve(sp.Eq(T_CRITICAL_EQ11, TRAIN_COMPUTE_EQ12), N_p)
    return TRAIN_COMPUTE_EQ12.subs(N_p, n_p)


def derive_d_prime() -> sp.Expr:
    """Eq. 16: balance 6 d'^2 b' MAC of compute against 8 d' b' received words."""
    (dp,) = sp.solve(sp.Eq(6 * d_p**2 * b_p / C, 8 * d_p * b_p / B_net), d_p)
    return dp


def derive_t_limit() -> sp.Expr:
    """Eq. 18 from Eq. 17: the run needs 4 L t_L per step and D/b = 20 N_p/b steps."""
    (n_p,) = sp.solve(sp.Eq(4 * L * t_L * 20 * N_p / b, t_train), N_p)
    return TRAIN_COMPUTE_EQ12.subs(N_p, n_p)


# ---- Appendix 8.3: batch and depth scaling with the training compute -----------------------------
def generalize(limit: sp.Expr) -> sp.Expr:
    """Solve T = limit(b/L) with b/L = (b0/L0) (T/T0)^alpha for T (Appendix 8.3)."""
    k = sp.cancel(limit / (b / L) ** 2)  # limit = k (b/L)^2
    assert not k.has(b, L), "the limit must depend on b and L only through b/L"
    return (k * ((b0 / L0) / T0**alpha) ** 2) ** (1 / (1 - 2 * alpha))


T_CRITICAL_GENERAL = generalize(T_CRITICAL_EQ13)
T_LIMIT_GENERAL = generalize(T_LIMIT_EQ18)
APPENDIX_83 = {b0: 4e6, L0: 100, T0: 3e23 / FLOP_PER_MAC}
"""Figure 11's reference run; T0 is given in FLOP and converted to MAC for the MAC formulas."""
DEEPSEEK_ALPHA = 0.33 - 0.2728 / 2
"""alpha_b - alpha_L for b ~ T^0.33 (Bi et al.) with L ~ N_p^0.2728 and N_p ~ T^(1/2)."""

BASELINE = {b: 4e6, L: 100, E: 1, t_train: THREE_MONTHS_S}
"""Section 5's inputs: b = 4e6 tokens, L = 100 blocks, dense, three months."""


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """Table 2's columns for a preset: the DGX node as one "GPU" (ambiguity 3)."""

    mac_per_s: float
    net_words_per_s: float
    dram_words_per_s: float
    sram_words: float


@dataclass(frozen=True, slots=True)
class ClosedFormRow:
    """One preset's closed-form results, in FLOP (inf where the bound never binds)."""

    preset: str
    node: NodeSpec
    d_prime: float
    b_prime: float
    sram_ratio: float
    t_crit_flop: float
    t_latency_flop: float
    t_wall_flop: float


def node_spec(preset: Preset) -> NodeSpec:
    """Node totals from the per-GPU preset: peak FP16 MAC/s, the link above the node (unidir),
    half the HBM bandwidth (Section 5.1.2's "unidirectional" DRAM), SRAM, in 2-byte words."""
    k, gpu = preset.gpus_per_node, preset.gpu
    return NodeSpec(
        mac_per_s=k * gpu.peak_flops / FLOP_PER_MAC,
        net_words_per_s=k * preset.node_network.words_per_s,
        dram_words_per_s=k * gpu.hbm_bw / 2 / WORD_BYTES,
        sram_words=k * gpu.sram_bytes / WORD_BYTES,
    )


_NUMERIC = sp.lambdify(
    (C, B_net, B_DRAM, S, t_L, b, L, E, t_train),
    (
        D_PRIME_EQ16,
        S / D_PRIME_EQ16**2,
        B_PRIME.subs(d_p, D_PRIME_EQ16),
        T_CRITICAL_EQ13.subs(b_p, B_PRIME).subs(d_p, D_PRIME_EQ16),
        T_LATENCY_EQ14,
        T_LIMIT_EQ18,
    ),
    modules="math",
)


def evaluate(
    preset: Preset,
    batch: float = 4e6,
    depth: float = 100,
    experts: float = 1,
    t_train_s: float = THREE_MONTHS_S,
) -> ClosedFormRow:
    """Table 2's row and the latency limits (Eqs. 13-18) for a preset, in FLOP.

    >>> from shardc.tools.epoch.presets import get
    >>> r = evaluate(get("h100"))
    >>> round(r.d_prime), round(r.b_prime), f"{r.t_crit_flop:.2e}", f"{r.t_wall_flop:.2e}"
    (26385, 590, '1.92e+28', '2.31e+31')
    """
    spec = node_spec(preset)
    if math.isinf(spec.net_words_per_s):  # infinite network: no bandwidth cliff
        dp, ratio, bp, tc = 0.0, math.inf, 16.0, math.inf
        *_, tl, tw = _NUMERIC(
            spec.mac_per_s,
            1.0,
            spec.dram_words_per_s,
            spec.sram_words,
            preset.t_l_s,
            batch,
            depth,
            experts,
            t_train_s,
        )
    else:
        dp, ratio, bp, tc, tl, tw = _NUMERIC(
            spec.mac_per_s,
            spec.net_words_per_s,
            spec.dram_words_per_s,
            spec.sram_words,
            preset.t_l_s,
            batch,
            depth,
            experts,
            t_train_s,
        )
    return ClosedFormRow(
        preset.name,
        spec,
        float(dp),
        float(bp),
        float(ratio),
        FLOP_PER_MAC * float(tc),
        FLOP_PER_MAC * float(tl),
        FLOP_PER_MAC * float(tw),
    )


def appendix_83(alpha_value: float, limit: sp.Expr, **values: float) -> float:
    """A generalized limit (MAC formula) at one alpha, in FLOP; `values` bind other symbols."""
    subs = {**APPENDIX_83, **BASELINE, alpha: alpha_value}
    subs.update({sp.Symbol(k, positive=True): v for k, v in values.items()})
    return FLOP_PER_MAC * float(limit.subs(subs))
