/* cuda_pass.cu — the CUDA backend's passes (backend.h: begin_pass and the ops of a pass). Products and element-wise
 * ops run over all rows of the pass; the attention and DeltaNet kernels run once per sequence. Each pass is
 * captured into CUDA graphs (graph_cache.h) that copy its inputs from the pass's own pinned buffers. */
#include "cuda_backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kn_engine_ops.h"
#include "kn_kv_quant.h"
#include "kn_matvec.h"
#include "kn_paged.h"

/* *p holds at least `count` elements of pinned host memory (its contents lost when it grows). */
template <class T> static T *pinned(engine_backend *b, T **p, size_t *cap, size_t count, const char *what) {
    if (count <= *cap) return *p;
    cuda_drain(b); /* issued work may still read the old buffer */
    if (*p) cuda_check(b, cudaFreeHost(*p), "cudaFreeHost");
    *p = NULL;
    const size_t grown = count > 2 * *cap ? count : 2 * *cap;
    cudaError_t e = cudaMallocHost((void **)p, grown * sizeof(T));
    if (e != cudaSuccess) {
        fprintf(stderr, "specula: out of pinned host memory allocating %zu bytes for %s (%s)\n", grown * sizeof(T),
                what, cudaGetErrorString(e));
        exit(2);
    }
    *cap = grown;
    return *p;
}

static void c_matmul(engine_backend *b, float *y, const eweight *W, const float *x, int m, int n, int k) {
    /* kn_matvec's dispatch pairs an m = 1 and an m > 1 version of one numerics class per shape (kn_matvec.h):
     * a row of a verify pass is bit for bit the decode step's product of that position, so both pick the same
     * greedy token (test_engine_cuda.c's canaries) */
    for (int r = 0; r < m; r += KN_MATVEC_MAX_M) { /* the batch kernels take up to 16 rows per weight read */
        const int rows = m - r < KN_MATVEC_MAX_M ? m - r : KN_MATVEC_MAX_M;
        cuda_check(
            b, kn_matvec(y + (size_t)r * n, (const uint16_t *)W->data, x + (size_t)r * k, rows, n, k, impl(b)->stream),
            "matvec");
    }
}

/* One launch for the group when its weights lie back to back (place_weights' layout: kn_matvec_group writes each
 * part's rows to its own output); else, weights placed apart, one product each. */
static void c_matmul_group(engine_backend *b, const ematmul_part *parts, int n_parts, const float *x, int m, int k) {
    const char *next = (const char *)parts[0].W->data;
    int together = n_parts <= KN_MATVEC_MAX_PARTS;
    for (int j = 0; j < n_parts && together; j++) {
        together = parts[j].W->data == next && parts[j].W->dtype == DTYPE_BF16;
        next += (size_t)parts[j].n * k * sizeof(uint16_t);
    }
    if (!together) {
        for (int j = 0; j < n_parts; j++) c_matmul(b, parts[j].y, parts[j].W, x, m, parts[j].n, k);
        return;
    }
    for (int r = 0; r < m; r += KN_MATVEC_MAX_M) { /* as c_matmul: up to 16 rows per weight read */
        const int rows = m - r < KN_MATVEC_MAX_M ? m - r : KN_MATVEC_MAX_M;
        kn_matvec_out out;
        memset(&out, 0, sizeof out);
        out.n_parts = n_parts;
        for (int j = 0, end = 0; j < n_parts; j++) {
            out.end[j] = end += parts[j].n;
            out.Y[j] = parts[j].y + (size_t)r * parts[j].n;
        }
        cuda_check(
            b, kn_matvec_group(&out, (const uint16_t *)parts[0].W->data, x + (size_t)r * k, rows, k, impl(b)->stream),
            "matvec_group");
    }
}

static void c_embed(engine_backend *b, float *x, const eweight *E, const int *tokens, int m, int D) {
    cuda_impl *c = impl(b);
    int *d_tokens = scratch(b, &c->tokens, &c->tokens_cap, (size_t)m, "token ids");
    pass_stage *st = &c->stages[c->stage];
    if (c->tokens_staged) cuda_drain(b); /* a second embed of one pass: the first's copy from the stage has run */
    int *staged = pinned(b, &st->tokens, &st->tokens_cap, (size_t)m, "token ids");
    memcpy(staged, tokens, (size_t)m * sizeof(int));
    cuda_check(b, cudaMemcpyAsync(d_tokens, staged, (size_t)m * sizeof(int), cudaMemcpyHostToDevice, c->stream),
               "a copy of the token ids to the device");
    c->tokens_staged = 1;
    st->staged_at = c->syncs;
    cuda_check(b, kn_embed_bf16(x, (const uint16_t *)E->data, d_tokens, m, D, c->stream), "embed");
}

static void c_rmsnorm(engine_backend *b, float *y, const float *x, const float *w, int rows, int n, float eps) {
    cuda_check(b, graph_mark(&impl(b)->graphs, impl(b)->stream), "a pass's CUDA graph"); /* a layer's start: a cut */
    cuda_check(b, impl(b)->rmsnorm(y, x, w, rows, n, eps, impl(b)->stream), "rmsnorm");
}

static void c_add(engine_backend *b, float *x, const float *y, size_t n) {
    cuda_check(b, kn_add(x, y, (long)n, impl(b)->stream), "add");
}

static void c_swiglu(engine_backend *b, float *g, const float *u, size_t n) {
    cuda_check(b, impl(b)->swiglu(g, g, u, (long)n, impl(b)->stream), "swiglu");
}

/* ---- attention ----------------------------------------------------------------------- */

/* The scratch of every op of a pass of m nodes over the sequences of c->seqs, reserved before its capture opens
 * (the attention's for the largest of its sequences' launches). */
static void reserve_pass(engine_backend *b, pass_stage *st, int m) {
    cuda_impl *c = impl(b);
    const model_config *cfg = b->cfg;
    const int H = cfg->num_heads, Hkv = cfg->num_kv_heads, Dh = cfg->head_dim;
    const size_t qk = (size_t)m * cfg->lin_k_heads * cfg->lin_k_dim, v = (size_t)m * cfg->lin_v_heads * cfg->lin_v_dim;
    size_t work_floats = 0;
    for (int s = 0; s < c->n_seqs; s++) {
        const size_t w = kn_attention_work_floats(c->seqs[s].base, c->seqs[s].n, H, Hkv, Dh);
        if (w > work_floats) work_floats = w;
    }
    scratch(b, &c->tokens, &c->tokens_cap, (size_t)m, "token ids");
    pinned(b, &st->tokens, &st->tokens_cap, (size_t)m, "token ids");
    scratch(b, &c->q_rot, &c->q_rot_cap, (size_t)m * H * Dh, "rotated queries");
    scratch(b, &c->att_work, &c->att_work_cap, work_floats, "attention scratch");
    scratch(b, &c->dq, &c->dq_cap, qk, "DeltaNet queries");
    scratch(b, &c->dk, &c->dk_cap, qk, "DeltaNet keys");
    scratch(b, &c->dv, &c->dv_cap, v, "DeltaNet values");
}

/* The pass's node arrays, uploaded once per pass in one buffer (ints): node t's tree mask (uint64, first so that
 * it is aligned: the nodes of its own sequence it sees, bit i for the sequence's i-th node), RoPE position, cache
 * slot, parent and DeltaNet state slot, [m] each; then each sequence's block table per attention layer in the
 * kernels' numbering (kv_cache.h's layout: block b of layer l is b·La + l), [La, n_blocks] a sequence. Masks and
 * parents are relative to the node's sequence (a parent is an index among its sequence's nodes, −1 for its first
 * node), so each sequence's launches see the arrays of a pass of its own. Written to the pass's stage (pinned, one
 * of a ring: PASS_STAGES) and copied by the pass's first node, so that its graph copies each pass's own. */
static void c_begin_pass(engine_backend *b, const epass *p) {
    cuda_impl *c = impl(b);
    const int m = p->m, La = p->kv->n_layers;
    cuda_flush(b); /* a pass still unlaunched goes first */
    if (p->n_seqs > c->seqs_cap) {
        c->seqs = (cuda_seq *)sp_xrealloc(c->seqs, (size_t)p->n_seqs, sizeof *c->seqs, "pass sequences");
        c->seqs_cap = p->n_seqs;
    }
    size_t ints = 6 * (size_t)m;
    for (int s = 0; s < p->n_seqs; s++) {
        const epass_seq *q = &p->seqs[s];
        if (q->n > KN_TREE_MAX && !c->failure[0]) /* the host keeps a share within max_tree_nodes */
            snprintf(c->failure, sizeof c->failure, "cuda engine: a pass share of %d nodes (the kernels take %d)", q->n,
                     KN_TREE_MAX);
        c->seqs[s] = cuda_seq{q->first, q->n, q->base, q->table->n, ints};
        ints += (size_t)La * q->table->n;
    }
    c->n_seqs = p->n_seqs;
    scratch(b, &c->table, &c->table_cap, ints, "pass arrays");
    c->stage = (c->stage + 1) % PASS_STAGES;
    pass_stage *st = &c->stages[c->stage];
    if (st->used && st->staged_at == c->syncs) cuda_drain(b); /* its last copies may still be queued */
    st->used = 1;
    int *host = pinned(b, &st->table, &st->table_cap, ints, "pass arrays");
    reserve_pass(b, st, m);
    uint64_t *mask = (uint64_t *)host;
    int *pos = host + 2 * (size_t)m, *slot = pos + m, *parent = slot + m, *state_slot = parent + m;
    for (int t = 0; t < m; t++) {
        const epass_seq *q = epass_seq_of(p, t);
        const int u = t - q->first, up = p->parent[t] < 0 ? -1 : p->parent[t] - q->first;
        pos[t] = q->base + p->depth[t];
        slot[t] = epass_slot(p, t);
        parent[t] = up;
        mask[t] = ((uint64_t)1 << (u & 63)) | (up >= 0 ? mask[q->first + up] : 0);
    }
    if (p->state_slot) memcpy(state_slot, p->state_slot, (size_t)m * sizeof(int)); /* none in the MTP module's */
    for (int s = 0; s < p->n_seqs; s++) {
        const kv_table *table = p->seqs[s].table;
        int *tables = host + c->seqs[s].tables;
        for (int la = 0; la < La; la++)
            for (int j = 0; j < table->n; j++) tables[(size_t)la * table->n + j] = table->blocks[j] * La + la;
    }
    cuda_check(b, graph_begin(&c->graphs, c->stream, m, p->n_seqs, p->kv), "a pass's capture");
    c->tokens_staged = 0;
    cuda_check(b, cudaMemcpyAsync(c->table, host, ints * sizeof(int), cudaMemcpyHostToDevice, c->stream),
               "a copy of the pass arrays to the device");
    st->staged_at = c->syncs;
    c->mask = (uint64_t *)c->table;
    c->pos = c->table + 2 * (size_t)m;
    c->slot = c->pos + m;
    c->parent = c->slot + m;
    c->state_slot = c->parent + m;
    c->host_parent = parent;
}

/* Sequence s's nodes through one attention layer: q and k normed and rotated, its keys and values into its
 * cache, then its nodes attending to its committed positions and their ancestors — the launches a pass of this
 * sequence alone makes, on its rows of the pass's arrays. q: [m, H·Dh] rotated-query scratch; work: the
 * attention's scratch, room for every sequence of the pass. A q8 or q4 cache (kv_quant.h) takes the quantised
 * write and attention of kn_kv_quant.h, rows byte for byte the CPU's; bf16 the engine's kernel versions. */
static void attention_seq(engine_backend *b, const cuda_seq *s, int la, const epass *p, const attention_args *a,
                          float *q, float *work) {
    cuda_impl *c = impl(b);
    const model_config *cfg = b->cfg;
    const int H = cfg->num_heads, Hkv = cfg->num_kv_heads, Dh = cfg->head_dim, f = s->first;
    const int *table = c->table + s->tables + (size_t)la * s->n_blocks;
    const kv_format format = p->kv->format;
    const int bits = format == KV_Q8 ? 8 : format == KV_Q4 ? 4 : 0; /* kv_cache_build: only these and bf16 here */
    float *qs = q + (size_t)f * H * Dh, *out = a->out + (size_t)f * H * Dh;
    const float *qg = a->qg + (size_t)f * 2 * H * Dh, *k = a->k + (size_t)f * Hkv * Dh,
                *v = a->v + (size_t)f * Hkv * Dh;
    const float scale = 1.0f / sqrtf((float)Dh);
    if (bits) {
        unsigned char *Kc = (unsigned char *)p->kv->keys, *Vc = (unsigned char *)p->kv->values;
        cuda_check(b,
                   kn_rope_kv_quant(qs, Kc, Vc, table, qg, k, v, a->q_norm, a->k_norm, c->pos + f, c->slot + f, s->n, H,
                                    Hkv, Dh, cfg->rotary_dim, cfg->rope_theta, cfg->rms_norm_eps, bits, c->stream),
                   "rope_kv_quant");
        cuda_check(b,
                   kn_attention_quant(out, qs, qg, Kc, Vc, table, s->base, s->n, c->mask + f, H, Hkv, Dh, scale, work,
                                      c->att_work_cap, bits, c->stream),
                   "attention_quant");
        return;
    }
    uint16_t *Kc = (uint16_t *)p->kv->keys, *Vc = (uint16_t *)p->kv->values;
    cuda_check(b,
               c->rope_kv(qs, Kc, Vc, table, qg, k, v, a->q_norm, a->k_norm, c->pos + f, c->slot + f, s->n, H, Hkv, Dh,
                          cfg->rotary_dim, cfg->rope_theta, cfg->rms_norm_eps, c->stream),
               "rope_kv");
    cuda_check(b,
               c->attention(out, qs, qg, Kc, Vc, table, s->base, s->n, c->mask + f, H, Hkv, Dh, scale, work,
                            c->att_work_cap, c->stream),
               "attention");
}

/* One launch pair per sequence (the kernels take one block table, one context and one tree mask a call); the
 * products around it ran over all m rows at once. */
static void c_attention(engine_backend *b, const epass *p, int la, const attention_args *a) {
    cuda_impl *c = impl(b);
    const model_config *cfg = b->cfg;
    const int H = cfg->num_heads, Hkv = cfg->num_kv_heads, Dh = cfg->head_dim;
    float *q = scratch(b, &c->q_rot, &c->q_rot_cap, (size_t)p->m * H * Dh, "rotated queries");
    size_t work_floats = 0; /* sized before the first launch: growing it between launches would free a buffer in use */
    for (int s = 0; s < c->n_seqs; s++) {
        const size_t w = kn_attention_work_floats(c->seqs[s].base, c->seqs[s].n, H, Hkv, Dh);
        if (w > work_floats) work_floats = w;
    }
    float *work = scratch(b, &c->att_work, &c->att_work_cap, work_floats, "attention scratch");
    for (int s = 0; s < c->n_seqs; s++) attention_seq(b, &c->seqs[s], la, p, a, q, work);
}

/* ---- Gated DeltaNet --------------------------------------------------------------------- */

/* Sequence s's causal convolution: its first node starts from its own sequence's committed state
 * (conv_from[first]), its others from their parents' slots (the pass's slot table, sequence-relative parents). */
static void conv_seq(engine_backend *b, const cuda_seq *s, const deltanet_args *a) {
    cuda_impl *c = impl(b);
    const int C = config_conv_dim(b->cfg), f = s->first;
    cuda_check(b,
               c->conv(a->mixed + (size_t)f * C, a->conv_slots, c->state_slot + f, a->slot_stride, a->conv_from[f],
                       a->qkv + (size_t)f * C, a->conv_w, c->parent + f, s->n, C, b->cfg->conv_kernel, c->stream),
               "conv_step");
}

/* Sequence s's gated delta step, from its own committed state (rec_from[first]) as conv_seq. q, k, v: the
 * convolution's output split into [m, Hk·Dk], [m, Hk·Dk], [m, Hv·Dv]. */
static void delta_seq(engine_backend *b, const cuda_seq *s, const deltanet_args *a, const float *q, const float *k,
                      const float *v) {
    cuda_impl *c = impl(b);
    const model_config *cfg = b->cfg;
    const int Hk = cfg->lin_k_heads, Hv = cfg->lin_v_heads, Dk = cfg->lin_k_dim, Dv = cfg->lin_v_dim, f = s->first;
    cuda_check(b,
               c->delta(a->out + (size_t)f * Hv * Dv, a->rec_slots, c->state_slot + f, a->slot_stride, a->rec_from[f],
                        q + (size_t)f * Hk * Dk, k + (size_t)f * Hk * Dk, v + (size_t)f * Hv * Dv,
                        a->a + (size_t)f * Hv, a->b + (size_t)f * Hv, a->A_log, a->dt_bias, c->parent + f, s->n, Hk, Hv,
                        Dk, Dv, c->stream),
               "delta_step");
}

/* The convolution and the delta step write every node's state straight into its slot (the pass's slot table,
 * c_begin_pass): no scratch, no copy. They run once per sequence (each starts from one committed state); the
 * split of their rows and the gated norm run over all m rows at once. */
static void c_deltanet(engine_backend *b, const epass *p, const deltanet_args *a) {
    cuda_impl *c = impl(b);
    const model_config *cfg = b->cfg;
    const int C = config_conv_dim(cfg), m = p->m;
    const int Hk = cfg->lin_k_heads, Hv = cfg->lin_v_heads, Dk = cfg->lin_k_dim, Dv = cfg->lin_v_dim;
    for (int s = 0; s < c->n_seqs; s++) conv_seq(b, &c->seqs[s], a);
    /* the convolution's output [m, q | k | v] as the three arrays the delta step reads */
    float *q = scratch(b, &c->dq, &c->dq_cap, (size_t)m * Hk * Dk, "DeltaNet queries");
    float *k = scratch(b, &c->dk, &c->dk_cap, (size_t)m * Hk * Dk, "DeltaNet keys");
    float *v = scratch(b, &c->dv, &c->dv_cap, (size_t)m * Hv * Dv, "DeltaNet values");
    cuda_check(b, kn_copy_rows(q, Hk * Dk, a->mixed, C, Hk * Dk, m, c->stream), "copy_rows");
    cuda_check(b, kn_copy_rows(k, Hk * Dk, a->mixed + Hk * Dk, C, Hk * Dk, m, c->stream), "copy_rows");
    cuda_check(b, kn_copy_rows(v, Hv * Dv, a->mixed + 2 * Hk * Dk, C, Hv * Dv, m, c->stream), "copy_rows");
    for (int s = 0; s < c->n_seqs; s++) delta_seq(b, &c->seqs[s], a, q, k, v);
    cuda_check(b, c->gatednorm(a->out, a->out, a->norm_w, a->z, m * Hv, Dv, cfg->rms_norm_eps, c->stream), "gatednorm");
}

void cuda_pass_install(engine_backend *b) {
    b->begin_pass = c_begin_pass;
    b->matmul = c_matmul;
    b->matmul_group = c_matmul_group;
    b->embed = c_embed;
    b->rmsnorm = c_rmsnorm;
    b->add = c_add;
    b->swiglu = c_swiglu;
    b->attention = c_attention;
    b->deltanet = c_deltanet;
}

void cuda_pass_release(engine_backend *b) {
    cuda_impl *c = impl(b);
    for (int i = 0; i < PASS_STAGES; i++) {
        if (c->stages[i].table) cudaFreeHost(c->stages[i].table);
        if (c->stages[i].tokens) cudaFreeHost(c->stages[i].tokens);
    }
}
