/* config.h — the qwen3_5 language-model configuration, read from a Hugging
 * Face config.json. Shared by the reference and the engine: plain data, no
 * pointers. The short names in brackets are the dimension names used in the
 * shape comments of every other file. */
#ifndef SPECULA_CONFIG_H
#define SPECULA_CONFIG_H

#include "error.h"

#define CONFIG_MAX_LAYERS 256
#define CONFIG_MAX_EOS 8

typedef enum { LAYER_LINEAR_ATTENTION = 0, LAYER_FULL_ATTENTION = 1 } layer_type;

typedef struct {
    int vocab_size;        /* [V] */
    int hidden_size;       /* [D] */
    int intermediate_size; /* [F]  SwiGLU width */
    int num_layers;        /* [L]  decoder layers of the trunk */
    /* gated full attention */
    int num_heads;    /* [H]   query heads */
    int num_kv_heads; /* [Hkv] */
    int head_dim;     /* [Dh] */
    int rotary_dim; /* [R]   int(head_dim · partial_rotary_factor): RoPE's frequencies θ^(−2i/R), i < ⌈R/2⌉, rotate
                     *       the first config_rotated_dims() dims of each head (R, or R + 1 when R is odd) */
    double rope_theta;
    /* Gated DeltaNet (linear attention) */
    int conv_kernel; /* [K]  causal depthwise conv width */
    int lin_k_heads; /* [Hk] query/key heads */
    int lin_v_heads; /* [Hv] value heads, a multiple of Hk */
    int lin_k_dim;   /* [Dk] */
    int lin_v_dim;   /* [Dv] */
    float rms_norm_eps;
    int tie_word_embeddings; /* lm_head shares embed_tokens */
    int mtp_num_layers;      /* 0 (no MTP module) or 1 */
    int max_position_embeddings;
    int num_eos;
    int eos_token_ids[CONFIG_MAX_EOS];
    layer_type layer_types[CONFIG_MAX_LAYERS];
    /* Where the trunk's tensors live: "model.language_model." in the full
     * checkpoint, "model." in the text-only layout of Qwen3_5ForCausalLM. */
    char tensor_prefix[32];
} model_config;

/* Reads DIR/config.json (or the file itself when path names a .json file).
 * Accepts the multimodal layout (model_type "qwen3_5" with "text_config")
 * and the text-only layout (model_type "qwen3_5_text", flat). Every field is
 * range-checked; errors name the file and the field. */
int config_load(const char *path, model_config *cfg, sp_error *err);

/* Same, from a JSON text already in memory; `origin` names it in errors. */
int config_parse(const char *json_text, const char *origin, model_config *cfg, sp_error *err);

/* Derived sizes. */
int config_conv_dim(const model_config *c);     /* 2·Hk·Dk + Hv·Dv: q, k, v channels of the conv */
int config_rotated_dims(const model_config *c); /* the head dims RoPE rotates: R rounded up to even */
int config_num_full(const model_config *c);     /* full-attention layers in the trunk */
int config_num_linear(const model_config *c);   /* DeltaNet layers in the trunk */
/* Index of layer l among the layers of its own type (its KV or state slot). */
int config_type_index(const model_config *c, int layer);
int config_is_eos(const model_config *c, int token);

#endif
