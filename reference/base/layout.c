/* layout.c — the list of tensors in a qwen3_5 checkpoint, with the exact
 * names of the Hugging Face layout (see docs/model-format.md). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "layout.h"

typedef struct {
    tensor_spec *specs;
    int n;
} spec_list;

static void add(spec_list *l, tensor_role role, tensor_kind kind, tensor_group group, int layer, int ndim, int64_t d0,
                int64_t d1, int64_t d2, const char *fmt, ...) __attribute__((format(printf, 10, 11)));

static void add(spec_list *l, tensor_role role, tensor_kind kind, tensor_group group, int layer, int ndim, int64_t d0,
                int64_t d1, int64_t d2, const char *fmt, ...) {
    tensor_spec *t = &l->specs[l->n++];
    memset(t, 0, sizeof *t);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->ndim = ndim;
    t->shape[0] = d0, t->shape[1] = d1, t->shape[2] = d2;
    t->kind = kind;
    t->group = group;
    t->layer = layer;
    t->role = role;
}

/* The tensors of one decoder layer under `prefix` ("…layers.3." or "mtp.layers.0."). */
static void add_layer(spec_list *l, const model_config *c, layer_type type, const char *prefix, tensor_group group,
                      int layer) {
    const int D = c->hidden_size, F = c->intermediate_size;
    add(l, ROLE_INPUT_NORM, TENSOR_NORM, group, layer, 1, D, 0, 0, "%sinput_layernorm.weight", prefix);
    if (type == LAYER_FULL_ATTENTION) {
        const int H = c->num_heads, Hkv = c->num_kv_heads, Dh = c->head_dim;
        add(l, ROLE_Q_PROJ, TENSOR_MATRIX, group, layer, 2, 2 * H * Dh, D, 0, "%sself_attn.q_proj.weight", prefix);
        add(l, ROLE_K_PROJ, TENSOR_MATRIX, group, layer, 2, Hkv * Dh, D, 0, "%sself_attn.k_proj.weight", prefix);
        add(l, ROLE_V_PROJ, TENSOR_MATRIX, group, layer, 2, Hkv * Dh, D, 0, "%sself_attn.v_proj.weight", prefix);
        add(l, ROLE_O_PROJ, TENSOR_MATRIX, group, layer, 2, D, H * Dh, 0, "%sself_attn.o_proj.weight", prefix);
        add(l, ROLE_Q_NORM, TENSOR_NORM, group, layer, 1, Dh, 0, 0, "%sself_attn.q_norm.weight", prefix);
        add(l, ROLE_K_NORM, TENSOR_NORM, group, layer, 1, Dh, 0, 0, "%sself_attn.k_norm.weight", prefix);
    } else {
        const int Hv = c->lin_v_heads, Dv = c->lin_v_dim, C = config_conv_dim(c), K = c->conv_kernel;
        add(l, ROLE_IN_PROJ_QKV, TENSOR_MATRIX, group, layer, 2, C, D, 0, "%slinear_attn.in_proj_qkv.weight", prefix);
        add(l, ROLE_IN_PROJ_Z, TENSOR_MATRIX, group, layer, 2, Hv * Dv, D, 0, "%slinear_attn.in_proj_z.weight", prefix);
        add(l, ROLE_IN_PROJ_B, TENSOR_MATRIX, group, layer, 2, Hv, D, 0, "%slinear_attn.in_proj_b.weight", prefix);
        add(l, ROLE_IN_PROJ_A, TENSOR_MATRIX, group, layer, 2, Hv, D, 0, "%slinear_attn.in_proj_a.weight", prefix);
        add(l, ROLE_CONV1D, TENSOR_CONV, group, layer, 3, C, 1, K, "%slinear_attn.conv1d.weight", prefix);
        add(l, ROLE_DT_BIAS, TENSOR_DT_BIAS, group, layer, 1, Hv, 0, 0, "%slinear_attn.dt_bias", prefix);
        add(l, ROLE_A_LOG, TENSOR_A_LOG, group, layer, 1, Hv, 0, 0, "%slinear_attn.A_log", prefix);
        add(l, ROLE_LIN_NORM, TENSOR_NORM_PLAIN, group, layer, 1, Dv, 0, 0, "%slinear_attn.norm.weight", prefix);
        add(l, ROLE_OUT_PROJ, TENSOR_MATRIX, group, layer, 2, D, Hv * Dv, 0, "%slinear_attn.out_proj.weight", prefix);
    }
    add(l, ROLE_POST_NORM, TENSOR_NORM, group, layer, 1, D, 0, 0, "%spost_attention_layernorm.weight", prefix);
    add(l, ROLE_GATE_PROJ, TENSOR_MATRIX, group, layer, 2, F, D, 0, "%smlp.gate_proj.weight", prefix);
    add(l, ROLE_UP_PROJ, TENSOR_MATRIX, group, layer, 2, F, D, 0, "%smlp.up_proj.weight", prefix);
    add(l, ROLE_DOWN_PROJ, TENSOR_MATRIX, group, layer, 2, D, F, 0, "%smlp.down_proj.weight", prefix);
}

int layout_max_tensors(const model_config *c) { return 16 * (c->num_layers + 1) + 16; }

int layout_build(const model_config *c, int with_mtp, tensor_spec *specs) {
    spec_list l = {specs, 0};
    const char *p = c->tensor_prefix;
    const int D = c->hidden_size, V = c->vocab_size;
    char prefix[96];
    add(&l, ROLE_EMBED, TENSOR_EMBEDDING, GROUP_TRUNK, -1, 2, V, D, 0, "%sembed_tokens.weight", p);
    for (int i = 0; i < c->num_layers; i++) {
        snprintf(prefix, sizeof prefix, "%slayers.%d.", p, i);
        add_layer(&l, c, c->layer_types[i], prefix, GROUP_TRUNK, i);
    }
    add(&l, ROLE_FINAL_NORM, TENSOR_NORM, GROUP_TRUNK, -1, 1, D, 0, 0, "%snorm.weight", p);
    if (!c->tie_word_embeddings) add(&l, ROLE_LM_HEAD, TENSOR_MATRIX, GROUP_LM_HEAD, -1, 2, V, D, 0, "lm_head.weight");
    if (with_mtp) {
        add(&l, ROLE_MTP_FC, TENSOR_MATRIX, GROUP_MTP, -1, 2, D, 2 * D, 0, "mtp.fc.weight");
        add(&l, ROLE_MTP_NORM_EMBED, TENSOR_NORM, GROUP_MTP, -1, 1, D, 0, 0, "mtp.pre_fc_norm_embedding.weight");
        add(&l, ROLE_MTP_NORM_HIDDEN, TENSOR_NORM, GROUP_MTP, -1, 1, D, 0, 0, "mtp.pre_fc_norm_hidden.weight");
        add_layer(&l, c, LAYER_FULL_ATTENTION, "mtp.layers.0.", GROUP_MTP, -1);
        add(&l, ROLE_MTP_NORM, TENSOR_NORM, GROUP_MTP, -1, 1, D, 0, 0, "mtp.norm.weight");
    }
    return l.n;
}

int64_t tensor_spec_numel(const tensor_spec *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}
