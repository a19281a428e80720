/* readbw.c — the machine's streaming read bandwidth, STREAM-style: the ceiling a batch-1 decoder is compared
 * with in `make bench-peers`, since decoding one token reads every weight once. Every thread sums its own slice
 * of one buffer far larger than the last-level cache; the median of the runs is reported per thread count. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 512
#define MAX_COUNTS 16
#define MAX_RUNS 101

typedef uint64_t u64x4 __attribute__((vector_size(32)));

typedef struct {
    const u64x4 *data;
    size_t n; /* vectors in this thread's slice */
    uint64_t sum;
    pthread_barrier_t *start, *stop;
    int runs;
} worker;

/* Four independent accumulators, so one add's latency never waits on the last. The Makefile builds this file
 * with -O3 -march=native so that the loads, not the adds, are the limit (see docs/methods.md). */
static uint64_t sum_slice(const u64x4 *p, size_t n) {
    u64x4 a = {0, 0, 0, 0}, b = a, c = a, d = a;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a += p[i];
        b += p[i + 1];
        c += p[i + 2];
        d += p[i + 3];
    }
    for (; i < n; i++) a += p[i];
    a += b + c + d;
    return a[0] + a[1] + a[2] + a[3];
}

static void *work(void *arg) {
    worker *w = arg;
    for (int r = 0; r < w->runs; r++) {
        pthread_barrier_wait(w->start);
        w->sum += sum_slice(w->data, w->n);
        pthread_barrier_wait(w->stop);
    }
    return NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The last-level cache in bytes (0 when the system does not say). */
static long long l3_bytes(void) {
    long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (v > 0) return v;
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    long long kb = 0;
    if (f) {
        if (fscanf(f, "%lldK", &kb) != 1) kb = 0;
        fclose(f);
    }
    return kb * 1024;
}

/* Runs `runs` timed passes with `threads` threads over buf; gbs[r] gets each run's GB/s: the buffer's bytes over
 * the time from the moment all threads start to the moment the last one ends. */
static int measure(const u64x4 *buf, size_t n, int threads, int runs, double *gbs, uint64_t *check) {
    pthread_t tid[MAX_THREADS];
    worker w[MAX_THREADS];
    pthread_barrier_t start, stop;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&stop, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; t++) {
        size_t lo = n * (size_t)t / (size_t)threads, hi = n * (size_t)(t + 1) / (size_t)threads;
        w[t] = (worker){buf + lo, hi - lo, 0, &start, &stop, runs + 1}; /* one untimed warm-up pass */
        if (pthread_create(&tid[t], NULL, work, &w[t])) {
            fprintf(stderr, "readbw: cannot start thread %d: %s\n", t + 1, strerror(errno));
            exit(1);
        }
    }
    for (int r = -1; r < runs; r++) {
        pthread_barrier_wait(&start);
        const double t0 = now_s();
        pthread_barrier_wait(&stop);
        const double dt = now_s() - t0;
        if (r >= 0) gbs[r] = (double)n * sizeof(u64x4) / dt / 1e9;
    }
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        *check += w[t].sum;
    }
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&stop);
    return 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: readbw [--mib N] [--runs R] [--threads N[,N...]] [--json]\n"
               "Streaming read bandwidth: each thread sums its slice of one buffer; the median GB/s\n"
               "(1 GB = 1e9 bytes) of R timed passes per thread count, after one untimed pass.\n"
               "  --mib N       buffer size in MiB (default: 8x the L3 cache, at least 1024)\n"
               "  --runs R      timed passes per thread count (default 9)\n"
               "  --threads L   thread counts, comma-separated (default: 1 and every online CPU)\n"
               "  --json        one JSON object instead of text\n");
}

static int parse_long(const char *flag, const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || (*end && *end != ',') || v < lo || v > hi) {
        fprintf(stderr, "readbw: %s expects integers in [%ld, %ld], got '%s'\n", flag, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

int main(int argc, char **argv) {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    const long long l3 = l3_bytes();
    long mib = l3 > 0 ? (long)(8 * l3 >> 20) : 1024, runs = 9, counts[MAX_COUNTS] = {1, cpus};
    int n_counts = cpus > 1 ? 2 : 1, json = 0;
    if (mib < 1024) mib = 1024;
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(f, "--json")) {
            json = 1;
            continue;
        }
        if (i + 1 >= argc || (strcmp(f, "--mib") && strcmp(f, "--runs") && strcmp(f, "--threads"))) {
            fprintf(stderr, "readbw: unexpected argument '%s'\n", f);
            usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(f, "--mib") && parse_long(f, v, 1, 1L << 30, &mib)) return 2;
        if (!strcmp(f, "--runs") && parse_long(f, v, 1, MAX_RUNS, &runs)) return 2;
        if (!strcmp(f, "--threads")) {
            n_counts = 0;
            for (const char *p = v; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
                if (n_counts == MAX_COUNTS || parse_long(f, p, 1, MAX_THREADS, &counts[n_counts++])) return 2;
            }
        }
    }
    const size_t bytes = (size_t)mib << 20, n = bytes / sizeof(u64x4);
    u64x4 *buf = aligned_alloc(64, n * sizeof(u64x4));
    if (!buf) {
        fprintf(stderr, "readbw: cannot allocate %ld MiB\n", mib);
        return 1;
    }
    /* nonzero, varied contents, every page touched before the first timed pass */
    for (size_t i = 0; i < n; i++) buf[i] = (u64x4){i, i ^ 0x9e3779b97f4a7c15u, i * 3, ~i};
    uint64_t check = 0;
    if (json)
        printf("{\"buffer_bytes\": %zu, \"l3_bytes\": %lld, \"online_cpus\": %ld, \"runs\": %ld, \"results\": [", bytes,
               l3, cpus, runs);
    else
        printf("read bandwidth: buffer %ld MiB (L3 %lld MiB), median of %ld passes\n", mib, l3 >> 20, runs);
    for (int c = 0; c < n_counts; c++) {
        double gbs[MAX_RUNS];
        measure(buf, n, (int)counts[c], (int)runs, gbs, &check);
        qsort(gbs, (size_t)runs, sizeof gbs[0], cmp_double);
        const double med = runs % 2 ? gbs[runs / 2] : 0.5 * (gbs[runs / 2 - 1] + gbs[runs / 2]);
        if (json) {
            printf("%s{\"threads\": %ld, \"median_gbs\": %.3f, \"min_gbs\": %.3f, \"max_gbs\": %.3f}", c ? ", " : "",
                   counts[c], med, gbs[0], gbs[runs - 1]);
        } else {
            printf("  %3ld thread%s %8.2f GB/s (min %.2f, max %.2f)\n", counts[c], counts[c] > 1 ? "s" : " ", med,
                   gbs[0], gbs[runs - 1]);
        }
    }
    if (json) printf("], \"checksum\": %llu}\n", (unsigned long long)check);
    free(buf);
    return 0;
}
