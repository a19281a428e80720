/* gc.cuh — the device-side toolkit of the kernel harness (gpucheck): checked memory calls, random fills, poisoning,
 * timing with CUDA events, and result rows. Under -DKN_EMU it compiles against the CPU emulator, where memory is
 * host memory and nothing is timed. */
#ifndef SPECULA_GC_CUH
#define SPECULA_GC_CUH

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gc_host.h"
#include "kn_common.cuh"
#include "kn_matvec.h"

typedef struct {
    int emu;           /* running on the CPU emulator: small shapes, no timing */
    int small;         /* the edge-case shapes only (the emulator; --small, for compute-sanitizer's slow runs) */
    int validate_only; /* no timing */
    uint64_t seed;     /* fresh per run unless given; printed for replay */
    size_t l2_bytes;
    gc_results *res;
    int n_fail;
    FILE *tsv;                         /* --results: each row appended and flushed as it is measured (or NULL) */
    double tsv_copy_gbs, tsv_read_gbs; /* the ceilings last written to tsv */
} gc_ctx;

/* Every CUDA call is checked with file and line. An error that poisons the context ends the process, so the
 * gpu-check script runs each family in a process of its own. */
#define GC_CUDA(call) gc_cuda_check((call), #call, __FILE__, __LINE__)
void gc_cuda_check(cudaError_t e, const char *what, const char *file, int line);

void *gc_dmalloc(size_t bytes);
void gc_dfree(void *p);
void gc_h2d(void *dst, const void *src, size_t bytes);
void gc_d2h(void *dst, const void *src, size_t bytes);
void gc_d2d(void *dst, const void *src, size_t bytes);
/* 0xff bytes: NaN as fp32 and as bf16, so unwritten outputs show. */
void gc_poison(void *p, size_t bytes);
/* Waits for the device; a failure here is a kernel fault: reported, fatal. */
void gc_sync(const char *after);
void *gc_hmalloc(size_t bytes); /* host, zeroed, never NULL */

/* Rotation of a timed op's inputs: n_sets copies of its buffers sizes[0..n_bufs),
 * laid end to end in one allocation (each buffer 256-byte aligned), enough
 * copies that the bytes read between two uses of one copy are at least 4×
 * the L2 (gc_rotation_sets, up to GC_ROT_MAX_SETS): a call timed on copy
 * it % n_sets reads its inputs from HBM, not from the L2, however small the
 * op. One copy on the emulator. */
#define GC_ROT_MAX_BUFS 8
#define GC_ROT_MAX_SETS 65536
typedef struct {
    char *base;
    size_t off[GC_ROT_MAX_BUFS], set_bytes;
    int n_bufs, n_sets;
    char *own[GC_ROT_MAX_BUFS]; /* emulator: each buffer its own exact-size allocation (ASan sees overruns) */
} gc_rot;
gc_rot gc_rot_make(const gc_ctx *c, const size_t *sizes, int n_bufs);
void *gc_rot_buf(const gc_rot *r, int set, int buf);
void gc_rot_free(gc_rot *r);

/* Uniform values in [lo, hi) from a hash of (seed, stream, index). */
void gc_fill_f32(const gc_ctx *c, float *d, size_t n, float lo, float hi, uint64_t stream);
void gc_fill_bf16(const gc_ctx *c, uint16_t *d, size_t n, float lo, float hi, uint64_t stream);

/* Downloads dev[n], checks that every entry was written (no NaN) and
 * returns ‖dev − ref‖/‖ref‖ (INFINITY with a note when entries are NaN). */
double gc_compare_f32(const float *dev, const float *ref, size_t n, char *note, size_t note_size);

/* Records one row, prints it and appends it to c->tsv at once (the log
 * shows progress; a crash later keeps the row). Counts a GC_FAIL in
 * c->n_fail. */
gc_row *gc_record(gc_ctx *c, const char *op, const char *version, const char *shape, int m, double err, double bound,
                  double us, double bytes, double flops, const char *note);
/* Status from an error and its bound: FAIL when err > bound or not finite. */
int gc_status_for(double err, double bound);

#define GC_SAMPLES 11      /* timing samples per row; the median is reported */
#define GC_SAMPLE_US 400.0 /* each sample repeats the call for about this long */

/* Median µs per call of launch(i) (i counts calls, for buffer rotation),
 * after a warm-up; NAN when not timing (emulator, --validate-only) or when
 * a launch fails. */
template <class F> double gc_time_us(const gc_ctx *c, F launch) {
#ifdef KN_EMU
    (void)c, (void)launch;
    return NAN;
#else
    if (c->validate_only) return NAN;
    int it = 0;
    for (int i = 0; i < 3; i++)
        if (launch(it++) != cudaSuccess) return NAN;
    gc_sync("warm-up launches");
    cudaEvent_t a, b;
    GC_CUDA(cudaEventCreate(&a));
    GC_CUDA(cudaEventCreate(&b));
    float ms = 0.0f;
    GC_CUDA(cudaEventRecord(a));
    cudaError_t e = launch(it++);
    GC_CUDA(cudaEventRecord(b));
    GC_CUDA(cudaEventSynchronize(b));
    GC_CUDA(cudaEventElapsedTime(&ms, a, b));
    int reps = gc_reps_for(ms * 1e3, GC_SAMPLE_US);
    double samples[GC_SAMPLES];
    for (int s = 0; s < GC_SAMPLES && e == cudaSuccess; s++) {
        GC_CUDA(cudaEventRecord(a));
        for (int r = 0; r < reps && e == cudaSuccess; r++) e = launch(it++);
        GC_CUDA(cudaEventRecord(b));
        GC_CUDA(cudaEventSynchronize(b));
        GC_CUDA(cudaEventElapsedTime(&ms, a, b));
        samples[s] = ms * 1e3 / reps;
    }
    GC_CUDA(cudaEventDestroy(a));
    GC_CUDA(cudaEventDestroy(b));
    if (e != cudaSuccess) return NAN;
    return gc_median(samples, GC_SAMPLES);
#endif
}

/* gpucheck's baseline for the matvec family, beside kn_matvec_versions: cuBLAS's GEMM (NULL when cuBLAS is not
 * compiled in, as on the emulator). Linked into gpucheck alone, so the engine never needs libcublas. */
const kn_matvec_version *gc_matvec_baseline(void);

/* Families: each validates and times one op family's versions. */
void gc_family_copy(gc_ctx *c); /* copy and read-only bandwidth: the ceilings */
void gc_family_matvec(gc_ctx *c);
void gc_family_norm(gc_ctx *c);
void gc_family_rope_kv(gc_ctx *c);
void gc_family_attention(gc_ctx *c);
void gc_family_kv_quant(gc_ctx *c); /* the q8 / q4 KV cache's write and attention (kn_kv_quant.h) */
void gc_family_deltanet(gc_ctx *c);
void gc_family_sample(gc_ctx *c);
void gc_family_graph(gc_ctx *c); /* stream capture and graphs: the rules the emulator shares with the device */

typedef struct {
    const char *name;
    void (*run)(gc_ctx *c);
    const char *what;
} gc_family;

const gc_family *gc_families(int *count);

/* gpucheck's command line (gc_main.cu): main's on a GPU, build/emu/gpucheck's on the emulator. */
int gc_main(int argc, char **argv);

/* Entry for the unit tests (emulator build): runs one family on its small
 * shapes, its inputs and its threads' order (emu.h, EMU_RULE_ORDER) drawn
 * from seed, on a device of sm_count multiprocessors (0: the emulator's
 * default; set before the process's first launch); returns the number of
 * failed rows (−1: unknown family) and writes the seed and the failed rows
 * into msg. */
extern "C" int gc_emu_run(const char *family, uint64_t seed, int sm_count, int *n_rows, char *msg, size_t msg_size);

#endif
