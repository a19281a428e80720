/* deltanet.c — cpu_delta_step (deltanet.h). op_gated_delta_step walks the state a column at a time; here the same
 * sums run a row at a time. Each kv[j] and out[j] still adds its Dk terms in order i = 0, 1, …, so no element's
 * arithmetic changes, only the order in which independent elements are visited. */
#include "deltanet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activations.h"
#include "ops.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define DELTA_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DELTA_CLONES
#endif

/* Sixteen consecutive columns of a state row as one of GCC's generic vectors (a zmm register in the AVX-512 clone,
 * two ymm or four xmm in the others); BLOCK columns are four of them, whose sums stay in registers from row to
 * row. With the sums in an array, each sum would be a chain through memory (a store and a reload per row) and the
 * step latency-bound. Each element's arithmetic is the scalar loop's. */
typedef float f16v __attribute__((vector_size(16 * sizeof(float))));
#define BLOCK 64
/* Unaligned loads and stores of a vector (memcpy: no alignment or aliasing assumed; compiled to one move). Macros,
 * not functions: a function returning a 64-byte vector has a different ABI in each clone. */
#define LOAD16(v, p) memcpy(&(v), (p), sizeof(f16v))
#define STORE16(p, v) memcpy((p), &(v), sizeof(f16v))

/* kv[j0 .. j0 + BLOCK) = Σ_i (S_in[i, j]·decay)·k[i], each sum over i in order. */
static inline void sweep_kv_block(float *kv, const float *S_in, const float *k, float decay, int Dk, int Dv, int j0) {
    f16v acc[4] = {{0}};
    for (int i = 0; i < Dk; i++) {
        const float *in = S_in + (size_t)i * Dv + j0;
        const float ki = k[i];
        for (int b = 0; b < 4; b++) {
            f16v s;
            LOAD16(s, in + 16 * b);
            acc[b] += (s * decay) * ki;
        }
    }
    for (int b = 0; b < 4; b++) STORE16(kv + j0 + 16 * b, acc[b]);
}

/* Columns [j0, j0 + BLOCK) of the write S_out[i, j] = S_in[i, j]·decay + k[i]·u[j] and of the read-out
 * out[j] = Σ_i S_out[i, j]·q[i], each sum over i in order. */
static inline void sweep_write_block(float *out, float *S_out, const float *S_in, const float *q, const float *k,
                                     const float *u, float decay, int Dk, int Dv, int j0) {
    f16v uj[4], acc[4] = {{0}};
    for (int b = 0; b < 4; b++) LOAD16(uj[b], u + j0 + 16 * b);
    for (int i = 0; i < Dk; i++) {
        const float *in = S_in + (size_t)i * Dv + j0;
        float *row = S_out + (size_t)i * Dv + j0;
        const float ki = k[i], qi = q[i];
        for (int b = 0; b < 4; b++) {
            f16v s;
            LOAD16(s, in + 16 * b);
            const f16v w = s * decay + ki * uj[b];
            STORE16(row + 16 * b, w);
            acc[b] += w * qi;
        }
    }
    for (int b = 0; b < 4; b++) STORE16(out + j0 + 16 * b, acc[b]);
}

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
    const int blocked = Dv / BLOCK * BLOCK;          /* columns swept a register block at a time; the rest as below */
    float kv[CPU_DELTA_MAX_DV], u[CPU_DELTA_MAX_DV]; /* (Sᵀk)[j] after the decay, then the write per column */
    for (int j0 = 0; j0 < blocked; j0 += BLOCK) sweep_kv_block(kv, S_in, k, decay, Dk, Dv, j0);
    for (int j = blocked; j < Dv; j++) kv[j] = 0.0f;
    for (int i = 0; i < Dk; i++) { /* what the decayed state predicts for v; the decayed state is not stored */
        const float *in = S_in + (size_t)i * Dv;
        const float ki = k[i];
        for (int j = blocked; j < Dv; j++) {
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
    for (int j0 = 0; j0 < blocked; j0 += BLOCK) sweep_write_block(out, S_out, S_in, q, k, u, decay, Dk, Dv, j0);
    for (int i = 0; i < Dk; i++) {
        const float *in = S_in + (size_t)i * Dv;
        float *row = S_out + (size_t)i * Dv;
        const float ki = k[i], qi = q[i];
        for (int j = blocked; j < Dv; j++) {
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

void cpu_conv_step(float *out, float *state, const float *x, const float *w, int C, int K) {
    op_conv_taps(out, state, x, w, C, K);
    cpu_act_silu(out, C);
}
