/* test_cpu_attention.c — the engine's attention head (optimized/cpu/attention.h) against a double-precision
 * attention and the reference's op_attention_head, over head widths on and off the 16 lanes and context lengths
 * from 1 to past a KV block. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "cpu/attention.h"
#include "harness.h"
#include "ops.h"
#include "philox.h"

#define MAX_N 80
#define MAX_DH 260

static void fill(float *x, size_t n, uint64_t seed, uint64_t stream, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = scale * (2.0f * philox_uniform(seed, stream, i, 0) - 1.0f);
}

/* The attention in double: the truth both float32 versions approximate. */
static void attention_double(double *out, const float *q, const float *const *keys, const float *const *values, int n,
                             int Dh, double scale) {
    double s[MAX_N], top = -INFINITY, z = 0;
    for (int t = 0; t < n; t++) {
        s[t] = 0;
        for (int d = 0; d < Dh; d++) s[t] += (double)q[d] * keys[t][d];
        s[t] *= scale;
        top = fmax(top, s[t]);
    }
    for (int t = 0; t < n; t++) z += (s[t] = exp(s[t] - top));
    for (int d = 0; d < Dh; d++) out[d] = 0;
    for (int t = 0; t < n; t++)
        for (int d = 0; d < Dh; d++) out[d] += s[t] / z * values[t][d];
}

/* Largest |got − want| over the head, in units of max |value| (the scale of the output). */
static double worst_gap(int n, int Dh, uint64_t seed, float scale_error) {
    static float K[MAX_N][MAX_DH], Vv[MAX_N][MAX_DH];
    float q[MAX_DH], out[MAX_DH], out_ref[MAX_DH], scores[MAX_N];
    const float *keys[MAX_N], *values[MAX_N];
    double truth[MAX_DH];
    fill(q, (size_t)Dh, seed, 0, 3.0f); /* scores of a few units: a softmax far from uniform */
    for (int t = 0; t < n; t++) {
        fill(K[t], (size_t)Dh, seed, 1 + (uint64_t)t, 1.0f);
        fill(Vv[t], (size_t)Dh, seed, 1000 + (uint64_t)t, 1.0f);
        keys[t] = K[t], values[t] = Vv[t];
    }
    const float scale = 1.0f / sqrtf((float)Dh);
    cpu_attention_head(out, q, keys, values, n, Dh, scale * (1.0f + scale_error), scores);
    op_attention_head(out_ref, q, keys, values, n, Dh, scale, scores);
    attention_double(truth, q, keys, values, n, Dh, scale);
    double worst = 0;
    for (int d = 0; d < Dh; d++) {
        worst = fmax(worst, fabs(out[d] - truth[d]));
        worst = fmax(worst, fabs(out[d] - out_ref[d]));
    }
    return worst;
}

/* Only the scores' dot products add in a different order, so the output may move by a few float32 roundings of
 * the scores. The bound sits 13× above the gap measured between the float32 versions and the truth, and 10× below
 * what the control (the scale off by 1e-4) moves the output (the figures are in docs/verification.md). */
#define BOUND 2e-6

static const int shapes[][2] = {{1, 64}, {7, 16}, {33, 100}, {64, 256}, {80, 129}, {5, 3}};

START_TEST(test_head_is_within_rounding_of_the_truth) {
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const double gap = worst_gap(shapes[s][0], shapes[s][1], 40 + s, 0.0f);
        ck_assert_msg(gap <= BOUND, "n %d, Dh %d: off by %.3g (at most %g)", shapes[s][0], shapes[s][1], gap, BOUND);
    }
}
END_TEST

START_TEST(test_control_scale_off_by_1e4) {
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        if (shapes[s][0] == 1) continue; /* one key: the softmax is 1 whatever the scale */
        const double gap = worst_gap(shapes[s][0], shapes[s][1], 40 + s, 1e-4f);
        ck_assert_msg(gap > BOUND, "n %d, Dh %d: a scale off by 1e-4 moved the output by only %.3g", shapes[s][0],
                      shapes[s][1], gap);
    }
}
END_TEST

Suite *cpu_attention_suite(void) {
    Suite *s = suite_create("cpu_attention");
    TCase *tc = harness_tcase("head", 60);
    tcase_add_test(tc, test_head_is_within_rounding_of_the_truth);
    tcase_add_test(tc, test_control_scale_off_by_1e4);
    suite_add_tcase(s, tc);
    return s;
}
