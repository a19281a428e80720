/* kn_norm.h — the element-wise and per-row ops around the linear layers, fp32 in and out, with the contracts of
 * reference/ops.h. Any sizes ≥ 1. */
#ifndef SPECULA_KN_NORM_H
#define SPECULA_KN_NORM_H

#include "kn_api.h"

/* rmsnorm: out[rows, n] = x · rsqrt(mean(x²) + eps) · (1 + w), op_rmsnorm per row. out may alias x. */
typedef cudaError_t (*kn_rmsnorm_fn)(float *out, const float *x, const float *w, int rows, int n, float eps,
                                     cudaStream_t stream);
/* gatednorm: out[rows, n] = x · rsqrt(mean(x²) + eps) · w · silu(z), op_rmsnorm_gated per row: the DeltaNet output
 * norm, one row per value head, w[Dv] shared. out may alias x. */
typedef cudaError_t (*kn_gatednorm_fn)(float *out, const float *x, const float *w, const float *z, int rows, int n,
                                       float eps, cudaStream_t stream);
/* swiglu: out[n] = silu(gate) · up (op_swiglu). out may alias either input. */
typedef cudaError_t (*kn_swiglu_fn)(float *out, const float *gate, const float *up, long n, cudaStream_t stream);

typedef struct {
    const char *name, *what;
    kn_rmsnorm_fn fn;
} kn_rmsnorm_version;
typedef struct {
    const char *name, *what;
    kn_gatednorm_fn fn;
} kn_gatednorm_version;
typedef struct {
    const char *name, *what;
    kn_swiglu_fn fn;
} kn_swiglu_version;

KN_API const kn_rmsnorm_version *kn_rmsnorm_versions(int *count);
KN_API const kn_gatednorm_version *kn_gatednorm_versions(int *count);
KN_API const kn_swiglu_version *kn_swiglu_versions(int *count);

#endif
