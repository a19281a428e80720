/* test_spec_dist.c — plain sampling and draft-model speculative sampling on micro models against the target's
 * enumerated law. */
#include <check.h>

#include "harness.h"
#include "stat_common.h"

/* The catalogue's rows (verify_cases.h: k = 1…4, L = 2 and 3, temperatures
 * 0.6–1.2, top-k and top-p cuts, a budget that cuts the proposal short, and
 * the two-sample comparison with plain sampling). Each case's negative
 * control (drafts drawn at half the temperature of the q the rule divides
 * by; for plain sampling, the sampler at a wrong temperature) has an exact
 * law (spec_law), from which the case's size is planned: power 0.999 at
 * p < 1e-12, × 1.5. The planned sizes: sample T=0.8 1 000; spec k=3 T=0.8
 * 2 500; sample T=1 2 500; sample T=0.7 top-k 4 2 500; spec k=1 6 500;
 * spec k=2 3 500; k=3 top-k 2 000; k=4 top-p 3 500; k=4 budget 2 4 500;
 * the two-sample rows as their one-sample twins (docs/verification.md). */
#define SPEC_CAP 10000

START_TEST(test_plain_sampling_follows_the_target) { stat_run_catalogue("sample", SPEC_CAP); }
END_TEST

START_TEST(test_speculative_sampling_follows_the_target) { stat_run_catalogue("spec", SPEC_CAP); }
END_TEST

Suite *spec_dist_suite(void) {
    Suite *s = suite_create("spec_dist");
    TCase *tc = harness_tcase("spec_dist", 240);
    tcase_add_test(tc, test_plain_sampling_follows_the_target);
    tcase_add_test(tc, test_speculative_sampling_follows_the_target);
    suite_add_tcase(s, tc);
    return s;
}
