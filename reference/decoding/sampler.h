/* sampler.h — from logits to the processed distribution, and from a
 * distribution to a token, with randomness that any backend can replay.
 * Speculative methods need the distributions p (target) and q (proposer)
 * themselves, not just samples: sampler_probs returns them. */
#ifndef SPECULA_SAMPLER_H
#define SPECULA_SAMPLER_H

#include <stdint.h>

#include "error.h"

typedef struct {
    float temperature; /* 0: greedy (one-hot at the argmax) */
    int top_k;         /* 0: off */
    float top_p;       /* 1: off */
    float min_p;       /* 0: off */
} sampler_params;

/* temperature 1, everything else off. */
sampler_params sampler_defaults(void);
/* Clear error for out-of-range values (temperature < 0, top_p outside (0,1], ...). */
int sampler_validate(const sampler_params *sp, sp_error *err);

/* The processed distribution: probs[V] from logits[V]. Every cut is a
 * threshold, so the result does not depend on sort order and ties at a cut
 * are always kept:
 *   temperature 0: one-hot at sampler_argmax(logits); nothing else applies.
 *   z = logits / temperature
 *   top-k (0 < k < V): keep z_i ≥ the k-th largest z (duplicates counted)
 *   softmax over the kept entries
 *   top-p (p < 1): keep p_i ≥ τ, τ the largest value among the p_j such
 *     that Σ_{i: p_i ≥ p_j} p_i ≥ top_p
 *   min-p (> 0): keep p_i ≥ min_p · max p
 *   renormalise (sums in double).
 * Edge cases (sampler.c states every step exactly): a NaN logit counts as
 * −inf; a row with no logit above −inf gives all zeros at every temperature;
 * +inf logits share the mass equally; parameters that fail sampler_validate
 * give all zeros. probs may alias logits. */
void sampler_probs(const sampler_params *sp, const float *logits, float *probs, int V);

/* The two order statistics sampler_probs needs (sampler.c, steps 3 and 5),
 * apart so that a test can hold them to a full sort. scratch[V] is
 * overwritten. The k-th largest of z[V] (no NaN; duplicates counted; 1 ≤ k
 * ≤ V). τ of top-p over the weights e[V] ≥ 0 with total S: the largest
 * weight at which the descending cumulative sum, a group of equal weights
 * at a time, reaches top_p·S; 0 when none does. */
double sampler_kth_largest(const double *z, int V, int k, double *scratch);
double sampler_top_p_threshold(const double *e, int V, double S, double top_p, double *scratch);

/* Lowest index of the maximum; −1 when no entry is above −inf (NaN entries
 * are never chosen). */
int sampler_argmax(const float *x, int V);
/* ranked[0..R) = the indices of the R highest logits (1 ≤ R ≤ V), lowest
 * index first on ties; NaN counts as −inf. Medusa's and the draft tree's
 * top-ranked children. */
void sampler_top_ranks(const float *logits, int V, int R, int *ranked);

/* What a random draw is for; each purpose is its own Philox stream so draws
 * for different purposes never share randomness. */
typedef enum {
    RNG_SAMPLE = 1,   /* a token from the target's distribution */
    RNG_DRAFT = 2,    /* a token from a proposer's distribution */
    RNG_ACCEPT = 3,   /* the uniform of an acceptance test */
    RNG_RESIDUAL = 4, /* a token from a residual distribution */
    RNG_TEST = 99     /* statistical tests' own draws */
} rng_purpose;

/* The coordinates of one draw: the run's seed, the purpose, and an index
 * that is unique for that purpose within the run (typically the absolute
 * position, times a small factor for rounds or tree nodes). */
typedef struct {
    uint64_t seed;
    uint32_t purpose;
    uint64_t index;
} rng_site;

/* How a site maps onto Philox (the CUDA code uses the same mapping):
 *   key = seed (lo, hi); counter = (block, index lo, index hi, purpose)
 * where block = token >> 2 and word = token & 3 for the race's E_token, and
 * block = RNG_UNIFORM_BLOCK, word 0 for rng_uniform. */
#define RNG_UNIFORM_BLOCK 0xffffffffu

/* A uniform in (0, 1) for this site. */
float rng_uniform(rng_site site);

/* Draws a token from probs[V] by the exponential race:
 * argmax_i probs[i] / E_i with E_i = −log U_i (computed in double), U_i from
 * Philox keyed by (seed, purpose, index, token i) as U_i = (word + ½)·2⁻³²;
 * lowest index on a tie. The result depends only on the
 * distribution and the site, never on summation order, so the CUDA sampler
 * picks the same token. probs need not sum to 1 (the race draws in
 * proportion); entries ≤ 0 or NaN never win; −1 when no entry is > 0. */
int sampler_sample(const float *probs, int V, rng_site site);

/* The race's E_token = −log U_token for this site, in double: what a backend
 * compares number for number to show it runs the same race. */
double rng_race_exponential(rng_site site, int token);

/* A seam for exact computations in tests: a source that answers rng_uniform
 * and sampler_sample in place of Philox, so that a test can run the real
 * round loop, proposers and acceptance rules through every outcome of every
 * random decision and weigh each outcome by its probability
 * (tests/stat/round_explore.h). NULL, the default, is Philox; no program
 * sets it, and the draws then cost one pointer test more. sample receives
 * what sampler_sample received and returns a token with probs > 0 (or −1
 * when there is none). */
typedef struct {
    float (*uniform)(void *user, rng_site site);
    int (*sample)(void *user, const float *probs, int V, rng_site site);
    void *user;
} rng_source;

/* Routes every later draw through source (NULL: back to Philox). */
void rng_set_source(const rng_source *source);

#endif
