/* Exercise 7 — a chi-square test of a sampler (lessons/08-measuring.md).
 * Write stats_gof as verify/stats.h specifies it: Pearson's X² or the G
 * statistic of observed counts against known probabilities, with rare cells
 * pooled, and its p-value. The input checks are done for you. The checker
 * (make exercise EX=7 FILE=this-file) runs the project's statistics tests
 * (textbook data sets with published results) and the sampler's
 * distribution tests, whose negative controls — samplers with planted
 * bugs — your test must reject. */
#include "stats.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>

#define SUM_TOL 1e-4 /* probabilities must sum to 1 within this (see verify/stats.c) */

static int check_inputs(const int64_t *counts, const double *probs, int K, stats_method method, double *sum, int64_t *n,
                        sp_error *err) {
    if (!counts || !probs) return sp_fail(err, "stats_gof: NULL argument");
    if (K < 2) return sp_fail(err, "stats_gof: need at least 2 cells, got %d", K);
    if (method != STATS_PEARSON && method != STATS_G)
        return sp_fail(err, "stats: unknown method %d (expected STATS_PEARSON or STATS_G)", (int)method);
    *sum = 0.0;
    for (int i = 0; i < K; i++) {
        if (!isfinite(probs[i]) || probs[i] < 0.0)
            return sp_fail(err, "stats: probs[%d] must be a finite probability >= 0, got %g", i, probs[i]);
        *sum += probs[i];
    }
    if (fabs(*sum - 1.0) > SUM_TOL)
        return sp_fail(err, "stats: probs must sum to 1 (within %g), sums to %.9g", SUM_TOL, *sum);
    *n = 0;
    for (int i = 0; i < K; i++) {
        if (counts[i] < 0) return sp_fail(err, "stats: counts[%d] is a negative count (%lld)", i, (long long)counts[i]);
        *n += counts[i];
    }
    if (*n == 0) return sp_fail(err, "stats: counts is empty (all %d counts are 0)", K);
    return 0;
}

int stats_gof(const int64_t *counts, const double *probs, int K, stats_method method, double min_expected,
              stats_result *res, sp_error *err) {
    double sum = 0.0;
    int64_t n = 0;
    if (!res) return sp_fail(err, "stats_gof: NULL argument");
    if (check_inputs(counts, probs, K, method, &sum, &n, err)) return -1;
    *res = (stats_result){.n = n};
    double *expected = calloc((size_t)K, sizeof *expected);
    int *group = calloc((size_t)K, sizeof *group);
    if (!expected || !group) abort();

    /* ---- gap 1: expected[i] = n · probs[i] / sum. Every count that fell in
     * a cell of probability 0 adds to res->impossible. ---- */

    /* ---- gap 2: pool the cells with stats_pool_cells(expected, K,
     * min_expected, group), which returns the number of groups G (cells of
     * probability 0 get group −1 and take no part). With G < 2 there is no
     * test: free what you allocated and fail with the message
     *   "stats: only %d cell(s) left after pooling cells with expected count < %g at n = %lld; a test needs 2 (draw
     * more samples)"
     * ---- */

    /* ---- gap 3: observed O[g] and expected E[g] per group; the statistic
     *   Pearson: Σ (O − E)² / E        G: 2 Σ O ln(O / E)   (a cell with O = 0 adds 0 to G)
     * Precision matters for G. The checker's test g_keeps_its_digits_near_the_expectation (suite stats,
     * case reference-values) gives 1000 cells of E = 10⁹ with O = E ± 1 and wants G = 10⁻⁶ to 8 digits.
     * Summed as written, each term O ln(O/E) is about ±1 and the sum of 1000 of them cancels to 10⁻⁶: the
     * rounding of ln(O/E) alone is bigger than the answer. Add −(O − E) to each cell (the added terms sum
     * to 0, since Σ O = Σ E) and write the cell as 2E·f(u) with u = (O − E)/E and
     * f(u) = (1 + u) ln(1 + u) − u ≥ 0 (log1p). Near u = 0 even f cancels: for |u| < 0.1 sum its series
     * f(u) = u²/2 − u³/6 + u⁴/12 − … = Σ_{k≥2} (−1)^k u^k / (k(k − 1)) instead (40 terms are plenty).
     * O = 0 gives f(−1) = 1: the cell adds 2E.
     * res->pooled = the number of cells in the last group when it holds more than one, else 0
     * (with pooling, the rest cell is always the last group); res->min_expected = min over groups of E.
     * ---- */

    /* ---- gap 4: res->statistic (+INFINITY when res->impossible > 0), res->df = G − 1,
     * res->cells = G, res->p_value = gsl_cdf_chisq_Q(statistic, df), or 0 for an infinite statistic. ---- */

    /* ---- end of the gaps ---- */
    (void)method, (void)min_expected, (void)sum, (void)n;
    free(expected), free(group);
    return 0;
}
