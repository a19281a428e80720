/* test_cpu_gemm.c — the CPU engine's matrix products (optimized/cpu/gemm.h): every kernel this CPU runs within
 * the rigorous bound of fp32 accumulation of the exact product, rows bit for bit independent of m and of the thread
 * count, and a group of products of one x bit for bit its products alone. */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/gemm.h"
#include "harness.h"
#include "ops.h"
#include "philox.h"

static const int M_VALUES[] = {1, 2, 3, 5, 8, 17, 64, 70}; /* 70: past one block of 64 x rows per pass over W */
static const int N_VALUES[] = {1, 2, 6, 37};               /* below, at and off the 4-row register tiles */
static const int K_VALUES[] = {1, 7, 33, 257, 1000};       /* no multiple of 8, 16 or 32 */
#define N_OF(a) ((int)(sizeof(a) / sizeof(a)[0]))

/* One product's inputs and its exact value. Products of two floats are exact in double and the double sums over
 * k ≤ 1000 terms are off by at most k·2⁻⁵³·Σ|w·x|, 2²⁰ times below the fp32 bound: ref stands for the exact value. */
typedef struct {
    int m, n, k;
    dtype_t wdtype;
    unsigned char *W_alloc, *W; /* [n, k] of wdtype at an odd byte address */
    float *Wf;                  /* [n, k] the same weights as fp32 (bf16 widens exactly) */
    float *x_alloc, *x;         /* [m, k] one float past a 64-byte boundary */
    float *xb;                  /* [m, k] bf16(x) as fp32: what the AVX512_BF16 kernel multiplies */
    double *ref, *abs_sum;      /* [m, n] Σ w·x and Σ |w·x| */
    double *ref_xb, *abs_xb;    /* [m, n] the same with bf16(x) */
} problem;

static float uniform(uint64_t seed, uint64_t stream, uint64_t i) {
    return 2.0f * philox_uniform(seed, stream, i, 0) - 1;
}

static void exact_products(const problem *pb, const float *x, double *ref, double *abs_sum) {
    for (int i = 0; i < pb->m; i++)
        for (int j = 0; j < pb->n; j++) {
            double s = 0, a = 0;
            for (int t = 0; t < pb->k; t++) {
                double p = (double)pb->Wf[(size_t)j * pb->k + t] * x[(size_t)i * pb->k + t];
                s += p;
                a += fabs(p);
            }
            ref[(size_t)i * pb->n + j] = s;
            abs_sum[(size_t)i * pb->n + j] = a;
        }
}

static problem problem_make(int m, int n, int k, dtype_t wdtype, uint64_t seed) {
    problem pb = {.m = m, .n = n, .k = k, .wdtype = wdtype};
    size_t nk = (size_t)n * k, mk = (size_t)m * k, mn = (size_t)m * n;
    pb.W_alloc = malloc(nk * dtype_size(wdtype) + 1);
    pb.W = pb.W_alloc + 1;
    pb.Wf = malloc((nk + 1) * sizeof(float));
    pb.x_alloc = aligned_alloc(64, ((mk + 1) * sizeof(float) + 63) / 64 * 64);
    pb.x = pb.x_alloc + 1;
    pb.xb = malloc((mk + 1) * sizeof(float));
    pb.ref = malloc(4 * (mn + 1) * sizeof(double));
    ck_assert(pb.W_alloc && pb.Wf && pb.x_alloc && pb.xb && pb.ref);
    pb.abs_sum = pb.ref + mn, pb.ref_xb = pb.ref + 2 * mn, pb.abs_xb = pb.ref + 3 * mn;
    for (size_t e = 0; e < nk; e++) {
        float w = uniform(seed, 1, e);
        if (wdtype == DTYPE_BF16) {
            uint16_t h = f32_to_bf16(w);
            w = bf16_to_f32(h);
            memcpy(pb.W + 2 * e, &h, 2);
        } else {
            memcpy(pb.W + 4 * e, &w, 4);
        }
        pb.Wf[e] = w;
    }
    for (size_t e = 0; e < mk; e++) pb.x[e] = uniform(seed, 2, e), pb.xb[e] = bf16_to_f32(f32_to_bf16(pb.x[e]));
    exact_products(&pb, pb.x, pb.ref, pb.abs_sum);
    exact_products(&pb, pb.xb, pb.ref_xb, pb.abs_xb);
    return pb;
}

static void problem_free(problem *pb) {
    free(pb->W_alloc), free(pb->Wf), free(pb->x_alloc), free(pb->xb), free(pb->ref);
}

/* y [m, n] one float past a 64-byte boundary, filled with NaN so an output never written shows. */
static float *output_make(int m, int n, float **alloc) {
    size_t count = (size_t)m * n + 1;
    *alloc = aligned_alloc(64, (count * sizeof(float) + 63) / 64 * 64);
    ck_assert(*alloc);
    for (size_t e = 0; e < count; e++) (*alloc)[e] = NAN;
    return *alloc + 1;
}

/* The rigorous bound of fp32 accumulation (Higham, Accuracy and Stability of Numerical Algorithms, §3.1): when every
 * term reaches the sum through at most d roundings, |ŷ − y| ≤ γ_d·Σ|w·x| with γ_d = d·u / (1 − d·u), u = 2⁻²⁴.
 * d follows each kernel's documented order of operations (gemm.h and the kernels' files): one rounding per step of
 * the term's lane, those of the tree over the lanes, one per term of a scalar tail, one for the product where
 * multiply and add are separate. A worst case, not a statistical estimate: a right kernel cannot fail it, and the
 * controls below show what it still rejects. */
static int roundings(cpu_gemm_isa isa, dtype_t wdtype, int k) {
    if (isa == CPU_GEMM_PORTABLE) return 1 + k / 16 + 4 + 15; /* product; 16 lanes; tree; tail of k mod 16 */
    if (isa == CPU_GEMM_IN_ORDER) return k;                   /* the first product, then k − 1 additions */
    if (isa == CPU_GEMM_AVX2) return k / 8 + 3 + 7;           /* 8 FMA lanes; tree; FMA tail of k mod 8 */
    if (isa == CPU_GEMM_AVX512_BF16 && wdtype == DTYPE_BF16)
        return 2 * ((k + 31) / 32) + 4; /* vdpbf16ps: 2 adds per lane and step of 32 (exact products); tree */
    return (k + 15) / 16 + 4;           /* AVX512 (and AVX512_BF16 on f32 W): 16 FMA lanes, the tail masked in; tree */
}

static double fp32_bound(int d, double abs_sum) {
    const double u = 0x1p-24;
    return d * u / (1 - d * u) * abs_sum;
}

/* How many outputs lie outside extra·Σ|w·x| + the fp32 bound of d roundings of ref (NaN counts as outside); *worst
 * gets the largest ratio of error to that bound. */
static int violations(const float *y, const double *ref, const double *abs_sum, int count, int d, double extra,
                      double *worst) {
    int bad = 0;
    *worst = 0;
    for (int e = 0; e < count; e++) {
        double bound = extra * abs_sum[e] + fp32_bound(d, abs_sum[e] * (1 + extra));
        double err = fabs((double)y[e] - ref[e]);
        double ratio = isnan(y[e]) ? INFINITY : err / bound;
        if (!(err <= bound)) bad++;
        if (ratio > *worst) *worst = ratio;
    }
    return bad;
}

/* ---- every kernel against the exact product ----------------------------------------------------------------- */

/* One shape and dtype through one kernel: within the bound of fp32 accumulation of the exact product of what the
 * kernel multiplies (x itself, or bf16(x) for the AVX512_BF16 kernel on bf16 weights). */
static void check_against_reference(cpu_gemm_isa isa, int m, int n, int k, dtype_t wdtype) {
    problem pb = problem_make(m, n, k, wdtype, 1000u * m + 10u * n + k);
    float *y_alloc, *y = output_make(m, n, &y_alloc);
    cpu_gemm_with(isa, y, pb.W, wdtype, pb.x, m, n, k, 1);
    int rounds_x = isa == CPU_GEMM_AVX512_BF16 && wdtype == DTYPE_BF16;
    double worst;
    int bad = violations(y, rounds_x ? pb.ref_xb : pb.ref, rounds_x ? pb.abs_xb : pb.abs_sum, m * n,
                         roundings(isa, wdtype, k), 0, &worst);
    ck_assert_msg(bad == 0, "%s %s m=%d n=%d k=%d: %d of %d outputs outside the fp32 bound (worst %.2f× the bound)",
                  cpu_gemm_isa_name(isa), dtype_name(wdtype), m, n, k, bad, m * n, worst);
    free(y_alloc);
    problem_free(&pb);
}

START_TEST(test_matches_double_reference) {
    cpu_gemm_isa isa = (cpu_gemm_isa)_i;
    for (int a = 0; a < N_OF(M_VALUES); a++)
        for (int b = 0; b < N_OF(N_VALUES); b++)
            for (int c = 0; c < N_OF(K_VALUES); c++) {
                check_against_reference(isa, M_VALUES[a], N_VALUES[b], K_VALUES[c], DTYPE_F32);
                check_against_reference(isa, M_VALUES[a], N_VALUES[b], K_VALUES[c], DTYPE_BF16);
            }
}
END_TEST

/* ---- rows independent of m and of the thread count ---------------------------------------------------------- */

/* y of all m rows at 1 and 2 threads, and each row alone (m = 1, 1 thread): all bit-for-bit the same (a row alone
 * at 2 threads is the case m = 1 of the first comparison). n = 37 and 70 give 3 and 5 groups of 16 W rows, so two
 * threads split them unevenly. */
static void check_rows_bitwise(cpu_gemm_isa isa, int m, int n, int k, dtype_t wdtype) {
    problem pb = problem_make(m, n, k, wdtype, 7000u + 1000u * m + 10u * n + k);
    float *all1_alloc, *all1 = output_make(m, n, &all1_alloc);
    float *all2_alloc, *all2 = output_make(m, n, &all2_alloc);
    float *one_alloc, *one = output_make(1, n, &one_alloc);
    cpu_gemm_with(isa, all1, pb.W, wdtype, pb.x, m, n, k, 1);
    cpu_gemm_with(isa, all2, pb.W, wdtype, pb.x, m, n, k, 2);
    ck_assert_msg(memcmp(all1, all2, (size_t)m * n * sizeof(float)) == 0,
                  "%s %s m=%d n=%d k=%d: 1 and 2 threads differ", cpu_gemm_isa_name(isa), dtype_name(wdtype), m, n, k);
    for (int i = 0; i < m; i++) {
        cpu_gemm_with(isa, one, pb.W, wdtype, pb.x + (size_t)i * k, 1, n, k, 1);
        for (int j = 0; j < n; j++)
            ck_assert_msg(memcmp(&one[j], &all1[(size_t)i * n + j], sizeof(float)) == 0,
                          "%s %s m=%d n=%d k=%d: row %d, output %d is %a alone, %a among %d rows",
                          cpu_gemm_isa_name(isa), dtype_name(wdtype), m, n, k, i, j, (double)one[j],
                          (double)all1[(size_t)i * n + j], m);
    }
    free(all1_alloc), free(all2_alloc), free(one_alloc);
    problem_free(&pb);
}

START_TEST(test_rows_independent_of_m_and_threads) {
    cpu_gemm_isa isa = (cpu_gemm_isa)_i;
    static const int n_values[] = {37, 70};
    for (int a = 0; a < N_OF(M_VALUES); a++)
        for (int b = 0; b < N_OF(n_values); b++)
            for (int c = 0; c < N_OF(K_VALUES); c++) {
                check_rows_bitwise(isa, M_VALUES[a], n_values[b], K_VALUES[c], DTYPE_F32);
                check_rows_bitwise(isa, M_VALUES[a], n_values[b], K_VALUES[c], DTYPE_BF16);
            }
}
END_TEST

/* The control of the bitwise test: a change of accumulation order does show in the bits. Every two kernels with
 * different lane counts (or separate multiply and add; in order or in lanes) differ somewhere on 8 × 37 sums of 1000
 * terms, as a kernel that took another path for m = 1 than inside a tile would differ from itself. */
START_TEST(test_accumulation_order_shows_in_bits) {
    int m = 8, n = 37, k = 1000, compared = 0;
    problem pb = problem_make(m, n, k, DTYPE_BF16, 77);
    float *a_alloc, *a = output_make(m, n, &a_alloc), *b_alloc, *b = output_make(m, n, &b_alloc);
    for (int isa_a = 0; isa_a < CPU_GEMM_ISA_COUNT; isa_a++)
        for (int isa_b = isa_a + 1; isa_b < CPU_GEMM_ISA_COUNT; isa_b++) {
            if (!cpu_gemm_isa_available((cpu_gemm_isa)isa_a) || !cpu_gemm_isa_available((cpu_gemm_isa)isa_b)) continue;
            cpu_gemm_with((cpu_gemm_isa)isa_a, a, pb.W, DTYPE_BF16, pb.x, m, n, k, 1);
            cpu_gemm_with((cpu_gemm_isa)isa_b, b, pb.W, DTYPE_BF16, pb.x, m, n, k, 1);
            ck_assert_msg(memcmp(a, b, (size_t)m * n * sizeof(float)) != 0, "%s and %s agree in every bit",
                          cpu_gemm_isa_name((cpu_gemm_isa)isa_a), cpu_gemm_isa_name((cpu_gemm_isa)isa_b));
            compared++;
        }
    free(a_alloc), free(b_alloc);
    problem_free(&pb);
    ck_assert_int_gt(compared, 0);
}
END_TEST

/* The in-order kernel is op_matvec bit for bit, with f32 weights and with bf16 weights widened (the reference's
 * float32 copy of a bf16 checkpoint), for every row of x, at 1 and 2 threads: the engine's --dtype f32 mode rests
 * on it. The control is the test above: every other kernel differs from it in some bits. */
START_TEST(test_in_order_is_op_matvec) {
    for (int c = 0; c < N_OF(K_VALUES); c++) {
        const int m = 5, n = 37, k = K_VALUES[c];
        for (int d = 0; d < 2; d++) {
            const dtype_t wdtype = d ? DTYPE_BF16 : DTYPE_F32;
            problem pb = problem_make(m, n, k, wdtype, 900u + (uint64_t)k);
            float *y_alloc, *y = output_make(m, n, &y_alloc), *want = malloc((size_t)n * sizeof *want);
            for (int threads = 1; threads <= 2; threads++) {
                cpu_gemm_with(CPU_GEMM_IN_ORDER, y, pb.W, wdtype, pb.x, m, n, k, threads);
                for (int i = 0; i < m; i++) {
                    op_matvec(want, pb.Wf, pb.x + (size_t)i * k, n, k);
                    ck_assert_msg(memcmp(want, y + (size_t)i * n, (size_t)n * sizeof(float)) == 0,
                                  "%s k=%d row %d, %d thread(s): not op_matvec's bits", dtype_name(wdtype), k, i,
                                  threads);
                }
            }
            free(want), free(y_alloc);
            problem_free(&pb);
        }
    }
}
END_TEST

/* ---- a group of products of one x ---------------------------------------------------------------------------- */

/* Four parts of a group (rows 37, 6, 37, 1: whole and short row groups, so the threads' ranges cross parts at
 * several places) with their own weights and one x, through cpu_gemm_group at n_threads, against each part's
 * cpu_gemm_with alone at one thread, compared with the parts in order `order` (the identity, or a planted swap of
 * the two parts of 37 rows: the control). Each output sits between NaN guards that must stay as they are. Returns
 * the count of outputs that differ in some bit; a guard overwritten fails at once. */
#define GROUP_PARTS 4
static int group_mismatches(cpu_gemm_isa isa, int m, int k, dtype_t wdtype, int n_threads, const int *order) {
    static const int n[GROUP_PARTS] = {37, 6, 37, 1};
    problem pb[GROUP_PARTS];
    float *y_alloc[GROUP_PARTS], *z_alloc[GROUP_PARTS];
    cpu_gemm_part parts[GROUP_PARTS];
    for (int j = 0; j < GROUP_PARTS; j++) {
        pb[j] = problem_make(m, n[j], k, wdtype, 4000u + 100u * j + (uint64_t)k);
        const size_t count = (size_t)m * n[j] + 2;
        y_alloc[j] = malloc(count * sizeof(float)), z_alloc[j] = malloc(count * sizeof(float));
        ck_assert(y_alloc[j] && z_alloc[j]);
        for (size_t e = 0; e < count; e++) y_alloc[j][e] = NAN;
        parts[j] = (cpu_gemm_part){y_alloc[j] + 1, pb[j].W, wdtype, n[j]};
        cpu_gemm_with(isa, z_alloc[j], pb[j].W, wdtype, pb[0].x, m, n[j], k, 1); /* every part reads part 0's x */
    }
    cpu_gemm_group(isa, parts, GROUP_PARTS, pb[0].x, m, k, n_threads);
    int differ = 0;
    for (int j = 0; j < GROUP_PARTS; j++) {
        const size_t count = (size_t)m * n[j];
        ck_assert_msg(isnan(y_alloc[j][0]) && isnan(y_alloc[j][count + 1]),
                      "%s m=%d k=%d: the group wrote outside part %d", cpu_gemm_isa_name(isa), m, k, j);
        const float *want = z_alloc[order[j]];
        for (size_t e = 0; e < count && e < (size_t)m * n[order[j]]; e++)
            differ += memcmp(&y_alloc[j][e + 1], &want[e], sizeof(float)) != 0;
    }
    for (int j = 0; j < GROUP_PARTS; j++) free(y_alloc[j]), free(z_alloc[j]), problem_free(&pb[j]);
    return differ;
}

/* A group's outputs are bit for bit each part's product alone, for every kernel, m (one x block and past it), k,
 * weight type and thread count (1: no parallel region; 2, 3: ranges that end inside a part). The control: the same
 * outputs compared with the two 37-row parts' products exchanged — what a group that wrote a part at another's
 * offset would give — differ. */
START_TEST(test_group_equals_separate_products) {
    static const int m_values[] = {1, 3, 17, 70}, k_values[] = {33, 257};
    static const int in_order[GROUP_PARTS] = {0, 1, 2, 3}, swapped[GROUP_PARTS] = {2, 1, 0, 3};
    const cpu_gemm_isa isa = (cpu_gemm_isa)_i;
    for (int a = 0; a < N_OF(m_values); a++)
        for (int c = 0; c < N_OF(k_values); c++)
            for (int d = 0; d < 2; d++)
                for (int threads = 1; threads <= 3; threads++) {
                    const dtype_t wdtype = d ? DTYPE_BF16 : DTYPE_F32;
                    const int m = m_values[a], k = k_values[c];
                    ck_assert_msg(group_mismatches(isa, m, k, wdtype, threads, in_order) == 0,
                                  "%s %s m=%d k=%d, %d thread(s): the group differs from the separate products",
                                  cpu_gemm_isa_name(isa), dtype_name(wdtype), m, k, threads);
                    ck_assert_msg(group_mismatches(isa, m, k, wdtype, threads, swapped) >= 2 * m * 37 * 9 / 10,
                                  "%s %s m=%d k=%d: control: parts 0 and 2 exchanged pass the comparison",
                                  cpu_gemm_isa_name(isa), dtype_name(wdtype), m, k);
                }
}
END_TEST

/* The default is the widest kernel with fp32 activations, and cpu_gemm is exactly that kernel. */
START_TEST(test_default_dispatch) {
    cpu_gemm_isa isa = cpu_gemm_default_isa();
    ck_assert(cpu_gemm_isa_available(isa));
    ck_assert_int_ne(isa, CPU_GEMM_AVX512_BF16);
    ck_assert_int_ne(isa, CPU_GEMM_IN_ORDER);
    ck_assert_str_eq(cpu_gemm_isa_name(CPU_GEMM_IN_ORDER), "in-order");
    ck_assert(cpu_gemm_isa_available(CPU_GEMM_PORTABLE));
    if (cpu_gemm_isa_available(CPU_GEMM_AVX512)) ck_assert_int_eq(isa, CPU_GEMM_AVX512);
    ck_assert_str_eq(cpu_gemm_isa_name(CPU_GEMM_AVX512_BF16), "avx512-bf16");
    ck_assert_str_eq(cpu_gemm_isa_name(CPU_GEMM_ISA_COUNT), "?");
    problem pb = problem_make(5, 37, 257, DTYPE_BF16, 99);
    float *a_alloc, *a = output_make(5, 37, &a_alloc), *b_alloc, *b = output_make(5, 37, &b_alloc);
    cpu_gemm(a, pb.W, DTYPE_BF16, pb.x, 5, 37, 257, 2);
    cpu_gemm_with(isa, b, pb.W, DTYPE_BF16, pb.x, 5, 37, 257, 1);
    ck_assert(memcmp(a, b, 5 * 37 * sizeof(float)) == 0);
    free(a_alloc), free(b_alloc);
    problem_free(&pb);
}
END_TEST

/* The threads of this process, from /proc/self/status; -1 where that cannot be read. */
static int process_threads(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int threads = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &threads) == 1) break;
    if (f) fclose(f);
    return threads;
}

/* One thread never starts OpenMP's threads (the runner forks every test: its parent must stay single-threaded, and
 * so must a single-threaded engine); the control: two threads do start them, and the pool stays. */
START_TEST(test_one_thread_starts_no_openmp) {
    ck_assert_int_eq(process_threads(), 1); /* this test's forked process, before any product */
    problem pb = problem_make(8, 70, 257, DTYPE_BF16, 11);
    float *y_alloc, *y = output_make(8, 70, &y_alloc);
    for (int isa = 0; isa < CPU_GEMM_ISA_COUNT; isa++)
        if (cpu_gemm_isa_available((cpu_gemm_isa)isa))
            cpu_gemm_with((cpu_gemm_isa)isa, y, pb.W, DTYPE_BF16, pb.x, 8, 70, 257, 1);
    cpu_gemm(y, pb.W, DTYPE_BF16, pb.x, 8, 70, 257, 1);
    ck_assert_int_eq(process_threads(), 1);
    cpu_gemm(y, pb.W, DTYPE_BF16, pb.x, 8, 70, 257, 2);
    if (cpu_gemm_has_openmp()) ck_assert_int_gt(process_threads(), 1);
    free(y_alloc);
    problem_free(&pb);
}
END_TEST

/* k = 0 gives zeros; m = 0 or n = 0 writes nothing. */
START_TEST(test_degenerate_shapes) {
    float x[3] = {1, 2, 3}, W[3] = {1, 1, 1}, y[3] = {NAN, NAN, NAN};
    for (int isa = 0; isa < CPU_GEMM_ISA_COUNT; isa++) {
        if (!cpu_gemm_isa_available((cpu_gemm_isa)isa)) continue;
        cpu_gemm_with((cpu_gemm_isa)isa, y, W, DTYPE_F32, x, 0, 3, 1, 1);
        cpu_gemm_with((cpu_gemm_isa)isa, y, W, DTYPE_F32, x, 3, 0, 1, 2);
        ck_assert(isnan(y[0]) && isnan(y[1]) && isnan(y[2]));
        cpu_gemm_with((cpu_gemm_isa)isa, y, W, DTYPE_BF16, x, 3, 1, 0, 1);
        ck_assert(y[0] == 0 && y[1] == 0 && y[2] == 0);
        y[0] = y[1] = y[2] = NAN;
    }
}
END_TEST

START_TEST(test_f16_weights_abort) {
    float x[1] = {1}, y[1];
    uint16_t W[1] = {0x3c00};
    ck_assert(freopen("/dev/null", "w", stderr)); /* this forked test's own stderr: the expected message is noise */
    cpu_gemm(y, W, DTYPE_F16, x, 1, 1, 1, 1);     /* the engine converts f16 to f32 at load: this is a caller's bug */
}
END_TEST

/* ---- the bf16-activation option ----------------------------------------------------------------------------- */

/* Against fp32 activations: within 2⁻⁸·Σ|w·x| (bf16 rounding of each x, round to nearest: relative error ≤ 2⁻⁸)
 * plus the fp32 bound; and outside the fp32 bound alone somewhere — the reason it is not the default. f32 weights
 * run the AVX512 kernel, bit for bit. */
START_TEST(test_bf16_activation_option) {
    for (int c = 0; c < N_OF(K_VALUES); c++) {
        int m = 17, n = 37, k = K_VALUES[c];
        problem pb = problem_make(m, n, k, DTYPE_BF16, 500u + k);
        float *y_alloc, *y = output_make(m, n, &y_alloc);
        cpu_gemm_with(CPU_GEMM_AVX512_BF16, y, pb.W, DTYPE_BF16, pb.x, m, n, k, 2);
        double worst;
        int d = roundings(CPU_GEMM_AVX512_BF16, DTYPE_BF16, k);
        int bad = violations(y, pb.ref, pb.abs_sum, m * n, d, 0x1p-8, &worst);
        ck_assert_msg(bad == 0, "k=%d: %d outputs outside 2^-8·Σ|wx| + the fp32 bound (worst %.2f×)", k, bad, worst);
        bad = violations(y, pb.ref, pb.abs_sum, m * n, d, 0, &worst);
        ck_assert_msg(bad > 0, "k=%d: bf16 activations indistinguishable from fp32 ones by the fp32 bound", k);
        problem_free(&pb);
        pb = problem_make(m, n, k, DTYPE_F32, 600u + k);
        float *z_alloc, *z = output_make(m, n, &z_alloc);
        cpu_gemm_with(CPU_GEMM_AVX512_BF16, y, pb.W, DTYPE_F32, pb.x, m, n, k, 1);
        cpu_gemm_with(CPU_GEMM_AVX512, z, pb.W, DTYPE_F32, pb.x, m, n, k, 1);
        ck_assert_msg(memcmp(y, z, (size_t)m * n * sizeof(float)) == 0, "k=%d: f32 weights not on the AVX512 path", k);
        free(y_alloc), free(z_alloc);
        problem_free(&pb);
    }
}
END_TEST

/* ---- negative controls: errors the bound must reject -------------------------------------------------------- */

/* The default kernel's output against references with a planted error. Not rejectable, and so not tried: one fp32
 * ulp per term (≤ 2⁻²³·Σ|w·x|), below the worst-case accumulation bound itself (d·2⁻²⁴·Σ|w·x| with d ≥ 5). */
START_TEST(test_negative_controls) {
    cpu_gemm_isa isa = cpu_gemm_default_isa();
    for (int c = 0; c < N_OF(K_VALUES); c++) {
        int m = 8, n = 37, k = K_VALUES[c], count = m * n, d = roundings(isa, DTYPE_BF16, k);
        problem pb = problem_make(m, n, k, DTYPE_BF16, 300u + k);
        float *y_alloc, *y = output_make(m, n, &y_alloc);
        cpu_gemm_with(isa, y, pb.W, DTYPE_BF16, pb.x, m, n, k, 1);
        double worst, *planted = malloc(2 * (size_t)count * sizeof(double)), *planted_abs = planted + count;
        ck_assert(planted);
        ck_assert_int_eq(violations(y, pb.ref, pb.abs_sum, count, d, 0, &worst), 0); /* the control's control */
        /* an off-by-one in k: the last term of every sum dropped */
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                int e = i * n + j;
                double last = (double)pb.Wf[(size_t)j * k + k - 1] * pb.x[(size_t)i * k + k - 1];
                planted[e] = pb.ref[e] - last, planted_abs[e] = pb.abs_sum[e] - fabs(last);
            }
        ck_assert_msg(violations(y, planted, planted_abs, count, d, 0, &worst) > 0, "k=%d: off-by-one passed", k);
        /* a bias: every product one bf16 ulp of its weight too high (a rounding that always goes one way), an error
         * of more than 2⁻⁸·Σ|w·x|, over 2⁹ times the bound at k = 1000: rejected in every output */
        for (int e = 0; e < count; e++) {
            int i = e / n, j = e % n;
            planted[e] = pb.ref[e];
            for (int t = 0; t < k; t++) {
                float w = pb.Wf[(size_t)j * k + t];
                double ulp = (double)bf16_to_f32((uint16_t)(f32_to_bf16(w) + 1)) - w;
                planted[e] += fabs(ulp * pb.x[(size_t)i * k + t]);
            }
        }
        ck_assert_msg(violations(y, planted, pb.abs_sum, count, d, 0, &worst) == count,
                      "k=%d: a one-bf16-ulp bias per product passed in some outputs", k);
        /* one weight one bf16 ulp off: of W row 0, the one whose ulp moves output (0, 0) most */
        int t_max = 0;
        double shift_max = 0;
        for (int t = 0; t < k; t++) {
            double shift = ((double)bf16_to_f32((uint16_t)(f32_to_bf16(pb.Wf[t]) + 1)) - pb.Wf[t]) * pb.x[t];
            if (fabs(shift) > fabs(shift_max)) t_max = t, shift_max = shift;
        }
        memcpy(planted, pb.ref, (size_t)count * sizeof(double));
        planted[0] += shift_max;
        ck_assert_msg(violations(y, planted, pb.abs_sum, count, d, 0, &worst) == 1 && worst > 1,
                      "k=%d: one weight's ulp (at t=%d) passed", k, t_max);
        free(planted), free(y_alloc);
        problem_free(&pb);
    }
}
END_TEST

Suite *cpu_gemm_suite(void) {
    Suite *s = suite_create("cpu_gemm");
    TCase *tc = harness_tcase("products", 300);
    for (int isa = 0; isa < CPU_GEMM_ISA_COUNT; isa++) {
        if (cpu_gemm_isa_available((cpu_gemm_isa)isa)) {
            tcase_add_loop_test(tc, test_matches_double_reference, isa, isa + 1);
            tcase_add_loop_test(tc, test_rows_independent_of_m_and_threads, isa, isa + 1);
            tcase_add_loop_test(tc, test_group_equals_separate_products, isa, isa + 1);
        } else {
            harness_skip("cpu_gemm", cpu_gemm_isa_name((cpu_gemm_isa)isa), "this CPU lacks the instructions");
        }
    }
    tcase_add_test(tc, test_default_dispatch);
    tcase_add_test(tc, test_accumulation_order_shows_in_bits); /* portable and in-order at least */
    tcase_add_test(tc, test_in_order_is_op_matvec);
    tcase_add_test(tc, test_degenerate_shapes);
    if (process_threads() >= 1)
        tcase_add_test(tc, test_one_thread_starts_no_openmp);
    else
        harness_skip("cpu_gemm", "one_thread_starts_no_openmp", "/proc/self/status is not readable here");
    tcase_add_test_raise_signal(tc, test_f16_weights_abort, SIGABRT);
    tcase_add_test(tc, test_negative_controls);
    if (cpu_gemm_isa_available(CPU_GEMM_AVX512_BF16))
        tcase_add_test(tc, test_bf16_activation_option);
    else
        harness_skip("cpu_gemm", "bf16_activation_option", "this CPU lacks AVX-512-BF16");
    suite_add_tcase(s, tc);
    return s;
}
