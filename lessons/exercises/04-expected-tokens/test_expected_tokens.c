/* test_expected_tokens.c — exercise 4's checks: E(alpha, k) against the
 * sum it comes from, and both formulas against simulated rounds with a
 * known alpha (Philox uniforms, fixed seed). */
#include <check.h>
#include <math.h>

#include "accounting.h"
#include "harness.h"
#include "sampler.h"

/* E(alpha, k) = 1 + alpha + … + alpha^k: token j of the block is committed
 * exactly when the first j drafts were accepted (probability alpha^j), plus
 * the pass's own token. */
START_TEST(test_formula_is_the_geometric_sum) {
    for (int k = 0; k <= 8; k++)
        for (double alpha = 0.0; alpha <= 1.0; alpha += 0.125) {
            double sum = 0, power = 1;
            for (int j = 0; j <= k; j++, power *= alpha) sum += power;
            ck_assert_msg(fabs(expected_tokens_per_pass(alpha, k) - sum) < 1e-12, "alpha %.3f k %d: %.12f, want %.12f",
                          alpha, k, expected_tokens_per_pass(alpha, k), sum);
        }
}
END_TEST

enum { ROUNDS = 40000 };

/* ROUNDS simulated rounds of depth k with i.i.d. acceptance alpha. */
static void simulate(double alpha, int k, uint64_t seed, run_accounting *a) {
    accounting_init(a, "simulated", k, 1.0, 0.0);
    for (uint64_t r = 0; r < ROUNDS; r++) {
        int accepted = 0;
        while (accepted < k) {
            rng_site s = {seed, RNG_TEST, r * 64 + (uint64_t)accepted};
            if (!(rng_uniform(s) < alpha)) break;
            accepted++;
        }
        accounting_round(a, k, accepted, accepted + 1, accepted < k);
    }
}

/* Tolerances: the observed tokens per pass is a mean of ROUNDS values in
 * [1, k+1] whose standard deviation is at most 1.97 for these (alpha, k)
 * (alpha 0.8, k 5), so its standard error is below 0.01; 0.04 is four of
 * them. alpha-hat pools at least ROUNDS Bernoulli trials: standard error
 * below 0.0025; 0.012 is more than four. */
START_TEST(test_simulated_runs) {
    static const double alphas[] = {0.3, 0.6, 0.8, 0.9};
    static const int ks[] = {1, 3, 5};
    for (unsigned i = 0; i < sizeof alphas / sizeof *alphas; i++)
        for (unsigned j = 0; j < sizeof ks / sizeof *ks; j++) {
            run_accounting a;
            simulate(alphas[i], ks[j], 100 + i * 10 + j, &a);
            double observed = accounting_tokens_per_pass(&a), want = expected_tokens_per_pass(alphas[i], ks[j]);
            ck_assert_msg(fabs(observed - want) < 0.04, "alpha %.2f k %d: observed %.4f tokens/pass, E = %.4f",
                          alphas[i], ks[j], observed, want);
            double est = accounting_alpha(&a);
            ck_assert_msg(fabs(est - alphas[i]) < 0.012, "alpha %.2f k %d: estimate %.4f", alphas[i], ks[j], est);
        }
}
END_TEST

START_TEST(test_nothing_recorded) {
    run_accounting a;
    accounting_init(&a, "plain", 0, 1.0, 0.0);
    accounting_round(&a, 0, 0, 1, 0);
    ck_assert(isnan(accounting_alpha(&a)));
    accounting_init(&a, "all accepted", 2, 1.0, 0.0);
    accounting_round(&a, 2, 2, 3, 0);
    ck_assert_double_eq(accounting_alpha(&a), 1.0);
}
END_TEST

Suite *exercise_expected_tokens_suite(void) {
    Suite *s = suite_create("exercise_expected_tokens");
    TCase *tc = harness_tcase("formula", 30);
    tcase_add_test(tc, test_formula_is_the_geometric_sum);
    tcase_add_test(tc, test_simulated_runs);
    tcase_add_test(tc, test_nothing_recorded);
    suite_add_tcase(s, tc);
    return s;
}
