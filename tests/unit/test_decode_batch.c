/* test_decode_batch.c — the batched round loop (decode_batch.h): every job of a batch gives exactly the tokens
 * decode_run gives it alone (same seed, method and prompt), on the reference and on the CPU engine, with mixed
 * methods, temperatures and budgets in one batch; bad batches are refused with a message naming the sequence. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "batch_jobs.h"
#include "fixtures.h"
#include "harness.h"
#include "reference_target.h"
#include "verify_cases.h"

/* Mixed: MTP sampled and greedy, a draft model, plain sampling; different prompts, budgets and temperatures. */
static const batch_row mixed[BATCH_MAX_JOBS] = {
    {"--method mtp --k 3 --temperature 0.8", {3, 1, 4, 1, 5}, 5, 11},
    {"--method spec --k 2 --temperature 1", {2, 6}, 2, 9},
    {"--method sample --temperature 1", {7}, 1, 6},
    {"--method mtp --k 2 --temperature 0", {0, 2, 4}, 3, 10},
};
/* One sampling for all: one verify call a round. */
static const batch_row shared[3] = {
    {"--method mtp --k 3 --temperature 1", {3, 1, 4, 1, 5}, 5, 10},
    {"--method spec --k 2 --temperature 1", {2, 6}, 2, 10},
    {"--method sample --temperature 1", {7}, 1, 10},
};

/* The models of the world: reference (e == NULL) or engine. */
typedef struct {
    fixture_model t, d;
    decode_target target, draft;
    engine e, ed;
    batch_models bm;
    int on_engine;
} world;

static void world_open(world *w, int on_engine) {
    memset(w, 0, sizeof *w);
    fixture_model_open(&w->t, "micro", 1, verify_world_target_config);
    fixture_model_open(&w->d, "micro-draft", 2, verify_world_draft_config);
    w->on_engine = on_engine;
    if (on_engine) {
        engine_options o = engine_defaults();
        o.f32_weights = 1;
        sp_error err;
        ck_assert_msg(engine_open(&w->e, w->t.dir, &o, &err) == 0, "%s", err.msg);
        ck_assert_msg(engine_open(&w->ed, w->d.dir, &o, &err) == 0, "%s", err.msg);
        engine_target_build(&w->target, &w->e);
        engine_target_build(&w->draft, &w->ed);
        w->bm = (batch_models){&w->target, &w->e, &w->draft, NULL, NULL};
    } else {
        reference_target_build(&w->target, &w->t.m);
        w->bm = (batch_models){&w->target, NULL, NULL, &w->t.m, &w->d.m};
    }
}

static void world_close(world *w) {
    w->target.release(&w->target);
    if (w->on_engine) {
        w->draft.release(&w->draft);
        engine_close(&w->ed);
        engine_close(&w->e);
    }
    fixture_model_close(&w->d);
    fixture_model_close(&w->t);
}

/* rows[0..B) batched against each alone (batch_rows_equal_alone). */
static long batch_equals_alone(world *w, const batch_row *rows, int B, int pass_per_job, decode_batch_options *bo) {
    return batch_rows_equal_alone(&w->bm, w->on_engine ? "engine" : "reference", rows, B, pass_per_job, bo);
}

START_TEST(test_batch_equals_alone_on_the_reference) {
    world w;
    world_open(&w, 0);
    decode_batch_options bo;
    batch_equals_alone(&w, mixed, BATCH_MAX_JOBS, 0, &bo);
    batch_equals_alone(&w, shared, 3, 0, &bo);
    ck_assert_int_eq(bo.passes, bo.rounds); /* one verify call a round: the reference runs it a job at a time */
    world_close(&w);
}
END_TEST

/* The CPU engine in float32 runs one pass over all sequences; the batched pass equals the lone one bit for bit
 * (test_engine_batch.c), so each job's tokens must too. A batch sharing its sampling takes one pass a round. */
START_TEST(test_batch_equals_alone_on_the_engine) {
    world w;
    world_open(&w, 1);
    decode_batch_options bo, each;
    batch_equals_alone(&w, mixed, BATCH_MAX_JOBS, 0, &bo);
    const long rounds = batch_equals_alone(&w, mixed, BATCH_MAX_JOBS, 1, &each);
    ck_assert_int_eq(bo.rounds, each.rounds);
    ck_assert_int_eq(each.passes, rounds); /* a pass a sequence a round */
    ck_assert_int_lt(bo.passes, rounds);   /* three samplings: three calls a round at most, for four sequences */
    batch_equals_alone(&w, shared, 3, 0, &bo);
    ck_assert_int_eq(bo.passes, bo.rounds); /* one sampling: one pass a round over all three sequences */
    ck_assert_int_eq(batch_equals_alone(&w, shared, 3, 1, &each), each.passes);
    world_close(&w);
}
END_TEST

START_TEST(test_bad_batches_are_refused) {
    world w;
    world_open(&w, 0);
    batch_job b[2];
    decode_job jobs[2];
    decode_output out[2];
    decode_batch_options bo = {0, 0, 0};
    sp_error err;
    static const int prompt[2] = {1, 2}, bad[2] = {1, 99};
    batch_job_build(&b[0], &w.bm, "--method mtp --k 2 --temperature 1", prompt, 2, 5, 1, &jobs[0]);
    batch_job_build(&b[1], &w.bm, "--method sample --temperature 1", bad, 2, 5, 2, &jobs[1]);
    ck_assert_int_ne(decode_batch_run(&w.target, jobs, 2, &bo, out, &err), 0);
    ck_assert_msg(strstr(err.msg, "sequence 1 of the batch") && strstr(err.msg, "outside the vocabulary"), "%s",
                  err.msg);
    jobs[1] = jobs[0]; /* the same proposer twice */
    ck_assert_int_ne(decode_batch_run(&w.target, jobs, 2, &bo, out, &err), 0);
    ck_assert_msg(strstr(err.msg, "share one proposer") != NULL, "%s", err.msg);
    ck_assert_int_ne(decode_batch_run(&w.target, jobs, 0, &bo, out, &err), 0);
    ck_assert_msg(strstr(err.msg, "at least one sequence") != NULL, "%s", err.msg);
    batch_job_release(&b[0]);
    batch_job_release(&b[1]);
    world_close(&w);
}
END_TEST

Suite *decode_batch_suite(void) {
    Suite *s = suite_create("decode_batch");
    TCase *tc = harness_tcase("decode_batch", 120);
    tcase_add_test(tc, test_batch_equals_alone_on_the_reference);
    tcase_add_test(tc, test_batch_equals_alone_on_the_engine);
    tcase_add_test(tc, test_bad_batches_are_refused);
    suite_add_tcase(s, tc);
    return s;
}
