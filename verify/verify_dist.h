/* verify_dist.h — does a sampler emit sequences with the right law? A sampler is any callback that turns a seed
 * into L tokens. Each check is a hypothesis test with a total-variation upper confidence bound (stats.h), and
 * assumes one sampler's draws are i.i.d. given distinct seeds. */
#ifndef SPECULA_VERIFY_DIST_H
#define SPECULA_VERIFY_DIST_H

#include <stdint.h>

#include "error.h"
#include "stats.h"

/* Draws one sequence tokens[L] using only randomness derived from `seed`
 * (e.g. decode_options.seed): the same seed must give the same tokens. */
typedef int (*dist_draw_fn)(void *ctx, uint64_t seed, int *tokens, sp_error *err);

typedef struct {
    const char *name; /* what the table calls it, e.g. "reference spec k=2" */
    int V, L;         /* the cells are the V^L sequences, numbered as in enumerate.h */
    dist_draw_fn draw;
    void *ctx;
} dist_sampler;

/* Called every few hundred draws and at the end. */
typedef void (*verify_progress_fn)(void *user, int64_t done, int64_t total);

typedef struct {
    int64_t n;           /* draws (per sampler for two samples) */
    uint64_t seed;       /* run r of sample s uses verify_run_seed(seed, s, r) */
    stats_method method; /* STATS_G (default) or STATS_PEARSON */
    double alpha;        /* the verdict: the law is accepted when p ≥ alpha */
    double delta;        /* the TV bound holds with probability ≥ 1 − delta */
    double tv_max;       /* > 0: the verdict also needs the TV upper bound ≤ tv_max */
    verify_progress_fn progress;
    void *progress_user;
} verify_options;

/* n 10 000, seed 1, G-test, alpha 1e-3, delta 1e-3, no TV requirement. */
verify_options verify_defaults(void);

typedef struct {
    int64_t n;         /* draws per sampler */
    int64_t cells;     /* V^L before pooling */
    stats_result test; /* statistic, df, p-value, cells after pooling, pooled, impossible draws */
    stats_tv tv;       /* upper bound on TV(sampler, exact) or TV(A, B) */
    int pass;          /* test.p_value ≥ alpha, and tv.upper ≤ tv_max when tv_max > 0 */
    int64_t *counts;   /* [cells] the draws of the (first) sampler per sequence */
    int64_t *counts_b; /* [cells] the second sampler's, two-sample tests only (else NULL) */
} verify_result;

void verify_result_free(verify_result *r);

/* The seed of run `run` of sample `stream` (0 for A, 1 for B): a hash, so
 * runs and samples never share randomness and nearby seeds are unrelated. */
uint64_t verify_run_seed(uint64_t seed, int stream, int64_t run);

/* The seed of a check named `name` in a run with seed `base`: FNV-1a over
 * the name's bytes, mixed with base. A catalogue that derives each case's
 * seed from its name (not its position) keeps every other case's draws,
 * and so its results, when a case is added, removed or moved. */
uint64_t verify_name_seed(const char *name, uint64_t base);

/* Draws n sequences from s into counts[V^L] (zeroed first). Fails when the
 * sampler fails or emits a token outside [0, V). */
int verify_draw(const dist_sampler *s, int64_t n, uint64_t seed, int stream, int64_t *counts, const verify_options *opt,
                sp_error *err);

/* Goodness of fit of s to probs[V^L] (summing to 1 within 1e-4), with the TV
 * bound against probs. A law on a single sequence (temperature 0) has no
 * chi-square test: then p = 1 when every draw is that sequence, else 0. */
int verify_against_exact(const dist_sampler *s, const double *probs, const verify_options *opt, verify_result *r,
                         sp_error *err);

/* Homogeneity of a and b (same V and L). ref_probs[V^L], when not NULL, is
 * the expected law (e.g. exact probabilities) and only chooses the coarse
 * cells of the TV bound; NULL keeps every cell. */
int verify_same_distribution(const dist_sampler *a, const dist_sampler *b, const double *ref_probs,
                             const verify_options *opt, verify_result *r, sp_error *err);

/* The statistics alone, from counts already drawn (for callers that draw
 * once and test several hypotheses). */
int verify_counts_exact(const int64_t *counts, const double *probs, int64_t cells, const verify_options *opt,
                        verify_result *r, sp_error *err);

#endif
