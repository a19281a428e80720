/* gemm_avx512.c — the AVX-512 kernel of cpu_gemm (F for the arithmetic, BW + VL for masked 16-bit loads): 16 fp32
 * lanes per output, register tiles of 6 rows of x × 4 rows of W, the tail of k by masked loads. Compiled with
 * -mavx512f -mavx512bw -mavx512vl -mfma; only gemm.c calls it, after checking the CPU. */
#include <immintrin.h>

#include "gemm_kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)

#define LANES 16
#define TILE_M 6 /* rows of x per register tile (rows_typed's switch takes the rest: 1 … TILE_M − 1) */
#define TILE_N 4 /* rows of W per register tile: 24 accumulators + 4 W vectors + 1 x vector of 32 registers */
/* W rows per block: a block (64 rows × k) stays in L2 while every x tile passes over it, each x tile in L1. One
 * pass over all of W per x tile would stream x from L2 instead, and is slower (docs/performance.md). */
#define W_BLOCK 64
/* How far ahead each W row is prefetched: the same offset TILE_N rows on, the next tile's row. Rows of a few KB
 * end before the hardware prefetcher has ramped up on them (docs/performance.md). */
#define PREFETCH_ROWS TILE_N
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* The weights t .. t+15 of a row (those under mask; the others 0), as fp32. bf16 is the top half of an fp32. */
ALWAYS_INLINE __m512 load_w16(const unsigned char *row, int t, __mmask16 mask, int full, dtype_t wdtype) {
    if (wdtype == DTYPE_BF16) {
        const void *at = row + 2 * (size_t)t;
        __m256i h = full ? _mm256_loadu_si256((const __m256i *)at) : _mm256_maskz_loadu_epi16(mask, at);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    const float *at = (const float *)(row + 4 * (size_t)t);
    return full ? _mm512_loadu_ps(at) : _mm512_maskz_loadu_ps(mask, at);
}

/* One step of 16 elements (or fewer, under mask) for a tile: W rows loaded once (and the bytes `ahead` of each
 * prefetched), then every x row. */
ALWAYS_INLINE void tile_step(__m512 acc[TILE_M][TILE_N], const unsigned char *const *w_row, const float *const *x_row,
                             int tm, int tn, int t, __mmask16 mask, int full, dtype_t wdtype, size_t ahead) {
    __m512 w[TILE_N];
#pragma GCC unroll 8
    for (int r = 0; r < tn; r++)
        _mm_prefetch((const char *)w_row[r] + (wdtype == DTYPE_BF16 ? 2 : 4) * (size_t)t + ahead, _MM_HINT_T0);
#pragma GCC unroll 8
    for (int r = 0; r < tn; r++) w[r] = load_w16(w_row[r], t, mask, full, wdtype);
#pragma GCC unroll 8
    for (int i = 0; i < tm; i++) {
        __m512 xv = full ? _mm512_loadu_ps(x_row[i] + t) : _mm512_maskz_loadu_ps(mask, x_row[i] + t);
#pragma GCC unroll 8
        for (int r = 0; r < tn; r++) acc[i][r] = _mm512_fmadd_ps(w[r], xv, acc[i][r]);
    }
}

/* y[i0 .. i0+tm, j0 .. j0+tn] with tm ≤ TILE_M, tn ≤ TILE_N compile-time constants after inlining. Every output
 * takes the same path whatever (tm, tn): lane l accumulates the terms t ≡ l (mod 16) by FMA — the last,
 * partial step under a mask, its missing lanes adding 0·0 — then _mm512_reduce_add_ps (a fixed tree). */
ALWAYS_INLINE void tile(const gemm_problem *p, int i0, int tm, int j0, int tn, dtype_t wdtype) {
    const size_t row_bytes = (size_t)p->k * (wdtype == DTYPE_BF16 ? 2 : 4);
    const unsigned char *w_row[TILE_N];
    const float *x_row[TILE_M];
    __m512 acc[TILE_M][TILE_N];
#pragma GCC unroll 8
    for (int r = 0; r < tn; r++) w_row[r] = p->W + (size_t)(j0 + r) * row_bytes;
#pragma GCC unroll 8
    for (int i = 0; i < tm; i++) {
        x_row[i] = p->x + (size_t)(i0 + i) * p->k;
#pragma GCC unroll 8
        for (int r = 0; r < tn; r++) acc[i][r] = _mm512_setzero_ps();
    }
    const size_t ahead = PREFETCH_ROWS * row_bytes;
    int t = 0;
    for (; t + LANES <= p->k; t += LANES) tile_step(acc, w_row, x_row, tm, tn, t, 0xffff, 1, wdtype, ahead);
    if (t < p->k) tile_step(acc, w_row, x_row, tm, tn, t, (__mmask16)((1u << (p->k - t)) - 1), 0, wdtype, ahead);
#pragma GCC unroll 8
    for (int i = 0; i < tm; i++)
#pragma GCC unroll 8
        for (int r = 0; r < tn; r++) p->y[(size_t)(i0 + i) * p->n + j0 + r] = _mm512_reduce_add_ps(acc[i][r]);
}

/* One x tile (rows i .. i+tm) against W rows j_begin .. j_end: tiles of TILE_N W rows, then single rows. */
ALWAYS_INLINE void w_tiles(const gemm_problem *p, int i, int tm, int j_begin, int j_end, dtype_t wdtype) {
    int j = j_begin;
    for (; j + TILE_N <= j_end; j += TILE_N) tile(p, i, tm, j, TILE_N, wdtype);
    for (; j < j_end; j++) tile(p, i, tm, j, 1, wdtype);
}

/* W in blocks of W_BLOCK rows, x in blocks of GEMM_M_BLOCK rows. */
ALWAYS_INLINE void rows_typed(const gemm_problem *p, int row_begin, int row_end, dtype_t wdtype) {
    for (int i_block = 0; i_block < p->m; i_block += GEMM_M_BLOCK) {
        const int i_end = p->m < i_block + GEMM_M_BLOCK ? p->m : i_block + GEMM_M_BLOCK;
        for (int j_block = row_begin; j_block < row_end; j_block += W_BLOCK) {
            const int j_end = row_end < j_block + W_BLOCK ? row_end : j_block + W_BLOCK;
            int i = i_block;
            for (; i + TILE_M <= i_end; i += TILE_M) w_tiles(p, i, TILE_M, j_block, j_end, wdtype);
            switch (i_end - i) { /* the rest, fewer than TILE_M rows: each count its own inlined copy */
            case 5: w_tiles(p, i, 5, j_block, j_end, wdtype); break;
            case 4: w_tiles(p, i, 4, j_block, j_end, wdtype); break;
            case 3: w_tiles(p, i, 3, j_block, j_end, wdtype); break;
            case 2: w_tiles(p, i, 2, j_block, j_end, wdtype); break;
            case 1: w_tiles(p, i, 1, j_block, j_end, wdtype); break;
            default: break;
            }
        }
    }
}

void gemm_rows_avx512(const gemm_problem *p, int row_begin, int row_end) {
    if (p->wdtype == DTYPE_BF16)
        rows_typed(p, row_begin, row_end, DTYPE_BF16);
    else
        rows_typed(p, row_begin, row_end, DTYPE_F32);
}

#else
typedef int gemm_avx512_not_built; /* compiled without the AVX-512 flags (not x86): gemm.c does not reference it */
#endif
