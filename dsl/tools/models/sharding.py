"""Which mesh axes shard which dim of a model's layer (`Sharding`: batch and sequence over
the data axes, heads, d_ff, vocabulary and d_model over the tensor axes) and the weights' layouts
(`Weights`), for the programs of `shardc.tools.models.programs`."""

from __future__ import annotations

import math
from dataclasses import dataclass

from shardc.tools.models import ModelCard

Role = str  # "data" | "seq" | "tp" | "pod"


class ShardingError(Exception):
    """A layout that cannot shard a model: a size not divisible by the axes put on it."""


class WeightSplitError(ShardingError):
    """FSDP's data axes divide no dimension of a weight (hybrid sharding may still work:
    `shardc.tools.plan.strategies`)."""


@dataclass(frozen=True, slots=True)
class Axis:
    """A mesh axis: `role` says what it shards; `link` is written after its size (`@ici(x)`).

    Roles: `data` shards the batch (or, where the batch has too few sequences, the sequence),
    `seq` the sequence, `tp` the model (tensor parallelism), `pod` the batch across pods over
    DCN with the weights replicated there (the training chapter "Scaling Between Pods")."""

    name: str
    size: int | None
    role: Role
    link: str = ""

    def text(self) -> str:
        size = "" if self.size is None else f"={self.size}"
        return f"{self.name}{size}{' ' + self.link if self.link else ''}"


@dataclass(frozen=True, slots=True)
class Layout:
    """A parallelism strategy as mesh axes with roles; `fsdp` shards the weights (and so their
    gradients and optimizer state) over the data axes (the training chapter "FSDP")."""

    strategy: str
    axes: tuple[Axis, ...] = ()
    fsdp: bool = False
    sequence_parallel: bool = True
    """With tensor axes: the residual stream between the blocks sharded over them (`In[B, D_Y]`),
    so each block is entered by an AllGather and left by a ReduceScatter (Megatron-LM's
    sequence parallelism, Korthikanti et al. 2022); False keeps it replicated, and each block is
    left by an AllReduce (Megatron-LM's tensor parallelism, Shoeybi et al. 2019)."""
    expert_parallel: bool = False
    """MoE: the routed experts sharded over the data axes whose sizes divide their number (expert
    parallelism, Lepikhin et al. 2020, "GShard"), each token dispatched to its experts' devices
    by an AllToAll and combined back by another; False keeps every expert on every device."""

    def of(self, *roles: Role) -> tuple[Axis, ...]:
        return tuple(a for a in self.axes if a.role in roles)

    def degree(self, *roles: Role) -> int:
        n = 1
        for a in self.of(*roles):
            n *= a.size or 1
        return n

    def mesh_text(self) -> str:
        return ", ".join(a.text() for a in self.axes)


def subscripted(dim: str, axes: tuple[str, ...]) -> str:
    return f"{dim}_{{{','.join(axes)}}}" if axes else dim


class Sharding:
    """The axes on each dim of the activations: pods and data axes on the batch B (or the
    experts' capacity C), data axes that do not divide B on the sequence T (and S), tensor
    axes on the heads (K first, then G; MLA: N), d_ff, the vocabulary and d_model."""

    def __init__(
        self, card: ModelCard, layout: Layout, batch: int, seq: int, capacity: int | None = None
    ):
        self.card, self.layout = card, layout
        self.tp = tuple(a.name for a in layout.of("tp"))
        self.data = tuple(a.name for a in layout.of("data", "seq"))
        self.fsdp_axes = self.data if layout.fsdp else ()
        self.sizes = {a.name: a.size for a in layout.axes}
        self.notes: list[str] = []
        batch_axes, seq_axes = [], []
        tokens = capacity is not None  # the experts' one token dim C takes every data axis
        rest_b = capacity if capacity is not None else batch
        rest_t = 1 if tokens else seq
        for ax in layout.of("pod", "data", "seq"):
            n = ax.size or 1
            on_seq = ax.role == "seq" and not tokens
            if not on_seq and (ax.size is None or rest_b % n == 0):
                batch_axes.append(ax.name)
                rest_b //= n
            elif ax.role != "pod" and (ax.size is None or rest_t % n == 0):
                seq_axes.append(ax.name)
                rest_t //= n
                if ax.role == "data":
                    part = math.gcd(n, rest_b)
                    hint = (
                        f"; to split it {part} x {n // part} over the batch and the "
                        "sequence, write it as two axes"
                        if part > 1
                        else ""
                    )
                    self.notes.append(
                        f"{ax.name}={n} shards the sequence T (the {rest_b} "
                        f"sequences left do not split {n} ways){hint}"
                    )
            else:
                what = (
                    f"{capacity} tokens per expert"
                    if tokens
                    else f"{batch} sequences x {seq} tokens"
                )
                raise ShardingError(f"{what} cannot be split further over {ax.name}={n}")
        self.batch_axes, self.seq_axes = tuple(batch_axes), tuple(seq_axes)
        self.expert_axes: tuple[str, ...] = ()
        if tokens and layout.expert_parallel and card.moe is not None:
            self.expert_axes = self._expert_axes(card.moe.n_experts)
        heads_k, heads_g = [], []
        if card.mla is None:
            rest_k, rest_g = card.n_kv_heads, card.groups
            for ax in layout.of("tp"):
                size = ax.size
                if size is None or rest_k % size == 0:
                    heads_k.append(ax.name)
                    rest_k //= size or 1
                elif rest_g % size == 0:
                    heads_g.append(ax.name)
                    rest_g //= size
                else:
                    raise ShardingError(
                        f"the {card.n_heads} heads ({card.n_kv_heads} KV heads x {card.groups} "
                        f"query groups) cannot be split over tensor axis {ax.name}={size} "
                        "(split it into two axes, one for the KV heads, one for the groups)"
                    )
        else:
            self.check("N", card.n_heads, self.tp, "n_heads")
        self.heads_k, self.heads_g = tuple(heads_k), tuple(heads_g)
        self.check("D", card.d_model, self.tp, "d_model")
        self.dim_axes = {
            "B": self.batch_axes,
            "C": self.batch_axes,
            "T": self.seq_axes,
            "S": self.seq_axes,
            "K": self.heads_k,
            "G": self.heads_g,
            "N": self.tp,
            "F": self.tp,
            "FE": self.tp,
            "V": self.tp,
        }

    def _expert_axes(self, experts: int) -> tuple[str, ...]:
        """The data axes (batch axes of the tokens) that shard the experts: the minor ones
        first (the dispatch is then one AllToAll, no reordering), each while the experts still
        divide."""
        out: list[str] = []
        rest_e = experts
        for name in reversed(self.batch_axes):
            n = self.sizes.get(name) or 0
            if n and rest_e % n == 0:
                out.insert(0, name)
                rest_e //= n
        if not out:
            raise ShardingError(
                f"no data axis divides the {experts} experts (expert "
                "parallelism shards them over the data axes)"
            )
        return tuple(out)

    def ways(self, axes: tuple[str, ...]) -> int:
        """How many shards the mesh axes `axes` make together (a symbolic axis counts 1)."""
        n = 1
        for name in axes:
            n *= self.sizes.get(name) or 1
        return n

    def check(self, dim: str, size: int, axes: tuple[str, ...], what: str) -> None:
        n = self.ways(axes)
        if size % n:
            raise ShardingError(
                f"{what} = {size} is not divisible by the {n} ways of "
                f"{', '.join(axes)} ({dim} would be sharded {subscripted(dim, axes)})"
            )

    def act(self, *dims: str, d_tp: bool = False, whole: tuple[str, ...] = ()) -> str:
        """An activation's layout: `d_tp` shards d_model over the tensor axes (the book's
        In[B, D_Y]); the dims in `whole` are not sharded (the keys' S in the scores: gathered)."""
        out = []
        for d in dims:
            axes = (
                (self.tp if self.layout.sequence_parallel else ())
                if (d == "D" and d_tp)
                else ()
                if d in whole
                else (self.dim_axes.get(d, ()))
            )
            out.append(subscripted(d, axes))
        return ", ".join(out)

    def describe(self) -> str:
        parts = []
        if self.batch_axes:
            parts.append(f"batch over {', '.join(self.batch_axes)}")
        if self.seq_axes:
            parts.append(f"sequence over {', '.join(self.seq_axes)}")
        if self.fsdp_axes:
            parts.append(f"weights over {', '.join(self.fsdp_axes)} (FSDP)")
        elif self.data or self.layout.of("pod"):
            parts.append("weights replicated over the data axes")
        if self.tp:
            parts.append(f"d_ff, heads, vocabulary and d_model over {', '.join(self.tp)}")
        return "; ".join(parts) or "one device"


def _hybrid_hint(ax: str, n: int | None, free: list[int]) -> str:
    """How to shard over part of `ax` and replicate over the rest (hybrid sharding), where a
    divisor of n larger than one splits one of the `free` dim sizes; ZeRO-3 would pad instead,
    which shardc does not model."""
    if n is None:
        return ""
    shard = max((math.gcd(n, f) for f in free), default=1)
    if shard <= 1:
        return ""
    return (
        f" (ZeRO-3 pads it, which shardc does not model; shard it {shard} ways and replicate "
        f"it {n // shard} ways instead: a batch-only axis P={n // shard} beside {ax}={shard})"
    )


class Weights:
    """Parameter declarations: tensor axes on their dim, FSDP axes on d_model where it divides
    (else the largest other dim that does), one axis at a time."""

    def __init__(self, s: Sharding):
        self.s = s
        self.lines: list[str] = []

    def param(self, name: str, *dims: tuple[str, int]) -> str:
        s = self.s
        axes: dict[str, list[str]] = {
            d: list(s.dim_axes.get(d, ())) if d != "D" else [] for d, _ in dims
        }
        if "E" in axes:
            axes["E"] = list(s.expert_axes)
        sizes = dict(dims)
        order = ["D"] * ("D" in sizes) + sorted(
            (d for d in sizes if d != "D" and not axes[d]), key=lambda d: -sizes[d]
        )
        for ax in s.fsdp_axes:
            if "E" in axes and ax in s.expert_axes:
                continue  # the experts' axis shards E already
            n = s.sizes.get(ax)
            for d in order:
                have = 1
                for other in axes[d]:
                    have *= s.sizes.get(other) or 1
                if n is None or sizes[d] % (have * n) == 0:
                    axes[d].append(ax)
                    break
            else:
                raise WeightSplitError(
                    f"{name}[{', '.join(d for d, _ in dims)}] has no dim "
                    f"that FSDP can split over {ax}={n} as well"
                    + _hybrid_hint(
                        ax,
                        n,
                        [
                            sizes[d] // math.prod(s.sizes.get(o) or 1 for o in axes[d])
                            for d in order
                        ],
                    )
                )
        return f"param {name}: bf16[{', '.join(subscripted(d, tuple(axes[d])) for d, _ in dims)}]"
