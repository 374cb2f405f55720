"""A card's derived numbers, read off the compiled reports of its generated programs.

Each part (a layer, the routed experts, the embedding/unembedding) is compiled once on a single
device with one sequence of the card's length; the report gives the parameters (the sum of the
`param` arrays' sizes), the einsum FLOPs (forward, and with the derived backward pass) and the
bytes of the arrays a KV cache keeps. Python multiplies by the number of layers.
The transformer-math chapter "Transformer math": training costs about 6 FLOPs per parameter per
token (the "6ND" rule), plus the dot-product attention (12BT^2NH per layer, which the rule leaves
out).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from shardc.lang.syntax import DTYPES
from shardc.tools.models import ModelCard
from shardc.tools.models.programs import Layout, Part, parts


@dataclass(frozen=True, slots=True)
class PartCount:
    """One part's figures per instance (one layer), for `tokens` tokens."""

    name: str
    count: int
    params: float
    params_by_group: dict[str, float]
    forward_flops: float
    train_flops: float
    attention_train_flops: float
    """The dot products' share of `train_flops` (einsums over both T and S)."""
    kv_elements: float
    tokens: int


@dataclass(frozen=True, slots=True)
class Counts:
    """A model's parameters, FLOPs per token and KV cache, from the compiled programs."""

    card: ModelCard
    seq_len: int
    parts: tuple[PartCount, ...]
    kv_dtype: str = "bf16"
    params_by_group: dict[str, float] = field(default_factory=dict)

    @property
    def params(self) -> float:
        return sum(p.params * p.count for p in self.parts)

    @property
    def active_params(self) -> float:
        """Parameters a token uses: the routed experts count k/E of theirs (MoE)."""
        moe = self.card.moe
        if moe is None:
            return self.params
        unused = sum(p.params * p.count for p in self.parts if p.name == "experts")
        return self.params - unused * (moe.n_experts - moe.n_active) / moe.n_experts

    def _per_token(self, attr: str) -> float:
        return sum(getattr(p, attr) * p.count / p.tokens for p in self.parts)

    @property
    def forward_flops_per_token(self) -> float:
        return self._per_token("forward_flops")

    @property
    def train_flops_per_token(self) -> float:
        """Forward and backward einsum FLOPs per token, dot-product attention included."""
        return self._per_token("train_flops")

    @property
    def attention_flops_per_token(self) -> float:
        return self._per_token("attention_train_flops")

    @property
    def six_n(self) -> float:
        """The 6ND rule's FLOPs per token: 6 x the (active) parameters (the transformer-math
        chapter)."""
        return 6 * self.active_params

    def training_flops(self, tokens: float) -> dict[str, float]:
        """The whole run's FLOPs over `tokens`; `NumberError` if a product overflows a float."""
        from shardc.lang.numeric import finite

        what = f"training FLOPs over {tokens:.4g} tokens"
        return {
            "six_n": finite(self.six_n * tokens, f"{what} (6N)"),
            "compiled": finite(self.train_flops_per_token * tokens, f"{what} (compiled)"),
        }

    @property
    def kv_bytes_per_token(self) -> float:
        """Bytes of KV cache per token over all layers (keys and values, or MLA's latent)."""
        return sum(p.kv_elements * p.count / p.tokens for p in self.parts) * DTYPES[self.kv_dtype]


def count(card: ModelCard, seq_len: int | None = None, kv_dtype: str = "bf16") -> Counts:
    """Compile each part of `card` on one device and read the numbers off the reports.

    >>> from shardc.tools import models
    >>> c = count(models.load("llama3-70b"))
    >>> round(c.params / 1e9, 2), round(c.kv_bytes_per_token / 1024)
    (70.55, 320)
    """
    seq = seq_len or card.seq_len
    # Sequences enough that the routed experts' tokens split evenly over the experts (one for
    # every shipped card); the figures are per token either way.
    batch = (
        card.moe.n_experts // math.gcd(seq * card.moe.n_active, card.moe.n_experts)
        if card.moe
        else 1
    )
    out = []
    groups: dict[str, float] = {}
    for part in parts(card, Layout("single"), batch, seq):
        pc = count_part(part, tokens=batch * seq)
        out.append(pc)
        for g, n in pc.params_by_group.items():
            groups[g] = groups.get(g, 0.0) + n * pc.count
    return Counts(card, seq, tuple(out), kv_dtype, groups)


def count_part(part: Part, tokens: int) -> PartCount:
    """A part's parameters, FLOPs and KV elements from its compiled report."""
    from shardc.driver import api

    report = api.compile(part.text, name=f"<{part.name}>")
    backward_line = report.program.backward_line
    params = set(report.program.params)
    by_group: dict[str, float] = {}
    kv = 0.0
    for a in report.cost.arrays:
        elements = (
            _value(report, a.bytes_total) / DTYPES[a.dtype] * _value(report, getattr(a, "count", 1))
        )
        if a.name in params:
            g = part.groups.get(a.name, "other")
            by_group[g] = by_group.get(g, 0.0) + elements
        if a.name in part.kv:
            kv += elements
    forward = train = attention = 0.0
    for c in report.ops:
        if c.kind != "einsum":
            continue
        flops = _value(report, c.flops) * _value(report, getattr(c, "count", 1))
        train += flops
        if c.line != backward_line:
            forward += flops
        names = {s.name for s in c.flops.free_symbols}
        if {"T", "S"} <= names:
            attention += flops
    return PartCount(
        part.name,
        part.count,
        sum(by_group.values()),
        by_group,
        forward,
        train,
        attention,
        kv,
        tokens,
    )


def _value(report, expr) -> float:
    v = report.value(expr)
    if v is None:
        raise ValueError(f"unbound quantity in a model count: {expr}")
    return v
