/* backend_cpu.c — the CPU backend: every product of a pass is one cpu_gemm
 * (cpu/gemm.h, OpenMP over rows of W when threads > 1), which reads W once
 * for all m rows and computes each output the same way whatever m is — a
 * verify pass and a decode step agree bit for bit. The kernel is the widest
 * this CPU runs, adding in lanes; in the exact cross-test mode it is the
 * in-order kernel, op_matvec's sums, so that with float32 weights the
 * engine computes the reference's floats. */
#include <string.h>

#include "backend.h"
#include "cpu/gemm.h"
#include "dtype.h"

static void cpu_matmul(const engine_backend *b, float *y, const eweight *W, const float *x, int m, int n, int k) {
    cpu_gemm_with(b->in_order ? CPU_GEMM_IN_ORDER : cpu_gemm_default_isa(), y, W->data, W->dtype, x, m, n, k,
                  b->threads);
}

/* Row r of E as float32 into x[D]. */
static void cpu_embed(const engine_backend *b, float *x, const eweight *E, const int *tokens, int m, int D) {
    (void)b;
    const size_t elem = E->dtype == DTYPE_F32 ? sizeof(float) : sizeof(uint16_t);
    for (int i = 0; i < m; i++)
        dtype_to_f32(x + (size_t)i * D, (const char *)E->data + (size_t)tokens[i] * D * elem, E->dtype, (size_t)D);
}

void backend_cpu_build(engine_backend *b, int threads, int in_order) {
    memset(b, 0, sizeof *b);
    b->name = "cpu";
    b->threads = threads < 1 ? 1 : threads;
    b->in_order = in_order;
    b->matmul = cpu_matmul;
    b->embed = cpu_embed;
}
