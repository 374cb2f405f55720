"""`.shard` programs generated from a model card: one transformer layer with its backward pass,
and the embedding / unembedding, sharded by a `Layout` (which mesh axis shards what).

The layer is the book's (the transformer-math chapter "Transformer math"): grouped-query attention
with separate K (KV heads) and G (query heads per KV head) dims, Q/K/V/O projections and the two dot
products over the sequence, then the gated MLP's three matrices (the training chapter: "W_in1,
W_in2, W_out"). The attention's softmax is `softmax_{S}` (max, exp, sum and divide over the keys).
Norms, residual additions and rotary embeddings are left out (they are elementwise, O(BTD) next to
the matmuls). A MoE layer (DeepSeek) is the attention and the shared experts, with the routed
experts in a program of their own run on the dispatched tokens (E experts x C tokens each,
C = B*T*k/E with balanced routing); the dispatch and combine permutations are not modelled.

Sharding follows the training chapter's table: data axes shard the batch (and the sequence when the
batch has too few sequences, the LLaMA 3 chapter's "FSDP over both the batch and sequence axes"),
FSDP shards every weight over the data axes too, tensor axes shard d_ff, the heads, the vocabulary
and the residual stream's d_model (`In[B_X, D_Y]`), pod axes (DCN) shard only the batch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from shardc.lang.quoting import quoted
from shardc.lang.visible import visible
from shardc.tools.models import ModelCard
from shardc.tools.models.sharding import Layout, Sharding, ShardingError, Weights, subscripted


@dataclass(frozen=True, slots=True)
class Part:
    """One generated program and how many times the model runs it per step."""

    name: str  # "layer", "moe-layer", "experts" or "head"
    count: int
    text: str
    groups: dict[str, str] = field(default_factory=dict)
    """Parameter name -> what it belongs to: attention, mlp, router, experts, embeddings."""
    kv: tuple[str, ...] = ()
    """The arrays a KV cache keeps for each token (Kc, Vc; MLA: the latent and rotary key)."""
    notes: tuple[str, ...] = ()
    """What the sharding had to decide that the layout did not say (a data axis on T)."""


def parts(
    card: ModelCard, layout: Layout, batch: int, seq: int, hw: str | None = None
) -> list[Part]:
    """Every program of one training step of `batch` sequences of `seq` tokens."""
    moe = card.moe
    out = []
    dense = card.n_layers if moe is None else moe.first_dense_layers
    if dense:
        out.append(layer(card, layout, batch, seq, hw, part="layer", count=dense))
    if moe is not None:
        n = card.n_layers - moe.first_dense_layers
        out.append(layer(card, layout, batch, seq, hw, part="moe-layer", count=n))
        out.append(experts(card, layout, batch, seq, hw, count=n))
    out.append(head(card, layout, batch, seq, hw))
    return out


def part(
    card: ModelCard, layout: Layout, batch: int, seq: int, name: str, hw: str | None = None
) -> Part:
    for p in parts(card, layout, batch, seq, hw):
        if p.name == name:
            return p
    names = ", ".join(p.name for p in parts(card, layout, batch, seq, hw))
    raise ShardingError(f"{card.name} has no part {name!r} (it has {names})")


# ---- the programs ----------------------------------------------------------------------------


def layer(
    card: ModelCard,
    layout: Layout,
    batch: int,
    seq: int,
    hw: str | None,
    part: str = "layer",
    count: int = 1,
) -> Part:
    """One transformer layer (attention, then the MLP) with `backward`."""
    s = Sharding(card, layout, batch, seq)
    moe = card.moe if part == "moe-layer" else None
    d_ff = moe.n_shared * moe.d_ff_expert if moe is not None else card.d_ff
    dims = {"B": batch, "T": seq, "S": seq, "D": card.d_model, "F": d_ff}
    if d_ff:
        s.check("F", d_ff, s.tp, "d_ff")
    w = Weights(s)
    lines: list[str] = []
    a = s.act  # activation subscripts
    lines.append(
        f"In: bf16[{a('B', 'T', 'D', d_tp=True)}]   # the residual stream entering the layer"
    )
    if card.mla is None:
        kv, groups = _gqa(card, s, w, dims, lines)
    else:
        kv, groups = _mla(card, s, w, dims, lines)
    if moe is not None:
        dims["E"] = moe.n_experts
        s.check("E", moe.n_experts, (), "n_experts")
        w.lines.append(w.param("W_R", ("D", card.d_model), ("E", moe.n_experts)))
        lines.append(
            f"Router = A[{a('B', 'T', 'D')}] ·_D W_R"
            "   # routing logits (not on the path to Out, so no gradient)"
        )
        groups["W_R"] = "router"
    if moe is None or moe.n_shared:
        groups.update(_mlp(card, s, w, "F", d_ff, lines, shared=moe is not None))
    else:  # no shared experts (Mixtral): the routed experts are the whole MLP
        del dims["F"]
        lines.append(
            f"Out[{a('B', 'T', 'D', d_tp=True)}] = A   # the layer's output, before "
            "the routed experts"
        )
    header = _header(
        card,
        layout,
        s,
        dims,
        hw,
        f"one {'MoE ' if moe else ''}transformer layer"
        + (
            (
                " (attention and the shared experts)"
                if moe.n_shared
                else " (attention and the router; no shared experts)"
            )
            if moe
            else ""
        ),
    )
    body = w.lines + lines + ["backward"]
    return Part(part, count, "\n".join(header + body) + "\n", groups, kv, tuple(s.notes))


def keys(spec: str) -> str:
    """A layout of the layer input's dims with the sequence read as the keys' S: the query
    positions T renamed (`B_{X}, S, D` -> `B_{X}, T->S, D`), one array for both.

    >>> keys("B_{X}, S_{Z}, D")
    'B_{X}, T->S_{Z}, D'
    """
    return ", ".join(f"T->{e}" if e == "S" or e.startswith("S_") else e for e in spec.split(", "))


def _gqa(
    card: ModelCard, s: Sharding, w: Weights, dims: dict[str, int], lines: list[str]
) -> tuple[tuple[str, ...], dict[str, str]]:
    k, g, h = card.n_kv_heads, card.groups, card.d_head
    dims.update({"K": k, "G": g, "H": h})
    a = s.act
    w.lines.append(w.param("W_Q", ("D", card.d_model), ("K", k), ("G", g), ("H", h)))
    w.lines.append(w.param("W_K", ("D", card.d_model), ("K", k), ("H", h)))
    w.lines.append(w.param("W_V", ("D", card.d_model), ("K", k), ("H", h)))
    w.lines.append(w.param("W_O", ("K", k), ("G", g), ("H", h), ("D", card.d_model)))
    q, kv = a("B", "T", "K", "G", "H"), a("B", "S", "K", "H")
    lines += [
        f"Q[{q}] = In[{a('B', 'T', 'D')}] ·_D W_Q",
        f"Kc[{kv}] = In[{keys(a('B', 'S', 'D'))}] ·_D W_K   # the keys read In along S",
        f"Vc[{kv}] = In[{keys(a('B', 'S', 'D'))}] ·_D W_V",
        f"Sc[{a('B', 'T', 'S', 'K', 'G', whole=('S',))}] = Q ·_H Kc   "
        "# Q.K over the head dim, per query group",
        "Pr = softmax_{S}(Sc)   # over the keys",
        f"Att[{q}] = Pr ·_S Vc",
        f"A[{a('B', 'T', 'D', d_tp=True)}] = Att ·_{{K,G,H}} W_O",
    ]
    return ("Kc", "Vc"), {n: "attention" for n in ("W_Q", "W_K", "W_V", "W_O")}


def _mla(
    card: ModelCard, s: Sharding, w: Weights, dims: dict[str, int], lines: list[str]
) -> tuple[tuple[str, ...], dict[str, str]]:
    m = card.mla
    assert m is not None
    n = card.n_heads
    dims.update(
        {
            "N": n,
            "HN": m.qk_nope_head_dim,
            "HR": m.qk_rope_head_dim,
            "HV": m.v_head_dim,
            "RQ": m.q_lora_rank,
            "RKV": m.kv_lora_rank,
        }
    )
    D = ("D", card.d_model)
    specs = {
        "W_DQ": (D, ("RQ", m.q_lora_rank)),
        "W_UQ": (("RQ", m.q_lora_rank), ("N", n), ("HN", m.qk_nope_head_dim)),
        "W_QR": (("RQ", m.q_lora_rank), ("N", n), ("HR", m.qk_rope_head_dim)),
        "W_DKV": (D, ("RKV", m.kv_lora_rank)),
        "W_KR": (D, ("HR", m.qk_rope_head_dim)),
        "W_UK": (("RKV", m.kv_lora_rank), ("N", n), ("HN", m.qk_nope_head_dim)),
        "W_UV": (("RKV", m.kv_lora_rank), ("N", n), ("HV", m.v_head_dim)),
        "W_O": (("N", n), ("HV", m.v_head_dim), D),
    }
    for name, spec in specs.items():
        w.lines.append(w.param(name, *spec))
    a = s.act
    lines += [
        f"Cq[{a('B', 'T', 'RQ')}] = In[{a('B', 'T', 'D')}] ·_D W_DQ   # query latent",
        f"Qn[{a('B', 'T', 'N', 'HN')}] = Cq ·_RQ W_UQ",
        f"Qr[{a('B', 'T', 'N', 'HR')}] = Cq ·_RQ W_QR   # rotary part of the query",
        f"Ckv[{a('B', 'S', 'RKV')}] = In[{keys(a('B', 'S', 'D'))}] ·_D W_DKV   # the cached latent",
        f"Kr[{a('B', 'S', 'HR')}] = In[{keys(a('B', 'S', 'D'))}] ·_D W_KR   "
        "# rotary key, one for all heads",
        f"Kc[{a('B', 'S', 'N', 'HN')}] = Ckv ·_RKV W_UK",
        f"Vc[{a('B', 'S', 'N', 'HV')}] = Ckv ·_RKV W_UV",
        f"Sc[{a('B', 'T', 'S', 'N', whole=('S',))}] = Qn ·_HN Kc + Qr ·_HR Kr",
        "Pr = softmax_{S}(Sc)   # over the keys",
        f"Att[{a('B', 'T', 'N', 'HV')}] = Pr ·_S Vc",
        f"A[{a('B', 'T', 'D', d_tp=True)}] = Att ·_{{N,HV}} W_O",
    ]
    return ("Ckv", "Kr"), {name: "attention" for name in specs}


def _mlp(
    card: ModelCard, s: Sharding, w: Weights, fdim: str, d_ff: int, lines: list[str], shared: bool
) -> dict[str, str]:
    a = s.act
    D, F = ("D", card.d_model), (fdim, d_ff)
    group = "shared-experts" if shared else "mlp"
    act = card.activation
    w.lines.append(w.param("W_in1", D, F))
    if card.mlp == "gated":
        w.lines.append(w.param("W_in2", D, F))
    w.lines.append(w.param("W_out", F, D))
    lines.append(
        f"Tmp1 = A[{a('B', 'T', 'D')}] ·_D W_in1"
        + ("   # the shared experts as one MLP" if shared else "")
    )
    if card.mlp == "gated":
        lines.append(f"Tmp2 = A[{a('B', 'T', 'D')}] ·_D W_in2")
        lines.append(
            f"Act = {act}(Tmp1) * Tmp2   # the gating einsum (the transformer-math chapter)"
        )
    else:
        lines.append(f"Act = {act}(Tmp1)")
    lines.append(f"Out[{a('B', 'T', 'D', d_tp=True)}] = Act ·_{fdim} W_out")
    names = ("W_in1", "W_in2", "W_out") if card.mlp == "gated" else ("W_in1", "W_out")
    return {n: group for n in names}


def experts(
    card: ModelCard, layout: Layout, batch: int, seq: int, hw: str | None, count: int = 1
) -> Part:
    """The routed experts of one MoE layer on their dispatched tokens, with `backward`."""
    moe = card.moe
    assert moe is not None
    tokens = batch * seq * moe.n_active
    if tokens % moe.n_experts:
        raise ShardingError(
            f"{batch * seq} tokens x {moe.n_active} experts each do not split "
            f"evenly over {moe.n_experts} experts"
        )
    c = tokens // moe.n_experts
    s = Sharding(card, layout, batch, seq, capacity=c)
    dims = {"E": moe.n_experts, "C": c, "D": card.d_model, "FE": moe.d_ff_expert}
    s.check("FE", moe.d_ff_expert, s.tp, "d_ff_expert")
    w = Weights(s)
    D, E, FE = ("D", card.d_model), ("E", moe.n_experts), ("FE", moe.d_ff_expert)
    w.lines.append(w.param("W_e1", E, D, FE))
    if card.mlp == "gated":
        w.lines.append(w.param("W_e2", E, D, FE))
    w.lines.append(w.param("W_e3", E, FE, D))
    a = s.act
    lines = [
        f"Xe: bf16[{a('E', 'C', 'D', d_tp=True)}]"
        "   # the dispatched tokens: C per expert (balanced routing)"
    ]
    x = "Xe"
    if s.expert_axes:  # the dispatch: each token to the devices of its experts
        ep = s.expert_axes
        at = {
            "E": subscripted("E", ep),
            "C": subscripted("C", tuple(n for n in s.batch_axes if n not in ep)),
        }
        d_tp = a("D", d_tp=True)

        def moved(d: str = "D") -> str:
            return f"{at['E']}, {at['C']}, {d}"

        lines.append(
            f"Xd[{moved(d_tp)}] = Xe   # the dispatch: an AllToAll over "
            f"{', '.join(ep)} (expert parallelism)"
        )
        x = "Xd"
    else:

        def moved(d: str = "D") -> str:
            return a("E", "C", d)

    lines.append(f"Te1 = {x}[{moved()}] ·_D W_e1   # E is a batch dim: each expert its own")
    if card.mlp == "gated":
        lines += [f"Te2 = {x}[{moved()}] ·_D W_e2", f"Ae = {card.activation}(Te1) * Te2"]
    else:
        lines.append(f"Ae = {card.activation}(Te1)")
    if s.expert_axes:
        lines += [
            f"Yd[{moved(a('D', d_tp=True))}] = Ae ·_FE W_e3",
            f"Ye[{a('E', 'C', 'D', d_tp=True)}] = Yd   # the combine: back to the tokens' devices",
        ]
    else:
        lines.append(f"Ye[{a('E', 'C', 'D', d_tp=True)}] = Ae ·_FE W_e3")
    lines.append("backward")
    header = _header(
        card,
        layout,
        s,
        dims,
        hw,
        f"the {moe.n_experts} routed experts of one MoE layer, each token sent to {moe.n_active}",
    )
    names = ("W_e1", "W_e2", "W_e3") if card.mlp == "gated" else ("W_e1", "W_e3")
    return Part(
        "experts",
        count,
        "\n".join(header + w.lines + lines) + "\n",
        {n: "experts" for n in names},
        notes=tuple(s.notes),
    )


def head(card: ModelCard, layout: Layout, batch: int, seq: int, hw: str | None) -> Part:
    """The embedding (a lookup: parameters, no FLOPs) and the unembedding with `backward`."""
    s = Sharding(card, layout, batch, seq)
    vocab = _padded_vocab(card.vocab, s)
    dims = {"B": batch, "T": seq, "D": card.d_model, "V": vocab}
    w = Weights(s)
    D, V = ("D", card.d_model), ("V", vocab)
    groups = {"W_U": "embeddings"}
    if not card.tied_embeddings:
        w.lines.append(w.param("W_E", V, D) + "   # the embedding: a lookup, no FLOPs")
        groups["W_E"] = "embeddings"
    w.lines.append(
        w.param("W_U", D, V) + ("   # tied: also the embedding" if card.tied_embeddings else "")
    )
    a = s.act
    lines = [
        f"Hf: bf16[{a('B', 'T', 'D', d_tp=True)}]   # the last layer's output",
        f"Logits[{a('B', 'T', 'V', d_tp=True)}] = Hf[{a('B', 'T', 'D')}] ·_D W_U",
        "backward",
    ]
    header = _header(card, layout, s, dims, hw, "the embedding and unembedding")
    return Part("head", 1, "\n".join(header + w.lines + lines) + "\n", groups, notes=tuple(s.notes))


def _padded_vocab(vocab: int, s: Sharding) -> int:
    """The vocabulary padded to a multiple of the tensor axes' ways, as Megatron-LM pads it
    (`--make-vocab-size-divisible-by`), with a note; unchanged when they divide it."""
    ways = s.ways(s.tp)
    if vocab % ways == 0:
        return vocab
    padded = -(-vocab // ways) * ways
    s.notes.append(f"the vocabulary of {vocab} is padded to {padded} to split {ways} ways")
    return padded


def comment(text: str) -> str:
    """`text` as one comment line of a program: a card's name or file name cannot end the
    comment and start a statement (line breaks and other controls are written as escapes).

    >>> comment("LLaMA\\nmesh Q=3")
    '# LLaMA\\\\nmesh Q=3'
    """
    return "# " + visible(text)


def hardware_line(hw: str) -> str:
    """The `hardware` statement for a chip name or path, written as the grammar reads it (a bare
    name, or a path in double quotes); ShardingError for one no statement can hold.

    >>> hardware_line("tpu-v5p"), hardware_line("chips/my chip.toml")
    ('hardware tpu-v5p', 'hardware "chips/my chip.toml"')
    """
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", hw):
        return f"hardware {hw}"
    if hw.isprintable() and '"' not in hw:
        return f'hardware "{hw}"'
    raise ShardingError(
        f"--hw {quoted(hw)}: a chip name or path with a double quote or a "
        "control character cannot be written into a program's `hardware` line"
    )


def _header(
    card: ModelCard, layout: Layout, s: Sharding, dims: dict[str, int], hw: str | None, what: str
) -> list[str]:
    out = [
        comment(f"{card.display_name}: {what}."),
        comment(f"Generated by `shardc model program {card.name}` from {card.path}."),
        comment(f"Strategy {layout.strategy}: {s.describe()}."),
    ]
    if layout.axes:
        out.append(f"mesh {layout.mesh_text()}")
    out.append("dim " + ", ".join(f"{k}={v}" for k, v in dims.items()))
    if hw:
        out.append(hardware_line(hw))
    out.append("")
    return out
