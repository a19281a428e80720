/* speculative.h — draft-model speculative sampling (Leviathan et al.): a smaller model with the same vocabulary
 * proposes k tokens, or a tree of drafts (SpecInfer), and the target verifies them all in one pass. */
#ifndef SPECULA_SPECULATIVE_H
#define SPECULA_SPECULATIVE_H

#include "proposer.h"
#include "stepper.h"
#include "target.h"

#define SPEC_MAX_K 32

/* A proposer over the stepper `draft` (reset here; used by this proposer
 * alone until it is released). The drafts are sampled from the draft's
 * processed distribution q (the same temperature, top-k and top-p as the
 * target's p); the exact rule accepts each with min(1, p/q), and the draft
 * rolls back on a rejection. Fails with a clear message when the
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
