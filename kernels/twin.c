/* twin.c — CPU twins of the CUDA kernels (twin.h): the reference ops applied
 * under the kernels' contracts (bf16 storage, paged cache, trees of state
 * slots). Conversions use reference/dtype.h; the arithmetic is ops.h's. */
#include "twin.h"

#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "error.h"
#include "kn_paged.h"
#include "ops.h"

#define MATVEC_CHUNK_ROWS 64 /* rows of W converted to float at a time */

void twin_matvec(float *Y, const uint16_t *W, const float *X, int m, int n_out, int n_in, int x_bf16) {
    float *wf = sp_xcalloc((size_t)MATVEC_CHUNK_ROWS * n_in, sizeof *wf, "twin_matvec rows");
    float *xf = sp_xcalloc((size_t)n_in, sizeof *xf, "twin_matvec x");
    float *yc = sp_xcalloc(MATVEC_CHUNK_ROWS, sizeof *yc, "twin_matvec y");
    for (int r0 = 0; r0 < n_out; r0 += MATVEC_CHUNK_ROWS) {
        int rows = n_out - r0 < MATVEC_CHUNK_ROWS ? n_out - r0 : MATVEC_CHUNK_ROWS;
        dtype_to_f32(wf, W + (size_t)r0 * n_in, DTYPE_BF16, (size_t)rows * n_in);
        for (int p = 0; p < m; p++) {
            const float *x = X + (size_t)p * n_in;
            if (x_bf16) {
                for (int j = 0; j < n_in; j++) xf[j] = bf16_to_f32(f32_to_bf16(x[j]));
                x = xf;
            }
            op_matvec(yc, wf, x, rows, n_in);
            memcpy(Y + (size_t)p * n_out + r0, yc, (size_t)rows * sizeof *yc);
        }
    }
    free(wf), free(xf), free(yc);
}

void twin_rmsnorm(float *out, const float *x, const float *w, int rows, int n, float eps) {
    for (int r = 0; r < rows; r++) op_rmsnorm(out + (size_t)r * n, x + (size_t)r * n, w, n, eps);
}

void twin_rmsnorm_gated(float *out, const float *x, const float *w, const float *z, int rows, int n, float eps) {
    for (int r = 0; r < rows; r++)
        op_rmsnorm_gated(out + (size_t)r * n, x + (size_t)r * n, w, z + (size_t)r * n, n, eps);
}

void twin_swiglu(float *out, const float *gate, const float *up, long n) {
    /* op_swiglu takes an int count: go in pieces */
    const long piece = 1L << 30;
    for (long i = 0; i < n; i += piece) op_swiglu(out + i, gate + i, up + i, (int)(n - i < piece ? n - i : piece));
}

void twin_rope_kv(float *q_out, uint16_t *Kc, uint16_t *Vc, const int *block_table, const float *qg, const float *k,
                  const float *v, const float *q_norm, const float *k_norm, const int *pos, const int *slot, int m,
                  int H, int Hkv, int Dh, int R, double theta, float eps) {
    float *tmp = sp_xcalloc((size_t)Dh, sizeof *tmp, "twin_rope_kv head");
    for (int t = 0; t < m; t++) {
        for (int h = 0; h < H; h++) {
            float *qo = q_out + ((size_t)t * H + h) * Dh;
            op_rmsnorm(qo, qg + ((size_t)t * H + h) * 2 * Dh, q_norm, Dh, eps); /* the query half of the head */
            op_rope(qo, R, pos[t], theta);
        }
        for (int h = 0; h < Hkv; h++) {
            op_rmsnorm(tmp, k + ((size_t)t * Hkv + h) * Dh, k_norm, Dh, eps);
            op_rope(tmp, R, pos[t], theta);
            const float *vh = v + ((size_t)t * Hkv + h) * Dh;
            for (int d = 0; d < Dh; d++) {
                size_t o = kn_paged_offset(block_table, slot[t], h, d, Hkv, Dh);
                Kc[o] = f32_to_bf16(tmp[d]);
                Vc[o] = f32_to_bf16(vh[d]);
            }
        }
    }
    free(tmp);
}

void twin_attention(float *out, const float *q, const float *qg, const uint16_t *Kc, const uint16_t *Vc,
                    const int *block_table, int ctx, int m, const uint64_t *tree_mask, int H, int Hkv, int Dh,
                    float scale) {
    int n_slots = ctx + m;
    /* the cache as float, slot-major per KV head: [Hkv, n_slots, Dh] */
    float *kf = sp_xcalloc((size_t)Hkv * n_slots * Dh, sizeof *kf, "twin_attention keys");
    float *vf = sp_xcalloc((size_t)Hkv * n_slots * Dh, sizeof *vf, "twin_attention values");
    for (int h = 0; h < Hkv; h++)
        for (int s = 0; s < n_slots; s++)
            for (int d = 0; d < Dh; d++) {
                size_t o = kn_paged_offset(block_table, s, h, d, Hkv, Dh), f = ((size_t)h * n_slots + s) * Dh + d;
                kf[f] = bf16_to_f32(Kc[o]);
                vf[f] = bf16_to_f32(Vc[o]);
            }
    const float **kp = sp_xcalloc((size_t)n_slots, sizeof *kp, "twin_attention key pointers");
    const float **vp = sp_xcalloc((size_t)n_slots, sizeof *vp, "twin_attention value pointers");
    float *scores = sp_xcalloc((size_t)n_slots, sizeof *scores, "twin_attention scores");
    int group = H / Hkv;
    for (int t = 0; t < m; t++)
        for (int h = 0; h < H; h++) {
            int kvh = h / group, n = 0;
            for (int s = 0; s < n_slots; s++) {
                if (s >= ctx && !kn_tree_visible(tree_mask, t, s - ctx)) continue;
                kp[n] = kf + ((size_t)kvh * n_slots + s) * Dh;
                vp[n] = vf + ((size_t)kvh * n_slots + s) * Dh;
                n++;
            }
            float *o = out + ((size_t)t * H + h) * Dh;
            op_attention_head(o, q + ((size_t)t * H + h) * Dh, kp, vp, n, Dh, scale, scores);
            const float *gate = qg + ((size_t)t * H + h) * 2 * Dh + Dh;
            op_output_gate(o, gate, Dh);
        }
    free(kf), free(vf), free(kp), free(vp), free(scores);
}

void twin_conv_step(float *out, float *slots, const float *state0, const float *x, const float *w, const int *parent,
                    int m, int C, int K) {
    size_t state_floats = (size_t)C * (K - 1);
    for (int t = 0; t < m; t++) {
        int p = parent ? parent[t] : t - 1;
        float *st = slots + (size_t)t * state_floats;
        memcpy(st, p < 0 ? state0 : slots + (size_t)p * state_floats, state_floats * sizeof *st);
        op_conv_step(out + (size_t)t * C, st, x + (size_t)t * C, w, C, K);
    }
}

void twin_delta_step(float *out, float *slots, const float *S0, const float *q, const float *k, const float *v,
                     const float *a, const float *b, const float *A_log, const float *dt_bias, const int *parent, int m,
                     int Hk, int Hv, int Dk, int Dv) {
    size_t head = (size_t)Dk * Dv, state_floats = (size_t)Hv * head;
    float *qt = sp_xcalloc((size_t)Dk, sizeof *qt, "twin_delta_step q");
    float *kt = sp_xcalloc((size_t)Dk, sizeof *kt, "twin_delta_step k");
    int ratio = Hv / Hk;
    for (int t = 0; t < m; t++) {
        int p = parent ? parent[t] : t - 1;
        float *st = slots + (size_t)t * state_floats;
        memcpy(st, p < 0 ? S0 : slots + (size_t)p * state_floats, state_floats * sizeof *st);
        for (int h = 0; h < Hv; h++) {
            int kh = h / ratio; /* value head h reads key head h / (Hv/Hk), as repeat_interleave */
            memcpy(qt, q + ((size_t)t * Hk + kh) * Dk, (size_t)Dk * sizeof *qt);
            memcpy(kt, k + ((size_t)t * Hk + kh) * Dk, (size_t)Dk * sizeof *kt);
            float g = op_deltanet_decay(a[(size_t)t * Hv + h], A_log[h], dt_bias[h]);
            float beta = op_deltanet_beta(b[(size_t)t * Hv + h]);
            op_gated_delta_step(out + ((size_t)t * Hv + h) * Dv, st + (size_t)h * head, qt, kt,
                                v + ((size_t)t * Hv + h) * Dv, g, beta, Dk, Dv);
        }
    }
    free(qt), free(kt);
}

void twin_probs(float *probs, const float *logits, int m, int V, const sampler_params *sp) {
    for (int t = 0; t < m; t++) sampler_probs(sp, logits + (size_t)t * V, probs + (size_t)t * V, V);
}

void twin_sample(int *tokens, const float *probs, int m, int V, uint64_t seed, uint32_t purpose, uint64_t index0) {
    for (int t = 0; t < m; t++) {
        rng_site site = {seed, purpose, index0 + (uint64_t)t};
        tokens[t] = sampler_sample(probs + (size_t)t * V, V, site);
    }
}
