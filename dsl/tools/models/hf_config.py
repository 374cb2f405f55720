"""A model card from a Hugging Face `config.json`, as a model ships it: the LLaMA, Mistral and
Qwen families (dense), Mixtral and Qwen's MoE models (routed experts), and DeepSeek-V2/V3
(routed and shared experts, multi-head latent attention).

`card_document(text, path)` reads the JSON and returns the card as the TOML card's tables
(`name`, `architecture`, `moe`, `mla`, `training`), which the card loader
(`shardc.tools.models.load`) then checks like any card; `card_toml(document)` writes it as a card
file with each field's origin beside it. docs/plan.md, "Cards from Hugging Face configs", is the
field mapping. Local files only: nothing is downloaded.

What a config does not say is not guessed: it has no training sequence length, so `seq_len` is the
context the model was pre-trained at where the config records it (`rope_scaling`'s
`original_max_position_embeddings`, the context before a long-context extension), else
`max_position_embeddings`; `--seq` sets what a step uses. Biases, norms, sliding windows and
router details are left out, as the shipped cards leave them out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["FAMILIES", "ConfigError", "card_document", "card_toml"]


class ConfigError(ValueError):
    """A config.json that is not JSON, is not a model this module maps, or has a bad field."""


DENSE = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2")
MIXTRAL = ("mixtral",)
QWEN_MOE = ("qwen2_moe", "qwen3_moe")
DEEPSEEK = ("deepseek_v2", "deepseek_v3")
FAMILIES = DENSE + MIXTRAL + QWEN_MOE + DEEPSEEK
"""The `model_type`s mapped, each family by its own fields."""

ACTIVATION = {
    "silu": "silu",
    "swish": "silu",
    "gelu": "gelu",
    "gelu_new": "gelu",
    "gelu_fast": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_python": "gelu",
    "relu": "relu",
}
"""`hidden_act` (or `hidden_activation`) to the card's activation."""

_MAX_DEPTH = 64


def card_document(text: str, path: str) -> dict[str, Any]:
    """The card tables of a config.json's text (`path` names it in messages and gives the card's
    name where the config has no `_name_or_path`).

    >>> doc = card_document('{"model_type": "llama", "hidden_size": 4096, '
    ...     '"intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, '
    ...     '"num_hidden_layers": 32, "vocab_size": 128256, "hidden_act": "silu", '
    ...     '"max_position_embeddings": 8192}', "Meta-Llama-3-8B/config.json")
    >>> doc["name"], doc["architecture"]["d_head"], doc["training"]["seq_len"]
    ('meta-llama-3-8b', 128, 8192)
    """
    config = _json(text, path)
    if isinstance(config.get("text_config"), dict) and "hidden_size" not in config:
        config = config["text_config"]  # a multimodal wrapper: its language model
    kind = config.get("model_type")
    if not isinstance(kind, str) or kind not in FAMILIES:
        got = f"model_type {json.dumps(kind)[:60]}" if kind is not None else "no model_type"
        raise ConfigError(
            f"{path}: {got}: expected one of {', '.join(FAMILIES)} (LLaMA, "
            "Mistral, Qwen, Gemma, Mixtral, Qwen MoE and DeepSeek configs)"
        )
    c = _Fields(config, path)
    heads = c.positive("num_attention_heads")
    d_model = c.positive("hidden_size")
    arch: dict[str, Any] = {
        "n_layers": c.positive("num_hidden_layers"),
        "d_model": d_model,
        "d_ff": c.positive("intermediate_size"),
        "n_heads": heads,
        "n_kv_heads": c.positive("num_key_value_heads", default=heads),
        "d_head": c.positive("head_dim", default=None) or _divided(d_model, heads, path),
        "vocab": c.positive("vocab_size"),
        "mlp": "gated",
        "activation": _activation(c, path),
        "tied_embeddings": c.boolean("tie_word_embeddings", default=kind.startswith("gemma")),
    }
    doc: dict[str, Any] = {
        "name": _name(config, path),
        "display_name": _display(config, path),
        "architecture": arch,
        "training": {"seq_len": _context(c)},
    }
    if kind in MIXTRAL:
        doc["moe"] = {
            "n_experts": c.positive("num_local_experts"),
            "n_active": c.positive("num_experts_per_tok"),
            "n_shared": 0,
            "d_ff_expert": arch["d_ff"],
            "first_dense_layers": 0,
        }
    elif kind in QWEN_MOE:
        doc["moe"] = _qwen_moe(c, arch, path)
    elif kind in DEEPSEEK:
        _every_layer(c, "moe_layer_freq", path)
        arch["d_head"] = c.positive("v_head_dim")
        doc["moe"] = {
            "n_experts": c.positive("n_routed_experts"),
            "n_active": c.positive("num_experts_per_tok"),
            "n_shared": c.whole("n_shared_experts", default=0),
            "d_ff_expert": c.positive("moe_intermediate_size"),
            "first_dense_layers": c.whole("first_k_dense_replace", default=0),
        }
        if config.get("q_lora_rank") is None:
            raise ConfigError(
                f"{path}: q_lora_rank is null (queries without a low-rank "
                "projection, as in DeepSeek-V2-Lite): shardc's multi-head latent "
                "attention needs the queries' rank"
            )
        doc["mla"] = {
            key: c.positive(key)
            for key in (
                "q_lora_rank",
                "kv_lora_rank",
                "qk_nope_head_dim",
                "qk_rope_head_dim",
                "v_head_dim",
            )
        }
    return doc


def card_toml(doc: Mapping[str, Any], origin: str) -> str:
    """A card file of `card_document`'s tables, each field with where it came from.

    >>> print(card_toml({"name": "m", "display_name": "M", "architecture": {"n_layers": 2},
    ...                  "training": {"seq_len": 8}}, "config.json").splitlines()[-1])
    seq_len = 8  # the pre-training context (rope_scaling or max_position_embeddings)
    """
    lines = [
        f"# Written by `shardc model import` from {origin} (a Hugging Face config);",
        "# each comment names the config field a value comes from.",
        f"name = {_toml(doc['name'])}",
        f"display_name = {_toml(doc['display_name'])}",
    ]
    for table in ("architecture", "moe", "mla", "training"):
        if table not in doc:
            continue
        lines += ["", f"[{table}]"]
        for key, value in doc[table].items():
            lines.append(f"{key} = {_toml(value)}  # {ORIGIN.get(key, key)}")
    return "\n".join(lines) + "\n"


ORIGIN = {
    "n_layers": "num_hidden_layers",
    "d_model": "hidden_size",
    "d_ff": "intermediate_size",
    "n_heads": "num_attention_heads",
    "n_kv_heads": "num_key_value_heads",
    "d_head": "head_dim (else hidden_size / num_attention_heads; DeepSeek: v_head_dim)",
    "vocab": "vocab_size",
    "mlp": "gated (gate, up and down projections)",
    "activation": "hidden_act",
    "tied_embeddings": "tie_word_embeddings",
    "n_experts": "num_local_experts / num_experts / n_routed_experts",
    "n_active": "num_experts_per_tok",
    "n_shared": "n_shared_experts (Qwen: shared_expert_intermediate_size / moe_intermediate_size)",
    "d_ff_expert": "moe_intermediate_size (Mixtral: intermediate_size)",
    "first_dense_layers": "first_k_dense_replace (Qwen: mlp_only_layers)",
    "seq_len": "the pre-training context (rope_scaling or max_position_embeddings)",
}
"""Each card field's config field, as card_toml comments it (docs/plan.md has the table)."""


class _Fields:
    """A config's fields read as a card needs them, each error naming the file and the field."""

    def __init__(self, config: Mapping[str, Any], path: str) -> None:
        self.config, self.path = config, path

    def whole(self, key: str, default: int | None = None) -> int:
        if key not in self.config or self.config[key] is None:
            if default is None:
                raise ConfigError(f"{self.path}: missing {key!r}")
            return default
        value = self.config[key]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"{self.path}: {key} = {_shown(value)} is not a whole number")
        if value > 2**63 - 1:
            raise ConfigError(
                f"{self.path}: {key} = {_shown(value)} is larger than the limit 2**63 - 1"
            )
        return value

    def positive(self, key: str, default: int | None = 0) -> int:
        """The field, at least 1; `default` where it is absent (0: it is required)."""
        if default == 0:
            default = None
            value = self.whole(key)
        elif key not in self.config or self.config[key] is None:
            return default  # type: ignore[return-value]
        else:
            value = self.whole(key)
        if value < 1:
            raise ConfigError(f"{self.path}: {key} = {value} must be at least 1")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.config.get(key, default)
        if not isinstance(value, bool):
            raise ConfigError(f"{self.path}: {key} = {_shown(value)} is not true or false")
        return value


def _json(text: str, path: str) -> dict[str, Any]:
    def constant(name: str) -> Any:
        raise ConfigError(f"{path}: {name} is not a number JSON allows")

    try:
        config = json.loads(text, parse_constant=constant)
    except ConfigError:
        raise
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid JSON: arrays or objects nested too deeply") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise ConfigError(f"{path}: invalid JSON: {exc}") from None
    if not isinstance(config, dict):
        raise ConfigError(
            f"{path}: expected a JSON object (a config.json), got {type(config).__name__}"
        )
    if _depth(config) > _MAX_DEPTH:
        raise ConfigError(f"{path}: objects nested more than {_MAX_DEPTH} deep")
    return config


def _depth(value: Any) -> int:
    depth, level = 0, [value]
    while level:
        depth += 1
        level = [
            v
            for x in level
            if isinstance(x, dict | list)
            for v in (x.values() if isinstance(x, dict) else x)
        ]
        if depth > _MAX_DEPTH:
            break
    return depth


def _activation(c: _Fields, path: str) -> str:
    key = "hidden_act" if "hidden_act" in c.config else "hidden_activation"
    act = c.config.get(key, "silu")
    if not isinstance(act, str) or act not in ACTIVATION:
        raise ConfigError(f"{path}: {key} = {_shown(act)}: expected one of {', '.join(ACTIVATION)}")
    return ACTIVATION[act]


def _divided(d_model: int, heads: int, path: str) -> int:
    if d_model % heads:
        raise ConfigError(
            f"{path}: no head_dim, and hidden_size = {d_model} is not a multiple "
            f"of num_attention_heads = {heads}"
        )
    return d_model // heads


def _context(c: _Fields) -> int:
    scaling = c.config.get("rope_scaling")
    if isinstance(scaling, dict) and scaling.get("original_max_position_embeddings"):
        return _Fields(scaling, f"{c.path}: rope_scaling").positive(
            "original_max_position_embeddings"
        )
    return c.positive("max_position_embeddings")


def _qwen_moe(c: _Fields, arch: dict[str, Any], path: str) -> dict[str, Any]:
    _every_layer(c, "decoder_sparse_step", path)
    only = c.config.get("mlp_only_layers") or []
    if not isinstance(only, list) or any(
        not isinstance(i, int) or isinstance(i, bool) for i in only
    ):
        raise ConfigError(f"{path}: mlp_only_layers = {_shown(only)} is not a list of layers")
    if sorted(only) != list(range(len(only))):
        raise ConfigError(
            f"{path}: mlp_only_layers = {_shown(only)}: shardc's cards put the "
            "dense layers first (0, 1, ...)"
        )
    expert = c.positive("moe_intermediate_size")
    shared = c.whole("shared_expert_intermediate_size", default=0)
    if shared % expert:
        raise ConfigError(
            f"{path}: shared_expert_intermediate_size = {shared} is not a "
            f"multiple of moe_intermediate_size = {expert} (a card's shared "
            "experts are experts of that width)"
        )
    return {
        "n_experts": c.positive("num_experts"),
        "n_active": c.positive("num_experts_per_tok"),
        "n_shared": shared // expert,
        "d_ff_expert": expert,
        "first_dense_layers": len(only),
    }


def _every_layer(c: _Fields, key: str, path: str) -> None:
    if c.whole(key, default=1) != 1:
        raise ConfigError(
            f"{path}: {key} = {c.config[key]}: shardc's cards hold MoE layers "
            "that follow one another (every layer after the dense ones)"
        )


def _name(config: Mapping[str, Any], path: str) -> str:
    source = config.get("_name_or_path")
    stem = (
        source
        if isinstance(source, str) and source.strip()
        else Path(path).parent.name or Path(path).stem
    )
    name = "".join(
        ch if ch.isalnum() or ch in "-_." else "-"
        for ch in stem.rstrip("/").rsplit("/", 1)[-1].lower()
    )[:80].strip("-")
    return name or "config"


def _display(config: Mapping[str, Any], path: str) -> str:
    source = config.get("_name_or_path")
    if isinstance(source, str) and source.strip():
        return source.strip().rstrip("/").rsplit("/", 1)[-1][:80]
    return Path(path).parent.name[:80] or "config.json"


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or math.isfinite(value) else "nan"
    return text if len(text) <= 60 else text[:57] + "..."


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)
