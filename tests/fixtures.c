/* fixtures.c — random micro models on disk for the tests (see fixtures.h). */
#include "fixtures.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "genmodel/randmodel.h"
#include "harness.h"
#include "reference_target.h"
#include "sampler.h"

void fixture_model_open(fixture_model *f, const char *preset, uint64_t seed, void (*tweak)(model_config *)) {
    model_config cfg;
    sp_error err;
    ck_assert_msg(randmodel_preset(preset, &cfg, &err) == 0, "%s", err.msg);
    if (tweak) tweak(&cfg);
    randmodel_opts opts;
    randmodel_default_opts(&opts);
    opts.seed = seed;
    opts.dtype = DTYPE_F32;
    harness_tmpdir(f->dir, sizeof f->dir);
    ck_assert_msg(randmodel_write(f->dir, &cfg, &opts, NULL, &err) == 0, "%s", err.msg);
    ck_assert_msg(model_load(&f->m, f->dir, &err) == 0, "%s", err.msg);
}

void fixture_model_close(fixture_model *f) {
    model_free(&f->m);
    harness_rmtree(f->dir);
}

const char *fixture_embedded_model(void) {
    static const char *path = "models/tiny-shakespeare/model.safetensors";
    return access(path, R_OK) == 0 ? "models/tiny-shakespeare" : NULL;
}

const char *fixture_course_model(void) {
    static const char *path = "models/course/model.safetensors";
    return access(path, R_OK) == 0 ? "models/course" : NULL;
}

void fixture_parts_open(fixture_parts *f, model *target, model *draft, const medusa_heads *heads) {
    memset(f, 0, sizeof *f);
    reference_target_build(&f->target, target);
    f->parts.target = &f->target;
    if (draft) {
        reference_draft_stepper_build(&f->draft, draft);
        f->parts.draft = &f->draft;
    }
    sp_error err;
    if (target->w.has_mtp) {
        ck_assert_msg(reference_mtp_stepper_build(&f->mtp, target, &err) == 0, "%s", err.msg);
        f->parts.mtp = &f->mtp;
    }
    f->parts.heads = heads;
}

void fixture_parts_close(fixture_parts *f) {
    if (f->parts.mtp) f->mtp.release(&f->mtp);
    if (f->parts.draft) f->draft.release(&f->draft);
    f->target.release(&f->target);
    memset(f, 0, sizeof *f);
}

int fixture_beam_run(model *m, const int *prompt, int n, const beam_options *bo, beam_output *out, sp_error *err) {
    decode_target t;
    reference_target_build(&t, m);
    const int rc = beam_run(&t, prompt, n, bo, out, err);
    t.release(&t);
    return rc;
}

method_spec fixture_spec(const char *flags) {
    method_spec s = method_spec_defaults();
    sp_error err;
    ck_assert_msg(method_spec_parse(&s, flags, &err) == 0, "%s", err.msg);
    return s;
}

void fixture_greedy_oracle(model *m, const int *prompt, int n_prompt, int L, int *out) {
    const int V = m->cfg.vocab_size;
    float *logits = calloc((size_t)V, sizeof(float));
    model_state s;
    state_build(&s, &m->cfg, NULL);
    for (int i = 0; i < n_prompt; i++) model_forward(m, &s, prompt[i], logits, NULL);
    for (int t = 0; t < L; t++) {
        out[t] = sampler_argmax(logits, V);
        model_forward(m, &s, out[t], logits, NULL);
    }
    state_free(&s);
    free(logits);
}
