/* rope_kv.cu — q/k head norm, partial rotate-half RoPE and the bf16 write of
 * K and V into the paged cache, fused in one launch (kn_attention.h). The
 * angle follows op_rope: inv_freq = (float)(1 / θ^(2i/R)) in double, angle =
 * pos·inv_freq in float, then cosf/sinf. */
#include "kn_attention.h"
#include "kn_common.cuh"
#include "kn_kv_quant.cuh"
#include "kn_kv_quant.h"

__device__ __forceinline__ void rope_angle(int i, int R, int pos, double theta, float *c, float *s) {
    float inv_freq = (float)(1.0 / pow(theta, (double)(2 * i) / (double)R));
    float angle = (float)pos * inv_freq;
    *c = cosf(angle);
    *s = sinf(angle);
}

/* Head slot j of token t: j < H a query head, j ≥ H the key head j − H
 * (which also copies its value head). */
__device__ __forceinline__ const float *head_src(const float *qg, const float *k, int t, int j, int H, int Hkv,
                                                 int Dh) {
    return j < H ? qg + ((size_t)t * H + j) * 2 * Dh : k + ((size_t)t * Hkv + (j - H)) * Dh;
}

/* v1: one block of Dh threads per (token, head): block reduction for the
 * norm, the normed head in shared memory, one thread per output dim. */
__global__ void rope_kv_v1(float *q_out, uint16_t *Kc, uint16_t *Vc, const int *bt, const float *qg, const float *k,
                           const float *v, const float *q_norm, const float *k_norm, const int *pos, const int *slot,
                           int H, int Hkv, int Dh, int R, double theta, float eps) {
    __shared__ float scratch[32];
    KN_DYN_SMEM(float, y); /* [Dh] */
    int t = blockIdx.y, j = blockIdx.x, d = threadIdx.x;
    const float *x = head_src(qg, k, t, j, H, Hkv, Dh);
    const float *w = j < H ? q_norm : k_norm;
    float xd = x[d];
    float ss = kn_block_sum(xd * xd, scratch);
    float r = 1.0f / sqrtf(ss / (float)Dh + eps);
    y[d] = xd * r * (1.0f + w[d]);
    __syncthreads();
    int half = R / 2;
    float o = y[d];
    if (d < R) {
        int i = d < half ? d : d - half;
        float c, s;
        rope_angle(i, R, pos[t], theta, &c, &s);
        o = d < half ? y[i] * c - y[i + half] * s : y[i + half] * c + y[i] * s;
    }
    if (j < H) {
        q_out[((size_t)t * H + j) * Dh + d] = o;
    } else {
        size_t off = kn_paged_offset(bt, slot[t], j - H, d, Hkv, Dh);
        Kc[off] = kn_to_bf16(o);
        Vc[off] = kn_to_bf16(v[((size_t)t * Hkv + (j - H)) * Dh + d]);
    }
}

#define ROPE_V2_WARPS 8

/* v2's norm and rotation of head slot j of token t into y[Dh] (shared memory) by one warp: shuffle reduction, each
 * rotation pair handled by one lane. The quantised cache's write (rope_kv_quant) shares it. */
__device__ __forceinline__ void norm_rope_warp(float *y, const float *qg, const float *k, const float *q_norm,
                                               const float *k_norm, int t, int j, int pos, int H, int Hkv, int Dh,
                                               int R, double theta, float eps, int lane) {
    const float *x = head_src(qg, k, t, j, H, Hkv, Dh);
    const float *w = j < H ? q_norm : k_norm;
    float ss = 0.0f;
    for (int d = lane; d < Dh; d += KN_WARP) ss += x[d] * x[d];
    ss = kn_warp_sum(ss);
    float r = 1.0f / sqrtf(ss / (float)Dh + eps);
    for (int d = lane; d < Dh; d += KN_WARP) y[d] = x[d] * r * (1.0f + w[d]);
    __syncwarp();
    int half = R / 2;
    for (int i = lane; i < half; i += KN_WARP) {
        float c, s;
        rope_angle(i, R, pos, theta, &c, &s);
        float a = y[i], b = y[i + half];
        y[i] = a * c - b * s;
        y[i + half] = b * c + a * s;
    }
    __syncwarp();
}

/* v2: one warp per (token, head), eight heads per block: shuffle reduction,
 * each rotation pair handled by one lane (one cosf/sinf per pair instead of
 * two), stores of consecutive dims per lane group. */
__global__ void rope_kv_v2(float *q_out, uint16_t *Kc, uint16_t *Vc, const int *bt, const float *qg, const float *k,
                           const float *v, const float *q_norm, const float *k_norm, const int *pos, const int *slot,
                           int H, int Hkv, int Dh, int R, double theta, float eps) {
    KN_DYN_SMEM(float, ybuf); /* [ROPE_V2_WARPS, Dh] */
    int lane = threadIdx.x % KN_WARP, warp = threadIdx.x / KN_WARP;
    int t = blockIdx.y, j = blockIdx.x * ROPE_V2_WARPS + warp;
    if (j >= H + Hkv) return; /* whole warps leave; no block barrier below */
    float *y = ybuf + (size_t)warp * Dh;
    norm_rope_warp(y, qg, k, q_norm, k_norm, t, j, pos[t], H, Hkv, Dh, R, theta, eps, lane);
    if (j < H) {
        float *qo = q_out + ((size_t)t * H + j) * Dh;
        for (int d = lane; d < Dh; d += KN_WARP) qo[d] = y[d];
    } else {
        const float *vh = v + ((size_t)t * Hkv + (j - H)) * Dh;
        size_t base = kn_paged_offset(bt, slot[t], j - H, 0, Hkv, Dh); /* a head's dims are contiguous */
        for (int d = lane; d < Dh; d += KN_WARP) {
            Kc[base + d] = kn_to_bf16(y[d]);
            Vc[base + d] = kn_to_bf16(vh[d]);
        }
    }
}

/* The quantised cache's write (kn_kv_quant.h): v2's warp per (token, head), then the rows encoded by the warp as
 * kv_row_store does; BITS 4 rotates the query, the key and the value first (kvq_rotate). */
template <int BITS>
__global__ void rope_kv_quant(float *q_out, unsigned char *Kc, unsigned char *Vc, const int *bt, const float *qg,
                              const float *k, const float *v, const float *q_norm, const float *k_norm, const int *pos,
                              const int *slot, int H, int Hkv, int Dh, int R, double theta, float eps) {
    KN_DYN_SMEM(float, ybuf); /* [ROPE_V2_WARPS, Dh]: the head, then (BITS 4) the rotated value */
    int lane = threadIdx.x % KN_WARP, warp = threadIdx.x / KN_WARP;
    int t = blockIdx.y, j = blockIdx.x * ROPE_V2_WARPS + warp;
    if (j >= H + Hkv) return; /* whole warps leave; no block barrier below */
    float *y = ybuf + (size_t)warp * Dh;
    norm_rope_warp(y, qg, k, q_norm, k_norm, t, j, pos[t], H, Hkv, Dh, R, theta, eps, lane);
    if (BITS == 4) kn_kvq_rotate_warp(y, Dh, lane);
    if (j < H) {
        float *qo = q_out + ((size_t)t * H + j) * Dh;
        for (int d = lane; d < Dh; d += KN_WARP) qo[d] = y[d];
        return;
    }
    const size_t rb = kn_kvq_row_bytes(BITS, Dh), row = kn_paged_offset(bt, slot[t], j - H, 0, Hkv, 1);
    const float *vh = v + ((size_t)t * Hkv + (j - H)) * Dh;
    kn_kvq_store_row<BITS>(Kc + row * rb, y, Dh, lane);
    if (BITS == 4) { /* the key's row is written: y takes the value */
        __syncwarp();
        for (int d = lane; d < Dh; d += KN_WARP) y[d] = vh[d];
        __syncwarp();
        kn_kvq_rotate_warp(y, Dh, lane);
        vh = y;
    }
    kn_kvq_store_row<BITS>(Vc + row * rb, vh, Dh, lane);
}

static int rope_args_ok(int m, int H, int Hkv, int Dh, int R) {
    return m >= 1 && H >= 1 && Hkv >= 1 && Dh >= 32 && Dh % 32 == 0 && Dh <= 1024 && R >= 0 && R % 2 == 0 && R <= Dh;
}

static cudaError_t launch_rope_v1(float *q_out, uint16_t *Kc, uint16_t *Vc, const int *bt, const float *qg,
                                  const float *k, const float *v, const float *q_norm, const float *k_norm,
                                  const int *pos, const int *slot, int m, int H, int Hkv, int Dh, int R, double theta,
                                  float eps, cudaStream_t s) {
    if (!rope_args_ok(m, H, Hkv, Dh, R)) return cudaErrorInvalidValue;
    dim3 grid(H + Hkv, m);
    return KN_LAUNCH(rope_kv_v1, grid, Dh, Dh * sizeof(float), s, q_out, Kc, Vc, bt, qg, k, v, q_norm, k_norm, pos,
                     slot, H, Hkv, Dh, R, theta, eps);
}

static cudaError_t launch_rope_v2(float *q_out, uint16_t *Kc, uint16_t *Vc, const int *bt, const float *qg,
                                  const float *k, const float *v, const float *q_norm, const float *k_norm,
                                  const int *pos, const int *slot, int m, int H, int Hkv, int Dh, int R, double theta,
                                  float eps, cudaStream_t s) {
    if (!rope_args_ok(m, H, Hkv, Dh, R)) return cudaErrorInvalidValue;
    dim3 grid(kn_ceil_div(H + Hkv, ROPE_V2_WARPS), m);
    return KN_LAUNCH(rope_kv_v2, grid, ROPE_V2_WARPS * KN_WARP, ROPE_V2_WARPS * Dh * sizeof(float), s, q_out, Kc, Vc,
                     bt, qg, k, v, q_norm, k_norm, pos, slot, H, Hkv, Dh, R, theta, eps);
}

static const kn_rope_kv_version versions[] = {
    {"v1", "block of Dh threads per (token, head), block reduction", launch_rope_v1},
    {"v2", "warp per (token, head), 8 heads per block, one lane per rotation pair", launch_rope_v2},
};

cudaError_t kn_rope_kv_quant(float *q_out, unsigned char *Kc, unsigned char *Vc, const int *bt, const float *qg,
                             const float *k, const float *v, const float *q_norm, const float *k_norm, const int *pos,
                             const int *slot, int m, int H, int Hkv, int Dh, int R, double theta, float eps, int bits,
                             cudaStream_t s) {
    if (!rope_args_ok(m, H, Hkv, Dh, R) || (bits != 8 && bits != 4)) return cudaErrorInvalidValue;
    dim3 grid(kn_ceil_div(H + Hkv, ROPE_V2_WARPS), m);
    const size_t smem = ROPE_V2_WARPS * (size_t)Dh * sizeof(float);
    if (bits == 8)
        return KN_LAUNCH(rope_kv_quant<8>, grid, ROPE_V2_WARPS * KN_WARP, smem, s, q_out, Kc, Vc, bt, qg, k, v, q_norm,
                         k_norm, pos, slot, H, Hkv, Dh, R, theta, eps);
    return KN_LAUNCH(rope_kv_quant<4>, grid, ROPE_V2_WARPS * KN_WARP, smem, s, q_out, Kc, Vc, bt, qg, k, v, q_norm,
                     k_norm, pos, slot, H, Hkv, Dh, R, theta, eps);
}

const kn_rope_kv_version *kn_rope_kv_versions(int *count) {
    *count = (int)(sizeof versions / sizeof versions[0]);
    return versions;
}
