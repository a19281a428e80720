/* test_matmul_group.c — the backends' grouped product (backend.h's matmul_group): the projections of one input as
 * one product must give each part's outputs bit for bit as the part's own matmul, on the CPU backend and on the
 * CUDA backend on the kernels' emulator. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "dtype.h"
#include "fixtures.h"
#include "harness.h"
#include "philox.h"

/* kn_matvec.h's dispatch table (that header needs the CUDA runtime's types; the emulator build links these). */
int kn_matvec_select(int n_out, int n_in, const char *decode_version, const char *batch_version);
void kn_matvec_select_reset(void);

#define PARTS 4
/* A multiple of 8 (the kernels' 16-byte path, on W and on every part alike), past 256 steps of 8: where the two
 * numerics classes add in different orders. */
#define K 2560
static const int N[PARTS] = {40, 24, 40, 8}; /* parts 0 and 2 of one size: the control exchanges them */
static const int IN_ORDER[PARTS] = {0, 1, 2, 3}, SWAPPED[PARTS] = {2, 1, 0, 3};

/* The group's weights (bf16) and x [m, K] in backend memory: back to back in one allocation, as place_weights
 * lays a group out, or `apart`, one allocation a part (the CUDA backend then runs one product a part). */
typedef struct {
    void *W[PARTS];
    float *x;
    eweight w[PARTS];
} group_inputs;

static group_inputs inputs_make(engine_backend *b, int m, uint64_t seed, int apart) {
    group_inputs g;
    memset(&g, 0, sizeof g);
    int rows = 0;
    for (int j = 0; j < PARTS; j++) rows += N[j];
    uint16_t *W = malloc((size_t)rows * K * sizeof *W);
    float *x = malloc((size_t)m * K * sizeof *x);
    ck_assert(W && x);
    for (size_t e = 0; e < (size_t)rows * K; e++) W[e] = f32_to_bf16(2 * philox_uniform(seed, 1, e, 0) - 1);
    for (size_t e = 0; e < (size_t)m * K; e++) x[e] = 2 * philox_uniform(seed, 2, e, 0) - 1;
    g.x = b->alloc(b, (size_t)m * K * sizeof *x, "group x");
    b->upload(b, g.x, x, (size_t)m * K * sizeof *x);
    if (!apart) {
        g.W[0] = b->alloc(b, (size_t)rows * K * sizeof *W, "group weights");
        b->upload(b, g.W[0], W, (size_t)rows * K * sizeof *W);
    }
    for (int j = 0, at = 0; j < PARTS; at += N[j], j++) {
        const size_t bytes = (size_t)N[j] * K * sizeof *W;
        if (apart) {
            g.W[j] = b->alloc(b, bytes, "part weights");
            b->upload(b, g.W[j], W + (size_t)at * K, bytes);
        }
        g.w[j] = (eweight){apart ? g.W[j] : (const char *)g.W[0] + (size_t)at * K * sizeof *W, DTYPE_BF16};
    }
    free(W), free(x);
    return g;
}

static void inputs_free(engine_backend *b, group_inputs *g) {
    for (int j = 0; j < PARTS; j++)
        if (g->W[j]) b->free(b, g->W[j]);
    b->free(b, g->x);
}

/* Each part's outputs as the group writes them (between NaN guards, in y[j] + 1) and as its own matmul does (z). */
typedef struct {
    float *y[PARTS], *z[PARTS]; /* host copies: [m·N[j] + 2], [m·N[j]] */
} group_outputs;

static group_outputs run_both(engine_backend *b, const group_inputs *g, int m) {
    group_outputs o;
    float *dy[PARTS], *dz[PARTS];
    ematmul_part parts[PARTS];
    for (int j = 0; j < PARTS; j++) {
        const size_t count = (size_t)m * N[j] + 2;
        o.y[j] = malloc(count * sizeof(float)), o.z[j] = malloc(count * sizeof(float));
        ck_assert(o.y[j] && o.z[j]);
        for (size_t e = 0; e < count; e++) o.y[j][e] = NAN;
        dy[j] = b->alloc(b, count * sizeof(float), "group output");
        dz[j] = b->alloc(b, count * sizeof(float), "part output");
        b->upload(b, dy[j], o.y[j], count * sizeof(float));
        parts[j] = (ematmul_part){dy[j] + 1, &g->w[j], N[j]};
        b->matmul(b, dz[j], &g->w[j], g->x, m, N[j], K);
    }
    b->matmul_group(b, parts, PARTS, g->x, m, K);
    for (int j = 0; j < PARTS; j++) {
        const size_t count = (size_t)m * N[j] + 2;
        b->download(b, o.y[j], dy[j], count * sizeof(float));
        b->download(b, o.z[j], dz[j], (count - 2) * sizeof(float));
        b->free(b, dy[j]), b->free(b, dz[j]);
    }
    sp_error err;
    ck_assert_msg(b->status(b, &err) == 0, "%s", err.msg);
    return o;
}

/* Outputs of the group that differ in some bit from the separate products taken in `order`; a guard overwritten
 * fails at once. */
static int mismatches(const group_outputs *o, int m, const int *order, const char *what) {
    int differ = 0;
    for (int j = 0; j < PARTS; j++) {
        const size_t count = (size_t)m * N[j];
        ck_assert_msg(isnan(o->y[j][0]) && isnan(o->y[j][count + 1]), "%s m=%d: written outside part %d", what, m, j);
        for (size_t e = 0; e < count; e++) differ += memcmp(&o->y[j][e + 1], &o->z[order[j]][e], sizeof(float)) != 0;
    }
    return differ;
}

static void outputs_free(group_outputs *o) {
    for (int j = 0; j < PARTS; j++) free(o->y[j]), free(o->z[j]);
}

/* The comparison and its control on one backend, for m from a decode step to past one launch's 16 rows, the
 * weights back to back or apart. The control compares the same outputs with two equal-sized parts exchanged (what
 * a product that wrote a part at another's offset would give) and must see them differ; NaN guards around every
 * output catch a write past a part. */
static void check_backend(engine_backend *b, const char *what) {
    static const int m_values[] = {1, 3, 16, 19};
    for (int apart = 0; apart < 2; apart++)
        for (int a = 0; a < (int)(sizeof m_values / sizeof m_values[0]); a++) {
            const int m = m_values[a];
            const char *where = apart ? ", weights apart" : "";
            group_inputs g = inputs_make(b, m, 50u + (uint64_t)m, apart);
            group_outputs o = run_both(b, &g, m);
            const int same = mismatches(&o, m, IN_ORDER, what), control = mismatches(&o, m, SWAPPED, what);
            ck_assert_msg(same == 0, "%s m=%d%s: %d outputs of the group differ from the separate products", what, m,
                          where, same);
            ck_assert_msg(control >= 2 * m * N[0] * 9 / 10,
                          "%s m=%d%s: control: parts 0 and 2 exchanged differ in only %d outputs", what, m, where,
                          control);
            outputs_free(&o);
            inputs_free(b, &g);
        }
}

START_TEST(test_cpu_group_is_the_separate_products) {
    fixture_model f;
    fixture_model_open(&f, "micro-tied", 91, NULL);
    for (int in_order = 0; in_order < 2; in_order++)
        for (int threads = 1; threads <= 3; threads++) {
            engine_backend b;
            backend_cpu_build(&b, &f.m.cfg, threads, in_order);
            char what[64];
            snprintf(what, sizeof what, "cpu, %d thread(s)%s", threads, in_order ? ", in order" : "");
            check_backend(&b, what);
            b.release(&b);
        }
    fixture_model_close(&f);
}
END_TEST

/* One launch of the version the dispatch names for the stacked shape against each part's matmul: the same
 * version is pinned for every shape here (a row's sum depends on its version's numerics class alone), once for
 * each class the engine's default dispatch uses. */
START_TEST(test_cuda_group_is_the_separate_products) {
    static const char *const pairs[][2] = {{"v4", "b3"}, {"v5", "b5"}};
    fixture_model f;
    fixture_model_open(&f, "micro-tied", 92, NULL);
    engine_backend b;
    sp_error err;
    ck_assert_msg(backend_cuda_build(&b, &f.m.cfg, &err) == 0, "%s", err.msg);
    int total = 0;
    for (int j = 0; j < PARTS; j++) total += N[j];
    for (int p = 0; p < 2; p++) {
        kn_matvec_select_reset();
        ck_assert(kn_matvec_select(total, K, pairs[p][0], pairs[p][1]) == 0);
        for (int j = 0; j < PARTS; j++) ck_assert(kn_matvec_select(N[j], K, pairs[p][0], pairs[p][1]) == 0);
        char what[64];
        snprintf(what, sizeof what, "cuda (emulator), %s/%s", pairs[p][0], pairs[p][1]);
        check_backend(&b, what);
    }
    /* One launch, not one a part: with the stacked shape's version of the other class than the parts', the
     * group's bits are that version's, not the parts' own matmuls' (separate launches would match them). */
    kn_matvec_select_reset();
    ck_assert(kn_matvec_select(total, K, "v4", "b3") == 0);
    for (int j = 0; j < PARTS; j++) ck_assert(kn_matvec_select(N[j], K, "v5", "b5") == 0);
    for (int m = 1; m <= 3; m += 2) {
        group_inputs g = inputs_make(&b, m, 70u + (uint64_t)m, 0);
        group_outputs o = run_both(&b, &g, m);
        ck_assert_msg(mismatches(&o, m, IN_ORDER, "cuda (emulator), stacked v4/b3, parts v5/b5") > 0,
                      "m=%d: the group computed as the parts' own products: not one launch over the stacked rows", m);
        outputs_free(&o);
        inputs_free(&b, &g);
    }
    kn_matvec_select_reset();
    b.release(&b);
    fixture_model_close(&f);
}
END_TEST

Suite *matmul_group_suite(void) {
    Suite *s = suite_create("matmul_group");
    TCase *tc = harness_tcase("both backends", 120);
    tcase_add_test(tc, test_cpu_group_is_the_separate_products);
    tcase_add_test(tc, test_cuda_group_is_the_separate_products);
    suite_add_tcase(s, tc);
    return s;
}
