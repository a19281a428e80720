/* gemm.h — the CPU engine's matrix products y[m, n] = x[m, k] · W[n, k]ᵀ: W a checkpoint weight as stored (f32 or
 * bf16), fp32 activations and accumulation, one pass over W for all m rows, threads over rows of W. The kernel is
 * chosen at run time; tests and benchmarks may force one. */
#ifndef SPECULA_CPU_GEMM_H
#define SPECULA_CPU_GEMM_H

#include "dtype.h"

/* The kernels, in the order the default dispatch prefers them (the last two excepted). Every kernel computes
 * each output y[i, j] by the same sequence of fp32 operations whatever m, the other rows and the thread count
 * are, so a row of a verify pass is bit-for-bit the row of a decode step; two kernels differ from each other
 * in the last bits (their lane counts differ). */
typedef enum {
    CPU_GEMM_PORTABLE = 0, /* plain C, 16 lanes of separate multiply and add: any CPU */
    CPU_GEMM_AVX2,         /* AVX2 + FMA, 8 lanes */
    CPU_GEMM_AVX512,       /* AVX-512 F/BW/VL + FMA, 16 lanes, masked loads for the tail of k */
    /* AVX-512-BF16 dot products (vdpbf16ps) with x ROUNDED TO BF16 — not fp32 activations, so never the
     * default: only on request. Each product w·bf16(x) is off from w·x by at most 2⁻⁸|w·x|, so
     * |y − exact| ≤ 2⁻⁸·Σ|w·x| + the fp32 accumulation error. f32 weights take the AVX512 kernel. */
    CPU_GEMM_AVX512_BF16,
    /* One sum per output, its terms added in index order with multiply and add apart — op_matvec's order, so
     * with f32 weights the reference's floats bit for bit: the engine's exact cross-test mode (--dtype f32).
     * Plain C, any CPU, never the default: it cannot vectorise a sum. */
    CPU_GEMM_IN_ORDER,
    CPU_GEMM_ISA_COUNT
} cpu_gemm_isa;

/* y[m, n] = x[m, k] · W[n, k]ᵀ: W the checkpoint's weight as stored (rows of k elements, DTYPE_F32 or
 * DTYPE_BF16, any alignment: safetensors data in an mmap is not aligned), x and y fp32 row-major, y must not
 * alias x or W. One read of W serves up to 64 rows of x (m is 1 for decoding, up to ~64 for a verify pass);
 * a larger m reads W once per 64 rows. n_threads ≥ 1: rows of W split across OpenMP threads; with 1 no
 * OpenMP region is entered. Uses cpu_gemm_default_isa(). */
void cpu_gemm(float *y, const void *W, dtype_t wdtype, const float *x, int m, int n, int k, int n_threads);

/* The same product with a given kernel; isa must be available (an unavailable one is a fatal error). */
void cpu_gemm_with(cpu_gemm_isa isa, float *y, const void *W, dtype_t wdtype, const float *x, int m, int n, int k,
                   int n_threads);

/* Several products of one x (a layer's projections that read the same rows): y_j[m, n_j] = x[m, k] · W_j[n_j, k]ᵀ
 * for each part j, in ONE parallel region whose threads split the parts' rows taken together (whole row groups
 * of each part; no barrier between parts). Each W_j is read where it is (no copy, no concatenation), and every
 * output is bit for bit the one cpu_gemm_with(isa, …) computes for its part alone. 1 ≤ n_parts ≤
 * CPU_GEMM_MAX_PARTS; the y_j must not alias x, the W_j or each other. */
#define CPU_GEMM_MAX_PARTS 4
typedef struct {
    float *y;       /* [m, n] */
    const void *W;  /* [n, k] of wdtype, any alignment */
    dtype_t wdtype; /* DTYPE_F32 or DTYPE_BF16 */
    int n;          /* ≥ 0 */
} cpu_gemm_part;
void cpu_gemm_group(cpu_gemm_isa isa, const cpu_gemm_part *parts, int n_parts, const float *x, int m, int k,
                    int n_threads);

/* 1 when this CPU (and OS) runs isa's instructions, else 0. CPU_GEMM_PORTABLE is always available. */
int cpu_gemm_isa_available(cpu_gemm_isa isa);

/* The widest available kernel with fp32 activations: AVX512, else AVX2, else PORTABLE (never AVX512_BF16). */
cpu_gemm_isa cpu_gemm_default_isa(void);

/* 1 when the engine was compiled with OpenMP (n_threads > 1 then runs that many threads), 0 when every product
 * runs on the calling thread. */
int cpu_gemm_has_openmp(void);

/* "portable", "avx2", "avx512", "avx512-bf16", "in-order"; "?" for a value outside the enum. */
const char *cpu_gemm_isa_name(cpu_gemm_isa isa);

#endif
