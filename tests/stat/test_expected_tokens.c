/* test_expected_tokens.c — E(α,k) = (1 − α^{k+1})/(1 − α), the expected tokens per target pass when each of k
 * drafts is accepted independently with probability α, against a Monte Carlo of exactly that model fed through
 * the run accounting (accounting_round → tokens per pass and α̂). */
#include <check.h>
#include <gsl/gsl_cdf.h>
#include <math.h>

#include "accounting.h"
#include "harness.h"
#include "sampler.h"
#include "stat_common.h"

static const double alphas[] = {0.1, 0.3, 0.5, 0.7, 0.9, 0.99};
static const int ks[] = {1, 2, 3, 4, 8};
#define N_ALPHA ((int)(sizeof alphas / sizeof alphas[0]))
#define N_K ((int)(sizeof ks / sizeof ks[0]))

/* Mean and variance of tokens per pass under the model (bug = 0) or the
 * slip (bug = 1): j accepted with P(j) = α^j (1 − α) for j < k, α^k for j = k;
 * tokens = j + 1, or with the slip j + 2 when a rejection ended the round. */
static void moments(double alpha, int k, int bug, double *mean, double *var) {
    double m = 0, m2 = 0;
    for (int j = 0; j <= k; j++) {
        double pj = pow(alpha, j) * (j < k ? 1 - alpha : 1);
        double tokens = j + 1 + (bug && j < k);
        m += pj * tokens;
        m2 += pj * tokens * tokens;
    }
    *mean = m;
    *var = m2 - m * m;
}

/* R rounds through the accounting; returns tokens per pass, fills α̂. */
static double simulate(double alpha, int k, int bug, long rounds, uint64_t seed, double *alpha_hat) {
    run_accounting a;
    accounting_init(&a, "iid", k, 0, 0);
    for (long r = 0; r < rounds; r++) {
        int j = 0;
        while (j < k) {
            rng_site s = {seed, RNG_TEST, (uint64_t)r * 64 + (uint64_t)j};
            if (!(rng_uniform(s) < alpha)) break;
            j++;
        }
        int rejected = j < k;
        if (bug && rejected) /* the slip: the rejected draft is counted as accepted */
            accounting_round(&a, k, j + 1, j + 2, 1);
        else
            accounting_round(&a, k, j, j + 1, rejected);
    }
    *alpha_hat = accounting_alpha(&a);
    return accounting_tokens_per_pass(&a);
}

START_TEST(test_formula_edges) {
    ck_assert_double_eq_tol(expected_tokens_per_pass(0.0, 4), 1.0, 1e-15);
    ck_assert_double_eq_tol(expected_tokens_per_pass(1.0, 4), 5.0, 1e-15);
    ck_assert_double_eq_tol(expected_tokens_per_pass(0.5, 1), 1.5, 1e-15);
    ck_assert_double_eq_tol(expected_tokens_per_pass(0.5, 3), 1.875, 1e-15);
    for (int ai = 0; ai < N_ALPHA; ai++)
        for (int ki = 0; ki < N_K; ki++) {
            double mean, var;
            moments(alphas[ai], ks[ki], 0, &mean, &var);
            ck_assert_double_eq_tol(mean, expected_tokens_per_pass(alphas[ai], ks[ki]), 1e-12);
        }
}
END_TEST

/* Every point of the grid must fall inside a simultaneous 99.9 % interval
 * (Bonferroni over the grid). The negative control is the same simulation
 * with the classic bookkeeping slip of counting the rejected draft as
 * accepted, which adds 1 − α^k tokens per pass: it must fall outside at
 * p < 1e-12 with the same number of rounds.
 * Rounds per point: the control must fall outside the p < 1e-12 band with
 * power 0.999, i.e. √R ≥ (z_c σ0 + z_β σ1) / (1 − α^k), × 1.5, with
 * z_c = 7.13 (two-sided 1e-12), z_β = 3.09, σ0 and σ1 the exact standard
 * deviations of tokens per pass without and with the slip. The slip is
 * smallest against the spread at α = 0.99: 7 600 rounds at k = 1 (it adds
 * 0.01), 44 600 at k = 8 (it adds 0.077 against σ0 = 1.37); 138 800
 * rounds over the grid, each control the same again. */
START_TEST(test_monte_carlo_matches_formula) {
    const int m = N_ALPHA * N_K;
    const double z_pass = gsl_cdf_ugaussian_Qinv(0.0005 / m); /* simultaneous 99.9 % */
    const double z_control = gsl_cdf_ugaussian_Qinv(STAT_CONTROL_P / 2);
    const double z_power = gsl_cdf_ugaussian_Qinv(1 - STAT_PLAN_POWER);
    long total_rounds = 0;
    for (int ai = 0; ai < N_ALPHA; ai++)
        for (int ki = 0; ki < N_K; ki++) {
            const double alpha = alphas[ai];
            const int k = ks[ki];
            double e = expected_tokens_per_pass(alpha, k), mean0, var0, mean1, var1;
            moments(alpha, k, 0, &mean0, &var0);
            moments(alpha, k, 1, &mean1, &var1);
            double root = (z_control * sqrt(var0) + z_power * sqrt(var1)) / (mean1 - mean0);
            long rounds = (long)ceil(STAT_PLAN_MARGIN * root * root / 100.0) * 100;
            if (rounds < 1000) rounds = 1000;
            total_rounds += rounds;
            const double se = sqrt(var0 / (double)rounds);
            const uint64_t seed = 500 + (uint64_t)(ai * N_K + ki);

            double alpha_hat, observed = simulate(alpha, k, 0, rounds, seed, &alpha_hat);
            ck_assert_msg(fabs(observed - e) <= z_pass * se,
                          "alpha %.2f, k %d: %.5f tokens per pass over %ld rounds, E = %.5f (z = %.2f, limit %.2f)",
                          alpha, k, observed, rounds, e, (observed - e) / se, z_pass);
            /* α̂ is a proportion of Bernoulli(α) trials: at least `rounds` of them */
            double alpha_se = sqrt(alpha * (1 - alpha) / (double)rounds);
            ck_assert_msg(fabs(alpha_hat - alpha) <= z_pass * alpha_se, "alpha %.2f, k %d: alpha estimate %.5f", alpha,
                          k, alpha_hat);

            double ignored, slipped = simulate(alpha, k, 1, rounds, seed + 1000, &ignored);
            double z = (slipped - e) / se;
            ck_assert_msg(fabs(z) > z_control,
                          "alpha %.2f, k %d: the slip gives %.5f tokens per pass, only z = %.2f from E = %.5f", alpha,
                          k, slipped, z, e);
        }
    ck_assert_int_lt(total_rounds, 200000); /* the time budget: a fraction of a second */
}
END_TEST

Suite *expected_tokens_suite(void) {
    Suite *s = suite_create("expected_tokens");
    TCase *tc = harness_tcase("expected_tokens", 60);
    tcase_add_test(tc, test_formula_edges);
    tcase_add_test(tc, test_monte_carlo_matches_formula);
    suite_add_tcase(s, tc);
    return s;
}
