/* test_lookup_dist.c — prompt lookup (n-gram drafts with a point-mass q) on the micro model against the target's
 * enumerated law, after a prompt with a repeat so that the first round already drafts. */
#include <check.h>

#include "harness.h"
#include "stat_common.h"

#define LOOKUP_CAP 12000

/* The catalogue's lookup rows (verify_cases.h: k = 2…4, n-grams of 1 and 3, L = 2 and 3, a top-k cut).
 * Exactness does not depend on what the lookup proposes: whatever the drafts, the exact rule accepts each with
 * p(draft) and corrects from p without it. Negative controls: every draft accepted without the p test
 * (min(1, q/p) = 1 for a one-hot q); the correction drawn from p; the residual left unnormalised. Their laws are
 * computed (spec_law with the lookups as the draft rows), so each size is planned: power 0.999 at p < 1e-12,
 * × 1.5. The engine runs the grid's L = 3 row, with its commit slip as control, in test_engine_dist.c. */
START_TEST(test_lookup_follows_the_target) { stat_run_catalogue("lookup", LOOKUP_CAP); }
END_TEST

Suite *lookup_dist_suite(void) {
    Suite *s = suite_create("lookup_dist");
    TCase *tc = harness_tcase("lookup_dist", 240);
    tcase_add_test(tc, test_lookup_follows_the_target);
    suite_add_tcase(s, tc);
    return s;
}
