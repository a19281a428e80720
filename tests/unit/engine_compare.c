/* engine_compare.c — the engine held up to the reference (see engine_compare.h). */
#include "engine_compare.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "genmodel/randmodel.h"
#include "harness.h"
#include "reference_target.h"
#include "sampler.h"
#include "target_stepper.h"

/* Largest |a − b| / (max |b| + tiny) over n values. */
double rel_error(const float *a, const float *b, size_t n) {
    double worst = 0, scale = 1e-30;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)a[i] - b[i]));
    return worst / scale;
}

/* Prefill logits and hidden states of tokens[n] through a target. */
void prefill_rows(decode_target *t, const int *tokens, int n, float *logits, float *hidden) {
    sp_error err;
    const int seq = t->seq_open(t, &err);
    ck_assert_msg(seq >= 0 && t->prefill(t, seq, tokens, n, logits, hidden, &err) == 0, "%s", err.msg);
    t->seq_close(t, seq);
}

int prefill_token(int i, int V) { return (i * 37 + 11) % V; }

float *engine_decode_logits(const char *dir, const engine_options *o, int n_prompt, int n_decode, const int *path,
                            int *chosen) {
    engine e;
    sp_error err;
    ck_assert_msg(engine_open(&e, dir, o, &err) == 0, "%s", err.msg);
    if (o->kv) ck_assert_int_eq(e.kv.format, o->kv);
    decode_target t;
    engine_target_build(&t, &e);
    const int V = e.cfg.vocab_size;
    int *prompt = calloc((size_t)n_prompt, sizeof *prompt);
    for (int i = 0; i < n_prompt; i++) prompt[i] = prefill_token(i, V);
    float *logits = calloc((size_t)(n_prompt + n_decode) * V, sizeof(float));
    const int seq = t.seq_open(&t, &err);
    ck_assert_msg(t.prefill(&t, seq, prompt, n_prompt, logits, NULL, &err) == 0, "%s", err.msg);
    for (int i = 0; i < n_decode; i++) {
        int tok = path ? path[i] : sampler_argmax(logits + (size_t)(n_prompt + i - 1) * V, V);
        if (chosen) chosen[i] = tok;
        ck_assert_msg(t.prefill(&t, seq, &tok, 1, logits + (size_t)(n_prompt + i) * V, NULL, &err) == 0, "%s",
                      err.msg);
    }
    t.seq_close(&t, seq);
    t.release(&t);
    engine_close(&e);
    free(prompt);
    return logits;
}

void ref_outputs_build(ref_outputs *r, const char *dir, int n) {
    ck_assert(n > N_MTP && n <= N_PREFILL);
    model m;
    sp_error err;
    ck_assert_msg(model_load(&m, dir, &err) == 0, "%s", err.msg);
    const int V = m.cfg.vocab_size, D = m.cfg.hidden_size;
    r->n = n, r->V = V, r->D = D, r->has_mtp = m.w.has_mtp;
    r->logits = calloc((size_t)n * V, sizeof(float));
    r->hidden = calloc((size_t)n * D, sizeof(float));
    r->mtp = calloc((size_t)N_MTP * V, sizeof(float));
    int tokens[N_PREFILL];
    for (int i = 0; i < n; i++) tokens[i] = prefill_token(i, V);
    decode_target t;
    reference_target_build(&t, &m);
    prefill_rows(&t, tokens, n, r->logits, r->hidden);
    t.release(&t);
    if (m.w.has_mtp) {
        stepper s;
        ck_assert(reference_mtp_stepper_build(&s, &m, &err) == 0);
        for (int i = 0; i < N_MTP; i++) {
            const float *h = r->hidden + (size_t)i * D;
            ck_assert(s.step(&s, &tokens[i + 1], h, 1, r->mtp + (size_t)i * V, NULL, &err) == 0);
        }
        s.release(&s);
    }
    model_free(&m);
}

void ref_outputs_free(ref_outputs *r) { free(r->logits), free(r->hidden), free(r->mtp); }

/* The engine on dir against the reference's outputs (f32: the engine widens
 * its matrices to float32). */
prefill_gap measure_engine(const ref_outputs *r, const char *dir, const engine_options *o) {
    engine e;
    sp_error err;
    ck_assert_msg(engine_open(&e, dir, o, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(e.w.ck.with_mtp, r->has_mtp);
    const int n = r->n, V = r->V, D = r->D;
    int tokens[N_PREFILL];
    for (int i = 0; i < n; i++) tokens[i] = prefill_token(i, V);
    float *logits = calloc((size_t)n * V, sizeof(float)), *hidden = calloc((size_t)n * D, sizeof(float));
    decode_target t;
    engine_target_build(&t, &e);
    prefill_rows(&t, tokens, n, logits, hidden);
    t.release(&t);
    prefill_gap g = {rel_error(logits, r->logits, (size_t)n * V), rel_error(hidden, r->hidden, (size_t)n * D), 0};
    if (r->has_mtp) {
        stepper s;
        ck_assert(engine_mtp_stepper_build(&s, &e, &err) == 0);
        for (int i = 0; i < N_MTP; i++) {
            ck_assert(s.step(&s, &tokens[i + 1], r->hidden + (size_t)i * D, 1, logits, NULL, &err) == 0);
            g.mtp = fmax(g.mtp, rel_error(logits, r->mtp + (size_t)i * V, (size_t)V));
        }
        s.release(&s);
    }
    free(logits), free(hidden);
    engine_close(&e);
    return g;
}

/* Writes preset `preset` with `seed` in dtype into a fresh directory; mtp 0
 * leaves out the MTP module the preset has. */
void write_checkpoint(char *dir, size_t size, const char *preset, int mtp, uint64_t seed, dtype_t dtype) {
    model_config c;
    sp_error err;
    randmodel_opts o;
    randmodel_default_opts(&o);
    o.seed = seed;
    o.dtype = dtype;
    harness_tmpdir(dir, size);
    ck_assert(randmodel_preset(preset, &c, &err) == 0);
    if (!mtp) c.mtp_num_layers = 0;
    ck_assert_msg(randmodel_write(dir, &c, &o, NULL, &err) == 0, "%s", err.msg);
}

/* The engine's own greedy oracle: one prefill of one token at a time and
 * its argmax, no tree, no proposer, no acceptance rule. */
void engine_greedy_oracle(decode_target *t, const int *prompt, int n, int L, int *out) {
    const int V = t->cfg->vocab_size;
    float *logits = calloc((size_t)n * V, sizeof(float));
    sp_error err;
    const int seq = t->seq_open(t, &err);
    ck_assert(t->prefill(t, seq, prompt, n, logits, NULL, &err) == 0);
    const float *last = logits + (size_t)(n - 1) * V;
    for (int i = 0; i < L; i++) {
        out[i] = sampler_argmax(last, V);
        ck_assert(t->prefill(t, seq, &out[i], 1, logits, NULL, &err) == 0);
        last = logits;
    }
    t->seq_close(t, seq);
    free(logits);
}

void assert_methods_give(const method_parts *parts, const char *const *flags, int n_flags, const int *prompt, int n,
                         const int *want, int n_tokens, const char *what) {
    for (int f = 0; f < n_flags; f++) {
        method_spec s = fixture_spec(flags[f]);
        s.max_tokens = n_tokens;
        s.stop_at_eos = 0;
        decode_output out;
        sp_error err;
        ck_assert_msg(method_generate(&s, parts, prompt, n, &out, &err) == 0, "%s: %s", flags[f], err.msg);
        ck_assert_int_eq(out.n, n_tokens);
        ck_assert_msg(memcmp(out.tokens, want, (size_t)n_tokens * sizeof *want) == 0, "%s, %s: not the greedy tokens",
                      flags[f], what);
        decode_output_free(&out);
    }
}

void engine_parts_open(engine_parts *p, const fixture_model *target, const engine_options *target_options,
                       const fixture_model *draft, const engine_options *draft_options) {
    sp_error err;
    ck_assert_msg(engine_open(&p->te, target->dir, target_options, &err) == 0, "%s", err.msg);
    ck_assert_msg(engine_open(&p->de, draft->dir, draft_options, &err) == 0, "%s", err.msg);
    engine_target_build(&p->t, &p->te);
    engine_target_build(&p->dt, &p->de);
    ck_assert(target_stepper_build(&p->draft, &p->dt, &err) == 0 &&
              engine_mtp_stepper_build(&p->mtp, &p->te, &err) == 0);
    ck_assert(medusa_build(&p->heads, 3, 1, target->m.cfg.hidden_size, target->m.cfg.vocab_size, 0, &err) == 0);
    medusa_share_lm_head(&p->heads, target->m.w.lm_head);
    const method_parts parts = {&p->t, &p->draft, &p->mtp, &p->heads};
    p->parts = parts;
}

void engine_parts_close(engine_parts *p) {
    medusa_free(&p->heads);
    p->mtp.release(&p->mtp);
    p->draft.release(&p->draft);
    p->dt.release(&p->dt);
    p->t.release(&p->t);
    engine_close(&p->de);
    engine_close(&p->te);
}
