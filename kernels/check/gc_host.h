/* gc_host.h — the host-side logic of the kernel harness (build/cuda/gpucheck):
 * error norms, timing statistics, buffer rotation, the result rows and their
 * file, the one table, the Qwen3.8-27B shapes and the decode / verify-pass
 * estimate. Plain C without CUDA, so it is unit-tested where no GPU exists. */
#ifndef SPECULA_KN_BENCH_H
#define SPECULA_KN_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "error.h"

/* Qwen3.8-27B (models/qwen3.8-27b/config.json; a unit test checks these). */
#define GC27_D 5120                                        /* [D] hidden */
#define GC27_F 17408                                       /* [F] SwiGLU width */
#define GC27_V 248320                                      /* [V] vocabulary */
#define GC27_H 24                                          /* [H] query heads */
#define GC27_HKV 4                                         /* [Hkv] */
#define GC27_DH 256                                        /* [Dh] */
#define GC27_R 64                                          /* [R] rotary dims: 25 % of Dh */
#define GC27_HK 16                                         /* [Hk] DeltaNet key heads */
#define GC27_HV 48                                         /* [Hv] DeltaNet value heads */
#define GC27_DK 128                                        /* [Dk] */
#define GC27_DV 128                                        /* [Dv] */
#define GC27_K 4                                           /* [K] conv width */
#define GC27_C (2 * GC27_HK * GC27_DK + GC27_HV * GC27_DV) /* [C] conv channels, 10240 */
#define GC27_N_LINEAR 48
#define GC27_N_FULL 16

typedef enum { GC_OK = 0, GC_FAIL = 1, GC_SKIP = 2 } gc_status;

/* One line of the table: one op, one version, one shape. */
typedef struct {
    char op[24];      /* "matvec", "rmsnorm", … */
    char version[24]; /* "v4", "b2-xbf16", … */
    char shape[48];   /* the shape's name, e.g. "q_proj 12288x5120" */
    int m;            /* positions in the call (1 = decode, k+1 = verify) */
    double err;       /* max over the validation runs of ‖Δ‖/‖ref‖ (NAN: none ran) */
    double bound;     /* the bound err was held to */
    int status;       /* gc_status */
    double us;        /* median µs per call (NAN: not timed) */
    double bytes;     /* bytes the op must read + write per call */
    double flops;     /* floating-point operations per call (0: not a compute op) */
    char note[96];    /* why it failed or was skipped */
} gc_row;

typedef struct {
    gc_row *rows;
    int n, cap;
    double copy_gbs; /* device-to-device copy, bytes read + written per second / 1e9 (NAN: not measured) */
    double read_gbs; /* read-only streaming, bytes read per second / 1e9 (NAN: not measured) */
    char device[96];
} gc_results;

void gc_results_init(gc_results *r);
void gc_results_free(gc_results *r);
gc_row *gc_results_add(gc_results *r);

/* Appends rows (and the copy bandwidth and device, when set) to a
 * tab-separated file; reads such a file back (appending to r). Return 0, or
 * -1 with the file, the line and what was wrong in err. */
int gc_results_append_file(const gc_results *r, const char *path, sp_error *err);
int gc_results_read_file(gc_results *r, const char *path, sp_error *err);
/* The file's lines one at a time, for a run that appends each row as it is
 * measured (and flushes), so a crash keeps the rows before it: the reader
 * ignores a last line cut short (no newline). */
void gc_results_write_device(FILE *f, const char *device);
void gc_results_write_ceilings(FILE *f, double copy_gbs, double read_gbs); /* NAN: not written */
void gc_results_write_row(FILE *f, const gc_row *row);

/* ‖out − ref‖₂ / ‖ref‖₂ in double. A NaN or infinity in out, or a nonzero
 * difference against a zero reference, gives INFINITY. */
double gc_rel_error(const float *out, const float *ref, size_t n);
/* Number of NaN entries (poisoned outputs never written). */
size_t gc_count_nan(const float *x, size_t n);
size_t gc_count_nan_bf16(const uint16_t *x, size_t n);

/* Median of v[0..n) (sorts v in place); NAN for n = 0. */
double gc_median(double *v, int n);

/* How many copies of a working set of `bytes` to rotate through so that the
 * data touched between two uses of one copy is at least 4× the L2: between
 * 1 and max_sets (gpucheck passes 65536, so only a working set under 4 KB
 * falls short). */
int gc_rotation_sets(size_t bytes, size_t l2_bytes, int max_sets);

/* Which output rows to validate: all of them when n_out ≤ max_rows, else
 * the first, the last and max_rows − 2 distinct others drawn from seed,
 * ascending. rows must hold max_rows entries; returns the count. */
int gc_pick_rows(int n_out, int max_rows, uint64_t seed, int *rows);

/* Calls per timing sample so one sample lasts about target_us given one
 * call's first measured time: between 1 and 1000. */
int gc_reps_for(double first_us, double target_us);

/* The row's derived columns. */
double gc_row_gbs(const gc_row *row); /* NAN when not timed */
double gc_row_pct_copy(const gc_row *row, double copy_gbs);
double gc_row_tflops(const gc_row *row);

/* Prints the one table: op, version, shape, m, max rel err (vs bound),
 * median µs, GB/s, % of copy bandwidth, TFLOP/s, status. */
void gc_print_table(FILE *f, const gc_results *r);
/* One row as it appears in the table (no newline). */
void gc_format_row(char *buf, size_t size, const gc_row *row, double copy_gbs);

/* Rows of what the engine runs (kn_matvec through its dispatch table) carry
 * this prefix before the dispatched version's name: "engine:v4". */
#define GC_ENGINE_PREFIX "engine:"

/* Smallest median µs among the validated (GC_OK), timed rows of (op, shape, m);
 * NAN when there is none. The engine's rows (GC_ENGINE_PREFIX) count too:
 * they are one of the versions, run through the dispatch. */
double gc_best_us(const gc_results *r, const char *op, const char *shape, int m);

/* The validated, timed row of (op, shape, m) with the smallest time, among
 * versions whose name starts with `prefix` (NULL: any) and not with `skip`
 * (NULL: none); NULL when there is none. The engine's rows are left out
 * unless `prefix` asks for them. */
const gc_row *gc_best_row(const gc_results *r, const char *op, const char *shape, int m, const char *prefix,
                          const char *skip);

/* The engine's row of (op, shape, m): the validated, timed row whose version
 * starts with GC_ENGINE_PREFIX (what kn_matvec dispatched); NULL: none. */
const gc_row *gc_engine_row(const gc_results *r, const char *op, const char *shape, int m);

/* The time the estimate uses for (op, shape, m): the engine's row when there
 * is one (what the engine would run), else the fastest validated version. */
double gc_plan_us(const gc_results *r, const char *op, const char *shape, int m);

/* Per 27B matvec shape: the version the engine dispatches at m = 1 and its
 * share of the copy bandwidth, at m = 4 and its time over the m = 1 time;
 * the fastest validated versions beside them; cuBLAS's m = 1 and m = 4
 * times. */
void gc_print_matvec_summary(FILE *f, const gc_results *r);

/* ---- the shapes the harness runs ------------------------------------------ */

typedef struct {
    const char *name; /* e.g. "q_proj 12288x5120" */
    int n_out, n_in;
    int real; /* a Qwen3.8-27B shape (1) or an edge-case shape (0) */
} gc_matvec_shape;

/* The 27B linear layers, then odd shapes (sizes not multiples of the tile). */
const gc_matvec_shape *gc_matvec_shapes(int *count);

/* Names shared by the checks (which record rows under them) and the
 * estimate (which looks them up). */
#define GC_SHAPE_HIDDEN "hidden 5120"
#define GC_SHAPE_QK_NORM_ROPE "24q+4kv heads x256 R=64"
#define GC_SHAPE_GATED_NORM "48 heads x128"
#define GC_SHAPE_CONV "C=10240 K=4"
#define GC_SHAPE_DELTA "48 heads 128x128"
#define GC_SHAPE_SWIGLU "F=17408"
#define GC_SHAPE_PROBS "V=248320 T=0.7 k=20 p=0.95"
#define GC_SHAPE_SAMPLE "V=248320"
#define GC_SHAPE_ACCEPT "k=3 V=248320"
/* attention: "ctx N", N one of these */
#define GC_CTX_SHORT 4096
#define GC_CTX_LONG 32768

/* ---- the Qwen3.8-27B estimate -------------------------------------------- */

typedef struct {
    const char *op, *shape;
    int m;     /* positions of the call */
    int count; /* calls per step */
    const char *what;
} gc_plan_item;

/* The calls of one 27B step over m positions (1: decode; k+1: verify pass
 * of a chain) at context length ctx: per DeltaNet layer × 48, per attention
 * layer × 16, then the final norm, lm_head and the sampling ops. With
 * mtp = 1 the list is instead one MTP draft step (fc, one attention decoder
 * layer, lm_head, sampling). Returns the number of items (≤ max). */
int gc_plan_27b(gc_plan_item *items, int max, int m, int ctx, int mtp);

typedef struct {
    double us;     /* Σ count × best µs over the measured items */
    int n_missing; /* items with no validated timing */
    double bytes;  /* Σ count × bytes of the rows used */
} gc_estimate;

gc_estimate gc_estimate_plan(const gc_results *r, const gc_plan_item *items, int n);

/* E(α, k) = (1 − α^{k+1}) / (1 − α): expected tokens per verify pass. */
double gc_expected_tokens(double alpha, int k);

/* Prints the estimate section: decode step, verify pass of k+1 = 4, MTP
 * draft step, and the tokens/s they imply, itemised. */
void gc_print_estimate(FILE *f, const gc_results *r, int ctx);

#ifdef __cplusplus
}
#endif

#endif
