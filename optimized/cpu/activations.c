/* activations.c — the CPU engine's element-wise functions (activations.h). The exponential is plain float and
 * integer arithmetic, so its loops vectorise; multiply and add are never fused (ISO C mode), so a vector lane and
 * the scalar tail compute the same bits. On x86-64 each function has one clone per instruction set. */
#include "activations.h"
#include "lanes.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define ACT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ACT_CLONES
#endif

static inline float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline uint32_t float_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* e^x = 2^n · e^r with n = round(x / ln 2) and r = x − n·ln 2 in [−ln2/2, ln2/2]: r in two steps (Cody and
 * Waite: ln 2's leading bits times n are exact), e^r by its Taylor polynomial to r⁷ (the first term left out,
 * r⁸/8!, is under 1e−8 of the result: the polynomial's roundings dominate), 2^n as two factors 2^(n/2)·2^(n−n/2) so
 * that the results near overflow and in the subnormal range come out of one multiplication each. x is clamped to [−104,
 * 89] first (both ends already give 0 and +inf); a NaN passes through the arithmetic as NaN. */
static inline float exp_poly(float x) {
    const float round_magic = 12582912.0f; /* 1.5·2²³: adding it rounds to an integer in the low bits */
    const float log2e = 1.44269504088896341f, ln2_hi = 0.693145751953125f, ln2_lo = 1.42860682030941723e-6f;
    x = x < -104.0f ? -104.0f : x;
    x = x > 89.0f ? 89.0f : x;
    const float t = x * log2e + round_magic;
    const float n = t - round_magic;
    const int32_t ni = (int32_t)(float_to_bits(t) - float_to_bits(round_magic));
    const float r = (x - n * ln2_hi) - n * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const int32_t half = ni / 2;
    const float scale1 = bits_to_float((uint32_t)(half + 127) << 23);
    const float scale2 = bits_to_float((uint32_t)(ni - half + 127) << 23);
    return p * scale1 * scale2;
}

float cpu_exp(float x) { return exp_poly(x); }

ACT_CLONES
void cpu_act_silu(float *x, int n) {
    for (int i = 0; i < n; i++) x[i] = x[i] / (1.0f + exp_poly(-x[i]));
}

ACT_CLONES
void cpu_act_swiglu(float *g, const float *u, int n) {
    for (int i = 0; i < n; i++) g[i] = g[i] / (1.0f + exp_poly(-g[i])) * u[i];
}

ACT_CLONES
void cpu_act_gate(float *out, const float *gate, int n) {
    for (int i = 0; i < n; i++) out[i] *= 1.0f / (1.0f + exp_poly(-gate[i]));
}

ACT_CLONES
void cpu_act_rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    const float r = 1.0f / sqrtf(lanes_dot(x, x, n) / (float)n + eps);
    for (int i = 0; i < n; i++) out[i] = x[i] * r * (1.0f + w[i]);
}

ACT_CLONES
void cpu_act_rmsnorm_gated(float *out, const float *x, const float *w, const float *z, int n, float eps) {
    const float r = 1.0f / sqrtf(lanes_dot(x, x, n) / (float)n + eps);
    for (int i = 0; i < n; i++) out[i] = x[i] * r * w[i] * (z[i] / (1.0f + exp_poly(-z[i])));
}

ACT_CLONES
void cpu_act_softmax(float *x, int n) {
    float max = -INFINITY;
    for (int i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    if (max == -INFINITY) { /* everything masked: no distribution to speak of (op_softmax's answer) */
        for (int i = 0; i < n; i++) x[i] = 0.0f;
        return;
    }
    for (int i = 0; i < n; i++) x[i] = exp_poly(x[i] - max);
    const float inv = 1.0f / lanes_sum(x, n);
    for (int i = 0; i < n; i++) x[i] *= inv;
}
