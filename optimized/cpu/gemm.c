/* gemm.c — cpu_gemm's run-time dispatch over instruction sets, the split of W's rows across threads, and the
 * portable and in-order kernels in plain C. Compiled with no -m flags: the per-ISA kernels live in their own files,
 * and only this file calls them, after checking the CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "gemm_kernels.h"
#include "lanes.h"
#include "team.h"

/* Each thread gets a contiguous range of whole groups of this many W rows (a multiple of every kernel's tile). */
#define GEMM_ROW_GROUP 16
/* The portable kernel widens bf16 rows in blocks of this many elements, which the compiler turns into vector code
 * without being told the target (4 SSE registers on x86-64); its sums are lanes_dot's (lanes.h). */
#define PORTABLE_LANES 16

static void gemm_die(const char *what) {
    fprintf(stderr, "cpu_gemm: %s\n", what);
    abort();
}

/* ---- the portable kernel ------------------------------------------------------------------------------------ */

/* One W row as fp32: bf16 is the top half of an fp32 (the shift of dtype.h's bf16_to_f32, in blocks of 16). */
static void row_to_f32(float *dst, const unsigned char *src, dtype_t wdtype, int k) {
    if (wdtype == DTYPE_F32) {
        memcpy(dst, src, (size_t)k * sizeof(float));
        return;
    }
    int t = 0;
    for (; t + PORTABLE_LANES <= k; t += PORTABLE_LANES) {
        uint16_t h[PORTABLE_LANES];
        uint32_t u[PORTABLE_LANES];
        memcpy(h, src + 2 * (size_t)t, sizeof h);
        for (int l = 0; l < PORTABLE_LANES; l++) u[l] = (uint32_t)h[l] << 16;
        memcpy(dst + t, u, sizeof u);
    }
    for (; t < k; t++) {
        uint16_t h;
        memcpy(&h, src + 2 * (size_t)t, 2);
        dst[t] = bf16_to_f32(h);
    }
}

/* One W row at a time: converted to fp32 once into a scratch row (it stays in L1/L2), then dotted with every
 * row of x in the block. */
void gemm_rows_portable(const gemm_problem *p, int row_begin, int row_end) {
    float *w_row = malloc((size_t)(p->k > 0 ? p->k : 1) * sizeof *w_row);
    if (!w_row) gemm_die("out of memory for the portable kernel's scratch row");
    size_t row_bytes = (size_t)p->k * (size_t)dtype_size(p->wdtype);
    for (int i_block = 0; i_block < p->m; i_block += GEMM_M_BLOCK) {
        int i_end = p->m < i_block + GEMM_M_BLOCK ? p->m : i_block + GEMM_M_BLOCK;
        for (int j = row_begin; j < row_end; j++) {
            row_to_f32(w_row, p->W + (size_t)j * row_bytes, p->wdtype, p->k);
            for (int i = i_block; i < i_end; i++)
                p->y[(size_t)i * p->n + j] = lanes_dot(w_row, p->x + (size_t)i * p->k, p->k);
        }
    }
    free(w_row);
}

/* ---- the in-order kernel ------------------------------------------------------------------------------------ */

/* op_matvec's sum: acc += w[t]·x[t] for t = 0 … k − 1, one W row converted once and dotted with every x row. */
static void gemm_rows_in_order(const gemm_problem *p, int row_begin, int row_end) {
    float *w_row = malloc((size_t)(p->k > 0 ? p->k : 1) * sizeof *w_row);
    if (!w_row) gemm_die("out of memory for the in-order kernel's scratch row");
    size_t row_bytes = (size_t)p->k * (size_t)dtype_size(p->wdtype);
    for (int j = row_begin; j < row_end; j++) {
        row_to_f32(w_row, p->W + (size_t)j * row_bytes, p->wdtype, p->k);
        for (int i = 0; i < p->m; i++) {
            const float *xi = p->x + (size_t)i * p->k;
            float acc = 0.0f;
            for (int t = 0; t < p->k; t++) acc += w_row[t] * xi[t];
            p->y[(size_t)i * p->n + j] = acc;
        }
    }
    free(w_row);
}

/* ---- run-time dispatch -------------------------------------------------------------------------------------- */

typedef void gemm_rows_fn(const gemm_problem *p, int row_begin, int row_end);

#if defined(__x86_64__) || defined(__i386__)
#define GEMM_X86 1
#else
#define GEMM_X86 0
#endif

int cpu_gemm_isa_available(cpu_gemm_isa isa) {
    if (isa == CPU_GEMM_PORTABLE || isa == CPU_GEMM_IN_ORDER) return 1;
#if GEMM_X86
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    int avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl");
    switch (isa) {
    case CPU_GEMM_AVX2: return avx2;
    case CPU_GEMM_AVX512: return avx512;
    case CPU_GEMM_AVX512_BF16: return avx512 && __builtin_cpu_supports("avx512bf16");
    default: return 0;
    }
#else
    return 0;
#endif
}

cpu_gemm_isa cpu_gemm_default_isa(void) {
    if (cpu_gemm_isa_available(CPU_GEMM_AVX512)) return CPU_GEMM_AVX512;
    if (cpu_gemm_isa_available(CPU_GEMM_AVX2)) return CPU_GEMM_AVX2;
    return CPU_GEMM_PORTABLE;
}

int cpu_gemm_has_openmp(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

const char *cpu_gemm_isa_name(cpu_gemm_isa isa) {
    switch (isa) {
    case CPU_GEMM_PORTABLE: return "portable";
    case CPU_GEMM_AVX2: return "avx2";
    case CPU_GEMM_AVX512: return "avx512";
    case CPU_GEMM_AVX512_BF16: return "avx512-bf16";
    case CPU_GEMM_IN_ORDER: return "in-order";
    default: return "?";
    }
}

static gemm_rows_fn *rows_kernel(cpu_gemm_isa isa, dtype_t wdtype) {
    if (isa == CPU_GEMM_IN_ORDER) return gemm_rows_in_order;
#if GEMM_X86
    switch (isa) {
    case CPU_GEMM_AVX2: return gemm_rows_avx2;
    case CPU_GEMM_AVX512: return gemm_rows_avx512;
    case CPU_GEMM_AVX512_BF16: return wdtype == DTYPE_BF16 ? gemm_rows_avx512bf16 : gemm_rows_avx512;
    default: break;
    }
#endif
    return gemm_rows_portable;
}

/* x rounded to bf16 (round to nearest even, as dtype.h), each row zero padded to a multiple of 32 elements. */
static uint16_t *x_to_bf16(const float *x, int m, int k, int stride) {
    uint16_t *xb = calloc((size_t)m * (size_t)stride, sizeof *xb);
    if (!xb) gemm_die("out of memory for x in bf16");
    for (int i = 0; i < m; i++)
        for (int t = 0; t < k; t++) xb[(size_t)i * stride + t] = f32_to_bf16(x[(size_t)i * k + t]);
    return xb;
}

/* Rows [first, last) of the group's row groups, counted over the parts in turn (part j's rows in groups of
 * GEMM_ROW_GROUP, its last group possibly short): each part's share goes to its own kernel call. */
static void run_span(gemm_rows_fn *const *rows, const gemm_problem *p, int n_parts, int first, int last) {
    int base = 0; /* the row groups of the parts before j */
    for (int j = 0; j < n_parts && base < last; j++) {
        const int groups = (p[j].n + GEMM_ROW_GROUP - 1) / GEMM_ROW_GROUP;
        const int lo = first > base ? first - base : 0, hi = last < base + groups ? last - base : groups;
        if (lo < hi) rows[j](&p[j], lo * GEMM_ROW_GROUP, hi * GEMM_ROW_GROUP < p[j].n ? hi * GEMM_ROW_GROUP : p[j].n);
        base += groups;
    }
}

/* One product (or group) as the threads see it: thread t of T takes the t-th of T contiguous ranges of whole
 * row groups. */
typedef struct {
    gemm_rows_fn *const *rows;
    const gemm_problem *p;
    int n_parts, groups;
} rows_work;

static void rows_share(void *ctx, int t, int T) {
    const rows_work *w = ctx;
    run_span(w->rows, w->p, w->n_parts, (int)((long)w->groups * t / T), (int)((long)w->groups * (t + 1) / T));
}

/* The parts' rows of W taken together, in n_threads contiguous ranges of whole row groups: one team for every
 * part, no barrier between them (cpu/team.h: with one thread, or one group, on the caller alone). */
static void run_rows(gemm_rows_fn *const *rows, const gemm_problem *p, int n_parts, int n_threads) {
    rows_work w = {rows, p, n_parts, 0};
    for (int j = 0; j < n_parts; j++) w.groups += (p[j].n + GEMM_ROW_GROUP - 1) / GEMM_ROW_GROUP;
    cpu_team_run(n_threads < w.groups ? n_threads : w.groups, rows_share, &w);
}

void cpu_gemm_group(cpu_gemm_isa isa, const cpu_gemm_part *parts, int n_parts, const float *x, int m, int k,
                    int n_threads) {
    if (n_parts < 1 || n_parts > CPU_GEMM_MAX_PARTS) gemm_die("a group of 1 to CPU_GEMM_MAX_PARTS products");
    if (m < 0 || k < 0 || n_threads < 1) gemm_die("m, n, k must be >= 0 and n_threads >= 1");
    if ((unsigned)isa >= CPU_GEMM_ISA_COUNT || !cpu_gemm_isa_available(isa))
        gemm_die("the requested instruction set is not available on this CPU (check cpu_gemm_isa_available)");
    gemm_problem p[CPU_GEMM_MAX_PARTS];
    gemm_rows_fn *rows[CPU_GEMM_MAX_PARTS];
    int any_bf16 = 0;
    for (int j = 0; j < n_parts; j++) {
        const cpu_gemm_part *q = &parts[j];
        if (q->wdtype != DTYPE_F32 && q->wdtype != DTYPE_BF16)
            gemm_die("W must be F32 or BF16 (the engine converts F16 weights to F32 at load)");
        if (q->n < 0) gemm_die("m, n, k must be >= 0 and n_threads >= 1");
        p[j] = (gemm_problem){.y = q->y, .W = q->W, .wdtype = q->wdtype, .x = x, .m = m, .n = q->n, .k = k};
        rows[j] = rows_kernel(isa, q->wdtype);
        any_bf16 |= q->wdtype == DTYPE_BF16;
    }
    if (m == 0) return;
    uint16_t *x_bf16 = NULL; /* the AVX512_BF16 kernel's rounded x: once for every part that reads it */
    if (isa == CPU_GEMM_AVX512_BF16 && any_bf16) {
        const int stride = k > 0 ? (k + GEMM_BF16_K_PAD - 1) / GEMM_BF16_K_PAD * GEMM_BF16_K_PAD : GEMM_BF16_K_PAD;
        x_bf16 = x_to_bf16(x, m, k, stride);
        for (int j = 0; j < n_parts; j++)
            if (parts[j].wdtype == DTYPE_BF16) p[j].x_bf16 = x_bf16, p[j].x_bf16_stride = stride;
    }
    run_rows(rows, p, n_parts, n_threads);
    free(x_bf16);
}

void cpu_gemm_with(cpu_gemm_isa isa, float *y, const void *W, dtype_t wdtype, const float *x, int m, int n, int k,
                   int n_threads) {
    const cpu_gemm_part part = {y, W, wdtype, n}; /* one product is a group of one: the same code path */
    cpu_gemm_group(isa, &part, 1, x, m, k, n_threads);
}

void cpu_gemm(float *y, const void *W, dtype_t wdtype, const float *x, int m, int n, int k, int n_threads) {
    cpu_gemm_with(cpu_gemm_default_isa(), y, W, wdtype, x, m, n, k, n_threads);
}
