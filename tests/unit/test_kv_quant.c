/* test_kv_quant.c — the KV cache's quantised rows (optimized/kv_quant.h) against the floats they keep: each
 * element of q8 and q4 within half a quantisation step, the q4 rotation orthogonal, attention over a quantised
 * cache within the error those steps allow; each bound with a planted bug it must reject. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/attention.h"
#include "harness.h"
#include "kv_quant.h"
#include "philox.h"

#define MAX_DH 256
#define MAX_N 40
#define ROWS 24

/* Head widths: narrower than a block (8, 16), whole blocks (64, 256), a partial last block (96 + 4 = 100). */
static const int widths[] = {8, 16, 64, 100, 256};
#define N_WIDTHS ((int)(sizeof widths / sizeof widths[0]))

static float uniform(uint64_t seed, uint64_t stream, uint64_t i) {
    return 2.0f * philox_uniform(seed, stream, i, 0) - 1.0f;
}

/* x[Dh]: uniform in [−1, 1], and with `outlier` > 0 one channel per block of that magnitude (the outlier
 * channels KIVI and KVQuant report in keys). */
static void fill(float *x, int Dh, uint64_t seed, uint64_t stream, float outlier) {
    for (int d = 0; d < Dh; d++) x[d] = uniform(seed, stream, (uint64_t)d);
    if (outlier > 0)
        for (int d = 5; d < Dh; d += KVQ_BLOCK) x[d] = uniform(seed, stream, 1000) > 0 ? outlier : -outlier;
}

static float block_max(const float *x, int lo, int hi) {
    float m = 0;
    for (int d = lo; d < hi; d++) m = fmaxf(m, fabsf(x[d]));
    return m;
}

/* Half a step of block b of x at `levels` (127 for q8, 7 for q4), plus room for the two float32 roundings of
 * an element (x/s and s·q, each at most 2⁻²⁴ of a value no larger than the block's max): the most a correct
 * quantiser may move an element of that block. */
static float half_step(const float *x, int Dh, int d, int levels) {
    const int lo = d / KVQ_BLOCK * KVQ_BLOCK, hi = lo + KVQ_BLOCK < Dh ? lo + KVQ_BLOCK : Dh;
    const float m = block_max(x, lo, hi);
    return m / levels / 2 + 0x1p-22f * m;
}

/* The largest ratio |read back − x| / half_step over a row (≤ 1: within bound). */
static double worst_step_ratio(const float *x, const float *back, int Dh, int levels) {
    double worst = 0;
    for (int d = 0; d < Dh; d++) {
        const float h = half_step(x, Dh, d, levels);
        worst = fmax(worst, h > 0 ? fabs(back[d] - x[d]) / h : (back[d] == x[d] ? 0 : INFINITY));
    }
    return worst;
}

/* Every row of every width through format f (rows rotated first when f rotates); with `plant`, each stored
 * scale is replaced by max/(levels + 1) (a signed range taken as 2^(bits−1) levels, so the top code overshoots
 * the block's max), the bug the bound must catch. Returns the worst ratio to the half step over all rows, or
 * with plant the smallest row's worst (every row must break the bound). */
static double rows_through(kv_format f, int plant, float outlier) {
    const int levels = f == KV_Q8 ? 127 : 7;
    double worst = 0, least_broken = INFINITY;
    for (int w = 0; w < N_WIDTHS; w++) {
        const int Dh = widths[w], nb = (Dh + KVQ_BLOCK - 1) / KVQ_BLOCK;
        for (int r = 0; r < ROWS; r++) {
            float x[MAX_DH], back[MAX_DH];
            unsigned char row[2 * MAX_DH];
            fill(x, Dh, 7 + (uint64_t)w, (uint64_t)r, r % 2 ? outlier : 0);
            if (kv_format_rotates(f)) kvq_rotate(x, Dh);
            kv_row_store(f, row, x, Dh);
            if (plant)
                for (int b = 0; b < nb; b++) {
                    const int lo = b * KVQ_BLOCK, hi = lo + KVQ_BLOCK < Dh ? lo + KVQ_BLOCK : Dh;
                    const float s = block_max(x, lo, hi) / (levels + 1);
                    memcpy(row + (size_t)b * sizeof(float), &s, sizeof s);
                }
            kv_row_load(f, back, row, Dh);
            const double ratio = worst_step_ratio(x, back, Dh, levels);
            worst = fmax(worst, ratio);
            least_broken = fmin(least_broken, ratio);
        }
    }
    return plant ? least_broken : worst;
}

START_TEST(test_q8_within_half_a_step) {
    const double r = rows_through(KV_Q8, 0, 20.0f);
    ck_assert_msg(r <= 1.0, "q8: an element off by %.3g half steps (at most 1)", r);
}
END_TEST

START_TEST(test_q4_within_half_a_step) { /* in the rotated frame, where q4 quantises */
    const double r = rows_through(KV_Q4, 0, 20.0f);
    ck_assert_msg(r <= 1.0, "q4: an element off by %.3g half steps (at most 1)", r);
}
END_TEST

START_TEST(test_control_scale_one_level_off) {
    const double r8 = rows_through(KV_Q8, 1, 20.0f), r4 = rows_through(KV_Q4, 1, 20.0f);
    ck_assert_msg(r8 > 1.0, "q8 with the scale max/128: a row stayed within bound (%.3g half steps)", r8);
    ck_assert_msg(r4 > 1.0, "q4 with the scale max/8: a row stayed within bound (%.3g half steps)", r4);
}
END_TEST

START_TEST(test_bf16_within_half_an_ulp) {
    float x[MAX_DH], back[MAX_DH];
    uint16_t row[MAX_DH];
    fill(x, MAX_DH, 3, 0, 20.0f);
    kv_row_store(KV_BF16, row, x, MAX_DH);
    kv_row_load(KV_BF16, back, row, MAX_DH);
    for (int d = 0; d < MAX_DH; d++) /* 8 significant bits, to nearest: half an ulp, at most 2⁻⁸ of |x| */
        ck_assert_msg(fabsf(back[d] - x[d]) <= 0x1p-8f * fabsf(x[d]), "bf16: element %d %g read back as %g", d, x[d],
                      back[d]);
}
END_TEST

/* The rows' bytes: what the pool is sized with and what info and bench print. */
START_TEST(test_row_bytes) {
    ck_assert_uint_eq(kv_row_bytes(KV_F32, 256), 1024);
    ck_assert_uint_eq(kv_row_bytes(KV_BF16, 256), 512);
    ck_assert_uint_eq(kv_row_bytes(KV_Q8, 256), 8 * 4 + 256);
    ck_assert_uint_eq(kv_row_bytes(KV_Q4, 256), 8 * 4 + 128);
    ck_assert_uint_eq(kv_row_bytes(KV_Q8, 100), 4 * 4 + 100);
    ck_assert_uint_eq(kv_row_bytes(KV_Q4, 16), 4 + 8);
    sp_error err;
    ck_assert_int_eq(kv_format_check(KV_Q4, 15, &err), -1);
    ck_assert_int_eq(kv_format_check(KV_Q8, 15, &err), 0);
    kv_format f;
    ck_assert_int_eq(kv_format_parse("q3", &f), -1);
    ck_assert_int_eq(kv_format_parse("q4", &f), 0);
    ck_assert_int_eq(f, KV_Q4);
}
END_TEST

/* Largest |rot(q)·rot(k) − q·k| / (‖q‖‖k‖) over pairs of rows of every width; with `plant`, the smallest such
 * gap when only k is rotated (the query left as it is: the bug the bound must catch). */
static double dot_gap(int plant) {
    double worst = 0, least = INFINITY;
    for (int w = 0; w < N_WIDTHS; w++) {
        const int Dh = widths[w];
        for (int r = 0; r < ROWS; r++) {
            float q[MAX_DH], k[MAX_DH];
            fill(q, Dh, 11, (uint64_t)r, 0);
            fill(k, Dh, 12, (uint64_t)r, r % 2 ? 20.0f : 0);
            double dot = 0, nq = 0, nk = 0, rdot = 0;
            for (int d = 0; d < Dh; d++)
                dot += (double)q[d] * k[d], nq += (double)q[d] * q[d], nk += (double)k[d] * k[d];
            if (!plant) kvq_rotate(q, Dh);
            kvq_rotate(k, Dh);
            for (int d = 0; d < Dh; d++) rdot += (double)q[d] * k[d];
            const double gap = fabs(rdot - dot) / sqrt(nq * nk);
            worst = fmax(worst, gap), least = fmin(least, gap);
        }
    }
    return plant ? least : worst;
}

/* The rotation is orthogonal up to float32 rounding: each of its log2 n ≤ 8 butterfly stages and the 1/√n
 * rounds every element once (2⁻²⁴ relative), so q·k moves by under 10·2⁻²⁴·‖q‖‖k‖ ≈ 6e-7 of it; 1e-5 is room
 * for that. The control's gap is the whole of q·(H·S·k − k), of the order of ‖q‖‖k‖/√Dh. */
#define DOT_BOUND 1e-5

START_TEST(test_rotation_keeps_dot_products) {
    const double g = dot_gap(0);
    ck_assert_msg(g <= DOT_BOUND, "rotated q·k moved by %.3g of ‖q‖‖k‖ (at most %g)", g, DOT_BOUND);
    for (int w = 0; w < N_WIDTHS; w++) { /* and unrotate undoes it */
        const int Dh = widths[w];
        float x[MAX_DH], y[MAX_DH];
        fill(x, Dh, 13, 0, 20.0f);
        memcpy(y, x, sizeof x);
        kvq_rotate(y, Dh);
        kvq_unrotate(y, Dh);
        for (int d = 0; d < Dh; d++) ck_assert_msg(fabsf(y[d] - x[d]) <= 1e-5f * 20.0f, "Dh %d: element %d", Dh, d);
    }
}
END_TEST

START_TEST(test_control_query_not_rotated) {
    const double g = dot_gap(1);
    ck_assert_msg(g > DOT_BOUND, "q·k with only k rotated moved by only %.3g of ‖q‖‖k‖", g);
}
END_TEST

/* ‖read back − x‖₂ of q4 rows with an outlier channel per block, over `ROWS` rows of width Dh, as a share of the
 * bound a rotated q4 row must meet: √(Σ_d half_step²) in the rotated frame (the rotation keeps L2 norms, so that
 * is also the bound in the row's own frame). rotate 0 is the control: q4 on the row as it is. Returns the
 * largest share (rotate 1) or the root mean square share (rotate 0: the claim is about typical rows). */
static double outlier_share(int Dh, int rotate) {
    double worst = 0, sum = 0;
    for (int r = 0; r < ROWS; r++) {
        float x[MAX_DH], xr[MAX_DH], back[MAX_DH];
        unsigned char row[MAX_DH];
        fill(x, Dh, 21, (uint64_t)r, 20.0f);
        memcpy(xr, x, sizeof x);
        kvq_rotate(xr, Dh);
        double bound = 0;
        for (int d = 0; d < Dh; d++) bound += (double)half_step(xr, Dh, d, 7) * half_step(xr, Dh, d, 7);
        bound = sqrt(bound) + 1e-5 * 20.0; /* the round trip's own rounding, as in test_rotation_keeps_dot_products */
        kv_row_store(KV_Q4, row, rotate ? xr : x, Dh);
        kv_row_load(KV_Q4, back, row, Dh);
        if (rotate) kvq_unrotate(back, Dh);
        double e = 0;
        for (int d = 0; d < Dh; d++) e += ((double)back[d] - x[d]) * ((double)back[d] - x[d]);
        const double share = sqrt(e) / bound;
        worst = fmax(worst, share), sum += share * share;
    }
    return rotate ? worst : sqrt(sum / ROWS);
}

START_TEST(test_q4_rotation_on_outlier_channels) {
    static const int rotated_widths[] = {64, 256}; /* rotated as a whole (100 = 4·25 rotates in groups of 4) */
    for (int w = 0; w < 2; w++) {
        const int Dh = rotated_widths[w];
        const double rotated = outlier_share(Dh, 1), plain = outlier_share(Dh, 0);
        ck_assert_msg(rotated <= 1.0, "Dh %d: rotated q4 off by %.3g of its bound", Dh, rotated);
        ck_assert_msg(plain > 1.0, "Dh %d: q4 without the rotation stayed within the rotated bound (%.3g of it)", Dh,
                      plain);
    }
}
END_TEST

/* Attention of one query over n positions kept in format f, as the engine's CPU core does it (optimized/cpu/
 * layers.c: rows rotated before they are stored, the query rotated, the output rotated back), against the same
 * attention over the float rows, as ‖Δout‖₂ over its bound:
 *   a key off by e moves a score by scale·|q·e| ≤ ε = scale·max_t Σ_d |q_d|·half_step_d(k_t);
 *   scores each moved by at most ε move every softmax weight by a factor within e^{±2ε}, so
 *   ‖Σ_t (p̂_t − p_t) v_t‖₂ ≤ (e^{2ε} − 1)·max_t ‖v_t‖₂;
 *   the values' own error adds at most max_t √(Σ_d half_step_d(v_t)²)
 * (for q4 in the rotated frame: the rotation keeps L2 norms). The bound is worst-case, so the query is kept small
 * (ε ≈ 0.01 for q8, 0.1 for q4) and the values share a mean, as real values do; the controls are read-path
 * bugs: plant 1, q4's output not rotated back; plant 2, the values read from the key rows. */
static double attention_share(kv_format f, int Dh, int n, int plant) {
    static float K[MAX_N][MAX_DH], V[MAX_N][MAX_DH], Kb[MAX_N][MAX_DH], Vb[MAX_N][MAX_DH];
    const float *keys[MAX_N], *values[MAX_N], *kb[MAX_N], *vb[MAX_N];
    float q[MAX_DH], qr[MAX_DH], out[MAX_DH], outq[MAX_DH], scores[MAX_N];
    const int levels = f == KV_Q8 ? 127 : 7, rot = kv_format_rotates(f);
    const float scale = 1.0f / sqrtf((float)Dh);
    const float q_size = 0.5f * sqrtf(16.0f / (float)Dh); /* ε ∝ scale·‖q‖₁: the same at every width */
    for (int d = 0; d < Dh; d++) q[d] = q_size * uniform(31, 0, (uint64_t)d);
    memcpy(qr, q, sizeof q);
    if (rot) kvq_rotate(qr, Dh);
    double eps = 0, vmax = 0, dv = 0;
    for (int t = 0; t < n; t++) {
        unsigned char row[2 * MAX_DH];
        float kr[MAX_DH], vr[MAX_DH];
        fill(K[t], Dh, 32, (uint64_t)t, 0);
        fill(V[t], Dh, 33, (uint64_t)t, 0);
        for (int d = 0; d < Dh; d++) V[t][d] += uniform(34, 0, (uint64_t)d); /* the values' common mean */
        memcpy(kr, K[t], sizeof kr), memcpy(vr, V[t], sizeof vr);
        if (rot) kvq_rotate(kr, Dh), kvq_rotate(vr, Dh);
        kv_row_store(f, row, kr, Dh), kv_row_load(f, Kb[t], row, Dh);
        kv_row_store(f, row, vr, Dh), kv_row_load(f, Vb[t], row, Dh);
        keys[t] = K[t], values[t] = V[t], kb[t] = Kb[t], vb[t] = plant == 2 ? Kb[t] : Vb[t];
        double e = 0, nv = 0, ev = 0;
        for (int d = 0; d < Dh; d++) {
            e += fabs(qr[d]) * half_step(kr, Dh, d, levels);
            nv += (double)V[t][d] * V[t][d];
            ev += (double)half_step(vr, Dh, d, levels) * half_step(vr, Dh, d, levels);
        }
        eps = fmax(eps, scale * e), vmax = fmax(vmax, sqrt(nv)), dv = fmax(dv, sqrt(ev));
    }
    cpu_attention_head(out, q, keys, values, n, Dh, scale, scores);
    cpu_attention_head(outq, qr, kb, vb, n, Dh, scale, scores);
    if (rot && plant != 1) kvq_unrotate(outq, Dh);
    /* 1e-5 per element: the two float32 attentions' own rounding (test_cpu_attention: 2e-6) */
    const double bound = expm1(2 * eps) * vmax + dv + 1e-5 * sqrt((double)Dh);
    double gap = 0;
    for (int d = 0; d < Dh; d++) gap += ((double)outq[d] - out[d]) * ((double)outq[d] - out[d]);
    return sqrt(gap) / bound;
}

static const int att_shapes[][2] = {{16, 5}, {64, 33}, {100, 17}, {256, 40}};

START_TEST(test_attention_within_bound) {
    const kv_format f = _i ? KV_Q4 : KV_Q8;
    for (size_t s = 0; s < sizeof att_shapes / sizeof att_shapes[0]; s++) {
        const double share = attention_share(f, att_shapes[s][0], att_shapes[s][1], 0);
        ck_assert_msg(share <= 1.0, "%s, Dh %d, n %d: output off by %.3g of its bound", kv_format_name(f),
                      att_shapes[s][0], att_shapes[s][1], share);
    }
}
END_TEST

START_TEST(test_control_attention_read_path) {
    const kv_format f = _i ? KV_Q4 : KV_Q8;
    for (size_t s = 0; s < sizeof att_shapes / sizeof att_shapes[0]; s++) {
        const double share = attention_share(f, att_shapes[s][0], att_shapes[s][1], _i ? 1 : 2);
        ck_assert_msg(share > 1.0, "%s with %s, Dh %d, n %d: within bound (%.3g of it)", kv_format_name(f),
                      _i ? "the output not rotated back" : "the values read from the key rows", att_shapes[s][0],
                      att_shapes[s][1], share);
    }
}
END_TEST

Suite *kv_quant_suite(void) {
    Suite *s = suite_create("kv_quant");
    TCase *tc = harness_tcase("rows", 60);
    tcase_add_test(tc, test_q8_within_half_a_step);
    tcase_add_test(tc, test_q4_within_half_a_step);
    tcase_add_test(tc, test_control_scale_one_level_off);
    tcase_add_test(tc, test_bf16_within_half_an_ulp);
    tcase_add_test(tc, test_row_bytes);
    tcase_add_test(tc, test_rotation_keeps_dot_products);
    tcase_add_test(tc, test_control_query_not_rotated);
    tcase_add_test(tc, test_q4_rotation_on_outlier_channels);
    tcase_add_loop_test(tc, test_attention_within_bound, 0, 2);
    tcase_add_loop_test(tc, test_control_attention_read_path, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}
