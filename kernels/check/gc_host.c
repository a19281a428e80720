/* gc_host.c — host-side logic of the kernel harness (gc_host.h): norms,
 * statistics, the result file and table, the 27B shapes and estimate. */
#include "gc_host.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"

void gc_results_init(gc_results *r) {
    memset(r, 0, sizeof *r);
    r->copy_gbs = NAN;
    r->read_gbs = NAN;
}

void gc_results_free(gc_results *r) {
    free(r->rows);
    gc_results_init(r);
}

gc_row *gc_results_add(gc_results *r) {
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        gc_row *rows = realloc(r->rows, (size_t)cap * sizeof *rows);
        if (!rows) {
            fprintf(stderr, "gpucheck: out of memory for result rows\n");
            exit(2);
        }
        r->rows = rows;
        r->cap = cap;
    }
    gc_row *row = &r->rows[r->n++];
    memset(row, 0, sizeof *row);
    row->err = row->bound = row->us = NAN;
    return row;
}

/* Tabs and newlines would break the file's columns. */
static void clean_field(char *s) {
    for (; *s; s++)
        if (*s == '\t' || *s == '\n' || *s == '\r') *s = ' ';
}

/* Appended whole or not at all: the old contents and the new rows go to a
 * temporary renamed over the file (base/atomic_file.h), so an interrupted
 * run never leaves half a row for the report to misread. */
int gc_results_append_file(const gc_results *r, const char *path, sp_error *err) {
    atomic_file a;
    if (atomic_open(&a, path, err)) return -1;
    FILE *old = fopen(path, "rb");
    if (old) {
        char buf[65536];
        for (size_t n; (n = fread(buf, 1, sizeof buf, old)) > 0;) fwrite(buf, 1, n, a.f);
        const int bad = ferror(old);
        fclose(old);
        if (bad) {
            atomic_abort(&a);
            return sp_fail(err, "%s: cannot read the results file to append to it", path);
        }
    }
    FILE *f = a.f; /* a failed write sets ferror, which the commit checks */
    if (r->device[0]) gc_results_write_device(f, r->device);
    gc_results_write_ceilings(f, r->copy_gbs, r->read_gbs);
    for (int i = 0; i < r->n; i++) gc_results_write_row(f, &r->rows[i]);
    return atomic_commit(&a, err);
}

void gc_results_write_device(FILE *f, const char *device) {
    char d[96];
    snprintf(d, sizeof d, "%s", device);
    clean_field(d);
    fprintf(f, "device\t%s\n", d);
}

void gc_results_write_ceilings(FILE *f, double copy_gbs, double read_gbs) {
    if (!isnan(copy_gbs)) fprintf(f, "copy\t%.6g\n", copy_gbs);
    if (!isnan(read_gbs)) fprintf(f, "read\t%.6g\n", read_gbs);
}

void gc_results_write_row(FILE *f, const gc_row *row) {
    gc_row w = *row;
    clean_field(w.op), clean_field(w.version), clean_field(w.shape), clean_field(w.note);
    fprintf(f, "row\t%s\t%s\t%s\t%d\t%.6g\t%.6g\t%d\t%.6g\t%.6g\t%.6g\t%s\n", w.op, w.version, w.shape, w.m, w.err,
            w.bound, w.status, w.us, w.bytes, w.flops, w.note);
}

/* Splits line at tabs in place: up to max fields. */
static int split_tabs(char *line, char **fields, int max) {
    int n = 0;
    char *p = line;
    while (n < max) {
        fields[n++] = p;
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = '\0';
        p = tab + 1;
    }
    return n;
}

static void copy_field(char *dst, size_t size, const char *src) { snprintf(dst, size, "%s", src); }

int gc_results_read_file(gc_results *r, const char *path, sp_error *err) {
    FILE *f = fopen(path, "r");
    if (!f) return sp_fail(err, "%s: cannot open the results file", path);
    char line[1024];
    int lineno = 0, status = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && feof(f)) break; /* the last row of a run that crashed while writing it */
        line[strcspn(line, "\n")] = '\0';
        if (!line[0]) continue;
        char *fld[12];
        int n = split_tabs(line, fld, 12);
        if (!strcmp(fld[0], "device") && n == 2) {
            copy_field(r->device, sizeof r->device, fld[1]);
        } else if (!strcmp(fld[0], "copy") && n == 2) {
            r->copy_gbs = strtod(fld[1], NULL);
        } else if (!strcmp(fld[0], "read") && n == 2) {
            r->read_gbs = strtod(fld[1], NULL);
        } else if (!strcmp(fld[0], "row") && n == 12) {
            gc_row *w = gc_results_add(r);
            copy_field(w->op, sizeof w->op, fld[1]);
            copy_field(w->version, sizeof w->version, fld[2]);
            copy_field(w->shape, sizeof w->shape, fld[3]);
            w->m = atoi(fld[4]);
            w->err = strtod(fld[5], NULL);
            w->bound = strtod(fld[6], NULL);
            w->status = atoi(fld[7]);
            w->us = strtod(fld[8], NULL);
            w->bytes = strtod(fld[9], NULL);
            w->flops = strtod(fld[10], NULL);
            copy_field(w->note, sizeof w->note, fld[11]);
        } else if (status == 0) { /* report the first bad line */
            status = sp_fail(err,
                             "%s:%d: expected a device, copy, read or row line of 2, 2, 2 or 12 tab-separated fields, "
                             "found %d field(s) starting '%.40s'",
                             path, lineno, n, fld[0]);
        }
    }
    fclose(f);
    return status;
}

double gc_rel_error(const float *out, const float *ref, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(out[i])) return INFINITY;
        double d = (double)out[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    if (den == 0.0) return num == 0.0 ? 0.0 : INFINITY;
    return sqrt(num / den);
}

size_t gc_count_nan(const float *x, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += isnan(x[i]) ? 1 : 0;
    return c;
}

size_t gc_count_nan_bf16(const uint16_t *x, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((x[i] & 0x7fffu) > 0x7f80u) ? 1 : 0;
    return c;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double gc_median(double *v, int n) {
    if (n <= 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int gc_rotation_sets(size_t bytes, size_t l2_bytes, int max_sets) {
    if (max_sets < 1) max_sets = 1;
    if (bytes == 0) return max_sets;
    size_t want = 4 * l2_bytes;
    size_t sets = (want + bytes - 1) / bytes;
    if (sets < 1) sets = 1;
    return sets > (size_t)max_sets ? max_sets : (int)sets;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int gc_pick_rows(int n_out, int max_rows, uint64_t seed, int *rows) {
    if (n_out <= max_rows) {
        for (int i = 0; i < n_out; i++) rows[i] = i;
        return n_out;
    }
    int n = 0;
    rows[n++] = 0;
    rows[n++] = n_out - 1;
    uint64_t x = seed;
    while (n < max_rows) {
        x = x * 6364136223846793005ull + 1442695040888963407ull; /* LCG: only the spread matters here */
        int r = (int)((x >> 33) % (uint64_t)n_out);
        int dup = 0;
        for (int i = 0; i < n && !dup; i++) dup = rows[i] == r;
        if (!dup) rows[n++] = r;
    }
    qsort(rows, (size_t)n, sizeof *rows, cmp_int);
    return n;
}

int gc_reps_for(double first_us, double target_us) {
    if (!(first_us > 0.0)) return 1000;
    double r = target_us / first_us;
    if (r < 1.0) return 1;
    if (r > 1000.0) return 1000;
    return (int)r;
}

double gc_row_gbs(const gc_row *row) {
    if (isnan(row->us) || row->us <= 0.0) return NAN;
    return row->bytes / (row->us * 1e-6) / 1e9;
}

double gc_row_pct_copy(const gc_row *row, double copy_gbs) {
    double g = gc_row_gbs(row);
    if (isnan(g) || isnan(copy_gbs) || copy_gbs <= 0.0) return NAN;
    return 100.0 * g / copy_gbs;
}

double gc_row_tflops(const gc_row *row) {
    if (isnan(row->us) || row->us <= 0.0 || row->flops <= 0.0) return NAN;
    return row->flops / (row->us * 1e-6) / 1e12;
}

static const char *status_name(int s) { return s == GC_OK ? "ok" : s == GC_FAIL ? "FAIL" : "skip"; }

/* "%*.*f" or "-" when not a number. */
static void fmt_num(char *buf, size_t size, double v, int width, int prec, int sci) {
    if (isnan(v))
        snprintf(buf, size, "%*s", width, "-");
    else if (isinf(v))
        snprintf(buf, size, "%*s", width, "inf");
    else if (sci)
        snprintf(buf, size, "%*.*e", width, prec, v);
    else
        snprintf(buf, size, "%*.*f", width, prec, v);
}

#define TABLE_HEAD                                                                                                     \
    "%-10s %-13s %-28s %3s %9s %9s %10s %8s %7s %7s  %s\n", "op", "version", "shape", "m", "rel.err", "bound",         \
        "median us", "GB/s", "%copy", "TFLOP/s", "status"

void gc_format_row(char *buf, size_t size, const gc_row *row, double copy_gbs) {
    char err[16], bound[16], us[16], gbs[16], pct[16], tf[16];
    fmt_num(err, sizeof err, row->err, 9, 2, 1);
    fmt_num(bound, sizeof bound, row->bound, 9, 0, 1);
    fmt_num(us, sizeof us, row->us, 10, 2, 0);
    fmt_num(gbs, sizeof gbs, gc_row_gbs(row), 8, 0, 0);
    fmt_num(pct, sizeof pct, gc_row_pct_copy(row, copy_gbs), 7, 1, 0);
    fmt_num(tf, sizeof tf, gc_row_tflops(row), 7, 2, 0);
    snprintf(buf, size, "%-10.10s %-13.13s %-28.28s %3d %s %s %s %s %s %s  %s%s%s", row->op, row->version, row->shape,
             row->m, err, bound, us, gbs, pct, tf, status_name(row->status), row->note[0] ? ": " : "", row->note);
}

void gc_print_table(FILE *f, const gc_results *r) {
    fprintf(f, "device: %s\n", r->device[0] ? r->device : "(unknown)");
    if (isnan(r->copy_gbs))
        fprintf(f, "copy bandwidth: not measured\n");
    else
        fprintf(f, "copy bandwidth (device-to-device, read + write): %.0f GB/s\n", r->copy_gbs);
    if (!isnan(r->read_gbs))
        fprintf(f, "read-only bandwidth (streaming reads, no writes): %.0f GB/s = %.1f %% of copy\n", r->read_gbs,
                isnan(r->copy_gbs) ? NAN : 100.0 * r->read_gbs / r->copy_gbs);
    fprintf(f, TABLE_HEAD);
    char line[512];
    for (int i = 0; i < r->n; i++) {
        gc_format_row(line, sizeof line, &r->rows[i], r->copy_gbs);
        fprintf(f, "%s\n", line);
    }
    int fails = 0;
    for (int i = 0; i < r->n; i++) fails += r->rows[i].status == GC_FAIL;
    fprintf(f, "%d rows, %d failed validation\n", r->n, fails);
}

double gc_best_us(const gc_results *r, const char *op, const char *shape, int m) {
    double best = NAN;
    for (int i = 0; i < r->n; i++) {
        const gc_row *w = &r->rows[i];
        if (w->status != GC_OK || isnan(w->us) || w->m != m || strcmp(w->op, op) || strcmp(w->shape, shape)) continue;
        if (isnan(best) || w->us < best) best = w->us;
    }
    return best;
}

const gc_row *gc_best_row(const gc_results *r, const char *op, const char *shape, int m, const char *prefix,
                          const char *skip) {
    const gc_row *best = NULL;
    for (int i = 0; i < r->n; i++) {
        const gc_row *w = &r->rows[i];
        if (w->status != GC_OK || isnan(w->us) || w->m != m || strcmp(w->op, op) || strcmp(w->shape, shape)) continue;
        if (prefix && strncmp(w->version, prefix, strlen(prefix))) continue;
        if (skip && !strncmp(w->version, skip, strlen(skip))) continue;
        if ((!prefix || strncmp(prefix, GC_ENGINE_PREFIX, strlen(GC_ENGINE_PREFIX))) &&
            !strncmp(w->version, GC_ENGINE_PREFIX, strlen(GC_ENGINE_PREFIX)))
            continue;
        if (!best || w->us < best->us) best = w;
    }
    return best;
}

const gc_row *gc_engine_row(const gc_results *r, const char *op, const char *shape, int m) {
    return gc_best_row(r, op, shape, m, GC_ENGINE_PREFIX, NULL);
}

double gc_plan_us(const gc_results *r, const char *op, const char *shape, int m) {
    const gc_row *e = gc_engine_row(r, op, shape, m);
    return e ? e->us : gc_best_us(r, op, shape, m);
}

void gc_print_matvec_summary(FILE *f, const gc_results *r) {
    int n = 0;
    const gc_matvec_shape *shapes = gc_matvec_shapes(&n);
    size_t pre = strlen(GC_ENGINE_PREFIX);
    fprintf(f, "\nmatvec at the 27B shapes: what the engine dispatches (kn_matvec, its table filled from this run's "
               "validated timings) at m=1 (share of copy bandwidth) and m=4 (cost over m=1); the fastest validated "
               "version beside it; cuBLAS\n");
    fprintf(f, "%-26s %-9s %9s %6s | %-9s %9s %6s | %-13s %9s | %-13s %9s | %9s %9s %6s\n", "shape", "engine m1", "us",
            "%copy", "engine m4", "us", "x m=1", "fastest m=1", "us", "fastest m=4", "us", "cublas m1", "cublas m4",
            "ratio");
    for (int i = 0; i < n; i++) {
        if (!shapes[i].real) continue;
        const char *sh = shapes[i].name;
        const gc_row *e1 = gc_engine_row(r, "matvec", sh, 1), *e4 = gc_engine_row(r, "matvec", sh, 4);
        const gc_row *b1 = gc_best_row(r, "matvec", sh, 1, NULL, "cublas");
        const gc_row *b4 = gc_best_row(r, "matvec", sh, 4, NULL, "cublas");
        const gc_row *c1 = gc_best_row(r, "matvec", sh, 1, "cublas", NULL);
        const gc_row *c4 = gc_best_row(r, "matvec", sh, 4, "cublas", NULL);
        char ev1[24], ev4[24], v1[24], v4[24], eu1[16], eu4[16], p1[16], q4[16], u1[16], u4[16], cu1[16], cu4[16],
            cr[16];
        snprintf(ev1, sizeof ev1, "%s", e1 ? e1->version + pre : "-");
        snprintf(ev4, sizeof ev4, "%s", e4 ? e4->version + pre : "-");
        snprintf(v1, sizeof v1, "%s", b1 ? b1->version : "-");
        snprintf(v4, sizeof v4, "%s", b4 ? b4->version : "-");
        fmt_num(eu1, sizeof eu1, e1 ? e1->us : NAN, 9, 2, 0);
        fmt_num(eu4, sizeof eu4, e4 ? e4->us : NAN, 9, 2, 0);
        fmt_num(p1, sizeof p1, e1 ? gc_row_pct_copy(e1, r->copy_gbs) : NAN, 6, 1, 0);
        fmt_num(q4, sizeof q4, e1 && e4 ? e4->us / e1->us : NAN, 6, 3, 0);
        fmt_num(u1, sizeof u1, b1 ? b1->us : NAN, 9, 2, 0);
        fmt_num(u4, sizeof u4, b4 ? b4->us : NAN, 9, 2, 0);
        fmt_num(cu1, sizeof cu1, c1 ? c1->us : NAN, 9, 2, 0);
        fmt_num(cu4, sizeof cu4, c4 ? c4->us : NAN, 9, 2, 0);
        fmt_num(cr, sizeof cr, c1 && c4 ? c4->us / c1->us : NAN, 6, 3, 0);
        fprintf(f, "%-26.26s %-9s %s %s | %-9s %s %s | %-13s %s | %-13s %s | %s %s %s\n", sh, ev1, eu1, p1, ev4, eu4,
                q4, v1, u1, v4, u4, cu1, cu4, cr);
    }
}

/* ---- shapes ----------------------------------------------------------------- */

static const gc_matvec_shape matvec_shapes[] = {
    {"q_proj 12288x5120", 2 * GC27_H *GC27_DH, GC27_D, 1},
    {"k_proj/v_proj 1024x5120", GC27_HKV *GC27_DH, GC27_D, 1},
    {"o_proj/out_proj 5120x6144", GC27_D, GC27_H *GC27_DH, 1},
    {"in_proj_qkv 10240x5120", GC27_C, GC27_D, 1},
    {"in_proj_z 6144x5120", GC27_HV *GC27_DV, GC27_D, 1},
    {"in_proj_a/b 48x5120", GC27_HV, GC27_D, 1},
    {"mlp_gate/up 17408x5120", GC27_F, GC27_D, 1},
    {"mlp_down 5120x17408", GC27_D, GC27_F, 1},
    {"lm_head 248320x5120", GC27_V, GC27_D, 1},
    {"mtp_fc 5120x10240", GC27_D, 2 * GC27_D, 1},
    /* edge cases: n_in not a multiple of 8 (element path), n_out not a
     * multiple of 16 or of the warps per block, fewer k than one step */
    {"odd 300x1001", 300, 1001, 0},
    {"odd 77x1032", 77, 1032, 0},
    {"odd 513x40", 513, 40, 0},
    {"odd 1x8", 1, 8, 0},
    {"odd 33x4100", 33, 4100, 0},
};

const gc_matvec_shape *gc_matvec_shapes(int *count) {
    *count = (int)(sizeof matvec_shapes / sizeof matvec_shapes[0]);
    return matvec_shapes;
}

/* ---- the estimate ------------------------------------------------------------ */

static int add_item(gc_plan_item *items, int n, int max, const char *op, const char *shape, int m, int count,
                    const char *what) {
    if (n < max) items[n] = (gc_plan_item){op, shape, m, count, what};
    return n + 1;
}

static const char *ctx_shape(int ctx) {
    switch (ctx) {
    case GC_CTX_SHORT: return "ctx 4096";
    case GC_CTX_LONG: return "ctx 32768";
    default: return "ctx ?";
    }
}

int gc_plan_27b(gc_plan_item *items, int max, int m, int ctx, int mtp) {
    int n = 0;
    const int L = GC27_N_LINEAR, A = GC27_N_FULL, T = L + A;
    const char *att = ctx_shape(ctx);
    if (mtp) {
        /* one MTP draft step: two norms + fc, one attention decoder layer, norm, lm_head, sample */
        n = add_item(items, n, max, "rmsnorm", GC_SHAPE_HIDDEN, 1, 3, "pre-fc norms (embedding, hidden) + final norm");
        n = add_item(items, n, max, "matvec", "mtp_fc 5120x10240", 1, 1, "mtp.fc");
        n = add_item(items, n, max, "rmsnorm", GC_SHAPE_HIDDEN, 1, 2, "input + post-attention norm");
        n = add_item(items, n, max, "matvec", "q_proj 12288x5120", 1, 1, "q_proj (query + gate)");
        n = add_item(items, n, max, "matvec", "k_proj/v_proj 1024x5120", 1, 2, "k_proj, v_proj");
        n = add_item(items, n, max, "rope_kv", GC_SHAPE_QK_NORM_ROPE, 1, 1, "q/k norm + RoPE + KV write");
        n = add_item(items, n, max, "attention", att, 1, 1, "attention + output gate");
        n = add_item(items, n, max, "matvec", "o_proj/out_proj 5120x6144", 1, 1, "o_proj");
        n = add_item(items, n, max, "matvec", "mlp_gate/up 17408x5120", 1, 2, "MLP gate, up");
        n = add_item(items, n, max, "swiglu", GC_SHAPE_SWIGLU, 1, 1, "SwiGLU");
        n = add_item(items, n, max, "matvec", "mlp_down 5120x17408", 1, 1, "MLP down");
        n = add_item(items, n, max, "matvec", "lm_head 248320x5120", 1, 1, "lm_head (shared)");
        n = add_item(items, n, max, "probs", GC_SHAPE_PROBS, 1, 1, "processed distribution q");
        n = add_item(items, n, max, "sample", GC_SHAPE_SAMPLE, 1, 1, "draft token");
        return n;
    }
    n = add_item(items, n, max, "rmsnorm", GC_SHAPE_HIDDEN, m, 2 * T, "input + post-attention norm, every layer");
    /* DeltaNet layers */
    n = add_item(items, n, max, "matvec", "in_proj_qkv 10240x5120", m, L, "DeltaNet in_proj_qkv");
    n = add_item(items, n, max, "matvec", "in_proj_z 6144x5120", m, L, "DeltaNet in_proj_z");
    n = add_item(items, n, max, "matvec", "in_proj_a/b 48x5120", m, 2 * L, "DeltaNet in_proj_a, in_proj_b");
    n = add_item(items, n, max, "conv", GC_SHAPE_CONV, m, L, "causal conv step");
    n = add_item(items, n, max, "deltanet", GC_SHAPE_DELTA, m, L, "gated delta rule");
    n = add_item(items, n, max, "gatednorm", GC_SHAPE_GATED_NORM, m, L, "output norm · silu(z)");
    n = add_item(items, n, max, "matvec", "o_proj/out_proj 5120x6144", m, L, "DeltaNet out_proj");
    /* attention layers */
    n = add_item(items, n, max, "matvec", "q_proj 12288x5120", m, A, "q_proj (query + gate)");
    n = add_item(items, n, max, "matvec", "k_proj/v_proj 1024x5120", m, 2 * A, "k_proj, v_proj");
    n = add_item(items, n, max, "rope_kv", GC_SHAPE_QK_NORM_ROPE, m, A, "q/k norm + RoPE + KV write");
    n = add_item(items, n, max, "attention", att, m, A, "attention + output gate");
    n = add_item(items, n, max, "matvec", "o_proj/out_proj 5120x6144", m, A, "o_proj");
    /* MLP, every layer */
    n = add_item(items, n, max, "matvec", "mlp_gate/up 17408x5120", m, 2 * T, "MLP gate, up");
    n = add_item(items, n, max, "swiglu", GC_SHAPE_SWIGLU, m, T, "SwiGLU");
    n = add_item(items, n, max, "matvec", "mlp_down 5120x17408", m, T, "MLP down");
    /* head */
    n = add_item(items, n, max, "rmsnorm", GC_SHAPE_HIDDEN, m, 1, "final norm");
    n = add_item(items, n, max, "matvec", "lm_head 248320x5120", m, 1, "lm_head");
    n = add_item(items, n, max, "probs", GC_SHAPE_PROBS, m, 1, "processed distribution p");
    if (m == 1)
        n = add_item(items, n, max, "sample", GC_SHAPE_SAMPLE, 1, 1, "sample");
    else
        n = add_item(items, n, max, "accept", GC_SHAPE_ACCEPT, m, 1, "Leviathan acceptance");
    return n;
}

static double row_bytes(const gc_results *r, const char *op, const char *shape, int m) {
    for (int i = 0; i < r->n; i++) {
        const gc_row *w = &r->rows[i];
        if (w->m == m && !strcmp(w->op, op) && !strcmp(w->shape, shape)) return w->bytes;
    }
    return NAN;
}

gc_estimate gc_estimate_plan(const gc_results *r, const gc_plan_item *items, int n) {
    gc_estimate e = {0.0, 0, 0.0};
    for (int i = 0; i < n; i++) {
        double us = gc_plan_us(r, items[i].op, items[i].shape, items[i].m);
        if (isnan(us)) {
            e.n_missing++;
            continue;
        }
        e.us += items[i].count * us;
        double b = row_bytes(r, items[i].op, items[i].shape, items[i].m);
        if (!isnan(b)) e.bytes += items[i].count * b;
    }
    return e;
}

double gc_expected_tokens(double alpha, int k) {
    if (alpha >= 1.0) return k + 1;
    return (1.0 - pow(alpha, k + 1)) / (1.0 - alpha);
}

#define PLAN_MAX 32

static gc_estimate print_plan(FILE *f, const gc_results *r, const char *title, int m, int ctx, int mtp) {
    gc_plan_item items[PLAN_MAX];
    int n = gc_plan_27b(items, PLAN_MAX, m, ctx, mtp);
    gc_estimate e = gc_estimate_plan(r, items, n);
    fprintf(f, "%s\n", title);
    for (int i = 0; i < n; i++) {
        double us = gc_plan_us(r, items[i].op, items[i].shape, items[i].m);
        char t[32];
        if (isnan(us))
            snprintf(t, sizeof t, "not measured");
        else
            snprintf(t, sizeof t, "%10.1f us", items[i].count * us);
        fprintf(f, "  %4d x %-10s %-28s m=%-2d %-16s %s\n", items[i].count, items[i].op, items[i].shape, items[i].m, t,
                items[i].what);
    }
    if (e.n_missing)
        fprintf(f, "  total: %.1f us over the measured items; %d item(s) not measured, so this is a lower bound\n",
                e.us, e.n_missing);
    else
        fprintf(f, "  total: %.1f us (%.2f GB moved, %.0f GB/s effective)\n", e.us, e.bytes / 1e9,
                e.us > 0 ? e.bytes / (e.us * 1e-6) / 1e9 : 0.0);
    return e;
}

void gc_print_estimate(FILE *f, const gc_results *r, int ctx) {
    fprintf(f,
            "\nQwen3.8-27B estimate at context %d: sum of the kernel times, each op counted per layer type (48 "
            "DeltaNet, 16 attention layers, MLP per layer, lm_head) - for matvec the version the engine dispatches, "
            "for the other ops the fastest validated one; launch gaps, embedding and residual adds not counted\n",
            ctx);
    gc_estimate dec = print_plan(f, r, "decode step (m = 1):", 1, ctx, 0);
    gc_estimate ver = print_plan(f, r, "verify pass of k+1 = 4 positions (chain):", 4, ctx, 0);
    gc_estimate mtp = print_plan(f, r, "MTP draft step (one of k = 3):", 1, ctx, 1);
    fprintf(f, "summary at context %d:\n", ctx);
    if (dec.n_missing == 0 && dec.us > 0)
        fprintf(f, "  decode: %.2f ms per token -> %.1f tokens/s\n", dec.us / 1e3, 1e6 / dec.us);
    else
        fprintf(f, "  decode: incomplete (%d item(s) not measured)\n", dec.n_missing);
    if (ver.n_missing == 0 && dec.n_missing == 0 && dec.us > 0)
        fprintf(f, "  verify pass (4 positions): %.2f ms = %.3f x the decode step\n", ver.us / 1e3, ver.us / dec.us);
    if (ver.n_missing == 0 && mtp.n_missing == 0) {
        double cycle = ver.us + 3 * mtp.us;
        fprintf(f, "  MTP k=3 cycle (3 draft steps + 1 verify pass): %.2f ms\n", cycle / 1e3);
        static const double alphas[] = {0.5, 0.7, 0.8, 0.9};
        for (int i = 0; i < 4; i++) {
            double e = gc_expected_tokens(alphas[i], 3);
            fprintf(f, "    alpha %.1f: E = %.2f tokens per pass -> %.1f tokens/s (%.1f without draft cost)\n",
                    alphas[i], e, e / (cycle * 1e-6), e / (ver.us * 1e-6));
        }
    } else {
        fprintf(f, "  speculative tokens/s: incomplete (verify %d, draft %d item(s) not measured)\n", ver.n_missing,
                mtp.n_missing);
    }
}
