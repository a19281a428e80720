/* decode.h — the generation loop every method shares, and the proposer
 * contract. One round:
 *   the proposer builds a token tree rooted at the pending token (the last
 *   committed token, which the target has not run yet) with q at each node;
 *   the verifier runs the target over every node (one logical pass);
 *   an acceptance rule picks the accepted path and the next token;
 *   the accepted tokens and the next token are committed as one burst;
 *   the proposer realigns on what was committed.
 * Plain greedy/sampled decoding is the proposer that proposes nothing. */
#ifndef SPECULA_DECODE_H
#define SPECULA_DECODE_H

#include <stdint.h>

#include "accept.h"
#include "accounting.h"
#include "model.h"
#include "sampler.h"
#include "tree.h"

typedef enum { RULE_EXACT = 0, RULE_GREEDY, RULE_TYPICAL } accept_rule;

typedef struct proposer proposer;
struct proposer {
    const char *name;
    /* Builds the tree under the root already set by the caller (tree_reset
     * with the pending token). root_position: the root's position in the
     * sequence. max_depth: never propose deeper (the token budget). round:
     * the number of this round, for rng sites. */
    int (*propose)(proposer *self, token_tree *tree, int root_position, int max_depth, uint64_t round, sp_error *err);
    /* The target has consumed path[0..len) (their final-normed hidden states
     * are hidden[len, D]) and the token that follows is next_token, not yet
     * consumed. Also called once after the prompt, with the prompt minus its
     * last token as the path. */
    void (*commit)(proposer *self, const int *path, const float *hidden, int len, int next_token);
    void (*release)(proposer *self);
    double bytes_per_step; /* weight bytes one proposer step reads */
    long steps;            /* proposer forward passes so far */
    int tree_capacity;     /* nodes the proposer may add */
    children_kind kind;
    void *impl;
};

/* Called with every burst of committed tokens, as it is committed. */
typedef void (*commit_callback)(const int *tokens, int n, void *user);

/* An acceptance rule supplied by the caller, with accept_exact's contract
 * (scratch: [2·V]). Lessons plug in their own rule; the distribution tests
 * plug in planted bugs (planted.h) to show that they would catch them. */
typedef int (*accept_fn)(void *user, const token_tree *t, const float *p, accept_site site, float *scratch,
                         accept_result *r, sp_error *err);

typedef struct {
    sampler_params sampling; /* temperature 0 = greedy */
    uint64_t seed;
    int max_tokens;
    int stop_at_eos;
    accept_rule rule;
    float typical_epsilon, typical_delta; /* Medusa's typical acceptance (0.09, 0.3) */
    commit_callback on_commit;
    void *user;
    accept_fn custom_accept; /* not NULL: used in place of `rule` */
    void *accept_user;
} decode_options;

decode_options decode_defaults(void);

typedef struct {
    int *tokens; /* [n] the generated tokens (the prompt excluded) */
    int n;
    run_accounting acc;
} decode_output;

/* Runs the loop with the given proposer (NULL: plain decoding). `method`
 * names the run in the accounting. */
int decode_run(model *target, proposer *prop, const char *method, int k, const int *prompt, int n_prompt,
               const decode_options *opt, decode_output *out, sp_error *err);
void decode_output_free(decode_output *out);

/* The reference verifier: runs the target over every tree node, each node
 * in its own state forked from its parent's (so the KV blocks of the shared
 * prefix are shared, copy-on-write, and a branch never sees a sibling).
 * Fills p[n, V] (processed with sp) and hidden[n, D]; node_states[n] must be
 * built on base's pool and are left holding each node's state. */
void verify_tree(model *m, const model_state *base, const token_tree *t, const sampler_params *sp, float *p,
                 float *hidden, model_state *node_states);

#endif
