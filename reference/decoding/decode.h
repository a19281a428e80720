/* decode.h — the round loop every method shares, on one sequence. A round: the proposer builds a token tree under
 * the pending token with q at every node; the target verifies every node in one pass; an acceptance rule picks the
 * accepted path and the token after it; that burst is committed and the proposer realigns on it. Plain decoding
 * is the proposer that proposes nothing. decode_batch.h runs the same rounds over several sequences. */
#ifndef SPECULA_DECODE_H
#define SPECULA_DECODE_H

#include <stdint.h>

#include "accept.h"
#include "accounting.h"
#include "proposer.h"
#include "sampler.h"
#include "target.h"
#include "tree.h"

/* The acceptance rule of a run. Under the exact rules a tree's children are drawn from q (i.i.d. or without
 * replacement: the tree's children_kind); under typical and greedy they are the proposer's top ranks. */
typedef enum {
    RULE_EXACT = 0,    /* Leviathan's min(1, p/q) with the residual; multi-round rejection on trees */
    RULE_EXACT_NOREPL, /* the same rule on a tree whose children were drawn without replacement */
    RULE_TYPICAL,      /* Medusa's typical acceptance: fast, biased (the tests show by how much) */
    RULE_GREEDY,       /* follow the target's argmax: temperature 0 */
    RULE_DEFAULT       /* a method_spec's unset rule: method_spec_finish picks it from the method and temperature */
} accept_rule;

/* "exact", "exact-norepl", "typical", "greedy" ("default" for RULE_DEFAULT). */
const char *accept_rule_name(accept_rule rule);
/* 1 for the rules that keep the target's law exactly (the ones a target may run on its side: verify_accept). */
static inline int accept_rule_exact(accept_rule rule) { return rule == RULE_EXACT || rule == RULE_EXACT_NOREPL; }

/* Called with every burst of committed tokens, as it is committed. */
typedef void (*commit_callback)(const int *tokens, int n, void *user);

/* An acceptance rule supplied by the caller, with accept_exact's contract (scratch: [2·V]). Lessons plug in their
 * own rule; the distribution tests plug in planted bugs to show that they would catch them. */
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

/* Runs the loop on a new sequence of `target` with the given proposer (NULL: plain decoding, named "greedy" at
 * temperature 0 and "sample" above in the accounting). The sequence is closed before it returns. */
int decode_run(decode_target *t, proposer *prop, const int *prompt, int n_prompt, const decode_options *opt,
               decode_output *out, sp_error *err);
void decode_output_free(decode_output *out);

#endif
