/* gemm_avx512bf16.c — the AVX-512-BF16 kernel of cpu_gemm, bf16 weights only: vdpbf16ps on W as stored and on x
 * ROUNDED TO BF16 by gemm.c, so only on request, never the default. Register tiles of 4 rows of x × 4 rows of W.
 * Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512bf16; only gemm.c calls it, after checking the CPU. */
#include <immintrin.h>

#include "gemm_kernels.h"

#if defined(__AVX512BF16__) && defined(__AVX512BW__)

#define PAIRS 32 /* bf16 elements per step: 16 lanes × 2 */
#define TILE_M 4
#define TILE_N 4

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* One step of 32 elements for a tile. x rows are zero padded to a multiple of 32 (gemm.c), so they load whole;
 * W's last, partial step loads under a mask (the rest 0). vdpbf16ps: acc += w[2l+1]·x[2l+1], then += w[2l]·x[2l]
 * (exact products, fp32 rounding, denormals flushed to zero). */
ALWAYS_INLINE void tile_step(__m512 acc[TILE_M][TILE_N], const unsigned char *const *w_row,
                             const uint16_t *const *x_row, int tm, int tn, int t, __mmask32 mask, int full) {
    __m512i w[TILE_N];
#pragma GCC unroll 4
    for (int r = 0; r < tn; r++) {
        const void *at = w_row[r] + 2 * (size_t)t;
        w[r] = full ? _mm512_loadu_si512(at) : _mm512_maskz_loadu_epi16(mask, at);
    }
#pragma GCC unroll 4
    for (int i = 0; i < tm; i++) {
        __m512bh xv = (__m512bh)_mm512_loadu_si512(x_row[i] + t);
#pragma GCC unroll 4
        for (int r = 0; r < tn; r++) acc[i][r] = _mm512_dpbf16_ps(acc[i][r], (__m512bh)w[r], xv);
    }
}

/* y[i0 .. i0+tm, j0 .. j0+tn]: every output takes the same path whatever (tm, tn) — lane l takes the pairs
 * 2l, 2l+1 (mod 32) in order, the last step under a mask, then _mm512_reduce_add_ps (a fixed tree). */
ALWAYS_INLINE void tile(const gemm_problem *p, int i0, int tm, int j0, int tn) {
    const size_t row_bytes = (size_t)p->k * 2;
    const unsigned char *w_row[TILE_N];
    const uint16_t *x_row[TILE_M];
    __m512 acc[TILE_M][TILE_N];
#pragma GCC unroll 4
    for (int r = 0; r < tn; r++) w_row[r] = p->W + (size_t)(j0 + r) * row_bytes;
#pragma GCC unroll 4
    for (int i = 0; i < tm; i++) {
        x_row[i] = p->x_bf16 + (size_t)(i0 + i) * p->x_bf16_stride;
#pragma GCC unroll 4
        for (int r = 0; r < tn; r++) acc[i][r] = _mm512_setzero_ps();
    }
    int t = 0;
    for (; t + PAIRS <= p->k; t += PAIRS) tile_step(acc, w_row, x_row, tm, tn, t, 0xffffffffu, 1);
    if (t < p->k) tile_step(acc, w_row, x_row, tm, tn, t, (__mmask32)((1u << (p->k - t)) - 1), 0);
#pragma GCC unroll 4
    for (int i = 0; i < tm; i++)
#pragma GCC unroll 4
        for (int r = 0; r < tn; r++) p->y[(size_t)(i0 + i) * p->n + j0 + r] = _mm512_reduce_add_ps(acc[i][r]);
}

ALWAYS_INLINE void x_tiles(const gemm_problem *p, int i_begin, int i_end, int j0, int tn) {
    int i = i_begin;
    for (; i + TILE_M <= i_end; i += TILE_M) tile(p, i, TILE_M, j0, tn);
    switch (i_end - i) {
    case 3: tile(p, i, 3, j0, tn); break;
    case 2: tile(p, i, 2, j0, tn); break;
    case 1: tile(p, i, 1, j0, tn); break;
    default: break;
    }
}

void gemm_rows_avx512bf16(const gemm_problem *p, int row_begin, int row_end) {
    for (int i_block = 0; i_block < p->m; i_block += GEMM_M_BLOCK) {
        int i_end = p->m < i_block + GEMM_M_BLOCK ? p->m : i_block + GEMM_M_BLOCK;
        int j = row_begin;
        for (; j + TILE_N <= row_end; j += TILE_N) x_tiles(p, i_block, i_end, j, TILE_N);
        for (; j < row_end; j++) x_tiles(p, i_block, i_end, j, 1);
    }
}

#else
typedef int gemm_avx512bf16_not_built; /* compiled without -mavx512bf16 (not x86): gemm.c does not reference it */
#endif
