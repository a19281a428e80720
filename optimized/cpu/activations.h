/* activations.h — the CPU engine's element-wise functions that take an exponential (SiLU, SwiGLU, the attention's
 * gate, the softmax) and its RMSNorms, in forms the compiler vectorises. An element's bits depend on that element
 * (and its row) alone, never on its place in a vector, so a verify pass and a decode step agree bit for bit. They
 * differ from the reference's ops (ops/ops.h) in the last bits; the exact cross-test mode calls those instead. */
#ifndef SPECULA_CPU_ACTIVATIONS_H
#define SPECULA_CPU_ACTIVATIONS_H

/* e^x by a polynomial instead of libm's expf: within 2 ulp of the exact value where the result is a normal float
 * (docs/performance.md), within a subnormal step below that, 0 under about −103.9, +inf above ln(FLT_MAX), NaN for
 * NaN. */
float cpu_exp(float x);

void cpu_act_silu(float *x, int n);                                                 /* x = x·sigmoid(x), in place */
void cpu_act_swiglu(float *g, const float *u, int n);                               /* g = silu(g)·u */
void cpu_act_gate(float *out, const float *gate, int n);                            /* out *= sigmoid(gate) */
void cpu_act_softmax(float *x, int n);                                              /* op_softmax's contract */
void cpu_act_rmsnorm(float *out, const float *x, const float *w, int n, float eps); /* op_rmsnorm's */
/* op_rmsnorm_gated's: out = x / rms(x) · w · silu(z). */
void cpu_act_rmsnorm_gated(float *out, const float *x, const float *w, const float *z, int n, float eps);

#endif
