/* test_ops.c — the building blocks of the forward against hand computations and invariants: both RMSNorms,
 * rotate-half RoPE, the causal conv's rolling state, the gated delta rule against its definition written out,
 * softmax with masked entries, and the DeltaNet and attention gates at inputs with closed-form values. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "harness.h"
#include "ops.h"

/* float32 rounding over a handful of terms stays far below this */
#define TIGHT 1e-6f

START_TEST(test_rmsnorm_zero_centred) {
    float x[4] = {1, -2, 3, -4}, w[4] = {0, 0.5f, -1, 1}, out[4];
    op_rmsnorm(out, x, w, 4, 0.0f);
    float r = 1.0f / sqrtf((1 + 4 + 9 + 16) / 4.0f);
    for (int i = 0; i < 4; i++) ck_assert_float_eq_tol(out[i], x[i] * r * (1 + w[i]), TIGHT);
    ck_assert_float_eq_tol(out[2], 0.0f, TIGHT); /* w = −1 silences the channel under the 1+w convention */
}
END_TEST

START_TEST(test_rmsnorm_gated_plain_weight) {
    float x[3] = {2, 0, -2}, w[3] = {1, 1, 0.5f}, z[3] = {0, 5, -1}, out[3];
    op_rmsnorm_gated(out, x, w, z, 3, 1e-6f);
    float r = 1.0f / sqrtf(8.0f / 3.0f + 1e-6f);
    for (int i = 0; i < 3; i++) ck_assert_float_eq_tol(out[i], x[i] * r * w[i] * op_silu(z[i]), TIGHT);
    ck_assert_float_eq_tol(out[0], 0.0f, TIGHT); /* silu(0) = 0 */
}
END_TEST

START_TEST(test_rope) {
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8];
    memcpy(y, x, sizeof x);
    op_rope(y, 4, 0, 10000.0); /* position 0 is the identity */
    ck_assert(memcmp(x, y, sizeof x) == 0);
    op_rope(y, 4, 3, 10000.0);
    /* pairs (0,2) and (1,3) rotate; dims 4..7 pass through; norms are kept */
    for (int i = 4; i < 8; i++) ck_assert_float_eq(y[i], x[i]);
    float f0 = 3.0f, f1 = 3.0f * powf(10000.0f, -0.5f);
    ck_assert_float_eq_tol(y[0], x[0] * cosf(f0) - x[2] * sinf(f0), TIGHT);
    ck_assert_float_eq_tol(y[2], x[2] * cosf(f0) + x[0] * sinf(f0), TIGHT);
    ck_assert_float_eq_tol(y[1], x[1] * cosf(f1) - x[3] * sinf(f1), TIGHT);
    ck_assert_float_eq_tol(y[0] * y[0] + y[2] * y[2], x[0] * x[0] + x[2] * x[2], 1e-5f);
}
END_TEST

/* An odd R (int(head_dim · factor) = 5): ⌈5/2⌉ = 3 frequencies θ^(−2i/5) rotate the pairs (0,3), (1,4), (2,5);
 * the rest pass through. */
START_TEST(test_rope_odd) {
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8];
    memcpy(y, x, sizeof x);
    op_rope(y, 5, 3, 10000.0);
    for (int i = 6; i < 8; i++) ck_assert_float_eq(y[i], x[i]);
    for (int i = 0; i < 3; i++) {
        const float f = 3.0f * (float)(1.0 / pow(10000.0, 2.0 * i / 5.0));
        ck_assert_float_eq_tol(y[i], x[i] * cosf(f) - x[i + 3] * sinf(f), TIGHT);
        ck_assert_float_eq_tol(y[i + 3], x[i + 3] * cosf(f) + x[i] * sinf(f), TIGHT);
    }
}
END_TEST

START_TEST(test_conv_step_rolls_state) {
    /* two channels, width 3: out_t = silu(w0·x_{t−2} + w1·x_{t−1} + w2·x_t) */
    const int C = 2, K = 3;
    float w[6] = {0.5f, -1, 2, 1, 1, 1}, state[4] = {0};
    float xs[3][2] = {{1, 2}, {3, 4}, {5, 6}}, out[2];
    for (int t = 0; t < 3; t++) {
        op_conv_step(out, state, xs[t], w, C, K);
        for (int c = 0; c < C; c++) {
            float a = t >= 2 ? xs[t - 2][c] : 0, b = t >= 1 ? xs[t - 1][c] : 0;
            float want = op_silu(w[c * K] * a + w[c * K + 1] * b + w[c * K + 2] * xs[t][c]);
            ck_assert_float_eq_tol(out[c], want, TIGHT);
        }
    }
    ck_assert_float_eq(state[0], 3); /* oldest first: x_1, x_2 of channel 0 */
    ck_assert_float_eq(state[1], 5);
}
END_TEST

START_TEST(test_gated_delta_rule_definition) {
    enum { Dk = 3, Dv = 2 };
    float S[Dk * Dv] = {0.1f, -0.2f, 0.3f, 0.0f, -0.5f, 0.25f}, S0[Dk * Dv];
    memcpy(S0, S, sizeof S);
    float q[Dk] = {1, 2, 2}, k[Dk] = {0, 3, 4}, v[Dv] = {1, -1}, out[Dv];
    const float g = -0.7f, beta = 0.6f;
    op_gated_delta_step(out, S, q, k, v, g, beta, Dk, Dv);
    /* written out: k̂ = k/|k|, q̂ = q/|q|/sqrt(Dk), S' = e^g S0 + k̂ (β(v − e^g S0ᵀk̂))ᵀ, out = S'ᵀq̂ */
    float kh[Dk] = {0, 0.6f, 0.8f}, qh[Dk] = {1 / 3.0f, 2 / 3.0f, 2 / 3.0f};
    for (int i = 0; i < Dk; i++) qh[i] /= sqrtf(3.0f);
    float decay = expf(g), want_S[Dk * Dv];
    for (int j = 0; j < Dv; j++) {
        float pred = 0;
        for (int i = 0; i < Dk; i++) pred += decay * S0[i * Dv + j] * kh[i];
        float u = beta * (v[j] - pred);
        for (int i = 0; i < Dk; i++) want_S[i * Dv + j] = decay * S0[i * Dv + j] + kh[i] * u;
    }
    for (int i = 0; i < Dk * Dv; i++) ck_assert_float_eq_tol(S[i], want_S[i], 1e-5f);
    for (int j = 0; j < Dv; j++) {
        float o = 0;
        for (int i = 0; i < Dk; i++) o += want_S[i * Dv + j] * qh[i];
        ck_assert_float_eq_tol(out[j], o, 1e-5f);
    }
}
END_TEST

START_TEST(test_softmax_masked) {
    float x[4] = {0, -INFINITY, 0, -INFINITY};
    op_softmax(x, 4);
    ck_assert_float_eq(x[0], 0.5f);
    ck_assert_float_eq(x[1], 0.0f);
    float all[2] = {-INFINITY, -INFINITY};
    op_softmax(all, 2);
    ck_assert_float_eq(all[0], 0.0f);
}
END_TEST

START_TEST(test_attention_head_weights) {
    float k0[2] = {1, 0}, k1[2] = {0, 1}, v0[2] = {1, 2}, v1[2] = {3, 4}, q[2] = {2, 0}, out[2], scores[2];
    const float *keys[2] = {k0, k1}, *values[2] = {v0, v1};
    op_attention_head(out, q, keys, values, 2, 2, 0.5f, scores);
    float a = expf(1.0f) / (expf(1.0f) + 1.0f);
    ck_assert_float_eq_tol(out[0], a * 1 + (1 - a) * 3, TIGHT);
    ck_assert_float_eq_tol(out[1], a * 2 + (1 - a) * 4, TIGHT);
}
END_TEST

START_TEST(test_softplus_matches_torch_threshold) {
    ck_assert_float_eq(op_softplus(25.0f), 25.0f);
    ck_assert_float_eq_tol(op_softplus(0.0f), logf(2.0f), TIGHT);
    ck_assert_float_eq_tol(op_softplus(-30.0f), expf(-30.0f), 1e-18f);
}
END_TEST

/* ln 3 = 1.09861229, so sigmoid(±ln 3) = 1/(1 + 3^∓1) = 3/4 and 1/4. */
#define LN3 1.09861229f

START_TEST(test_deltanet_beta_is_sigmoid) {
    ck_assert_float_eq(op_deltanet_beta(0.0f), 0.5f);
    ck_assert_float_eq_tol(op_deltanet_beta(LN3), 0.75f, TIGHT);
    ck_assert_float_eq_tol(op_deltanet_beta(-LN3), 0.25f, TIGHT);
}
END_TEST

START_TEST(test_deltanet_decay_known_values) {
    /* A_log = 0: exp(0) = 1; a + dt_bias = 0: softplus(0) = ln 2 = 0.69314718 */
    ck_assert_float_eq_tol(op_deltanet_decay(0.5f, 0.0f, -0.5f), -0.69314718f, TIGHT);
    /* A_log = ln 2: exp = 2; a + dt_bias = 1 + 0.09861229 = ln 3: softplus = ln(1 + 3) = ln 4,
     * so g = −2·ln 4 = −2.77258872 (float rounding of the inputs: a few ulps at 2.8) */
    ck_assert_float_eq_tol(op_deltanet_decay(1.0f, 0.69314718f, 0.09861229f), -2.77258872f, 2e-6f);
    /* a + dt_bias = 25 > 20: torch's softplus is the identity there, so g = −1·25 exactly */
    ck_assert_float_eq(op_deltanet_decay(30.0f, 0.0f, -5.0f), -25.0f);
    /* a + dt_bias = −30: softplus ≈ e^−30 = 9.3576230e−14 (to 1e−6 relative), a decay exp(g) just below 1 */
    ck_assert_float_eq_tol(op_deltanet_decay(-30.0f, 0.0f, 0.0f), -9.3576230e-14f, 1e-19f);
}
END_TEST

START_TEST(test_output_gate_known_values) {
    /* sigmoid(0) = 1/2, sigmoid(±ln 3) = 3/4, 1/4 */
    float out[3] = {2, 3, -4}, gate[3] = {0, LN3, -LN3};
    op_output_gate(out, gate, 3);
    ck_assert_float_eq(out[0], 1.0f);
    ck_assert_float_eq_tol(out[1], 2.25f, TIGHT);
    ck_assert_float_eq_tol(out[2], -1.0f, TIGHT);
}
END_TEST

Suite *ops_suite(void) {
    Suite *s = suite_create("ops");
    TCase *tc = harness_tcase("core", 10);
    tcase_add_test(tc, test_rmsnorm_zero_centred);
    tcase_add_test(tc, test_rmsnorm_gated_plain_weight);
    tcase_add_test(tc, test_rope);
    tcase_add_test(tc, test_rope_odd);
    tcase_add_test(tc, test_conv_step_rolls_state);
    tcase_add_test(tc, test_gated_delta_rule_definition);
    tcase_add_test(tc, test_softmax_masked);
    tcase_add_test(tc, test_attention_head_weights);
    tcase_add_test(tc, test_softplus_matches_torch_threshold);
    tcase_add_test(tc, test_deltanet_beta_is_sigmoid);
    tcase_add_test(tc, test_deltanet_decay_known_values);
    tcase_add_test(tc, test_output_gate_known_values);
    suite_add_tcase(s, tc);
    return s;
}
