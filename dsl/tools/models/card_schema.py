"""The model card TOML format as a JSON Schema, generated from the loader's field tables
(`shardc.tools.models.ARCHITECTURE_FIELDS`, `MOE_FIELDS`, `MLA_FIELDS`, `TRAINING_FIELDS`), so
that editors which read JSON Schemas (taplo, Even Better TOML) check a card as it is typed.
`card.schema.json` beside the cards is this module's output; `shardc model schema` prints it.
docs/plan.md, "Writing a card", explains each field.
"""

from __future__ import annotations

from typing import Any

from shardc.driver.json_text import strict_dumps

SHIPPED = "card.schema.json"
"""The generated schema's file name in the `shardc.tools.models` package."""

DOCS: dict[str, str] = {
    "name": "the card's name, as --card and `shardc model show` take it",
    "display_name": "the name reports print",
    "aliases": "other names --card accepts",
    "architecture": "one dense transformer layer's sizes and the model's depth",
    "architecture.n_layers": "L: transformer layers",
    "architecture.d_model": "D: the residual stream's width",
    "architecture.d_ff": "F: the MLP's hidden width (MoE: the dense layers')",
    "architecture.n_heads": "N: query heads",
    "architecture.n_kv_heads": "K: key/value heads (N for multi-head attention; N must be a "
    "multiple of K)",
    "architecture.d_head": "H: each head's width",
    "architecture.vocab": "V: the vocabulary",
    "architecture.mlp": "gated: three matrices (SwiGLU); plain: two",
    "architecture.activation": "the MLP's nonlinearity",
    "architecture.tied_embeddings": "the unembedding is the embedding's transpose",
    "moe": "a mixture of experts: the layers after the first dense ones route each token to "
    "n_active of n_experts experts, plus n_shared experts every token uses",
    "moe.n_experts": "routed experts per MoE layer",
    "moe.n_active": "routed experts each token uses (k)",
    "moe.n_shared": "experts every token uses (0 or more)",
    "moe.d_ff_expert": "each expert's hidden width",
    "moe.first_dense_layers": "layers before the first MoE layer (0 or more)",
    "mla": "multi-head latent attention's sizes (DeepSeek)",
    "mla.q_lora_rank": "the queries' low-rank width",
    "mla.kv_lora_rank": "the keys' and values' shared latent width",
    "mla.qk_nope_head_dim": "each head's query/key width without rotary embedding",
    "mla.qk_rope_head_dim": "the rotary part's width, shared by the heads",
    "mla.v_head_dim": "each head's value width",
    "training": "what a training step defaults to",
    "training.seq_len": "tokens a sequence (--seq's default)",
    "training.batch_tokens": 'tokens a step (--batch\'s default); a number or text such as "4Mi"',
    "training.tokens": "training tokens (model show's total FLOPs); a number or text such as "
    '"15T"',
    "reference": "figures a source states, checked against the compiled counts by `model show`",
}

_TYPES = {int: "integer", float: "number", bool: "boolean", str: "string"}


def card_json_schema() -> dict[str, Any]:
    """The JSON Schema (Draft 2020-12, keywords draft-07 has too) of a parsed card.

    >>> s = card_json_schema()
    >>> s["required"], s["properties"]["architecture"]["properties"]["mlp"]["enum"]
    (['name', 'architecture', 'training'], ['gated', 'plain'])
    """
    from shardc.tools.models import (
        ACTIVATIONS,
        ARCHITECTURE_FIELDS,
        MLA_FIELDS,
        MOE_FIELDS,
        TRAINING_FIELDS,
    )

    tables: dict[str, dict[str, Any]] = {}
    for name, spec, required in (
        ("architecture", ARCHITECTURE_FIELDS, tuple(ARCHITECTURE_FIELDS)),
        ("moe", MOE_FIELDS, tuple(MOE_FIELDS)),
        ("mla", MLA_FIELDS, tuple(MLA_FIELDS)),
        ("training", TRAINING_FIELDS, ("seq_len",)),
    ):
        props = {key: _field(name, key, kind) for key, kind in spec.items()}
        tables[name] = {
            "type": "object",
            "description": DOCS[name],
            "required": list(required),
            "additionalProperties": False,
            "properties": props,
        }
    arch = tables["architecture"]["properties"]
    arch["mlp"]["enum"] = ["gated", "plain"]
    arch["activation"]["enum"] = list(ACTIVATIONS)
    reference = {
        "type": "object",
        "description": DOCS["reference"],
        "additionalProperties": {
            "type": "object",
            "required": ["value"],
            "additionalProperties": False,
            "properties": {
                "value": {"type": "number", "exclusiveMinimum": 0},
                "source": {"type": "string"},
            },
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://shardc.dev/schemas/shardc.card-1.json",
        "title": "shardc model card",
        "description": "A model card TOML (dsl/tools/models/cards/*.toml, or one of your own "
        "for --card FILE) after TOML parsing. Generated from the loader's field "
        "tables; print it with `shardc model schema`. A schema cannot say that "
        "n_heads is a multiple of n_kv_heads or that n_active <= n_experts: "
        "`shardc model show FILE` checks those too.",
        "type": "object",
        "required": ["name", "architecture", "training"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "minLength": 1, "description": DOCS["name"]},
            "display_name": {"type": "string", "description": DOCS["display_name"]},
            "aliases": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "description": DOCS["aliases"],
            },
            **tables,
            "reference": reference,
        },
    }


def card_json_schema_text() -> str:
    """`card_json_schema()` as the shipped file holds it."""
    return strict_dumps(card_json_schema(), indent=2) + "\n"


def _field(table: str, key: str, kind: type) -> dict[str, Any]:
    out: dict[str, Any] = {"description": DOCS[f"{table}.{key}"]}
    if kind in (int, float):
        number: dict[str, Any] = {"type": _TYPES[kind]}
        if key in ("first_dense_layers", "n_shared"):
            number["minimum"] = 0
        else:
            number["exclusiveMinimum"] = 0
        if table == "training":  # the loader also reads "4Mi", "15T"
            out["oneOf"] = [number, {"type": "string", "minLength": 1}]
        else:
            out.update(number)
    else:
        out["type"] = _TYPES[kind]
    return out
