/* processed_law.h — the processed sampling distribution (temperature, top-k, top-p, min-p) computed a second time,
 * from sampler.h's definitions read literally, for the laws the distribution tests compare samplers against.
 * The samplers run sampler_probs; if the laws ran it too, a bug in a cut would move the law and the samples
 * together and no test could see it. This copy shares no code with sampler.c: no sort, no selection, no grouped
 * walk, one comparison per pair, O(V²) — fine for the micro worlds' vocabularies. */
#ifndef SPECULA_PROCESSED_LAW_H
#define SPECULA_PROCESSED_LAW_H

#include "sampler.h"

/* probs[V] from logits[V] under sp (probs may not alias logits). The same contract as sampler_probs (sampler.h):
 * temperature 0 is one-hot at the lowest index of the maximum; NaN counts as −inf; no finite or +inf logit, or
 * parameters that fail sampler_validate, give all zeros; +inf logits share the mass equally. The thresholds are
 * compared on the same weights e_i = exp(z_i − max z) as sampler.c's, and the kept weights summed in index order,
 * so the two agree bit for bit except where a top-p cumulative sum lands within rounding of top_p·S. */
void processed_law(const sampler_params *sp, const float *logits, float *probs, int V);

#endif
