/* test_spec_tree_dist.c — trees of drafts (--tree-shape) from the draft model and from the MTP module, verified by
 * SpecInfer's multi-round rule in one pass, against the target's enumerated law. */
#include <check.h>

#include "harness.h"
#include "stat_common.h"

#define SPEC_TREE_CAP 12000

/* The catalogue's tree rows (verify_cases.h: children drawn i.i.d. or without replacement at every depth; shapes
 * 2,2, 4,1 and 3,1, L = 2 and 3, temperatures 0.5–1, a top-k cut). Negative controls: drafts drawn at half the
 * temperature of the q the rule divides by; children drawn without replacement verified as if i.i.d.; the residual
 * left unnormalised. The law of a tree's control is not computed, so the sizes are the generic plan: power 0.999
 * at p < 1e-12 against w ≥ 0.3. */
START_TEST(test_draft_trees_follow_the_target) { stat_run_catalogue("spec-tree", SPEC_TREE_CAP); }
END_TEST

START_TEST(test_mtp_trees_follow_the_target) { stat_run_catalogue("mtp-tree", SPEC_TREE_CAP); }
END_TEST

Suite *spec_tree_dist_suite(void) {
    Suite *s = suite_create("spec_tree_dist");
    TCase *tc = harness_tcase("spec_tree_dist", 240);
    tcase_add_test(tc, test_draft_trees_follow_the_target);
    tcase_add_test(tc, test_mtp_trees_follow_the_target);
    suite_add_tcase(s, tc);
    return s;
}
