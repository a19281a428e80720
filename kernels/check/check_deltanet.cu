/* check_deltanet.cu — validates and times the DeltaNet conv step and gated delta rule (kn_deltanet.h) against
 * twin_conv_step / twin_delta_step for chains and branching trees, outputs and every written state slot; and each
 * version's slot-table form bit for bit against its contiguous form. */
#include <string.h>

#include "gc.cuh"
#include "kn_deltanet.h"
#include "twin.h"

/* conv: the same products summed in the same order; only CUDA's expf in
 * silu differs (≤ 2 ulp), so 1e-5 is a 100× margin. delta: fp32 sums of
 * Dk = 128 products in another order, plus the l2 norms and exp/log1p of
 * the gates, ≈1e-6 per step; 1e-4 holds that with margin, while a wrong
 * parent state, head mapping or gate is O(1) (states of different nodes
 * differ by the O(1) update k·uᵀ). */
#define CONV_BOUND 1e-5
#define DELTA_BOUND 1e-4

/* parent[m] of a random tree (tree) or a chain written out (not tree). */
static void make_parents(int *parent, int m, int tree, uint64_t seed) {
    uint64_t x = seed | 1;
    for (int t = 0; t < m; t++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        parent[t] = tree ? (int)(x % (uint64_t)(t + 1)) - 1 : t - 1;
    }
}

static double max2(double a, double b) { return (a > b || isnan(a)) ? a : b; }

/* Floats of dev[n] (device) whose bits differ from want[n] (host). */
static size_t bits_differ(const float *dev, const float *want, size_t n) {
    float *got = (float *)gc_hmalloc(n * 4);
    gc_d2h(got, dev, n * 4);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += memcmp(&got[i], &want[i], 4) != 0;
    free(got);
    return bad;
}

/* The slot-table form (kn_deltanet.h) of a call whose contiguous result — out[n_out], slots[m, per_node] — was
 * just validated, in the engine's two layouts: a chain consumed in place (every node in slot 0, which is also
 * state0 and starts as the committed state: a prefill), and a tree whose nodes sit in slots in reverse order,
 * padded apart as the engine's slots are by the other layers' states. run(out, slots, slot_of, stride, state0)
 * launches the version. Returns the floats whose bits differ from the contiguous call's (INFINITY when the launch
 * fails): the table changes where states go, never what they are. */
template <class Run>
static double table_mismatches(Run run, const float *out, const float *slots, const float *state0, size_t n_out,
                               size_t per_node, int m, int tree) {
    const size_t stride = per_node + 5;
    const int n_slots = tree ? m + 1 : 1;
    float *table_slots = (float *)gc_dmalloc(stride * n_slots * 4), *table_out = (float *)gc_dmalloc(n_out * 4);
    int *slot_of_h = (int *)gc_hmalloc((size_t)m * 4), *slot_of = (int *)gc_dmalloc((size_t)m * 4);
    for (int t = 0; t < m; t++) slot_of_h[t] = tree ? m - t : 0;
    gc_h2d(slot_of, slot_of_h, (size_t)m * 4);
    const float *from = state0;
    if (!tree) { /* in place: slot 0 holds the committed state, and every node reads and writes it */
        gc_d2d(table_slots, state0, per_node * 4);
        from = table_slots;
    }
    float *out_h = (float *)gc_hmalloc(n_out * 4), *slots_h = (float *)gc_hmalloc((size_t)m * per_node * 4);
    gc_d2h(out_h, out, n_out * 4), gc_d2h(slots_h, slots, (size_t)m * per_node * 4);
    double bad = INFINITY;
    if (run(table_out, table_slots, slot_of, stride, from) == cudaSuccess) {
        gc_sync("slot table");
        bad = (double)bits_differ(table_out, out_h, n_out);
        for (int t = 0; t < m; t++)
            if (tree || t == m - 1) /* in place, the slot ends with the last node's state */
                bad += (double)bits_differ(table_slots + (size_t)slot_of_h[t] * stride, slots_h + (size_t)t * per_node,
                                           per_node);
    }
    gc_dfree(table_slots), gc_dfree(table_out), gc_dfree(slot_of);
    free(slot_of_h), free(out_h), free(slots_h);
    return bad;
}

static void conv_case(gc_ctx *c, const char *shape, int m, int C, int K, int tree) {
    size_t st_n = (size_t)C * (K - 1), x_n = (size_t)m * C;
    /* rotated: the input, the committed state and the weights (all read from HBM in a decode step) */
    size_t sizes[5] = {x_n * 4, st_n * 4, (size_t)C * K * 4, x_n * 4, st_n * m * 4}; /* + out, slots */
    gc_rot rot = gc_rot_make(c, sizes, 5);
    auto X = [&](int s) { return (float *)gc_rot_buf(&rot, s, 0); };
    auto ST0 = [&](int s) { return (float *)gc_rot_buf(&rot, s, 1); };
    auto Wc = [&](int s) { return (float *)gc_rot_buf(&rot, s, 2); };
    for (int s = 0; s < rot.n_sets; s++) {
        gc_fill_f32(c, X(s), x_n, -2.0f, 2.0f, 800 + s);
        gc_fill_f32(c, ST0(s), st_n, -2.0f, 2.0f, 820 + s);
        gc_fill_f32(c, Wc(s), (size_t)C * K, -1.0f, 1.0f, 840 + s);
    }
    /* the outputs rotate too (a tree's nodes read the slots the call wrote) */
    float *out = (float *)gc_rot_buf(&rot, 0, 3), *slots = (float *)gc_rot_buf(&rot, 0, 4);
    int *parent_h = NULL, *parent = NULL;
    if (tree) {
        parent_h = (int *)gc_hmalloc((size_t)m * 4);
        make_parents(parent_h, m, 1, c->seed ^ 0xc0);
        parent = (int *)gc_dmalloc((size_t)m * 4);
        gc_h2d(parent, parent_h, (size_t)m * 4);
    }
    float *x_h = (float *)gc_hmalloc(x_n * 4), *st_h = (float *)gc_hmalloc(st_n * 4);
    float *w_h = (float *)gc_hmalloc((size_t)C * K * 4);
    gc_d2h(x_h, X(0), x_n * 4), gc_d2h(st_h, ST0(0), st_n * 4), gc_d2h(w_h, Wc(0), (size_t)C * K * 4);
    float *out_ref = (float *)gc_hmalloc(x_n * 4), *slots_ref = (float *)gc_hmalloc(st_n * m * 4);
    twin_conv_step(out_ref, slots_ref, st_h, x_h, w_h, parent_h, m, C, K);
    int nv = 0;
    const kn_conv_version *vs = kn_conv_versions(&nv);
    for (int vi = 0; vi < nv; vi++) {
        char note[96] = "";
        double err = INFINITY, us = NAN;
        gc_poison(out, x_n * 4), gc_poison(slots, st_n * m * 4);
        cudaError_t e = vs[vi].fn(out, slots, NULL, 0, ST0(0), X(0), Wc(0), parent, m, C, K, 0);
        if (e != cudaSuccess) {
            snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
        } else {
            gc_sync(vs[vi].name);
            err = max2(gc_compare_f32(out, out_ref, x_n, note, sizeof note),
                       gc_compare_f32(slots, slots_ref, st_n * m, note, sizeof note));
            if (gc_status_for(err, CONV_BOUND) == GC_OK)
                us = gc_time_us(c, [&](int it) {
                    int s = it % rot.n_sets;
                    return vs[vi].fn((float *)gc_rot_buf(&rot, s, 3), (float *)gc_rot_buf(&rot, s, 4), NULL, 0, ST0(s),
                                     X(s), Wc(s), parent, m, C, K, 0);
                });
        }
        double bytes = 4.0 * (st_n + 2.0 * x_n + (double)C * K + st_n * m);
        gc_record(c, "conv", vs[vi].name, shape, m, err, CONV_BOUND, us, bytes, 0.0, note);
        if (gc_status_for(err, CONV_BOUND) != GC_OK) continue;
        const double bad = table_mismatches(
            [&](float *o, float *sl, const int *slot_of, size_t stride, const float *from) {
                return vs[vi].fn(o, sl, slot_of, stride, from, X(0), Wc(0), parent, m, C, K, 0);
            },
            out, slots, ST0(0), x_n, st_n, m, tree);
        char table_version[32]; /* the version's slot-table form: validated, not timed */
        snprintf(table_version, sizeof table_version, "%s table", vs[vi].name);
        gc_record(c, "conv", table_version, shape, m, bad, 0.0, NAN, 0.0, 0.0,
                  bad == 0 ? "" : "bits differ from the contiguous call");
    }
    gc_rot_free(&rot);
    if (parent) gc_dfree(parent);
    free(parent_h), free(x_h), free(st_h), free(w_h), free(out_ref), free(slots_ref);
}

typedef struct {
    float *S0, *q, *k, *v, *a, *b, *A_log, *dt_bias;
    float *out, *slots; /* outputs, rotated with the inputs */
} delta_in;

static void delta_case(gc_ctx *c, const char *shape, int m, int Hk, int Hv, int Dk, int Dv, int tree) {
    size_t st_n = (size_t)Hv * Dk * Dv, qk_n = (size_t)m * Hk * Dk, v_n = (size_t)m * Hv * Dv, ab_n = (size_t)m * Hv;
    /* rotated: the committed state S0 (the bulk: 3 MB at the 27B shape), the
     * step's inputs and the gate parameters, so every timed call reads them
     * from HBM, and the outputs and state slots it writes (a tree's nodes
     * read their parents' slots back) */
    const size_t gates = 2 * ab_n + 2 * (size_t)Hv; /* a, b, A_log, dt_bias packed in one buffer */
    size_t sizes[7] = {st_n * 4, qk_n * 4, qk_n * 4, v_n * 4, gates * 4, v_n * 4, st_n * m * 4}; /* …, out, slots */
    gc_rot rot = gc_rot_make(c, sizes, 7);
    auto in = [&](int s) {
        delta_in d;
        d.S0 = (float *)gc_rot_buf(&rot, s, 0), d.q = (float *)gc_rot_buf(&rot, s, 1);
        d.k = (float *)gc_rot_buf(&rot, s, 2), d.v = (float *)gc_rot_buf(&rot, s, 3);
        d.a = (float *)gc_rot_buf(&rot, s, 4), d.b = d.a + ab_n, d.A_log = d.b + ab_n, d.dt_bias = d.A_log + Hv;
        d.out = (float *)gc_rot_buf(&rot, s, 5), d.slots = (float *)gc_rot_buf(&rot, s, 6);
        return d;
    };
    for (int s = 0; s < rot.n_sets; s++) {
        delta_in d = in(s);
        gc_fill_f32(c, d.S0, st_n, -0.5f, 0.5f, 900 + 10 * s);
        gc_fill_f32(c, d.q, qk_n, -1.0f, 1.0f, 901 + 10 * s);
        gc_fill_f32(c, d.k, qk_n, -1.0f, 1.0f, 902 + 10 * s);
        gc_fill_f32(c, d.v, v_n, -1.0f, 1.0f, 903 + 10 * s);
        gc_fill_f32(c, d.a, ab_n, -2.0f, 2.0f, 904 + 10 * s);
        gc_fill_f32(c, d.b, ab_n, -3.0f, 3.0f, 905 + 10 * s);
        gc_fill_f32(c, d.A_log, (size_t)Hv, -1.0f, 1.0f, 906 + 10 * s);
        gc_fill_f32(c, d.dt_bias, (size_t)Hv, -1.0f, 1.0f, 907 + 10 * s);
    }
    float *out = in(0).out, *slots = in(0).slots;
    int *parent_h = NULL, *parent = NULL;
    if (tree) {
        parent_h = (int *)gc_hmalloc((size_t)m * 4);
        make_parents(parent_h, m, 1, c->seed ^ 0xde);
        parent = (int *)gc_dmalloc((size_t)m * 4);
        gc_h2d(parent, parent_h, (size_t)m * 4);
    }
    float *S0_h = (float *)gc_hmalloc(st_n * 4), *q_h = (float *)gc_hmalloc(qk_n * 4),
          *k_h = (float *)gc_hmalloc(qk_n * 4);
    float *v_h = (float *)gc_hmalloc(v_n * 4), *a_h = (float *)gc_hmalloc(ab_n * 4),
          *b_h = (float *)gc_hmalloc(ab_n * 4);
    float *Al_h = (float *)gc_hmalloc((size_t)Hv * 4), *dt_h = (float *)gc_hmalloc((size_t)Hv * 4);
    const delta_in d0 = in(0);
    gc_d2h(S0_h, d0.S0, st_n * 4), gc_d2h(q_h, d0.q, qk_n * 4), gc_d2h(k_h, d0.k, qk_n * 4);
    gc_d2h(v_h, d0.v, v_n * 4), gc_d2h(a_h, d0.a, ab_n * 4), gc_d2h(b_h, d0.b, ab_n * 4);
    gc_d2h(Al_h, d0.A_log, (size_t)Hv * 4), gc_d2h(dt_h, d0.dt_bias, (size_t)Hv * 4);
    float *out_ref = (float *)gc_hmalloc(v_n * 4), *slots_ref = (float *)gc_hmalloc(st_n * m * 4);
    twin_delta_step(out_ref, slots_ref, S0_h, q_h, k_h, v_h, a_h, b_h, Al_h, dt_h, parent_h, m, Hk, Hv, Dk, Dv);
    int nv = 0;
    const kn_delta_version *vs = kn_delta_versions(&nv);
    for (int vi = 0; vi < nv; vi++) {
        char note[96] = "";
        double err = INFINITY, us = NAN;
        gc_poison(out, v_n * 4), gc_poison(slots, st_n * m * 4);
        cudaError_t e = vs[vi].fn(out, slots, NULL, 0, d0.S0, d0.q, d0.k, d0.v, d0.a, d0.b, d0.A_log, d0.dt_bias,
                                  parent, m, Hk, Hv, Dk, Dv, 0);
        if (e != cudaSuccess) {
            snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
        } else {
            gc_sync(vs[vi].name);
            err = max2(gc_compare_f32(out, out_ref, v_n, note, sizeof note),
                       gc_compare_f32(slots, slots_ref, st_n * m, note, sizeof note));
            if (gc_status_for(err, DELTA_BOUND) == GC_OK)
                us = gc_time_us(c, [&](int it) {
                    const delta_in r = in(it % rot.n_sets);
                    return vs[vi].fn(r.out, r.slots, NULL, 0, r.S0, r.q, r.k, r.v, r.a, r.b, r.A_log, r.dt_bias, parent,
                                     m, Hk, Hv, Dk, Dv, 0);
                });
        }
        double bytes = 4.0 * (st_n * (1.0 + m) + 2.0 * qk_n + 2.0 * v_n + 2.0 * ab_n + 2.0 * Hv);
        double flops = 6.0 * m * (double)st_n;
        gc_record(c, "deltanet", vs[vi].name, shape, m, err, DELTA_BOUND, us, bytes, flops, note);
        if (gc_status_for(err, DELTA_BOUND) != GC_OK) continue;
        const double bad = table_mismatches(
            [&](float *o, float *sl, const int *slot_of, size_t stride, const float *from) {
                return vs[vi].fn(o, sl, slot_of, stride, from, d0.q, d0.k, d0.v, d0.a, d0.b, d0.A_log, d0.dt_bias,
                                 parent, m, Hk, Hv, Dk, Dv, 0);
            },
            out, slots, d0.S0, v_n, st_n, m, tree);
        char table_version[32]; /* the version's slot-table form: validated, not timed */
        snprintf(table_version, sizeof table_version, "%s table", vs[vi].name);
        gc_record(c, "deltanet", table_version, shape, m, bad, 0.0, NAN, 0.0, 0.0,
                  bad == 0 ? "" : "bits differ from the contiguous call");
    }
    gc_rot_free(&rot);
    if (parent) gc_dfree(parent);
    free(parent_h), free(S0_h), free(q_h), free(k_h), free(v_h), free(a_h), free(b_h), free(Al_h), free(dt_h);
    free(out_ref), free(slots_ref);
}

void gc_family_deltanet(gc_ctx *c) {
    conv_case(c, "odd C=1001 K=4 chain", 3, 1001, 4, 0);
    conv_case(c, "odd C=77 K=3 tree", 6, 77, 3, 1);
    conv_case(c, "odd C=300 K=4 tree", 7, 300, 4, 1);
    delta_case(c, "odd 2/6 heads 128x128 tree", 5, 2, 6, 128, 128, 1);
    delta_case(c, "odd 3/3 heads 64x40 chain", 3, 3, 3, 64, 40, 0);
    delta_case(c, "odd 1/2 heads 50x33 tree", 4, 1, 2, 50, 33, 1);
    delta_case(c, "odd 1/1 heads 160x32 chain", 2, 1, 1, 160, 32, 0); /* Dk > 128: v2 falls back */
    if (c->small) return;
    static const int ms[] = {1, 4};
    for (int i = 0; i < 2; i++) {
        conv_case(c, GC_SHAPE_CONV, ms[i], GC27_C, GC27_K, 0);
        delta_case(c, GC_SHAPE_DELTA, ms[i], GC27_HK, GC27_HV, GC27_DK, GC27_DV, 0);
    }
    conv_case(c, "C=10240 K=4 tree", 16, GC27_C, GC27_K, 1);
    delta_case(c, "48 heads 128x128 tree", 16, GC27_HK, GC27_HV, GC27_DK, GC27_DV, 1);
}
