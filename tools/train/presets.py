"""presets.py — the shapes and training settings of the embedded models, and
their qwen3_5 configuration as written to config.json. Assumes transformers
with qwen3_5. Dimension names are those of reference/base/config.h.

Target: 4 layers in the 27B's 3:1 pattern (3 Gated DeltaNet, 1 gated
attention), D = 192, F = 512, attention H/Hkv/Dh = 3/1/64 with the 27B's
partial RoPE (R = 16 of 64, θ = 1e7) and output gate, DeltaNet Hk/Hv/Dk/Dv =
1/3/64/64 (three value heads per key head, as 16/48 in the 27B), conv width
4, untied lm_head as in the 27B, one MTP layer. About 2.4 M parameters
(1.9 M trunk), 5 MB in bf16. The size is set by the training budget (well
under an hour on two shared CPU cores, where this model trains at about
700–2000 tokens/s with its MTP steps; a 4.7 M one managed 500–800).

Draft: 2 layers (DeltaNet, attention), D = 128, F = 384, H/Hkv/Dh = 4/2/32,
Hk/Hv/Dk/Dv = 2/4/32/32, no MTP. About 0.56 M parameters, under a third of
the target trunk's cost per token.

Course (models/course, docs/models.md): the 27B's proportions in miniature —
16 layers as (DeltaNet ×3, attention) ×4, D = 256, F = 896, attention
H/Hkv/Dh = 4/1/64, DeltaNet Hk/Hv/Dk/Dv = 2/6/64/64, untied lm_head, one MTP
layer: 16.6 M trunk parameters, 31.4 MiB read per decode step, an MTP step
7 % of one. It trains at about 250–500 tokens/s on two shared cores.
"""

LIN, FULL = "linear_attention", "full_attention"
EOS_ID = 509  # <|endoftext|> in models/tiny-shakespeare/tokenizer.json

PRESETS = {
    "target": dict(
        out="models/tiny-shakespeare", seed=1234,
        vocab_size=512, hidden_size=192, intermediate_size=512,
        layer_types=[LIN, LIN, LIN, FULL],
        num_attention_heads=3, num_key_value_heads=1, head_dim=64,
        partial_rotary_factor=0.25, rope_theta=1e7,
        linear_num_key_heads=1, linear_num_value_heads=3,
        linear_key_head_dim=64, linear_value_head_dim=64, linear_conv_kernel_dim=4,
        tie_word_embeddings=False, rms_norm_eps=1e-6, mtp=True,
        # training
        steps=700, batch=16, seq=256, lr=2e-3, warmup=100, min_lr_frac=0.1,
        weight_decay=0.1, grad_clip=1.0,
        # MTP loss: total weight on the trunk and its split over the k steps
        mtp_steps=3, mtp_lambda=0.3, mtp_step_weights=(1.0, 0.6, 0.36),
        # phase 2 (distill_mtp.py): the MTP distilled from the frozen trunk
        distill_steps=300, distill_lr=1e-3, distill_warmup=20, distill_seed=5678,
        distill_self_seqs=768, distill_self_prompt=32,
    ),
    "course": dict(
        out="models/course", seed=2026,
        vocab_size=512, hidden_size=256, intermediate_size=896,
        layer_types=[LIN, LIN, LIN, FULL] * 4,
        num_attention_heads=4, num_key_value_heads=1, head_dim=64,
        partial_rotary_factor=0.25, rope_theta=1e7,
        linear_num_key_heads=2, linear_num_value_heads=6,
        linear_key_head_dim=64, linear_value_head_dim=64, linear_conv_kernel_dim=4,
        tie_word_embeddings=False, rms_norm_eps=1e-6, mtp=True,
        steps=700, batch=8, seq=256, lr=1.5e-3, warmup=50, min_lr_frac=0.1,
        weight_decay=0.1, grad_clip=1.0,
        mtp_steps=3, mtp_lambda=0.3, mtp_step_weights=(1.0, 0.6, 0.36),
        # no phase 2: the training budget (two shared cores, about an hour) went to the trunk's 700 steps
    ),
    "draft": dict(
        out="models/tiny-shakespeare-draft", seed=4321,
        vocab_size=512, hidden_size=128, intermediate_size=384,
        layer_types=[LIN, FULL],
        num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        partial_rotary_factor=0.25, rope_theta=1e7,
        linear_num_key_heads=2, linear_num_value_heads=4,
        linear_key_head_dim=32, linear_value_head_dim=32, linear_conv_kernel_dim=4,
        tie_word_embeddings=False, rms_norm_eps=1e-6, mtp=False,
        steps=1000, batch=16, seq=256, lr=3e-3, warmup=100, min_lr_frac=0.1,
        weight_decay=0.1, grad_clip=1.0,
        mtp_steps=0, mtp_lambda=0.0, mtp_step_weights=(),
    ),
}

SHAPE_FIELDS = ("vocab_size", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
                "head_dim", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                "linear_value_head_dim", "linear_conv_kernel_dim", "tie_word_embeddings", "rms_norm_eps")


def text_config_dict(p, max_positions=4096):
    """The text_config of config.json, with the field names of the 27B's."""
    d = {
        "model_type": "qwen3_5_text",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attn_output_gate": True,
        "dtype": "bfloat16",
        "eos_token_id": EOS_ID,
        "full_attention_interval": 4,
        "hidden_act": "silu",
        "initializer_range": 0.02,
        "layer_types": list(p["layer_types"]),
        "max_position_embeddings": max_positions,
        "mtp_num_hidden_layers": 1 if p["mtp"] else 0,
        "num_hidden_layers": len(p["layer_types"]),
        "use_cache": True,
        "rope_parameters": {"rope_type": "default", "rope_theta": p["rope_theta"],
                            "partial_rotary_factor": p["partial_rotary_factor"]},
    }
    d.update({k: p[k] for k in SHAPE_FIELDS})
    return dict(sorted(d.items()))


def config_json(p):
    """The whole config.json: the multimodal layout of the 27B checkpoint
    (model_type qwen3_5, the language model under text_config), without a
    vision tower since these models have none."""
    return {
        "architectures": ["Qwen3_5ForConditionalGeneration"],
        "model_type": "qwen3_5",
        "tie_word_embeddings": p["tie_word_embeddings"],
        "text_config": text_config_dict(p),
    }


def hf_text_config(p):
    """The same configuration as a transformers Qwen3_5TextConfig."""
    from transformers import Qwen3_5TextConfig

    d = text_config_dict(p)
    for k in ("model_type", "attn_output_gate", "full_attention_interval", "dtype"):
        d.pop(k)
    return Qwen3_5TextConfig(**d)
