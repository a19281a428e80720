/* deltanet.c — cpu_delta_step (deltanet.h). op_gated_delta_step walks the
 * state a column at a time (stride Dv); here the same sums run a row at a
 * time: each kv[j] and out[j] still adds its Dk terms in order i = 0, 1, …,
 * so no element's arithmetic changes, only the order in which independent
 * elements are visited. Compiled with -O3 (Makefile) so the row loops are
 * vectorised; on x86-64 one clone per instruction set is chosen at load
 * time. Multiply and add stay separate (ISO C mode: no contraction), as in
 * the reference. */
#include "deltanet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define DELTA_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DELTA_CLONES
#endif

DELTA_CLONES
void cpu_delta_step(float *out, float *S_out, const float *S_in, float *q, float *k, const float *v, float g,
                    float beta, int Dk, int Dv, float *step_log) {
    if (Dv > CPU_DELTA_MAX_DV) {
        fprintf(stderr, "cpu_delta_step: a value head of %d (at most %d)\n", Dv, CPU_DELTA_MAX_DV);
        abort();
    }
    op_l2norm(q, Dk, 1e-6f);
    op_l2norm(k, Dk, 1e-6f);
    const float qscale = 1.0f / sqrtf((float)Dk);
    for (int i = 0; i < Dk; i++) q[i] *= qscale;
    const float decay = expf(g);
    float kv[CPU_DELTA_MAX_DV], u[CPU_DELTA_MAX_DV]; /* (Sᵀk)[j] after the decay, then the write per column */
    for (int j = 0; j < Dv; j++) kv[j] = 0.0f;
    for (int i = 0; i < Dk; i++) { /* what the decayed state predicts for v; the decayed state is not stored */
        const float *in = S_in + (size_t)i * Dv;
        const float ki = k[i];
        for (int j = 0; j < Dv; j++) {
            const float decayed = in[j] * decay;
            kv[j] += decayed * ki;
        }
    }
    for (int j = 0; j < Dv; j++) {
        u[j] = (v[j] - kv[j]) * beta;
        out[j] = 0.0f;
    }
    /* The decay again (the same rounded product as above), the write, and the read-out of the written state: the
     * state is stored once, and S_in is read twice rather than written twice (S_out may be S_in: each element is
     * read before it is written). */
    for (int i = 0; i < Dk; i++) {
        const float *in = S_in + (size_t)i * Dv;
        float *row = S_out + (size_t)i * Dv;
        const float ki = k[i], qi = q[i];
        for (int j = 0; j < Dv; j++) {
            const float decayed = in[j] * decay;
            row[j] = decayed + ki * u[j];
            out[j] += row[j] * qi;
        }
    }
    if (step_log) {
        step_log[0] = decay;
        for (int i = 0; i < Dk; i++) step_log[1 + i] = k[i];
        for (int j = 0; j < Dv; j++) step_log[1 + Dk + j] = u[j];
    }
}

DELTA_CLONES
void cpu_delta_replay(float *S, const float *step_log, int Dk, int Dv) {
    const float decay = step_log[0];
    const float *k = step_log + 1, *u = step_log + 1 + Dk;
    for (int i = 0; i < Dk; i++) {
        float *row = S + (size_t)i * Dv;
        const float ki = k[i];
        for (int j = 0; j < Dv; j++) {
            const float decayed = row[j] * decay;
            row[j] = decayed + ki * u[j];
        }
    }
}
