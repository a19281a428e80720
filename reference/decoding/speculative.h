/* speculative.h — draft-model speculative sampling (Leviathan et al.): a
 * smaller model with the same vocabulary proposes k tokens, sampled from
 * its processed distribution q (the same temperature, top-k and top-p as
 * the target's p); the target verifies all k in one pass and the exact rule
 * accepts each with min(1, p/q). The draft rolls back on a rejection.
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

#endif
