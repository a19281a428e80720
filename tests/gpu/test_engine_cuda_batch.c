/* test_engine_cuda_batch.c — passes over several sequences on the engine's CUDA backend, on the kernels' CPU
 * emulator: a batched pass equals one pass a job. The emulator is slow, so this sits with the GPU suites and
 * runs micro-tied, the smallest model the kernels take. */
#include <check.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "unit/batch_jobs.h"
#include "unit/engine_batch_compare.h"

static engine_options cuda_options(void) {
    engine_options o = engine_defaults();
    o.cuda = 1;
    return o;
}

/* Bit for bit: every product gives each row the bits it gives it alone (kn_matvec.h), and the attention and
 * DeltaNet kernels run once per sequence on exactly the arguments a pass of that sequence alone gives them. */
START_TEST(test_batched_verify_equals_alone) {
    fixture_model m;
    fixture_model_open(&m, "micro-tied", 91, NULL);
    const engine_options o = cuda_options();
    ck_assert_msg(engine_batch_equals_alone(m.dir, &o, PLANT_CROSS_NONE, 1),
                  "cuda: a pass over three sequences differs from one pass each");
    fixture_model_close(&m);
}
END_TEST

/* The negative controls: a sequence attending through another's KV table, a sequence's first node stepping from
 * another's DeltaNet state — the same comparison must tell each apart. */
START_TEST(test_cross_sequence_slips_are_caught) {
    fixture_model m;
    fixture_model_open(&m, "micro-tied", 91, NULL);
    const engine_options o = cuda_options();
    engine_batch_assert_slips_caught(m.dir, &o, "cuda");
    fixture_model_close(&m);
}
END_TEST

/* MTP sampled and greedy, a draft model (on the CPU engine: micro-draft's head_dim is not one the kernels take),
 * plain sampling; different prompts and budgets. Alone, a job whose rule is the exact one accepts on the device
 * (verify_accept); in the batch, its distributions come from the shared pass and accept_exact runs on the host:
 * the same tokens both ways. */
static const batch_row mixed[BATCH_MAX_JOBS] = {
    {"--method mtp --k 3 --temperature 0.8", {3, 1, 4, 1, 5}, 5, 8},
    {"--method spec --k 2 --temperature 1", {2, 6}, 2, 7},
    {"--method sample --temperature 1", {7}, 1, 5},
    {"--method mtp --k 2 --temperature 0", {0, 2, 4}, 3, 7},
};

START_TEST(test_batched_decode_equals_alone) {
    fixture_model tf, df;
    fixture_model_open(&tf, "micro-tied", 92, NULL);
    fixture_model_open(&df, "micro-draft", 93, NULL);
    static engine e, ed; /* large: the engines' tables and buffers */
    const engine_options o = cuda_options(), cpu = engine_defaults();
    sp_error err;
    ck_assert_msg(engine_open(&e, tf.dir, &o, &err) == 0, "%s", err.msg);
    ck_assert_msg(engine_open(&ed, df.dir, &cpu, &err) == 0, "%s", err.msg);
    decode_target target, draft;
    engine_target_build(&target, &e);
    engine_target_build(&draft, &ed);
    const batch_models bm = {&target, &e, &draft, NULL, NULL};
    decode_batch_options bo, each;
    const long rounds = batch_rows_equal_alone(&bm, "cuda engine", mixed, BATCH_MAX_JOBS, 0, &bo);
    ck_assert_int_lt(bo.passes, rounds); /* three samplings: at most three calls a round, for four sequences */
    batch_rows_equal_alone(&bm, "cuda engine, a pass a job", mixed, BATCH_MAX_JOBS, 1, &each);
    ck_assert_int_eq(each.passes, rounds);
    draft.release(&draft);
    target.release(&target);
    engine_close(&ed);
    engine_close(&e);
    fixture_model_close(&df);
    fixture_model_close(&tf);
}
END_TEST

Suite *engine_cuda_batch_suite(void) {
    Suite *s = suite_create("engine_cuda_batch");
    TCase *tc = harness_tcase("batched passes", 240);
    tcase_add_test(tc, test_batched_verify_equals_alone);
    tcase_add_test(tc, test_cross_sequence_slips_are_caught);
    tcase_add_test(tc, test_batched_decode_equals_alone);
    suite_add_tcase(s, tc);
    return s;
}
