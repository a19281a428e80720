/* check_matvec.cu — validates every matvec version (kn_matvec.h) against twin_matvec on fresh random bf16 weights
 * and fp32 activations, then times it with rotating buffers. Large shapes are validated on a sample of rows (rows
 * are independent dot products), and every output is checked for having been written. */
#include <string.h>

#include "gc.cuh"
#include "kn_matvec.h"
#include "twin.h"

/* fp32 accumulation in another order than op_matvec's sequential sum: the
 * difference is rounding, about √n_in·2⁻²⁴ relative (≲1e-5 at n_in = 17408).
 * 1e-4 leaves margin, yet one dropped or doubled term (≈ 1/√n_in ≥ 7e-3 of
 * a row) fails. The -xbf16 versions are compared with a twin that rounds X
 * the same way, so the same bound applies to them. */
#define MATVEC_BOUND 1e-4
#define MATVEC_ROWS 256 /* rows validated per shape */

/* Bitwise comparison of y[m, n_out] with ref[m, n_out]: the fraction of
 * entries whose bits differ (NaN counts as a difference). */
static double bit_mismatch(const float *y, const float *ref, size_t n) {
    size_t diff = 0;
    for (size_t i = 0; i < n; i++) diff += memcmp(&y[i], &ref[i], sizeof(float)) != 0;
    return n ? (double)diff / (double)n : 0.0;
}

/* The m = 1 products of X[p], p < max_m, with version fn, into ref[max_m, n_out] (host). */
static void decode_rows(kn_matvec_fn fn, const char *name, float *ref, float *Y, const uint16_t *W, const float *X,
                        int max_m, int n_out, int n_in) {
    for (int p = 0; p < max_m; p++) {
        gc_poison(Y, (size_t)n_out * 4);
        GC_CUDA(fn(Y, W, X + (size_t)p * n_in, 1, n_out, n_in, 0));
        gc_sync(name);
        gc_d2h(ref + (size_t)p * n_out, Y, (size_t)n_out * 4);
    }
}

/* Decode and verify must round alike: for a numerics class, the m = 1
 * products of each X[p] by the class's first version are the reference
 * (returned, host [max_m, n_out]), and every version of the class, at every
 * m of the shape, must reproduce them bit for bit (row p of the batch = the
 * decode product of X[p]). Rows "mv-bits", err = the fraction of
 * differing outputs, bound 0. */
static float *check_class(gc_ctx *c, int cl, const gc_matvec_shape *sh, const int *ms, int n_ms, int max_m, float *Y,
                          const uint16_t *W, const float *X) {
    int n_versions = 0, n_out = sh->n_out, n_in = sh->n_in;
    const kn_matvec_version *vs = kn_matvec_versions(&n_versions);
    size_t y_elems = (size_t)max_m * n_out;
    int first = -1;
    for (int v = 0; v < n_versions && first < 0; v++)
        if (vs[v].numerics == cl) first = v;
    if (first < 0) return NULL;
    float *ref = (float *)gc_hmalloc(y_elems * 4), *got = (float *)gc_hmalloc(y_elems * 4);
    decode_rows(vs[first].fn, vs[first].name, ref, Y, W, X, max_m, n_out, n_in);
    for (int v = 0; v < n_versions; v++) {
        if (vs[v].numerics != cl) continue;
        for (int mi = 0; mi < n_ms; mi++) {
            int m = ms[mi];
            if (vs[v].max_m < m || (v == first && m == 1)) continue;
            gc_poison(Y, (size_t)m * n_out * 4);
            cudaError_t e = vs[v].fn(Y, W, X, m, n_out, n_in, 0);
            char note[96];
            double err = INFINITY;
            snprintf(note, sizeof note, "row p vs %s at m=1 on X[p], bit for bit", vs[first].name);
            if (e != cudaSuccess) {
                snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
            } else {
                gc_sync(vs[v].name);
                gc_d2h(got, Y, (size_t)m * n_out * 4);
                err = bit_mismatch(got, ref, (size_t)m * n_out);
            }
            gc_record(c, "mv-bits", vs[v].name, sh->name, m, err, 0.0, NAN, 0.0, 0.0, note);
        }
    }
    free(got);
    return ref;
}

/* The pair (decode version, batch version) of one class with the smallest
 * t(m = 1) + mean over the shape's m > 1 of t(m), among validated, timed
 * versions whose class passed check_classes; set in the dispatch table.
 * times[v][mi]: NAN when not validated or not timed. */
static void select_pair(gc_ctx *c, const gc_matvec_shape *sh, int n_ms, const double *times, int bits_first_row) {
    int n_versions = 0;
    const kn_matvec_version *vs = kn_matvec_versions(&n_versions);
    double best = INFINITY;
    int best_d = -1, best_b = -1;
    for (int cl = KN_MV_WARP_LANES; cl <= KN_MV_MMA_XBF16; cl++) {
        int class_ok = 1; /* every bits row of this class and shape passed */
        for (int i = bits_first_row; i < c->res->n; i++) {
            const gc_row *r = &c->res->rows[i];
            for (int v = 0; v < n_versions; v++)
                if (!strcmp(r->op, "mv-bits") && !strcmp(r->version, vs[v].name) && vs[v].numerics == cl &&
                    r->status != GC_OK)
                    class_ok = 0;
        }
        if (!class_ok) continue;
        int d = -1, b = -1;
        double td = INFINITY, tb = INFINITY;
        for (int v = 0; v < n_versions; v++) {
            if (vs[v].numerics != cl) continue;
            double t1 = times[v * n_ms + 0]; /* ms[0] is 1 */
            if (isfinite(t1) && t1 < td) td = t1, d = v;
            if (vs[v].max_m < KN_MATVEC_MAX_M) continue;
            double sum = 0.0;
            int n = 0;
            for (int mi = 1; mi < n_ms; mi++) sum += times[v * n_ms + mi], n++;
            if (n && isfinite(sum) && sum / n < tb) tb = sum / n, b = v;
        }
        if (d >= 0 && b >= 0 && td + tb < best) best = td + tb, best_d = d, best_b = b;
    }
    if (best_d < 0) return;
    if (kn_matvec_select(sh->n_out, sh->n_in, vs[best_d].name, vs[best_b].name) != 0)
        fprintf(stderr, "gpucheck: kn_matvec_select(%s, %s) refused for %s\n", vs[best_d].name, vs[best_b].name,
                sh->name);
    else if (!c->emu) /* the line an engine can replay at start-up */
        printf("dispatch: kn_matvec_select(%d, %d, \"%s\", \"%s\");\n", sh->n_out, sh->n_in, vs[best_d].name,
               vs[best_b].name);
}

static void matvec_shape(gc_ctx *c, const gc_matvec_shape *sh, const int *ms, int n_ms) {
    int n_out = sh->n_out, n_in = sh->n_in, max_m = 1;
    for (int i = 0; i < n_ms; i++) max_m = ms[i] > max_m ? ms[i] : max_m;
    size_t w_elems = (size_t)n_out * n_in, x_elems = (size_t)max_m * n_in, y_elems = (size_t)max_m * n_out;
    size_t sizes[2] = {w_elems * 2, x_elems * 4};
    gc_rot rot = gc_rot_make(c, sizes, 2);
    for (int s = 0; s < rot.n_sets; s++) {
        gc_fill_bf16(c, (uint16_t *)gc_rot_buf(&rot, s, 0), w_elems, -1.0f, 1.0f, 100 + s);
        gc_fill_f32(c, (float *)gc_rot_buf(&rot, s, 1), x_elems, -1.0f, 1.0f, 200 + s);
    }
    const uint16_t *W0 = (const uint16_t *)gc_rot_buf(&rot, 0, 0);
    const float *X0 = (const float *)gc_rot_buf(&rot, 0, 1);
    float *Y = (float *)gc_dmalloc(y_elems * 4);

    /* the twin's inputs: the sampled rows of W and all of X, from set 0 */
    int rows[MATVEC_ROWS];
    int n_rows = gc_pick_rows(n_out, MATVEC_ROWS, c->seed ^ (uint64_t)n_out, rows);
    uint16_t *w_rows = (uint16_t *)gc_hmalloc((size_t)n_rows * n_in * 2);
    for (int i = 0; i < n_rows; i++) gc_d2h(w_rows + (size_t)i * n_in, W0 + (size_t)rows[i] * n_in, (size_t)n_in * 2);
    float *x_host = (float *)gc_hmalloc(x_elems * 4);
    gc_d2h(x_host, X0, x_elems * 4);
    float *y_host = (float *)gc_hmalloc(y_elems * 4);
    float *y_got = (float *)gc_hmalloc((size_t)max_m * n_rows * 4);
    float *y_ref[2];
    y_ref[0] = (float *)gc_hmalloc((size_t)max_m * n_rows * 4);
    y_ref[1] = (float *)gc_hmalloc((size_t)max_m * n_rows * 4);
    twin_matvec(y_ref[0], w_rows, x_host, max_m, n_rows, n_in, 0);
    twin_matvec(y_ref[1], w_rows, x_host, max_m, n_rows, n_in, 1);

    /* validates (and, when it passes, times) fn at m; returns the µs (NAN: not timed) */
    auto run = [&](const char *version, kn_matvec_fn fn, int x_bf16, int m) {
        char note[96] = "";
        gc_poison(Y, (size_t)m * n_out * 4);
        cudaError_t e = fn(Y, W0, X0, m, n_out, n_in, 0);
        double err = INFINITY, us = NAN;
        if (e != cudaSuccess) {
            snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
        } else {
            gc_sync(version);
            gc_d2h(y_host, Y, (size_t)m * n_out * 4);
            size_t nan = gc_count_nan(y_host, (size_t)m * n_out);
            for (int p = 0; p < m; p++)
                for (int i = 0; i < n_rows; i++) y_got[(size_t)p * n_rows + i] = y_host[(size_t)p * n_out + rows[i]];
            /* the twin ran for max_m positions: rows of position p are at p·n_rows */
            err = gc_rel_error(y_got, y_ref[x_bf16], (size_t)m * n_rows);
            if (nan) {
                snprintf(note, sizeof note, "%zu outputs never written (NaN)", nan);
                err = INFINITY;
            }
            if (gc_status_for(err, MATVEC_BOUND) == GC_OK)
                us = gc_time_us(c, [&](int it) {
                    int s = it % rot.n_sets;
                    return fn(Y, (const uint16_t *)gc_rot_buf(&rot, s, 0), (const float *)gc_rot_buf(&rot, s, 1), m,
                              n_out, n_in, 0);
                });
        }
        double bytes = (double)w_elems * 2 + (double)m * n_in * 4 + (double)m * n_out * 4;
        gc_record(c, "matvec", version, sh->name, m, err, MATVEC_BOUND, us, bytes, 2.0 * m * (double)w_elems, note);
        return us;
    };

    int n_versions = 0;
    const kn_matvec_version *vs = kn_matvec_versions(&n_versions);
    double *times = (double *)gc_hmalloc((size_t)n_versions * n_ms * sizeof(double));
    for (int mi = 0; mi < n_ms; mi++)
        for (int v = 0; v < n_versions; v++) {
            times[v * n_ms + mi] = NAN;
            if (vs[v].max_m >= ms[mi]) times[v * n_ms + mi] = run(vs[v].name, vs[v].fn, vs[v].x_bf16, ms[mi]);
        }
    if (const kn_matvec_version *base = gc_matvec_baseline()) /* a row to compare with, never dispatched */
        for (int mi = 0; mi < n_ms; mi++)
            if (base->max_m >= ms[mi]) run(base->name, base->fn, base->x_bf16, ms[mi]);
    /* every class on the GPU; on the emulator, where a block per row costs
     * 256 fibers a row, the dispatched class always and the others on the
     * shapes of few rows */
    int bits_first_row = c->res->n;
    float *ref[KN_MV_MMA_XBF16 + 1] = {NULL};
    int dispatched = kn_matvec_dispatch(1, n_out, n_in)->numerics;
    for (int cl = KN_MV_WARP_LANES; cl <= KN_MV_MMA_XBF16; cl++)
        if (!c->emu || cl == dispatched || n_out <= 80) ref[cl] = check_class(c, cl, sh, ms, n_ms, max_m, Y, W0, X0);

    /* the control: the same comparison between two classes that round
     * differently (fp32 activations against bf16 ones) must see differences,
     * or the bit check above would be blind */
    if (ref[KN_MV_WARP_LANES] && ref[KN_MV_MMA_XBF16]) {
        double diff = bit_mismatch(ref[KN_MV_WARP_LANES], ref[KN_MV_MMA_XBF16], y_elems);
        char note[96];
        snprintf(note, sizeof note, "control: %.0f%% of v3's and b2's outputs differ (must be > 0)", 100.0 * diff);
        gc_record(c, "mv-bits", "control", sh->name, max_m, diff > 0.0 ? 0.0 : INFINITY, 0.0, NAN, 0.0, 0.0, note);
    }

    /* what the engine runs: the table filled from these timings (left at
     * the default when nothing was timed), validated, timed, and checked bit
     * for bit against the m = 1 products of its class */
    select_pair(c, sh, n_ms, times, bits_first_row);
    const kn_matvec_version *d1 = kn_matvec_dispatch(1, n_out, n_in);
    if (!ref[d1->numerics]) ref[d1->numerics] = check_class(c, d1->numerics, sh, ms, n_ms, max_m, Y, W0, X0);
    for (int mi = 0; mi < n_ms; mi++) {
        int m = ms[mi];
        const kn_matvec_version *d = kn_matvec_dispatch(m, n_out, n_in);
        char name[24];
        snprintf(name, sizeof name, "%s%s", GC_ENGINE_PREFIX, d->name);
        run(name, kn_matvec, d->x_bf16, m);
        gc_poison(Y, (size_t)m * n_out * 4);
        GC_CUDA(kn_matvec(Y, W0, X0, m, n_out, n_in, 0));
        gc_sync("kn_matvec");
        gc_d2h(y_host, Y, (size_t)m * n_out * 4);
        char note[96];
        double err = ref[d1->numerics] ? bit_mismatch(y_host, ref[d1->numerics], (size_t)m * n_out) : INFINITY;
        snprintf(note, sizeof note, "row p vs the m=1 products of %s's class, bit for bit", d1->name);
        gc_record(c, "mv-bits", name, sh->name, m, err, 0.0, NAN, 0.0, 0.0, note);
    }
    for (int cl = 0; cl <= KN_MV_MMA_XBF16; cl++) free(ref[cl]);
    free(times);
    gc_rot_free(&rot);
    gc_dfree(Y);
    free(w_rows), free(x_host), free(y_host), free(y_got), free(y_ref[0]), free(y_ref[1]);
}

void gc_family_matvec(gc_ctx *c) {
    int n = 0;
    const gc_matvec_shape *shapes = gc_matvec_shapes(&n);
    static const int ms_real[] = {1, 4}, ms_wide[] = {1, 2, 4, 8, 16}, ms_odd[] = {1, 3, 9, 16};
    kn_matvec_select_reset(); /* every run starts from the default dispatch */
    for (int i = 0; i < n; i++) {
        const gc_matvec_shape *sh = &shapes[i];
        if (!sh->real)
            matvec_shape(c, sh, ms_odd, 4);
        else if (c->small)
            continue; /* the edge-case shapes only */
        else if (!strncmp(sh->name, "mlp_gate/up", 11) || !strncmp(sh->name, "q_proj", 6))
            matvec_shape(c, sh, ms_wide, 5);
        else
            matvec_shape(c, sh, ms_real, 2);
    }
    kn_matvec_select_reset(); /* the emulator's other tests see the default */
}
