/* test_mtp_step.c — exercise 6's checks on a random micro model with an
 * MTP module: the hidden state a step returns is the one its logits were
 * projected from (lm_head · hidden = logits), which is what makes chaining
 * work; a chain of steps writes one cache position per step; and a step is
 * a pure function of (cache, h, token): replayed after a rollback it gives
 * the same numbers. The logits of the first step against transformers are
 * test_golden's job.
 *
 * Wrong solutions this checker must reject (wrong/, run by
 * tests/parts/exercises.sh):
 *   hidden-first.c        [norm(h), norm(embedding)]: the halves swapped (test_golden)
 *   h-not-normed.c        h used without mtp_norm_hidden (test_golden)
 *   hidden-before-norm.c  hidden_out taken before the final norm (here)
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "harness.h"
#include "ops.h"
#include "sampler.h"

/* float32 matrix-vector products of length D = 64 in a different order of
 * evaluation agree to about 1e-6 relative; 1e-4 leaves room and is still
 * far below what a wrong norm or a missing projection produces (order 1). */
#define REL_TOL 1e-4

static double rel_err(const float *a, const float *b, int n) {
    double worst = 0, scale = 1e-6;
    for (int i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
    for (int i = 0; i < n; i++) worst = fmax(worst, fabs((double)a[i] - b[i]) / scale);
    return worst;
}

START_TEST(test_chain_of_steps) {
    fixture_model f;
    fixture_model_open(&f, "micro", 61, NULL);
    model *m = &f.m;
    ck_assert(m->w.has_mtp);
    const int V = m->cfg.vocab_size, D = m->cfg.hidden_size;
    model_state s, ms;
    state_build(&s, &m->cfg, NULL);
    state_build_mtp(&ms, &m->cfg);
    float *h = malloc(sizeof(float) * D), *h2 = malloc(sizeof(float) * D), *logits = malloc(sizeof(float) * V),
          *check = malloc(sizeof(float) * V), *first = malloc(sizeof(float) * V);
    static const int prompt[6] = {3, 17, 5, 9, 30, 2};
    /* real steps along the prompt: the trunk's hidden state at t with token t+1 */
    for (int t = 0; t + 1 < 6; t++) {
        model_forward(m, &s, prompt[t], NULL, h);
        model_mtp_forward(m, &ms, h, prompt[t + 1], logits, h2);
        ck_assert_int_eq(ms.pos, t + 1);
        op_matvec(check, m->w.lm_head, h2, V, D);
        ck_assert_msg(rel_err(logits, check, V) < REL_TOL, "real step %d: logits are not lm_head · hidden_out", t);
    }
    /* a chain of three steps from the last real one, each fed its own output */
    state_snapshot snap;
    snapshot_build(&snap, &ms);
    state_save(&ms, &snap);
    float *h_real = malloc(sizeof(float) * D);
    memcpy(h_real, h2, sizeof(float) * D);
    const int token0 = sampler_argmax(logits, V);
    int token = token0;
    for (int step = 0; step < 3; step++) {
        memcpy(h, h2, sizeof(float) * D);
        model_mtp_forward(m, &ms, h, token, logits, h2);
        if (step == 0) memcpy(first, logits, sizeof(float) * V);
        ck_assert_int_eq(ms.pos, 6 + step);
        op_matvec(check, m->w.lm_head, h2, V, D);
        ck_assert_msg(rel_err(logits, check, V) < REL_TOL, "chain step %d: logits are not lm_head · hidden_out", step);
        token = sampler_argmax(logits, V);
    }
    /* drop the chain and replay its first step: the same logits, bit for bit
     * (hidden_out may be NULL) */
    state_restore(&ms, &snap);
    ck_assert_int_eq(ms.pos, 5);
    model_mtp_forward(m, &ms, h_real, token0, logits, NULL);
    ck_assert_int_eq(ms.pos, 6);
    ck_assert_msg(memcmp(logits, first, sizeof(float) * V) == 0, "a replayed step gave other logits");
    free(h_real);
    snapshot_free(&snap);
    free(h), free(h2), free(logits), free(check), free(first);
    snapshot_free(&snap);
    state_free(&s);
    state_free(&ms);
    fixture_model_close(&f);
}
END_TEST

Suite *exercise_mtp_step_suite(void) {
    Suite *s = suite_create("exercise_mtp_step");
    TCase *tc = harness_tcase("chain", 60);
    tcase_add_test(tc, test_chain_of_steps);
    suite_add_tcase(s, tc);
    return s;
}
