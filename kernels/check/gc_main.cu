/* gc_main.cu — gpucheck, the kernel harness: validates every kernel version against its CPU twin on fresh random
 * inputs, times it, and prints one table and the Qwen3.8-27B estimate (options: usage below). On the emulator
 * (build/emu/gpucheck, kernels/emu/gpucheck_emu.cc) the same program runs every family on its small shapes
 * untimed, so that the scripts driving it on a GPU are tried without one (tests/parts/gpu-session-dry.sh). */
#include <string.h>
#include <time.h>

#include "gc.cuh"

/* "No CUDA device", apart from usage (2), CUDA errors (3) and crashes (a
 * signal), so a caller never reports a crash as a missing device. */
#define GC_EXIT_NO_DEVICE 4

static void usage(FILE *f) {
    fprintf(f,
            "usage: gpucheck [--only FAMILY[,FAMILY...]] [--validate-only] [--small] [--seed N] [--results FILE]\n"
            "       gpucheck --report FILE | --probe | --list\n"
            "Validates every CUDA kernel version against its CPU twin (fresh random inputs, outputs\n"
            "poisoned with NaN), times it with CUDA events (median of %d samples, rotating buffers),\n"
            "and prints one table and the Qwen3.8-27B estimate. --results appends each row to FILE\n"
            "(tab-separated) as it is measured, flushed, so a crash keeps the rows before it and\n"
            "separate runs can be reported together with --report. --small runs the edge-case\n"
            "shapes alone (what the emulator runs: for compute-sanitizer, which is slow).\n"
            "--probe prints the device's properties, or why there is no device.\n"
            "Exit status: 0 all validated, 1 a validation failed, 2 usage, 3 a CUDA error,\n"
            "4 no CUDA device (--probe too); killed by a signal: a crash.\n",
            GC_SAMPLES);
}

/* Prints the device count or the runtime's reason for having none. */
static int probe(int verbose) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        if (verbose)
            printf("no CUDA device: %s\n", e != cudaSuccess ? cudaGetErrorString(e) : "the runtime reports 0 devices");
        return 0;
    }
    if (verbose) printf("cuda devices: %d\n", n);
    return n;
}

/* What the kernels are sized by, read off device 0 (a session's record of the machine it ran on). */
static void print_properties(void) {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return;
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    printf("device 0: %s, compute capability %d.%d, %d SMs, %.1f GB, L2 %.1f MB (%.1f MB can persist)\n", p.name,
           p.major, p.minor, p.multiProcessorCount, p.totalGlobalMem / 1e9, p.l2CacheSize / 1e6,
           p.persistingL2CacheMaxSize / 1e6);
    printf("per SM: %d threads, %d registers, %zu KB shared; per block: %d threads, %d registers, %zu KB shared "
           "(%zu KB opted in)\n",
           p.maxThreadsPerMultiProcessor, p.regsPerMultiprocessor, p.sharedMemPerMultiprocessor / 1024,
           p.maxThreadsPerBlock, p.regsPerBlock, p.sharedMemPerBlock / 1024, p.sharedMemPerBlockOptin / 1024);
    printf("memory bus %d bits; runtime %d, driver %d\n", p.memoryBusWidth, runtime, driver);
}

static int in_list(const char *list, const char *name) {
    if (!list) return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        if (!comma) break;
        p = comma + 1;
    }
    return 0;
}

static int report(const char *path) {
    gc_results r;
    gc_results_init(&r);
    sp_error err;
    if (gc_results_read_file(&r, path, &err) != 0) {
        fprintf(stderr, "gpucheck: %s\n", err.msg);
        return 2;
    }
    gc_print_table(stdout, &r);
    gc_print_matvec_summary(stdout, &r);
    gc_print_estimate(stdout, &r, GC_CTX_SHORT);
    gc_print_estimate(stdout, &r, GC_CTX_LONG);
    int fails = 0;
    for (int i = 0; i < r.n; i++) fails += r.rows[i].status == GC_FAIL;
    gc_results_free(&r);
    return fails ? 1 : 0;
}

int gc_main(int argc, char **argv) {
    const char *only = NULL, *results = NULL;
    int validate_only = 0, small = 0, have_seed = 0;
    uint64_t seed = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--probe")) {
            if (probe(1) == 0) return GC_EXIT_NO_DEVICE;
            print_properties();
            return 0;
        } else if (!strcmp(argv[i], "--list")) {
            int n = 0;
            const gc_family *f = gc_families(&n);
            for (int j = 0; j < n; j++) printf("%-10s %s\n", f[j].name, f[j].what);
            return 0;
        } else if (!strcmp(argv[i], "--report") && i + 1 < argc) {
            return report(argv[++i]);
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--results") && i + 1 < argc) {
            results = argv[++i];
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 0);
            have_seed = 1;
        } else if (!strcmp(argv[i], "--validate-only")) {
            validate_only = 1;
        } else if (!strcmp(argv[i], "--small")) {
            small = 1;
        } else {
            fprintf(stderr, "gpucheck: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (probe(0) == 0) {
        probe(1);
        return GC_EXIT_NO_DEVICE;
    }
    int n_fam = 0;
    const gc_family *fams = gc_families(&n_fam);
    if (only)
        for (const char *p = only; *p;) { /* every name asked for must exist */
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            int known = 0;
            for (int j = 0; j < n_fam; j++) known |= strlen(fams[j].name) == len && !strncmp(p, fams[j].name, len);
            if (!known) {
                fprintf(stderr, "gpucheck: unknown family '%.*s' (see --list)\n", (int)len, p);
                return 2;
            }
            if (!comma) break;
            p = comma + 1;
        }
    if (!have_seed) seed = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);

    gc_results res;
    gc_results_init(&res);
    cudaDeviceProp prop;
    GC_CUDA(cudaGetDeviceProperties(&prop, 0));
    snprintf(res.device, sizeof res.device, "%.48s, %d SMs, %.0f MB L2, %.1f GB, cc %d.%d", prop.name,
             prop.multiProcessorCount, prop.l2CacheSize / 1e6, prop.totalGlobalMem / 1e9, prop.major, prop.minor);
    gc_ctx c;
    memset(&c, 0, sizeof c);
    c.validate_only = validate_only;
    c.small = small;
#ifdef KN_EMU
    c.emu = c.small = c.validate_only = 1; /* nothing is timed there, and the emulator takes small shapes only */
#endif
    c.seed = seed;
    c.l2_bytes = prop.l2CacheSize > 0 ? (size_t)prop.l2CacheSize : (size_t)50 << 20;
    c.res = &res;
    c.tsv_copy_gbs = c.tsv_read_gbs = NAN;
    if (results) {
        c.tsv = fopen(results, "a");
        if (!c.tsv) {
            fprintf(stderr, "gpucheck: %s: cannot open the results file to append to it\n", results);
            return 3;
        }
        gc_results_write_device(c.tsv, res.device);
        fflush(c.tsv);
    }
    printf("gpucheck: %s; seed %llu (replay with --seed %llu)\n", res.device, (unsigned long long)seed,
           (unsigned long long)seed);
    fflush(stdout);
    for (int j = 0; j < n_fam; j++) {
        if (!in_list(only, fams[j].name)) continue;
        if (validate_only && !strcmp(fams[j].name, "copy")) continue; /* the ceilings are timings only */
        printf("== %s: %s\n", fams[j].name, fams[j].what);
        fflush(stdout);
        fams[j].run(&c);
    }
    if (c.tsv && (fflush(c.tsv) != 0 || ferror(c.tsv) || fclose(c.tsv) != 0)) {
        fprintf(stderr, "gpucheck: %s: writing the results failed\n", results);
        return 3;
    }
    if (!only) { /* a whole run reports itself; partial runs are reported together with --report */
        gc_print_table(stdout, &res);
        if (!validate_only) {
            gc_print_matvec_summary(stdout, &res);
            gc_print_estimate(stdout, &res, GC_CTX_SHORT);
        }
    }
    printf("gpucheck: %d row(s), %d failed validation\n", res.n, c.n_fail);
    int status = c.n_fail ? 1 : 0;
    gc_results_free(&res);
    return status;
}

#ifndef KN_EMU
int main(int argc, char **argv) { return gc_main(argc, argv); }
#endif
