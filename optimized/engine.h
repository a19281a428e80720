/* engine.h — the optimized engine's model: weights kept as the engine
 * computes with them (engine_weights.h), a paged KV cache shared by every
 * sequence (kv_cache.h), DeltaNet state slots, and batched passes over the
 * nodes of a token tree. It reaches the decoding layer through the same
 * interfaces as the reference (engine_target.h), so every method runs on it
 * through the same loop. This is the host code, written once; the compute
 * of a pass goes through engine_backend (backend.h). */
#ifndef SPECULA_ENGINE_H
#define SPECULA_ENGINE_H

#include "backend.h"
#include "config.h"
#include "engine_weights.h"
#include "error.h"
#include "kv_cache.h"

typedef struct {
    int threads;     /* ≥ 1 */
    int f32_weights; /* 1: the exact cross-test mode: matrices in float32, products added in the reference's
                      * order (the reference's floats, bit for bit; slower); 0: bf16, products in lanes */
} engine_options;

engine_options engine_defaults(void); /* 1 thread, bf16 */

/* One sequence: committed positions in the KV cache and a DeltaNet slot,
 * and the last verified tree until it is committed. */
typedef struct {
    int open;
    int pos;                         /* positions committed */
    kv_table kv;                     /* their keys and values */
    int slot;                        /* their DeltaNet state */
    int verified;                    /* nodes of the last verified tree awaiting a commit (0: none) */
    int cap;                         /* capacity of the arrays below */
    int *parent, *depth, *node_slot; /* [cap] of the verified tree; node_slot[0] = slot */
    float *tree_keys, *tree_values;  /* [La, cap, kv_dim] the keys and values of nodes ≥ 1 */
} eseq;

/* Activations of a pass of m rows. */
typedef struct {
    int rows;                     /* capacity */
    float *x, *xn, *out;          /* [rows, D] residual stream, normed, a sublayer's output */
    float *q, *k, *v;             /* [rows, 2·H·Dh], [rows, Hkv·Dh] ×2 — or the DeltaNet's qkv [rows, C] in q */
    float *mixed;                 /* [rows, C] the DeltaNet conv's output */
    float *z, *ab;                /* [rows, Hv·Dv], [rows, 2·Hv] */
    float *att;                   /* [rows, max(H·Dh, Hv·Dv)] */
    float *g, *u;                 /* [rows, F] */
    float *scores;                /* [max keys] */
    const float **keys, **values; /* [max keys] head 0's vectors of the attended positions */
    const float **head_keys, **head_values; /* [max keys] one head's */
    int max_keys;
    float *mtp_in; /* [rows, 2·D] */
} eact;

typedef struct engine {
    model_config cfg;
    engine_weights w;
    engine_options opt;
    engine_backend be;
    char path[4096];
    int La, Ll;         /* attention and DeltaNet layers of the trunk */
    kv_cache kv;        /* the trunk's */
    size_t slot_floats; /* conv [Ll, C, K−1] + recurrent [Ll, Hv, Dk, Dv] */
    float *slots;       /* [n_slots, slot_floats] */
    int *slot_used;     /* [n_slots] */
    int n_slots;
    eseq *seqs;
    int n_seqs;
    eact act;
    double weight_bytes_per_pass;
} engine;

int engine_open(engine *e, const char *dir, const engine_options *o, sp_error *err);
void engine_close(engine *e);

/* ---- sequences and slots (engine_seq.c) ------------------------------------------ */

int engine_seq_open(engine *e);
int engine_seq_fork(engine *e, int src);
void engine_seq_close(engine *e, int seq);
eseq *engine_seq(engine *e, int seq, sp_error *err); /* NULL (with a message) when not open */
int engine_slot_take(engine *e);
void engine_slot_release(engine *e, int slot);
float *engine_slot_conv(engine *e, int slot, int li);      /* [C, K−1] of DeltaNet layer li */
float *engine_slot_recurrent(engine *e, int slot, int li); /* [Hv, Dk, Dv] */
void engine_slot_copy(engine *e, int dst, int src);
void engine_slot_zero(engine *e, int slot);

/* The steps of committing node `node` of a verified tree (engine_target.c),
 * apart so a negative control can recombine them with one slip
 * (reference/verify/planted_engine.c). With the table reserved up to
 * pos + depth[node]: commit_kv puts node `from`'s keys and values (from the
 * tree arrays) at node u's position — from = u on a correct path;
 * keep_state makes node ≥ 1's DeltaNet slot the sequence's; end_tree gives
 * back the slots of the tree's other nodes. */
void engine_seq_commit_kv(engine *e, eseq *s, int u, int from);
void engine_seq_keep_state(engine *e, eseq *s, int node);
void engine_seq_end_tree(engine *e, eseq *s);

/* ---- a pass (engine_forward.c) -------------------------------------------------- */

/* Where a pass reads and writes: the nodes, the KV cache and table that
 * hold the committed positions and the chain consumed in place, the tree
 * arrays that hold every other node's keys and values, the DeltaNet slots. */
typedef struct {
    kv_cache *kv;
    kv_table *table;
    float *tree_keys, *tree_values; /* [La, tree_cap, kv_dim] */
    int tree_cap;
    int slot;             /* the sequence's DeltaNet state: where the in-place chain goes */
    const int *node_slot; /* [m] the slot of every node past the chain */
    const int *parent, *depth;
    int m, n_in_place, base; /* base: positions committed before the pass */
} epass;

/* One decoder layer on the m rows of act.x (trunk layer `layer`, or −1 for
 * the MTP module's layer); type_index: its index among the layers of its type. */
void engine_decoder_layer(engine *e, const epass *p, int layer, layer_type type, int type_index);

/* One pass over m nodes of sequence s: node i takes tokens[i] after its
 * parent (parent[i] < i; −1 for node 0, which follows the committed
 * positions) at position s->pos + depth[i]. The first n_in_place nodes form a
 * chain consumed into the sequence itself (their KV into its blocks, their
 * DeltaNet state into its slot): a prefill, or the root of a tree. Every
 * other node keeps its KV in the sequence's tree arrays and its DeltaNet
 * state in a slot of its own (s->node_slot), so that a commit copies no
 * state. logits [m, V] raw and hidden [m, D] final-normed, when not NULL. */
int engine_forward(engine *e, eseq *s, const int *tokens, const int *parent, const int *depth, int m, int n_in_place,
                   float *logits, float *hidden, sp_error *err);

/* Room for passes of m rows and `keys` attended positions. */
void engine_act_reserve(engine *e, int m, int keys);

#endif
