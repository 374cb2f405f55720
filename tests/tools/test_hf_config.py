"""Cards from Hugging Face config.json files (`shardc.tools.models.hf_config`): each family's
fields map to the card the project ships for that model, the parameter counts match the model
makers' published totals, `shardc model import` writes a card that loads back to the same
card, and a hostile config gets one line naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardc.cli.app import main
from shardc.tools import models
from shardc.tools.models.counts import count
from shardc.tools.models.hf_config import card_document, card_toml

# meta-llama/Meta-Llama-3-70B's config.json, as published on Hugging Face.
LLAMA3_70B = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
    "hidden_act": "silu",
    "hidden_size": 8192,
    "initializer_range": 0.02,
    "intermediate_size": 28672,
    "max_position_embeddings": 8192,
    "model_type": "llama",
    "num_attention_heads": 64,
    "num_hidden_layers": 80,
    "num_key_value_heads": 8,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.40.0.dev0",
    "use_cache": True,
    "vocab_size": 128256,
}

# deepseek-ai/DeepSeek-V3's config.json (the fields a card reads, and a few it leaves).
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "vocab_size": 129280,
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_nextn_predict_layers": 1,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_shared_experts": 1,
    "n_routed_experts": 256,
    "routed_scaling_factor": 2.5,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "qk_nope_head_dim": 128,
    "topk_method": "noaux_tc",
    "n_group": 8,
    "topk_group": 4,
    "num_experts_per_tok": 8,
    "moe_layer_freq": 1,
    "first_k_dense_replace": 3,
    "norm_topk_prob": True,
    "scoring_func": "sigmoid",
    "hidden_act": "silu",
    "max_position_embeddings": 163840,
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 40,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096,
        "type": "yarn",
    },
    "tie_word_embeddings": False,
}

# mistralai/Mixtral-8x7B-v0.1's config.json.
MIXTRAL_8X7B = {
    "architectures": ["MixtralForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "model_type": "mixtral",
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "rope_theta": 1e6,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "vocab_size": 32000,
}

# Qwen/Qwen2.5-7B's config.json.
QWEN25_7B = {
    "architectures": ["Qwen2ForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "max_position_embeddings": 131072,
    "model_type": "qwen2",
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "tie_word_embeddings": False,
    "vocab_size": 152064,
    "use_sliding_window": False,
}

# Qwen/Qwen1.5-MoE-A2.7B's config.json: four experts' width of shared expert.
QWEN15_MOE = {
    "architectures": ["Qwen2MoeForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "max_position_embeddings": 8192,
    "model_type": "qwen2_moe",
    "num_attention_heads": 16,
    "num_hidden_layers": 24,
    "num_key_value_heads": 16,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "tie_word_embeddings": False,
    "vocab_size": 151936,
}


def config_file(tmp_path: Path, config: object, folder: str = "model") -> str:
    path = tmp_path / folder / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config if isinstance(config, str) else json.dumps(config), encoding="utf-8")
    return str(path)


ARCH = (
    "n_layers",
    "d_model",
    "d_ff",
    "n_heads",
    "n_kv_heads",
    "d_head",
    "vocab",
    "mlp",
    "activation",
    "tied_embeddings",
    "moe",
    "mla",
)


def test_llama3_70b_config_gives_the_shipped_cards_parameter_count(tmp_path: Path):
    card = models.load(config_file(tmp_path, LLAMA3_70B, "Meta-Llama-3-70B"))
    shipped = models.load("llama3-70b")
    assert all(getattr(card, f) == getattr(shipped, f) for f in ARCH)
    assert count(card).params == count(shipped).params
    assert count(card).params_by_group == count(shipped).params_by_group
    assert (card.name, card.display_name) == ("meta-llama-3-70b", "Meta-Llama-3-70B")
    assert card.seq_len == 8192  # the config's context: no rope_scaling to say otherwise


def test_deepseek_v3_config_gives_the_shipped_card(tmp_path: Path):
    card = models.load(config_file(tmp_path, DEEPSEEK_V3))
    shipped = models.load("deepseek-v3")
    assert all(getattr(card, f) == getattr(shipped, f) for f in ARCH)
    assert card.seq_len == 4096  # rope_scaling's original context, before the YaRN extension


@pytest.mark.parametrize(
    "config, total, active",
    [
        # Mistral AI's announcement of Mixtral 8x7B: 46.7B total, 12.9B used per token.
        (MIXTRAL_8X7B, 46.7e9, 12.9e9),
        # The Qwen2.5 technical report (Qwen Team 2024), Table 1: 7.61B (biases included).
        (QWEN25_7B, 7.61e9, None),
        # Qwen1.5-MoE-A2.7B's model card: 14.3B total, 2.7B activated without embeddings.
        (QWEN15_MOE, 14.3e9, None),
    ],
)
def test_published_totals(tmp_path: Path, config, total, active):
    c = count(models.load(config_file(tmp_path, config)))
    assert c.params == pytest.approx(total, rel=0.01)
    if active is not None:
        assert c.active_params == pytest.approx(active, rel=0.01)


def test_qwen_moe_shared_expert_is_four_experts_wide():
    doc = card_document(json.dumps(QWEN15_MOE), "config.json")
    assert doc["moe"] == {
        "n_experts": 60,
        "n_active": 4,
        "n_shared": 4,
        "d_ff_expert": 1408,
        "first_dense_layers": 0,
    }


def test_a_multimodal_wrapper_reads_its_text_config():
    doc = card_document(
        json.dumps({"model_type": "llava", "text_config": LLAMA3_70B}), "config.json"
    )
    assert doc["architecture"]["d_model"] == 8192


def test_model_import_writes_a_card_that_loads_back(tmp_path: Path, capsys):
    src = config_file(tmp_path, DEEPSEEK_V3, "DeepSeek-V3")
    out = tmp_path / "dsv3.toml"
    assert main(["model", "import", src, "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "n_routed_experts" in text and "first_k_dense_replace" in text
    back, direct = models.load(str(out)), models.load(src)
    assert all(getattr(back, f) == getattr(direct, f) for f in (*ARCH, "seq_len", "name"))
    assert main(["model", "import", src, "-o", src]) == 2  # never overwrite the input
    assert "-o" in capsys.readouterr().err


def test_plan_and_show_take_a_config(tmp_path: Path, capsys):
    src = config_file(tmp_path, LLAMA3_70B, "Meta-Llama-3-70B")
    assert main(["model", "show", src, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "meta-llama-3-70b"
    assert (
        main(
            [
                "plan",
                "--card",
                src,
                "--hw",
                "tpu-v5p",
                "--chips",
                "64",
                "--batch",
                "1Mi",
                "--layout",
                "fsdp",
            ]
        )
        == 0
    )
    assert "Meta-Llama-3-70B" in capsys.readouterr().out


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"model_type": "llama", "hidden_size": NaN}', "NaN is not a number JSON allows"),
        ("[" * 100_000, "nested too deeply"),
        ('{"a": ' * 200 + "1" + "}" * 200, "nested more than"),
        ('{"model_type": "gpt2"}', 'model_type "gpt2": expected one of'),
        ("{}", "no model_type"),
        (json.dumps({**LLAMA3_70B, "hidden_size": None}), "missing 'hidden_size'"),
        (json.dumps({**LLAMA3_70B, "hidden_size": "8192"}), 'hidden_size = "8192" is not a whole'),
        (json.dumps({**LLAMA3_70B, "num_hidden_layers": True}), "is not a whole number"),
        (json.dumps({**LLAMA3_70B, "num_hidden_layers": 0}), "must be at least 1"),
        (json.dumps({**LLAMA3_70B, "num_hidden_layers": -3}), "is not a whole number"),
        (json.dumps({**LLAMA3_70B, "vocab_size": 10**30}), "larger than the limit"),
        ('{"model_type": "llama", "hidden_size": 1' + "0" * 5000 + "}", "invalid JSON"),
        (json.dumps({**LLAMA3_70B, "num_attention_heads": 60}), "not a multiple of"),
        (json.dumps({**LLAMA3_70B, "hidden_act": "tanh"}), 'hidden_act = "tanh": expected'),
        (json.dumps({**LLAMA3_70B, "tie_word_embeddings": "no"}), "is not true or false"),
        (json.dumps({**DEEPSEEK_V3, "q_lora_rank": None}), "q_lora_rank is null"),
        (json.dumps({**DEEPSEEK_V3, "moe_layer_freq": 2}), "moe_layer_freq = 2"),
        (json.dumps({**QWEN15_MOE, "mlp_only_layers": [5]}), "dense layers first"),
        (json.dumps({**QWEN15_MOE, "shared_expert_intermediate_size": 1000}), "not a multiple"),
        (json.dumps({**MIXTRAL_8X7B, "num_experts_per_tok": 9}), "exceeds n_experts"),
    ],
)
def test_hostile_configs_are_one_line_and_exit_1(tmp_path: Path, capsys, text, message):
    src = config_file(tmp_path, text)
    assert main(["model", "show", src]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and src in err and "\n" not in err and "Traceback" not in err


@settings(max_examples=40, deadline=None)
@given(
    layers=st.integers(1, 200),
    heads=st.integers(1, 128),
    group=st.sampled_from([1, 2, 8]),
    head_dim=st.sampled_from([64, 80, 128, 256]),
    ff=st.integers(1, 10**6),
    vocab=st.integers(1, 10**6),
    tied=st.booleans(),
    act=st.sampled_from(["silu", "gelu_pytorch_tanh", "relu"]),
    kind=st.sampled_from(["llama", "mistral", "qwen2", "qwen3"]),
)
def test_a_dense_config_round_trips_through_its_card_file(
    layers, heads, group, head_dim, ff, vocab, tied, act, kind
):
    """Any dense config: the card `model import` writes loads to the card `--card` reads."""
    config = {
        "model_type": kind,
        "num_hidden_layers": layers,
        "num_attention_heads": heads * group,
        "num_key_value_heads": heads,
        "head_dim": head_dim,
        "hidden_size": 4096,
        "intermediate_size": ff,
        "vocab_size": vocab,
        "tie_word_embeddings": tied,
        "hidden_act": act,
        "max_position_embeddings": 4096,
    }
    doc = card_document(json.dumps(config), "m/config.json")
    direct = models.from_config(json.dumps(config), "m/config.json")
    via_file = models.load_text(card_toml(doc, "m/config.json"), "m/card.toml")
    assert all(getattr(direct, f) == getattr(via_file, f) for f in (*ARCH, "seq_len", "name"))
    assert direct.n_heads == heads * group and direct.d_head == head_dim
