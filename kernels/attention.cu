/* attention.cu — decode / tree-verify attention over the paged bf16 KV cache with qwen3_5's sigmoid output gate
 * (kn_attention.h). Numbered versions, each saying what changed; v3 splits the positions over blocks
 * (flash-decoding) so a single decode query fills the GPU at long contexts. */
#include "kn_attention.h"
#include "kn_common.cuh"
#include "kn_kv_quant.cuh"
#include "kn_kv_quant.h"

/* op_sigmoid of reference/ops/ops.c, on the device; out · sigmoidf_(gate)
 * below is the output gate, op_output_gate (reference/ops/ops.h). */
__device__ __forceinline__ float sigmoidf_(float x) { return 1.0f / (1.0f + expf(-x)); }

/* Candidate c of query t: a committed slot (c < ctx) or tree node c − ctx.
 * Returns its slot, or −1 when the node is not visible to t. */
__device__ __forceinline__ int candidate_slot(int c, int ctx, int t, const uint64_t *mask) {
    if (c < ctx) return c;
    return kn_tree_visible(mask, t, c - ctx) ? c : -1;
}

/* Phase 2 of v1 and attention_quant, by the whole block: scores[0 .. n) become exp(score − max) in place; returns
 * the max (−∞ when no position is visible: then nothing is written) and *sum the Σ exp. The block sum's barriers
 * also publish the p values. */
__device__ __forceinline__ float block_softmax(float *scores, int n, float *scratch, float *sum) {
    float mx = -INFINITY;
    for (int c = threadIdx.x; c < n; c += blockDim.x) mx = fmaxf(mx, scores[c]);
    mx = kn_block_max(mx, scratch);
    float part = 0.0f;
    if (mx != -INFINITY)
        for (int c = threadIdx.x; c < n; c += blockDim.x) {
            float p = expf(scores[c] - mx);
            scores[c] = p;
            part += p;
        }
    *sum = kn_block_sum(part, scratch);
    return mx;
}

/* ---- v1 ------------------------------------------------------------------------ */

/* v1: one block of 256 per (query, head). Phase 1: a warp per position
 * computes the score into the workspace; phase 2: block max and Σ exp;
 * phase 3: one thread per output dim sums p·v over the positions. */
__global__ void attention_v1(float *out, const float *q, const float *qg, const uint16_t *Kc, const uint16_t *Vc,
                             const int *bt, int ctx, int m, const uint64_t *mask, int H, int Hkv, int Dh, float scale,
                             float *scores_all) {
    __shared__ float scratch[32];
    int h = blockIdx.x, t = blockIdx.y, n = ctx + m;
    int kvh = h / (H / Hkv);
    int lane = threadIdx.x % KN_WARP, warp = threadIdx.x / KN_WARP, n_warps = blockDim.x / KN_WARP;
    const float *qh = q + ((size_t)t * H + h) * Dh;
    float *scores = scores_all + ((size_t)t * H + h) * n;
    for (int c = warp; c < n; c += n_warps) {
        int s = candidate_slot(c, ctx, t, mask);
        float dot = 0.0f;
        if (s >= 0) {
            size_t base = kn_paged_offset(bt, s, kvh, 0, Hkv, Dh);
            for (int d = lane; d < Dh; d += KN_WARP) dot += qh[d] * kn_bf16(Kc[base + d]);
            dot = kn_warp_sum(dot);
        }
        if (lane == 0) scores[c] = s >= 0 ? dot * scale : -INFINITY;
    }
    __syncthreads();
    float sum;
    const float mx = block_softmax(scores, n, scratch, &sum);
    const float *gate = qg + ((size_t)t * H + h) * 2 * Dh + Dh;
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
        float acc = 0.0f;
        if (mx != -INFINITY)
            for (int c = 0; c < n; c++) {
                float p = scores[c];
                if (p == 0.0f) continue;
                acc += p * kn_bf16(Vc[kn_paged_offset(bt, c, kvh, d, Hkv, Dh)]);
            }
        /* op_output_gate (reference/ops/ops.h) */
        out[((size_t)t * H + h) * Dh + d] = mx != -INFINITY ? acc / sum * sigmoidf_(gate[d]) : 0.0f;
    }
}

/* ---- over the quantised cache (kn_kv_quant.h) -------------------------------------------- */

/* v1's design over q8 / q4 rows: a warp per position for the scores (lane i takes element i of each block of 32,
 * so one scale per step), block max and Σ exp, a thread per output dim for Σ p·v; each element read back as
 * s · q, as kv_row_load does. BITS 4: the output (a weighted sum of rotated values) goes through shared memory to
 * be rotated back (kvq_unrotate) before the gate. */
template <int BITS>
__global__ void attention_quant(float *out, const float *q, const float *qg, const unsigned char *Kc,
                                const unsigned char *Vc, const int *bt, int ctx, int m, const uint64_t *mask, int H,
                                int Hkv, int Dh, float scale, float *scores_all) {
    __shared__ float scratch[32];
    KN_DYN_SMEM(float, y); /* [Dh] BITS 4: the output before it is rotated back */
    int h = blockIdx.x, t = blockIdx.y, n = ctx + m;
    int kvh = h / (H / Hkv);
    int lane = threadIdx.x % KN_WARP, warp = threadIdx.x / KN_WARP, n_warps = blockDim.x / KN_WARP;
    const size_t rb = kn_kvq_row_bytes(BITS, Dh);
    const float *qh = q + ((size_t)t * H + h) * Dh;
    float *scores = scores_all + ((size_t)t * H + h) * n;
    for (int c = warp; c < n; c += n_warps) {
        int s = candidate_slot(c, ctx, t, mask);
        float dot = 0.0f;
        if (s >= 0) {
            const unsigned char *row = Kc + kn_paged_offset(bt, s, kvh, 0, Hkv, 1) * rb;
            for (int d = lane; d < Dh; d += KN_WARP) dot += qh[d] * kn_kvq_load<BITS>(row, d, Dh);
            dot = kn_warp_sum(dot);
        }
        if (lane == 0) scores[c] = s >= 0 ? dot * scale : -INFINITY;
    }
    __syncthreads();
    float sum;
    const float mx = block_softmax(scores, n, scratch, &sum);
    const float *gate = qg + ((size_t)t * H + h) * 2 * Dh + Dh;
    float *oh = out + ((size_t)t * H + h) * Dh;
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
        float acc = 0.0f;
        if (mx != -INFINITY)
            for (int c = 0; c < n; c++) {
                float p = scores[c];
                if (p == 0.0f) continue;
                acc += p * kn_kvq_load<BITS>(Vc + kn_paged_offset(bt, c, kvh, 0, Hkv, 1) * rb, d, Dh);
            }
        const float o = mx != -INFINITY ? acc / sum : 0.0f;
        if (BITS == 4)
            y[d] = o;
        else /* op_output_gate (reference/ops/ops.h) */
            oh[d] = o * sigmoidf_(gate[d]);
    }
    if (BITS == 4) {
        __syncthreads();
        kn_kvq_unrotate_block(y, Dh);
        for (int d = threadIdx.x; d < Dh; d += blockDim.x) oh[d] = y[d] * sigmoidf_(gate[d]);
    }
}

/* ---- v2 / v3 ------------------------------------------------------------------ */

#define ATT_WARPS 8
#define ATT_MAX_GROUP                                                                                                  \
    6 /* query heads per KV head kept in registers; a larger group falls back to v1 (docs/performance.md) */

/* DPL consecutive bf16 of a row, as floats (16, 8 or 4 bytes in one load). */
template <int DPL> __device__ __forceinline__ void load_row(const uint16_t *p, float *f) {
    if (DPL == 8) {
        uint4 u = kn_ldg((const uint4 *)p);
        uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) f[2 * i] = kn_bf16_lo(w[i]), f[2 * i + 1] = kn_bf16_hi(w[i]);
    } else if (DPL == 4) {
        uint2 u = kn_ldg((const uint2 *)p);
        f[0] = kn_bf16_lo(u.x), f[1] = kn_bf16_hi(u.x), f[2] = kn_bf16_lo(u.y), f[3] = kn_bf16_hi(u.y);
    } else {
        uint32_t u = kn_ldg((const uint32_t *)p);
        f[0] = kn_bf16_lo(u), f[1] = kn_bf16_hi(u);
    }
}

/* One block per (query t, KV head, split): its warps take the split's
 * positions in turn, each K and V row is read once for the group's heads,
 * and each warp keeps an online softmax (running max, Σ, Σ p·v) per head.
 * The warps' states are merged in shared memory; with one split the block
 * writes the gated output, otherwise its partial (max, Σ, Σ p·v) per head. */
/* V4 (v4): the group's queries staged in shared memory instead of
 * registers (48 fewer at Dh = 256) so two blocks fit on an SM (the cap of
 * 128 registers), and a warp loads the K and V rows of two positions
 * (c and c + 8) before it uses either, so four 16-byte loads per lane are in
 * flight rather than two. The positions are taken in the same order. */
template <int DPL, bool V4>
__global__ __launch_bounds__(256, V4 ? 2 : 1) void attention_split(float *out, const float *q, const float *qg,
                                                                   const uint16_t *Kc, const uint16_t *Vc,
                                                                   const int *bt, int ctx, int m, const uint64_t *mask,
                                                                   int H, int Hkv, float scale, int n_split,
                                                                   float *part_acc, float *part_m, float *part_l) {
    const int Dh = DPL * KN_WARP;
    __shared__ float sm_acc[ATT_WARPS][DPL * KN_WARP];
    __shared__ float sm_m[ATT_WARPS], sm_l[ATT_WARPS];
    __shared__ float sm_q[V4 ? ATT_MAX_GROUP : 1][DPL * KN_WARP];
    int kvh = blockIdx.x, t = blockIdx.y, split = blockIdx.z;
    int group = H / Hkv, lane = threadIdx.x % KN_WARP, warp = threadIdx.x / KN_WARP;
    int n = ctx + m, per = (n + n_split - 1) / n_split;
    int c0 = split * per, c1 = c0 + per < n ? c0 + per : n;

    float qr[V4 ? 1 : ATT_MAX_GROUP][DPL], acc[ATT_MAX_GROUP][DPL], mx[ATT_MAX_GROUP], l[ATT_MAX_GROUP];
#pragma unroll
    for (int j = 0; j < ATT_MAX_GROUP; j++) {
        mx[j] = -INFINITY, l[j] = 0.0f;
#pragma unroll
        for (int e = 0; e < DPL; e++) {
            acc[j][e] = 0.0f;
            if (!V4) qr[j][e] = j < group ? q[((size_t)t * H + kvh * group + j) * Dh + lane * DPL + e] : 0.0f;
        }
    }
    if (V4) {
        for (int i = threadIdx.x; i < group * Dh; i += blockDim.x)
            sm_q[i / Dh][i % Dh] = q[((size_t)t * H + kvh * group) * Dh + i];
        __syncthreads();
    }
    /* one position's online-softmax update for every head of the group */
    auto update = [&](const float *kr, const float *vr) {
#pragma unroll
        for (int j = 0; j < ATT_MAX_GROUP; j++) {
            if (j >= group) break;
            float dot = 0.0f;
#pragma unroll
            for (int e = 0; e < DPL; e++) dot += (V4 ? sm_q[j][lane * DPL + e] : qr[j][e]) * kr[e];
            float sc = kn_warp_sum(dot) * scale;
            float m_new = fmaxf(mx[j], sc);
            float corr = expf(mx[j] - m_new), p = expf(sc - m_new);
            l[j] = l[j] * corr + p;
#pragma unroll
            for (int e = 0; e < DPL; e++) acc[j][e] = acc[j][e] * corr + p * vr[e];
            mx[j] = m_new;
        }
    };
    if (V4) {
        for (int c = c0 + warp; c < c1; c += 2 * ATT_WARPS) {
            int cb = c + ATT_WARPS;
            int sa = candidate_slot(c, ctx, t, mask), sb = cb < c1 ? candidate_slot(cb, ctx, t, mask) : -1;
            float ka[DPL], va[DPL], kb[DPL], vb[DPL];
            if (sa >= 0) { /* uniform across the warp */
                size_t off = kn_paged_offset(bt, sa, kvh, lane * DPL, Hkv, Dh);
                load_row<DPL>(Kc + off, ka);
                load_row<DPL>(Vc + off, va);
            }
            if (sb >= 0) {
                size_t off = kn_paged_offset(bt, sb, kvh, lane * DPL, Hkv, Dh);
                load_row<DPL>(Kc + off, kb);
                load_row<DPL>(Vc + off, vb);
            }
            if (sa >= 0) update(ka, va);
            if (sb >= 0) update(kb, vb);
        }
    } else {
        for (int c = c0 + warp; c < c1; c += ATT_WARPS) {
            int s = candidate_slot(c, ctx, t, mask);
            if (s < 0) continue; /* uniform across the warp */
            size_t off = kn_paged_offset(bt, s, kvh, lane * DPL, Hkv, Dh);
            float kr[DPL], vr[DPL];
            load_row<DPL>(Kc + off, kr);
            load_row<DPL>(Vc + off, vr);
            update(kr, vr);
        }
    }
    /* merge the warps, one head at a time */
#pragma unroll
    for (int j = 0; j < ATT_MAX_GROUP; j++) {
        if (j >= group) break;
#pragma unroll
        for (int e = 0; e < DPL; e++) sm_acc[warp][lane * DPL + e] = acc[j][e];
        if (lane == 0) sm_m[warp] = mx[j], sm_l[warp] = l[j];
        __syncthreads();
        int h = kvh * group + j;
        for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
            float M = -INFINITY;
            for (int w = 0; w < ATT_WARPS; w++) M = fmaxf(M, sm_m[w]);
            float L = 0.0f, a = 0.0f;
            if (M != -INFINITY)
                for (int w = 0; w < ATT_WARPS; w++) {
                    float f = expf(sm_m[w] - M); /* an idle warp has m = −inf: weight 0 */
                    L += sm_l[w] * f;
                    a += sm_acc[w][d] * f;
                }
            if (n_split == 1) {
                float g = qg[((size_t)t * H + h) * 2 * Dh + Dh + d];
                /* op_output_gate (reference/ops/ops.h) */
                out[((size_t)t * H + h) * Dh + d] = M != -INFINITY ? a / L * sigmoidf_(g) : 0.0f;
            } else {
                size_t idx = (((size_t)t * Hkv + kvh) * n_split + split) * group + j;
                part_acc[idx * Dh + d] = a;
                if (d == 0) part_m[idx] = M, part_l[idx] = L;
            }
        }
        __syncthreads(); /* sm_* are rewritten for the next head */
    }
}

/* v3's second pass: one block of Dh threads per (query, head) merges the
 * splits' partials and applies the gate. */
__global__ void attention_combine(float *out, const float *qg, int H, int Hkv, int Dh, int n_split,
                                  const float *part_acc, const float *part_m, const float *part_l) {
    int h = blockIdx.x, t = blockIdx.y, group = H / Hkv, kvh = h / group, j = h % group;
    size_t first = (((size_t)t * Hkv + kvh) * n_split) * group + j; /* split s at first + s·group */
    float M = -INFINITY;
    for (int s = 0; s < n_split; s++) M = fmaxf(M, part_m[first + (size_t)s * group]);
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
        float L = 0.0f, a = 0.0f;
        if (M != -INFINITY)
            for (int s = 0; s < n_split; s++) {
                size_t idx = first + (size_t)s * group;
                float f = expf(part_m[idx] - M);
                L += part_l[idx] * f;
                a += part_acc[idx * Dh + d] * f;
            }
        float g = qg[((size_t)t * H + h) * 2 * Dh + Dh + d];
        /* op_output_gate (reference/ops/ops.h) */
        out[((size_t)t * H + h) * Dh + d] = M != -INFINITY ? a / L * sigmoidf_(g) : 0.0f;
    }
}

static int attn_args_ok(int ctx, int m, int H, int Hkv, int Dh) {
    return ctx >= 0 && m >= 1 && m <= KN_TREE_MAX && H >= 1 && Hkv >= 1 && H % Hkv == 0 && Dh >= 32 && Dh % 32 == 0 &&
           Dh <= 1024;
}

size_t kn_attention_work_floats(int ctx, int m, int H, int Hkv, int Dh) {
    size_t v1 = (size_t)m * H * (size_t)(ctx + m);
    size_t v3 = (size_t)m * Hkv * KN_ATTN_MAX_SPLIT * (size_t)(H / (Hkv > 0 ? Hkv : 1)) * (size_t)(Dh + 2);
    return v1 > v3 ? v1 : v3;
}

static cudaError_t launch_v1(float *out, const float *q, const float *qg, const uint16_t *Kc, const uint16_t *Vc,
                             const int *bt, int ctx, int m, const uint64_t *mask, int H, int Hkv, int Dh, float scale,
                             float *work, size_t work_floats, cudaStream_t s) {
    if (!attn_args_ok(ctx, m, H, Hkv, Dh) || work_floats < (size_t)m * H * (size_t)(ctx + m))
        return cudaErrorInvalidValue;
    dim3 grid(H, m);
    return KN_LAUNCH(attention_v1, grid, 256, 0, s, out, q, qg, Kc, Vc, bt, ctx, m, mask, H, Hkv, Dh, scale, work);
}

static cudaError_t launch_split(float *out, const float *q, const float *qg, const uint16_t *Kc, const uint16_t *Vc,
                                const int *bt, int ctx, int m, const uint64_t *mask, int H, int Hkv, int Dh,
                                float scale, float *work, size_t work_floats, cudaStream_t s, int n_split, int v4) {
    int group = H / Hkv, dpl = Dh / KN_WARP;
    if (group > ATT_MAX_GROUP || (dpl != 2 && dpl != 4 && dpl != 8))
        return launch_v1(out, q, qg, Kc, Vc, bt, ctx, m, mask, H, Hkv, Dh, scale, work, work_floats, s);
    size_t parts = (size_t)m * Hkv * n_split * group;
    if (n_split > 1 && work_floats < parts * (size_t)(Dh + 2)) return cudaErrorInvalidValue;
    float *part_acc = work, *part_m = work + parts * Dh, *part_l = part_m + parts;
    void (*k)(float *, const float *, const float *, const uint16_t *, const uint16_t *, const int *, int, int,
              const uint64_t *, int, int, float, int, float *, float *, float *) =
        v4 ? (dpl == 8   ? attention_split<8, true>
              : dpl == 4 ? attention_split<4, true>
                         : attention_split<2, true>)
           : (dpl == 8   ? attention_split<8, false>
              : dpl == 4 ? attention_split<4, false>
                         : attention_split<2, false>);
    dim3 grid(Hkv, m, n_split);
    cudaError_t e = KN_LAUNCH(k, grid, ATT_WARPS * KN_WARP, 0, s, out, q, qg, Kc, Vc, bt, ctx, m, mask, H, Hkv, scale,
                              n_split, part_acc, part_m, part_l);
    if (e != cudaSuccess || n_split == 1) return e;
    dim3 grid2(H, m);
    return KN_LAUNCH(attention_combine, grid2, Dh < 256 ? Dh : 256, 0, s, out, qg, H, Hkv, Dh, n_split, part_acc,
                     part_m, part_l);
}

static cudaError_t launch_v2(float *out, const float *q, const float *qg, const uint16_t *Kc, const uint16_t *Vc,
                             const int *bt, int ctx, int m, const uint64_t *mask, int H, int Hkv, int Dh, float scale,
                             float *work, size_t work_floats, cudaStream_t s) {
    if (!attn_args_ok(ctx, m, H, Hkv, Dh)) return cudaErrorInvalidValue;
    return launch_split(out, q, qg, Kc, Vc, bt, ctx, m, mask, H, Hkv, Dh, scale, work, work_floats, s, 1, 0);
}

/* v3 and v4: about `per_sm` blocks per SM, but at least 64 positions per split. */
static cudaError_t launch_splits(float *out, const float *q, const float *qg, const uint16_t *Kc, const uint16_t *Vc,
                                 const int *bt, int ctx, int m, const uint64_t *mask, int H, int Hkv, int Dh,
                                 float scale, float *work, size_t work_floats, cudaStream_t s, int per_sm, int v4) {
    int n = ctx + m;
    int want = kn_ceil_div((long)per_sm * kn_sm_count(), (long)m * Hkv);
    int most = kn_ceil_div(n, 64);
    int n_split = want < most ? want : most;
    if (n_split > KN_ATTN_MAX_SPLIT) n_split = KN_ATTN_MAX_SPLIT;
    if (n_split < 1) n_split = 1;
    return launch_split(out, q, qg, Kc, Vc, bt, ctx, m, mask, H, Hkv, Dh, scale, work, work_floats, s, n_split, v4);
}

static cudaError_t launch_v4(float *out, const float *q, const float *qg, const uint16_t *Kc, const uint16_t *Vc,
                             const int *bt, int ctx, int m, const uint64_t *mask, int H, int Hkv, int Dh, float scale,
                             float *work, size_t work_floats, cudaStream_t s) {
    if (!attn_args_ok(ctx, m, H, Hkv, Dh)) return cudaErrorInvalidValue;
    return launch_splits(out, q, qg, Kc, Vc, bt, ctx, m, mask, H, Hkv, Dh, scale, work, work_floats, s, 2, 1);
}

static cudaError_t launch_v3(float *out, const float *q, const float *qg, const uint16_t *Kc, const uint16_t *Vc,
                             const int *bt, int ctx, int m, const uint64_t *mask, int H, int Hkv, int Dh, float scale,
                             float *work, size_t work_floats, cudaStream_t s) {
    if (!attn_args_ok(ctx, m, H, Hkv, Dh)) return cudaErrorInvalidValue;
    /* about two blocks per SM, but at least 64 positions per split */
    int n = ctx + m;
    int want = kn_ceil_div(2L * kn_sm_count(), (long)m * Hkv);
    int most = kn_ceil_div(n, 64);
    int n_split = want < most ? want : most;
    if (n_split > KN_ATTN_MAX_SPLIT) n_split = KN_ATTN_MAX_SPLIT;
    if (n_split < 1) n_split = 1;
    return launch_split(out, q, qg, Kc, Vc, bt, ctx, m, mask, H, Hkv, Dh, scale, work, work_floats, s, n_split, 0);
}

static const kn_attention_version versions[] = {
    {"v1", "block per (query, head): scores in workspace, block softmax, thread per dim", launch_v1},
    {"v2", "block per (query, KV head): K/V rows read once for the GQA group, 16-byte loads, online softmax",
     launch_v2},
    {"v3", "v2 split over positions across blocks (flash-decoding) + a combine pass", launch_v3},
    {"v4", "v3 with q in shared memory (<= 128 registers: 2 blocks of 256 per SM), two positions in flight per warp",
     launch_v4},
};

cudaError_t kn_attention(float *out, const float *q, const float *qg, const uint16_t *Kc, const uint16_t *Vc,
                         const int *bt, int ctx, int m, const uint64_t *mask, int H, int Hkv, int Dh, float scale,
                         float *work, size_t work_floats, cudaStream_t s) {
    return launch_v4(out, q, qg, Kc, Vc, bt, ctx, m, mask, H, Hkv, Dh, scale, work, work_floats, s);
}

cudaError_t kn_attention_quant(float *out, const float *q, const float *qg, const unsigned char *Kc,
                               const unsigned char *Vc, const int *bt, int ctx, int m, const uint64_t *mask, int H,
                               int Hkv, int Dh, float scale, float *work, size_t work_floats, int bits,
                               cudaStream_t s) {
    if (!attn_args_ok(ctx, m, H, Hkv, Dh) || (bits != 8 && bits != 4) ||
        work_floats < (size_t)m * H * (size_t)(ctx + m))
        return cudaErrorInvalidValue;
    dim3 grid(H, m);
    if (bits == 8)
        return KN_LAUNCH(attention_quant<8>, grid, 256, 0, s, out, q, qg, Kc, Vc, bt, ctx, m, mask, H, Hkv, Dh, scale,
                         work);
    return KN_LAUNCH(attention_quant<4>, grid, 256, (size_t)Dh * sizeof(float), s, out, q, qg, Kc, Vc, bt, ctx, m, mask,
                     H, Hkv, Dh, scale, work);
}

const kn_attention_version *kn_attention_versions(int *count) {
    *count = (int)(sizeof versions / sizeof versions[0]);
    return versions;
}
