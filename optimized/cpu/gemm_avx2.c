/* gemm_avx2.c — the AVX2 + FMA kernel of cpu_gemm: bf16 → fp32 by a 16-bit shift, 8 fp32 lanes per output,
 * register tiles of 2 rows of x × 4 rows of W, W prefetched one tile ahead. Compiled with -mavx2 -mfma; only gemm.c
 * calls it, after checking the CPU. W may sit at any byte address (unaligned loads only). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "gemm_kernels.h"

#if defined(__AVX2__) && defined(__FMA__)

#define LANES 8
#define TILE_M 2 /* rows of x per register tile */
#define TILE_N 4 /* rows of W per register tile: 8 accumulators + 4 W vectors + 1 x vector of 16 registers */
/* How far ahead each W row is prefetched: the same offset TILE_N rows on, the next tile's row. Rows of a few KB end
 * before the hardware prefetcher has ramped up on them (docs/performance.md). */
#define PREFETCH_ROWS TILE_N

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* 8 weights from element t of a row, as fp32. bf16 is the top half of an fp32: widen and shift left by 16. */
ALWAYS_INLINE __m256 load_w8(const unsigned char *row, int t, dtype_t wdtype) {
    if (wdtype == DTYPE_BF16) {
        __m128i h = _mm_loadu_si128((const __m128i *)(row + 2 * (size_t)t));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    return _mm256_loadu_ps((const float *)(row + 4 * (size_t)t));
}

ALWAYS_INLINE float load_w1(const unsigned char *row, int t, dtype_t wdtype) {
    if (wdtype == DTYPE_BF16) {
        uint16_t h;
        memcpy(&h, row + 2 * (size_t)t, 2);
        return bf16_to_f32(h);
    }
    float f;
    memcpy(&f, row + 4 * (size_t)t, 4);
    return f;
}

/* The lanes' sum in one fixed order: (l + l+4), then (l + l+2), then (0 + 1). */
ALWAYS_INLINE float sum_lanes(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* y[i0 .. i0+tm, j0 .. j0+tn] with tm ≤ TILE_M, tn ≤ TILE_N compile-time constants after inlining. Every output
 * takes the same path whatever (tm, tn): lane l accumulates the terms t ≡ l (mod 8) of the first k − k mod 8 by
 * FMA, sum_lanes, then the last k mod 8 terms in order by scalar FMA. */
ALWAYS_INLINE void tile(const gemm_problem *p, int i0, int tm, int j0, int tn, dtype_t wdtype) {
    const size_t row_bytes = (size_t)p->k * (wdtype == DTYPE_BF16 ? 2 : 4);
    const unsigned char *w_row[TILE_N];
    const float *x_row[TILE_M];
    __m256 acc[TILE_M][TILE_N];
#pragma GCC unroll 4
    for (int r = 0; r < tn; r++) w_row[r] = p->W + (size_t)(j0 + r) * row_bytes;
#pragma GCC unroll 4
    for (int i = 0; i < tm; i++) {
        x_row[i] = p->x + (size_t)(i0 + i) * p->k;
#pragma GCC unroll 4
        for (int r = 0; r < tn; r++) acc[i][r] = _mm256_setzero_ps();
    }
    const size_t ahead = PREFETCH_ROWS * row_bytes;
    int t = 0;
    for (; t + LANES <= p->k; t += LANES) {
        __m256 w[TILE_N];
#pragma GCC unroll 4
        for (int r = 0; r < tn; r++) {
            _mm_prefetch((const char *)w_row[r] + (wdtype == DTYPE_BF16 ? 2 : 4) * (size_t)t + ahead, _MM_HINT_T0);
            w[r] = load_w8(w_row[r], t, wdtype);
        }
#pragma GCC unroll 4
        for (int i = 0; i < tm; i++) {
            __m256 xv = _mm256_loadu_ps(x_row[i] + t);
#pragma GCC unroll 4
            for (int r = 0; r < tn; r++) acc[i][r] = _mm256_fmadd_ps(w[r], xv, acc[i][r]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < tm; i++)
#pragma GCC unroll 4
        for (int r = 0; r < tn; r++) {
            float sum = sum_lanes(acc[i][r]);
            for (int u = t; u < p->k; u++) sum = fmaf(load_w1(w_row[r], u, wdtype), x_row[i][u], sum);
            p->y[(size_t)(i0 + i) * p->n + j0 + r] = sum;
        }
}

/* Rows i_begin .. i_end of x against tn rows of W from j0: every x tile reads the same W rows (from cache after
 * the first). */
ALWAYS_INLINE void x_tiles(const gemm_problem *p, int i_begin, int i_end, int j0, int tn, dtype_t wdtype) {
    int i = i_begin;
    for (; i + TILE_M <= i_end; i += TILE_M) tile(p, i, TILE_M, j0, tn, wdtype);
    if (i < i_end) tile(p, i, 1, j0, tn, wdtype);
}

ALWAYS_INLINE void rows_typed(const gemm_problem *p, int row_begin, int row_end, dtype_t wdtype) {
    for (int i_block = 0; i_block < p->m; i_block += GEMM_M_BLOCK) {
        int i_end = p->m < i_block + GEMM_M_BLOCK ? p->m : i_block + GEMM_M_BLOCK;
        int j = row_begin;
        for (; j + TILE_N <= row_end; j += TILE_N) x_tiles(p, i_block, i_end, j, TILE_N, wdtype);
        for (; j < row_end; j++) x_tiles(p, i_block, i_end, j, 1, wdtype);
    }
}

void gemm_rows_avx2(const gemm_problem *p, int row_begin, int row_end) {
    if (p->wdtype == DTYPE_BF16)
        rows_typed(p, row_begin, row_end, DTYPE_BF16);
    else
        rows_typed(p, row_begin, row_end, DTYPE_F32);
}

#else
typedef int gemm_avx2_not_built; /* compiled without -mavx2 -mfma (not x86): gemm.c does not reference it */
#endif
