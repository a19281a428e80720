/* backend_cuda.cu — the engine's CUDA backend: backend.h's struct filled
 * with the kernels of kernels/ (kn_*.h). The same file compiles with nvcc
 * for a GPU and with the C++ compiler against the kernels' CPU emulator
 * (-DKN_EMU), so the whole engine runs its CUDA host path in CI.
 *
 * What lives on the device: the weights (bf16 matrices, float32 small
 * tensors, uploaded once; the projections that read one input — q/k/v,
 * DeltaNet's four in_proj, gate/up — back to back in one allocation per
 * layer, so that one kn_matvec_group launch computes them all), the
 * activations, the KV cache (bf16, the layout
 * of kv_cache.h: block b of layer l is the kernels' paged block b·La + l),
 * the DeltaNet state slots. The host code of the engine decides which slot
 * and cache position each node reads and writes; this file turns that into
 * the kernels' arguments: a block table per layer, each node's RoPE
 * position and cache slot, the tree's visibility masks, and the parents of
 * the DeltaNet chain, and each node's DeltaNet slot, through which the
 * DeltaNet kernels write its state in place (no scratch, no copy). A verify
 * pass under the exact rule ends in kn_probs and kn_accept_chain (or
 * kn_accept_tree) on the device, so only the result of the round comes
 * back (accept). The launches of a pass are captured into a CUDA graph per
 * pass shape and launched as one (graph_cache.h; backend_cuda_graphs turns
 * that off): the pass's inputs reach the device through pinned buffers the
 * backend owns, copied by the graph itself, and every call that is not one
 * of a pass's ops first ends the capture and launches the graph. */
extern "C" {
#include "dtype.h"
}
#include "cuda_backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_cache.h"
#include "kn_attention.h"
#include "kn_deltanet.h"
#include "kn_engine_ops.h"
#include "kn_matvec.h"
#include "kn_norm.h"
#include "kn_paged.h"
#include "kn_sample.h"

/* One sequence of a pass as its own launches of the per-sequence kernels take it (c_begin_pass): the attention
 * kernels read one block table, one context and one tree mask a call, the DeltaNet kernels one committed state. */
typedef struct {
    int first, n, base; /* its nodes [first, first + n) of the pass, after its base committed positions */
    int n_blocks;       /* its block table's length */
    size_t tables;      /* its [La, n_blocks] block tables in the pass arrays: an offset in ints */
} cuda_seq;

/* The pinned buffers a pass's first nodes copy to the device: its arrays (c_begin_pass) and its token ids (c_embed).
 * A ring of them, one set per pass: a pass rewrites the set of the pass PASS_STAGES before it, whose copies have run
 * if the stream has been waited on since (a round waits once, for its result), so the passes of a round follow
 * each other without the host draining the stream between them. */
#define PASS_STAGES 8
typedef struct {
    int *table, *tokens;
    size_t table_cap, tokens_cap;
    int used;
    unsigned long staged_at; /* cuda_impl.syncs when its last copy was queued */
} pass_stage;

typedef struct {
    cudaStream_t stream;
    char device[160];
    char failure[512]; /* the first failed launch since the last status call ("" none) */
    /* device scratch, grown as passes grow; mask .. state_slot point into `table`, the pass's arrays (c_begin_pass) */
    int *tokens, *table, *pos, *slot, *parent, *state_slot, *result;
    uint64_t *mask;
    size_t tokens_cap, table_cap, result_cap;
    cuda_seq *seqs; /* [n_seqs] the pass's sequences (host memory, seqs_cap of room) */
    int n_seqs, seqs_cap;
    const int *host_parent; /* [m] the pass's parents, sequence-relative, in its stage's table */
    float *q_rot, *att_work, *dq, *dk, *dv, *probs, *accept_work;
    double *probs_work;
    size_t q_rot_cap, att_work_cap, dq_cap, dk_cap, dv_cap, probs_cap, probs_work_cap, accept_work_cap;
    pass_stage stages[PASS_STAGES];
    int stage;           /* the pass's, in stages */
    int tokens_staged;   /* the pass's stage already holds token ids queued for a copy */
    unsigned long syncs; /* waits on the whole stream so far (drain, the synchronous copies, status) */
    graph_cache graphs;
    /* the version of each kernel family the engine runs */
    kn_rmsnorm_fn rmsnorm;
    kn_gatednorm_fn gatednorm;
    kn_swiglu_fn swiglu;
    kn_rope_kv_fn rope_kv;
    kn_attention_fn attention;
    kn_conv_fn conv;
    kn_delta_fn delta;
    int queued;    /* work launched since the last wait */
    cuda_mtp *mtp; /* the MTP chain's scratch (mtp_device.cu) */
} cuda_impl;

static cuda_impl *impl(engine_backend *b) { return (cuda_impl *)b->impl; }

/* Records the first failure; the pass goes on (its results are discarded when status reports it). */
static void check(engine_backend *b, cudaError_t e, const char *what) {
    cuda_impl *c = impl(b);
    c->queued = 1;
    if (e == cudaSuccess || c->failure[0]) return;
    snprintf(c->failure, sizeof c->failure, "cuda engine: %s failed on %s: %s", what, c->device, cudaGetErrorString(e));
}

/* Ends the pass's capture, if one is open, and launches its graph: first thing in every call that is not one of a
 * pass's ops (a copy, an allocation, a wait), which could not be part of a graph. */
static void flush(engine_backend *b) {
    cuda_impl *c = impl(b);
    check(b, graph_end(&c->graphs, c->stream), "a pass's CUDA graph");
}

/* Waits until the stream has run what was issued: a pinned buffer the issued work reads may then be rewritten. */
static void drain(engine_backend *b) {
    cuda_impl *c = impl(b);
    const int queued = c->queued;
    flush(b);
    check(b, cudaStreamSynchronize(c->stream), "a wait on the stream");
    b->stalls += queued; /* no result comes back: a stall, not a wait (backend.h) */
    c->queued = 0;
    c->syncs++;
}

static void *c_alloc(engine_backend *b, size_t bytes, const char *what) {
    flush(b);
    void *p = NULL;
    cudaError_t e = kn_dev_alloc(&p, bytes);
    if (e != cudaSuccess) { /* as sp_xcalloc on the host: nothing sensible can go on */
        fprintf(stderr, "specula: out of device memory allocating %zu bytes for %s on %s (%s)\n", bytes, what,
                impl(b)->device, cudaGetErrorString(e));
        exit(2);
    }
    return p;
}
static void c_free(engine_backend *b, void *p) {
    flush(b);
    check(b, kn_dev_free(p), "cudaFree");
}
static void c_upload(engine_backend *b, void *dst, const void *src, size_t bytes) {
    const int queued = impl(b)->queued;
    flush(b);
    check(b, kn_dev_upload(dst, src, bytes), "a copy to the device");
    b->stalls += queued; /* the synchronous copy waits for the work queued before it */
    impl(b)->queued = 0;
    impl(b)->syncs++;
}
static void c_download(engine_backend *b, void *dst, const void *src, size_t bytes) {
    flush(b);
    check(b, kn_dev_download(dst, src, bytes), "a copy from the device");
    b->waits++; /* the copy waits for the work queued before it */
    impl(b)->queued = 0;
    impl(b)->syncs++;
}
static void c_copy(engine_backend *b, void *dst, const void *src, size_t bytes) {
    flush(b);
    check(b, kn_dev_copy(dst, src, bytes, impl(b)->stream), "a copy on the device");
}
static void c_zero(engine_backend *b, void *p, size_t bytes) {
    flush(b);
    check(b, kn_dev_zero(p, bytes, impl(b)->stream), "cudaMemset");
}

/* *p holds at least `count` elements of pinned host memory (its contents lost when it grows). */
template <class T> static T *pinned(engine_backend *b, T **p, size_t *cap, size_t count, const char *what) {
    if (count <= *cap) return *p;
    drain(b); /* issued work may still read the old buffer */
    if (*p) check(b, cudaFreeHost(*p), "cudaFreeHost");
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

/* *p holds at least `bytes` of device scratch. A pass's scratch is reserved before its capture opens
 * (reserve_pass); growing it during one ends the capture there (c_free, c_alloc), the rest of the pass launched
 * op by op: a recorded graph never holds a buffer that was freed. */
template <class T> static T *scratch(engine_backend *b, T **p, size_t *cap, size_t count, const char *what) {
    if (count > *cap) {
        if (*p) c_free(b, *p);
        const size_t grown = count > 2 * *cap ? count : 2 * *cap;
        *p = (T *)c_alloc(b, grown * sizeof(T), what);
        *cap = grown;
    }
    return *p;
}

/* ---- weights ---------------------------------------------------------------------- */

/* The table once every tensor is on the device (the tied lm_head is the embedding's), or NULL with the first
 * failure, nothing left allocated. */
static eweight *placed_or_failure(engine_backend *b, eweight *placed, const engine_weights *w, sp_error *err) {
    if (w->ck.cfg.tie_word_embeddings) placed[ROLE_LM_HEAD] = placed[ROLE_EMBED];
    sp_error failed;
    if (b->status(b, &failed)) {
        sp_fail(err, "%s", failed.msg);
        b->free_weights(b, placed, w);
        return NULL;
    }
    return placed;
}

/* The checkpoint's tensors by table entry: each entry's spec (−1: none) and size, to place a group's parts
 * (engine_weight_groups) back to back in one allocation: row `row`'s group g is one allocation when every part
 * of it has a tensor there (always so in a checkpoint the loader accepts), so one launch reads them all
 * (c_matmul_group). */
typedef struct {
    int *spec;     /* [n_slots · ROLE_COUNT] */
    size_t *bytes; /* [n_slots · ROLE_COUNT] */
} entry_map;

static entry_map entries(const engine_weights *w) {
    const size_t n = (size_t)w->n_slots * ROLE_COUNT;
    entry_map e = {(int *)sp_xcalloc(n, sizeof(int), "weight entries"),
                   (size_t *)sp_xcalloc(n, sizeof(size_t), "weight entries")};
    for (size_t i = 0; i < n; i++) e.spec[i] = -1;
    for (int i = 0; i < w->ck.n_specs; i++) {
        size_t index, bytes;
        engine_weight_entry(w, i, &index, &bytes);
        e.spec[index] = i, e.bytes[index] = bytes;
    }
    return e;
}
static void entries_free(entry_map *e) { free(e->spec), free(e->bytes); }

/* The group entry `index` is part `*part` of when that group is placed as one allocation, else −1. */
static int placed_group(const entry_map *e, size_t index, int *part) {
    const size_t row = index / ROLE_COUNT;
    const int g = engine_weight_group_of((tensor_role)(index % ROLE_COUNT), part);
    if (g < 0) return -1;
    const engine_weight_group *group = &engine_weight_groups[g];
    for (int j = 0; j < group->n_parts; j++)
        if (e->spec[row * ROLE_COUNT + group->role[j]] < 0) return -1;
    return g;
}

/* Device memory for every tensor: one allocation per weight group (its parts back to back, in the group's order),
 * one per other tensor; fill(i, dev) writes tensor i there. */
template <class F> static void place_all(engine_backend *b, const engine_weights *w, eweight *placed, F fill) {
    entry_map e = entries(w);
    for (int i = 0; i < w->ck.n_specs; i++) {
        size_t index, bytes;
        const eweight *host = engine_weight_entry(w, i, &index, &bytes);
        int part;
        const int g = placed_group(&e, index, &part);
        if (g < 0) {
            void *dev = c_alloc(b, bytes, w->ck.specs[i].name);
            fill(i, dev);
            placed[index].data = dev;
            placed[index].dtype = host->dtype;
            continue;
        }
        if (part) continue; /* placed with its group's first part */
        const engine_weight_group *group = &engine_weight_groups[g];
        const size_t row = index / ROLE_COUNT;
        size_t total = 0;
        for (int j = 0; j < group->n_parts; j++) total += e.bytes[row * ROLE_COUNT + group->role[j]];
        char what[300];
        snprintf(what, sizeof what, "%s and the projections placed with it", w->ck.specs[i].name);
        char *dev = (char *)c_alloc(b, total, what);
        size_t off = 0;
        for (int j = 0; j < group->n_parts; j++) {
            const size_t at = row * ROLE_COUNT + group->role[j];
            fill(e.spec[at], dev + off);
            placed[at].data = dev + off;
            placed[at].dtype = w->w[at].dtype;
            off += e.bytes[at];
        }
    }
    entries_free(&e);
}

static eweight *c_place_weights(engine_backend *b, const engine_weights *w, sp_error *err) {
    if (w->matrix_dtype != DTYPE_BF16) {
        sp_fail(err, "the CUDA backend computes with bf16 matrices");
        return NULL;
    }
    eweight *placed = (eweight *)sp_xcalloc((size_t)w->n_slots * ROLE_COUNT, sizeof *placed, "device weight table");
    place_all(b, w, placed, [&](int i, void *dev) {
        size_t index, bytes;
        const eweight *host = engine_weight_entry(w, i, &index, &bytes);
        c_upload(b, dev, host->data, bytes);
    });
    return placed_or_failure(b, placed, w, err);
}

static void c_free_weights(engine_backend *b, eweight *placed, const engine_weights *w) {
    if (!placed) return;
    entry_map e = entries(w);
    for (int i = 0; i < w->ck.n_specs; i++) { /* one device allocation per group, one per other tensor */
        size_t index, bytes;
        engine_weight_entry(w, i, &index, &bytes);
        int part;
        if (placed_group(&e, index, &part) >= 0 && part) continue;
        if (placed[index].data) c_free(b, (void *)placed[index].data);
    }
    entries_free(&e);
    free(placed);
}

/* The range a synthetic tensor's values are drawn from: products that keep unit-variance inputs at unit
 * variance (±√(3/n_in)), norm weights near their identity (zero-centred ones near 0, the gated norm's near 1),
 * decays of real models' range, so that 64 layers of random weights stay finite. */
static void synthetic_range(const tensor_spec *t, float *lo, float *hi) {
    float r = 1.0f;
    *lo = -1.0f, *hi = 1.0f;
    switch (t->kind) {
    case TENSOR_MATRIX: r = sqrtf(3.0f / (float)t->shape[1]), *lo = -r, *hi = r; break;
    case TENSOR_EMBEDDING: break;
    case TENSOR_NORM: *lo = -0.05f, *hi = 0.05f; break;
    case TENSOR_NORM_PLAIN: *lo = 0.9f, *hi = 1.1f; break;
    case TENSOR_CONV: r = sqrtf(3.0f / (float)t->shape[2]), *lo = -r, *hi = r; break;
    case TENSOR_A_LOG: *lo = 0.0f, *hi = 2.7f; break; /* A in [1, 15] */
    case TENSOR_DT_BIAS: break;
    }
}

static eweight *c_synthesize_weights(engine_backend *b, const engine_weights *w, uint64_t seed, sp_error *err) {
    eweight *placed = (eweight *)sp_xcalloc((size_t)w->n_slots * ROLE_COUNT, sizeof *placed, "device weight table");
    place_all(b, w, placed, [&](int i, void *dev) {
        size_t index, bytes;
        const eweight *shape = engine_weight_entry(w, i, &index, &bytes);
        float lo, hi;
        synthetic_range(&w->ck.specs[i], &lo, &hi);
        const uint64_t stream = seed * 0x100000001b3ull + (uint64_t)i;
        if (shape->dtype == DTYPE_BF16)
            check(b, kn_fill_bf16((uint16_t *)dev, bytes / 2, lo, hi, stream, impl(b)->stream), "fill");
        else
            check(b, kn_fill_f32((float *)dev, bytes / 4, lo, hi, stream, impl(b)->stream), "fill");
    });
    return placed_or_failure(b, placed, w, err);
}

/* ---- products and elementwise ops ------------------------------------------------------ */

static void c_matmul(engine_backend *b, float *y, const eweight *W, const float *x, int m, int n, int k) {
    /* kn_matvec's dispatch pairs an m = 1 and an m > 1 version of one numerics class per shape (kn_matvec.h):
     * a row of a verify pass is bit for bit the decode step's product of that position, so both pick the same
     * greedy token (test_engine_cuda.c's canaries) */
    for (int r = 0; r < m; r += KN_MATVEC_MAX_M) { /* the batch kernels take up to 16 rows per weight read */
        const int rows = m - r < KN_MATVEC_MAX_M ? m - r : KN_MATVEC_MAX_M;
        check(b,
              kn_matvec(y + (size_t)r * n, (const uint16_t *)W->data, x + (size_t)r * k, rows, n, k, impl(b)->stream),
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
        check(b, kn_matvec_group(&out, (const uint16_t *)parts[0].W->data, x + (size_t)r * k, rows, k, impl(b)->stream),
              "matvec_group");
    }
}

static void c_embed(engine_backend *b, float *x, const eweight *E, const int *tokens, int m, int D) {
    cuda_impl *c = impl(b);
    int *d_tokens = scratch(b, &c->tokens, &c->tokens_cap, (size_t)m, "token ids");
    pass_stage *st = &c->stages[c->stage];
    if (c->tokens_staged) drain(b); /* a second embed of one pass: the first's copy from the stage has run */
    int *staged = pinned(b, &st->tokens, &st->tokens_cap, (size_t)m, "token ids");
    memcpy(staged, tokens, (size_t)m * sizeof(int));
    check(b, cudaMemcpyAsync(d_tokens, staged, (size_t)m * sizeof(int), cudaMemcpyHostToDevice, c->stream),
          "a copy of the token ids to the device");
    c->tokens_staged = 1;
    st->staged_at = c->syncs;
    check(b, kn_embed_bf16(x, (const uint16_t *)E->data, d_tokens, m, D, c->stream), "embed");
}

static void c_rmsnorm(engine_backend *b, float *y, const float *x, const float *w, int rows, int n, float eps) {
    check(b, graph_mark(&impl(b)->graphs, impl(b)->stream), "a pass's CUDA graph"); /* a layer's start: a cut */
    check(b, impl(b)->rmsnorm(y, x, w, rows, n, eps, impl(b)->stream), "rmsnorm");
}

static void c_add(engine_backend *b, float *x, const float *y, size_t n) {
    check(b, kn_add(x, y, (long)n, impl(b)->stream), "add");
}

static void c_swiglu(engine_backend *b, float *g, const float *u, size_t n) {
    check(b, impl(b)->swiglu(g, g, u, (long)n, impl(b)->stream), "swiglu");
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
    flush(b); /* a pass still unlaunched goes first */
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
    if (st->used && st->staged_at == c->syncs) drain(b); /* its last copies may still be queued */
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
    check(b, graph_begin(&c->graphs, c->stream, m, p->n_seqs, p->kv), "a pass's capture");
    c->tokens_staged = 0;
    check(b, cudaMemcpyAsync(c->table, host, ints * sizeof(int), cudaMemcpyHostToDevice, c->stream),
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
 * attention's scratch, room for every sequence of the pass. */
static void attention_seq(engine_backend *b, const cuda_seq *s, int la, const epass *p, const attention_args *a,
                          float *q, float *work) {
    cuda_impl *c = impl(b);
    const model_config *cfg = b->cfg;
    const int H = cfg->num_heads, Hkv = cfg->num_kv_heads, Dh = cfg->head_dim, f = s->first;
    const int *table = c->table + s->tables + (size_t)la * s->n_blocks;
    uint16_t *Kc = (uint16_t *)p->kv->keys, *Vc = (uint16_t *)p->kv->values;
    float *qs = q + (size_t)f * H * Dh;
    const float *qg = a->qg + (size_t)f * 2 * H * Dh;
    check(b,
          c->rope_kv(qs, Kc, Vc, table, qg, a->k + (size_t)f * Hkv * Dh, a->v + (size_t)f * Hkv * Dh, a->q_norm,
                     a->k_norm, c->pos + f, c->slot + f, s->n, H, Hkv, Dh, cfg->rotary_dim, cfg->rope_theta,
                     cfg->rms_norm_eps, c->stream),
          "rope_kv");
    check(b,
          c->attention(a->out + (size_t)f * H * Dh, qs, qg, Kc, Vc, table, s->base, s->n, c->mask + f, H, Hkv, Dh,
                       1.0f / sqrtf((float)Dh), work, c->att_work_cap, c->stream),
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
    check(b,
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
    check(b,
          c->delta(a->out + (size_t)f * Hv * Dv, a->rec_slots, c->state_slot + f, a->slot_stride, a->rec_from[f],
                   q + (size_t)f * Hk * Dk, k + (size_t)f * Hk * Dk, v + (size_t)f * Hv * Dv, a->a + (size_t)f * Hv,
                   a->b + (size_t)f * Hv, a->A_log, a->dt_bias, c->parent + f, s->n, Hk, Hv, Dk, Dv, c->stream),
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
    check(b, kn_copy_rows(q, Hk * Dk, a->mixed, C, Hk * Dk, m, c->stream), "copy_rows");
    check(b, kn_copy_rows(k, Hk * Dk, a->mixed + Hk * Dk, C, Hk * Dk, m, c->stream), "copy_rows");
    check(b, kn_copy_rows(v, Hv * Dv, a->mixed + 2 * Hk * Dk, C, Hv * Dv, m, c->stream), "copy_rows");
    for (int s = 0; s < c->n_seqs; s++) delta_seq(b, &c->seqs[s], a, q, k, v);
    check(b, c->gatednorm(a->out, a->out, a->norm_w, a->z, m * Hv, Dv, cfg->rms_norm_eps, c->stream), "gatednorm");
}

/* ---- the processed distributions ------------------------------------------------------- */

static void c_probs(engine_backend *b, float *out, const float *logits, int m, int V, const sampler_params *sp) {
    cuda_impl *c = impl(b);
    flush(b);
    float *probs = scratch(b, &c->probs, &c->probs_cap, (size_t)m * V, "processed distributions");
    const size_t work_doubles = kn_probs_work_doubles(m, V);
    double *work = scratch(b, &c->probs_work, &c->probs_work_cap, work_doubles, "probs scratch");
    check(b, kn_probs(probs, logits, m, V, *sp, work, c->probs_work_cap, c->stream), "probs");
    c_download(b, out, probs, (size_t)m * V * sizeof(float));
}

/* ---- acceptance where the distributions are ------------------------------------------ */

/* The distributions of the tree's n rows (kn_probs), then the walk over its drafts: kn_accept_chain's on a chain,
 * kn_accept_tree's on a tree (its parents: the pass's, c_begin_pass); the result's download is the round's only
 * wait. */
static void c_accept(engine_backend *b, int *result, const float *logits, const float *q, const int *token, int n,
                     int V, int without_replacement, const sampler_params *sp, uint64_t seed, uint64_t round,
                     int base_position) {
    cuda_impl *c = impl(b);
    flush(b);
    float *probs = scratch(b, &c->probs, &c->probs_cap, (size_t)n * V, "processed distributions");
    const size_t work_doubles = kn_probs_work_doubles(n, V);
    double *work = scratch(b, &c->probs_work, &c->probs_work_cap, work_doubles, "probs scratch");
    int *d_result = scratch(b, &c->result, &c->result_cap, (size_t)3 + KN_TREE_MAX, "acceptance result");
    check(b, kn_probs(probs, logits, n, V, *sp, work, c->probs_work_cap, c->stream), "probs");
    /* the pass's parents, as c_begin_pass uploaded them: a pass of this one tree (verify_accept's pass is one job's,
     * engine_target.c), so its sequence-relative parents are the tree's */
    if (c->n_seqs != 1 && !c->failure[0])
        snprintf(c->failure, sizeof c->failure, "cuda engine: acceptance after a pass over %d sequences", c->n_seqs);
    const int *parent = c->host_parent;
    int chain = 1;
    for (int i = 1; i < n && chain; i++) chain = parent[i] == i - 1;
    if (chain) {
        check(b, kn_accept_chain(d_result, probs, q, token + 1, n - 1, V, seed, round, base_position, c->stream),
              "accept_chain");
        c_download(b, result, d_result, 3 * sizeof(int));
        for (int i = 1; result[0] > 0 && i <= result[0]; i++) result[2 + i] = i; /* a chain's path: its nodes */
        return;
    }
    float *residual = scratch(b, &c->accept_work, &c->accept_work_cap, (size_t)2 * V, "acceptance scratch");
    check(b,
          kn_accept_tree(d_result, probs, q, token, c->parent, n, V, without_replacement, seed, round, base_position,
                         residual, c->stream),
          "accept_tree");
    c_download(b, result, d_result, ((size_t)3 + n) * sizeof(int));
}

/* ---- status and set-up ---------------------------------------------------------------- */

static int c_status(engine_backend *b, sp_error *err) {
    cuda_impl *c = impl(b);
    const int queued = c->queued; /* read first: flush's check marks work queued even when no graph was open */
    flush(b);
    check(b, kn_dev_sync(), "a kernel");
    b->waits += queued; /* a sync with nothing queued returns at once */
    c->queued = 0;
    c->syncs++;
    if (!c->failure[0]) return 0;
    sp_fail(err, "%s", c->failure);
    c->failure[0] = 0;
    return -1;
}

static void c_release(engine_backend *b) {
    cuda_impl *c = impl(b);
    flush(b);
    kn_dev_sync();
    graph_cache_free(&c->graphs);
    void *bufs[] = {c->tokens, c->table, c->q_rot,      c->att_work, c->dq,         c->dk,
                    c->dv,     c->probs, c->probs_work, c->result,   c->accept_work};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) kn_dev_free(bufs[i]);
    cuda_mtp_release(b);
    for (int i = 0; i < PASS_STAGES; i++) {
        if (c->stages[i].table) cudaFreeHost(c->stages[i].table);
        if (c->stages[i].tokens) cudaFreeHost(c->stages[i].tokens);
    }
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c->seqs);
    free(c);
    b->impl = NULL;
}

/* The shapes the kernels take (their contracts in kn_*.h), or why not. */
static int shapes_ok(const model_config *c, sp_error *err) {
    const char *why = NULL;
    char buf[160];
    if (c->head_dim % 32 || c->head_dim > 1024)
        snprintf(buf, sizeof buf, "head_dim a multiple of 32 up to 1024 (this model's is %d)", c->head_dim), why = buf;
    else if (c->rotary_dim % 2)
        snprintf(buf, sizeof buf, "an even number of rotary dimensions (this model rotates %d)", c->rotary_dim),
            why = buf;
    else if (c->num_heads % c->num_kv_heads)
        snprintf(buf, sizeof buf, "query heads a multiple of the KV heads (%d, %d)", c->num_heads, c->num_kv_heads),
            why = buf;
    else if (c->conv_kernel > KN_CONV_MAX_K)
        snprintf(buf, sizeof buf, "a convolution of at most %d taps (this model's has %d)", KN_CONV_MAX_K,
                 c->conv_kernel),
            why = buf;
    else if (c->lin_k_dim > 1024 || c->lin_v_dim > 1024)
        snprintf(buf, sizeof buf, "DeltaNet heads of at most 1024 dimensions"), why = buf;
    return why ? sp_fail(err, "cuda engine: the CUDA kernels need %s", why) : 0;
}

/* The newest version of a family: its last entry. */
template <class V> static const V *newest(const V *(*list)(int *)) {
    int n = 0;
    const V *versions = list(&n);
    return &versions[n - 1];
}

int backend_cuda_build(engine_backend *b, const model_config *cfg, sp_error *err) {
    memset(b, 0, sizeof *b);
    if (shapes_ok(cfg, err)) return -1;
    cuda_impl *c = (cuda_impl *)sp_xcalloc(1, sizeof *c, "cuda backend");
    cudaError_t e = kn_dev_open(c->device, sizeof c->device);
    if (e != cudaSuccess) {
        free(c);
        return sp_fail(err, "--backend cuda: no usable CUDA device (%s)", cudaGetErrorString(e));
    }
    /* a stream of its own: the legacy stream cannot be captured; a blocking one, so that the synchronous copies
     * (on the legacy stream) stay ordered with the pass's launches as before */
    if ((e = cudaStreamCreate(&c->stream)) != cudaSuccess) {
        free(c);
        return sp_fail(err, "--backend cuda: cannot create a stream (%s)", cudaGetErrorString(e));
    }
    graph_cache_init(&c->graphs);
    c->rmsnorm = newest(kn_rmsnorm_versions)->fn;
    c->gatednorm = newest(kn_gatednorm_versions)->fn;
    c->swiglu = newest(kn_swiglu_versions)->fn;
    c->rope_kv = newest(kn_rope_kv_versions)->fn;
    c->attention = newest(kn_attention_versions)->fn;
    c->conv = newest(kn_conv_versions)->fn;
    c->delta = newest(kn_delta_versions)->fn;
    b->name = "cuda";
    b->device = c->device;
    b->threads = 1;
    b->kv_bf16 = 1;
    b->max_tree_nodes = KN_TREE_MAX;
    b->multi_seq = 1; /* the attention and DeltaNet kernels run once per sequence of a pass (c_begin_pass) */
    b->cfg = cfg;
    b->impl = c;
    b->alloc = c_alloc;
    b->free = c_free;
    b->upload = c_upload;
    b->download = c_download;
    b->copy = c_copy;
    b->zero = c_zero;
    b->place_weights = c_place_weights;
    b->free_weights = c_free_weights;
    b->synthesize_weights = c_synthesize_weights;
    b->begin_pass = c_begin_pass;
    b->matmul = c_matmul;
    b->matmul_group = c_matmul_group;
    b->embed = c_embed;
    b->rmsnorm = c_rmsnorm;
    b->add = c_add;
    b->swiglu = c_swiglu;
    b->attention = c_attention;
    b->deltanet = c_deltanet;
    b->probs = c_probs;
    b->accept = c_accept;
    b->status = c_status;
    b->release = c_release;
    cuda_mtp_install(b);
    return 0;
}

/* b is a CUDA backend (a test may have wrapped some of its ops, never its release). */
static int is_cuda(const engine_backend *b) { return b->impl && b->release == c_release; }

int backend_cuda_graphs(engine_backend *b, int mode) {
    if (!is_cuda(b) || (mode != CUDA_GRAPHS_OFF && mode != CUDA_GRAPHS_ON && mode != CUDA_GRAPHS_STALE)) return -1;
    flush(b);
    cuda_impl *c = impl(b);
    const int old = c->graphs.mode;
    c->graphs.mode = mode;
    return old;
}

int backend_cuda_graph_segments(engine_backend *b, int norms) {
    if (!is_cuda(b) || norms < 1) return -1;
    flush(b);
    cuda_impl *c = impl(b);
    const int old = c->graphs.marks_per_segment;
    c->graphs.marks_per_segment = norms;
    return old;
}

cuda_graph_stats backend_cuda_graph_stats(const engine_backend *b) {
    if (!is_cuda(b)) return cuda_graph_stats{0, 0, 0, 0, 0};
    return ((const cuda_impl *)b->impl)->graphs.stats;
}

/* ---- for the other files of the backend (cuda_backend.h) ----------------------------- */

cudaStream_t cuda_stream(engine_backend *b) { return impl(b)->stream; }
void cuda_check(engine_backend *b, cudaError_t e, const char *what) { check(b, e, what); }
void cuda_flush(engine_backend *b) { flush(b); }
void *cuda_scratch(engine_backend *b, void **p, size_t *cap, size_t bytes, const char *what) {
    return scratch(b, (unsigned char **)p, cap, bytes, what);
}
cuda_mtp **cuda_mtp_of(engine_backend *b) { return &impl(b)->mtp; }

int backend_cuda_on_device(void) {
#ifdef KN_EMU
    return 0; /* the emulator is the slowest backend there is */
#else
    char name[160];
    return kn_dev_open(name, sizeof name) == cudaSuccess;
#endif
}
