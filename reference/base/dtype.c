/* dtype.c — names and conversions for F32 / BF16 / F16 tensors. */
#include "dtype.h"

#include <math.h>

static const char *const names[DTYPE_COUNT] = {"F32", "BF16", "F16"};
static const int sizes[DTYPE_COUNT] = {4, 2, 2};

const char *dtype_name(dtype_t t) { return (t >= 0 && t < DTYPE_COUNT) ? names[t] : "?"; }

int dtype_from_name(const char *name) {
    for (int t = 0; t < DTYPE_COUNT; t++)
        if (strcmp(name, names[t]) == 0) return t;
    return -1;
}

int dtype_size(dtype_t t) { return (t >= 0 && t < DTYPE_COUNT) ? sizes[t] : 0; }

float f16_to_f32(uint16_t h) {
    int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)mant, -24); /* subnormal */
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

uint16_t f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00;  /* NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00; /* overflows to inf after rounding */
    if (a < 0x38800000u) {                      /* result is subnormal or zero */
        float m = fabsf(f) * 16777216.0f;       /* units of 2^-24, exact scaling */
        return sign | (uint16_t)lrintf(m);      /* rint rounds half to even */
    }
    uint32_t r = a - 0x38000000u; /* rebias exponent from 127 to 15 */
    r += 0xfffu + ((r >> 13) & 1u);
    return sign | (uint16_t)(r >> 13);
}

void dtype_to_f32(float *dst, const void *src, dtype_t t, size_t n) {
    const unsigned char *p = src;
    for (size_t i = 0; i < n; i++) {
        if (t == DTYPE_F32) {
            memcpy(&dst[i], p + 4 * i, 4);
        } else {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            dst[i] = (t == DTYPE_BF16) ? bf16_to_f32(h) : f16_to_f32(h);
        }
    }
}
