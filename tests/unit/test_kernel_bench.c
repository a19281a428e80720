/* test_kernel_bench.c — the host-side logic of the kernel harness
 * (kernels/check/gc_host.c): error norms, medians, buffer rotation, row sampling,
 * the result file, the table's columns, the 27B shapes against
 * models/qwen3.8-27b/config.json, and the estimate's arithmetic. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_host.h"
#include "config.h"
#include "harness.h"

START_TEST(test_median) {
    double odd[] = {5, 1, 4, 2, 3};
    ck_assert_double_eq(gc_median(odd, 5), 3.0);
    double even[] = {10, 1, 4, 2};
    ck_assert_double_eq(gc_median(even, 4), 3.0);
    double one[] = {7};
    ck_assert_double_eq(gc_median(one, 1), 7.0);
    ck_assert(isnan(gc_median(one, 0)));
}
END_TEST

START_TEST(test_rel_error) {
    float ref[4] = {3, 0, -4, 0}, same[4] = {3, 0, -4, 0}, off[4] = {3, 0, -4, 0.5f};
    ck_assert_double_eq(gc_rel_error(same, ref, 4), 0.0);
    ck_assert_double_eq_tol(gc_rel_error(off, ref, 4), 0.1, 1e-12); /* 0.5 / 5 */
    float nan_out[4] = {3, NAN, -4, 0};
    ck_assert(isinf(gc_rel_error(nan_out, ref, 4)));
    float zero[2] = {0, 0}, small[2] = {0, 1e-30f};
    ck_assert_double_eq(gc_rel_error(zero, zero, 2), 0.0);
    ck_assert(isinf(gc_rel_error(small, zero, 2)));
    ck_assert_uint_eq(gc_count_nan(nan_out, 4), 1);
    uint16_t b[3] = {0x7fc0, 0x3f80, 0xffff}; /* NaN, 1.0, poison (NaN) */
    ck_assert_uint_eq(gc_count_nan_bf16(b, 3), 2);
}
END_TEST

START_TEST(test_status_and_bounds) {
    /* a row's derived columns */
    gc_row r;
    memset(&r, 0, sizeof r);
    r.us = 100.0, r.bytes = 4e8, r.flops = 2e9;
    ck_assert_double_eq_tol(gc_row_gbs(&r), 4000.0, 1e-9);
    ck_assert_double_eq_tol(gc_row_pct_copy(&r, 5000.0), 80.0, 1e-9);
    ck_assert_double_eq_tol(gc_row_tflops(&r), 20.0, 1e-9);
    r.us = NAN;
    ck_assert(isnan(gc_row_gbs(&r)));
    ck_assert(isnan(gc_row_pct_copy(&r, 5000.0)));
}
END_TEST

START_TEST(test_rotation_and_reps) {
    size_t MB = 1 << 20;
    ck_assert_int_eq(gc_rotation_sets(300 * MB, 50 * MB, 8), 1);
    ck_assert_int_eq(gc_rotation_sets(100 * MB, 50 * MB, 8), 2);
    ck_assert_int_eq(gc_rotation_sets(10 * MB, 50 * MB, 8), 8); /* 20 wanted, capped */
    ck_assert_int_eq(gc_rotation_sets(10 * MB, 50 * MB, 64), 20);
    ck_assert_int_eq(gc_rotation_sets(0, 50 * MB, 4), 4);
    ck_assert_int_eq(gc_reps_for(10.0, 400.0), 40);
    ck_assert_int_eq(gc_reps_for(1000.0, 400.0), 1);
    ck_assert_int_eq(gc_reps_for(0.01, 400.0), 1000);
}
END_TEST

START_TEST(test_pick_rows) {
    int rows[16];
    ck_assert_int_eq(gc_pick_rows(5, 16, 1, rows), 5);
    for (int i = 0; i < 5; i++) ck_assert_int_eq(rows[i], i);
    int n = gc_pick_rows(100000, 16, 7, rows);
    ck_assert_int_eq(n, 16);
    ck_assert_int_eq(rows[0], 0);
    ck_assert_int_eq(rows[15], 99999);
    for (int i = 1; i < 16; i++) ck_assert_int_lt(rows[i - 1], rows[i]); /* ascending, distinct */
}
END_TEST

static void fill_row(gc_row *w, const char *op, const char *ver, const char *shape, int m, double us, int status) {
    snprintf(w->op, sizeof w->op, "%s", op);
    snprintf(w->version, sizeof w->version, "%s", ver);
    snprintf(w->shape, sizeof w->shape, "%s", shape);
    w->m = m, w->us = us, w->status = status, w->err = 1e-6, w->bound = 1e-4, w->bytes = 1e6, w->flops = 0;
}

START_TEST(test_results_file) {
    char dir[256], path[512];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/results.tsv", dir);
    gc_results a;
    gc_results_init(&a);
    snprintf(a.device, sizeof a.device, "NVIDIA H200, 132 SMs");
    a.copy_gbs = 4300.0;
    fill_row(gc_results_add(&a), "matvec", "v4", "q_proj 12288x5120", 1, 12.5, GC_OK);
    gc_row *f = gc_results_add(&a);
    fill_row(f, "attention", "v3", "ctx 4096", 4, NAN, GC_FAIL);
    snprintf(f->note, sizeof f->note, "error\tabove bound"); /* a tab must not break the file */
    ck_assert_int_eq(gc_results_append_file(&a, path, NULL), 0);
    ck_assert_int_eq(gc_results_append_file(&a, path, NULL), 0); /* appending a second run */
    gc_results b;
    gc_results_init(&b);
    sp_error err;
    ck_assert_msg(gc_results_read_file(&b, path, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(b.n, 4);
    ck_assert_str_eq(b.device, "NVIDIA H200, 132 SMs");
    ck_assert_double_eq_tol(b.copy_gbs, 4300.0, 1e-9);
    ck_assert_str_eq(b.rows[0].shape, "q_proj 12288x5120");
    ck_assert_double_eq_tol(b.rows[0].us, 12.5, 1e-9);
    ck_assert_int_eq(b.rows[1].status, GC_FAIL);
    ck_assert(isnan(b.rows[1].us));
    ck_assert_str_eq(b.rows[1].note, "error above bound");
    gc_results_free(&a);
    gc_results_free(&b);
    /* a damaged line is an error that names the file and line */
    FILE *fp = fopen(path, "a");
    fprintf(fp, "row\tonly\tthree\n");
    fclose(fp);
    gc_results c;
    gc_results_init(&c);
    ck_assert_int_eq(gc_results_read_file(&c, path, &err), -1);
    ck_assert_msg(strstr(err.msg, "results.tsv:9:") && strstr(err.msg, "found 3 field(s)"), "%s", err.msg);
    gc_results_free(&c);
    harness_rmtree(dir);
}
END_TEST

/* Rows written one at a time, as gpucheck does while it measures: a run
 * that crashed in the middle of a row leaves a last line without its
 * newline, which the reader drops, keeping every complete row. */
START_TEST(test_results_streamed) {
    char dir[256], path[512];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/results.tsv", dir);
    FILE *fp = fopen(path, "w");
    ck_assert_ptr_nonnull(fp);
    gc_results_write_device(fp, "NVIDIA H200, 132 SMs");
    gc_row r;
    fill_row(&r, "copy", "memcpy", "1 GiB d2d", 1, 500.0, GC_OK);
    gc_results_write_ceilings(fp, 4300.0, NAN);
    gc_results_write_row(fp, &r);
    gc_results_write_ceilings(fp, NAN, 4100.0);
    fill_row(&r, "matvec", "v4", "q_proj 12288x5120", 1, 31.25, GC_OK);
    gc_results_write_row(fp, &r);
    fprintf(fp, "row\tmatvec\tv5\tq_pr"); /* the crash */
    fclose(fp);
    gc_results b;
    gc_results_init(&b);
    sp_error err;
    ck_assert_msg(gc_results_read_file(&b, path, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(b.n, 2);
    ck_assert_double_eq_tol(b.copy_gbs, 4300.0, 1e-9);
    ck_assert_double_eq_tol(b.read_gbs, 4100.0, 1e-9);
    ck_assert_str_eq(b.rows[1].version, "v4");
    gc_results_free(&b);
    harness_rmtree(dir);
}
END_TEST

START_TEST(test_format_row) {
    gc_row r;
    memset(&r, 0, sizeof r);
    fill_row(&r, "matvec", "v4", "q_proj 12288x5120", 1, 31.25, GC_OK);
    r.bytes = 125829120.0 + 20480 + 49152;
    r.err = 6.1e-7;
    char line[512];
    gc_format_row(line, sizeof line, &r, 4300.0);
    ck_assert_msg(strstr(line, "matvec") && strstr(line, "v4") && strstr(line, "q_proj 12288x5120"), "%s", line);
    ck_assert_msg(strstr(line, "6.10e-07") && strstr(line, "1e-04"), "%s", line);
    ck_assert_msg(strstr(line, "31.25"), "%s", line);
    ck_assert_msg(strstr(line, " 4029 "), "GB/s column: %s", line); /* 125.9 MB / 31.25 us */
    ck_assert_msg(strstr(line, " 93.7 "), "%% of copy column: %s", line);
    ck_assert_msg(strstr(line, "ok"), "%s", line);
    r.status = GC_FAIL;
    snprintf(r.note, sizeof r.note, "3 outputs never written (NaN)");
    gc_format_row(line, sizeof line, &r, NAN);
    ck_assert_msg(strstr(line, "FAIL: 3 outputs never written"), "%s", line);
}
END_TEST

START_TEST(test_best_us) {
    gc_results r;
    gc_results_init(&r);
    fill_row(gc_results_add(&r), "matvec", "v1", "lm_head 248320x5120", 1, 900.0, GC_OK);
    fill_row(gc_results_add(&r), "matvec", "v4", "lm_head 248320x5120", 1, 600.0, GC_OK);
    fill_row(gc_results_add(&r), "matvec", "v5", "lm_head 248320x5120", 1, 100.0, GC_FAIL); /* fast but wrong */
    fill_row(gc_results_add(&r), "matvec", "b2", "lm_head 248320x5120", 4, 650.0, GC_OK);
    fill_row(gc_results_add(&r), "matvec", "v3", "lm_head 248320x5120", 1, NAN, GC_OK);
    ck_assert_double_eq(gc_best_us(&r, "matvec", "lm_head 248320x5120", 1), 600.0);
    ck_assert_double_eq(gc_best_us(&r, "matvec", "lm_head 248320x5120", 4), 650.0);
    ck_assert(isnan(gc_best_us(&r, "matvec", "lm_head 248320x5120", 2)));
    fill_row(gc_results_add(&r), "matvec", "cublas-xbf16", "lm_head 248320x5120", 1, 550.0, GC_OK);
    ck_assert_str_eq(gc_best_row(&r, "matvec", "lm_head 248320x5120", 1, NULL, "cublas")->version, "v4");
    ck_assert_str_eq(gc_best_row(&r, "matvec", "lm_head 248320x5120", 1, "cublas", NULL)->version, "cublas-xbf16");
    ck_assert_ptr_null(gc_best_row(&r, "matvec", "lm_head 248320x5120", 4, "cublas", NULL));
    /* the engine's row (kn_matvec through its dispatch) is what the estimate
     * uses, even when a version alone was faster; "fastest" leaves it out */
    ck_assert_ptr_null(gc_engine_row(&r, "matvec", "lm_head 248320x5120", 1));
    ck_assert_double_eq(gc_plan_us(&r, "matvec", "lm_head 248320x5120", 1), 550.0); /* no engine row: the fastest */
    fill_row(gc_results_add(&r), "matvec", GC_ENGINE_PREFIX "v3", "lm_head 248320x5120", 1, 610.0, GC_OK);
    fill_row(gc_results_add(&r), "matvec", GC_ENGINE_PREFIX "v3", "lm_head 248320x5120", 4, 599.0, GC_FAIL);
    ck_assert_str_eq(gc_engine_row(&r, "matvec", "lm_head 248320x5120", 1)->version, GC_ENGINE_PREFIX "v3");
    ck_assert_ptr_null(gc_engine_row(&r, "matvec", "lm_head 248320x5120", 4)); /* not validated */
    ck_assert_double_eq(gc_plan_us(&r, "matvec", "lm_head 248320x5120", 1), 610.0);
    ck_assert_double_eq(gc_plan_us(&r, "matvec", "lm_head 248320x5120", 4), 650.0);
    ck_assert_str_eq(gc_best_row(&r, "matvec", "lm_head 248320x5120", 1, NULL, "cublas")->version, "v4");
    gc_results_free(&r);
}
END_TEST

/* The shape constants are the config's. */
START_TEST(test_27b_constants) {
    model_config c;
    sp_error err;
    ck_assert_msg(config_load("models/qwen3.8-27b", &c, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(c.hidden_size, GC27_D);
    ck_assert_int_eq(c.intermediate_size, GC27_F);
    ck_assert_int_eq(c.vocab_size, GC27_V);
    ck_assert_int_eq(c.num_heads, GC27_H);
    ck_assert_int_eq(c.num_kv_heads, GC27_HKV);
    ck_assert_int_eq(c.head_dim, GC27_DH);
    ck_assert_int_eq(c.rotary_dim, GC27_R);
    ck_assert_int_eq(c.lin_k_heads, GC27_HK);
    ck_assert_int_eq(c.lin_v_heads, GC27_HV);
    ck_assert_int_eq(c.lin_k_dim, GC27_DK);
    ck_assert_int_eq(c.lin_v_dim, GC27_DV);
    ck_assert_int_eq(c.conv_kernel, GC27_K);
    ck_assert_int_eq(config_conv_dim(&c), GC27_C);
    ck_assert_int_eq(config_num_linear(&c), GC27_N_LINEAR);
    ck_assert_int_eq(config_num_full(&c), GC27_N_FULL);
}
END_TEST

static const gc_matvec_shape *shape_named(const char *name) {
    int n = 0;
    const gc_matvec_shape *s = gc_matvec_shapes(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(s[i].name, name)) return &s[i];
    return NULL;
}

/* The decode plan reads every weight of the trunk and the lm_head once. */
START_TEST(test_plan_weight_bytes) {
    gc_plan_item items[64];
    int n = gc_plan_27b(items, 64, 1, GC_CTX_SHORT, 0);
    ck_assert_int_le(n, 64);
    double bytes = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(items[i].op, "matvec")) continue;
        const gc_matvec_shape *s = shape_named(items[i].shape);
        ck_assert_msg(s != NULL, "plan names an unknown matvec shape '%s'", items[i].shape);
        ck_assert(s->real);
        bytes += 2.0 * items[i].count * s->n_out * (double)s->n_in;
    }
    const double D = GC27_D, F = GC27_F;
    double deltanet = GC27_C * D + GC27_HV * GC27_DV * D + 2.0 * GC27_HV * D + D * GC27_HV * GC27_DV;
    double attention = 2.0 * GC27_H * GC27_DH * D + 2.0 * GC27_HKV * GC27_DH * D + D * GC27_H * GC27_DH;
    double mlp = 3.0 * F * D;
    double want = 2.0 * (GC27_N_LINEAR * deltanet + GC27_N_FULL * attention + 64 * mlp + (double)GC27_V * D);
    ck_assert_double_eq_tol(bytes, want, 1.0);
    /* 51.2 GB: every bf16 weight but the embedding table (2.5 GB, one row read per token) */
    ck_assert_double_eq_tol(bytes / 1e9, 51.24, 0.01);
    /* the verify plan runs the same calls at m = 4, acceptance instead of a sample */
    gc_plan_item v[64];
    int nv = gc_plan_27b(v, 64, 4, GC_CTX_SHORT, 0);
    ck_assert_int_eq(nv, n);
    for (int i = 0; i < nv; i++) ck_assert_int_eq(v[i].m, 4);
    ck_assert_str_eq(v[nv - 1].op, "accept");
    ck_assert_str_eq(items[n - 1].op, "sample");
}
END_TEST

START_TEST(test_estimate_arithmetic) {
    gc_plan_item items[64];
    int n = gc_plan_27b(items, 64, 1, GC_CTX_SHORT, 0);
    gc_results r;
    gc_results_init(&r);
    /* every item measured at 2 us except the attention, missing */
    double want = 0;
    int calls = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(items[i].op, "attention")) continue;
        int dup = 0;
        for (int j = 0; j < r.n; j++)
            dup |= !strcmp(r.rows[j].op, items[i].op) && !strcmp(r.rows[j].shape, items[i].shape);
        if (!dup) fill_row(gc_results_add(&r), items[i].op, "v1", items[i].shape, items[i].m, 2.0, GC_OK);
        want += 2.0 * items[i].count;
        calls += items[i].count;
    }
    gc_estimate e = gc_estimate_plan(&r, items, n);
    ck_assert_int_eq(e.n_missing, 1);
    ck_assert_double_eq_tol(e.us, want, 1e-9);
    ck_assert_int_gt(calls, 64 * 5); /* every layer contributes several calls */
    ck_assert_double_eq_tol(gc_expected_tokens(0.8, 3), (1 - pow(0.8, 4)) / 0.2, 1e-12);
    ck_assert_double_eq(gc_expected_tokens(1.0, 3), 4.0);
    ck_assert_double_eq(gc_expected_tokens(0.0, 3), 1.0);
    /* the printed estimate says what is missing rather than inventing it */
    char dir[256], path[512];
    harness_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/estimate.txt", dir);
    FILE *f = fopen(path, "w");
    gc_print_estimate(f, &r, GC_CTX_SHORT);
    fclose(f);
    f = fopen(path, "r");
    char text[16384];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    ck_assert_msg(strstr(text, "not measured") && strstr(text, "lower bound"), "%s", text);
    harness_rmtree(dir);
    gc_results_free(&r);
}
END_TEST

Suite *kernel_bench_suite(void) {
    Suite *s = suite_create("kernel_bench");
    TCase *tc = harness_tcase("host logic", 10);
    tcase_add_test(tc, test_median);
    tcase_add_test(tc, test_rel_error);
    tcase_add_test(tc, test_status_and_bounds);
    tcase_add_test(tc, test_rotation_and_reps);
    tcase_add_test(tc, test_results_streamed);
    tcase_add_test(tc, test_pick_rows);
    tcase_add_test(tc, test_results_file);
    tcase_add_test(tc, test_format_row);
    tcase_add_test(tc, test_best_us);
    tcase_add_test(tc, test_27b_constants);
    tcase_add_test(tc, test_plan_weight_bytes);
    tcase_add_test(tc, test_estimate_arithmetic);
    suite_add_tcase(s, tc);
    return s;
}
