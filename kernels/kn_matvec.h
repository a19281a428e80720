/* kn_matvec.h — the bf16-weight linear layers, reading each weight once for one position (decode) or m ≤ 16
 * (a verify pass). Every version computes Y[m, n_out] = X[m, n_in] · Wᵀ, W[n_out, n_in] bf16 (the checkpoint's
 * layout), X and Y fp32, fp32 accumulation; Y must not alias X. Any n_out, n_in ≥ 1; the 16-byte paths need
 * n_in % 8 == 0 and fall back to element loads otherwise. */
#ifndef SPECULA_KN_MATVEC_H
#define SPECULA_KN_MATVEC_H

#include "kn_api.h"

#define KN_MATVEC_MAX_M 16

typedef cudaError_t (*kn_matvec_fn)(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                                    cudaStream_t stream);

/* Where a product's rows go, for a group of weights stacked in one array (kn_matvec_group): rows
 * [end[j − 1], end[j]) of W (end[−1] = 0) are part j, written to Y[j][m, end[j] − end[j − 1]]; one part is a
 * plain product. Passed to the kernels by value. */
#define KN_MATVEC_MAX_PARTS 4
typedef struct {
    int n_parts;                   /* 1 … KN_MATVEC_MAX_PARTS */
    int end[KN_MATVEC_MAX_PARTS];  /* increasing; end[n_parts − 1] = n_out */
    float *Y[KN_MATVEC_MAX_PARTS]; /* device memory, none aliasing X or another */
} kn_matvec_out;
typedef cudaError_t (*kn_matvec_group_fn)(kn_matvec_out Y, const uint16_t *W, const float *X, int m, int n_out,
                                          int n_in, cudaStream_t stream);

/* Numerics classes. The versions of one class compute every output with the
 * same sequence of fp32 operations whatever m (same products, same order of
 * the additions, same reduction tree), so row p of a batch product is bit
 * for bit the m = 1 product of X[p]: a verify pass and plain decoding round
 * the activations alike and pick the same greedy token. Given the same
 * alignment: the 16-byte path (n_in % 8 == 0, W and X 16-byte aligned) and
 * the element path add in different orders. gpucheck checks every class. */
enum {
    KN_MV_ALONE = 0,       /* no bitwise partner (v1, v2, gpucheck's cuBLAS baseline) */
    KN_MV_WARP_LANES = 1,  /* warp per row, lanes over 16-byte steps: v3, v4, b1, b3 */
    KN_MV_BLOCK_LANES = 2, /* block per row, threads over 16-byte steps: v5, b5 */
    KN_MV_MMA_XBF16 = 3    /* X rounded to bf16, mma.m16n8k16, fixed warp order: b2 at any m */
};

typedef struct {
    const char *name; /* "v1" … ; "-xbf16" suffix: activations rounded to bf16 */
    const char *what; /* one line: what changed from the previous version */
    kn_matvec_fn fn;
    int max_m; /* largest m the version accepts (1 for the decode kernels) */
    /* rounds X to bf16 first, as the tensor cores take bf16 operands (the CPU twin rounds alike): about
     * 2⁻⁹/√3 ≈ 1e-3 relative to the fp32-activation result */
    int x_bf16;
    int numerics;             /* KN_MV_* class */
    kn_matvec_group_fn group; /* the same kernel writing a group's parts (NULL: cuBLAS, which cannot) */
} kn_matvec_version;

/* Decode (m = 1) versions, then batch versions. (The cuBLAS baseline is
 * gpucheck's alone, kernels/check/matvec_cublas.cu: the engine never links
 * cuBLAS.) */
KN_API const kn_matvec_version *kn_matvec_versions(int *count);

/* The engine's product: runs kn_matvec_dispatch(m, n_out, n_in). m ≤ 16. */
KN_API cudaError_t kn_matvec(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in,
                             cudaStream_t stream);

/* The products of X with a group of weights stored back to back in W (the engine places the projections that
 * read one input so): Y_j[m, n_j] = X[m, n_in] · W_jᵀ for every part of `out`, in ONE launch of the version
 * kn_matvec_dispatch(m, n_out, n_in) names for the stacked shape, n_out = out->end[n_parts − 1]. Row r of part
 * j is bit for bit row end[j − 1] + r of kn_matvec over the whole of W, and of that version run on W_j alone (a
 * row's sum does not depend on the other rows). m ≤ 16. cudaErrorInvalidValue for a malformed `out`. */
KN_API cudaError_t kn_matvec_group(const kn_matvec_out *out, const uint16_t *W, const float *X, int m, int n_in,
                                   cudaStream_t stream);

/* The dispatch table. Per shape [n_out, n_in], the version for m = 1 and the
 * one for 1 < m ≤ 16, named as in kn_matvec_versions; both of one numerics
 * class other than KN_MV_ALONE (decode and verify round alike), the batch
 * version taking every m ≤ 16. gpucheck fills it from its validated
 * timings (the fastest class pair per shape) and prints what it chose.
 * Returns 0, or −1 with the table unchanged (unknown name, classes that
 * differ, a full table). Not thread-safe: fill it before launching.
 * Shapes not in the table get the default: v4 / b3 (fp32 activations), or
 * v5 / b5 when n_out < 4 × the SM count (too few rows for a warp per row). */
#define KN_MATVEC_TABLE 64
KN_API int kn_matvec_select(int n_out, int n_in, const char *decode_version, const char *batch_version);
KN_API void kn_matvec_select_reset(void); /* back to the default for every shape */
/* The version kn_matvec runs for (m, n_out, n_in). */
KN_API const kn_matvec_version *kn_matvec_dispatch(int m, int n_out, int n_in);

/* X[n] fp32 → Xb[n] bf16 (round to nearest even), for the cuBLAS baseline. */
KN_API cudaError_t kn_f32_to_bf16(uint16_t *out, const float *in, long n, cudaStream_t stream);

#endif
