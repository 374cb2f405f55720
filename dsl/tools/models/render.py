"""A model card in words and as JSON (`shardc model show`)."""

from __future__ import annotations

SCHEMA = "shardc.model-show/1"
"""The `schema` of `show_dict`, described by `shardc/driver/schemas/model-show.schema.json`."""


def show_dict(c, tokens: float | None) -> dict:
    card = c.card
    ref = {r.quantity: {"value": r.value, "source": r.source} for r in card.reference}
    return {
        "schema": SCHEMA,
        "model": card.name,
        "display_name": card.display_name,
        "card": card.path,
        "architecture": {
            "n_layers": card.n_layers,
            "d_model": card.d_model,
            "d_ff": card.d_ff,
            "n_heads": card.n_heads,
            "n_kv_heads": card.n_kv_heads,
            "d_head": card.d_head,
            "vocab": card.vocab,
            "mlp": card.mlp,
            "activation": card.activation,
            "tied_embeddings": card.tied_embeddings,
            "moe": None if card.moe is None else vars_of(card.moe),
            "mla": None if card.mla is None else vars_of(card.mla),
        },
        "seq_len": c.seq_len,
        "parts": [
            {
                "part": p.name,
                "count": p.count,
                "params": p.params,
                "forward_flops_per_token": p.forward_flops / p.tokens,
                "train_flops_per_token": p.train_flops / p.tokens,
            }
            for p in c.parts
        ],
        "params": c.params,
        "params_by_group": c.params_by_group,
        "active_params": c.active_params,
        "flops_per_token": {
            "forward": c.forward_flops_per_token,
            "training": c.train_flops_per_token,
            "training_6n": c.six_n,
            "attention_training": c.attention_flops_per_token,
        },
        "training_flops": None
        if tokens is None
        else {"tokens": tokens, **c.training_flops(tokens)},
        "kv_cache": {"dtype": c.kv_dtype, "bytes_per_token": c.kv_bytes_per_token},
        "reference": ref,
    }


def vars_of(obj) -> dict:
    return {k: getattr(obj, k) for k in obj.__slots__}


def _e(x: float) -> str:
    """`7.055e10`, `2.101e9`: four significant digits, a plain exponent."""
    text = f"{x:.4g}"
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    return f"{mantissa}e{int(exponent)}"


def show_text(c, d: dict) -> str:
    card = c.card
    ref = {r.quantity: r for r in card.reference}

    def book(q: str, value: float) -> str:
        r = ref.get(q)
        if r is None:
            return ""
        from shardc.lang.numeric import NumberError, finite

        try:  # through the check every shown number takes: 1e-300 in a card overflows it
            off = f"{(finite(value / r.value, 'the ratio') - 1) * 100:+.1f}%"
        except NumberError:
            off = "more than 1e308 times off"
        return f"   book {_e(r.value)} ({off}): {r.source}"

    a = d["architecture"]
    lines = [
        f"{card.display_name} ({card.name})   card: {card.path}",
        f"  L={a['n_layers']}  D={a['d_model']}  F={a['d_ff']}  N={a['n_heads']}  "
        f"K={a['n_kv_heads']} (G={card.groups})  H={a['d_head']}  V={a['vocab']}  "
        f"{a['mlp']} MLP ({a['activation']}), "
        f"{'tied' if a['tied_embeddings'] else 'untied'} embeddings",
    ]
    if card.moe:
        m = card.moe
        lines.append(
            f"  MoE: {m.n_experts} routed experts, top-{m.n_active}, {m.n_shared} "
            f"shared, d_ff_expert={m.d_ff_expert}, first {m.first_dense_layers} "
            "layers dense"
        )
    if card.mla:
        lines.append(
            "  MLA approximated by its low-rank projections (the book does not describe it)"
        )
    lines.append(
        "  compiled: "
        + ", ".join(f"{p.name} x {p.count}" for p in c.parts)
        + f" (one sequence of {c.seq_len} tokens)"
    )
    lines.append("")
    lines.append(f"  {'parameters':34s}{_e(c.params)}" + book("params", c.params))
    for g, n in sorted(c.params_by_group.items(), key=lambda kv: -kv[1]):
        lines.append(f"    {g:32s}{_e(n)}")
    if card.moe:
        lines.append(
            f"  {'active parameters per token':34s}{_e(c.active_params)}"
            + book("active_params", c.active_params)
        )
    fpt = d["flops_per_token"]
    lines.append(f"  {'FLOPs per token, forward':34s}{_e(fpt['forward'])}")
    lines.append(
        f"  {'FLOPs per token, training':34s}{_e(fpt['training'])}   (forward + backward einsums)"
    )
    lines.append(
        f"    {'6N rule':32s}{_e(fpt['training_6n'])}"
        + book("train_flops_per_token", fpt["training_6n"])
    )
    lines.append(
        f"    {'dot-product attention':32s}{_e(fpt['attention_training'])}"
        f"   (at T = {c.seq_len}; the 6N rule leaves it out)"
    )
    tf = d["training_flops"]
    if tf is not None:
        what = f"training FLOPs, {_e(tf['tokens'])} tokens"
        lines.append(
            f"  {what:34s}{_e(tf['six_n'])} (6N), {_e(tf['compiled'])} (compiled)"
            + book("training_flops", tf["six_n"])
        )
    kv = c.kv_bytes_per_token
    lines.append(
        f"  {'KV cache per token (' + c.kv_dtype + ')':34s}{kv:,.0f} bytes = "
        f"{kv / 1024:,.1f} KiB over {card.n_layers} layers"
    )
    return "\n".join(lines) + "\n"
