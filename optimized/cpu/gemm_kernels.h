/* gemm_kernels.h — the contract between the dispatch (gemm.c) and the per-ISA kernels (gemm_*.c, each compiled
 * with its own -m flags): one problem, a range of W rows per call. Only gemm.c calls these, and only after
 * checking that the CPU has the kernel's instructions. */
#ifndef SPECULA_CPU_GEMM_KERNELS_H
#define SPECULA_CPU_GEMM_KERNELS_H

#include <stdint.h>

#include "dtype.h"

/* Rows of x that share one pass over a block of W rows (the x block stays in L2 while W streams by). */
#define GEMM_M_BLOCK 64
/* The AVX512_BF16 kernel's x rows are padded with zeros to a multiple of this many elements. */
#define GEMM_BF16_K_PAD 32

typedef struct {
    float *y;               /* [m, n] */
    const unsigned char *W; /* [n, k] of wdtype (DTYPE_F32 or DTYPE_BF16), any byte alignment */
    dtype_t wdtype;
    const float *x;         /* [m, k] */
    const uint16_t *x_bf16; /* [m, x_bf16_stride]: bf16(x), zero padded; the AVX512_BF16 kernel only, else NULL */
    int x_bf16_stride;      /* k rounded up to GEMM_BF16_K_PAD */
    int m, n, k;
} gemm_problem;

/* Each computes y[:, row_begin:row_end] of the problem. For every output the sequence of fp32 operations is
 * fixed by k alone: it does not depend on m, on the range, or on the tile the output falls in. */
void gemm_rows_portable(const gemm_problem *p, int row_begin, int row_end);
void gemm_rows_avx2(const gemm_problem *p, int row_begin, int row_end);
void gemm_rows_avx512(const gemm_problem *p, int row_begin, int row_end);
void gemm_rows_avx512bf16(const gemm_problem *p, int row_begin, int row_end); /* bf16 W only */

#endif
