/* engine.h — the optimized engine: its weights, a paged KV cache shared by all sequences, DeltaNet state slots,
 * and batched passes over the nodes of token trees. This host code is written once; a pass computes through
 * engine_backend (backend.h). */
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
    int cuda;        /* 1: the CUDA backend (bf16 weights and KV); 0: the CPU's */
    int cuda_eager;  /* CUDA backend: 1 launches each op as the host issues it; 0 (default) captures each pass
                      * into a CUDA graph (backend_cuda_graphs) */
    int cuda_debug;  /* CUDA backend: 1 waits after every launch, graphs off, and names the first kernel that
                      * fails (backend_cuda_debug) */
    kv_format kv;    /* the attention layers' KV cache (kv_quant.h): KV_DEFAULT keeps the backend's own element
                      * (float32 on the CPU, bf16 on CUDA); the CPU also keeps bf16, q8 and q4, CUDA q8 and q4 */
} engine_options;

engine_options engine_defaults(void); /* 1 thread, bf16, CUDA graphs */

/* One sequence: committed positions in the KV cache and a DeltaNet slot,
 * and the last verified tree until it is committed (its nodes' keys and
 * values sit in the cache after the committed positions, at pos − 1 + node;
 * their DeltaNet steps in slots of their own, or, with a backend that
 * replays, logged in delta_log). */
typedef struct {
    int open;
    int pos;                         /* positions committed */
    kv_table kv;                     /* their keys and values */
    int slot;                        /* their DeltaNet state */
    int verified;                    /* nodes of the last verified tree awaiting a commit (0: none) */
    int cap;                         /* capacity of the arrays below */
    int *parent, *depth, *node_slot; /* [cap] of the verified tree; node_slot[0] = slot */
    float *delta_log;                /* [log_nodes, Ll, deltanet_log_floats] backend memory: node i's steps */
    int log_nodes;
} eseq;

/* Activations of a pass of m rows, backend memory. */
typedef struct {
    int rows;            /* capacity */
    float *x, *xn, *out; /* [rows, D] residual stream, normed, a sublayer's output */
    float *q, *k, *v;    /* [rows, 2·H·Dh], [rows, Hkv·Dh] ×2 — or the DeltaNet's qkv [rows, C] in q */
    float *mixed;        /* [rows, C] the DeltaNet conv's output */
    float *z, *ab;       /* [rows, Hv·Dv], [rows, 2·Hv] */
    float *att;          /* [rows, max(H·Dh, Hv·Dv)] */
    float *g, *u;        /* [rows, F] */
    float *mtp_in;       /* [rows, 2·D] */
    float *hidden_in;    /* [rows, D] the MTP module's input hidden states */
    float *logits;       /* [rows, V] in backend memory: always on a device, on the CPU once a pass kept them */
    float *tree_q;       /* [tree_rows, V] backend memory: a tree's q rows, for acceptance where the logits are */
    int *tree_tokens;    /* [tree_rows] backend memory: its tokens */
    int tree_rows;       /* capacity of the two above */
    /* host memory: the DeltaNet state pointers of a layer's nodes, and their slots */
    float **conv_state, **rec_state;
    const float **conv_from, **rec_from;
    float **log;
    int *state_slot;
    /* host memory: the pass's nodes, every sequence's in turn (parents as pass indices) */
    int *tokens, *parent, *depth, *seq_of; /* [rows] */
    epass_seq *seqs;                       /* [seq_cap] */
    int seq_cap;
} eact;

typedef struct engine {
    model_config cfg;
    engine_weights w; /* as loaded (host memory, checked) */
    engine_options opt;
    engine_backend be;
    eweight *bw; /* the weights as the backend reads them (engine_weights' indexing) */
    char path[4096];
    int La, Ll;         /* attention and DeltaNet layers of the trunk */
    kv_cache kv;        /* the trunk's */
    size_t slot_floats; /* conv [Ll, C, K−1] + recurrent [Ll, Hv, Dk, Dv] */
    float *slots;       /* [n_slots, slot_floats] backend memory */
    int *slot_used;     /* [n_slots] */
    int n_slots;
    eseq *seqs;
    int n_seqs;
    eact act;
    double weight_bytes_per_pass;
} engine;

int engine_open(engine *e, const char *dir, const engine_options *o, sp_error *err);
/* An engine on random weights of the shapes dir/config.json gives, made on the backend (the CUDA backend only):
 * benchmarks of a model whose weights are not here. */
int engine_open_synthetic(engine *e, const char *dir, const engine_options *o, uint64_t seed, sp_error *err);
void engine_close(engine *e);
/* The format of e's KV caches (the trunk's and the MTP module's): opt.kv, or the backend's own element. */
kv_format engine_kv_format(const engine *e);

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

/* The steps of committing node `node` of a verified tree (engine_target.c). They are separate functions so that
 * a negative control can recombine them with one slip (verify/planted_engine.c). */

/* The path's nodes below the root, in the order their keys and values must move: by depth. A node's index is at
 * least its depth, so no move overwrites a node still to be read. */
int engine_seq_path(const eseq *s, int node, int *path); /* path[depth[node]]; returns depth[node] */
/* Holds a tree of n nodes (parent, depth as in engine_forward) for its verify pass: its arrays, and a DeltaNet
 * slot for every node past the root (with a backend that replays, room in delta_log for their steps instead). */
int engine_seq_begin_tree(engine *e, eseq *s, const int *parent, const int *depth, int n, sp_error *err);
/* Puts node from's keys and values at node u's position (from = u on a correct path). */
void engine_seq_commit_kv(engine *e, eseq *s, int u, int from);
/* Makes node ≥ 1's DeltaNet state the sequence's: its slot, or on a backend that replays, the sequence's own slot
 * after the logged steps of the path to it. */
void engine_seq_keep_state(engine *e, eseq *s, int node);
/* Where node's step in DeltaNet layer li is logged (a backend that replays). */
float *engine_seq_log(const engine *e, const eseq *s, int node, int li);
/* Gives back the slots of the tree's other nodes and the cache blocks past the committed positions. */
void engine_seq_end_tree(engine *e, eseq *s);

/* ---- a pass (engine_forward.c) -------------------------------------------------- */

/* One decoder layer on the m rows of act.x (trunk layer `layer`, or −1 for
 * the MTP module's layer); type_index: its index among the layers of its type. */
void engine_decoder_layer(engine *e, const epass *p, int layer, layer_type type, int type_index);

/* One sequence's share of a pass: m nodes of sequence s. Node i takes tokens[i] after its parent (parent[i] < i,
 * an index among these m; −1 for node 0, which follows the committed positions) at position s->pos + depth[i].
 * The first n_in_place nodes form a chain whose DeltaNet state goes into the sequence's own slot: a prefill, or
 * the root of a tree. Every node keeps its keys and values at cache position s->pos + i (epass). Each other node
 * keeps its DeltaNet state in a slot of its own (s->node_slot), so a commit copies no state. On a backend that
 * replays (backend.h) it logs only its DeltaNet step in s->delta_log instead, and the commit redoes the accepted
 * path's steps. */
typedef struct {
    eseq *s;
    const int *tokens, *parent, *depth; /* [m] */
    int m, n_in_place;
    float *logits, *hidden; /* [m, V] raw, [m, D] final-normed; host memory, or NULL */
    const int *drawn;       /* [m] the tokens in backend memory, drawn there (tokens then NULL), or NULL */
} epart;

/* One pass over the nodes of n_parts distinct sequences (several only on a backend with multi_seq). Every product
 * reads its weights once for all of them; each node sees only its own sequence. in_place: the logits stay in
 * e->act.logits (backend memory) and the final-normed hidden states in e->act.xn, part after part; the parts'
 * logits and hidden are unused, and the pass is launched but not waited for (the caller reads what it needs, then
 * calls be.status). */
int engine_forward_parts(engine *e, const epart *parts, int n_parts, int in_place, sp_error *err);
/* One sequence's pass: engine_forward_parts with one part, the logits into the caller's rows or left in place. */
int engine_forward(engine *e, eseq *s, const int *tokens, const int *parent, const int *depth, int m, int n_in_place,
                   float *logits, float *hidden, sp_error *err);
/* engine_forward_parts with one part, in place: a round on a GPU then waits on the device only once. */
int engine_forward_in_place(engine *e, eseq *s, const int *tokens, const int *parent, const int *depth, int m,
                            int n_in_place, sp_error *err);

/* engine_forward_in_place with the tokens in backend memory, drawn there (be.draft): a pass over an MTP chain
 * drafted on the device. */
int engine_forward_drawn(engine *e, eseq *s, const int *drawn, const int *parent, const int *depth, int m,
                         int n_in_place, sp_error *err);

/* Room for passes of m rows. */
void engine_act_reserve(engine *e, int m);
/* ... and for their logits in backend memory (always there on a device; on the CPU only once asked for). */
void engine_act_reserve_logits(engine *e, int m);

/* ... and for a tree of n nodes, its tokens and q rows, in backend memory (act.tree_q, act.tree_tokens). */
void engine_act_reserve_tree(engine *e, int n);

/* n floats of backend memory into host memory. */
void engine_download(engine *e, float *host, const float *src, size_t n);
/* logits[m, V] (host memory) = the lm_head's product with the m rows of xn (backend memory). */
void engine_logits(engine *e, float *logits, const float *xn, int m);

/* The tensor of `role` as the backend reads it (engine_weight's indexing). */
const eweight *engine_bweight(const engine *e, int layer, tensor_role role);

#endif
