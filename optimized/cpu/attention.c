/* attention.c — cpu_attention_head (attention.h). The lanes are plain C arrays and multiply and add are never
 * fused, so every clone (one per instruction set on x86-64) adds the same floats in the same order. */
#include "attention.h"

#include "activations.h"
#include "lanes.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define ATTENTION_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ATTENTION_CLONES
#endif

ATTENTION_CLONES
void cpu_attention_head(float *out, const float *q, const float *const *keys, const float *const *values, int n, int Dh,
                        float scale, float *scores) {
    for (int t = 0; t < n; t++) scores[t] = lanes_dot(q, keys[t], Dh) * scale;
    cpu_act_softmax(scores, n);
    for (int d = 0; d < Dh; d++) out[d] = 0.0f;
    for (int t = 0; t < n; t++) { /* each out[d] adds its n terms in order t = 0, 1, …, as the reference does */
        const float s = scores[t], *v = values[t];
        for (int d = 0; d < Dh; d++) out[d] += s * v[d];
    }
}
