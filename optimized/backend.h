/* backend.h — what a pass computes with: a struct of function pointers, filled by the CPU backend (backend_cpu.c)
 * and the CUDA backend (cuda/backend_cuda.cu). The host code decides what is computed and where it is kept, and
 * never reads backend memory itself, so it drives host and device memory alike. Activations are float32. */
#ifndef SPECULA_BACKEND_H
#define SPECULA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "engine_weights.h"
#include "error.h"
#include "sampler.h"

/* The limits of one pass. */
#define ENGINE_MAX_TREE_NODES 256 /* nodes of a tree: Medusa's largest tree and its root */
#define ENGINE_MAX_BATCH 16       /* sequences of a pass on a backend with multi_seq (more jobs: more passes) */
#define ENGINE_PREFILL_CHUNK 64   /* positions of a prefill pass */

/* The paged KV cache (kv_cache.h, above this file: it keeps its pool in backend memory). */
typedef struct kv_cache kv_cache;
typedef struct kv_table kv_table;

/* One sequence's share of a pass: its nodes are [first, first + n) of the pass, after its `base` committed
 * positions, whose keys and values its table lists. */
typedef struct {
    const kv_table *table; /* reserved up to base + n */
    int base, first, n;
} epass_seq;

/* Where a pass reads and writes. A pass holds the nodes of one or more sequences (several only on a backend with
 * multi_seq), each sequence's nodes consecutive. Node i takes its token after its parent (parent[i] < i, a node
 * of the same sequence; −1 for the sequence's first node, which follows the sequence's committed positions) at
 * position base + depth[i], and keeps its keys and values at cache position base + (i − first) of its own
 * sequence (a chain's nodes are already where they belong; a commit moves an accepted tree node's to
 * base + depth). Every node sees its own sequence's committed positions and its own ancestors, nothing else. */
typedef struct epass {
    const kv_cache *kv;
    const epass_seq *seqs;     /* [n_seqs] */
    const int *seq_of;         /* [m] node i's sequence: an index into seqs */
    const int *parent, *depth; /* [m] */
    int m, n_seqs;
    /* [m] host memory: node i's DeltaNet slot (the in-place nodes': their sequence's; −1: a logged node) */
    const int *state_slot;
} epass;

static inline const epass_seq *epass_seq_of(const epass *p, int i) { return &p->seqs[p->seq_of[i]]; }
/* Node i's cache position in its sequence's table. */
static inline int epass_slot(const epass *p, int i) {
    const epass_seq *q = epass_seq_of(p, i);
    return q->base + i - q->first;
}

/* The tensors of one attention layer's core, all backend memory. */
typedef struct {
    float *qg;                    /* [m, H, 2·Dh]: per head Dh query values then Dh gate values (q_proj's output) */
    float *k, *v;                 /* [m, Hkv·Dh] */
    const float *q_norm, *k_norm; /* [Dh] */
    float *out;                   /* [m, H·Dh] the gated attention output */
} attention_args;

/* The tensors of one Gated DeltaNet layer's core, all backend memory. */
typedef struct {
    const float *qkv;                      /* [m, C] in_proj_qkv's output, C = 2·Hk·Dk + Hv·Dv */
    const float *z;                        /* [m, Hv·Dv] the output gate */
    const float *a, *b;                    /* [m, Hv] each */
    const float *conv_w;                   /* [C, K] */
    const float *A_log, *dt_bias, *norm_w; /* [Hv], [Hv], [Dv] */
    float *mixed;                          /* [m, C] scratch: the convolution's output */
    float *out;                            /* [m, Hv·Dv] */
    /* Node i's state in this layer (conv [C, K−1] and recurrent [Hv, Dk, Dv], backend memory), and the state it
     * starts from: its parent's after the parent's step, or for node 0 the committed state. In-place nodes share
     * one. On a backend that replays (deltanet_replay), the tree's other nodes keep no state: conv_state[i] and
     * rec_state[i] are NULL, the pass holds the state in its own scratch while children need it, and log[i]
     * (else NULL) receives the step (deltanet_log_floats). conv_from[i] and rec_from[i] are NULL where the
     * parent is such a node. */
    float *const *conv_state, *const *rec_state;     /* [m] */
    const float *const *conv_from, *const *rec_from; /* [m] */
    float *const *log;                               /* [m] */
    /* The same states as a slot table, for a backend that addresses them on the device: node i's are slot
     * epass.state_slot[i]'s, at conv_slots and rec_slots (this layer's states in slot 0) + slot · slot_stride. */
    float *conv_slots, *rec_slots;
    size_t slot_stride; /* floats */
} deltanet_args;

/* One logged DeltaNet step (one node, one layer), all a replay needs to redo its state update: the conv's input
 * [C], then for each value head the decay exp(g), the normalised key [Dk] and the write u [Dv] (the state
 * becomes decay·S + k uᵀ). About Hv·(Dk + Dv) floats against the Hv·Dk·Dv of a state. */
static inline size_t deltanet_log_floats(const model_config *c) {
    return (size_t)config_conv_dim(c) + (size_t)c->lin_v_heads * (1 + c->lin_k_dim + c->lin_v_dim);
}

/* One part of a grouped product (matmul_group): y[m, n] = x · W[n, k]ᵀ, y backend memory. */
typedef struct {
    float *y;         /* [m, n] */
    const eweight *W; /* [n, k] as placed */
    int n;
} ematmul_part;

typedef struct engine_backend engine_backend;
struct engine_backend {
    const char *name;   /* "cpu", "cuda" */
    const char *device; /* what it runs on, in words */
    int threads;        /* ≥ 1 (the CPU's products) */
    int in_order;       /* 1: every sum in the reference's order (the exact cross-test mode) */
    int kv_bf16;        /* the KV cache's element: 1 bf16, 0 float32 */
    int host_memory;    /* 1: backend memory is host memory (results may be written straight into the caller's) */
    int max_tree_nodes;
    int multi_seq; /* 1: a pass may hold several sequences' nodes (epass); 0: one sequence a pass */
    const model_config *cfg;
    void *impl;

    /* Backend memory. alloc returns zeroed memory and exits with a message when there is none, as sp_xcalloc. */
    void *(*alloc)(engine_backend *b, size_t bytes, const char *what);
    void (*free)(engine_backend *b, void *p);
    void (*upload)(engine_backend *b, void *dst, const void *src, size_t bytes);
    void (*download)(engine_backend *b, void *dst, const void *src, size_t bytes);
    void (*copy)(engine_backend *b, void *dst, const void *src, size_t bytes);
    void (*zero)(engine_backend *b, void *p, size_t bytes);

    /* The weight table the ops read ([n_slots · ROLE_COUNT], indexed as engine_weights'): the CPU reads the
     * loader's in place; a GPU gets device copies. NULL with a message when this backend cannot hold them. */
    eweight *(*place_weights)(engine_backend *b, const engine_weights *w, sp_error *err);
    void (*free_weights)(engine_backend *b, eweight *placed, const engine_weights *w);
    /* The weight table of engine_weights_synthetic's layout filled with random values on the backend, scaled
     * so that a deep stack stays finite (NULL where a backend has no use for it: the CPU's). */
    eweight *(*synthesize_weights)(engine_backend *b, const engine_weights *w, uint64_t seed, sp_error *err);

    /* Before a pass's layers: what every layer of it shares (the CUDA backend uploads the nodes' positions,
     * cache slots, tree masks and the block tables once here, not once per layer). */
    void (*begin_pass)(engine_backend *b, const epass *p);
    /* y[m, n] = x[m, k] · W[n, k]ᵀ: one read of W serves the m rows, and row i of y does not depend on m (a
     * verify pass and a decode step agree). */
    void (*matmul)(engine_backend *b, float *y, const eweight *W, const float *x, int m, int n, int k);
    /* The products of one x with a group of weights (engine_weight_groups: the projections a layer takes from
     * the same rows): y_j[m, n_j] = x[m, k] · W_j[n_j, k]ᵀ for j < n_parts (≤ ENGINE_GROUP_MAX_PARTS), as ONE
     * product over the parts' rows together — one thread team on the CPU (each W_j read where the loader put
     * it), one launch on a GPU (the group's weights placed back to back). Row r of y_j is row off_j + r of the
     * one matmul of the stacked weight [W_0; W_1; …] (on the CPU, whose rows depend on k alone, bit for bit
     * matmul(y_j, W_j)), and does not depend on m. */
    void (*matmul_group)(engine_backend *b, const ematmul_part *parts, int n_parts, const float *x, int m, int k);
    /* x[m, D] = rows tokens[0..m) (host memory) of the embedding E[V, D], as float32. */
    void (*embed)(engine_backend *b, float *x, const eweight *E, const int *tokens, int m, int D);
    void (*rmsnorm)(engine_backend *b, float *y, const float *x, const float *w, int rows, int n, float eps);
    void (*add)(engine_backend *b, float *x, const float *y, size_t n);    /* x += y */
    void (*swiglu)(engine_backend *b, float *g, const float *u, size_t n); /* g = silu(g) · u */
    /* An attention layer's core for the pass's nodes: q and k normed and rotated, every node's key and value
     * into the cache at base + i, each node attending to the committed positions and its ancestors, gated. */
    void (*attention)(engine_backend *b, const epass *p, int la, const attention_args *a);
    /* A DeltaNet layer's core: the causal convolution and the gated delta step of every node from its parent's
     * state into its own, and the gated norm of the output. */
    void (*deltanet)(engine_backend *b, const epass *p, const deltanet_args *a);
    /* Redo n logged steps (root side first) on one layer's committed state in place, with the same float
     * operations as the steps, so the state is bit for bit the one the pass computed. A backend that has this
     * writes no state for a tree's nodes during a pass; the commit replays the accepted path. NULL: every node's
     * state goes to a slot of its own. */
    void (*deltanet_replay)(engine_backend *b, float *conv_state, float *rec_state, const float *const *steps, int n);

    /* out[m, V] (host memory) = the processed distributions (sampler_probs) of the m rows of logits (backend
     * memory): on a GPU computed there, so only the distributions cross to the host. */
    void (*probs)(engine_backend *b, float *out, const float *logits, int m, int V, const sampler_params *sp);

    /* The exact rule of accept_exact (accept.h) on the tree of the pass just run (its parents as begin_pass had
     * them), computed where the logits are: the processed distributions of its n rows of logits (backend
     * memory), then the walk over its drafts — token[n] (node 0's unread), drawn i.i.d. or without replacement
     * from their parents' rows of q[n, V] (both backend memory, uploaded before the pass so that nothing waits
     * on the upload; the rows of nodes without children are never read) — at accept_exact's rng sites. result (host
     * memory, [3 + n]) = {accepted drafts, next token, 1 for a bonus, the accepted nodes below the root in path order};
     * accepted is −1 when a draft the walk reaches has q = 0. On a GPU the download of result is the round's one wait
     * on the device. NULL where the distributions are in host memory anyway (the CPU's): the engine runs accept_exact.
     */
    void (*accept)(engine_backend *b, int *result, const float *logits, const float *q, const int *token, int n, int V,
                   int without_replacement, const sampler_params *sp, uint64_t seed, uint64_t round, int base_position);

    /* ---- an MTP chain drafted where the logits are (optional: NULL on the CPU, whose drafts the proposer draws
     * from host memory). Nothing here waits but accept_drawn's one download. ---- */
    /* x[m, D] = rows tokens[0..m) (backend memory: drawn there) of the embedding E[V, D], as float32. */
    void (*embed_drawn)(engine_backend *b, float *x, const eweight *E, const int *tokens, int m, int D);
    /* One draft: q[V] = the processed distribution (sampler_probs under sp) of logits[V], and drawn[0] = the draw
     * from q at {seed, RNG_DRAFT, index} (sampler_sample's race: on a one-hot q, its token; −1 when q is all
     * zero), token[0] = the same draw, or 0 for −1 (what the next step may embed). All backend memory. */
    void (*draft)(engine_backend *b, int *token, int *drawn, float *q, const float *logits, int V,
                  const sampler_params *sp, uint64_t seed, uint64_t index);
    /* accept on a chain of n nodes (token[1..n): the drafts), its result in record[0..3) (backend memory), then
     * record[0..n_record) — the result and what the round's drafts wrote after it — downloaded to out (host
     * memory): the round's one wait. */
    void (*accept_drawn)(engine_backend *b, int *out, int *record, int n_record, const float *logits, const float *q,
                         const int *token, int n, int V, const sampler_params *sp, uint64_t seed, uint64_t round,
                         int base_position);
    /* Waits on the device so far (a GPU's: downloads, and syncs with work queued since the last wait): the tests
     * count them per round. 0 on the CPU. */
    long waits;
    /* Host stalls that bring no result back (a GPU's: the stream drained before a pinned buffer is rewritten, a
     * synchronous copy to the device behind queued work), counted apart: what is left between a round's launches
     * and its one wait. 0 on the CPU. */
    long stalls;

    /* body(ctx) with the backend's threads held throughout, so the ops it calls start no thread team of their
     * own (the CPU's: cpu/team.h; on a small model each op takes microseconds). NULL: the engine calls body
     * itself. */
    void (*hold)(engine_backend *b, void (*body)(void *), void *ctx);

    /* 0, or −1 with the first failure (a kernel that did not run) since the last call. */
    int (*status)(engine_backend *b, sp_error *err);
    void (*release)(engine_backend *b);
};

/* body(ctx) under b's hold where it has one, else as it is. */
static inline void backend_hold(engine_backend *b, void (*body)(void *), void *ctx) {
    if (b->hold)
        b->hold(b, body, ctx);
    else
        body(ctx);
}

void backend_cpu_build(engine_backend *b, const model_config *cfg, int threads, int in_order);

/* The CUDA backend on the first CUDA device (or, in a build for the emulator, on the kernels' CPU emulator);
 * fails with a message in a build without it or on a machine without a device. */
int backend_cuda_build(engine_backend *b, const model_config *cfg, sp_error *err);
/* How the CUDA backend issues a pass's launches (optimized/cuda/graph_cache.h): one by one as the host calls the
 * ops, or captured into a CUDA graph per pass shape — the decode step, each verify size — updated to every
 * pass's arguments and launched as one. STALE is a planted bug for the tests: a shape's graph is never updated
 * after its first capture, so it replays the first step's context length. */
enum { CUDA_GRAPHS_OFF = 0, CUDA_GRAPHS_ON = 1, CUDA_GRAPHS_STALE = 2 };
typedef struct {
    long passes;       /* passes captured (a shape's first pass is launched op by op: not counted) */
    long segments;     /* ... in so many graphs (a long pass is captured and launched in segments) */
    long instantiated; /* executable graphs made (a new shape, or an update refused) */
    long updated;      /* ... updated to a new capture's arguments instead */
    long launched;     /* graph launches */
} cuda_graph_stats;
/* Sets the mode of a CUDA backend (graphs are on from backend_cuda_build); returns the previous mode, or −1 (b
 * is not a CUDA backend, or mode is none of the three). */
int backend_cuda_graphs(engine_backend *b, int mode);
/* The debug mode (kn_launch.h): graphs off, every launch waited for, and a failure names the first kernel that
 * failed, its grid, block and shared memory. Slow; for finding a fault. 0, or −1 when b is not a CUDA backend. */
int backend_cuda_debug(engine_backend *b);
/* A pass's graph is cut after every `norms` RMSNorms (16 from backend_cuda_build: 8 layers), each segment
 * launched while the host captures the next; returns the previous count, or −1 (not a CUDA backend, norms < 1). */
int backend_cuda_graph_segments(engine_backend *b, int norms);
cuda_graph_stats backend_cuda_graph_stats(const engine_backend *b); /* zeros when b is not a CUDA backend */
/* 1 when this build's CUDA backend runs on a device that is present (the fastest backend then), else 0 (no
 * backend, the emulator, no device). */
int backend_cuda_on_device(void);

#endif
