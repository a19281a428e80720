/* engine_forward.c — one pass of the engine over the m nodes of a tree (or
 * a chain): every product reads its weights once for all m rows; attention
 * and the DeltaNet step run node by node with the ops of core/ops.h, each
 * node seeing the committed positions and its own ancestors only, so a pass
 * computes exactly what the reference computes one position at a time. */
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "cpu/attention.h"
#include "cpu/deltanet.h"
#include "engine.h"
#include "ops.h"

/* Below this many elements an elementwise op stays on one thread: starting the others costs more. */
#define SPLIT_MIN_ELEMENTS 16384

static const float *f32(const engine *e, int layer, tensor_role r) {
    return (const float *)engine_weight(&e->w, layer, r)->data;
}

static void matmul(engine *e, float *y, int layer, tensor_role r, const float *x, int m, int n, int k) {
    e->be.matmul(&e->be, y, engine_weight(&e->w, layer, r), x, m, n, k);
}

static void rmsnorm_rows(float *y, const float *x, const float *w, int m, int n, float eps) {
    for (int i = 0; i < m; i++) op_rmsnorm(y + (size_t)i * n, x + (size_t)i * n, w, n, eps);
}

static void add_rows(float *x, const float *y, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

/* Where node i's keys and values of attention layer la live. */
static float *node_key(engine *e, const epass *p, int la, int i) {
    if (i < p->n_in_place) return kv_key(p->kv, p->table, la, p->base + p->depth[i]);
    return p->tree_keys + ((size_t)la * p->tree_cap + i) * p->kv->kv_dim;
}
static float *node_value(engine *e, const epass *p, int la, int i) {
    if (i < p->n_in_place) return kv_value(p->kv, p->table, la, p->base + p->depth[i]);
    return p->tree_values + ((size_t)la * p->tree_cap + i) * p->kv->kv_dim;
}

/* The positions node i attends to, in position order: the committed ones
 * and the chain consumed in place before it, then its ancestors in the tree
 * and itself. Fills act.keys/values with head 0's vectors; returns the count. */
static int gather_keys(engine *e, const epass *p, int la, int i) {
    eact *a = &e->act;
    const int in_place_end = p->base + (i < p->n_in_place ? i + 1 : p->n_in_place);
    int n = 0;
    for (int t = 0; t < in_place_end; t++, n++) {
        a->keys[n] = kv_key(p->kv, p->table, la, t);
        a->values[n] = kv_value(p->kv, p->table, la, t);
    }
    if (i < p->n_in_place) return n;
    for (int u = i; u >= p->n_in_place; u = p->parent[u]) n++; /* the tree nodes on the path, counted */
    int at = n;
    for (int u = i; u >= p->n_in_place; u = p->parent[u]) { /* filled from the deepest back */
        a->keys[--at] = node_key(e, p, la, u);
        a->values[at] = node_value(e, p, la, u);
    }
    return n;
}

static void attention_layer(engine *e, const epass *p, int layer, int la) {
    const model_config *c = &e->cfg;
    eact *a = &e->act;
    const int D = c->hidden_size, H = c->num_heads, Hkv = c->num_kv_heads, Dh = c->head_dim, m = p->m;
    const int kv_dim = Hkv * Dh, group = H / Hkv;
    matmul(e, a->q, layer, ROLE_Q_PROJ, a->xn, m, 2 * H * Dh, D);
    matmul(e, a->k, layer, ROLE_K_PROJ, a->xn, m, kv_dim, D);
    matmul(e, a->v, layer, ROLE_V_PROJ, a->xn, m, kv_dim, D);
    const float *q_norm = f32(e, layer, ROLE_Q_NORM), *k_norm = f32(e, layer, ROLE_K_NORM);
    for (int i = 0; i < m; i++) { /* norms, RoPE, and the node's keys and values into place */
        const int pos = p->base + p->depth[i];
        for (int h = 0; h < H; h++) {
            float *q = a->q + (size_t)i * 2 * H * Dh + (size_t)h * 2 * Dh;
            op_rmsnorm(q, q, q_norm, Dh, c->rms_norm_eps);
            op_rope(q, c->rotary_dim, pos, c->rope_theta);
        }
        float *k = a->k + (size_t)i * kv_dim, *key = node_key(e, p, la, i), *value = node_value(e, p, la, i);
        for (int h = 0; h < Hkv; h++) {
            op_rmsnorm(k + (size_t)h * Dh, k + (size_t)h * Dh, k_norm, Dh, c->rms_norm_eps);
            op_rope(k + (size_t)h * Dh, c->rotary_dim, pos, c->rope_theta);
        }
        memcpy(key, k, (size_t)kv_dim * sizeof(float));
        memcpy(value, a->v + (size_t)i * kv_dim, (size_t)kv_dim * sizeof(float));
    }
    const float scale = 1.0f / sqrtf((float)Dh);
    const float **kh = a->head_keys, **vh = a->head_values;
    for (int i = 0; i < m; i++) {
        const int n = gather_keys(e, p, la, i);
        for (int h = 0; h < H; h++) {
            const int g = h / group;
            for (int t = 0; t < n; t++) kh[t] = a->keys[t] + (size_t)g * Dh, vh[t] = a->values[t] + (size_t)g * Dh;
            const float *qh = a->q + (size_t)i * 2 * H * Dh + (size_t)h * 2 * Dh;
            float *oh = a->att + (size_t)i * H * Dh + (size_t)h * Dh;
            if (e->be.in_order) /* the exact cross-test mode: the reference's sums */
                op_attention_head(oh, qh, kh, vh, n, Dh, scale, a->scores);
            else
                cpu_attention_head(oh, qh, kh, vh, n, Dh, scale, a->scores);
            op_output_gate(oh, qh + Dh, Dh);
        }
    }
    matmul(e, a->out, layer, ROLE_O_PROJ, a->att, m, D, H * Dh);
}

/* The slot node i's DeltaNet state lives in, and the one it starts from. */
static int node_slot(const epass *p, int i) { return i < p->n_in_place ? p->slot : p->node_slot[i]; }
static int parent_slot(const epass *p, int i) {
    return i < p->n_in_place || p->parent[i] < p->n_in_place ? p->slot : p->node_slot[p->parent[i]];
}

/* Channels c_begin .. c_end of a DeltaNet layer's causal convolution over the pass's nodes, node by node in each
 * channel: channels share nothing, so ranges of them may run on different threads. */
static void conv_channels(engine *e, const epass *p, int li, int c_begin, int c_end, const float *conv_w) {
    const model_config *c = &e->cfg;
    eact *a = &e->act;
    const int C = config_conv_dim(c), K = c->conv_kernel, n = c_end - c_begin;
    if (n <= 0) return;
    for (int i = 0; i < p->m; i++) { /* a node's state starts as its parent's after the parent's step */
        const size_t at = (size_t)c_begin * (K - 1);
        float *state = engine_slot_conv(e, node_slot(p, i), li) + at;
        if (node_slot(p, i) != parent_slot(p, i))
            memcpy(state, engine_slot_conv(e, parent_slot(p, i), li) + at, (size_t)n * (K - 1) * sizeof(float));
        op_conv_step(a->mixed + (size_t)i * C + c_begin, state, a->q + (size_t)i * C + c_begin,
                     conv_w + (size_t)c_begin * K, n, K);
    }
}

/* Head h of a DeltaNet layer's recurrent step over the pass's m nodes, node by node: a node's state is read right
 * after its parent wrote it (one head's states, (m + 1) × Dk × Dv floats, stay in L2; a whole layer's for m nodes
 * do not). Each step reads the parent's slot and writes the node's: no copy. Heads share nothing but their inputs,
 * so they may run on different threads. */
static void recurrent_head(engine *e, const epass *p, int layer, int li, int h) {
    const model_config *c = &e->cfg;
    const eact *a = &e->act;
    const int C = config_conv_dim(c), m = p->m;
    const int Hk = c->lin_k_heads, Hv = c->lin_v_heads, Dk = c->lin_k_dim, Dv = c->lin_v_dim;
    const float *A_log = f32(e, layer, ROLE_A_LOG), *dt_bias = f32(e, layer, ROLE_DT_BIAS);
    const float *norm_w = f32(e, layer, ROLE_LIN_NORM);
    const int kv_head = h / (Hv / Hk);
    const size_t state_at = (size_t)h * Dk * Dv;
    float qh[512], kh[512]; /* the head's query and key: cpu_delta_step normalises them in place */
    for (int i = 0; i < m; i++) {
        const float *mixed = a->mixed + (size_t)i * C;
        const float *q = mixed, *k = mixed + Hk * Dk, *v = mixed + 2 * Hk * Dk;
        const float *av = a->ab + (size_t)i * Hv, *bv = a->ab + (size_t)(m + i) * Hv;
        float *S = engine_slot_recurrent(e, node_slot(p, i), li) + state_at;
        const float *S_from = engine_slot_recurrent(e, parent_slot(p, i), li) + state_at;
        memcpy(qh, q + (size_t)kv_head * Dk, (size_t)Dk * sizeof(float));
        memcpy(kh, k + (size_t)kv_head * Dk, (size_t)Dk * sizeof(float));
        const float beta = op_deltanet_beta(bv[h]), g = op_deltanet_decay(av[h], A_log[h], dt_bias[h]);
        float *oh = a->att + (size_t)i * Hv * Dv + (size_t)h * Dv;
        cpu_delta_step(oh, S, S_from, qh, kh, v + (size_t)h * Dv, g, beta, Dk, Dv);
        op_rmsnorm_gated(oh, oh, norm_w, a->z + (size_t)i * Hv * Dv + (size_t)h * Dv, Dv, c->rms_norm_eps);
    }
}

static void deltanet_layer(engine *e, const epass *p, int layer, int li) {
    const model_config *c = &e->cfg;
    eact *a = &e->act;
    const int D = c->hidden_size, C = config_conv_dim(c), m = p->m;
    const int Hv = c->lin_v_heads, Dv = c->lin_v_dim;
    matmul(e, a->q, layer, ROLE_IN_PROJ_QKV, a->xn, m, C, D);
    matmul(e, a->z, layer, ROLE_IN_PROJ_Z, a->xn, m, Hv * Dv, D);
    matmul(e, a->ab + (size_t)m * Hv, layer, ROLE_IN_PROJ_B, a->xn, m, Hv, D);
    matmul(e, a->ab, layer, ROLE_IN_PROJ_A, a->xn, m, Hv, D);
    const float *conv_w = f32(e, layer, ROLE_CONV1D);
    /* The convolution by ranges of channels (each channel's nodes in index order: parents first), then the
     * recurrent step by heads, on the products' threads: after the products these are most of a prefill. One
     * thread enters no OpenMP region, as cpu_gemm. */
    const int T = e->be.threads < Hv ? e->be.threads : Hv;
    int done = 0;
#ifdef _OPENMP
    if (T > 1) {
#pragma omp parallel num_threads(T)
        {
            const int t = omp_get_thread_num();
            conv_channels(e, p, li, C * t / T, C * (t + 1) / T, conv_w);
#pragma omp barrier
#pragma omp for schedule(static)
            for (int h = 0; h < Hv; h++) recurrent_head(e, p, layer, li, h);
        }
        done = 1;
    }
#endif
    if (!done) {
        conv_channels(e, p, li, 0, C, conv_w);
        for (int h = 0; h < Hv; h++) recurrent_head(e, p, layer, li, h);
    }
    matmul(e, a->out, layer, ROLE_OUT_PROJ, a->att, m, D, Hv * Dv);
}

static void mlp(engine *e, int layer, int m) {
    eact *a = &e->act;
    const int D = e->cfg.hidden_size, F = e->cfg.intermediate_size;
    matmul(e, a->g, layer, ROLE_GATE_PROJ, a->xn, m, F, D);
    matmul(e, a->u, layer, ROLE_UP_PROJ, a->xn, m, F, D);
    const size_t n = (size_t)m * F; /* elementwise: split into one range per thread when there are several */
    const int T = e->be.threads;
    if (T > 1 && n >= SPLIT_MIN_ELEMENTS) {
#pragma omp parallel for num_threads(T) schedule(static)
        for (int t = 0; t < T; t++) {
            const size_t begin = n * t / T, end = n * (t + 1) / T;
            op_swiglu(a->g + begin, a->g + begin, a->u + begin, (int)(end - begin));
        }
    } else {
        op_swiglu(a->g, a->g, a->u, (int)n);
    }
    matmul(e, a->out, layer, ROLE_DOWN_PROJ, a->g, m, D, F);
}

void engine_decoder_layer(engine *e, const epass *p, int layer, layer_type type, int type_index) {
    eact *a = &e->act;
    const int D = e->cfg.hidden_size, m = p->m;
    const float eps = e->cfg.rms_norm_eps;
    rmsnorm_rows(a->xn, a->x, f32(e, layer, ROLE_INPUT_NORM), m, D, eps);
    if (type == LAYER_FULL_ATTENTION)
        attention_layer(e, p, layer, type_index);
    else
        deltanet_layer(e, p, layer, type_index);
    add_rows(a->x, a->out, (size_t)m * D);
    rmsnorm_rows(a->xn, a->x, f32(e, layer, ROLE_POST_NORM), m, D, eps);
    mlp(e, layer, m);
    add_rows(a->x, a->out, (size_t)m * D);
}

int engine_forward(engine *e, eseq *s, const int *tokens, const int *parent, const int *depth, int m, int n_in_place,
                   float *logits, float *hidden, sp_error *err) {
    const model_config *c = &e->cfg;
    const int D = c->hidden_size, V = c->vocab_size;
    for (int i = 1; i < m; i++)
        if (parent[i] < 0 || parent[i] >= i || (i >= n_in_place && parent[i] < n_in_place - 1) ||
            (i < n_in_place && parent[i] != i - 1))
            return sp_fail(err, "cpu engine: node %d has parent %d, which this pass cannot place", i, parent[i]);
    for (int i = 0; i < m; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return sp_fail(err, "cpu engine: token %d is outside the vocabulary [0, %d)", tokens[i], V);
    const epass p = {&e->kv, &s->kv, s->tree_keys, s->tree_values, s->cap, s->slot, s->node_slot, parent,
                     depth,  m,      n_in_place,   s->pos};
    int max_depth = 0;
    for (int i = 0; i < m; i++)
        if (depth[i] > max_depth) max_depth = depth[i];
    kv_table_reserve(&e->kv, &s->kv, p.base, p.base + n_in_place); /* before any pointer into the pool is taken */
    engine_act_reserve(e, m, p.base + max_depth + 1);
    eact *a = &e->act;
    e->be.embed(&e->be, a->x, engine_weight(&e->w, 0, ROLE_EMBED), tokens, m, D);
    int n_full = 0, n_lin = 0;
    for (int l = 0; l < c->num_layers; l++) {
        const layer_type type = c->layer_types[l];
        engine_decoder_layer(e, &p, l, type, type == LAYER_FULL_ATTENTION ? n_full++ : n_lin++);
    }
    rmsnorm_rows(a->xn, a->x, f32(e, 0, ROLE_FINAL_NORM), m, D, c->rms_norm_eps);
    if (hidden) memcpy(hidden, a->xn, (size_t)m * D * sizeof(float));
    if (logits) matmul(e, logits, 0, ROLE_LM_HEAD, a->xn, m, V, D);
    s->pos += n_in_place;
    return 0;
}
