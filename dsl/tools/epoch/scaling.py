"""Model shape and batch size from training compute: the scaling rules of Appendix 8.1.4.

Every rule is a power law in d_model, so the inverse map T -> shape is closed-form. Rounding
policy (ambiguity 6): nothing is rounded. L, E, d_model and b stay real, as the laws give them
(E = 19.8 at 2e28 FLOP); the simulator assumes the degrees divide them (a designer would round
L and E to multiples of N_PP and N_EP), and pads GEMM dims to tensor-core tiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEPTH_COEF = 0.10056
DEPTH_EXP = 0.3751
"""L = 0.10056 (d_model d_ff)^0.3751 (Appendix 8.1.4; 0.3751 = 0.2728/(1 - 0.2728))."""
FF_RATIO = 4
TOKENS_PER_PARAM = 20
GPT4_D_MODEL = 12288
"""E = 8 at d_model = 12288: E = 8 (d_model d_ff / (4 * 12288^2))^(1/2) = 8 d_model / 12288."""
BATCH_ANCHOR_TOKENS = 2**22
BATCH_ANCHOR_FLOP = 3e23
BATCH_LAWS = {"baseline": 1 / 6, "deepseek": 0.33, "none": 0.0}
"""Critical-batch exponent in T: Chinchilla-derived 1/6, DeepSeek 0.33, or a fixed 2^22."""


@dataclass(frozen=True, slots=True)
class Shape:
    """A training run: model shape, batch and token count for a compute budget (FLOP)."""

    t_flop: float
    d_model: float
    layers: float
    experts: float
    batch: float
    tokens: float

    @property
    def d_ff(self) -> float:
        return FF_RATIO * self.d_model

    @property
    def n_params(self) -> float:
        """N_p = 2 L E d_model d_ff (Eq. 1)."""
        return 2 * self.layers * self.experts * self.d_model * self.d_ff

    @property
    def steps(self) -> float:
        return self.tokens / self.batch


def sparsity(d_model: float) -> float:
    """E = 8 (d_model d_ff / (4 * 12288^2))^(1/2): 8 experts at GPT-4's d_model.

    >>> sparsity(12288)
    8.0
    """
    return 8 * math.sqrt(d_model * FF_RATIO * d_model / (4 * GPT4_D_MODEL**2))


def batch_tokens(t_flop: float, experts: float = 1, law: str = "baseline") -> float:
    """Critical batch b = 2^22 E^(1/2) (T / 3e23 FLOP)^exponent, in tokens.

    >>> batch_tokens(3e23)
    4194304.0
    """
    return (
        BATCH_ANCHOR_TOKENS * math.sqrt(experts) * (t_flop / BATCH_ANCHOR_FLOP) ** BATCH_LAWS[law]
    )


def depth(d_model: float) -> float:
    """L = 0.10056 (d_model d_ff)^0.3751 MLP blocks."""
    return DEPTH_COEF * (d_model * FF_RATIO * d_model) ** DEPTH_EXP


def shape_for(t_flop: float, sparse: bool = False, batch_law: str = "baseline") -> Shape:
    """The Appendix 8.1.4 shape for a run of `t_flop` FLOP.

    >>> s = shape_for(3e23)
    >>> round(s.d_model), round(s.layers), s.experts, f"{s.n_params:.2e}", round(s.batch)
    (6958, 129, 1.0, '5.00e+10', 4194304)
    >>> s = shape_for(2e28, sparse=True)
    >>> round(s.d_model), round(s.layers), round(s.experts, 1), f"{s.batch:.3g}"
    (30455, 391, 19.8, '1.19e+08')
    """
    # Every law is a power of d_model: L = a_L d^(2 DEPTH_EXP), E = a_E d^e and
    # T = 6 (N_p / E) 20 N_p with N_p = 2 FF_RATIO L E d^2; solve T(d) = t_flop for d.
    a_depth = depth(1.0)
    a_exp, e_exp = (sparsity(1.0), 1.0) if sparse else (1.0, 0.0)
    coef = 6 * TOKENS_PER_PARAM * (2 * FF_RATIO * a_depth) ** 2 * a_exp
    power = 2 * (2 + 2 * DEPTH_EXP) + e_exp
    d_model = (t_flop / coef) ** (1 / power)
    layers = depth(d_model)
    experts = sparsity(d_model) if sparse else 1.0
    n_params = 2 * layers * experts * d_model * FF_RATIO * d_model
    tokens = TOKENS_PER_PARAM * n_params
    return Shape(t_flop, d_model, layers, experts, batch_tokens(t_flop, experts, batch_law), tokens)
