/* twin.h — the CPU twin of every CUDA kernel: the same contract (kn_*.h), computed by the reference's own ops
 * after converting bf16 to float, never by a second copy of the math. Single-threaded plain C, for the kernel
 * harness and the unit tests. */
#ifndef SPECULA_KN_TWIN_H
#define SPECULA_KN_TWIN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "sampler.h"
#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Y[m, n_out] = X[m, n_in] · Wᵀ, W bf16 [n_out, n_in]. With x_bf16, X is
 * first rounded to bf16 (the contract of the tensor-core versions). */
void twin_matvec(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in, int x_bf16);

/* out[rows, n] = zero-centred RMSNorm of each row of x with w[n]. */
void twin_rmsnorm(float *out, const float *x, const float *w, int rows, int n, float eps);
/* out[rows, n] = RMSNorm(x)·w·silu(z), per row; w[n] shared by all rows. */
void twin_rmsnorm_gated(float *out, const float *x, const float *w, const float *z, int rows, int n, float eps);
/* out[n] = silu(gate)·up */
void twin_swiglu(float *out, const float *gate, const float *up, long n);

/* The paged KV cache (kn_paged.h): per-head q/k norm, RoPE, and the bf16
 * cache write, as kn_rope_kv. */
void twin_rope_kv(float *q_out, uint16_t *Kc, uint16_t *Vc, const int *block_table, const float *qg, const float *k,
                  const float *v, const float *q_norm, const float *k_norm, const int *pos, const int *slot, int m,
                  int H, int Hkv, int Dh, int R, double theta, float eps);

/* Decode / tree attention over the paged cache with the output gate, as
 * kn_attention (tree_mask NULL: a chain). */
void twin_attention(float *out, const float *q, const float *qg, const uint16_t *Kc, const uint16_t *Vc,
                    const int *block_table, int ctx, int m, const uint64_t *tree_mask, int H, int Hkv, int Dh,
                    float scale);

/* The DeltaNet conv step over a tree of m nodes (parent NULL: a chain), as kn_conv_step. */
void twin_conv_step(float *out, float *slots, const float *state0, const float *x, const float *w, const int *parent,
                    int m, int C, int K);

/* The gated delta rule over a tree of m nodes, as kn_delta_step. */
void twin_delta_step(float *out, float *slots, const float *S0, const float *q, const float *k, const float *v,
                     const float *a, const float *b, const float *A_log, const float *dt_bias, const int *parent, int m,
                     int Hk, int Hv, int Dk, int Dv);

/* probs[m, V] from logits[m, V] by sampler_probs, row by row. */
void twin_probs(float *probs, const float *logits, int m, int V, const sampler_params *sp);
/* tokens[t] = sampler_sample(probs row t, {seed, purpose, index0 + t}). */
void twin_sample(int *tokens, const float *probs, int m, int V, uint64_t seed, uint32_t purpose, uint64_t index0);

#ifdef __cplusplus
}
#endif

#endif
