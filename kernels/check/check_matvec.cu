/* check_matvec.cu — validates every matvec version (kn_matvec.h) against
 * twin_matvec on fresh random bf16 weights and fp32 activations, then times
 * it with rotating buffers. Large shapes are validated on a sample of rows
 * (rows are independent dot products) while every output is checked for
 * having been written. */
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
#define MATVEC_MAX_SETS 8

static void matvec_shape(gc_ctx *c, const gc_matvec_shape *sh, const int *ms, int n_ms) {
    int n_out = sh->n_out, n_in = sh->n_in, max_m = 1;
    for (int i = 0; i < n_ms; i++) max_m = ms[i] > max_m ? ms[i] : max_m;
    size_t w_elems = (size_t)n_out * n_in, x_elems = (size_t)max_m * n_in, y_elems = (size_t)max_m * n_out;
    int n_sets = c->emu ? 1 : gc_rotation_sets(w_elems * 2 + x_elems * 4, c->l2_bytes, MATVEC_MAX_SETS);
    uint16_t *W[MATVEC_MAX_SETS] = {0};
    float *X[MATVEC_MAX_SETS] = {0};
    for (int s = 0; s < n_sets; s++) {
        W[s] = (uint16_t *)gc_dmalloc(w_elems * 2);
        X[s] = (float *)gc_dmalloc(x_elems * 4);
        gc_fill_bf16(c, W[s], w_elems, -1.0f, 1.0f, 100 + s);
        gc_fill_f32(c, X[s], x_elems, -1.0f, 1.0f, 200 + s);
    }
    float *Y = (float *)gc_dmalloc(y_elems * 4);

    /* the twin's inputs: the sampled rows of W and all of X, from set 0 */
    int rows[MATVEC_ROWS];
    int n_rows = gc_pick_rows(n_out, MATVEC_ROWS, c->seed ^ (uint64_t)n_out, rows);
    uint16_t *w_rows = (uint16_t *)gc_hmalloc((size_t)n_rows * n_in * 2);
    for (int i = 0; i < n_rows; i++) gc_d2h(w_rows + (size_t)i * n_in, W[0] + (size_t)rows[i] * n_in, (size_t)n_in * 2);
    float *x_host = (float *)gc_hmalloc(x_elems * 4);
    gc_d2h(x_host, X[0], x_elems * 4);
    float *y_host = (float *)gc_hmalloc(y_elems * 4);
    float *y_got = (float *)gc_hmalloc((size_t)max_m * n_rows * 4);
    float *y_ref[2];
    y_ref[0] = (float *)gc_hmalloc((size_t)max_m * n_rows * 4);
    y_ref[1] = (float *)gc_hmalloc((size_t)max_m * n_rows * 4);
    twin_matvec(y_ref[0], w_rows, x_host, max_m, n_rows, n_in, 0);
    twin_matvec(y_ref[1], w_rows, x_host, max_m, n_rows, n_in, 1);

    int n_versions = 0;
    const kn_matvec_version *vs = kn_matvec_versions(&n_versions);
    for (int mi = 0; mi < n_ms; mi++) {
        int m = ms[mi];
        for (int v = 0; v < n_versions; v++) {
            if (vs[v].max_m < m) continue;
            char note[96] = "";
            gc_poison(Y, (size_t)m * n_out * 4);
            cudaError_t e = vs[v].fn(Y, W[0], X[0], m, n_out, n_in, 0);
            double err = INFINITY, us = NAN;
            if (e != cudaSuccess) {
                snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
            } else {
                gc_sync(vs[v].name);
                gc_d2h(y_host, Y, (size_t)m * n_out * 4);
                size_t nan = gc_count_nan(y_host, (size_t)m * n_out);
                for (int p = 0; p < m; p++)
                    for (int i = 0; i < n_rows; i++)
                        y_got[(size_t)p * n_rows + i] = y_host[(size_t)p * n_out + rows[i]];
                /* the twin ran for max_m positions: rows of position p are at p·n_rows */
                err = gc_rel_error(y_got, y_ref[vs[v].x_bf16], (size_t)m * n_rows);
                if (nan) {
                    snprintf(note, sizeof note, "%zu outputs never written (NaN)", nan);
                    err = INFINITY;
                }
                if (gc_status_for(err, MATVEC_BOUND) == GC_OK)
                    us = gc_time_us(c, [&](int it) {
                        int s = it % n_sets;
                        return vs[v].fn(Y, W[s], X[s], m, n_out, n_in, 0);
                    });
            }
            double bytes = (double)w_elems * 2 + (double)m * n_in * 4 + (double)m * n_out * 4;
            gc_record(c, "matvec", vs[v].name, sh->name, m, err, MATVEC_BOUND, us, bytes, 2.0 * m * (double)w_elems,
                      note);
        }
    }
    for (int s = 0; s < n_sets; s++) gc_dfree(W[s]), gc_dfree(X[s]);
    gc_dfree(Y);
    free(w_rows), free(x_host), free(y_host), free(y_got), free(y_ref[0]), free(y_ref[1]);
}

void gc_family_matvec(gc_ctx *c) {
    int n = 0;
    const gc_matvec_shape *shapes = gc_matvec_shapes(&n);
    static const int ms_real[] = {1, 4}, ms_wide[] = {1, 2, 4, 8, 16}, ms_odd[] = {1, 3, 9, 16};
    for (int i = 0; i < n; i++) {
        const gc_matvec_shape *sh = &shapes[i];
        if (!sh->real)
            matvec_shape(c, sh, ms_odd, 4);
        else if (c->emu)
            continue; /* the emulator runs the edge-case shapes only */
        else if (!strncmp(sh->name, "mlp_gate/up", 11) || !strncmp(sh->name, "q_proj", 6))
            matvec_shape(c, sh, ms_wide, 5);
        else
            matvec_shape(c, sh, ms_real, 2);
    }
}
