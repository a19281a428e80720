/* test_medusa_dist.c — Medusa with the exact rule (SpecInfer-style multi-round rejection over up to eight
 * siblings of a 12-node tree) against the target's enumerated law. Typical acceptance on Medusa's top-ranked
 * candidates is in test_typical_dist.c. */
#include <check.h>

#include "harness.h"
#include "stat_common.h"

#define MEDUSA_CAP 12000

/* The catalogue's Medusa rows (verify_cases.h: children drawn i.i.d. or without replacement from each head's
 * processed distribution; L = 2 and 3, temperatures 0.8–1.2, top-k and top-p). Negative controls: drafts drawn
 * at half the temperature of the q the rule divides by; children drawn without replacement verified as if
 * i.i.d.; the residual left unnormalised (which, in a tree, also loosens the next sibling's test). The sizes are
 * the generic plan: power 0.999 at p < 1e-12 against w ≥ 0.3. */
START_TEST(test_medusa_follows_the_target) { stat_run_catalogue("medusa", MEDUSA_CAP); }
END_TEST

Suite *medusa_dist_suite(void) {
    Suite *s = suite_create("medusa_dist");
    TCase *tc = harness_tcase("medusa_dist", 240);
    tcase_add_test(tc, test_medusa_follows_the_target);
    suite_add_tcase(s, tc);
    return s;
}
