/* layers.c — the CPU backend's attention and DeltaNet cores (see layers.h). */
#include "layers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "activations.h"
#include "attention.h"
#include "deltanet.h"
#include "kv_cache.h"
#include "ops.h"
#include "team.h"

/* Room for contexts of n positions of heads of Dh on T threads (before a parallel region: the threads only read
 * it). */
static void reserve(cpu_attention_scratch *s, int n, int T, int Dh) {
    if (n <= s->cap && T <= s->threads && Dh <= s->dh) return;
    const int cap = n > 2 * s->cap ? n : 2 * s->cap, threads = T > s->threads ? T : s->threads;
    const int dh = Dh > s->dh ? Dh : s->dh;
    if (threads > s->threads) {
        s->thread = sp_xrealloc(s->thread, (size_t)threads, sizeof *s->thread, "attention scratch");
        memset(s->thread + s->threads, 0, (size_t)(threads - s->threads) * sizeof *s->thread);
    }
    for (int t = 0; t < threads; t++) {
        cpu_attention_thread *u = &s->thread[t];
        u->scores = sp_xrealloc(u->scores, (size_t)cap, sizeof(float), "attention scores");
        u->keys = sp_xrealloc(u->keys, (size_t)cap, sizeof *u->keys, "attention keys");
        u->values = sp_xrealloc(u->values, (size_t)cap, sizeof *u->values, "attention values");
        u->path = sp_xrealloc(u->path, (size_t)cap, sizeof(int), "attention path");
        u->rows = sp_xrealloc(u->rows, 2 * (size_t)cap * dh, sizeof(float), "attention rows read back");
        u->q = sp_xrealloc(u->q, (size_t)dh, sizeof(float), "attention query rotated");
    }
    s->cap = cap;
    s->threads = threads;
    s->dh = dh;
}

void cpu_attention_scratch_free(cpu_attention_scratch *s) {
    for (int t = 0; t < s->threads; t++) {
        cpu_attention_thread *u = &s->thread[t];
        free(u->scores);
        free(u->keys);
        free(u->values);
        free(u->path);
        free(u->rows);
        free(u->q);
    }
    free(s->thread);
    memset(s, 0, sizeof *s);
}

/* Node i's ancestors in the pass and itself, root first (pass indices, all of node i's sequence); returns their
 * count. */
static int ancestors(const epass *p, int i, int *path) {
    int n = 0;
    for (int u = i; u >= 0; u = p->parent[u]) n++;
    int at = n;
    for (int u = i; u >= 0; u = p->parent[u]) path[--at] = u;
    return n;
}

static void rmsnorm(const engine_backend *b, float *out, const float *x, const float *w, int n, float eps) {
    (b->in_order ? op_rmsnorm : cpu_act_rmsnorm)(out, x, w, n, eps);
}

/* Node i's q and k normed and rotated at its position, its keys and values into its cache slot. */
static void place_node(const engine_backend *b, const epass *p, int la, const attention_args *a, int i) {
    const model_config *c = b->cfg;
    const kv_cache *kv = p->kv;
    const int H = c->num_heads, Hkv = c->num_kv_heads, Dh = c->head_dim, kv_dim = Hkv * Dh;
    const epass_seq *seq = epass_seq_of(p, i);
    const int pos = seq->base + p->depth[i];
    for (int h = 0; h < H; h++) {
        float *q = a->qg + (size_t)i * 2 * H * Dh + (size_t)h * 2 * Dh;
        rmsnorm(b, q, q, a->q_norm, Dh, c->rms_norm_eps);
        op_rope(q, c->rotary_dim, pos, c->rope_theta);
    }
    for (int h = 0; h < Hkv; h++) {
        float *k = a->k + (size_t)i * kv_dim + (size_t)h * Dh;
        rmsnorm(b, k, k, a->k_norm, Dh, c->rms_norm_eps);
        op_rope(k, c->rotary_dim, pos, c->rope_theta);
        const size_t at = kv_offset(kv, seq->table, la, epass_slot(p, i), h);
        float *v = a->v + (size_t)i * kv_dim + (size_t)h * Dh;
        if (kv_format_rotates(kv->format)) { /* q4: keys and values kept rotated (attend rotates q, unrotates out) */
            kvq_rotate(k, Dh);
            kvq_rotate(v, Dh);
        }
        kv_row_store(kv->format, kv_key_row(kv, at), k, Dh);
        kv_row_store(kv->format, kv_value_row(kv, at), v, Dh);
    }
}

/* Row `at` of the cache as float32: in place for a float32 cache, else read back into buf[Dh]. */
static const float *row_floats(kv_format f, const void *row, float *buf, int Dh) {
    if (f == KV_F32) return row;
    kv_row_load(f, buf, row, Dh);
    return buf;
}

/* Head h of node i: its sequence's committed positions, then its ancestors and itself, gated. */
static void attend(const engine_backend *b, cpu_attention_thread *u, const epass *p, int la, const attention_args *a,
                   int i, int h) {
    const model_config *c = b->cfg;
    const kv_cache *kv = p->kv;
    const int H = c->num_heads, Dh = c->head_dim, group = H / c->num_kv_heads, g = h / group;
    const epass_seq *seq = epass_seq_of(p, i);
    const int base = seq->base, n_path = ancestors(p, i, u->path), n = base + n_path;
    for (int t = 0; t < n; t++) {
        const int pos = t < base ? t : epass_slot(p, u->path[t - base]);
        const size_t at = kv_offset(kv, seq->table, la, pos, g);
        float *kbuf = u->rows + 2 * (size_t)t * Dh, *vbuf = kbuf + Dh;
        u->keys[t] = row_floats(kv->format, kv_key_row(kv, at), kbuf, Dh);
        u->values[t] = row_floats(kv->format, kv_value_row(kv, at), vbuf, Dh);
    }
    const float *qh = a->qg + (size_t)i * 2 * H * Dh + (size_t)h * 2 * Dh, *q = qh;
    float *oh = a->out + (size_t)i * H * Dh + (size_t)h * Dh;
    const int rotated = kv_format_rotates(kv->format);
    if (rotated) { /* the keys are rotated: so is the query, and q·k is unchanged (kv_quant.h) */
        memcpy(u->q, qh, (size_t)Dh * sizeof(float));
        kvq_rotate(u->q, Dh);
        q = u->q;
    }
    const float scale = 1.0f / sqrtf((float)Dh);
    if (b->in_order) /* the exact cross-test mode: the reference's sums */
        op_attention_head(oh, q, u->keys, u->values, n, Dh, scale, u->scores);
    else
        cpu_attention_head(oh, q, u->keys, u->values, n, Dh, scale, u->scores);
    if (rotated) kvq_unrotate(oh, Dh); /* a weighted sum of rotated values: rotated back */
    (b->in_order ? op_output_gate : cpu_act_gate)(oh, qh + Dh, Dh);
}

typedef struct {
    const engine_backend *b;
    cpu_attention_scratch *s;
    const epass *p;
    int la;
    const attention_args *a;
} attention_work;

static void place_share(void *ctx, int t, int T) {
    const attention_work *w = ctx;
    for (int i = w->p->m * t / T; i < w->p->m * (t + 1) / T; i++) place_node(w->b, w->p, w->la, w->a, i);
}

static void attend_share(void *ctx, int t, int T) {
    const attention_work *w = ctx;
    const int H = w->b->cfg->num_heads, pairs = w->p->m * H;
    for (int u = pairs * t / T; u < pairs * (t + 1) / T; u++)
        attend(w->b, &w->s->thread[t], w->p, w->la, w->a, u / H, u % H);
}

/* The nodes placed (every key and value of the pass in the cache before any node attends: a node reads its
 * ancestors'), then the (node, head) pairs, on the products' threads when there are several (cpu/team.h):
 * pairs share nothing but what they read. */
void cpu_attention_layer(const engine_backend *b, cpu_attention_scratch *s, const epass *p, int la,
                         const attention_args *a) {
    const int pairs = p->m * b->cfg->num_heads;
    int reach = 0; /* the most positions a node sees */
    for (int j = 0; j < p->n_seqs; j++)
        if (p->seqs[j].base + p->seqs[j].n > reach) reach = p->seqs[j].base + p->seqs[j].n;
    const int T = b->threads < pairs ? b->threads : pairs;
    reserve(s, reach, T, b->cfg->head_dim);
    attention_work w = {b, s, p, la, a};
    cpu_team_run(b->threads < p->m ? b->threads : p->m, place_share, &w);
    cpu_team_run(T, attend_share, &w);
}

void cpu_deltanet_scratch_free(cpu_deltanet_scratch *s) {
    free(s->conv);
    for (int t = 0; t < s->threads; t++) free(s->rec[t]);
    free(s->rec);
    memset(s, 0, sizeof *s);
}

/* Room for the logged states of m nodes on T threads (before a parallel region: the threads only read it). */
static void deltanet_scratch_reserve(const model_config *c, cpu_deltanet_scratch *s, int m, int T) {
    if (m <= s->nodes && T <= s->threads) return;
    cpu_deltanet_scratch_free(s);
    s->nodes = m;
    s->threads = T;
    s->conv = sp_xcalloc((size_t)m * config_conv_dim(c) * (c->conv_kernel - 1), sizeof(float), "conv node states");
    s->rec = sp_xcalloc((size_t)T, sizeof *s->rec, "recurrent node states");
    for (int t = 0; t < T; t++)
        s->rec[t] = sp_xcalloc((size_t)m * c->lin_k_dim * c->lin_v_dim, sizeof(float), "recurrent node states");
}

/* Channels c_begin .. c_end of a DeltaNet layer's causal convolution over the pass's nodes, node by node in each
 * channel: channels share nothing, so ranges of them may run on different threads. A logged node's state is in
 * conv_nodes [m, C, K−1], and its input goes to its log. */
static void conv_channels(const engine_backend *b, const epass *p, const deltanet_args *a, float *conv_nodes,
                          int c_begin, int c_end) {
    const model_config *c = b->cfg;
    const int C = config_conv_dim(c), K = c->conv_kernel, n = c_end - c_begin;
    if (n <= 0) return;
    const size_t at = (size_t)c_begin * (K - 1), node_floats = (size_t)C * (K - 1);
    for (int i = 0; i < p->m; i++) { /* a node's state starts as its parent's after the parent's step */
        float *state = a->conv_state[i] ? a->conv_state[i] + at : conv_nodes + (size_t)i * node_floats + at;
        const float *from =
            a->conv_from[i] ? a->conv_from[i] + at : conv_nodes + (size_t)p->parent[i] * node_floats + at;
        if (state != from) memcpy(state, from, (size_t)n * (K - 1) * sizeof(float));
        const float *x = a->qkv + (size_t)i * C + c_begin;
        (b->in_order ? op_conv_step : cpu_conv_step)(a->mixed + (size_t)i * C + c_begin, state, x,
                                                     a->conv_w + (size_t)c_begin * K, n, K);
        if (a->log[i]) memcpy(a->log[i] + c_begin, x, (size_t)n * sizeof(float));
    }
}

/* Head h of a DeltaNet layer's recurrent step over the pass's m nodes, node by node: a node's state is read right
 * after its parent wrote it (one head's states, (m + 1) × Dk × Dv floats, stay in L2; a whole layer's for m nodes
 * do not). Each step reads the parent's state and writes the node's: no copy. A logged node's state goes to
 * rec_nodes [m, Dk, Dv] (this thread's, reused head after head, so it stays in the caches), not to memory that
 * outlives the pass. Heads share nothing but their inputs, so they may run on different threads. */
static void recurrent_head(const engine_backend *b, const epass *p, const deltanet_args *a, float *rec_nodes, int h) {
    const model_config *c = b->cfg;
    const int C = config_conv_dim(c), m = p->m;
    const int Hk = c->lin_k_heads, Hv = c->lin_v_heads, Dk = c->lin_k_dim, Dv = c->lin_v_dim;
    const int kv_head = h / (Hv / Hk);
    const size_t state_at = (size_t)h * Dk * Dv, node_floats = (size_t)Dk * Dv;
    float qh[512], kh[512]; /* the head's query and key: cpu_delta_step normalises them in place */
    for (int i = 0; i < m; i++) {
        const float *mixed = a->mixed + (size_t)i * C;
        const float *q = mixed, *k = mixed + Hk * Dk, *v = mixed + 2 * Hk * Dk;
        memcpy(qh, q + (size_t)kv_head * Dk, (size_t)Dk * sizeof(float));
        memcpy(kh, k + (size_t)kv_head * Dk, (size_t)Dk * sizeof(float));
        const float beta = op_deltanet_beta(a->b[(size_t)i * Hv + h]);
        const float g = op_deltanet_decay(a->a[(size_t)i * Hv + h], a->A_log[h], a->dt_bias[h]);
        float *oh = a->out + (size_t)i * Hv * Dv + (size_t)h * Dv;
        float *S = a->rec_state[i] ? a->rec_state[i] + state_at : rec_nodes + (size_t)i * node_floats;
        const float *from = a->rec_from[i] ? a->rec_from[i] + state_at : rec_nodes + (size_t)p->parent[i] * node_floats;
        float *step_log = a->log[i] ? a->log[i] + C + (size_t)h * (1 + Dk + Dv) : NULL;
        cpu_delta_step(oh, S, from, qh, kh, v + (size_t)h * Dv, g, beta, Dk, Dv, step_log);
        (b->in_order ? op_rmsnorm_gated : cpu_act_rmsnorm_gated)(
            oh, oh, a->norm_w, a->z + (size_t)i * Hv * Dv + (size_t)h * Dv, Dv, c->rms_norm_eps);
    }
}

typedef struct {
    const engine_backend *b;
    cpu_deltanet_scratch *s;
    const epass *p;
    const deltanet_args *a;
} deltanet_work;

static void conv_share(void *ctx, int t, int T) {
    const deltanet_work *w = ctx;
    const int C = config_conv_dim(w->b->cfg);
    conv_channels(w->b, w->p, w->a, w->s->conv, C * t / T, C * (t + 1) / T);
}

static void heads_share(void *ctx, int t, int T) {
    const deltanet_work *w = ctx;
    const int Hv = w->b->cfg->lin_v_heads;
    for (int h = Hv * t / T; h < Hv * (t + 1) / T; h++) recurrent_head(w->b, w->p, w->a, w->s->rec[t], h);
}

void cpu_deltanet_layer(const engine_backend *b, cpu_deltanet_scratch *s, const epass *p, const deltanet_args *a) {
    /* The convolution by ranges of channels (each channel's nodes in index order: parents first), then the
     * recurrent step by heads, on the products' threads (cpu/team.h): after the products these are most of a
     * prefill. */
    const int Hv = b->cfg->lin_v_heads, T = b->threads < Hv ? b->threads : Hv;
    deltanet_scratch_reserve(b->cfg, s, p->m, T);
    deltanet_work w = {b, s, p, a};
    cpu_team_run(T, conv_share, &w);
    cpu_team_run(T, heads_share, &w);
}

/* Head h's logged updates, oldest first, on its committed state. */
static void replay_head(const model_config *c, float *rec_state, const float *const *steps, int n, int h) {
    const int C = config_conv_dim(c), Dk = c->lin_k_dim, Dv = c->lin_v_dim;
    for (int s = 0; s < n; s++)
        cpu_delta_replay(rec_state + (size_t)h * Dk * Dv, steps[s] + C + (size_t)h * (1 + Dk + Dv), Dk, Dv);
}

typedef struct {
    const model_config *c;
    float *rec_state;
    const float *const *steps;
    int n;
} replay_work;

static void replay_share(void *ctx, int t, int T) {
    const replay_work *w = ctx;
    const int Hv = w->c->lin_v_heads;
    for (int h = Hv * t / T; h < Hv * (t + 1) / T; h++) replay_head(w->c, w->rec_state, w->steps, w->n, h);
}

/* One layer's replay: the conv state shifts the logged inputs in (op_conv_step's update), the recurrent state
 * takes each head's logged update, by heads on the products' threads. */
void cpu_deltanet_replay(const engine_backend *b, float *conv_state, float *rec_state, const float *const *steps,
                         int n) {
    const model_config *c = b->cfg;
    const int C = config_conv_dim(c), K = c->conv_kernel, Hv = c->lin_v_heads;
    for (int s = 0; s < n; s++)
        for (int ch = 0; ch < C; ch++) {
            float *st = conv_state + (size_t)ch * (K - 1);
            for (int j = 0; j + 1 < K - 1; j++) st[j] = st[j + 1];
            if (K > 1) st[K - 2] = steps[s][ch];
        }
    replay_work w = {c, rec_state, steps, n};
    cpu_team_run(b->threads < Hv ? b->threads : Hv, replay_share, &w);
}
