/* kn_race.cuh — the block-wide choice shared by the sampler kernels: the
 * best (value, index) of a block, larger value first, then the lower index
 * (the exponential race's winner, and the greedy argmax). Assumes
 * blockDim.x a multiple of 32; sr and si are 32 entries of shared memory. */
#ifndef SPECULA_KN_RACE_CUH
#define SPECULA_KN_RACE_CUH

#include "kn_common.cuh"

/* Is (r, i) a better race entry than (r2, i2)? Larger ratio, then lower index. */
__device__ __forceinline__ int race_better(double r, int i, double r2, int i2) {
    return i >= 0 && (i2 < 0 || r > r2 || (r == r2 && i < i2));
}

/* The block's best (r, i); every thread gets it. */
__device__ __forceinline__ int block_best(double r, int i, double *sr, int *si) {
    for (int o = 16; o > 0; o >>= 1) {
        double r2 = __shfl_xor_sync(0xffffffffu, r, o);
        int i2 = __shfl_xor_sync(0xffffffffu, i, o);
        if (race_better(r2, i2, r, i)) r = r2, i = i2;
    }
    int lane = threadIdx.x % KN_WARP, warp = threadIdx.x / KN_WARP, n_warps = blockDim.x / KN_WARP;
    __syncthreads();
    if (lane == 0) sr[warp] = r, si[warp] = i;
    __syncthreads();
    r = lane < n_warps ? sr[lane] : 0.0, i = lane < n_warps ? si[lane] : -1;
    for (int o = 16; o > 0; o >>= 1) {
        double r2 = __shfl_xor_sync(0xffffffffu, r, o);
        int i2 = __shfl_xor_sync(0xffffffffu, i, o);
        if (race_better(r2, i2, r, i)) r = r2, i = i2;
    }
    return i;
}

#endif
