/* ops.c — float32 reference implementations of the ops in ops.h.
 * Plain loops, accumulation in float, in index order: the readable
 * definition, not the fast one. */
#include "ops.h"

#include <math.h>

float op_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

float op_silu(float x) { return x / (1.0f + expf(-x)); }

float op_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

float op_deltanet_beta(float b) { return op_sigmoid(b); }

float op_deltanet_decay(float a, float A_log, float dt_bias) { return -expf(A_log) * op_softplus(a + dt_bias); }

void op_output_gate(float *out, const float *gate, int n) {
    for (int i = 0; i < n; i++) out[i] *= op_sigmoid(gate[i]);
}

void op_matvec(float *out, const float *W, const float *x, int n_out, int n_in) {
    for (int i = 0; i < n_out; i++) {
        const float *row = W + (long)i * n_in;
        float acc = 0.0f;
        for (int j = 0; j < n_in; j++) acc += row[j] * x[j];
        out[i] = acc;
    }
}

static float inv_rms(const float *x, int n, float eps) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    return 1.0f / sqrtf(ss / (float)n + eps);
}

void op_rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    float r = inv_rms(x, n, eps);
    for (int i = 0; i < n; i++) out[i] = x[i] * r * (1.0f + w[i]);
}

void op_rmsnorm_gated(float *out, const float *x, const float *w, const float *z, int n, float eps) {
    float r = inv_rms(x, n, eps);
    for (int i = 0; i < n; i++) out[i] = x[i] * r * w[i] * op_silu(z[i]);
}

void op_l2norm(float *x, int n, float eps) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    float r = 1.0f / sqrtf(ss + eps);
    for (int i = 0; i < n; i++) x[i] *= r;
}

void op_swiglu(float *out, const float *gate, const float *up, int n) {
    for (int i = 0; i < n; i++) out[i] = op_silu(gate[i]) * up[i];
}

void op_softmax(float *x, int n) {
    float max = -INFINITY;
    for (int i = 0; i < n; i++)
        if (x[i] > max) max = x[i];
    if (max == -INFINITY) { /* everything masked: no distribution to speak of */
        for (int i = 0; i < n; i++) x[i] = 0.0f;
        return;
    }
    float sum = 0.0f;
    for (int i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    for (int i = 0; i < n; i++) x[i] /= sum;
}

void op_rope(float *x, int R, int pos, double theta) {
    int half = (R + 1) / 2; /* ⌈R/2⌉ frequencies */
    for (int i = 0; i < half; i++) {
        /* transformers computes inv_freq and the angle in float32 */
        float inv_freq = (float)(1.0 / pow(theta, (double)(2 * i) / (double)R));
        float angle = (float)pos * inv_freq;
        float c = cosf(angle), s = sinf(angle);
        float a = x[i], b = x[i + half];
        x[i] = a * c - b * s;
        x[i + half] = b * c + a * s;
    }
}

void op_attention_head(float *out, const float *q, const float *const *keys, const float *const *values, int n, int Dh,
                       float scale, float *scores) {
    for (int t = 0; t < n; t++) {
        float dot = 0.0f;
        for (int d = 0; d < Dh; d++) dot += q[d] * keys[t][d];
        scores[t] = dot * scale;
    }
    op_softmax(scores, n);
    for (int d = 0; d < Dh; d++) out[d] = 0.0f;
    for (int t = 0; t < n; t++)
        for (int d = 0; d < Dh; d++) out[d] += scores[t] * values[t][d];
}

void op_conv_taps(float *out, float *state, const float *x, const float *w, int C, int K) {
    for (int c = 0; c < C; c++) {
        float *st = state + (long)c * (K - 1);
        const float *wc = w + (long)c * K;
        float acc = wc[K - 1] * x[c];
        for (int j = 0; j < K - 1; j++) acc += wc[j] * st[j];
        for (int j = 0; j + 1 < K - 1; j++) st[j] = st[j + 1];
        if (K > 1) st[K - 2] = x[c];
        out[c] = acc;
    }
}

void op_conv_step(float *out, float *state, const float *x, const float *w, int C, int K) {
    op_conv_taps(out, state, x, w, C, K);
    for (int c = 0; c < C; c++) out[c] = op_silu(out[c]);
}

void op_gated_delta_step(float *out, float *S, float *q, float *k, const float *v, float g, float beta, int Dk,
                         int Dv) {
    op_l2norm(q, Dk, 1e-6f);
    op_l2norm(k, Dk, 1e-6f);
    float qscale = 1.0f / sqrtf((float)Dk);
    for (int i = 0; i < Dk; i++) q[i] *= qscale;
    float decay = expf(g);
    for (long i = 0; i < (long)Dk * Dv; i++) S[i] *= decay;
    for (int j = 0; j < Dv; j++) {
        float kv = 0.0f; /* (Sᵀk)[j]: what the state already predicts for v[j] */
        for (int i = 0; i < Dk; i++) kv += S[(long)i * Dv + j] * k[i];
        float u = (v[j] - kv) * beta;
        for (int i = 0; i < Dk; i++) S[(long)i * Dv + j] += k[i] * u;
    }
    for (int j = 0; j < Dv; j++) {
        float acc = 0.0f;
        for (int i = 0; i < Dk; i++) acc += S[(long)i * Dv + j] * q[i];
        out[j] = acc;
    }
}
