/* kn_matvec.h — the bf16-weight linear layers: one position (decode) and a
 * batch of m ≤ 16 positions (a verify pass) reading each weight once.
 * Contract of every version:
 *   Y[m, n_out] = X[m, n_in] · Wᵀ     W[n_out, n_in] bf16 (the checkpoint's
 *   layout), X and Y fp32, fp32 accumulation. Y must not alias X.
 * Versions whose name ends in "-xbf16" round X to bf16 first (the tensor
 * cores take bf16 operands): the CPU twin applies the same rounding, and the
 * cost in accuracy is ~2⁻⁹/√3 ≈ 1e-3 relative to the fp32-activation result.
 * Any n_out ≥ 1, n_in ≥ 1; the 16-byte paths need n_in % 8 == 0 and fall
 * back to element loads otherwise. */
#ifndef SPECULA_KN_MATVEC_H
#define SPECULA_KN_MATVEC_H

#include "kn_api.h"

#define KN_MATVEC_MAX_M 16

typedef cudaError_t (*kn_matvec_fn)(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                                    cudaStream_t stream);

typedef struct {
    const char *name; /* "v1" … ; "-xbf16" suffix: activations rounded to bf16 */
    const char *what; /* one line: what changed from the previous version */
    kn_matvec_fn fn;
    int max_m;  /* largest m the version accepts (1 for the decode kernels) */
    int x_bf16; /* rounds X to bf16 */
} kn_matvec_version;

/* Decode (m = 1) versions, then batch versions; the last batch entry is the
 * cuBLAS baseline when cuBLAS is compiled in. */
KN_API const kn_matvec_version *kn_matvec_versions(int *count);

/* The version the engine uses for a given m (the fastest validated design). */
KN_API cudaError_t kn_matvec(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                             cudaStream_t stream);

/* X[n] fp32 → Xb[n] bf16 (round to nearest even), for the cuBLAS baseline. */
KN_API cudaError_t kn_f32_to_bf16(uint16_t *out, const float *in, long n, cudaStream_t stream);

#endif
