/* test_engine_batch.c — a verify pass over several sequences on the CPU engine (engine_target.c) against the same
 * jobs verified one pass each: raw logits, processed distributions and hidden states equal bit for bit. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "engine_batch_compare.h"
#include "fixtures.h"
#include "harness.h"

/* A chain and trees, sequences at different positions, round after round (a commit leaves each sequence as if it
 * had run alone). Bit equality is the contract, not a tolerance: the CPU products give each row the same bits
 * whatever the rows beside it (cpu/gemm.h), and the cores compute each node alone. */
START_TEST(test_batched_verify_equals_alone) {
    fixture_model m;
    fixture_model_open(&m, "micro", 71, NULL);
    engine_options o = engine_defaults();
    o.threads = 1 + _i; /* 2: the DeltaNet core's channel ranges and heads on two threads */
    ck_assert_msg(engine_batch_equals_alone(m.dir, &o, PLANT_CROSS_NONE, 1),
                  "%d threads: a pass over three sequences differs from one pass each", o.threads);
    fixture_model_close(&m);
}
END_TEST

/* A backend without multi_seq gets one pass a job (engine_target.c's fallback), with the same rows. */
START_TEST(test_one_pass_a_job_without_multi_seq) {
    fixture_model m;
    fixture_model_open(&m, "micro", 72, NULL);
    const engine_options o = engine_defaults();
    ck_assert(engine_batch_equals_alone(m.dir, &o, PLANT_CROSS_NONE, 0));
    fixture_model_close(&m);
}
END_TEST

/* Negative controls: the same comparison catches a node seeing another sequence's keys and values, and a node
 * stepping from another sequence's DeltaNet state. */
START_TEST(test_cross_sequence_slips_are_caught) {
    fixture_model m;
    fixture_model_open(&m, "micro", 71, NULL);
    const engine_options o = engine_defaults();
    engine_batch_assert_slips_caught(m.dir, &o, "cpu");
    fixture_model_close(&m);
}
END_TEST

Suite *engine_batch_suite(void) {
    Suite *s = suite_create("engine-batch");
    TCase *tc = harness_tcase("batched verify", 60);
    tcase_add_loop_test(tc, test_batched_verify_equals_alone, 0, 2); /* 1 and 2 threads */
    tcase_add_test(tc, test_one_pass_a_job_without_multi_seq);
    tcase_add_test(tc, test_cross_sequence_slips_are_caught);
    suite_add_tcase(s, tc);
    return s;
}
