/* batch_jobs.c — one sequence's method for the batched-loop tests (batch_jobs.h). */
#include "batch_jobs.h"

#include <check.h>
#include <string.h>

#include "fixtures.h"
#include "reference_target.h"
#include "target_stepper.h"

void batch_job_build(batch_job *b, const batch_models *bm, const char *flags, const int *prompt, int n, int tokens,
                     uint64_t seed, decode_job *job) {
    memset(b, 0, sizeof *b);
    method_spec s = fixture_spec(flags);
    s.max_tokens = tokens;
    s.stop_at_eos = 0;
    s.seed = seed;
    method_parts parts = {bm->target, NULL, NULL, NULL};
    sp_error err;
    if (s.kind == METHOD_MTP) {
        const int rc = bm->e ? engine_mtp_stepper_build(&b->st, bm->e, &err)
                             : reference_mtp_stepper_build(&b->st, bm->target_model, &err);
        ck_assert_msg(rc == 0, "%s", err.msg);
        parts.mtp = &b->st;
        b->have_st = 1;
    } else if (s.kind == METHOD_SPEC) {
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
