/* test_decode_batch.c — the batched round loop (decode_batch.h): every job
 * of a batch gives exactly the tokens decode_run gives it alone (same seed,
 * same method, same prompt), on the reference (one pass a sequence) and on
 * the CPU engine in float32 (one pass over all sequences; the batched pass
 * equals the lone one bit for bit, test_engine_batch.c), with mixed
 * methods, temperatures and budgets in one batch; each job's stream gets
 * its own tokens; a batch sharing its sampling takes one verify call a
 * round; bad batches are refused with a message naming the sequence. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "batch_jobs.h"
#include "fixtures.h"
#include "harness.h"
#include "reference_target.h"
#include "verify_cases.h"

#define MAX_JOBS 4

typedef struct {
    const char *flags;
    int prompt[5], n, tokens;
} job_row;

/* Mixed: MTP sampled and greedy, a draft model, plain sampling; different prompts, budgets and temperatures. */
static const job_row mixed[MAX_JOBS] = {
    {"--method mtp --k 3 --temperature 0.8", {3, 1, 4, 1, 5}, 5, 11},
    {"--method spec --k 2 --temperature 1", {2, 6}, 2, 9},
    {"--method sample --temperature 1", {7}, 1, 6},
    {"--method mtp --k 2 --temperature 0", {0, 2, 4}, 3, 10},
};
/* One sampling for all: one verify call a round. */
static const job_row shared[3] = {
    {"--method mtp --k 3 --temperature 1", {3, 1, 4, 1, 5}, 5, 10},
    {"--method spec --k 2 --temperature 1", {2, 6}, 2, 10},
    {"--method sample --temperature 1", {7}, 1, 10},
};

/* A job's stream, collected. */
typedef struct {
    int tokens[64], n;
} stream;

static void collect(const int *tokens, int n, void *user) {
    stream *s = user;
    for (int i = 0; i < n && s->n < 64; i++) s->tokens[s->n++] = tokens[i];
}

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

/* rows[0..B) batched (pass_per_job as given) against each alone through decode_run: equal tokens, streams equal
 * to the outputs. *bo: the batch's counts. Returns the rounds of the jobs, summed. */
static long batch_equals_alone(world *w, const job_row *rows, int B, int pass_per_job, decode_batch_options *bo) {
    batch_job built[MAX_JOBS];
    decode_job jobs[MAX_JOBS];
    decode_output out[MAX_JOBS];
    stream streams[MAX_JOBS];
    sp_error err;
    for (int j = 0; j < B; j++) {
        batch_job_build(&built[j], &w->bm, rows[j].flags, rows[j].prompt, rows[j].n, rows[j].tokens, 40 + j, &jobs[j]);
        streams[j].n = 0;
        jobs[j].opt.on_commit = collect;
        jobs[j].opt.user = &streams[j];
    }
    bo->pass_per_job = pass_per_job;
    ck_assert_msg(decode_batch_run(&w->target, jobs, B, bo, out, &err) == 0, "%s", err.msg);
    for (int j = 0; j < B; j++) batch_job_release(&built[j]);
    long rounds = 0;
    for (int j = 0; j < B; j++) {
        batch_job alone;
        decode_job job;
        decode_output a;
        batch_job_build(&alone, &w->bm, rows[j].flags, rows[j].prompt, rows[j].n, rows[j].tokens, 40 + j, &job);
        ck_assert_msg(decode_run(&w->target, job.prop, job.prompt, job.n_prompt, &job.opt, &a, &err) == 0, "%s",
                      err.msg);
        batch_job_release(&alone);
        ck_assert_int_eq(out[j].n, rows[j].tokens);
        ck_assert_int_eq(a.n, out[j].n);
        for (int i = 0; i < a.n; i++)
            ck_assert_msg(a.tokens[i] == out[j].tokens[i], "%s (%s): token %d is %d in the batch, %d alone",
                          rows[j].flags, w->on_engine ? "engine" : "reference", i, out[j].tokens[i], a.tokens[i]);
        ck_assert_int_eq(a.acc.committed, out[j].acc.committed);
        rounds += out[j].acc.target_passes; /* its rounds: one verify pass each */
        ck_assert_int_eq(streams[j].n, out[j].n);
        ck_assert(memcmp(streams[j].tokens, out[j].tokens, (size_t)out[j].n * sizeof(int)) == 0);
        decode_output_free(&a);
        decode_output_free(&out[j]);
    }
    return rounds;
}

START_TEST(test_batch_equals_alone_on_the_reference) {
    world w;
    world_open(&w, 0);
    decode_batch_options bo;
    batch_equals_alone(&w, mixed, MAX_JOBS, 0, &bo);
    batch_equals_alone(&w, shared, 3, 0, &bo);
    ck_assert_int_eq(bo.passes, bo.rounds); /* one verify call a round: the reference runs it a job at a time */
    world_close(&w);
}
END_TEST

START_TEST(test_batch_equals_alone_on_the_engine) {
    world w;
    world_open(&w, 1);
    decode_batch_options bo, each;
    batch_equals_alone(&w, mixed, MAX_JOBS, 0, &bo);
    const long rounds = batch_equals_alone(&w, mixed, MAX_JOBS, 1, &each);
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
