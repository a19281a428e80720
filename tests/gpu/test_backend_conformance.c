/* test_backend_conformance.c — the ops of optimized/backend.h that run without a pass, on the CUDA backend (here
 * on the kernels' emulator) against the CPU backend, on the same weights and the same random inputs, printed as
 * one table: op, shape, backend, the normalised error max|y − y_cpu| / max|y_cpu| and its bound. The ops a pass
 * drives (attention, deltanet, accept) are held to the CPU's through whole passes in test_engine_cuda.c. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "harness.h"
#include "philox.h"
#include "unit/engine_compare.h"

/* Why the bounds. Products: both backends widen the same bf16 weights exactly and keep float32 activations, so
 * they differ only in the order of the additions, about √k·2⁻²⁴ of a row (≲ 1e-6 here); 1e-4 leaves margin, yet a
 * dropped or doubled term (≈ 1/√k ≥ 3 % of a row) fails. RMSNorm: one sum of squares in another order, the same
 * argument. SwiGLU: each backend's expf, a few ulps (1e-6 relative). The distributions: sums in double on both,
 * but thresholds (top-p) met on float values: 1e-5 of the largest probability. Embedding rows and adds are exact
 * on both: bound 0. */
#define BOUND_PRODUCT 1e-4
#define BOUND_NORM 1e-4
#define BOUND_SWIGLU 1e-5
#define BOUND_PROBS 1e-5
#define MAX_ROWS 32

typedef struct {
    char op[16], shape[48];
    double err, bound;
} row;

typedef struct {
    engine cpu, cuda;
    row rows[MAX_ROWS];
    int n_rows;
    uint64_t draws;
} bench;

static void bench_open(bench *t, const char *dir) {
    sp_error err;
    engine_options o = engine_defaults();
    ck_assert_msg(engine_open(&t->cpu, dir, &o, &err) == 0, "%s", err.msg);
    o.cuda = 1;
    ck_assert_msg(engine_open(&t->cuda, dir, &o, &err) == 0, "%s", err.msg);
    t->n_rows = 0;
    t->draws = 0;
}

static void bench_close(bench *t) {
    engine_close(&t->cuda);
    engine_close(&t->cpu);
}

/* n uniforms in [lo, hi), fresh for every call. */
static float *random_floats(bench *t, size_t n, float lo, float hi) {
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = lo + (hi - lo) * philox_uniform(91, 7, t->draws++, 0);
    return h;
}

static float *to_backend(engine_backend *b, const float *h, size_t n) {
    float *d = b->alloc(b, n * sizeof *d, "a conformance input");
    b->upload(b, d, h, n * sizeof *d);
    return d;
}

static float *from_backend(engine_backend *b, const float *d, size_t n) {
    float *h = malloc(n * sizeof *h);
    b->download(b, h, d, n * sizeof *h);
    sp_error err;
    ck_assert_msg(b->status(b, &err) == 0, "%s", err.msg);
    return h;
}

/* max|a − b| / max|b| over n, infinite when a holds a NaN or b is all zero while a is not. */
static double normalised_error(const float *a, const float *b, size_t n) {
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i])) return INFINITY;
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return scale > 0.0 ? diff / scale : diff > 0.0 ? INFINITY : 0.0;
}

static void add_row(bench *t, const char *op, const char *shape, double err, double bound) {
    ck_assert_int_lt(t->n_rows, MAX_ROWS);
    row *r = &t->rows[t->n_rows++];
    snprintf(r->op, sizeof r->op, "%s", op);
    snprintf(r->shape, sizeof r->shape, "%s", shape);
    r->err = err, r->bound = bound;
}

/* One op on both backends: run(b, out, in) with its inputs uploaded to each, out of n_out floats compared. */
typedef void (*op_fn)(engine *e, float *out, float *const *in, const void *arg);
static double compare(bench *t, op_fn run, const void *arg, float *const *in_host, const size_t *in_n, int n_in,
                      size_t n_out) {
    float *got[2];
    engine *es[2] = {&t->cpu, &t->cuda};
    for (int s = 0; s < 2; s++) {
        engine_backend *b = &es[s]->be;
        float *in[4], *out = b->alloc(b, n_out * sizeof *out, "a conformance output");
        for (int i = 0; i < n_in; i++) in[i] = to_backend(b, in_host[i], in_n[i]);
        run(es[s], out, in, arg);
        got[s] = from_backend(b, out, n_out);
        for (int i = 0; i < n_in; i++) b->free(b, in[i]);
        b->free(b, out);
    }
    const double err = normalised_error(got[1], got[0], n_out);
    free(got[0]), free(got[1]);
    return err;
}

/* ---- the ops -------------------------------------------------------------------------------------------------- */

typedef struct {
    int layer;
    tensor_role role;
    int m, n, k;
} matmul_arg;

static const eweight *placed(engine *e, int layer, tensor_role role) {
    return &e->bw[engine_weight_index(&e->w, layer, role)];
}

static void run_matmul(engine *e, float *out, float *const *in, const void *arg) {
    const matmul_arg *a = arg;
    e->be.matmul(&e->be, out, placed(e, a->layer, a->role), in[0], a->m, a->n, a->k);
}

/* The MLP's gate and up projections as one group, their outputs back to back in out. */
static void run_matmul_group(engine *e, float *out, float *const *in, const void *arg) {
    const matmul_arg *a = arg;
    const int F = e->cfg.intermediate_size;
    const ematmul_part parts[2] = {{out, placed(e, a->layer, ROLE_GATE_PROJ), F},
                                   {out + (size_t)a->m * F, placed(e, a->layer, ROLE_UP_PROJ), F}};
    e->be.matmul_group(&e->be, parts, 2, in[0], a->m, a->k);
}

static void run_embed(engine *e, float *out, float *const *in, const void *arg) {
    (void)in;
    const int *tokens = arg;
    e->be.embed(&e->be, out, placed(e, -1, ROLE_EMBED), tokens + 1, tokens[0], e->cfg.hidden_size);
}

static void run_rmsnorm(engine *e, float *out, float *const *in, const void *arg) {
    const int rows = *(const int *)arg, D = e->cfg.hidden_size;
    e->be.rmsnorm(&e->be, out, in[0], (const float *)placed(e, 0, ROLE_INPUT_NORM)->data, rows, D, e->cfg.rms_norm_eps);
}

static void run_add(engine *e, float *out, float *const *in, const void *arg) {
    const size_t n = *(const size_t *)arg;
    e->be.copy(&e->be, out, in[0], n * sizeof *out);
    e->be.add(&e->be, out, in[1], n);
}

static void run_swiglu(engine *e, float *out, float *const *in, const void *arg) {
    const size_t n = *(const size_t *)arg;
    e->be.copy(&e->be, out, in[0], n * sizeof *out);
    e->be.swiglu(&e->be, out, in[1], n);
}

typedef struct {
    int m;
    sampler_params sp;
    float *host_out; /* probs writes host memory */
} probs_arg;

static void run_probs(engine *e, float *out, float *const *in, const void *arg) {
    const probs_arg *a = arg;
    const int V = e->cfg.vocab_size;
    e->be.probs(&e->be, a->host_out, in[0], a->m, V, &a->sp);
    e->be.upload(&e->be, out, a->host_out, (size_t)a->m * V * sizeof *out); /* back where compare reads it */
}

/* ---- the table ------------------------------------------------------------------------------------------------ */

static int attention_layer(const engine *e) {
    for (int l = 0; l < e->cfg.num_layers; l++)
        if (e->bw[engine_weight_index(&e->w, l, ROLE_Q_PROJ)].data) return l;
    return -1;
}

static void matmul_rows(bench *t) {
    const model_config *c = &t->cpu.cfg;
    const int D = c->hidden_size, F = c->intermediate_size, la = attention_layer(&t->cpu);
    ck_assert_int_ge(la, 0);
    const matmul_arg shapes[] = {
        {-1, ROLE_LM_HEAD, 1, c->vocab_size, D},
        {-1, ROLE_LM_HEAD, 4, c->vocab_size, D},
        {-1, ROLE_LM_HEAD, 16, c->vocab_size, D},
        {la, ROLE_Q_PROJ, 1, 2 * c->num_heads * c->head_dim, D},
        {la, ROLE_Q_PROJ, 5, 2 * c->num_heads * c->head_dim, D},
        {0, ROLE_DOWN_PROJ, 3, D, F},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const matmul_arg *a = &shapes[i];
        float *x = random_floats(t, (size_t)a->m * a->k, -1.0f, 1.0f);
        const size_t n_x = (size_t)a->m * a->k;
        char shape[48];
        snprintf(shape, sizeof shape, "%s m=%d [%d,%d]",
                 a->role == ROLE_LM_HEAD  ? "lm_head"
                 : a->role == ROLE_Q_PROJ ? "q_proj"
                                          : "down_proj",
                 a->m, a->n, a->k);
        add_row(t, "matmul", shape, compare(t, run_matmul, a, &x, &n_x, 1, (size_t)a->m * a->n), BOUND_PRODUCT);
        if (i == 0) { /* the control: one term dropped on the CUDA side (an input zeroed) must show */
            float *moved = malloc(n_x * sizeof *moved);
            memcpy(moved, x, n_x * sizeof *moved);
            moved[a->k / 2] = 0.0f;
            float *ys[2];
            engine *es[2] = {&t->cpu, &t->cuda};
            float *xs[2] = {x, moved};
            for (int s = 0; s < 2; s++) {
                engine_backend *b = &es[s]->be;
                float *dx = to_backend(b, xs[s], n_x), *dy = b->alloc(b, (size_t)a->n * sizeof *dy, "control");
                run_matmul(es[s], dy, &dx, a);
                ys[s] = from_backend(b, dy, (size_t)a->n);
                b->free(b, dx), b->free(b, dy);
            }
            add_row(t, "control", "matmul with one term dropped", -normalised_error(ys[1], ys[0], (size_t)a->n),
                    -BOUND_PRODUCT); /* negated: must be above the bound */
            free(ys[0]), free(ys[1]), free(moved);
        }
        free(x);
    }
    for (int m = 1; m <= 4; m += 3) {
        const matmul_arg a = {0, ROLE_GATE_PROJ, m, 2 * F, D};
        float *x = random_floats(t, (size_t)m * D, -1.0f, 1.0f);
        const size_t n_x = (size_t)m * D;
        char shape[48];
        snprintf(shape, sizeof shape, "gate+up m=%d [2x%d,%d]", m, F, D);
        add_row(t, "matmul_group", shape, compare(t, run_matmul_group, &a, &x, &n_x, 1, (size_t)m * 2 * F),
                BOUND_PRODUCT);
        free(x);
    }
}

static void elementwise_rows(bench *t) {
    const model_config *c = &t->cpu.cfg;
    const int D = c->hidden_size, V = c->vocab_size;
    const int tokens[] = {4, 0, V - 1, 7, 7};
    add_row(t, "embed", "4 tokens (0, V-1, twice 7)", compare(t, run_embed, tokens, NULL, NULL, 0, 4 * (size_t)D), 0.0);
    const int rows = 3;
    float *x = random_floats(t, (size_t)rows * D, -3.0f, 3.0f);
    const size_t n_x = (size_t)rows * D;
    char shape[48];
    snprintf(shape, sizeof shape, "%d rows x %d", rows, D);
    add_row(t, "rmsnorm", shape, compare(t, run_rmsnorm, &rows, &x, &n_x, 1, n_x), BOUND_NORM);
    free(x);
    const size_t n = 1003; /* not a multiple of any vector width */
    float *in[2] = {random_floats(t, n, -4.0f, 4.0f), random_floats(t, n, -4.0f, 4.0f)};
    const size_t ns[2] = {n, n};
    add_row(t, "add", "1003", compare(t, run_add, &n, in, ns, 2, n), 0.0);
    add_row(t, "swiglu", "1003", compare(t, run_swiglu, &n, in, ns, 2, n), BOUND_SWIGLU);
    free(in[0]), free(in[1]);
}

static void probs_rows(bench *t) {
    const int V = t->cpu.cfg.vocab_size, m = 3;
    const sampler_params params[] = {{1.0f, 0, 1.0f, 0.0f}, {0.7f, 5, 1.0f, 0.0f}, {0.8f, 0, 0.9f, 0.05f}};
    const char *names[] = {"T=1", "T=0.7 top-k 5", "T=0.8 top-p 0.9 min-p 0.05"};
    for (int i = 0; i < 3; i++) {
        probs_arg a = {m, params[i], malloc((size_t)m * V * sizeof(float))};
        float *logits = random_floats(t, (size_t)m * V, -6.0f, 6.0f);
        const size_t n_l = (size_t)m * V;
        char shape[48];
        snprintf(shape, sizeof shape, "%d rows x V=%d, %s", m, V, names[i]);
        add_row(t, "probs", shape, compare(t, run_probs, &a, &logits, &n_l, 1, n_l), BOUND_PROBS);
        free(logits), free(a.host_out);
    }
}

START_TEST(test_ops_match_the_cpu_backend) {
    char dir[512];
    /* micro-tied: the CUDA kernels take its head_dim (32); its weights bf16, as the CUDA backend computes */
    write_checkpoint(dir, sizeof dir, "micro-tied", 0, 31, DTYPE_BF16);
    bench t;
    bench_open(&t, dir);
    matmul_rows(&t);
    elementwise_rows(&t);
    probs_rows(&t);
    printf("backend conformance: the CUDA backend on %s against the CPU backend (%s)\n", t.cuda.be.device,
           t.cpu.be.device);
    printf("%-13s %-40s %10s %10s  %s\n", "op", "shape", "error", "bound", "");
    int failed = 0;
    for (int i = 0; i < t.n_rows; i++) {
        const row *r = &t.rows[i];
        const int control = r->bound < 0.0, ok = control ? -r->err > -r->bound : r->err <= r->bound;
        printf("%-13s %-40s %10.3g %10.3g  %s\n", r->op, r->shape, fabs(r->err), fabs(r->bound),
               ok        ? (control ? "seen" : "ok")
               : control ? "NOT SEEN"
                         : "FAIL");
        failed += !ok;
    }
    bench_close(&t);
    harness_rmtree(dir);
    ck_assert_msg(failed == 0, "%d row(s) of the conformance table failed (printed above)", failed);
}
END_TEST

Suite *backend_conformance_suite(void) {
    Suite *s = suite_create("backend_conformance");
    TCase *tc = harness_tcase("ops", 120);
    tcase_add_test(tc, test_ops_match_the_cpu_backend);
    suite_add_tcase(s, tc);
    return s;
}
