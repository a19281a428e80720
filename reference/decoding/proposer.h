/* proposer.h — the contract between the round loop and whatever proposes tokens: a draft model, the MTP module
 * or Medusa heads. A proposer is built by the factory in method.h, used for one run and released. */
#ifndef SPECULA_PROPOSER_H
#define SPECULA_PROPOSER_H

#include <stdint.h>

#include "accept.h" /* accept_draw_index: the rng index of a draft */
#include "error.h"
#include "sampler.h"
#include "target.h" /* propose_verify hands a round to a target */
#include "tree.h"

/* What one round asks of the proposer. The sampler params and the seed are
 * the run's own, handed over every round, so q is processed exactly as the
 * target's p is and the drafts draw from the run's random streams. */
typedef struct {
    const sampler_params *sampling;
    uint64_t seed;
    uint64_t round;    /* the number of this round, for rng sites */
    int root_position; /* the root's position in the sequence */
    int max_depth;     /* never propose deeper (the token budget) */
} propose_call;

typedef struct proposer proposer;
struct proposer {
    const char *name;      /* the method in the accounting: "spec", "mtp", "medusa" */
    int depth;             /* the deepest proposal: k for a chain, the tree's depth for Medusa */
    int tree_capacity;     /* nodes it may add under the root */
    int needs_hidden;      /* 1: commit reads the target's final-normed hidden states */
    children_kind kind;    /* how children are chosen, which decides the exact rule */
    double bytes_per_step; /* weight bytes one proposer step reads */
    long steps;            /* proposer forward passes so far */

    /* Adds nodes under the root of `tree` (already reset to the pending token), with q at every node that has
     * children. */
    int (*propose)(proposer *self, token_tree *tree, const propose_call *call, sp_error *err);
    /* Optional (NULL: propose only). The round's proposal, verify pass and exact acceptance in one call to the
     * target on sequence seq, where the target offers it (target.h: mtp_verify_accept): the drafts are added to
     * `tree` (their q rows left unwritten: they stay on the target's side) and r is accept_exact's result at
     * `site`. Called every round of a run under the exact rule, the last ones too (call->max_depth 0). Returns 1
     * when the target cannot take it (the loop then proposes and verifies itself, for the whole run), 0 done,
     * −1 with a message. */
    int (*propose_verify)(proposer *self, decode_target *t, int seq, token_tree *tree, const propose_call *call,
                          accept_site site, accept_result *r, sp_error *err);
    /* The target has consumed path[0..len) (their hidden states hidden[len, D]
     * when needs_hidden, else NULL) and next_token follows, not yet consumed.
     * Also called once after the prompt, with the prompt minus its last token. */
    int (*commit)(proposer *self, const int *path, const float *hidden, int len, int next_token, sp_error *err);
    void (*release)(proposer *self);
    void *impl;
};

#endif
