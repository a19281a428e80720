/* round_explore.h — the exact law of what the real decode loop emits, computed by running it (decode_run, a
 * proposer from the method factory, accept_exact or a planted rule) through every outcome of every random
 * decision, not by a model of the rule. */
#ifndef SPECULA_TEST_ROUND_EXPLORE_H
#define SPECULA_TEST_ROUND_EXPLORE_H

#include <stdint.h>

#include "decode.h"
#include "error.h"

#define EXPLORE_MAX_ROUNDS 2
#define EXPLORE_MAX_DEPTH 8 /* the most drafts accepted in one round that can be counted */

/* One run of the method under test, from a fresh proposer: decode_run with
 * on_commit(commit_user) installed. The explorer calls it many times. */
typedef int (*explore_run_fn)(void *user, commit_callback on_commit, void *commit_user, sp_error *err);

/* What is observed: the first L emitted tokens and the accepted drafts of the first `rounds` rounds (the size of
 * each committed burst minus one; no world here has an EOS token, and the loop never cuts a burst for the
 * budget). */
typedef struct {
    int V, L;      /* tokens: the first L emitted, over V^L cells (enumerate.h numbering) */
    int rounds;    /* accepted counts of the first `rounds` rounds (0 … EXPLORE_MAX_ROUNDS) */
    int max_depth; /* accepted counts lie in 0 … max_depth (≤ EXPLORE_MAX_DEPTH) */
    /* Optional (NULL: none): called once per complete outcome with its
     * weight, right after the run that reached it, for a caller whose run
     * computes part of the law itself (an accept_fn that takes a
     * verification at its computed law instead of drawing it) and weighs it
     * here. Such runs may draw no uniform before the window is observed: a
     * uniform's pieces are found by probe runs, which would run the caller's
     * code again in between; the explorer fails if one does. */
    void (*on_outcome)(void *user, double weight);
    void *outcome_user;
} explore_window;

typedef struct {
    double *tokens;   /* [V^L] the law of the first L tokens */
    double *accepted; /* [(max_depth + 1)^rounds] the law of the accepted counts, round 1 most significant */
    int64_t accepted_cells;
    long runs;   /* decode runs made */
    long leaves; /* complete outcomes weighed */
} explore_law;

/* The law of the window under `run`.
 *
 * Every random decision of the decoding layer is one of two draws (sampler.h): rng_uniform, a float uniform on
 * the 2²³-point grid (m + ½)·2⁻²³ of philox_unit, and sampler_sample, the exponential race over a row, which
 * picks token i with probability probs[i] / Σ probs. The explorer answers both through the rng_source seam. A
 * race branches into every token with probs > 0, weighed by its share of the row. A uniform branches into the
 * pieces of the grid on which the rest of the run is the same. The pieces are found by running the loop again
 * with the uniform forced to chosen grid points and comparing everything that follows (every later draw, every
 * committed token), bisecting until each boundary is pinned to one grid point; a piece weighs its share of the
 * 2²³ points. This is sound because each uniform of the code decides one comparison (U·q < r) or one inverse-CDF
 * step (a planted rule): its outcome is a step function of U that never returns to an earlier value, so two grid
 * points with the same outcome bound a piece. The law is then exact for the implemented arithmetic of the
 * acceptance tests (float products and comparisons at every grid point); the race is taken at its law, which
 * tests/unit/test_sampler.c holds the Philox race to. Draws after the observed window get a fixed answer: they
 * cannot change what is observed.
 *
 * Fails when a run fails, when two runs that made the same choices asked for different draws (the loop would not
 * be a function of its draws), or when the outcomes' weights do not sum to 1. */
int explore_law_compute(explore_run_fn run, void *user, const explore_window *w, explore_law *law, sp_error *err);
void explore_law_free(explore_law *law);

/* Index of accepted counts n[0..rounds) in explore_law.accepted. */
int64_t explore_accepted_index(const int *n, int rounds, int max_depth);

#endif
