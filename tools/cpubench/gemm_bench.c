/* gemm_bench.c — `make gemm-bench`: times cpu_gemm (optimized/cpu/gemm.h) against this machine's streaming read
 * bandwidth and prints one table; it asserts nothing. W (1 GiB by default) is larger than the L3, so it comes
 * from DRAM. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu/gemm.h"
#include "dtype.h"

#define K_COLUMNS 8192 /* elements per W row by default: a 27B model's hidden size is 5120, its MLP's 17408 */
#define STREAM_UNIT 64 /* floats: 8 streams × 8 */

typedef struct {
    size_t w_mib, stream_mib;
    int runs, threads_all, k; /* k: elements per W row */
    const char *kernel;       /* one kernel's name, or NULL for every available one */
} bench_options;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void *xmalloc(size_t bytes, const char *what) {
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "gemm-bench: cannot allocate %zu MiB for %s (try smaller --w-mib / --stream-mib)\n",
                bytes >> 20, what);
        exit(1);
    }
    return p;
}

/* ---- the read bandwidth -------------------------------------------------------------------------------------- */

typedef float lanes4 __attribute__((vector_size(16))); /* one SSE register: every x86-64 has it */
typedef float lanes4_unaligned __attribute__((vector_size(16), aligned(4), may_alias));

/* Σ buf[0 .. count) read as 8 concurrent sequential streams, one per eighth of the range, as the kernels read
 * several W rows at once (a single stream leaves the hardware prefetchers short of requests: see
 * docs/methods.md); count a multiple of STREAM_UNIT. */
static float sum_chunk(const float *buf, size_t count) {
    const size_t seg = count / 8;
    lanes4 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};
    for (size_t e = 0; e < seg; e += 8) {
#define AT(s) ((const lanes4_unaligned *)(buf + (s)*seg + e))
        a0 += AT(0)[0] + AT(0)[1], a1 += AT(1)[0] + AT(1)[1], a2 += AT(2)[0] + AT(2)[1], a3 += AT(3)[0] + AT(3)[1];
        a4 += AT(4)[0] + AT(4)[1], a5 += AT(5)[0] + AT(5)[1], a6 += AT(6)[0] + AT(6)[1], a7 += AT(7)[0] + AT(7)[1];
#undef AT
    }
    lanes4 s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
    return (s[0] + s[1]) + (s[2] + s[3]);
}

static volatile float sink;

/* One read of the whole buffer, split into contiguous chunks across threads; seconds. */
static double stream_once(const float *buf, size_t count, int threads) {
    double t0 = now_s();
    float total = 0;
    if (threads == 1) {
        total = sum_chunk(buf, count);
    } else {
        size_t chunks = count / STREAM_UNIT;
#pragma omp parallel for schedule(static, 1) num_threads(threads) reduction(+ : total)
        for (int t = 0; t < threads; t++) {
            size_t first = chunks * (size_t)t / (size_t)threads, last = chunks * (size_t)(t + 1) / (size_t)threads;
            total += sum_chunk(buf + first * STREAM_UNIT, (last - first) * STREAM_UNIT);
        }
    }
    sink = total;
    return now_s() - t0;
}

typedef struct {
    float *buf; /* [count], every page touched */
    size_t count, bytes;
} stream_buffer;

static stream_buffer stream_make(const bench_options *o) {
    stream_buffer sb = {.bytes = o->stream_mib << 20};
    sb.count = sb.bytes / sizeof(float);
    sb.buf = xmalloc(sb.bytes, "the stream buffer");
    for (size_t e = 0; e < sb.count; e++) sb.buf[e] = (float)(e & 1023);
    return sb;
}

static double stream_gbps(const stream_buffer *sb, int threads, int runs) {
    double t[64];
    stream_once(sb->buf, sb->count, threads);
    for (int r = 0; r < runs; r++) t[r] = stream_once(sb->buf, sb->count, threads);
    return (double)sb->bytes / median(t, runs) * 1e-9;
}

/* ---- the products -------------------------------------------------------------------------------------------- */

typedef struct {
    unsigned char *alloc, *W; /* [n, k] of dtype, 8 bytes past a 64-byte boundary, as in a safetensors mmap */
    float *x, *y;             /* [16, k], [16, n] */
    dtype_t dtype;
    int n, k;
    size_t w_bytes;
} bench_problem;

static bench_problem problem_make(const bench_options *o, dtype_t dtype) {
    bench_problem b = {.dtype = dtype, .k = o->k};
    b.n = (int)((o->w_mib << 20) / ((size_t)b.k * dtype_size(dtype)));
    b.w_bytes = (size_t)b.n * b.k * dtype_size(dtype);
    b.alloc = xmalloc(b.w_bytes + 64 + 8, "W");
    b.W = b.alloc + (64 - (uintptr_t)b.alloc % 64) % 64 + 8;
    uint32_t h = 0x9e3779b9u;
    size_t count = (size_t)b.n * b.k;
    for (size_t e = 0; e < count; e++) {
        h = h * 1664525u + 1013904223u;
        float w = (float)(int32_t)h * 0x1p-35f; /* |w| < 1/16 */
        if (dtype == DTYPE_BF16) {
            uint16_t hw = f32_to_bf16(w);
            memcpy(b.W + 2 * e, &hw, 2);
        } else {
            memcpy(b.W + 4 * e, &w, 4);
        }
    }
    b.x = xmalloc((size_t)16 * b.k * sizeof(float), "x");
    b.y = xmalloc((size_t)16 * b.n * sizeof(float), "y");
    for (size_t e = 0; e < (size_t)16 * b.k; e++) b.x[e] = (float)((e * 7919) % 2001) / 1000.0f - 1.0f;
    return b;
}

static void problem_free(bench_problem *b) { free(b->alloc), free(b->x), free(b->y); }

/* Median seconds of one cpu_gemm call (after one untimed call) and, into *read_gbps, the read bandwidth measured
 * between its samples: on a shared machine the other work comes and goes, so each row has its own baseline. */
static double time_gemm(const bench_problem *b, const stream_buffer *sb, cpu_gemm_isa isa, int m, int threads, int runs,
                        double *read_gbps) {
    double t[64], t_read[64];
    cpu_gemm_with(isa, b->y, b->W, b->dtype, b->x, m, b->n, b->k, threads);
    for (int r = 0; r < runs; r++) {
        t_read[r] = stream_once(sb->buf, sb->count, threads);
        double t0 = now_s();
        cpu_gemm_with(isa, b->y, b->W, b->dtype, b->x, m, b->n, b->k, threads);
        t[r] = now_s() - t0;
    }
    *read_gbps = (double)sb->bytes / median(t_read, runs) * 1e-9;
    return median(t, runs);
}

static void bench_dtype(const bench_options *o, const stream_buffer *sb, dtype_t dtype, const int thread_counts[2],
                        int n_counts) {
    static const int m_values[] = {1, 4, 16};
    bench_problem b = problem_make(o, dtype);
    for (int isa = 0; isa < CPU_GEMM_ISA_COUNT; isa++) {
        if (!cpu_gemm_isa_available((cpu_gemm_isa)isa)) continue;
        if (isa == CPU_GEMM_AVX512_BF16 && dtype != DTYPE_BF16) continue; /* f32 W runs the avx512 kernel */
        if (o->kernel && strcmp(o->kernel, cpu_gemm_isa_name((cpu_gemm_isa)isa))) continue;
        for (int c = 0; c < n_counts; c++)
            for (int a = 0; a < 3; a++) {
                double read_gbps,
                    s = time_gemm(&b, sb, (cpu_gemm_isa)isa, m_values[a], thread_counts[c], o->runs, &read_gbps);
                double gbps = (double)b.w_bytes / s * 1e-9;
                printf("| %-4s | %-11s | %7d | %2d | %10.0f | %6.2f | %6.2f | %5.1f %% | %7.1f |\n", dtype_name(dtype),
                       cpu_gemm_isa_name((cpu_gemm_isa)isa), thread_counts[c], m_values[a], s * 1e6, gbps, read_gbps,
                       100.0 * gbps / read_gbps, 2.0 * m_values[a] * b.n * (double)b.k / s * 1e-9);
                fflush(stdout);
            }
    }
    problem_free(&b);
}

/* ---- main ---------------------------------------------------------------------------------------------------- */

static void usage(void) {
    printf("usage: gemm-bench [--w-mib N] [--k N] [--stream-mib N] [--runs N] [--threads N] [--kernel NAME]\n"
           "Times cpu_gemm at m = 1, 4, 16 for every instruction set this CPU has, on bf16 and f32 weights of\n"
           "N MiB (default 1024: over 3x the L3 of the machine in docs/performance.md), at 1 thread and at\n"
           "--threads (default: every online core), against the read bandwidth of a sum over a buffer of\n"
           "--stream-mib MiB (default 1024). --runs samples per row (default 5, at most 63): each row is their\n"
           "median. --kernel portable|avx2|avx512|avx512-bf16: that one kernel only. --k N: elements per W\n"
           "row (default 8192; 16 to 65536): short rows, as in a small model, are what prefetching is for.\n");
}

static int parse_options(int argc, char **argv, bench_options *o) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (bench_options){
        .w_mib = 1024, .k = K_COLUMNS, .stream_mib = 1024, .runs = 5, .threads_all = cores > 0 ? (int)cores : 1};
    for (int i = 1; i < argc; i++) {
        long v = i + 1 < argc ? strtol(argv[i + 1], NULL, 10) : 0;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            exit(0);
        } else if (!strcmp(argv[i], "--w-mib") && v >= 1 && v <= 65536) {
            o->w_mib = (size_t)v, i++;
        } else if (!strcmp(argv[i], "--k") && v >= 16 && v <= 65536) {
            o->k = (int)v, i++;
        } else if (!strcmp(argv[i], "--stream-mib") && v >= 1 && v <= 65536) {
            o->stream_mib = (size_t)v, i++;
        } else if (!strcmp(argv[i], "--runs") && v >= 1 && v <= 63) {
            o->runs = (int)v, i++;
        } else if (!strcmp(argv[i], "--threads") && v >= 1 && v <= 1024) {
            o->threads_all = (int)v, i++;
        } else if (!strcmp(argv[i], "--kernel") && i + 1 < argc) {
            o->kernel = argv[++i];
        } else {
            fprintf(stderr, "gemm-bench: bad argument '%s'\n", argv[i]);
            usage();
            return -1;
        }
    }
    int known = o->kernel == NULL;
    for (int isa = 0; isa < CPU_GEMM_ISA_COUNT && !known; isa++)
        known = !strcmp(o->kernel, cpu_gemm_isa_name((cpu_gemm_isa)isa));
    if (!known) {
        fprintf(stderr, "gemm-bench: no kernel named '%s'\n", o->kernel);
        return -1;
    }
    return 0;
}

static void print_machine(void) {
    char line[256], model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(model, sizeof model, "%s", strchr(line, ':') + 2);
            model[strcspn(model, "\n")] = 0;
            break;
        }
    if (f) fclose(f);
    time_t t = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M", localtime(&t));
    printf("gemm-bench %s — %s, %ld online cores; kernels:", date, model, sysconf(_SC_NPROCESSORS_ONLN));
    for (int isa = 0; isa < CPU_GEMM_ISA_COUNT; isa++)
        if (cpu_gemm_isa_available((cpu_gemm_isa)isa)) printf(" %s", cpu_gemm_isa_name((cpu_gemm_isa)isa));
    printf(" (default %s)\n", cpu_gemm_isa_name(cpu_gemm_default_isa()));
    double load[3];
    if (getloadavg(load, 3) == 3) /* other work on the machine shares its cores and memory bandwidth */
        printf("load average at the start: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
}

int main(int argc, char **argv) {
    bench_options o;
    if (parse_options(argc, argv, &o)) return 2;
    print_machine();
    int thread_counts[2] = {1, o.threads_all}, n_counts = o.threads_all > 1 ? 2 : 1;
    stream_buffer sb = stream_make(&o);
    for (int c = 0; c < n_counts; c++)
        printf("read bandwidth, %d thread%s: %.2f GB/s (sum over %zu MiB, median of %d)\n", thread_counts[c],
               thread_counts[c] > 1 ? "s" : "", stream_gbps(&sb, thread_counts[c], o.runs), o.stream_mib, o.runs);
    printf("W: %zu MiB, k = %d, at a 64-byte boundary + 8. \"read\": the same sum, timed between the row's samples\n"
           "at its thread count; %% = W GB/s of that.\n\n",
           o.w_mib, o.k);
    printf("| W    | kernel      | threads |  m |  median µs | W GB/s | read GB/s | %% read | GFLOP/s |\n");
    printf("|------|-------------|---------|----|------------|--------|-----------|---------|---------|\n");
    bench_dtype(&o, &sb, DTYPE_BF16, thread_counts, n_counts);
    bench_dtype(&o, &sb, DTYPE_F32, thread_counts, n_counts);
    free(sb.buf);
    return 0;
}
