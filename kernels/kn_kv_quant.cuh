/* kn_kv_quant.cuh — the device side of optimized/kv_quant.c: the q8/q4 row encoder (one warp a row) and the q4
 * rotation (one warp, or one block, over a head in shared memory), each the same float operations in the same
 * order as the CPU's, so a row written here is byte for byte kv_row_store's of the same floats. Dh % 32 == 0. */
#ifndef SPECULA_KN_KV_QUANT_CUH
#define SPECULA_KN_KV_QUANT_CUH

#include "kn_common.cuh"

/* kv_quant.c's sign_of: a bit of splitmix64 of i under the same constant seed. */
__device__ __forceinline__ float kn_kvq_sign(int i) {
    uint64_t z = 0x5eed4b5c0ffee000ull + (uint64_t)i * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (z ^ (z >> 31)) & 1 ? -1.0f : 1.0f;
}

/* The butterflies of kv_quant.c's fwht over every group of n = Dh & −Dh elements of y[Dh] (shared memory), then
 * y · (1/√n): threads `me` of `count` (a warp's lanes, or a block's threads) split each level's Dh/2 pairs, and
 * sync() (a warp's or a block's barrier) separates the levels. Each butterfly is one add and one subtract, as on
 * the CPU, so the result is the CPU's bit for bit. */
template <class Sync> __device__ __forceinline__ void kn_kvq_fwht(float *y, int Dh, int me, int count, Sync sync) {
    const int n = Dh & -Dh;
    for (int len = 1; len < n; len <<= 1) {
        for (int p = me; p < Dh / 2; p += count) {
            const int j = (p / len) * 2 * len + p % len; /* pairs (j, j + len) never straddle a group of n */
            const float a = y[j], b = y[j + len];
            y[j] = a + b;
            y[j + len] = a - b;
        }
        sync();
    }
    const float norm = 1.0f / sqrtf((float)n);
    for (int d = me; d < Dh; d += count) y[d] *= norm;
    sync();
}

/* kvq_rotate of y[Dh] by one warp: signs, then the transform. */
__device__ __forceinline__ void kn_kvq_rotate_warp(float *y, int Dh, int lane) {
    for (int d = lane; d < Dh; d += KN_WARP) y[d] *= kn_kvq_sign(d);
    __syncwarp();
    kn_kvq_fwht(y, Dh, lane, KN_WARP, [] { __syncwarp(); });
}

/* kvq_unrotate of y[Dh] by the whole block: the transform, then the signs (each thread's own elements). */
__device__ __forceinline__ void kn_kvq_unrotate_block(float *y, int Dh) {
    kn_kvq_fwht(y, Dh, (int)threadIdx.x, (int)blockDim.x, [] { __syncthreads(); });
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) y[d] *= kn_kvq_sign(d);
    __syncthreads();
}

/* kv_row_store of x[Dh] (any memory the warp reads) into row (4-byte aligned) by one warp: per block of 32, lane i
 * holds element i; s = max|x| / levels, q = round-to-nearest-even(x / s) clamped to ±levels. */
template <int BITS>
__device__ __forceinline__ void kn_kvq_store_row(unsigned char *row, const float *x, int Dh, int lane) {
    const int nb = Dh / 32, levels = BITS == 8 ? 127 : 7;
    unsigned char *codes = row + (size_t)nb * 4;
    for (int b = 0; b < nb; b++) {
        const float xv = x[b * 32 + lane];
        const float s = kn_warp_max(fabsf(xv)) / (float)levels;
        int q = s > 0.0f ? (int)rintf(xv / s) : 0;
        q = q > levels ? levels : q < -levels ? -levels : q;
        if (lane == 0) ((float *)row)[b] = s;
        if (BITS == 8) {
            codes[b * 32 + lane] = (unsigned char)(signed char)q;
        } else {
            const int nib = q + 8, hi = __shfl_down_sync(0xffffffffu, nib, 1); /* lane + 1's code */
            if (lane % 2 == 0) codes[(b * 32 + lane) / 2] = (unsigned char)(nib | hi << 4);
        }
    }
}

/* Element d of a row read back, s · q (kv_row_load). */
template <int BITS> __device__ __forceinline__ float kn_kvq_load(const unsigned char *row, int d, int Dh) {
    const float s = kn_ldg((const float *)row + d / 32);
    const unsigned char *codes = row + (size_t)(Dh / 32) * 4;
    const int q =
        BITS == 8 ? (int)(signed char)kn_ldg(codes + d) : (int)((kn_ldg(codes + d / 2) >> (d % 2 ? 4 : 0)) & 0x0f) - 8;
    return s * (float)q;
}

#endif
