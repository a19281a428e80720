/* check_attention.cu — validates and times rope_kv and attention
 * (kn_attention.h) against twin_rope_kv / twin_attention, on a paged cache
 * whose block table is a random permutation (so the indirection is
 * exercised), for chains and for a branching tree mask. */
#include <string.h>

#include "dtype.h"
#include "gc.cuh"
#include "kn_attention.h"
#include "twin.h"

/* q_out is fp32: the norm's reduction order and CUDA's cosf/sinf (≤ 2 ulp
 * from glibc's) differ by ≈1e-7 relative; 1e-5 keeps a 100× margin and any
 * wrong angle, position or weight is O(1). The cache is bf16: the same
 * values rounded, identical except where an fp32 difference straddles a
 * rounding boundary (one bf16 ulp, 2⁻⁸, on a ~1e-5 fraction of entries), so
 * 2e-3 is far above that and far below a wrong slot or head (O(1)). */
#define ROPE_Q_BOUND 1e-5
#define ROPE_KV_BOUND 2e-3
/* fp32 softmax and sums in another order (online rescaling, split merge):
 * ≈1e-6 at a few thousand positions, and the reference's own sequential
 * float sums drift as √n·6e-8 (1e-5 at 32768). 1e-4 holds both; a position
 * wrongly masked or dropped is caught at the small tree cases, where it
 * moves the output by far more. */
#define ATT_BOUND 1e-4
#define THETA 1e7
#define EPS 1e-6f

typedef struct {
    const char *shape;
    int ctx, m, H, Hkv, Dh, R;
    int tree; /* 0: chain (NULL mask), 1: chain as an explicit mask, 2: branching tree */
} att_case;

/* A random permutation of n blocks as the block table. */
static void random_table(int *bt, int n, uint64_t seed) {
    for (int i = 0; i < n; i++) bt[i] = i;
    uint64_t x = seed | 1;
    for (int i = n - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int j = (int)(x % (uint64_t)(i + 1));
        int tmp = bt[i];
        bt[i] = bt[j], bt[j] = tmp;
    }
}

/* Ancestor-or-self masks of a random tree (tree = 2) or a chain (tree = 1). */
static void make_mask(uint64_t *mask, int m, int tree, uint64_t seed) {
    uint64_t x = seed | 1;
    for (int i = 0; i < m; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int parent = tree == 2 ? (int)(x % (uint64_t)(i + 1)) - 1 : i - 1; /* −1: hangs off the context */
        mask[i] = ((uint64_t)1 << i) | (parent >= 0 ? mask[parent] : 0);
    }
}

typedef struct {
    int n_blocks;
    size_t pool_elems;
    int *bt_host;
} pool_info;

static pool_info pool_for(int slots, int Hkv, int Dh, uint64_t seed) {
    pool_info p;
    p.n_blocks = (slots + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE + 3;
    p.pool_elems = (size_t)p.n_blocks * Hkv * KV_BLOCK_SIZE * Dh;
    p.bt_host = (int *)gc_hmalloc((size_t)p.n_blocks * sizeof(int));
    random_table(p.bt_host, p.n_blocks, seed);
    return p;
}

static void rope_case(gc_ctx *c, const att_case *ac) {
    int m = ac->m, H = ac->H, Hkv = ac->Hkv, Dh = ac->Dh, R = ac->R, slots = ac->ctx + m;
    pool_info pi = pool_for(slots, Hkv, Dh, c->seed ^ 0x51);
    size_t qg_n = (size_t)m * H * 2 * Dh, kv_n = (size_t)m * Hkv * Dh, q_n = (size_t)m * H * Dh;
    /* rotated inputs: q + gate, k, v and the two norm weights */
    size_t sizes[5] = {qg_n * 4, kv_n * 4, kv_n * 4, (size_t)Dh * 4, (size_t)Dh * 4};
    gc_rot rot = gc_rot_make(c, sizes, 5);
    auto in = [&](int s, int b) { return (float *)gc_rot_buf(&rot, s, b); };
    float *qg = in(0, 0), *k = in(0, 1), *v = in(0, 2), *qn = in(0, 3), *kn = in(0, 4);
    float *q_out = (float *)gc_dmalloc(q_n * 4);
    uint16_t *Kc = (uint16_t *)gc_dmalloc(pi.pool_elems * 2), *Vc = (uint16_t *)gc_dmalloc(pi.pool_elems * 2);
    int *bt = (int *)gc_dmalloc((size_t)pi.n_blocks * 4), *pos = (int *)gc_dmalloc((size_t)m * 4);
    int *slot = (int *)gc_dmalloc((size_t)m * 4);
    for (int s = 0; s < rot.n_sets; s++) {
        gc_fill_f32(c, in(s, 0), qg_n, -2.0f, 2.0f, 600 + 10 * s);
        gc_fill_f32(c, in(s, 1), kv_n, -2.0f, 2.0f, 601 + 10 * s);
        gc_fill_f32(c, in(s, 2), kv_n, -2.0f, 2.0f, 602 + 10 * s);
        gc_fill_f32(c, in(s, 3), (size_t)Dh, -0.5f, 0.5f, 603 + 10 * s);
        gc_fill_f32(c, in(s, 4), (size_t)Dh, -0.5f, 0.5f, 604 + 10 * s);
    }
    int *pos_h = (int *)gc_hmalloc((size_t)m * 4), *slot_h = (int *)gc_hmalloc((size_t)m * 4);
    for (int t = 0; t < m; t++) pos_h[t] = ac->ctx + 7919 * t % 100003, slot_h[t] = ac->ctx + t; /* large angles too */
    gc_h2d(bt, pi.bt_host, (size_t)pi.n_blocks * 4);
    gc_h2d(pos, pos_h, (size_t)m * 4);
    gc_h2d(slot, slot_h, (size_t)m * 4);

    float *qg_h = (float *)gc_hmalloc(qg_n * 4), *k_h = (float *)gc_hmalloc(kv_n * 4),
          *v_h = (float *)gc_hmalloc(kv_n * 4);
    float *qn_h = (float *)gc_hmalloc((size_t)Dh * 4), *kn_h = (float *)gc_hmalloc((size_t)Dh * 4);
    gc_d2h(qg_h, qg, qg_n * 4), gc_d2h(k_h, k, kv_n * 4), gc_d2h(v_h, v, kv_n * 4);
    gc_d2h(qn_h, qn, (size_t)Dh * 4), gc_d2h(kn_h, kn, (size_t)Dh * 4);
    float *q_ref = (float *)gc_hmalloc(q_n * 4);
    uint16_t *K_ref = (uint16_t *)gc_hmalloc(pi.pool_elems * 2), *V_ref = (uint16_t *)gc_hmalloc(pi.pool_elems * 2);
    memset(K_ref, 0xff, pi.pool_elems * 2), memset(V_ref, 0xff, pi.pool_elems * 2);
    twin_rope_kv(q_ref, K_ref, V_ref, pi.bt_host, qg_h, k_h, v_h, qn_h, kn_h, pos_h, slot_h, m, H, Hkv, Dh, R, THETA,
                 EPS);
    uint16_t *K_got = (uint16_t *)gc_hmalloc(pi.pool_elems * 2), *V_got = (uint16_t *)gc_hmalloc(pi.pool_elems * 2);
    float *kv_got = (float *)gc_hmalloc(2 * kv_n * 4), *kv_ref = (float *)gc_hmalloc(2 * kv_n * 4);

    int nv = 0;
    const kn_rope_kv_version *vs = kn_rope_kv_versions(&nv);
    for (int vi = 0; vi < nv; vi++) {
        char note[96] = "";
        double err = INFINITY, us = NAN;
        gc_poison(Kc, pi.pool_elems * 2), gc_poison(Vc, pi.pool_elems * 2), gc_poison(q_out, q_n * 4);
        cudaError_t e = vs[vi].fn(q_out, Kc, Vc, bt, qg, k, v, qn, kn, pos, slot, m, H, Hkv, Dh, R, THETA, EPS, 0);
        if (e != cudaSuccess) {
            snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
        } else {
            gc_sync(vs[vi].name);
            double err_q = gc_compare_f32(q_out, q_ref, q_n, note, sizeof note);
            gc_d2h(K_got, Kc, pi.pool_elems * 2), gc_d2h(V_got, Vc, pi.pool_elems * 2);
            size_t n_kv = 0, wrong_place = 0;
            for (size_t i = 0; i < pi.pool_elems; i++) {
                int want_k = K_ref[i] != 0xffff, got_k = K_got[i] != 0xffff;
                int want_v = V_ref[i] != 0xffff, got_v = V_got[i] != 0xffff;
                wrong_place += (want_k != got_k) + (want_v != got_v);
                if (want_k && got_k && want_v && got_v && n_kv < kv_n) {
                    kv_got[2 * n_kv] = bf16_to_f32(K_got[i]), kv_got[2 * n_kv + 1] = bf16_to_f32(V_got[i]);
                    kv_ref[2 * n_kv] = bf16_to_f32(K_ref[i]), kv_ref[2 * n_kv + 1] = bf16_to_f32(V_ref[i]);
                    n_kv++;
                }
            }
            err = gc_rel_error(kv_got, kv_ref, 2 * n_kv);
            if (wrong_place || n_kv != kv_n) {
                snprintf(note, sizeof note, "%zu cache entries written where they should not be or missing",
                         wrong_place);
                err = INFINITY;
            } else if (!(err_q <= ROPE_Q_BOUND)) {
                if (!note[0]) snprintf(note, sizeof note, "q_out error %.2e above %.0e", err_q, ROPE_Q_BOUND);
                err = INFINITY;
            }
            if (gc_status_for(err, ROPE_KV_BOUND) == GC_OK)
                us = gc_time_us(c, [&](int it) {
                    int s = it % rot.n_sets;
                    return vs[vi].fn(q_out, Kc, Vc, bt, in(s, 0), in(s, 1), in(s, 2), in(s, 3), in(s, 4), pos, slot, m,
                                     H, Hkv, Dh, R, THETA, EPS, 0);
                });
        }
        double bytes = 4.0 * m * H * Dh * 2 + 4.0 * kv_n * 2 + 2.0 * kv_n * 2 + 8.0 * Dh;
        gc_record(c, "rope_kv", vs[vi].name, ac->shape, m, err, ROPE_KV_BOUND, us, bytes, 0.0, note);
    }
    gc_rot_free(&rot);
    gc_dfree(q_out), gc_dfree(Kc), gc_dfree(Vc);
    gc_dfree(bt), gc_dfree(pos), gc_dfree(slot);
    free(pi.bt_host), free(pos_h), free(slot_h), free(qg_h), free(k_h), free(v_h), free(qn_h), free(kn_h);
    free(q_ref), free(K_ref), free(V_ref), free(K_got), free(V_got), free(kv_got), free(kv_ref);
}

static void attention_case(gc_ctx *c, const att_case *ac) {
    int m = ac->m, H = ac->H, Hkv = ac->Hkv, Dh = ac->Dh, ctx = ac->ctx, slots = ctx + m;
    pool_info pi = pool_for(slots, Hkv, Dh, c->seed ^ 0xa7);
    size_t q_n = (size_t)m * H * Dh, qg_n = 2 * q_n;
    /* rotated: the K and V pools (the bulk) and the queries */
    size_t sizes[4] = {pi.pool_elems * 2, pi.pool_elems * 2, q_n * 4, qg_n * 4};
    gc_rot rot = gc_rot_make(c, sizes, 4);
    auto Kc = [&](int s) { return (uint16_t *)gc_rot_buf(&rot, s, 0); };
    auto Vc = [&](int s) { return (uint16_t *)gc_rot_buf(&rot, s, 1); };
    auto q = [&](int s) { return (float *)gc_rot_buf(&rot, s, 2); };
    auto qg = [&](int s) { return (float *)gc_rot_buf(&rot, s, 3); };
    /* queries of a few units make the softmax peaked enough that every
     * position's weight matters at small contexts */
    for (int s = 0; s < rot.n_sets; s++) {
        gc_fill_bf16(c, Kc(s), pi.pool_elems, -1.0f, 1.0f, 700 + s);
        gc_fill_bf16(c, Vc(s), pi.pool_elems, -1.0f, 1.0f, 720 + 1000 * s);
        gc_fill_f32(c, q(s), q_n, -3.0f, 3.0f, 740 + 1000 * s);
        gc_fill_f32(c, qg(s), qg_n, -3.0f, 3.0f, 741 + 1000 * s);
    }
    float *out = (float *)gc_dmalloc(q_n * 4);
    int *bt = (int *)gc_dmalloc((size_t)pi.n_blocks * 4);
    gc_h2d(bt, pi.bt_host, (size_t)pi.n_blocks * 4);
    uint64_t *mask_h = NULL, *mask = NULL;
    if (ac->tree) {
        mask_h = (uint64_t *)gc_hmalloc((size_t)m * 8);
        make_mask(mask_h, m, ac->tree, c->seed ^ 0x7ee);
        mask = (uint64_t *)gc_dmalloc((size_t)m * 8);
        gc_h2d(mask, mask_h, (size_t)m * 8);
    }
    size_t work_n = kn_attention_work_floats(ctx, m, H, Hkv, Dh);
    float *work = (float *)gc_dmalloc(work_n * 4);
    float scale = 1.0f / sqrtf((float)Dh);

    uint16_t *K_h = (uint16_t *)gc_hmalloc(pi.pool_elems * 2), *V_h = (uint16_t *)gc_hmalloc(pi.pool_elems * 2);
    float *q_h = (float *)gc_hmalloc(q_n * 4), *qg_h = (float *)gc_hmalloc(qg_n * 4),
          *ref = (float *)gc_hmalloc(q_n * 4);
    gc_d2h(K_h, Kc(0), pi.pool_elems * 2), gc_d2h(V_h, Vc(0), pi.pool_elems * 2);
    gc_d2h(q_h, q(0), q_n * 4), gc_d2h(qg_h, qg(0), qg_n * 4);
    twin_attention(ref, q_h, qg_h, K_h, V_h, pi.bt_host, ctx, m, mask_h, H, Hkv, Dh, scale);

    int nv = 0;
    const kn_attention_version *vs = kn_attention_versions(&nv);
    for (int vi = 0; vi < nv; vi++) {
        char note[96] = "";
        double err = INFINITY, us = NAN;
        gc_poison(out, q_n * 4);
        cudaError_t e = vs[vi].fn(out, q(0), qg(0), Kc(0), Vc(0), bt, ctx, m, mask, H, Hkv, Dh, scale, work, work_n, 0);
        if (e != cudaSuccess) {
            snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
        } else {
            gc_sync(vs[vi].name);
            err = gc_compare_f32(out, ref, q_n, note, sizeof note);
            if (gc_status_for(err, ATT_BOUND) == GC_OK)
                us = gc_time_us(c, [&](int it) {
                    int s = it % rot.n_sets;
                    return vs[vi].fn(out, q(s), qg(s), Kc(s), Vc(s), bt, ctx, m, mask, H, Hkv, Dh, scale, work, work_n,
                                     0);
                });
        }
        double bytes = 2.0 * 2.0 * slots * Hkv * Dh + 3.0 * 4.0 * q_n;
        double flops = 4.0 * m * H * (double)slots * Dh;
        gc_record(c, "attention", vs[vi].name, ac->shape, m, err, ATT_BOUND, us, bytes, flops, note);
    }
    gc_rot_free(&rot);
    gc_dfree(out), gc_dfree(bt), gc_dfree(work);
    if (mask) gc_dfree(mask);
    free(mask_h), free(pi.bt_host), free(K_h), free(V_h), free(q_h), free(qg_h), free(ref);
}

#define HD GC27_H, GC27_HKV, GC27_DH, GC27_R

void gc_family_rope_kv(gc_ctx *c) {
    static const att_case odd[] = {
        {"odd 3 tokens 5q+1kv x64 R=16", 37, 3, 5, 1, 64, 16, 0},
        {"odd 24q+4kv x256 R=64 m=5", 20, 5, HD, 0},
    };
    for (int i = 0; i < 2; i++) rope_case(c, &odd[i]);
    if (c->small) return;
    static const att_case real[] = {
        {GC_SHAPE_QK_NORM_ROPE, 4096, 1, HD, 0},
        {GC_SHAPE_QK_NORM_ROPE, 4096, 4, HD, 0},
    };
    for (int i = 0; i < 2; i++) rope_case(c, &real[i]);
}

void gc_family_attention(gc_ctx *c) {
    static const att_case odd[] = {
        {"odd ctx37 chain 24/4x256", 37, 1, HD, 0},
        {"odd ctx20 tree5 24/4x256", 20, 5, HD, 2},
        {"odd ctx0 chain3 mask", 0, 3, HD, 1},
        {"odd ctx50 tree9 4/2x64", 50, 9, 4, 2, 64, 16, 2},
        {"odd ctx19 chain2 3/1x96", 19, 2, 3, 1, 96, 16, 0},
        /* long enough for v3 to split even on the emulator's 4 SMs */
        {"odd ctx300 chain 24/4x256", 300, 1, HD, 0},
        {"odd ctx200 tree3 6/1x128", 200, 3, 6, 1, 128, 16, 2},
    };
    for (int i = 0; i < 7; i++) attention_case(c, &odd[i]);
    if (c->small) return;
    static const att_case real[] = {
        {"ctx 4096", GC_CTX_SHORT, 1, HD, 0},         {"ctx 4096", GC_CTX_SHORT, 4, HD, 1},
        {"ctx 32768", GC_CTX_LONG, 1, HD, 0},         {"ctx 32768", GC_CTX_LONG, 4, HD, 1},
        {"ctx 4096 tree16", GC_CTX_SHORT, 16, HD, 2},
    };
    for (int i = 0; i < 5; i++) attention_case(c, &real[i]);
}
