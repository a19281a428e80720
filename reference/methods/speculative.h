/* speculative.h — draft-model speculative sampling (Leviathan et al.): a
 * smaller model with the same vocabulary proposes k tokens, sampled from
 * its processed distribution q (the same temperature, top-k and top-p as
 * the target's p); the target verifies all k in one pass and the exact rule
 * accepts each with min(1, p/q). The draft rolls back on a rejection.
 * A tree of drafts (SpecInfer) branches at every depth as a static shape
 * says; the exact multi-round rule (accept.h) verifies it in one pass.
 * Built through the method factory (method.h). */
#ifndef SPECULA_SPECULATIVE_H
#define SPECULA_SPECULATIVE_H

#include "proposer.h"
#include "stepper.h"
#include "target.h"

#define SPEC_MAX_K 32

/* A proposer over the stepper `draft` (reset here; used by this proposer
 * alone until it is released). Fails with a clear message when the
 * vocabularies differ or k is outside [1, SPEC_MAX_K]. */
int spec_proposer_build(proposer *p, stepper *draft, const decode_target *t, int k, sp_error *err);

/* A tree of drafts of the given shape (speculative.c says how the draft's
 * state follows each branch). kind: children drawn i.i.d. from the draft's
 * q or without replacement (the exact rule), or its top-ranked tokens
 * (greedy and typical rules). The chain above is the shape of k ones with
 * i.i.d. children: the same draws, bit for bit. */
int spec_tree_proposer_build(proposer *p, stepper *draft, const decode_target *t, const tree_shape *shape,
                             children_kind kind, sp_error *err);

#endif
