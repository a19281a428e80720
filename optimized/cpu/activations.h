/* activations.h — the CPU engine's element-wise functions that take an
 * exponential (SiLU, SwiGLU, the attention's sigmoid gate, the softmax)
 * and its RMSNorms, in forms the compiler vectorises: the exponential is
 * a polynomial (cpu_exp) instead of a call to libm's expf, and the norms'
 * sums of squares add in 16 lanes. Each element's result depends on that
 * element alone (and, for a norm or softmax, on its row), never on where
 * it falls in a vector, so a verify pass and a decode step still agree bit
 * for bit. They differ from the reference's ops (ops/ops.h) in the last
 * bits only; the exact cross-test mode (float32 weights) calls those ops
 * instead. */
#ifndef SPECULA_CPU_ACTIVATIONS_H
#define SPECULA_CPU_ACTIVATIONS_H

/* e^x within 2 ulp of the exact value where the result is a normal float (measured: at most 1.02e−7 relative
 * over 2·10⁷ points of [−87, 88.7]), within a subnormal step below that, 0 under about −103.9, +inf above
 * ln(FLT_MAX), NaN for NaN. */
float cpu_exp(float x);

void cpu_act_silu(float *x, int n);                                                 /* x = x·sigmoid(x), in place */
void cpu_act_swiglu(float *g, const float *u, int n);                               /* g = silu(g)·u */
void cpu_act_gate(float *out, const float *gate, int n);                            /* out *= sigmoid(gate) */
void cpu_act_softmax(float *x, int n);                                              /* op_softmax's contract */
void cpu_act_rmsnorm(float *out, const float *x, const float *w, int n, float eps); /* op_rmsnorm's */
/* op_rmsnorm_gated's: out = x / rms(x) · w · silu(z). */
void cpu_act_rmsnorm_gated(float *out, const float *x, const float *w, const float *z, int n, float eps);

#endif
