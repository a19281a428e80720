/* medusa.h — Medusa heads as a proposer: each head reads the target's final-normed hidden state of the position
 * before the root and guesses one token further ahead. The candidates form a tree of rank paths, verified in one
 * pass. Float32, readable first. */
#ifndef SPECULA_MEDUSA_H
#define SPECULA_MEDUSA_H

#include "config.h"
#include "decode.h"
#include "dtype.h"
#include "proposer.h"
#include "safetensors.h"
#include "target.h"

#define MEDUSA_MAX_HEADS 16
#define MEDUSA_MAX_LAYERS 8
/* Tree nodes excluding the root. 255 keeps every node's index inside the
 * 8-bit slot of accept_draw_index, so each drafted token has its own site. */
#define MEDUSA_MAX_NODES 255

/* ---- heads ------------------------------------------------------------------ */

typedef struct {
    float *w; /* [D, D]  linear.weight, stored [out, in] */
    float *b; /* [D]     linear.bias */
} medusa_resblock;

typedef struct {
    int n_heads;  /* heads; head i proposes depth i + 1 */
    int n_layers; /* ResBlocks per head (the same for every head) */
    int D, V;
    int own_proj;            /* 1: each head has its own projection; 0: all use the target's lm_head */
    medusa_resblock *blocks; /* [n_heads · n_layers]  block j of head i at i · n_layers + j */
    const float **proj;      /* [n_heads] → [V, D]  own rows in the arena, or the target's lm_head */
    float *arena;            /* every float the heads own, one allocation */
    size_t arena_floats;
    int storage_bytes;    /* bytes per parameter in the file (4 for f32, 2 for bf16/f16) */
    char base_sha256[65]; /* the base checkpoint these heads belong to (lower-case hex) */
    char path[4096];
} medusa_heads;

/* Zero heads (ResBlocks are then the identity). own_proj = 1 gives every
 * head its own zeroed [V, D] projection; 0 leaves proj[] NULL until
 * medusa_share_lm_head. Fails on out-of-range counts. */
int medusa_build(medusa_heads *h, int n_heads, int n_layers, int D, int V, int own_proj, sp_error *err);
/* Points every head's projection at lm_head[V, D] (not owned). Only for
 * heads built without their own projection. */
void medusa_share_lm_head(medusa_heads *h, const float *lm_head);
void medusa_free(medusa_heads *h);

/* The base checkpoint's identity: SHA-256 over the bytes of its safetensors
 * files concatenated in the order st_open lists them — model.safetensors
 * alone, or the shards the index names sorted by file name (byte order), so
 * `cat model-*.safetensors | sha256sum` in the C locale gives the same
 * digest. config.json and the tokenizer are not part of it. hex[65]. */
int medusa_base_sha256(const char *model_dir, char *hex, sp_error *err);

/* The checkpoint heads are loaded for: its directory (whose digest the heads
 * must carry), its dimensions and, for heads that share it, its lm_head. */
typedef struct {
    const char *path;
    int D, V;
    const float *lm_head; /* [V, D] float32, or NULL: shared projections stay unattached (medusa_share_lm_head) */
} medusa_base;

/* Reads a heads file: tensors medusa_head.{i}.{j}.linear.weight [D, D] and
 * .bias [D] for j < n_layers, then medusa_head.{i}.{n_layers}.weight [V, D]
 * when the head has its own projection (absent for all heads: the target's
 * lm_head is shared). "__metadata__" must hold base_sha256 and
 * medusa_num_heads (medusa_num_layers is checked when present). Refuses, with
 * both digests in the message, heads trained against another base unless
 * ignore_base (for random test heads only; the check reads every byte of
 * the base's safetensors). Every missing tensor, wrong
 * shape, non-finite value or inconsistent head is an error naming it. */
int medusa_load(medusa_heads *h, const char *path, const medusa_base *base, int ignore_base, sp_error *err);
/* The same checks on a set already open (st_open, or st_open_buffer for
 * bytes in memory: the fuzzer); `path` names it in messages. The set stays
 * the caller's. */
int medusa_load_set(medusa_heads *h, const st_set *st, const char *path, const medusa_base *base, int ignore_base,
                    sp_error *err);

/* Writes the heads to PATH in `dtype`, with "__metadata__" base_sha256,
 * medusa_num_heads, medusa_num_layers, medusa_shared_lm_head and the n_meta
 * extra string pairs. */
int medusa_save(const medusa_heads *h, const char *path, dtype_t dtype, const char *base_sha256,
                const char *const *meta_keys, const char *const *meta_values, int n_meta, sp_error *err);

/* Weight bytes one proposal reads: every head's ResBlocks and projection at
 * the heads' storage dtype; a shared lm_head counts once, at the target's
 * (target_storage_bytes per parameter). */
double medusa_bytes_per_step(const medusa_heads *h, int target_storage_bytes);

/* ResBlock: out[D] = x + SiLU(W x + b). out must not alias x. */
void medusa_resblock_forward(const medusa_resblock *b, const float *x, float *out, int D);

/* Head i on a hidden state h[D]: logits[V]. scratch: [2·D].
 *     r = ResBlock_n(... ResBlock_1(h)),  ResBlock(x) = x + SiLU(W x + b)
 *     logits = P r,   P its own [V, D] projection or the target's lm_head.
 * Head i proposes the tokens at depth i + 1 of the tree (head 0 the root's children). */
void medusa_head_forward(const medusa_heads *h, int i, const float *hidden, float *logits, float *scratch);

/* ---- trees ---------------------------------------------------------------------- */

/* A tree of candidate ranks. Node k (0 ≤ k < n) is the path
 * rank[a_1], …, rank[k] of its ancestors and itself: "the rank-th most likely
 * token of head depth−1 under the parent". Nodes are sorted by depth, then by
 * path (lexicographically), so a parent precedes its children, and siblings
 * are consecutive in rank order. */
typedef struct {
    int n;                         /* nodes, the root excluded */
    int depth[MEDUSA_MAX_NODES];   /* 1 for the root's children */
    int rank[MEDUSA_MAX_NODES];    /* the node's rank under its parent */
    int parent[MEDUSA_MAX_NODES];  /* index of the parent node, −1 for the root */
    int sibling[MEDUSA_MAX_NODES]; /* its place among its parent's children, 0-based, in rank order */
    int max_depth;
    int max_rank; /* largest rank anywhere */
} medusa_tree;

/* Parses a JSON list of paths, e.g. [[0], [1], [0, 0], [0, 1]], in any
 * order. Checks: a non-empty array of non-empty arrays of integers ≥ 0, at
 * most MEDUSA_MAX_NODES paths of depth ≤ MEDUSA_MAX_HEADS, no path twice, and
 * every proper prefix of a path is itself a path. `origin` names the source
 * in errors. */
int medusa_tree_parse(medusa_tree *t, const char *json_text, const char *origin, sp_error *err);
int medusa_tree_load(medusa_tree *t, const char *path, sp_error *err);
/* The same checks on paths given as rows: path k is
 * ranks[k · MEDUSA_MAX_HEADS + 0 .. depths[k]). */
int medusa_tree_build(medusa_tree *t, int n, const int *depths, const int *ranks, const char *origin, sp_error *err);

/* Checks the tree against the heads it will run with: depth ≤ n_heads and
 * every rank < V. */
int medusa_tree_validate(const medusa_tree *t, int n_heads, int V, const char *origin, sp_error *err);

/* The built-in tree for n_heads heads (at most 4 are used): 63 nodes chosen
 * as the most probable paths under an assumed table of per-head rank
 * accuracies (see medusa_tree.c for the table and the reasoning). */
void medusa_tree_default(medusa_tree *t, int n_heads);

/* The tree of the n_nodes most probable paths when the correct token at
 * depth d is rank r with probability acc[(d−1)·n_ranks + r], independently
 * across depths: the greedy choice that maximises the expected number of
 * accepted tokens, Σ over nodes of the product of acc along the path. Paths
 * with equal probability are taken in (depth, path) order. n_nodes is capped
 * at MEDUSA_MAX_NODES and at the number of paths with probability > 0. */
void medusa_tree_from_accuracies(medusa_tree *t, const double *acc, int depth, int n_ranks, int n_nodes);

/* Writes the path of node k, root first excluded: ranks[depth[k]]. */
void medusa_tree_path(const medusa_tree *t, int k, int *ranks);
/* The tree as JSON paths into buf[size] (truncated when too small). */
void medusa_tree_format(const medusa_tree *t, char *buf, size_t size);

/* ---- the proposer -------------------------------------------------------------------- */

/* Medusa's proposer, built through the method factory.
 * kind: CHILDREN_TOP_RANKS (greedy and typical rules: the node of rank r is
 * the r-th most likely token of its head), or CHILDREN_IID /
 * CHILDREN_NO_REPLACEMENT (the exact rule: the tree keeps its shape, and a
 * node's m children are m tokens drawn from its head's processed
 * distribution, independently or without replacement). q of a node at depth
 * d is head d's processed distribution under the run's sampler params (as
 * the target's p). The heads and the tree must match the target (D, V,
 * depth ≤ heads, ranks < V). The method factory pairs the kind with its
 * rule (method.h): greedy and typical with top ranks, exact with draws. */
int medusa_proposer_build(proposer *p, const medusa_heads *h, const decode_target *t, const medusa_tree *tree,
                          children_kind kind, sp_error *err);

#endif
