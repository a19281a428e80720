/* kn_philox.cuh — Philox4x32-10 and sampler.h's site mapping on the device:
 * the same bijection as reference/philox.c (the kernels cannot call host
 * code), checked against it word for word by the sample family's checks
 * (every race and every acceptance uniform goes through it). */
#ifndef SPECULA_KN_PHILOX_CUH
#define SPECULA_KN_PHILOX_CUH

#include "kn_common.cuh"
#include "kn_sample.h" /* sampler.h with C linkage */

__device__ __forceinline__ void kn_philox4x32_10(uint32_t c[4], uint32_t k0, uint32_t k1) {
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1, n3 = (uint32_t)p0;
        c[0] = n0, c[1] = n1, c[2] = n2, c[3] = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

/* The four words of one site's block: counter (block, index lo, index hi,
 * purpose), key (seed lo, seed hi), as sampler.c's site_block. */
__device__ __forceinline__ void kn_site_block(uint64_t seed, uint32_t purpose, uint64_t index, uint32_t block,
                                              uint32_t w[4]) {
    w[0] = block, w[1] = (uint32_t)index, w[2] = (uint32_t)(index >> 32), w[3] = purpose;
    kn_philox4x32_10(w, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* rng_uniform: word 0 of block RNG_UNIFORM_BLOCK, as philox_unit. */
__device__ __forceinline__ float kn_rng_uniform(uint64_t seed, uint32_t purpose, uint64_t index) {
    uint32_t w[4];
    kn_site_block(seed, purpose, index, RNG_UNIFORM_BLOCK, w);
    return ((float)(w[0] >> 9) + 0.5f) * (1.0f / 8388608.0f);
}

/* The race's E = −log U with all 32 bits of the token's word (sampler.c). */
__device__ __forceinline__ double kn_race_exponential(uint32_t word) {
    double u = ((double)word + 0.5) * 0x1p-32;
    return -log(u);
}

#endif
