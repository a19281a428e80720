/* backend_cpu.c — the CPU backend: portable products, one weight row at a
 * time for all m rows of x, accumulating in the order op_matvec does (so
 * with float32 weights a pass reproduces the reference bit for bit). */
#include <string.h>

#include "backend.h"
#include "dtype.h"

/* Row r of W as float32 into dst[k]. */
static void weight_row(float *dst, const eweight *W, int r, int k) {
    if (W->dtype == DTYPE_F32) {
        memcpy(dst, (const char *)W->data + (size_t)r * k * sizeof(float), (size_t)k * sizeof(float));
        return;
    }
    dtype_to_f32(dst, (const char *)W->data + (size_t)r * k * sizeof(uint16_t), DTYPE_BF16, (size_t)k);
}

static void cpu_matmul(const engine_backend *b, float *y, const eweight *W, const float *x, int m, int n, int k) {
    (void)b;
    float row[8192], *w = row; /* rows wider than the stack buffer are converted in place piece by piece below */
    for (int r = 0; r < n; r++) {
        if (k <= 8192) {
            weight_row(w, W, r, k);
            for (int i = 0; i < m; i++) {
                const float *xi = x + (size_t)i * k;
                float acc = 0.0f;
                for (int j = 0; j < k; j++) acc += w[j] * xi[j];
                y[(size_t)i * n + r] = acc;
            }
            continue;
        }
        for (int i = 0; i < m; i++) { /* a very wide row: the same order, converted in chunks */
            const float *xi = x + (size_t)i * k;
            float acc = 0.0f;
            for (int j0 = 0; j0 < k; j0 += 8192) {
                const int len = k - j0 < 8192 ? k - j0 : 8192;
                if (W->dtype == DTYPE_F32)
                    memcpy(w, (const char *)W->data + ((size_t)r * k + j0) * sizeof(float),
                           (size_t)len * sizeof(float));
                else
                    dtype_to_f32(w, (const char *)W->data + ((size_t)r * k + j0) * sizeof(uint16_t), DTYPE_BF16,
                                 (size_t)len);
                for (int j = 0; j < len; j++) acc += w[j] * xi[j0 + j];
            }
            y[(size_t)i * n + r] = acc;
        }
    }
}

static void cpu_embed(const engine_backend *b, float *x, const eweight *E, const int *tokens, int m, int D) {
    (void)b;
    for (int i = 0; i < m; i++) weight_row(x + (size_t)i * D, E, tokens[i], D);
}

void backend_cpu_build(engine_backend *b, int threads) {
    memset(b, 0, sizeof *b);
    b->name = "cpu";
    b->threads = threads < 1 ? 1 : threads;
    b->matmul = cpu_matmul;
    b->embed = cpu_embed;
}
