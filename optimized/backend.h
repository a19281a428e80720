/* backend.h — the products a pass spends its time in, as a struct of
 * function pointers: the CPU backend (backend_cpu.c) fills it. Weights are
 * read as stored (bf16 or f32, any alignment), activations are float32. The
 * rest of a pass (norms, RoPE, the per-node attention and DeltaNet steps,
 * which read the KV cache and the state slots) is host code on the CPU. */
#ifndef SPECULA_BACKEND_H
#define SPECULA_BACKEND_H

#include "engine_weights.h"

typedef struct engine_backend engine_backend;
struct engine_backend {
    const char *name; /* "cpu" */
    int threads;      /* ≥ 1 */
    int in_order;     /* 1: every product adds in the reference's order (the exact cross-test mode) */
    /* y[m, n] = x[m, k] · W[n, k]ᵀ: one read of W serves the m rows, and row i
     * of y does not depend on m (a verify pass and a decode step agree). */
    void (*matmul)(const engine_backend *b, float *y, const eweight *W, const float *x, int m, int n, int k);
    /* x[m, D] = rows tokens[0..m) of the embedding E[V, D], as float32. */
    void (*embed)(const engine_backend *b, float *x, const eweight *E, const int *tokens, int m, int D);
};

void backend_cpu_build(engine_backend *b, int threads, int in_order);

#endif
