/* test_kernel_twins.c — the CPU twins of the CUDA kernels (kernels/twin.c)
 * against the reference ops called directly: the twins add only layout
 * (bf16 storage, the paged cache, trees of state slots), and these tests pin
 * that layout so the kernels' checks compare against the right thing. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "harness.h"
#include "kn_paged.h"
#include "ops.h"
#include "twin.h"

static float frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 16777216.0f * 2.0f - 1.0f;
}

START_TEST(test_matvec_is_op_matvec) {
    enum { N = 37, K = 45, M = 3 };
    unsigned s = 1;
    uint16_t W[N * K];
    float Wf[N * K], X[M * K], Xr[K], Y[M * N], want[N];
    for (int i = 0; i < N * K; i++) W[i] = f32_to_bf16(frand(&s)), Wf[i] = bf16_to_f32(W[i]);
    for (int i = 0; i < M * K; i++) X[i] = frand(&s) * 3.0f;
    for (int xb = 0; xb < 2; xb++) {
        twin_matvec(Y, W, X, M, N, K, xb);
        for (int p = 0; p < M; p++) {
            for (int j = 0; j < K; j++) Xr[j] = xb ? bf16_to_f32(f32_to_bf16(X[p * K + j])) : X[p * K + j];
            op_matvec(want, Wf, Xr, N, K);
            for (int i = 0; i < N; i++) ck_assert_float_eq(Y[p * N + i], want[i]);
        }
    }
}
END_TEST

START_TEST(test_paged_layout) {
    int bt[3] = {2, 0, 1}; /* slot s lives in block bt[s / 16] */
    const int Hkv = 2, Dh = 8;
    ck_assert_uint_eq(kn_paged_offset(bt, 0, 0, 0, Hkv, Dh), (size_t)2 * Hkv * KV_BLOCK_SIZE * Dh);
    ck_assert_uint_eq(kn_paged_offset(bt, 1, 0, 0, Hkv, Dh) - kn_paged_offset(bt, 0, 0, 0, Hkv, Dh), (size_t)Dh);
    ck_assert_uint_eq(kn_paged_offset(bt, 0, 1, 0, Hkv, Dh) - kn_paged_offset(bt, 0, 0, 0, Hkv, Dh),
                      (size_t)KV_BLOCK_SIZE * Dh); /* a head's 16 positions are contiguous */
    ck_assert_uint_eq(kn_paged_offset(bt, 16, 0, 3, Hkv, Dh), 3u);
    ck_assert_uint_eq(kn_paged_offset(bt, 33, 1, 5, Hkv, Dh), ((size_t)(1 * Hkv + 1) * KV_BLOCK_SIZE + 1) * Dh + 5);
    ck_assert(kn_tree_visible(NULL, 3, 3) && kn_tree_visible(NULL, 3, 0) && !kn_tree_visible(NULL, 2, 3));
    uint64_t mask[3] = {1, 2, 5}; /* node 2 is a child of node 0; node 1 hangs off the context */
    ck_assert(kn_tree_visible(mask, 2, 0) && !kn_tree_visible(mask, 2, 1) && kn_tree_visible(mask, 2, 2));
}
END_TEST

/* Attention over a paged cache with a tree mask equals op_attention_head
 * over exactly the visible positions, times the output gate. */
START_TEST(test_attention_tree) {
    enum { H = 4, HKV = 2, DH = 8, CTX = 21, M = 3, SLOTS = CTX + M, NB = 4 };
    int bt[NB] = {3, 1, 0, 2};
    size_t pool = (size_t)NB * HKV * KV_BLOCK_SIZE * DH;
    uint16_t *Kc = calloc(pool, 2), *Vc = calloc(pool, 2);
    unsigned s = 5;
    for (size_t i = 0; i < pool; i++) Kc[i] = f32_to_bf16(frand(&s)), Vc[i] = f32_to_bf16(frand(&s));
    float q[M * H * DH], qg[M * H * 2 * DH], out[M * H * DH];
    for (int i = 0; i < M * H * DH; i++) q[i] = frand(&s) * 2;
    for (int i = 0; i < M * H * 2 * DH; i++) qg[i] = frand(&s) * 2;
    uint64_t mask[M] = {1, 2 | 1, 4}; /* node 1 is a child of node 0; node 2 is a sibling branch */
    float scale = 0.3f;
    twin_attention(out, q, qg, Kc, Vc, bt, CTX, M, mask, H, HKV, DH, scale);
    float kf[SLOTS][DH], vf[SLOTS][DH], want[DH], scores[SLOTS];
    const float *kp[SLOTS], *vp[SLOTS];
    for (int t = 0; t < M; t++)
        for (int h = 0; h < H; h++) {
            int kvh = h / (H / HKV), n = 0;
            for (int sl = 0; sl < SLOTS; sl++) {
                int visible = sl < CTX || (t == 0 && sl == CTX) || (t == 1 && (sl == CTX || sl == CTX + 1)) ||
                              (t == 2 && sl == CTX + 2);
                if (!visible) continue;
                for (int d = 0; d < DH; d++) {
                    size_t o = kn_paged_offset(bt, sl, kvh, d, HKV, DH);
                    kf[n][d] = bf16_to_f32(Kc[o]), vf[n][d] = bf16_to_f32(Vc[o]);
                }
                kp[n] = kf[n], vp[n] = vf[n];
                n++;
            }
            op_attention_head(want, q + (t * H + h) * DH, kp, vp, n, DH, scale, scores);
            op_output_gate(want, qg + (t * H + h) * 2 * DH + DH, DH);
            for (int d = 0; d < DH; d++) ck_assert_float_eq(out[(t * H + h) * DH + d], want[d]);
        }
    free(Kc), free(Vc);
}
END_TEST

START_TEST(test_rope_kv_writes_its_slots) {
    enum { H = 3, HKV = 1, DH = 8, R = 4, M = 2, NB = 2 };
    int bt[NB] = {1, 0}, pos[M] = {5, 900}, slot[M] = {17, 3};
    size_t pool = (size_t)NB * HKV * KV_BLOCK_SIZE * DH;
    uint16_t *Kc = malloc(pool * 2), *Vc = malloc(pool * 2);
    memset(Kc, 0xff, pool * 2), memset(Vc, 0xff, pool * 2);
    unsigned s = 9;
    float qg[M * H * 2 * DH], k[M * HKV * DH], v[M * HKV * DH], qn[DH], kn[DH], qo[M * H * DH], tmp[DH];
    for (int i = 0; i < M * H * 2 * DH; i++) qg[i] = frand(&s);
    for (int i = 0; i < M * HKV * DH; i++) k[i] = frand(&s), v[i] = frand(&s);
    for (int i = 0; i < DH; i++) qn[i] = frand(&s) * 0.3f, kn[i] = frand(&s) * 0.3f;
    twin_rope_kv(qo, Kc, Vc, bt, qg, k, v, qn, kn, pos, slot, M, H, HKV, DH, R, 1e7, 1e-6f);
    size_t written = 0;
    for (size_t i = 0; i < pool; i++) written += Kc[i] != 0xffff;
    ck_assert_uint_eq(written, (size_t)M * HKV * DH);
    for (int t = 0; t < M; t++) {
        op_rmsnorm(tmp, k + t * DH, kn, DH, 1e-6f);
        op_rope(tmp, R, pos[t], 1e7);
        for (int d = 0; d < DH; d++) {
            size_t o = kn_paged_offset(bt, slot[t], 0, d, HKV, DH);
            ck_assert_uint_eq(Kc[o], f32_to_bf16(tmp[d]));
            ck_assert_uint_eq(Vc[o], f32_to_bf16(v[t * DH + d]));
        }
        op_rmsnorm(tmp, qg + (t * H + 2) * 2 * DH, qn, DH, 1e-6f); /* head 2's query half */
        op_rope(tmp, R, pos[t], 1e7);
        for (int d = 0; d < DH; d++) ck_assert_float_eq(qo[(t * H + 2) * DH + d], tmp[d]);
    }
    free(Kc), free(Vc);
}
END_TEST

/* A tree node's result equals the chain that leads to it. */
START_TEST(test_conv_and_delta_trees) {
    enum { C = 5, K = 4, M = 4, HK = 1, HV = 2, DK = 4, DV = 3 };
    unsigned s = 3;
    float st0[C * (K - 1)], x[M * C], w[C * K];
    for (int i = 0; i < C * (K - 1); i++) st0[i] = frand(&s);
    for (int i = 0; i < M * C; i++) x[i] = frand(&s);
    for (int i = 0; i < C * K; i++) w[i] = frand(&s);
    int parent[M] = {-1, 0, 0, 2}; /* node 3 → 2 → 0: the chain x0, x2, x3 */
    float out[M * C], slots[M * C * (K - 1)];
    twin_conv_step(out, slots, st0, x, w, parent, M, C, K);
    float st[C * (K - 1)], o[C];
    memcpy(st, st0, sizeof st);
    int path[3] = {0, 2, 3};
    for (int i = 0; i < 3; i++) {
        op_conv_step(o, st, x + path[i] * C, w, C, K);
        for (int c = 0; c < C; c++) ck_assert_float_eq(out[path[i] * C + c], o[c]);
    }
    for (int j = 0; j < C * (K - 1); j++) ck_assert_float_eq(slots[3 * C * (K - 1) + j], st[j]);

    float S0[HV * DK * DV], q[M * HK * DK], k[M * HK * DK], v[M * HV * DV], a[M * HV], b[M * HV], Al[HV], dt[HV];
    for (int i = 0; i < HV * DK * DV; i++) S0[i] = frand(&s);
    for (int i = 0; i < M * HK * DK; i++) q[i] = frand(&s), k[i] = frand(&s);
    for (int i = 0; i < M * HV * DV; i++) v[i] = frand(&s);
    for (int i = 0; i < M * HV; i++) a[i] = frand(&s), b[i] = frand(&s);
    for (int i = 0; i < HV; i++) Al[i] = frand(&s), dt[i] = frand(&s);
    float dout[M * HV * DV], dslots[M * HV * DK * DV];
    twin_delta_step(dout, dslots, S0, q, k, v, a, b, Al, dt, parent, M, HK, HV, DK, DV);
    float S[HV * DK * DV], qt[DK], kt[DK], ov[DV];
    memcpy(S, S0, sizeof S);
    for (int i = 0; i < 3; i++) {
        int t = path[i];
        for (int h = 0; h < HV; h++) {
            memcpy(qt, q + t * DK, sizeof qt), memcpy(kt, k + t * DK, sizeof kt); /* one key head serves both */
            float g = op_deltanet_decay(a[t * HV + h], Al[h], dt[h]), beta = op_deltanet_beta(b[t * HV + h]);
            op_gated_delta_step(ov, S + h * DK * DV, qt, kt, v + (t * HV + h) * DV, g, beta, DK, DV);
            for (int j = 0; j < DV; j++) ck_assert_float_eq(dout[(t * HV + h) * DV + j], ov[j]);
        }
    }
    for (int j = 0; j < HV * DK * DV; j++) ck_assert_float_eq(dslots[3 * HV * DK * DV + j], S[j]);
}
END_TEST

Suite *kernel_twins_suite(void) {
    Suite *s = suite_create("kernel_twins");
    TCase *tc = harness_tcase("twins", 10);
    tcase_add_test(tc, test_matvec_is_op_matvec);
    tcase_add_test(tc, test_paged_layout);
    tcase_add_test(tc, test_attention_tree);
    tcase_add_test(tc, test_rope_kv_writes_its_slots);
    tcase_add_test(tc, test_conv_and_delta_trees);
    suite_add_tcase(s, tc);
    return s;
}
