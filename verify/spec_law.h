/* spec_law.h — the exact law of the first L tokens that chain speculative decoding emits, computed (not sampled)
 * from the target's and the proposer's conditional rows, under the exact rule or a planted bug (planted.h). With
 * the exact rule it is the target's own law, which proves exactness on that instance; with a bug it is the law
 * the negative control samples, which sizes the test that must reject it. */
#ifndef SPECULA_SPEC_LAW_H
#define SPECULA_SPEC_LAW_H

#include "error.h"
#include "planted.h"

/* Fills out[V] with a distribution after the emitted prefix tokens[0..len).
 * depth (1-based) is the draft's depth in its round, so the round started
 * after tokens[0..len − depth + 1). */
typedef void (*law_row_fn)(void *user, const int *tokens, int len, int depth, float *out);
typedef void (*law_target_fn)(void *user, const int *tokens, int len, float *out);
/* The drafts a round proposes after the emitted prefix tokens[0..len), before the budget cuts it. */
typedef int (*law_depth_fn)(void *user, const int *tokens, int len);

/* The process, as decode_run runs it: rounds of min(k, budget − 1) drafts (k may depend on the prefix, as prompt
 * lookup's does), and a stop at EOS when one is given (the law pads the rest of the window with EOS, as the
 * samplers do). The proposer's rows may depend only on the emitted prefix and the draft's depth in its round. */
typedef struct {
    int V, L;             /* the law is over V^L sequences (enumerate.h numbering) */
    int k;                /* drafts per round */
    law_depth_fn round_k; /* NULL: k every round; else the drafts of each round (≤ k) */
    int max_tokens;       /* decode_run's budget (rounds propose min(k, budget − emitted − 1)); ≤ 0: no budget */
    law_target_fn target; /* p after a prefix */
    law_row_fn draw;      /* the distribution the draft is drawn from */
    law_row_fn ratio;     /* the q the rule divides by and subtracts; NULL: the draw row */
    void *user;
    planted_bug bug; /* PLANT_NONE: the exact rule */
    int stop_at_eos; /* 1: the run stops after emitting token eos */
    int eos;
    /* 1: Medusa's typical rule (accept.h) instead of the exact one: a draft x after prefix c (drawn from the
     * draw row, as a chain's drafts are under every rule) is accepted when p(x | c) > min(epsilon,
     * delta·exp(−H(p(· | c)))), and the first rejection emits a token drawn from p at the last accepted node,
     * not from a residual. The law is the rule's own: biased away from the target's above temperature 0. */
    int typical;
    double epsilon, delta;
} spec_law_spec;

/* Whether spec_law computes the law under `bug`: every planted bug of the
 * acceptance rule; not PLANT_COMMIT_PARENT_AFTER_TWO, whose target reads a
 * context the conditional rows do not describe. */
int spec_law_computes(planted_bug bug);

/* joint[V^L] ← the law. Fails when V^L is too large (enumerate.h), a draft
 * row puts mass where its ratio row has none (the rule would fail) or the
 * bug is one it does not compute. */
int spec_law(const spec_law_spec *s, double *joint, sp_error *err);

#endif
