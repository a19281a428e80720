/* model.c — load a qwen3_5 checkpoint into float32 and run it one position
 * at a time: embedding → decoder layers → final norm → lm_head, plus the
 * MTP module. Readable first; the optimized engine is in optimized/. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "footprint.h"
#include "layers.h"
#include "ops.h"
#include "safetensors.h"

/* ---- loading ------------------------------------------------------------ */

/* A tensor the config does not account for means config and weights
 * disagree (e.g. an 8-layer checkpoint under a 4-layer config): refuse it
 * rather than run a different model than the file holds. The vision tower,
 * an MTP module that is not loaded and a tied lm_head are the exceptions. */
static int check_unexpected(const st_set *st, const tensor_spec *specs, int n, int with_mtp, sp_error *err) {
    for (int i = 0; i < st->n_tensors; i++) {
        const char *name = st->tensors[i].name;
        if (!strncmp(name, "model.visual.", 13) || (!with_mtp && !strncmp(name, "mtp.", 4)) ||
            !strcmp(name, "lm_head.weight"))
            continue;
        int known = 0;
        for (int j = 0; j < n && !known; j++) known = !strcmp(name, specs[j].name);
        if (!known)
            return sp_fail(err,
                           "tensor %s (%s) is not part of the model config.json describes: the config and the "
                           "weights disagree",
                           name, st->paths[st->tensors[i].file]);
    }
    return 0;
}

/* Checks one tensor of the file against its spec and converts it into dst. */
static int load_tensor(const st_set *st, const tensor_spec *spec, float *dst, sp_error *err) {
    const st_tensor *t = st_find(st, spec->name);
    if (!t) return sp_fail(err, "tensor %s: missing from the checkpoint", spec->name);
    int same = t->ndim == spec->ndim;
    for (int d = 0; same && d < spec->ndim; d++) same = t->shape[d] == spec->shape[d];
    if (!same) {
        char want[96], have[96];
        st_format_shape(spec->ndim, spec->shape, want, sizeof want);
        st_format_shape(t->ndim, t->shape, have, sizeof have);
        return sp_fail(err, "tensor %s: expected %s, file %s has %s %s", spec->name, want, st->paths[t->file], have,
                       dtype_name(t->dtype));
    }
    int64_t n = tensor_spec_numel(spec);
    dtype_to_f32(dst, t->data, t->dtype, (size_t)n);
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(dst[i]))
            return sp_fail(err, "tensor %s (%s): element %lld is %s; %s", spec->name, st->paths[t->file], (long long)i,
                           isnan(dst[i]) ? "NaN" : "infinite",
                           (spec->kind == TENSOR_NORM || spec->kind == TENSOR_NORM_PLAIN)
                               ? "a norm weight must be finite"
                               : "weights must be finite");
    return 0;
}

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
    if (config_load(path, &m->cfg, err)) return -1;
    const model_config *c = &m->cfg;
    st_set st;
    if (st_open(&st, path, err)) return -1;

    /* The MTP module is optional: the text-only layout that transformers
     * saves drops it. Load it whenever the config declares it and the
     * checkpoint has its first tensor; a partial module is an error. */
    int with_mtp = c->mtp_num_layers > 0 && st_find(&st, "mtp.fc.weight") != NULL;
    m->w.layers = sp_xcalloc((size_t)c->num_layers, sizeof(layer_weights), "layer weights");
    int max = layout_max_tensors(c);
    tensor_spec *specs = sp_xcalloc((size_t)max, sizeof *specs, "tensor specs");
    int n = layout_build(c, with_mtp, &m->w, specs);
    size_t total = 0;
    for (int i = 0; i < n; i++) total += (size_t)tensor_spec_numel(&specs[i]);
    m->arena = sp_xcalloc(total, sizeof(float), "model weights");
    m->arena_floats = total;
    float *next = m->arena;
    int rc = check_unexpected(&st, specs, n, with_mtp, err);
    for (int i = 0; i < n && !rc; i++) {
        *specs[i].slot = next;
        rc = load_tensor(&st, &specs[i], next, err);
        next += tensor_spec_numel(&specs[i]);
    }
    if (!rc && c->tie_word_embeddings) m->w.lm_head = m->w.embed;
    if (!rc) {
        const st_tensor *embed = st_find(&st, specs[0].name);
        m->storage_bytes = embed ? dtype_size(embed->dtype) : 4;
        model_footprint fp;
        footprint_compute(c, 0, m->storage_bytes, 2.0, &fp);
        m->weight_bytes_per_step = fp.weight_bytes_per_step;
    }
    m->w.has_mtp = with_mtp;
    free(specs);
    st_close(&st);
    if (rc) {
        sp_wrap(err, "loading %s: ", path);
        model_free(m);
        return -1;
    }
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
