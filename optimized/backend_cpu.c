/* backend_cpu.c — the CPU backend. Backend memory is host memory. Every product is one cpu_gemm or
 * cpu_gemm_group (cpu/gemm.h): it reads W once for all m rows, and a row's bits do not depend on m. The exact
 * cross-test mode uses the in-order kernel, so with float32 weights the engine computes the reference's floats. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cpu/activations.h"
#include "cpu/gemm.h"
#include "cpu/layers.h"
#include "cpu/team.h"
#include "dtype.h"
#include "kv_cache.h"
#include "ops.h"

/* Below this many elements an elementwise op stays on one thread: starting the others costs more. */
#define SPLIT_MIN_ELEMENTS 16384

/* The backend's scratch (b->impl). */
typedef struct {
    cpu_attention_scratch attention;
    cpu_deltanet_scratch deltanet;
} cpu_scratch;

static cpu_scratch *scratch(engine_backend *b) { return b->impl; }

static void *cpu_alloc(engine_backend *b, size_t bytes, const char *what) {
    (void)b;
    return sp_xcalloc(1, bytes, what);
}
static void cpu_free(engine_backend *b, void *p) {
    (void)b;
    free(p);
}
static void cpu_copy(engine_backend *b, void *dst, const void *src, size_t bytes) {
    (void)b;
    memmove(dst, src, bytes);
}
static void cpu_zero(engine_backend *b, void *p, size_t bytes) {
    (void)b;
    memset(p, 0, bytes);
}

static eweight *cpu_place_weights(engine_backend *b, const engine_weights *w, sp_error *err) {
    (void)b;
    (void)err;
    return w->w;
}
static void cpu_free_weights(engine_backend *b, eweight *placed, const engine_weights *w) {
    (void)b;
    (void)placed;
    (void)w;
}

static void cpu_begin_pass(engine_backend *b, const epass *p) {
    (void)b;
    (void)p; /* the cores read the pass's host arrays as they go */
}

static void cpu_matmul(engine_backend *b, float *y, const eweight *W, const float *x, int m, int n, int k) {
    cpu_gemm_with(b->in_order ? CPU_GEMM_IN_ORDER : cpu_gemm_default_isa(), y, W->data, W->dtype, x, m, n, k,
                  b->threads);
}

_Static_assert(ENGINE_GROUP_MAX_PARTS <= CPU_GEMM_MAX_PARTS, "a weight group fits one cpu_gemm_group");

/* One thread team for the whole group (cpu_gemm_group): the parts' rows split together, each W read in place. */
static void cpu_matmul_group(engine_backend *b, const ematmul_part *parts, int n_parts, const float *x, int m, int k) {
    cpu_gemm_part p[CPU_GEMM_MAX_PARTS];
    for (int j = 0; j < n_parts; j++)
        p[j] = (cpu_gemm_part){parts[j].y, parts[j].W->data, parts[j].W->dtype, parts[j].n};
    cpu_gemm_group(b->in_order ? CPU_GEMM_IN_ORDER : cpu_gemm_default_isa(), p, n_parts, x, m, k, b->threads);
}

static void cpu_embed(engine_backend *b, float *x, const eweight *E, const int *tokens, int m, int D) {
    (void)b;
    const size_t elem = E->dtype == DTYPE_F32 ? sizeof(float) : sizeof(uint16_t);
    for (int i = 0; i < m; i++)
        dtype_to_f32(x + (size_t)i * D, (const char *)E->data + (size_t)tokens[i] * D * elem, E->dtype, (size_t)D);
}

/* Outside the exact cross-test mode the norms and SwiGLU are the engine's vectorised forms (cpu/activations.h). */
static void cpu_rmsnorm(engine_backend *b, float *y, const float *x, const float *w, int rows, int n, float eps) {
    void (*norm)(float *, const float *, const float *, int, float) = b->in_order ? op_rmsnorm : cpu_act_rmsnorm;
    for (int i = 0; i < rows; i++) norm(y + (size_t)i * n, x + (size_t)i * n, w, n, eps);
}

static void swiglu_range(const engine_backend *b, float *g, const float *u, size_t begin, size_t end) {
    if (b->in_order)
        op_swiglu(g + begin, g + begin, u + begin, (int)(end - begin));
    else
        cpu_act_swiglu(g + begin, u + begin, (int)(end - begin));
}

static void cpu_add(engine_backend *b, float *x, const float *y, size_t n) {
    (void)b;
    for (size_t i = 0; i < n; i++) x[i] += y[i];
}

typedef struct {
    const engine_backend *b;
    float *g;
    const float *u;
    size_t n;
} swiglu_work;

static void swiglu_share(void *ctx, int t, int T) {
    const swiglu_work *w = ctx;
    swiglu_range(w->b, w->g, w->u, w->n * t / T, w->n * (t + 1) / T);
}

static void cpu_swiglu(engine_backend *b, float *g, const float *u, size_t n) {
    swiglu_work w = {b, g, u, n}; /* elementwise: one range per thread when there are several */
    cpu_team_run(n >= SPLIT_MIN_ELEMENTS ? b->threads : 1, swiglu_share, &w);
}

static void cpu_attention(engine_backend *b, const epass *p, int la, const attention_args *a) {
    cpu_attention_layer(b, &scratch(b)->attention, p, la, a);
}

static void cpu_deltanet(engine_backend *b, const epass *p, const deltanet_args *a) {
    cpu_deltanet_layer(b, &scratch(b)->deltanet, p, a);
}

static void cpu_deltanet_replay_op(engine_backend *b, float *conv_state, float *rec_state, const float *const *steps,
                                   int n) {
    cpu_deltanet_replay(b, conv_state, rec_state, steps, n);
}

static void cpu_probs(engine_backend *b, float *out, const float *logits, int m, int V, const sampler_params *sp) {
    (void)b;
    for (int i = 0; i < m; i++) sampler_probs(sp, logits + (size_t)i * V, out + (size_t)i * V, V);
}

/* The pass's threads held from its first op to its last (cpu/team.h): each op hands its work to them. */
static void cpu_hold(engine_backend *b, void (*body)(void *), void *ctx) { cpu_team_hold(b->threads, body, ctx); }

static int cpu_status(engine_backend *b, sp_error *err) {
    (void)b;
    (void)err;
    return 0; /* host code that cannot fail once its memory is allocated */
}

static void cpu_release(engine_backend *b) {
    cpu_attention_scratch_free(&scratch(b)->attention);
    cpu_deltanet_scratch_free(&scratch(b)->deltanet);
    free(b->impl);
    b->impl = NULL;
}

void backend_cpu_build(engine_backend *b, const model_config *cfg, int threads, int in_order) {
    memset(b, 0, sizeof *b);
    b->name = "cpu";
    b->device = "the host's CPU";
    b->threads = threads < 1 ? 1 : threads;
    b->in_order = in_order;
    b->kv_bf16 = 0;
    b->host_memory = 1;
    b->max_tree_nodes = ENGINE_MAX_TREE_NODES;
    b->multi_seq = 1; /* the cores look every node's sequence up in the pass (cpu/layers.c) */
    b->cfg = cfg;
    b->impl = sp_xcalloc(1, sizeof(cpu_scratch), "cpu backend");
    b->alloc = cpu_alloc;
    b->free = cpu_free;
    b->upload = cpu_copy;
    b->download = cpu_copy;
    b->copy = cpu_copy;
    b->zero = cpu_zero;
    b->place_weights = cpu_place_weights;
    b->free_weights = cpu_free_weights;
    b->begin_pass = cpu_begin_pass;
    b->matmul = cpu_matmul;
    b->matmul_group = cpu_matmul_group;
    b->embed = cpu_embed;
    b->rmsnorm = cpu_rmsnorm;
    b->add = cpu_add;
    b->swiglu = cpu_swiglu;
    b->attention = cpu_attention;
    b->deltanet = cpu_deltanet;
    b->deltanet_replay = cpu_deltanet_replay_op;
    b->probs = cpu_probs;
    b->hold = cpu_hold;
    b->status = cpu_status;
    b->release = cpu_release;
}
