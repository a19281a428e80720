/* test_mtp_dist.c — MTP self-speculation, argmax drafts (q one-hot) and sampled drafts, on the micro model's own
 * MTP layer against the target's enumerated law. */
#include <check.h>

#include "harness.h"
#include "stat_common.h"

#define MTP_CAP 12000

/* The catalogue's MTP rows (verify_cases.h: k = 2…4, L = 2 and 3, top-k and top-p). Negative controls: argmax
 * drafts with the correction drawn from p (which may return the rejected draft); sampled drafts drawn at half the
 * temperature of the q the rule divides by. Their laws are not computed here (the drafts depend on the MTP's own
 * chained state), so the size is the generic plan: power 0.999 at p < 1e-12 against any alternative with
 * w ≥ 0.3. */
START_TEST(test_mtp_follows_the_target) { stat_run_catalogue("mtp", MTP_CAP); }
END_TEST

Suite *mtp_dist_suite(void) {
    Suite *s = suite_create("mtp_dist");
    TCase *tc = harness_tcase("mtp_dist", 240);
    tcase_add_test(tc, test_mtp_follows_the_target);
    suite_add_tcase(s, tc);
    return s;
}
