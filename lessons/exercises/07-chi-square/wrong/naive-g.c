/* A wrong solution to exercise 7; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: G as the textbook 2 Σ O ln(O/E), whose terms cancel near the expectation and lose its digits.
 * Caught by: stats */
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
    for (int i = 0; i < K; i++) {
        expected[i] = (double)n * probs[i] / sum;
        if (probs[i] == 0.0) res->impossible += counts[i];
    }
    const int G = stats_pool_cells(expected, K, min_expected, group);
    if (G < 2) {
        free(expected), free(group);
        return sp_fail(err,
                       "stats: only %d cell(s) left after pooling cells with expected count < %g at n = %lld; "
                       "a test needs 2 (draw more samples)",
                       G, min_expected, (long long)n);
    }
    double *O = calloc((size_t)G, sizeof *O), *E = calloc((size_t)G, sizeof *E);
    if (!O || !E) abort();
    int rest = 0;
    for (int i = 0; i < K; i++) {
        if (group[i] < 0) continue;
        O[group[i]] += (double)counts[i];
        E[group[i]] += expected[i];
        rest += group[i] == G - 1;
    }
    res->pooled = rest > 1 ? rest : 0;
    res->min_expected = INFINITY;
    double stat = 0.0;
    for (int g = 0; g < G; g++) {
        if (method == STATS_PEARSON)
            stat += (O[g] - E[g]) * (O[g] - E[g]) / E[g];
        else if (O[g] > 0)
            stat += 2.0 * O[g] * log(O[g] / E[g]); /* the textbook form: its terms cancel */
        if (E[g] < res->min_expected) res->min_expected = E[g];
    }
    res->statistic = res->impossible > 0 ? INFINITY : stat;
    res->df = G - 1;
    res->cells = G;
    res->p_value = isinf(res->statistic) ? 0.0 : gsl_cdf_chisq_Q(res->statistic, res->df);
    free(expected), free(group), free(O), free(E);
    return 0;
}
