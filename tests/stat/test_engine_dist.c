/* test_engine_dist.c — the CPU engine's output distributions: the reference's catalogue cases (verify_cases.h)
 * run through the engine's target and steppers, against the target's enumerated law. */
#include <check.h>

#include "harness.h"
#include "stat_common.h"

#define ENGINE_CAP 12000

/* The cases run through the engine's target, its MTP stepper, a stepper over an engine draft (as a chain and as a
 * tree) and the prompt-lookup proposer. The windows are three tokens long, so each draw crosses at least one commit
 * after a verify pass. The negative controls plant a slip in that commit (a chain or a draft tree keeping its
 * parent's DeltaNet state, a Medusa tree leaving a rejected sibling's keys and values on the committed path) and
 * must be rejected at the same size. Plain sampling keeps its own control (sampled at 1.5× the temperature). The
 * dynamic trees (--tree-budget) are the catalogue's two-token windows, so their control is the catalogue's own
 * (children verified against the wrong q), run on the engine. */
START_TEST(test_engine_follows_the_target) {
    static const char *const cases[] = {"sample T=1",
                                        "spec k=2 T=1",
                                        "mtp sampled k=3 T=1",
                                        "mtp argmax k=4 T=0.8 top-p 0.9",
                                        "medusa iid T=1 top-k 5",
                                        "medusa without replacement T=1.2 top-p 0.9",
                                        "lookup k=2 ngram 1 T=1",
                                        "spec tree 3,1 without replacement T=1 top-k 5",
                                        "spec tree dynamic depth 3 budget 6 T=0.8",
                                        "mtp tree dynamic depth 3 budget 6 iid T=0.6",
                                        NULL};
    stat_run_on_engine(cases, ENGINE_CAP);
}
END_TEST

Suite *engine_dist_suite(void) {
    Suite *s = suite_create("engine_dist");
    TCase *tc = harness_tcase("engine_dist", 300);
    tcase_add_test(tc, test_engine_follows_the_target);
    suite_add_tcase(s, tc);
    return s;
}
