/* speculative.h — draft-model speculative sampling (Leviathan et al.): a
 * smaller model with the same vocabulary proposes k tokens, sampled from
 * its processed distribution q (the same temperature, top-k and top-p as
 * the target's p); the target verifies all k in one pass and the exact rule
 * accepts each with min(1, p/q). Both models roll back on a rejection. */
#ifndef SPECULA_SPECULATIVE_H
#define SPECULA_SPECULATIVE_H

#include "decode.h"

/* A proposer over `draft` (which must share the target's vocabulary).
 * Fails with a clear message when the vocabularies differ or k is out of
 * range [1, 32]. */
int spec_proposer_build(proposer *p, model *draft, const model *target, int k, const sampler_params *sp, uint64_t seed,
                        sp_error *err);

#endif
