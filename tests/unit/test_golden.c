/* test_golden.c — the C forward against logits that Hugging Face transformers computed on the same checkpoints
 * (tests/data/golden, made by tools/peer/golden.py; the generator is deterministic, so the checkpoint is rebuilt
 * here bit for bit): trunk logits at every position, and the MTP module's as vLLM chains it. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genmodel/randmodel.h"
#include "harness.h"
#include "model.h"

/* ‖Δ‖₂/‖ref‖₂ per position. float32 on both sides; the sums differ only in
 * accumulation order (a few hundred terms per dot product), which stays
 * near 1e-6; 1e-4 is the bound the peer check uses too. */
#define MAX_REL_ERR 1e-4

#define GOLDEN_DIR "tests/data/golden"

static double rel_err(const float *a, const float *ref, int n) {
    double d = 0, r = 0;
    for (int i = 0; i < n; i++) {
        d += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
        r += (double)ref[i] * ref[i];
    }
    return sqrt(d / r);
}

static float *read_floats(const char *path, size_t n) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    float *x = malloc(n * sizeof *x);
    ck_assert_uint_eq(fread(x, sizeof *x, n, f), n);
    fclose(f);
    return x;
}

/* Writes the entry's checkpoint, runs trunk and MTP, returns the worst
 * relative error over positions against `golden` (trunk rows then MTP rows). */
static double worst_error(json_t *entry, const float *golden) {
    const char *preset = json_string_value(json_object_get(entry, "preset"));
    const char *layout = json_string_value(json_object_get(entry, "layout"));
    json_t *toks = json_object_get(entry, "tokens");
    const int T = (int)json_array_size(toks);
    model_config cfg;
    randmodel_opts o;
    sp_error err;
    ck_assert_msg(randmodel_preset(preset, &cfg, &err) == 0, "%s", err.msg);
    randmodel_default_opts(&o);
    o.seed = (uint64_t)json_integer_value(json_object_get(entry, "seed"));
    o.dtype = DTYPE_F32;
    o.layout = strcmp(layout, "text") == 0 ? RANDMODEL_LAYOUT_TEXT : RANDMODEL_LAYOUT_FULL;
    char dir[256];
    harness_tmpdir(dir, sizeof dir);
    ck_assert_msg(randmodel_write(dir, &cfg, &o, NULL, &err) == 0, "%s", err.msg);
    model m;
    ck_assert_msg(model_load(&m, dir, &err) == 0, "%s", err.msg);
    const int V = m.cfg.vocab_size, D = m.cfg.hidden_size;
    float *logits = malloc(sizeof(float) * V), *hidden = malloc(sizeof(float) * (size_t)T * D);
    int *ids = malloc(sizeof(int) * T);
    for (int t = 0; t < T; t++) ids[t] = (int)json_integer_value(json_array_get(toks, (size_t)t));
    double worst = 0;
    model_state s;
    state_build(&s, &m.cfg, NULL);
    for (int t = 0; t < T; t++) {
        model_forward(&m, &s, ids[t], logits, hidden + (size_t)t * D);
        double e = rel_err(logits, golden + (size_t)t * V, V);
        if (e > worst) worst = e;
    }
    state_free(&s);
    if (json_is_true(json_object_get(entry, "mtp"))) {
        ck_assert(m.w.has_mtp);
        model_state ms;
        state_build_mtp(&ms, &m.cfg);
        float *h = malloc(sizeof(float) * D);
        for (int t = 0; t + 1 < T; t++) {
            model_mtp_forward(&m, &ms, hidden + (size_t)t * D, ids[t + 1], logits, h);
            double e = rel_err(logits, golden + (size_t)(T + t) * V, V);
            if (e > worst) worst = e;
        }
        free(h);
        state_free(&ms);
    }
    free(ids);
    free(hidden);
    free(logits);
    model_free(&m);
    harness_rmtree(dir);
    return worst;
}

static json_t *manifest(void) {
    json_error_t jerr;
    json_t *root = json_load_file(GOLDEN_DIR "/manifest.json", 0, &jerr);
    ck_assert_msg(root != NULL, "%s: %s", GOLDEN_DIR "/manifest.json", jerr.text);
    return root;
}

static float *golden_rows(json_t *entry, size_t *n) {
    const int T = (int)json_array_size(json_object_get(entry, "tokens"));
    const int V = (int)json_integer_value(json_object_get(entry, "vocab_size"));
    *n = (size_t)T * V + (json_is_true(json_object_get(entry, "mtp")) ? (size_t)(T - 1) * V : 0);
    char path[512];
    snprintf(path, sizeof path, GOLDEN_DIR "/%s.bin", json_string_value(json_object_get(entry, "name")));
    return read_floats(path, *n);
}

START_TEST(test_matches_transformers) {
    json_t *root = manifest(), *entries = json_object_get(root, "entries");
    ck_assert_int_ge(json_array_size(entries), 4);
    for (size_t i = 0; i < json_array_size(entries); i++) {
        json_t *e = json_array_get(entries, i);
        size_t n;
        float *golden = golden_rows(e, &n);
        double worst = worst_error(e, golden);
        ck_assert_msg(worst <= MAX_REL_ERR, "%s: max relative logit error %.3g > %g",
                      json_string_value(json_object_get(e, "name")), worst, MAX_REL_ERR);
        free(golden);
    }
    json_decref(root);
}
END_TEST

/* The comparison must be able to fail: the logits of another checkpoint
 * (same preset, different seed) are far outside the bound. */
START_TEST(test_other_checkpoint_is_rejected) {
    json_t *root = manifest(), *entries = json_object_get(root, "entries");
    json_t *e = json_deep_copy(json_array_get(entries, 0));
    size_t n;
    float *golden = golden_rows(e, &n);
    json_object_set_new(e, "seed", json_integer(json_integer_value(json_object_get(e, "seed")) + 1));
    double worst = worst_error(e, golden);
    ck_assert_msg(worst > 100 * MAX_REL_ERR, "a different checkpoint passed: %.3g", worst);
    free(golden);
    json_decref(e);
    json_decref(root);
}
END_TEST

Suite *golden_suite(void) {
    Suite *s = suite_create("golden");
    TCase *tc = harness_tcase("transformers", 30);
    tcase_add_test(tc, test_matches_transformers);
    tcase_add_test(tc, test_other_checkpoint_is_rejected);
    suite_add_tcase(s, tc);
    return s;
}
