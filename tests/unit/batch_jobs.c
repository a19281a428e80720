/* batch_jobs.c — one sequence's method for the batched-loop tests, and a batch against its jobs alone
 * (batch_jobs.h). */
#include "batch_jobs.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "reference_target.h"
#include "target_stepper.h"
#include "registry.h"

void batch_job_build(batch_job *b, const batch_models *bm, const char *flags, const int *prompt, int n, int tokens,
                     uint64_t seed, decode_job *job) {
    memset(b, 0, sizeof *b);
    method_spec s = fixture_spec(flags);
    s.max_tokens = tokens;
    s.stop_at_eos = 0;
    s.seed = seed;
    method_parts parts = {bm->target, NULL, NULL, NULL};
    sp_error err;
    if (method_has(&s, METHOD_MTP_MODULE)) {
        const int rc = bm->e ? engine_mtp_stepper_build(&b->st, bm->e, &err)
                             : reference_mtp_stepper_build(&b->st, bm->target_model, &err);
        ck_assert_msg(rc == 0, "%s", err.msg);
        parts.mtp = &b->st;
        b->have_st = 1;
    } else if (method_has(&s, METHOD_DRAFT_MODEL)) {
        if (bm->e)
            ck_assert_msg(target_stepper_build(&b->st, bm->draft, &err) == 0, "%s", err.msg);
        else
            reference_draft_stepper_build(&b->st, bm->draft_model);
        parts.draft = &b->st;
        b->have_st = 1;
    }
    ck_assert_msg(method_build(&b->m, &s, &parts, &err) == 0, "%s: %s", flags, err.msg);
    *job = (decode_job){b->m.proposer, prompt, n, b->m.options};
}

void batch_job_release(batch_job *b) {
    method_release(&b->m);
    if (b->have_st) b->st.release(&b->st);
}

/* A job's stream, collected. */
typedef struct {
    int tokens[64], n;
} stream;

static void collect(const int *tokens, int n, void *user) {
    stream *s = user;
    for (int i = 0; i < n && s->n < 64; i++) s->tokens[s->n++] = tokens[i];
}

long batch_rows_equal_alone(const batch_models *bm, const char *where, const batch_row *rows, int B, int pass_per_job,
                            decode_batch_options *bo) {
    batch_job built[BATCH_MAX_JOBS];
    decode_job jobs[BATCH_MAX_JOBS];
    decode_output out[BATCH_MAX_JOBS];
    stream streams[BATCH_MAX_JOBS];
    sp_error err;
    for (int j = 0; j < B; j++) {
        batch_job_build(&built[j], bm, rows[j].flags, rows[j].prompt, rows[j].n, rows[j].tokens, 40 + j, &jobs[j]);
        streams[j].n = 0;
        jobs[j].opt.on_commit = collect;
        jobs[j].opt.user = &streams[j];
    }
    bo->pass_per_job = pass_per_job;
    ck_assert_msg(decode_batch_run(bm->target, jobs, B, bo, out, &err) == 0, "%s", err.msg);
    for (int j = 0; j < B; j++) batch_job_release(&built[j]);
    long rounds = 0;
    for (int j = 0; j < B; j++) {
        batch_job alone;
        decode_job job;
        decode_output a;
        batch_job_build(&alone, bm, rows[j].flags, rows[j].prompt, rows[j].n, rows[j].tokens, 40 + j, &job);
        ck_assert_msg(decode_run(bm->target, job.prop, job.prompt, job.n_prompt, &job.opt, &a, &err) == 0, "%s",
                      err.msg);
        batch_job_release(&alone);
        ck_assert_int_eq(out[j].n, rows[j].tokens);
        ck_assert_int_eq(a.n, out[j].n);
        for (int i = 0; i < a.n; i++)
            ck_assert_msg(a.tokens[i] == out[j].tokens[i], "%s (%s): token %d is %d in the batch, %d alone",
                          rows[j].flags, where, i, out[j].tokens[i], a.tokens[i]);
        ck_assert_int_eq(a.acc.committed, out[j].acc.committed);
        rounds += out[j].acc.target_passes; /* its rounds: one verify pass each */
        ck_assert_int_eq(streams[j].n, out[j].n);
        ck_assert(memcmp(streams[j].tokens, out[j].tokens, (size_t)out[j].n * sizeof(int)) == 0);
        decode_output_free(&a);
        decode_output_free(&out[j]);
    }
    return rounds;
}
