/* layers.c — the CPU backend's attention and DeltaNet cores (see layers.h). */
#include "layers.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "deltanet.h"
#include "ops.h"

static void reserve(cpu_attention_scratch *s, int n) {
    if (n <= s->cap) return;
    const int cap = n > 2 * s->cap ? n : 2 * s->cap;
    s->scores = sp_xrealloc(s->scores, (size_t)cap, sizeof(float), "attention scores");
    s->keys = sp_xrealloc(s->keys, (size_t)cap, sizeof *s->keys, "attention keys");
    s->values = sp_xrealloc(s->values, (size_t)cap, sizeof *s->values, "attention values");
    s->path = sp_xrealloc(s->path, (size_t)cap, sizeof(int), "attention path");
    s->cap = cap;
}

void cpu_attention_scratch_free(cpu_attention_scratch *s) {
    free(s->scores);
    free(s->keys);
    free(s->values);
    free(s->path);
    memset(s, 0, sizeof *s);
}

/* Node i's ancestors in the pass and itself, root first (positions base + path[j]); returns their count. */
static int ancestors(const epass *p, int i, int *path) {
    int n = 0;
    for (int u = i; u >= 0; u = p->parent[u]) n++;
    int at = n;
    for (int u = i; u >= 0; u = p->parent[u]) path[--at] = u;
    return n;
}

void cpu_attention_layer(const engine_backend *b, cpu_attention_scratch *s, const epass *p, int la,
                         const attention_args *a) {
    const model_config *c = b->cfg;
    const kv_cache *kv = p->kv;
    const int H = c->num_heads, Hkv = c->num_kv_heads, Dh = c->head_dim, m = p->m;
    const int kv_dim = Hkv * Dh, group = H / Hkv;
    float *keys = kv->keys, *values = kv->values;
    for (int i = 0; i < m; i++) { /* norms, RoPE, and the node's keys and values into place */
        const int pos = p->base + p->depth[i];
        for (int h = 0; h < H; h++) {
            float *q = a->qg + (size_t)i * 2 * H * Dh + (size_t)h * 2 * Dh;
            op_rmsnorm(q, q, a->q_norm, Dh, c->rms_norm_eps);
            op_rope(q, c->rotary_dim, pos, c->rope_theta);
        }
        for (int h = 0; h < Hkv; h++) {
            float *k = a->k + (size_t)i * kv_dim + (size_t)h * Dh;
            op_rmsnorm(k, k, a->k_norm, Dh, c->rms_norm_eps);
            op_rope(k, c->rotary_dim, pos, c->rope_theta);
            const size_t at = kv_offset(kv, p->table, la, p->base + i, h);
            memcpy(keys + at, k, (size_t)Dh * sizeof(float));
            memcpy(values + at, a->v + (size_t)i * kv_dim + (size_t)h * Dh, (size_t)Dh * sizeof(float));
        }
    }
    const float scale = 1.0f / sqrtf((float)Dh);
    reserve(s, p->base + m);
    for (int i = 0; i < m; i++) {
        const int n_path = ancestors(p, i, s->path), n = p->base + n_path;
        for (int h = 0; h < H; h++) {
            const int g = h / group;
            for (int t = 0; t < n; t++) { /* the committed positions, then the node's ancestors and itself */
                const int pos = t < p->base ? t : p->base + s->path[t - p->base];
                const size_t at = kv_offset(kv, p->table, la, pos, g);
                s->keys[t] = keys + at;
                s->values[t] = values + at;
            }
            const float *qh = a->qg + (size_t)i * 2 * H * Dh + (size_t)h * 2 * Dh;
            float *oh = a->out + (size_t)i * H * Dh + (size_t)h * Dh;
            if (b->in_order) /* the exact cross-test mode: the reference's sums */
                op_attention_head(oh, qh, s->keys, s->values, n, Dh, scale, s->scores);
            else
                cpu_attention_head(oh, qh, s->keys, s->values, n, Dh, scale, s->scores);
            op_output_gate(oh, qh + Dh, Dh);
        }
    }
}

/* Channels c_begin .. c_end of a DeltaNet layer's causal convolution over the pass's nodes, node by node in each
 * channel: channels share nothing, so ranges of them may run on different threads. */
static void conv_channels(const engine_backend *b, const epass *p, const deltanet_args *a, int c_begin, int c_end) {
    const model_config *c = b->cfg;
    const int C = config_conv_dim(c), K = c->conv_kernel, n = c_end - c_begin;
    if (n <= 0) return;
    for (int i = 0; i < p->m; i++) { /* a node's state starts as its parent's after the parent's step */
        const size_t at = (size_t)c_begin * (K - 1);
        float *state = a->conv_state[i] + at;
        if (a->conv_state[i] != a->conv_from[i])
            memcpy(state, a->conv_from[i] + at, (size_t)n * (K - 1) * sizeof(float));
        op_conv_step(a->mixed + (size_t)i * C + c_begin, state, a->qkv + (size_t)i * C + c_begin,
                     a->conv_w + (size_t)c_begin * K, n, K);
    }
}

/* Head h of a DeltaNet layer's recurrent step over the pass's m nodes, node by node: a node's state is read right
 * after its parent wrote it (one head's states, (m + 1) × Dk × Dv floats, stay in L2; a whole layer's for m nodes
 * do not). Each step reads the parent's slot and writes the node's: no copy. Heads share nothing but their inputs,
 * so they may run on different threads. */
static void recurrent_head(const engine_backend *b, const epass *p, const deltanet_args *a, int h) {
    const model_config *c = b->cfg;
    const int C = config_conv_dim(c), m = p->m;
    const int Hk = c->lin_k_heads, Hv = c->lin_v_heads, Dk = c->lin_k_dim, Dv = c->lin_v_dim;
    const int kv_head = h / (Hv / Hk);
    const size_t state_at = (size_t)h * Dk * Dv;
    float qh[512], kh[512]; /* the head's query and key: cpu_delta_step normalises them in place */
    for (int i = 0; i < m; i++) {
        const float *mixed = a->mixed + (size_t)i * C;
        const float *q = mixed, *k = mixed + Hk * Dk, *v = mixed + 2 * Hk * Dk;
        memcpy(qh, q + (size_t)kv_head * Dk, (size_t)Dk * sizeof(float));
        memcpy(kh, k + (size_t)kv_head * Dk, (size_t)Dk * sizeof(float));
        const float beta = op_deltanet_beta(a->b[(size_t)i * Hv + h]);
        const float g = op_deltanet_decay(a->a[(size_t)i * Hv + h], a->A_log[h], a->dt_bias[h]);
        float *oh = a->out + (size_t)i * Hv * Dv + (size_t)h * Dv;
        cpu_delta_step(oh, a->rec_state[i] + state_at, a->rec_from[i] + state_at, qh, kh, v + (size_t)h * Dv, g, beta,
                       Dk, Dv);
        op_rmsnorm_gated(oh, oh, a->norm_w, a->z + (size_t)i * Hv * Dv + (size_t)h * Dv, Dv, c->rms_norm_eps);
    }
}

void cpu_deltanet_layer(const engine_backend *b, const epass *p, const deltanet_args *a) {
    const model_config *c = b->cfg;
    const int C = config_conv_dim(c), Hv = c->lin_v_heads;
    /* The convolution by ranges of channels (each channel's nodes in index order: parents first), then the
     * recurrent step by heads, on the products' threads: after the products these are most of a prefill. One
     * thread enters no OpenMP region, as cpu_gemm. */
    const int T = b->threads < Hv ? b->threads : Hv;
    int done = 0;
#ifdef _OPENMP
    if (T > 1) {
#pragma omp parallel num_threads(T)
        {
            const int t = omp_get_thread_num();
            conv_channels(b, p, a, C * t / T, C * (t + 1) / T);
#pragma omp barrier
#pragma omp for schedule(static)
            for (int h = 0; h < Hv; h++) recurrent_head(b, p, a, h);
        }
        done = 1;
    }
#endif
    if (!done) {
        conv_channels(b, p, a, 0, C);
        for (int h = 0; h < Hv; h++) recurrent_head(b, p, a, h);
    }
}
