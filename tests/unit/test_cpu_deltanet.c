/* test_cpu_deltanet.c — the engine's gated delta-rule step (optimized/cpu/deltanet.h) against the reference's
 * op_gated_delta_step, bit for bit, and the replay a commit runs against the steps it redoes. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/deltanet.h"
#include "harness.h"
#include "ops.h"
#include "philox.h"

static void fill(float *x, size_t n, uint64_t seed, uint64_t stream, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = scale * (2.0f * philox_uniform(seed, stream, i, 0) - 1.0f);
}

/* Three steps in a row from a random state: the engine's out of place (parent → node), then in place. */
static void check_shape(int Dk, int Dv, uint64_t seed) {
    const size_t n = (size_t)Dk * Dv;
    float *S_ref = malloc(n * sizeof(float)), *S_parent = malloc(n * sizeof(float)),
          *S_node = malloc(n * sizeof(float));
    float *saved = malloc(n * sizeof(float));
    fill(S_ref, n, seed, 0, 0.5f);
    memcpy(S_parent, S_ref, n * sizeof(float));
    memcpy(saved, S_ref, n * sizeof(float));
    for (int step = 0; step < 3; step++) {
        float q[2][256], k[2][256], v[CPU_DELTA_MAX_DV], out_ref[CPU_DELTA_MAX_DV], out[CPU_DELTA_MAX_DV];
        fill(q[0], (size_t)Dk, seed, 1 + (uint64_t)step, 1.0f);
        fill(k[0], (size_t)Dk, seed, 11 + (uint64_t)step, 1.0f);
        fill(v, (size_t)Dv, seed, 21 + (uint64_t)step, 2.0f);
        memcpy(q[1], q[0], sizeof q[0]);
        memcpy(k[1], k[0], sizeof k[0]);
        const float g = -0.05f * (float)(step + 1), beta = 0.3f + 0.2f * (float)step;
        op_gated_delta_step(out_ref, S_ref, q[0], k[0], v, g, beta, Dk, Dv);
        if (step == 0) {
            cpu_delta_step(out, S_node, S_parent, q[1], k[1], v, g, beta, Dk, Dv, NULL);
            ck_assert_msg(memcmp(S_parent, saved, n * sizeof(float)) == 0, "Dk=%d Dv=%d: the parent's state changed",
                          Dk, Dv);
        } else {
            cpu_delta_step(out, S_node, S_node, q[1], k[1], v, g, beta, Dk, Dv, NULL);
        }
        ck_assert_msg(memcmp(out, out_ref, (size_t)Dv * sizeof(float)) == 0, "Dk=%d Dv=%d step %d: read-out differs",
                      Dk, Dv, step);
        ck_assert_msg(memcmp(S_node, S_ref, n * sizeof(float)) == 0, "Dk=%d Dv=%d step %d: state differs", Dk, Dv,
                      step);
        ck_assert(memcmp(q[1], q[0], (size_t)Dk * sizeof(float)) == 0); /* normalised in place the same way */
    }
    free(S_ref), free(S_parent), free(S_node), free(saved);
}

/* The same state and read-out, in place and from a parent's state into a node's, over value widths on and off the
 * vector lanes; the parent's state is left as it was. */
START_TEST(test_step_is_the_reference_bit_for_bit) {
    static const int shapes[][2] = {{4, 4}, {8, 12}, {16, 16}, {32, 17}, {64, 128}, {128, 128}, {128, 250}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) check_shape(shapes[s][0], shapes[s][1], 40 + s);
}
END_TEST

/* The bitwise comparison sees a change of a single step's parameter: the write strength off by one float ulp. */
START_TEST(test_control_beta_one_ulp) {
    const int Dk = 16, Dv = 16;
    float S_ref[256], S[256], q[16], k[16], v[16], out[16], out_ref[16];
    fill(S_ref, 256, 7, 0, 0.5f);
    memcpy(S, S_ref, sizeof S);
    fill(q, 16, 7, 1, 1.0f), fill(k, 16, 7, 2, 1.0f), fill(v, 16, 7, 3, 2.0f);
    float q2[16], k2[16];
    memcpy(q2, q, sizeof q), memcpy(k2, k, sizeof k);
    op_gated_delta_step(out_ref, S_ref, q, k, v, -0.25f, 0.5f, Dk, Dv);
    cpu_delta_step(out, S, S, q2, k2, v, -0.25f, nextafterf(0.5f, 1.0f), Dk, Dv, NULL);
    ck_assert(memcmp(S, S_ref, sizeof S) != 0);
}
END_TEST

/* Three logged steps along a chain (the pass: states in scratch), then the log replayed on the root's state (the
 * commit): the replayed state is the last step's, bit for bit. bump: perturb the second step's logged write by
 * one ulp (the control). Returns 1 when they are equal. */
static int replay_matches(int Dk, int Dv, uint64_t seed, int bump) {
    const size_t n = (size_t)Dk * Dv;
    float *root = malloc(n * sizeof(float)), *node[3], *log[3];
    fill(root, n, seed, 0, 0.5f);
    for (int s = 0; s < 3; s++) {
        float q[256], k[256], v[CPU_DELTA_MAX_DV], out[CPU_DELTA_MAX_DV];
        fill(q, (size_t)Dk, seed, 1 + (uint64_t)s, 1.0f);
        fill(k, (size_t)Dk, seed, 11 + (uint64_t)s, 1.0f);
        fill(v, (size_t)Dv, seed, 21 + (uint64_t)s, 2.0f);
        node[s] = malloc(n * sizeof(float));
        log[s] = malloc((size_t)(1 + Dk + Dv) * sizeof(float));
        cpu_delta_step(out, node[s], s ? node[s - 1] : root, q, k, v, -0.05f * (float)(s + 1), 0.3f + 0.2f * (float)s,
                       Dk, Dv, log[s]);
    }
    if (bump) log[1][1 + Dk] = nextafterf(log[1][1 + Dk], INFINITY);
    for (int s = 0; s < 3; s++) cpu_delta_replay(root, log[s], Dk, Dv);
    const int equal = memcmp(root, node[2], n * sizeof(float)) == 0;
    for (int s = 0; s < 3; s++) free(node[s]), free(log[s]);
    free(root);
    return equal;
}

START_TEST(test_replay_is_the_steps_bit_for_bit) {
    static const int shapes[][2] = {{4, 4}, {16, 16}, {32, 17}, {128, 128}, {128, 250}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        ck_assert_msg(replay_matches(shapes[s][0], shapes[s][1], 60 + s, 0), "Dk=%d Dv=%d: the replay differs",
                      shapes[s][0], shapes[s][1]);
}
END_TEST

START_TEST(test_control_replay_one_ulp) { ck_assert(!replay_matches(16, 16, 61, 1)); }
END_TEST

Suite *cpu_deltanet_suite(void) {
    Suite *s = suite_create("cpu_deltanet");
    TCase *tc = harness_tcase("step", 60);
    tcase_add_test(tc, test_step_is_the_reference_bit_for_bit);
    tcase_add_test(tc, test_control_beta_one_ulp);
    tcase_add_test(tc, test_replay_is_the_steps_bit_for_bit);
    tcase_add_test(tc, test_control_replay_one_ulp);
    suite_add_tcase(s, tc);
    return s;
}
