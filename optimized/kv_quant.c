/* kv_quant.c — the KV cache's row formats and the q4 rotation (see kv_quant.h). A quantised row is its
 * ⌈Dh/32⌉ float32 scales, then its integers: int8 for q8, two 4-bit codes a byte for q4 (q + 8, low nibble
 * first). */
#include "kv_quant.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dtype.h"

static const char *const names[] = {"default", "f32", "bf16", "q8", "q4"};

const char *kv_format_name(kv_format f) { return (unsigned)f <= KV_Q4 ? names[f] : "?"; }

int kv_format_parse(const char *name, kv_format *f) {
    for (int i = KV_F32; i <= KV_Q4; i++)
        if (!strcmp(name, names[i])) {
            *f = (kv_format)i;
            return 0;
        }
    return -1;
}

static int n_blocks(int Dh) { return (Dh + KVQ_BLOCK - 1) / KVQ_BLOCK; }

size_t kv_row_bytes(kv_format f, int Dh) {
    const size_t scales = (size_t)n_blocks(Dh) * sizeof(float);
    switch (f) {
    case KV_BF16: return (size_t)Dh * sizeof(uint16_t);
    case KV_Q8: return scales + (size_t)Dh;
    case KV_Q4: return scales + (size_t)(Dh + 1) / 2;
    default: return (size_t)Dh * sizeof(float);
    }
}

int kv_format_check(kv_format f, int Dh, sp_error *err) {
    if (f == KV_Q4 && Dh % 2)
        return sp_fail(err, "--kv-cache q4 packs two elements a byte: head_dim %d is odd (q8 holds it)", Dh);
    return 0;
}

int kv_format_rotates(kv_format f) { return f == KV_Q4; }

float kv_row_scale(const void *row, int b) {
    float s;
    memcpy(&s, (const char *)row + (size_t)b * sizeof(float), sizeof s);
    return s;
}

/* The integers of one block [lo, hi) of x at `levels` (127 or 7): the scale, codes into q. */
static float quantise_block(const float *x, int lo, int hi, int levels, int8_t *q) {
    float top = 0.0f;
    for (int d = lo; d < hi; d++) top = fmaxf(top, fabsf(x[d]));
    const float s = top / (float)levels;
    for (int d = lo; d < hi; d++) {
        long v = s > 0.0f ? lrintf(x[d] / s) : 0; /* round to nearest: off by at most s/2 */
        q[d - lo] = (int8_t)(v > levels ? levels : v < -levels ? -levels : v);
    }
    return s;
}

void kv_row_store(kv_format f, void *row, const float *x, int Dh) {
    if (f == KV_BF16) {
        uint16_t *h = row;
        for (int d = 0; d < Dh; d++) h[d] = f32_to_bf16(x[d]);
        return;
    }
    if (f != KV_Q8 && f != KV_Q4) {
        memcpy(row, x, (size_t)Dh * sizeof(float));
        return;
    }
    const int nb = n_blocks(Dh), levels = f == KV_Q8 ? 127 : 7;
    unsigned char *codes = (unsigned char *)row + (size_t)nb * sizeof(float);
    for (int b = 0; b < nb; b++) {
        const int lo = b * KVQ_BLOCK, hi = lo + KVQ_BLOCK < Dh ? lo + KVQ_BLOCK : Dh;
        int8_t q[KVQ_BLOCK];
        const float s = quantise_block(x, lo, hi, levels, q);
        memcpy((char *)row + (size_t)b * sizeof(float), &s, sizeof s);
        for (int d = lo; d < hi; d++) {
            if (f == KV_Q8) {
                codes[d] = (unsigned char)q[d - lo];
            } else {
                const unsigned char nib = (unsigned char)(q[d - lo] + 8);
                codes[d / 2] = d % 2 ? (unsigned char)((codes[d / 2] & 0x0f) | nib << 4) : nib;
            }
        }
    }
}

void kv_row_load(kv_format f, float *x, const void *row, int Dh) {
    if (f == KV_BF16) {
        const uint16_t *h = row;
        for (int d = 0; d < Dh; d++) x[d] = bf16_to_f32(h[d]);
        return;
    }
    if (f != KV_Q8 && f != KV_Q4) {
        memcpy(x, row, (size_t)Dh * sizeof(float));
        return;
    }
    const int nb = n_blocks(Dh);
    const unsigned char *codes = (const unsigned char *)row + (size_t)nb * sizeof(float);
    for (int b = 0; b < nb; b++) {
        const int lo = b * KVQ_BLOCK, hi = lo + KVQ_BLOCK < Dh ? lo + KVQ_BLOCK : Dh;
        const float s = kv_row_scale(row, b);
        for (int d = lo; d < hi; d++) {
            const int q = f == KV_Q8 ? (int)(int8_t)codes[d] : (int)((codes[d / 2] >> (d % 2 ? 4 : 0)) & 0x0f) - 8;
            x[d] = s * (float)q;
        }
    }
}

int kvq_rotation_size(int Dh) { return Dh > 0 ? Dh & -Dh : 1; }

/* The fixed sign of element i: a bit of splitmix64 of i under a constant seed (the same for every head, layer
 * and run, so a cache written once reads back the same anywhere). */
static float sign_of(int i) {
    uint64_t z = 0x5eed4b5c0ffee000ull + (uint64_t)i * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (z ^ (z >> 31)) & 1 ? -1.0f : 1.0f;
}

/* x[n] ← H·x/√n, the fast Walsh–Hadamard transform (H symmetric and H·H = n·I, so it is its own inverse). */
static void fwht(float *x, int n) {
    for (int len = 1; len < n; len <<= 1)
        for (int i = 0; i < n; i += len << 1)
            for (int j = i; j < i + len; j++) {
                const float a = x[j], b = x[j + len];
                x[j] = a + b;
                x[j + len] = a - b;
            }
    const float norm = 1.0f / sqrtf((float)n);
    for (int i = 0; i < n; i++) x[i] *= norm;
}

void kvq_rotate(float *x, int Dh) {
    const int n = kvq_rotation_size(Dh);
    for (int d = 0; d < Dh; d++) x[d] *= sign_of(d);
    for (int g = 0; g < Dh; g += n) fwht(x + g, n);
}

void kvq_unrotate(float *x, int Dh) {
    const int n = kvq_rotation_size(Dh);
    for (int g = 0; g < Dh; g += n) fwht(x + g, n);
    for (int d = 0; d < Dh; d++) x[d] *= sign_of(d);
}
