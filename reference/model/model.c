/* model.c — load a qwen3_5 checkpoint into float32 and run it one position
 * at a time: embedding → decoder layers → final norm → lm_head, plus the
 * MTP module. Readable first; the optimized engine is in optimized/. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "footprint.h"
#include "decoder_layer.h"
#include "ops.h"

/* ---- loading ------------------------------------------------------------ */

static void alloc_scratch(model *m) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size, H = c->num_heads, Dh = c->head_dim, C = config_conv_dim(c);
    const int HvDv = c->lin_v_heads * c->lin_v_dim;
    int wide = 2 * H * Dh > C ? 2 * H * Dh : C;
    int kv = c->num_kv_heads * Dh;
    if (kv < c->lin_k_dim) kv = c->lin_k_dim;
    int att = H * Dh > HvDv ? H * Dh : HvDv;
    m->x = sp_xcalloc((size_t)D, sizeof(float), "x");
    m->xb = sp_xcalloc((size_t)D, sizeof(float), "xb");
    m->xb2 = sp_xcalloc((size_t)D, sizeof(float), "xb2");
    m->q = sp_xcalloc((size_t)wide, sizeof(float), "q");
    m->gate_buf = sp_xcalloc((size_t)wide, sizeof(float), "conv output");
    m->k = sp_xcalloc((size_t)kv, sizeof(float), "k");
    m->v = sp_xcalloc((size_t)kv, sizeof(float), "v");
    m->att = sp_xcalloc((size_t)att, sizeof(float), "mixer output");
    m->z = sp_xcalloc((size_t)HvDv, sizeof(float), "z");
    m->ab = sp_xcalloc((size_t)2 * c->lin_v_heads, sizeof(float), "a, b");
    m->hb = sp_xcalloc((size_t)c->intermediate_size, sizeof(float), "hb");
    m->hb2 = sp_xcalloc((size_t)c->intermediate_size, sizeof(float), "hb2");
    m->mtp_in = sp_xcalloc((size_t)2 * D, sizeof(float), "mtp input");
    model_reserve_positions(m, 64);
}

void model_reserve_positions(model *m, int n) {
    if (n <= m->scratch_positions) return;
    int cap = m->scratch_positions ? m->scratch_positions : 64;
    while (cap < n) cap *= 2;
    m->scores = sp_xrealloc(m->scores, (size_t)cap, sizeof(float), "attention scores");
    m->kptrs = sp_xrealloc(m->kptrs, (size_t)cap, sizeof(float *), "key pointers");
    m->vptrs = sp_xrealloc(m->vptrs, (size_t)cap, sizeof(float *), "value pointers");
    m->scratch_positions = cap;
}

int model_load(model *m, const char *path, sp_error *err) {
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s", path);
    checkpoint ck;
    if (checkpoint_open(&ck, path, err)) return -1;
    m->cfg = ck.cfg;
    const model_config *c = &m->cfg;
    m->w.layers = sp_xcalloc((size_t)c->num_layers, sizeof(layer_weights), "layer weights");
    size_t total = 0;
    for (int i = 0; i < ck.n_specs; i++) total += (size_t)tensor_spec_numel(&ck.specs[i]);
    m->arena = sp_xcalloc(total, sizeof(float), "model weights");
    m->arena_floats = total;
    float *next = m->arena;
    int rc = 0;
    for (int i = 0; i < ck.n_specs && !rc; i++) {
        *model_weight_slot(&m->w, &ck.specs[i]) = next;
        rc = checkpoint_read_f32(&ck, i, next, err);
        next += tensor_spec_numel(&ck.specs[i]);
    }
    if (c->tie_word_embeddings) m->w.lm_head = m->w.embed;
    m->w.has_mtp = ck.with_mtp;
    m->storage_bytes = ck.storage_bytes;
    checkpoint_close(&ck);
    if (rc) {
        sp_wrap(err, "loading %s: ", path);
        model_free(m);
        return -1;
    }
    model_footprint fp;
    footprint_compute(c, 0, m->storage_bytes, 2.0, &fp);
    m->weight_bytes_per_step = fp.weight_bytes_per_step;
    alloc_scratch(m);
    return 0;
}

void model_free(model *m) {
    free(m->arena);
    free(m->w.layers);
    float *bufs[] = {m->x,   m->xb, m->xb2, m->q,  m->gate_buf, m->k,      m->v,
                     m->att, m->z,  m->ab,  m->hb, m->hb2,      m->scores, m->mtp_in};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(m->kptrs);
    free(m->vptrs);
    memset(m, 0, sizeof *m);
}

/* ---- the forward ---------------------------------------------------------- */

static void mlp_forward(model *m, const layer_weights *lw, const float *xn, float *out) {
    const int D = m->cfg.hidden_size, F = m->cfg.intermediate_size;
    op_matvec(m->hb, lw->gate_proj, xn, F, D);
    op_matvec(m->hb2, lw->up_proj, xn, F, D);
    op_swiglu(m->hb, m->hb, m->hb2, F);
    op_matvec(out, lw->down_proj, m->hb, D, F);
}

void decoder_layer_forward(model *m, const layer_weights *lw, layer_type type, model_state *s, int type_index,
                           float *x) {
    const int D = m->cfg.hidden_size;
    op_rmsnorm(m->xb, x, lw->input_norm, D, m->cfg.rms_norm_eps);
    if (type == LAYER_FULL_ATTENTION)
        attention_forward(m, lw, s, type_index, m->xb, m->xb2);
    else
        deltanet_forward(m, lw, s, type_index, m->xb, m->xb2);
    for (int i = 0; i < D; i++) x[i] += m->xb2[i];
    op_rmsnorm(m->xb, x, lw->post_norm, D, m->cfg.rms_norm_eps);
    mlp_forward(m, lw, m->xb, m->xb2);
    for (int i = 0; i < D; i++) x[i] += m->xb2[i];
}

/* Final norm into xn[D], then logits[V] when asked for. */
static void head_forward(model *m, const float *x, const float *norm_w, float *xn, float *logits) {
    op_rmsnorm(xn, x, norm_w, m->cfg.hidden_size, m->cfg.rms_norm_eps);
    if (logits) op_matvec(logits, m->w.lm_head, xn, m->cfg.vocab_size, m->cfg.hidden_size);
}

void model_forward(model *m, model_state *s, int token, float *logits, float *hidden) {
    const model_config *c = &m->cfg;
    const int D = c->hidden_size;
    memcpy(m->x, m->w.embed + (long)token * D, (size_t)D * sizeof(float));
    int n_full = 0, n_lin = 0;
    for (int l = 0; l < c->num_layers; l++) {
        layer_type type = c->layer_types[l];
        int idx = type == LAYER_FULL_ATTENTION ? n_full++ : n_lin++;
        decoder_layer_forward(m, &m->w.layers[l], type, s, idx, m->x);
    }
    head_forward(m, m->x, m->w.final_norm, m->xb, logits);
    if (hidden) memcpy(hidden, m->xb, (size_t)D * sizeof(float));
    s->pos++;
}

void model_mtp_forward(model *m, model_state *ms, const float *h, int next_token, float *logits, float *hidden_out) {
    const int D = m->cfg.hidden_size;
    const float eps = m->cfg.rms_norm_eps;
    /* embedding first, then the hidden state, each with its own norm */
    op_rmsnorm(m->mtp_in, m->w.embed + (long)next_token * D, m->w.mtp_norm_embed, D, eps);
    op_rmsnorm(m->mtp_in + D, h, m->w.mtp_norm_hidden, D, eps);
    op_matvec(m->x, m->w.mtp_fc, m->mtp_in, D, 2 * D);
    decoder_layer_forward(m, &m->w.mtp_layer, LAYER_FULL_ATTENTION, ms, 0, m->x);
    head_forward(m, m->x, m->w.mtp_norm, m->xb, logits);
    if (hidden_out) memcpy(hidden_out, m->xb, (size_t)D * sizeof(float));
    ms->pos++;
}
