/* check_norm.cu — validates and times RMSNorm, the gated DeltaNet norm and
 * SwiGLU (kn_norm.h) against twin_rmsnorm / twin_rmsnorm_gated / twin_swiglu. */
#include "gc.cuh"
#include "kn_norm.h"
#include "twin.h"

/* fp32 throughout; only the order of the Σx² reduction differs (≈1e-7
 * relative) and CUDA's expf is within 2 ulp of glibc's. 1e-5 keeps a 100×
 * margin, while one wrong element of a row of n gives ≈ 1/√n ≥ 1e-2. */
#define NORM_BOUND 1e-5
#define EPS 1e-6f

static void rmsnorm_case(gc_ctx *c, const char *shape, int m, int rows, int n) {
    size_t elems = (size_t)rows * n;
    size_t sizes[3] = {elems * 4, elems * 4, (size_t)n * 4}; /* x, out, w: rotated together */
    gc_rot rot = gc_rot_make(c, sizes, 3);
    auto x = [&](int s) { return (float *)gc_rot_buf(&rot, s, 0); };
    auto out = [&](int s) { return (float *)gc_rot_buf(&rot, s, 1); };
    auto w = [&](int s) { return (float *)gc_rot_buf(&rot, s, 2); };
    for (int s = 0; s < rot.n_sets; s++) {
        gc_fill_f32(c, x(s), elems, -2.0f, 2.0f, 300 + s);
        gc_fill_f32(c, w(s), (size_t)n, -0.5f, 0.5f, 399 + 1000 * s);
    }
    float *xh = (float *)gc_hmalloc(elems * 4), *wh = (float *)gc_hmalloc((size_t)n * 4);
    float *ref = (float *)gc_hmalloc(elems * 4);
    gc_d2h(xh, x(0), elems * 4);
    gc_d2h(wh, w(0), (size_t)n * 4);
    twin_rmsnorm(ref, xh, wh, rows, n, EPS);
    int nv = 0;
    const kn_rmsnorm_version *vs = kn_rmsnorm_versions(&nv);
    for (int v = 0; v < nv; v++) {
        char note[96] = "";
        double err = INFINITY, us = NAN;
        gc_poison(out(0), elems * 4);
        cudaError_t e = vs[v].fn(out(0), x(0), w(0), rows, n, EPS, 0);
        if (e != cudaSuccess) {
            snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
        } else {
            gc_sync(vs[v].name);
            err = gc_compare_f32(out(0), ref, elems, note, sizeof note);
            if (gc_status_for(err, NORM_BOUND) == GC_OK)
                us = gc_time_us(c, [&](int it) {
                    int s = it % rot.n_sets;
                    return vs[v].fn(out(s), x(s), w(s), rows, n, EPS, 0);
                });
        }
        gc_record(c, "rmsnorm", vs[v].name, shape, m, err, NORM_BOUND, us, 8.0 * elems + 4.0 * n, 0.0, note);
    }
    gc_rot_free(&rot);
    free(xh), free(wh), free(ref);
}

static void gatednorm_case(gc_ctx *c, const char *shape, int m, int rows, int n) {
    size_t elems = (size_t)rows * n;
    size_t sizes[4] = {elems * 4, elems * 4, elems * 4, (size_t)n * 4}; /* x, z, out, w: rotated together */
    gc_rot rot = gc_rot_make(c, sizes, 4);
    auto x = [&](int s) { return (float *)gc_rot_buf(&rot, s, 0); };
    auto z = [&](int s) { return (float *)gc_rot_buf(&rot, s, 1); };
    auto out = [&](int s) { return (float *)gc_rot_buf(&rot, s, 2); };
    auto w = [&](int s) { return (float *)gc_rot_buf(&rot, s, 3); };
    for (int s = 0; s < rot.n_sets; s++) {
        gc_fill_f32(c, x(s), elems, -2.0f, 2.0f, 400 + s);
        gc_fill_f32(c, z(s), elems, -4.0f, 4.0f, 450 + 1000 * s);
        gc_fill_f32(c, w(s), (size_t)n, 0.5f, 1.5f, 499 + 1000 * s);
    }
    float *xh = (float *)gc_hmalloc(elems * 4), *zh = (float *)gc_hmalloc(elems * 4);
    float *wh = (float *)gc_hmalloc((size_t)n * 4), *ref = (float *)gc_hmalloc(elems * 4);
    gc_d2h(xh, x(0), elems * 4);
    gc_d2h(zh, z(0), elems * 4);
    gc_d2h(wh, w(0), (size_t)n * 4);
    twin_rmsnorm_gated(ref, xh, wh, zh, rows, n, EPS);
    int nv = 0;
    const kn_gatednorm_version *vs = kn_gatednorm_versions(&nv);
    for (int v = 0; v < nv; v++) {
        char note[96] = "";
        double err = INFINITY, us = NAN;
        gc_poison(out(0), elems * 4);
        cudaError_t e = vs[v].fn(out(0), x(0), w(0), z(0), rows, n, EPS, 0);
        if (e != cudaSuccess) {
            snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
        } else {
            gc_sync(vs[v].name);
            err = gc_compare_f32(out(0), ref, elems, note, sizeof note);
            if (gc_status_for(err, NORM_BOUND) == GC_OK)
                us = gc_time_us(c, [&](int it) {
                    int s = it % rot.n_sets;
                    return vs[v].fn(out(s), x(s), w(s), z(s), rows, n, EPS, 0);
                });
        }
        gc_record(c, "gatednorm", vs[v].name, shape, m, err, NORM_BOUND, us, 12.0 * elems + 4.0 * n, 0.0, note);
    }
    gc_rot_free(&rot);
    free(xh), free(zh), free(wh), free(ref);
}

static void swiglu_case(gc_ctx *c, const char *shape, int m, long n) {
    size_t sizes[3] = {(size_t)n * 4, (size_t)n * 4, (size_t)n * 4}; /* g, u, out: rotated together */
    gc_rot rot = gc_rot_make(c, sizes, 3);
    auto g = [&](int s) { return (float *)gc_rot_buf(&rot, s, 0); };
    auto u = [&](int s) { return (float *)gc_rot_buf(&rot, s, 1); };
    auto out = [&](int s) { return (float *)gc_rot_buf(&rot, s, 2); };
    for (int s = 0; s < rot.n_sets; s++) {
        gc_fill_f32(c, g(s), (size_t)n, -6.0f, 6.0f, 500 + s);
        gc_fill_f32(c, u(s), (size_t)n, -2.0f, 2.0f, 550 + 1000 * s);
    }
    float *gh = (float *)gc_hmalloc((size_t)n * 4), *uh = (float *)gc_hmalloc((size_t)n * 4);
    float *ref = (float *)gc_hmalloc((size_t)n * 4);
    gc_d2h(gh, g(0), (size_t)n * 4);
    gc_d2h(uh, u(0), (size_t)n * 4);
    twin_swiglu(ref, gh, uh, n);
    int nv = 0;
    const kn_swiglu_version *vs = kn_swiglu_versions(&nv);
    for (int v = 0; v < nv; v++) {
        char note[96] = "";
        double err = INFINITY, us = NAN;
        gc_poison(out(0), (size_t)n * 4);
        cudaError_t e = vs[v].fn(out(0), g(0), u(0), n, 0);
        if (e != cudaSuccess) {
            snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
        } else {
            gc_sync(vs[v].name);
            err = gc_compare_f32(out(0), ref, (size_t)n, note, sizeof note);
            if (gc_status_for(err, NORM_BOUND) == GC_OK)
                us = gc_time_us(c, [&](int it) {
                    int s = it % rot.n_sets;
                    return vs[v].fn(out(s), g(s), u(s), n, 0);
                });
        }
        gc_record(c, "swiglu", vs[v].name, shape, m, err, NORM_BOUND, us, 12.0 * n, 0.0, note);
    }
    gc_rot_free(&rot);
    free(gh), free(uh), free(ref);
}

void gc_family_norm(gc_ctx *c) {
    rmsnorm_case(c, "odd 3x1001", 3, 3, 1001);
    gatednorm_case(c, "odd 7x100", 7, 7, 100);
    swiglu_case(c, "odd 1003", 1, 1003);
    if (c->small) {
        gatednorm_case(c, GC_SHAPE_GATED_NORM, 1, GC27_HV, GC27_DV);
        return;
    }
    static const int ms[] = {1, 4};
    for (int i = 0; i < 2; i++) {
        int m = ms[i];
        rmsnorm_case(c, GC_SHAPE_HIDDEN, m, m, GC27_D);
        gatednorm_case(c, GC_SHAPE_GATED_NORM, m, m * GC27_HV, GC27_DV);
        swiglu_case(c, GC_SHAPE_SWIGLU, m, (long)m * GC27_F);
    }
}
