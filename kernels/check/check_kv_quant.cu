/* check_kv_quant.cu — validates and times the quantised KV cache's kernels (kn_kv_quant.h) against the CPU's own
 * row format (optimized/kv_quant.c): kn_rope_kv_quant's rows byte for byte kv_row_store's, and kn_attention_quant
 * against an attention in double over the rows read back by kv_row_load, on a paged cache whose block table is a
 * random permutation; each comparison with its control. */
#include <string.h>

#include "gc.cuh"
#include "kn_attention.h"
#include "kn_kv_quant.h"

extern "C" {
#include "kv_quant.h"
}

#define THETA 1e7
#define EPS 1e-6f
/* The attention reads the same rows as the reference and differs only by fp32 sums in its order against sums in
 * double: ≈1e-6 at these contexts (the bf16 family's argument, check_attention.cu, holds 1e-4). A row read back at
 * a wrong scale (s·127/128: every element 0.8 % small) or an output not rotated back moves it by ≥ 1e-3. */
#define KVQ_ATT_BOUND 1e-4

typedef struct {
    const char *shape;
    int ctx, m, H, Hkv, Dh, R;
    int tree; /* 0: chain (NULL mask), 2: a branching tree */
} kvq_case;

static kv_format format_of(int bits) { return bits == 8 ? KV_Q8 : KV_Q4; }

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

/* Row index of (slot s, KV head h): kn_paged_offset with one element a row. */
static size_t row_of(const int *bt, int s, int h, int Hkv) { return kn_paged_offset(bt, s, h, 0, Hkv, 1); }

/* The write. The device's float key is not an output, so the case makes it one: query head j < Hkv reads key
 * head j's input and q_norm is k_norm, so q_out[t, j] is, bit for bit, the float the kernel quantised into key row
 * (slot[t], j) (the same code on the same inputs). Its row must be kv_row_store(q_out[t, j]); the value's row
 * kv_row_store(v) (q8) or kv_row_store(kvq_rotate(v)) (q4), which also proves the device's rotation the CPU's; and
 * q_out itself the bf16 family's q_out (q8) or kvq_rotate of it (q4), bit for bit. Rows not written stay poison. */
static void rope_case(gc_ctx *c, const kvq_case *kc, int bits) {
    const int m = kc->m, H = kc->H, Hkv = kc->Hkv, Dh = kc->Dh, R = kc->R;
    const kv_format f = format_of(bits);
    const size_t rb = kn_kvq_row_bytes(bits, Dh);
    const int n_blocks = (kc->ctx + m + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE + 3;
    const size_t rows = (size_t)n_blocks * Hkv * KV_BLOCK_SIZE, pool = rows * rb;
    const size_t qg_n = (size_t)m * H * 2 * Dh, kv_n = (size_t)m * Hkv * Dh, q_n = (size_t)m * H * Dh;
    int *bt_h = (int *)gc_hmalloc((size_t)n_blocks * 4), *pos_h = (int *)gc_hmalloc((size_t)m * 4);
    int *slot_h = (int *)gc_hmalloc((size_t)m * 4);
    random_table(bt_h, n_blocks, c->seed ^ 0x9a);
    for (int t = 0; t < m; t++) pos_h[t] = kc->ctx + 7919 * t % 100003, slot_h[t] = kc->ctx + t;
    float *qg = (float *)gc_dmalloc(qg_n * 4), *k = (float *)gc_dmalloc(kv_n * 4), *v = (float *)gc_dmalloc(kv_n * 4);
    float *nw = (float *)gc_dmalloc((size_t)Dh * 4), *q_out = (float *)gc_dmalloc(q_n * 4);
    float *q_bf16 = (float *)gc_dmalloc(q_n * 4);
    gc_fill_f32(c, qg, qg_n, -2.0f, 2.0f, 900);
    gc_fill_f32(c, k, kv_n, -2.0f, 2.0f, 901);
    gc_fill_f32(c, v, kv_n, -2.0f, 2.0f, 902);
    gc_fill_f32(c, nw, (size_t)Dh, -0.5f, 0.5f, 903);
    for (int t = 0; t < m; t++) /* query head j < Hkv reads key head j */
        for (int j = 0; j < Hkv; j++) gc_d2d(qg + ((size_t)t * H + j) * 2 * Dh, k + ((size_t)t * Hkv + j) * Dh, Dh * 4);
    unsigned char *Kc = (unsigned char *)gc_dmalloc(pool), *Vc = (unsigned char *)gc_dmalloc(pool);
    uint16_t *K16 = (uint16_t *)gc_dmalloc(rows * Dh * 2), *V16 = (uint16_t *)gc_dmalloc(rows * Dh * 2);
    int *bt = (int *)gc_dmalloc((size_t)n_blocks * 4), *pos = (int *)gc_dmalloc((size_t)m * 4);
    int *slot = (int *)gc_dmalloc((size_t)m * 4);
    gc_h2d(bt, bt_h, (size_t)n_blocks * 4), gc_h2d(pos, pos_h, (size_t)m * 4), gc_h2d(slot, slot_h, (size_t)m * 4);

    char note[160] = "";
    double err = INFINITY, us = NAN;
    gc_poison(Kc, pool), gc_poison(Vc, pool), gc_poison(q_out, q_n * 4);
    cudaError_t e =
        kn_rope_kv_quant(q_out, Kc, Vc, bt, qg, k, v, nw, nw, pos, slot, m, H, Hkv, Dh, R, THETA, EPS, bits, 0);
    int nv = 0;
    const kn_rope_kv_version *vs = kn_rope_kv_versions(&nv);
    if (e == cudaSuccess) /* the engine's bf16 write (its newest version): the unrotated query */
        e = vs[nv - 1].fn(q_bf16, K16, V16, bt, qg, k, v, nw, nw, pos, slot, m, H, Hkv, Dh, R, THETA, EPS, 0);
    unsigned char *Kh = (unsigned char *)gc_hmalloc(pool), *Vh = (unsigned char *)gc_hmalloc(pool);
    unsigned char *want = (unsigned char *)gc_hmalloc(rb), *wrong = (unsigned char *)gc_hmalloc(rb);
    float *qh = (float *)gc_hmalloc(q_n * 4), *qb = (float *)gc_hmalloc(q_n * 4), *vh = (float *)gc_hmalloc(kv_n * 4);
    size_t differ = 0, compared = 0, stray = 0, q_differ = 0, control_differ = 0;
    if (e != cudaSuccess) {
        snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
    } else {
        gc_sync("rope_kv_quant");
        gc_d2h(Kh, Kc, pool), gc_d2h(Vh, Vc, pool), gc_d2h(qh, q_out, q_n * 4), gc_d2h(qb, q_bf16, q_n * 4);
        gc_d2h(vh, v, kv_n * 4);
        for (size_t i = 0; i < q_n; i += Dh) { /* the query: the bf16 write's, rotated for q4 */
            if (kv_format_rotates(f)) kvq_rotate(qb + i, Dh);
            q_differ += memcmp(qh + i, qb + i, (size_t)Dh * 4) != 0;
        }
        char *written = (char *)gc_hmalloc(rows);
        for (int t = 0; t < m; t++)
            for (int j = 0; j < Hkv; j++) {
                const size_t r = row_of(bt_h, slot_h[t], j, Hkv);
                written[r] = 1;
                kv_row_store(f, want, qh + ((size_t)t * H + j) * Dh, Dh);
                for (size_t b = 0; b < rb; b++) differ += Kh[r * rb + b] != want[b];
                /* the control: the same row with its scales max/128 (q8) or max/8 (q4), codes kept */
                memcpy(wrong, want, rb);
                for (int b = 0; b < Dh / 32; b++) ((float *)wrong)[b] *= bits == 8 ? 127.0f / 128.0f : 7.0f / 8.0f;
                for (size_t b = 0; b < rb; b++) control_differ += Kh[r * rb + b] != wrong[b];
                float *x = vh + ((size_t)t * Hkv + j) * Dh;
                if (kv_format_rotates(f)) kvq_rotate(x, Dh);
                kv_row_store(f, want, x, Dh);
                for (size_t b = 0; b < rb; b++) differ += Vh[r * rb + b] != want[b];
                compared += 2 * rb;
            }
        for (size_t r = 0; r < rows; r++)
            for (size_t b = 0; b < rb && !written[r]; b++) stray += Kh[r * rb + b] != 0xff || Vh[r * rb + b] != 0xff;
        free(written);
        err = compared ? (double)differ / (double)compared : INFINITY;
        if (stray || q_differ) {
            snprintf(note, sizeof note,
                     "%zu bytes written outside the slots' rows, %zu query heads not as the bf16 "
                     "write's%s",
                     stray, q_differ, bits == 4 ? " rotated" : "");
            err = INFINITY;
        } else {
            snprintf(note, sizeof note, "%zu of %zu row bytes differ from kv_row_store's", differ, compared);
        }
        if (gc_status_for(err, 0.0) == GC_OK)
            us = gc_time_us(c, [&](int) {
                return kn_rope_kv_quant(q_out, Kc, Vc, bt, qg, k, v, nw, nw, pos, slot, m, H, Hkv, Dh, R, THETA, EPS,
                                        bits, 0);
            });
    }
    const char *version = bits == 8 ? "q8" : "q4";
    const double bytes = 4.0 * m * H * Dh * 2 + 4.0 * kv_n * 2 + 2.0 * m * Hkv * rb + 8.0 * Dh;
    gc_record(c, "rope_kv_quant", version, kc->shape, m, err, 0.0, us, bytes, 0.0, note);
    snprintf(note, sizeof note, "control: scales max/%d: %zu key bytes differ (must be > 0)", bits == 8 ? 128 : 8,
             control_differ);
    gc_record(c, "rope_kv_quant", "control", kc->shape, m, control_differ > 0 ? 0.0 : INFINITY, 0.0, NAN, 0.0, 0.0,
              note);
    gc_dfree(qg), gc_dfree(k), gc_dfree(v), gc_dfree(nw), gc_dfree(q_out), gc_dfree(q_bf16), gc_dfree(Kc);
    gc_dfree(Vc), gc_dfree(K16), gc_dfree(V16), gc_dfree(bt), gc_dfree(pos), gc_dfree(slot);
    free(bt_h), free(pos_h), free(slot_h), free(Kh), free(Vh), free(want), free(wrong), free(qh), free(qb), free(vh);
}

/* Ancestor-or-self masks of a random tree. */
static void tree_mask(uint64_t *mask, int m, uint64_t seed) {
    uint64_t x = seed | 1;
    for (int i = 0; i < m; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int parent = (int)(x % (uint64_t)(i + 1)) - 1; /* −1: hangs off the context */
        mask[i] = ((uint64_t)1 << i) | (parent >= 0 ? mask[parent] : 0);
    }
}

/* The reference: out[m, H, Dh] over the rows read back by kv_row_load, scores, softmax and Σ p·v in double, then
 * (q4, when unrotate) kvq_unrotate, then the gate. rescale: the rows' scales multiplied by it (a control). */
static void reference(float *out, const float *q, const float *qg, const unsigned char *K, const unsigned char *V,
                      const int *bt, const kvq_case *kc, const uint64_t *mask, int bits, int unrotate, float rescale) {
    const int H = kc->H, Hkv = kc->Hkv, Dh = kc->Dh, n = kc->ctx + kc->m;
    const kv_format f = format_of(bits);
    const size_t rb = kn_kvq_row_bytes(bits, Dh);
    float *kr = (float *)gc_hmalloc((size_t)Dh * 4), *vr = (float *)gc_hmalloc((size_t)Dh * 4);
    double *sc = (double *)gc_hmalloc((size_t)n * 8), *acc = (double *)gc_hmalloc((size_t)Dh * 8);
    unsigned char *row = (unsigned char *)gc_hmalloc(rb);
    for (int t = 0; t < kc->m; t++)
        for (int h = 0; h < H; h++) {
            const int kvh = h / (H / Hkv);
            const float *qh = q + ((size_t)t * H + h) * Dh;
            double mx = -INFINITY, sum = 0.0;
            for (int s = 0; s < n; s++) {
                const int seen = s < kc->ctx || (mask ? (mask[t] >> (s - kc->ctx)) & 1 : s - kc->ctx <= t);
                sc[s] = -INFINITY;
                if (!seen) continue;
                memcpy(row, K + row_of(bt, s, kvh, Hkv) * rb, rb);
                for (int b = 0; b < Dh / 32; b++) ((float *)row)[b] *= rescale;
                kv_row_load(f, kr, row, Dh);
                double dot = 0.0;
                for (int d = 0; d < Dh; d++) dot += (double)qh[d] * kr[d];
                sc[s] = dot / sqrt((double)Dh);
                if (sc[s] > mx) mx = sc[s];
            }
            for (int d = 0; d < Dh; d++) acc[d] = 0.0;
            for (int s = 0; s < n; s++) {
                if (sc[s] == -INFINITY) continue;
                const double p = exp(sc[s] - mx);
                sum += p;
                memcpy(row, V + row_of(bt, s, kvh, Hkv) * rb, rb);
                for (int b = 0; b < Dh / 32; b++) ((float *)row)[b] *= rescale;
                kv_row_load(f, vr, row, Dh);
                for (int d = 0; d < Dh; d++) acc[d] += p * vr[d];
            }
            float *o = out + ((size_t)t * H + h) * Dh;
            for (int d = 0; d < Dh; d++) o[d] = (float)(acc[d] / sum);
            if (bits == 4 && unrotate) kvq_unrotate(o, Dh);
            const float *g = qg + ((size_t)t * H + h) * 2 * Dh + Dh;
            for (int d = 0; d < Dh; d++) o[d] = (float)(o[d] / (1.0 + exp(-(double)g[d])));
        }
    free(kr), free(vr), free(sc), free(acc), free(row);
}

/* The attention over rows kv_row_store wrote from random floats (the rotated frame's, for q4), random queries. */
static void attention_case(gc_ctx *c, const kvq_case *kc, int bits) {
    const int m = kc->m, H = kc->H, Hkv = kc->Hkv, Dh = kc->Dh, ctx = kc->ctx;
    const kv_format f = format_of(bits);
    const size_t rb = kn_kvq_row_bytes(bits, Dh);
    const int n_blocks = (ctx + m + KV_BLOCK_SIZE - 1) / KV_BLOCK_SIZE + 3;
    const size_t rows = (size_t)n_blocks * Hkv * KV_BLOCK_SIZE, pool = rows * rb;
    const size_t q_n = (size_t)m * H * Dh, qg_n = 2 * q_n;
    int *bt_h = (int *)gc_hmalloc((size_t)n_blocks * 4);
    random_table(bt_h, n_blocks, c->seed ^ 0xb3);
    float *x = (float *)gc_dmalloc(rows * Dh * 4), *xh = (float *)gc_hmalloc(rows * Dh * 4);
    unsigned char *Kh = (unsigned char *)gc_hmalloc(pool), *Vh = (unsigned char *)gc_hmalloc(pool);
    for (int kv = 0; kv < 2; kv++) { /* every row of the pools, written ones and others alike */
        gc_fill_f32(c, x, rows * Dh, -1.0f, 1.0f, 1000 + kv);
        gc_d2h(xh, x, rows * Dh * 4);
        for (size_t r = 0; r < rows; r++) kv_row_store(f, (kv ? Vh : Kh) + r * rb, xh + r * Dh, Dh);
    }
    float *q = (float *)gc_dmalloc(q_n * 4), *qg = (float *)gc_dmalloc(qg_n * 4), *out = (float *)gc_dmalloc(q_n * 4);
    gc_fill_f32(c, q, q_n, -3.0f, 3.0f, 940);
    gc_fill_f32(c, qg, qg_n, -3.0f, 3.0f, 941);
    unsigned char *Kc = (unsigned char *)gc_dmalloc(pool), *Vc = (unsigned char *)gc_dmalloc(pool);
    int *bt = (int *)gc_dmalloc((size_t)n_blocks * 4);
    gc_h2d(Kc, Kh, pool), gc_h2d(Vc, Vh, pool), gc_h2d(bt, bt_h, (size_t)n_blocks * 4);
    uint64_t *mask_h = NULL, *mask = NULL;
    if (kc->tree) {
        mask_h = (uint64_t *)gc_hmalloc((size_t)m * 8);
        tree_mask(mask_h, m, c->seed ^ 0x7ef);
        mask = (uint64_t *)gc_dmalloc((size_t)m * 8);
        gc_h2d(mask, mask_h, (size_t)m * 8);
    }
    const size_t work_n = kn_attention_work_floats(ctx, m, H, Hkv, Dh);
    float *work = (float *)gc_dmalloc(work_n * 4);
    float *q_h = (float *)gc_hmalloc(q_n * 4), *qg_h = (float *)gc_hmalloc(qg_n * 4);
    float *ref = (float *)gc_hmalloc(q_n * 4), *ctl = (float *)gc_hmalloc(q_n * 4);
    gc_d2h(q_h, q, q_n * 4), gc_d2h(qg_h, qg, qg_n * 4);
    reference(ref, q_h, qg_h, Kh, Vh, bt_h, kc, mask_h, bits, 1, 1.0f);

    char note[160] = "";
    double err = INFINITY, control = INFINITY, us = NAN;
    const float scale = 1.0f / sqrtf((float)Dh);
    gc_poison(out, q_n * 4);
    cudaError_t e = kn_attention_quant(out, q, qg, Kc, Vc, bt, ctx, m, mask, H, Hkv, Dh, scale, work, work_n, bits, 0);
    if (e != cudaSuccess) {
        snprintf(note, sizeof note, "launch: %s", cudaGetErrorString(e));
    } else {
        gc_sync("attention_quant");
        err = gc_compare_f32(out, ref, q_n, note, sizeof note);
        /* the control: what a kernel that forgot the rotation back (q4) or read its rows at the wrong scale (q8)
         * would have computed: the same comparison must reject it */
        reference(ctl, q_h, qg_h, Kh, Vh, bt_h, kc, mask_h, bits, 0, bits == 8 ? 127.0f / 128.0f : 1.0f);
        char ignored[96];
        control = gc_compare_f32(out, ctl, q_n, ignored, sizeof ignored);
        if (gc_status_for(err, KVQ_ATT_BOUND) == GC_OK)
            us = gc_time_us(c, [&](int) {
                return kn_attention_quant(out, q, qg, Kc, Vc, bt, ctx, m, mask, H, Hkv, Dh, scale, work, work_n, bits,
                                          0);
            });
    }
    const char *version = bits == 8 ? "q8" : "q4";
    const int slots = ctx + m;
    gc_record(c, "attention_quant", version, kc->shape, m, err, KVQ_ATT_BOUND, us, 2.0 * slots * Hkv * rb + 12.0 * q_n,
              4.0 * m * H * (double)slots * Dh, note);
    snprintf(note, sizeof note, "control: %s: error %.2e (must be > %.0e)",
             bits == 8 ? "rows read at scale s*127/128" : "output not rotated back", control, KVQ_ATT_BOUND);
    gc_record(c, "attention_quant", "control", kc->shape, m, control > KVQ_ATT_BOUND ? 0.0 : INFINITY, 0.0, NAN, 0.0,
              0.0, note);
    gc_dfree(x), gc_dfree(q), gc_dfree(qg), gc_dfree(out), gc_dfree(Kc), gc_dfree(Vc), gc_dfree(bt), gc_dfree(work);
    if (mask) gc_dfree(mask);
    free(bt_h), free(xh), free(Kh), free(Vh), free(mask_h), free(q_h), free(qg_h), free(ref), free(ctl);
}

void gc_family_kv_quant(gc_ctx *c) {
    static const kvq_case odd[] = {
        {"odd 3 tokens 5q+1kv x64 R=16", 37, 3, 5, 1, 64, 16, 0},
        {"odd 2 tokens 4q+2kv x32 R=32", 5, 2, 4, 2, 32, 32, 0},
        {"odd 24q+4kv x256 R=64 m=5", 20, 5, GC27_H, GC27_HKV, GC27_DH, GC27_R, 0},
        {"odd 3q+1kv x96 R=16 m=2", 19, 2, 3, 1, 96, 16, 0},
    };
    static const kvq_case att_odd[] = {
        {"odd ctx37 chain 4/2x64", 37, 1, 4, 2, 64, 16, 0},
        {"odd ctx20 tree5 24/4x256", 20, 5, GC27_H, GC27_HKV, GC27_DH, GC27_R, 2},
        {"odd ctx0 chain3 4/2x32", 0, 3, 4, 2, 32, 32, 0},
        {"odd ctx19 tree4 3/1x96", 19, 4, 3, 1, 96, 16, 2},
    };
    for (int bits = 8; bits >= 4; bits -= 4) {
        for (int i = 0; i < 4; i++) rope_case(c, &odd[i], bits);
        for (int i = 0; i < 4; i++) attention_case(c, &att_odd[i], bits);
    }
    if (c->small) return;
    static const kvq_case real[] = {
        {"ctx 4096", GC_CTX_SHORT, 1, GC27_H, GC27_HKV, GC27_DH, GC27_R, 0},
        {"ctx 4096 tree4", GC_CTX_SHORT, 4, GC27_H, GC27_HKV, GC27_DH, GC27_R, 2},
    };
    for (int bits = 8; bits >= 4; bits -= 4)
        for (int i = 0; i < 2; i++) attention_case(c, &real[i], bits);
}
