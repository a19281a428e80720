/* philox.h — Philox4x32-10 (Salmon et al., SC'11), the counter-based random
 * generator shared by the C code and the CUDA kernels. A draw is a pure
 * function of (seed, stream, counter), so any backend can reproduce any
 * draw without carrying generator state around. */
#ifndef SPECULA_PHILOX_H
#define SPECULA_PHILOX_H

#include <stdint.h>

/* The raw bijection: 10 rounds on a 128-bit counter under a 64-bit key. */
void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Four 32-bit words for (seed, stream, counter): key = seed, counter words =
 * (counter lo, counter hi, stream lo, stream hi). */
void philox_words(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]);

/* Uniform float in the open interval (0, 1) from one 32-bit word: the top 23
 * bits, offset by half a step, so neither 0 nor 1 can occur (safe under log;
 * with 24 bits the largest value would round up to 1.0f). */
static inline float philox_unit(uint32_t w) { return ((float)(w >> 9) + 0.5f) * (1.0f / 8388608.0f); }

/* One uniform in (0, 1) for (seed, stream, counter), from word `lane` (0..3). */
float philox_uniform(uint64_t seed, uint64_t stream, uint64_t counter, int lane);

#endif
