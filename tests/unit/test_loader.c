/* test_loader.c — model_load against the catalogue of broken checkpoints (broken_checkpoints.h): loading must
 * fail with a message naming the file or tensor and the problem. Valid models of every micro preset must load. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "broken_checkpoints.h"
#include "harness.h"
#include "model.h"

/* ---- valid checkpoints load (the positive control) ------------------------------- */

START_TEST(test_valid_models_load) {
    char dir[256], sub[320];
    harness_tmpdir(dir, sizeof dir);
    const char *presets[] = {"micro", "micro-draft", "micro-tied", "micro-deep"};
    for (int p = 0; p < 4; p++)
        for (int dt = 0; dt < DTYPE_COUNT; dt++) {
            snprintf(sub, sizeof sub, "%s/%s-%d", dir, presets[p], dt);
            broken_write_valid(sub, presets[p], (dtype_t)dt);
            model m;
            sp_error err;
            ck_assert_msg(model_load(&m, sub, &err) == 0, "%s: %s", sub, err.msg);
            ck_assert_int_eq(m.w.has_mtp, m.cfg.mtp_num_layers > 0);
            ck_assert_int_eq(m.w.lm_head == m.w.embed, m.cfg.tie_word_embeddings);
            /* a norm weight arrives as stored (bf16/f16 rounding of the draw) */
            ck_assert(m.w.final_norm[0] != 0.0f && fabsf(m.w.final_norm[0]) <= 0.35f);
            model_free(&m);
        }
    harness_rmtree(dir);
}
END_TEST

/* ---- one broken checkpoint per problem ------------------------------------------ */

START_TEST(test_broken_checkpoint_is_refused) {
    const broken_checkpoint *b = &broken_checkpoints[_i];
    char dir[256], buf[400];
    harness_tmpdir(dir, sizeof dir);
    b->make(dir);
    model m;
    sp_error err = {{0}};
    ck_assert_msg(model_load(&m, dir, &err) == -1, "%s: model_load accepted it", b->name);
    for (int k = 0; b->needles[k]; k++) {
        const char *needle = broken_needle(b->needles[k], dir, buf, sizeof buf);
        ck_assert_msg(strstr(err.msg, needle) != NULL, "%s: message \"%s\" lacks \"%s\"", b->name, err.msg, needle);
    }
    harness_rmtree(dir);
}
END_TEST

Suite *loader_suite(void) {
    Suite *s = suite_create("loader");
    TCase *tc = harness_tcase("core", 60);
    tcase_add_test(tc, test_valid_models_load);
    tcase_add_loop_test(tc, test_broken_checkpoint_is_refused, 0, n_broken_checkpoints);
    suite_add_tcase(s, tc);
    return s;
}
