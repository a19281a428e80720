/* test_expected_tokens.c — exercise 4's checks: E(alpha, k) against the
 * sum it comes from, both formulas against simulated rounds with a known
 * alpha (Philox uniforms, fixed seed), and alpha-hat on runs whose rounds do
 * not all end at depth k or at a rejection: Medusa trees whose accepted path
 * ends at a shallow leaf, and rounds cut short by the token budget.
 *
 * Wrong solutions this checker must reject (wrong/, run by
 * tests/parts/exercises.sh):
 *   rounds-minus-full.c   rejections = rounds − length_hist[k] (caught by
 *                         test_rounds_without_a_rejection and the next)
 *   per-proposed-token.c  alpha = accepted / proposed tokens
 *   closed-form-only.c    E(alpha, k) without the alpha = 1 case
 *   accepted-total.c      accepted tokens read from accepted_total, which
 *                         leaves out those an EOS kept from being emitted */
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

/* How a round's proposal ends when nothing is rejected. FULL: at depth k.
 * SHALLOW: a Medusa tree of depth k whose accepted path runs into a leaf at
 * depth 1 + (round mod k): the round ends with a bonus token after fewer than
 * k acceptances, and no rejection. BUDGET: requests of BUDGET tokens; a round
 * proposes at most (tokens left − 1), none when one is left, as decode_run
 * does. */
typedef enum { FULL, SHALLOW, BUDGET } run_shape;
enum { BUDGET_TOKENS = 7 };

/* `rounds` simulated rounds of depth k with i.i.d. acceptance alpha. */
static void simulate(double alpha, int k, uint64_t seed, run_shape shape, long rounds, run_accounting *a) {
    accounting_init(a, "simulated", k, 1.0, 0.0);
    int left = BUDGET_TOKENS;
    for (uint64_t r = 0; r < (uint64_t)rounds; r++) {
        int depth = k, leaf = k; /* the tree's depth; where the path can end */
        if (shape == SHALLOW) leaf = 1 + (int)(r % (uint64_t)k);
        if (shape == BUDGET && left - 1 < k) depth = leaf = left - 1;
        int accepted = 0;
        while (accepted < leaf) {
            rng_site s = {seed, RNG_TEST, r * 64 + (uint64_t)accepted};
            if (!(rng_uniform(s) < alpha)) break;
            accepted++;
        }
        int committed = accepted + 1;
        if (shape == BUDGET) {
            if (committed > left) committed = left;
            left = left - committed > 0 ? left - committed : BUDGET_TOKENS; /* the next request */
        }
        accounting_round(a, depth, accepted, committed, accepted < leaf);
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
            simulate(alphas[i], ks[j], 100 + i * 10 + j, FULL, ROUNDS, &a);
            double observed = accounting_tokens_per_pass(&a), want = expected_tokens_per_pass(alphas[i], ks[j]);
            ck_assert_msg(fabs(observed - want) < 0.04, "alpha %.2f k %d: observed %.4f tokens/pass, E = %.4f",
                          alphas[i], ks[j], observed, want);
            double est = accounting_alpha(&a);
            ck_assert_msg(fabs(est - alphas[i]) < 0.012, "alpha %.2f k %d: estimate %.4f", alphas[i], ks[j], est);
        }
}
END_TEST

/* Rounds that end without a rejection below depth k — a shallow Medusa
 * leaf, a proposal the token budget cut short, a last round with nothing
 * proposed — are not rejections: alpha-hat must still find alpha. Each run
 * pools at least ROUNDS Bernoulli trials (asserted), so the tolerance of
 * test_simulated_runs applies. */
START_TEST(test_rounds_without_a_rejection) {
    static const double alphas[] = {0.3, 0.8};
    static const int ks[] = {3, 5};
    static const run_shape shapes[] = {SHALLOW, BUDGET};
    for (unsigned i = 0; i < 2; i++)
        for (unsigned j = 0; j < 2; j++)
            for (unsigned h = 0; h < 2; h++) {
                run_accounting a;
                simulate(alphas[i], ks[j], 200 + i * 10 + j * 2 + h, shapes[h], 2 * ROUNDS, &a);
                long trials = a.rejected_rounds;
                for (int d = 1; d <= ACC_MAX_DEPTH; d++) trials += a.accepted[d];
                ck_assert_int_ge(trials, ROUNDS);
                double est = accounting_alpha(&a);
                ck_assert_msg(fabs(est - alphas[i]) < 0.012, "%s run, alpha %.2f k %d: estimate %.4f",
                              shapes[h] == SHALLOW ? "Medusa (shallow leaves)" : "token budget", alphas[i], ks[j], est);
            }
}
END_TEST

/* The same by hand, k = 3: 10 rounds accept 1 token and are rejected at
 * depth 2; 10 accept 1 token and reach a leaf at depth 1 (no rejection);
 * 5 have their proposal cut to depth 2 by the budget and accept both; one
 * accepts all 3 but commits 1 (its first token is EOS: accepted, though the
 * rest is never emitted); the last proposes nothing. 33 tokens accepted,
 * 10 rejections. */
START_TEST(test_rejections_by_hand) {
    run_accounting a;
    accounting_init(&a, "medusa", 3, 1.0, 0.0);
    for (int r = 0; r < 10; r++) accounting_round(&a, 3, 1, 2, 1);
    for (int r = 0; r < 10; r++) accounting_round(&a, 3, 1, 2, 0);
    for (int r = 0; r < 5; r++) accounting_round(&a, 2, 2, 3, 0);
    accounting_round(&a, 3, 3, 1, 0);
    accounting_round(&a, 0, 0, 1, 0);
    ck_assert_msg(fabs(accounting_alpha(&a) - 33.0 / 43.0) < 1e-12,
                  "alpha-hat %.6f, want 33/43 = %.6f: 33 tokens accepted (EOS cut one round's burst, not its "
                  "acceptances), and only the 10 rounds that ended at a rejected token are rejections",
                  accounting_alpha(&a), 33.0 / 43.0);
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
    tcase_add_test(tc, test_rounds_without_a_rejection);
    tcase_add_test(tc, test_rejections_by_hand);
    tcase_add_test(tc, test_nothing_recorded);
    suite_add_tcase(s, tc);
    return s;
}
