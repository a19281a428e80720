/* test_typical_dist.c — Medusa's typical acceptance (accept_typical: p(x) > min(0.09, 0.3·exp(−H(p)))) is fast
 * but not exact, and the test must see both: its bias above temperature 0, its exactness at 0. */
#include <check.h>

#include "harness.h"
#include "stat_common.h"

#define TYPICAL_CAP 12000

/* Above temperature 0 the test must detect the bias (p < 1e-12), while the exact rule on the same drafts, at the
 * same size, passes: so the rejection is the rule's, not the proposer's or the test's. At temperature 0 the rule
 * emits the greedy sequence, a point mass that every draw must hit; its control (the next token drawn one
 * position early) must miss it. Drafts from MTP (argmax) and from the draft model; the sizes are the generic plan
 * (power 0.999 at 1e-12 against w ≥ 0.3). */
START_TEST(test_typical_is_biased_above_zero_and_exact_at_zero) { stat_run_catalogue("typical", TYPICAL_CAP); }
END_TEST

Suite *typical_dist_suite(void) {
    Suite *s = suite_create("typical_dist");
    TCase *tc = harness_tcase("typical_dist", 240);
    tcase_add_test(tc, test_typical_is_biased_above_zero_and_exact_at_zero);
    suite_add_tcase(s, tc);
    return s;
}
