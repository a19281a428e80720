/* dtype.h — the three weight dtypes of a checkpoint and their conversion to
 * float32. bf16 is the top half of a float32; f16 is IEEE half. Round to
 * nearest even on the way down, as PyTorch does. */
#ifndef SPECULA_DTYPE_H
#define SPECULA_DTYPE_H

#include <stdint.h>
#include <string.h>

typedef enum { DTYPE_F32 = 0, DTYPE_BF16 = 1, DTYPE_F16 = 2, DTYPE_COUNT } dtype_t;

/* "F32", "BF16", "F16": the safetensors spelling. */
const char *dtype_name(dtype_t t);
/* Returns the dtype for a safetensors name, or -1 when unknown. */
int dtype_from_name(const char *name);
int dtype_size(dtype_t t);

static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

/* Converts n elements of type t at src (little-endian, possibly unaligned) to float32. */
void dtype_to_f32(float *dst, const void *src, dtype_t t, size_t n);

#endif
