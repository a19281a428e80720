/* target.h — the target model as the decoding layer sees it: sequences that consume tokens, and one verify pass
 * over a token tree per round. The round loop, beam search and every method reach the model only through this
 * struct, so the reference (backend/reference_target.h) and the engine run the same decoding code. */
#ifndef SPECULA_TARGET_H
#define SPECULA_TARGET_H

#include <stddef.h>

#include "accept.h"
#include "config.h"
#include "error.h"
#include "sampler.h"
#include "stepper.h"
#include "tree.h"

/* One sequence's share of a verify pass. */
typedef struct {
    int seq;
    const token_tree *tree; /* node 0: the pending token */
    float *p;               /* out [tree->n, V]: row i = the processed distribution of the token after node i
                             * (raw logits when the pass is given no sampler params) */
    float *hidden;          /* out [tree->n, D]: final-normed hidden state after node i, or NULL */
} target_job;

/* An MTP chain round as a proposer hands it to the target (mtp_verify_accept): the drafts to draw with the
 * proposer's own module, at the proposer's own rng sites (mtp.c's draw_child: child 0 of the node at depth d − 1
 * at {seed, RNG_DRAFT, accept_draw_index(round, root_position + d, 0)}). */
typedef struct {
    stepper *mtp;           /* the proposer's MTP module */
    const int *real_tokens; /* [n_real] the last commit's real steps, not yet run: the token each pairs with the
                             * target's hidden state of its position, the rows 0 .. n_real − 1 of the last round's
                             * chain (kept on the target's side) */
    int n_real;
    int real_mark; /* the mark the module takes after them */
    int k;         /* drafts (0: the root alone is verified) */
    int sample_drafts;
    uint64_t seed, round; /* the drafts' rng sites, as propose_call's */
    int root_position;
    int *drafts; /* out [k] */
} mtp_chain_call;

/* What the sequences hold, for the figures of beam search. */
typedef struct {
    int kv_blocks_in_use;   /* blocks of the shared KV pool held by any sequence */
    int kv_blocks_listed;   /* Σ over the sequences asked about of their block-table lengths: what
                             * private caches would hold */
    long kv_block_copies;   /* blocks copied on write since the target was built */
    size_t kv_block_bytes;  /* one block: every attention layer, keys and values */
    size_t seq_state_bytes; /* DeltaNet conv + recurrent state of one sequence */
} target_memory;

typedef struct decode_target decode_target;
struct decode_target {
    const char *backend;          /* "reference", … */
    const model_config *cfg;      /* vocabulary, hidden size, EOS ids */
    const char *path;             /* the checkpoint directory (messages, Medusa's base digest) */
    int storage_bytes;            /* bytes per parameter as the checkpoint stores them (2 for bf16, 4 for f32) */
    double weight_bytes_per_pass; /* weight bytes one pass reads at the stored dtype (footprint.h) */
    int max_tree_nodes;           /* the largest tree one verify pass takes */

    /* A sequence holds all the model carries between positions (KV cache, DeltaNet conv and recurrent state);
     * the sequences of one target share its KV blocks. Ids are small integers chosen by the target. */

    /* A new empty sequence (position 0): its id, or −1 with a message. */
    int (*seq_open)(decode_target *t, sp_error *err);
    /* A new sequence in the state of `src` (KV shared copy-on-write, DeltaNet state copied). */
    int (*seq_fork)(decode_target *t, int src, sp_error *err);
    void (*seq_close)(decode_target *t, int seq);
    /* Consumes tokens[0..n) (n ≥ 0). logits [n, V] raw and hidden [n, D] final-normed, each when not NULL. */
    int (*prefill)(decode_target *t, int seq, const int *tokens, int n, float *logits, float *hidden, sp_error *err);
    /* One pass over every job's tree. For a sequence at position t (t tokens consumed), the root is the pending
     * token, consumed at t and part of the sequence from now on whatever is accepted; node i is consumed at
     * t + depth[i] after its ancestors only. Each verified sequence must be committed before its next verify.
     * sp: the processing of p (NULL: raw logits). */
    int (*verify)(decode_target *t, const target_job *jobs, int n_jobs, const sampler_params *sp, sp_error *err);
    /* Optional (NULL: the round loop calls verify, then accept_exact itself). One sequence's verify pass
     * followed by accept_exact (accept.h) on the target's side, where the distributions are: the same rule
     * and the same rng sites, so for the same distributions the same result as verify + accept_exact on the
     * host, while only the result crosses (a GPU's one wait of the round). job->p may be left unwritten;
     * job->hidden, when not NULL, holds at least the rows of the accepted path's nodes. */
    int (*verify_accept)(decode_target *t, const target_job *job, const sampler_params *sp, accept_site site,
                         accept_result *r, sp_error *err);
    /* Optional (NULL: the proposer drafts on its side, then verify_accept or verify). One MTP chain round where
     * the target's distributions are: the module's pending real steps, then k drafts, each drawn from its step's
     * processed distribution (argmax drafts: from its one-hot) at the proposer's rng sites and fed to the next
     * step there, then verify_accept's pass and rule over the chain. For the same distributions the drafts and
     * the result are the proposer's and verify_accept's; only the result and the drafts cross (a GPU's one wait
     * of the round). job->tree holds the root; the drafts go to call->drafts, the tree is left to the caller,
     * the q rows stay on the target's side, and job->p and job->hidden are not written: the final-normed hidden
     * states of the chain stay there for the next round's real steps. Returns 1 (nothing done) when call->mtp is
     * not this target's own module. */
    int (*mtp_verify_accept)(decode_target *t, const target_job *job, const mtp_chain_call *call,
                             const sampler_params *sp, accept_site site, accept_result *r, sp_error *err);
    /* The sequence becomes the state after `node` of its last verified tree (node 0: the root alone); the state
     * every other node wrote is released. */
    int (*commit)(decode_target *t, int seq, int node, sp_error *err);
    /* Positions consumed by the sequence. */
    int (*position)(const decode_target *t, int seq);
    void (*memory)(const decode_target *t, const int *seqs, int n_seqs, target_memory *out);
    void (*release)(decode_target *t);
    void *impl;
};

#endif
