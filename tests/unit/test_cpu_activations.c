/* test_cpu_activations.c — the engine's vectorised element-wise functions (optimized/cpu/activations.h) against
 * exp in double and the reference's ops, within a few float roundings, and independent of an element's place in
 * the array. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "cpu/activations.h"
#include "harness.h"
#include "ops.h"
#include "philox.h"

/* The polynomial exponential is within about two ulp of exp over the float range (the measurement is in
 * docs/verification.md); 4e-7 leaves room above that and is 25 times tighter than the control's error. */
#define EXP_BOUND 4e-7
#define OP_BOUND 2e-6 /* a function against the reference's op: a few roundings of float32 */

static double relative_gap(float got, double want) { return fabs((double)got - want) / fmax(fabs(want), DBL_MIN); }

/* Largest relative error of e^x ·(1 + skew) over n points spread across the normal range of the result. */
static double worst_exp_gap(double skew, int n) {
    double worst = 0;
    for (int i = 0; i < n; i++) {
        const float x = -87.0f + (88.7f + 87.0f) * (float)philox_uniform(7, 0, (uint64_t)i, 0);
        worst = fmax(worst, relative_gap((float)(cpu_exp(x) * (1.0 + skew)), exp((double)x)));
    }
    return worst;
}

/* The control: an exponential off by one part in 10⁵ must break the bound. */
START_TEST(test_exp_is_within_its_bound) {
    const double gap = worst_exp_gap(0.0, 200000);
    ck_assert_msg(gap <= EXP_BOUND, "cpu_exp off by %.3g relative (at most %g)", gap, EXP_BOUND);
    ck_assert_msg(worst_exp_gap(1e-5, 2000) > EXP_BOUND, "a skew of 1e-5 went unseen");
}
END_TEST

/* 0 and subnormals below, +inf above, NaN through. */
START_TEST(test_exp_edges) {
    ck_assert(cpu_exp(0.0f) == 1.0f);
    ck_assert(cpu_exp(-INFINITY) == 0.0f);
    ck_assert(cpu_exp(-200.0f) == 0.0f);
    ck_assert(isinf(cpu_exp(INFINITY)) && cpu_exp(INFINITY) > 0);
    ck_assert(isinf(cpu_exp(89.0f)) && isinf(cpu_exp(1000.0f)));
    ck_assert(isnan(cpu_exp(NAN)));
    ck_assert_msg(isfinite(cpu_exp(88.7f)) && relative_gap(cpu_exp(88.7f), exp((double)88.7f)) <= EXP_BOUND,
                  "just below overflow: %g against %g", cpu_exp(88.7f), exp((double)88.7f));
    /* the subnormal range: within one subnormal step of the truth */
    for (float x = -103.0f; x < -87.5f; x += 0.37f)
        ck_assert_msg(fabs((double)cpu_exp(x) - exp((double)x)) <= 1.5e-45 + exp((double)x) * EXP_BOUND,
                      "e^%g = %g against %g", x, cpu_exp(x), exp((double)x));
}
END_TEST

#define N 77 /* four whole 16-lane vectors and a tail of 13 */

static void fill(float *x, int n, uint64_t stream, float scale) {
    for (int i = 0; i < n; i++) x[i] = scale * (2.0f * (float)philox_uniform(11, stream, (uint64_t)i, 0) - 1.0f);
}

#define N_FUNCTIONS 6
static const char *const function_names[N_FUNCTIONS] = {"SwiGLU",  "SiLU",    "sigmoid gate",
                                                        "softmax", "RMSNorm", "gated RMSNorm"};

/* dst = src read one element off (dst[i] = src[i + 1], the last from the first) when off, else a copy. */
static void read_off(float *dst, const float *src, int off) {
    for (int i = 0; i < N; i++) dst[i] = src[off ? (i + 1) % N : i];
}

/* Each function's worst relative gap from the reference's op on the same inputs; with off, the engine's function
 * reads its main argument one element off (the control: a neighbour's element instead of its own). */
static void op_gaps(int off, double gaps[N_FUNCTIONS]) {
    float g[N], u[N], z[N], x[N], w[N], a[N], b[N], g1[N], z1[N], x1[N];
    fill(g, N, 1, 12.0f), fill(u, N, 2, 2.0f), fill(z, N, 3, 12.0f), fill(x, N, 4, 3.0f), fill(w, N, 5, 0.5f);
    read_off(g1, g, off), read_off(z1, z, off), read_off(x1, x, off);
    for (int f = 0; f < N_FUNCTIONS; f++) gaps[f] = 0;
    memcpy(a, g1, sizeof a);
    op_swiglu(b, g, u, N);
    cpu_act_swiglu(a, u, N);
    for (int i = 0; i < N; i++) gaps[0] = fmax(gaps[0], relative_gap(a[i], b[i]));
    memcpy(a, g1, sizeof a);
    cpu_act_silu(a, N);
    for (int i = 0; i < N; i++) gaps[1] = fmax(gaps[1], relative_gap(a[i], op_silu(g[i])));
    memcpy(a, u, sizeof a), memcpy(b, u, sizeof b);
    cpu_act_gate(a, z1, N);
    op_output_gate(b, z, N);
    for (int i = 0; i < N; i++) gaps[2] = fmax(gaps[2], relative_gap(a[i], b[i]));
    memcpy(a, x1, sizeof a), memcpy(b, x, sizeof b);
    cpu_act_softmax(a, N);
    op_softmax(b, N);
    for (int i = 0; i < N; i++) gaps[3] = fmax(gaps[3], relative_gap(a[i], b[i]));
    cpu_act_rmsnorm(a, x1, w, N, 1e-6f);
    op_rmsnorm(b, x, w, N, 1e-6f);
    for (int i = 0; i < N; i++) gaps[4] = fmax(gaps[4], relative_gap(a[i], b[i]));
    cpu_act_rmsnorm_gated(a, x, w, z1, N, 1e-6f);
    op_rmsnorm_gated(b, x, w, z, N, 1e-6f);
    for (int i = 0; i < N; i++) gaps[5] = fmax(gaps[5], relative_gap(a[i], b[i]));
}

START_TEST(test_functions_are_the_reference_ops_within_rounding) {
    double gaps[N_FUNCTIONS], control[N_FUNCTIONS];
    op_gaps(0, gaps);
    op_gaps(1, control);
    for (int f = 0; f < N_FUNCTIONS; f++) {
        ck_assert_msg(gaps[f] <= OP_BOUND, "%s: off the reference's op by %.3g relative (at most %g)",
                      function_names[f], gaps[f], OP_BOUND);
        ck_assert_msg(control[f] > OP_BOUND, "%s: reading its argument one element off went unseen (%.3g)",
                      function_names[f], control[f]);
    }
}
END_TEST

/* Every element of an array of one repeated value gets the same bits, at every length (vector lanes and the
 * scalar tail): a verify pass rests on an element's result not depending on its place in the array. */
START_TEST(test_an_element_does_not_depend_on_its_place) {
    const float values[] = {-30.5f, -1.25f, -1e-3f, 0.0f, 0.75f, 4.0f, 20.0f};
    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++)
        for (int n = 1; n <= N; n += 7) {
            float a[N], ones[N];
            for (int i = 0; i < n; i++) a[i] = values[v], ones[i] = 1.0f;
            cpu_act_swiglu(a, ones, n);
            float single = values[v];
            cpu_act_swiglu(&single, ones, 1);
            for (int i = 0; i < n; i++)
                ck_assert_msg(memcmp(&a[i], &single, sizeof single) == 0, "swiglu(%g): element %d of %d differs",
                              values[v], i, n);
            for (int i = 0; i < n; i++) a[i] = values[v];
            cpu_act_silu(a, n);
            single = values[v];
            cpu_act_silu(&single, 1);
            for (int i = 0; i < n; i++)
                ck_assert_msg(memcmp(&a[i], &single, sizeof single) == 0, "silu(%g): element %d of %d differs",
                              values[v], i, n);
        }
}
END_TEST

Suite *cpu_activations_suite(void) {
    Suite *s = suite_create("cpu_activations");
    TCase *tc = harness_tcase("activations", 60);
    tcase_add_test(tc, test_exp_is_within_its_bound);
    tcase_add_test(tc, test_exp_edges);
    tcase_add_test(tc, test_functions_are_the_reference_ops_within_rounding);
    tcase_add_test(tc, test_an_element_does_not_depend_on_its_place);
    suite_add_tcase(s, tc);
    return s;
}
