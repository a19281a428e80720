/* deltanet.cu — Gated DeltaNet's causal conv step and gated delta rule over a chain or tree of positions, one state
 * slot per node (kn_deltanet.h). A value head's state columns evolve independently given q and k, so the fast
 * version keeps a column slice in registers along a chain: a verify pass reads the committed state once. */
#include "kn_common.cuh"
#include "kn_deltanet.h"

/* op_silu, op_softplus and op_sigmoid of reference/ops/ops.c, on the device. */
__device__ __forceinline__ float silu(float z) { return z / (1.0f + expf(-z)); }
__device__ __forceinline__ float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* Node t's state: through a slot table, slot slot_of[t] of slots spaced `stride` floats apart (the engine's
 * state slots, written in place); without one, the t-th of `per_node` floats in a contiguous buffer. */
__device__ __forceinline__ float *node_state(float *slots, const int *slot_of, size_t stride, int t, size_t per_node) {
    return slots + (slot_of ? (size_t)slot_of[t] * stride : (size_t)t * per_node);
}

/* ---- conv step ----------------------------------------------------------------- */

/* v1: one thread per channel; every node reloads its parent's state from
 * memory (the slot just written by this same thread, or state0). */
__global__ void conv_v1(float *out, float *slots, const int *slot_of, size_t stride, const float *state0,
                        const float *x, const float *w, const int *parent, int m, int C, int K) {
    int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= C) return;
    const float *wc = w + (size_t)ch * K;
    const size_t per_node = (size_t)C * (K - 1), mine = (size_t)ch * (K - 1);
    float st[KN_CONV_MAX_K];
    for (int t = 0; t < m; t++) {
        int p = parent ? parent[t] : t - 1;
        const float *src = (p < 0 ? state0 : node_state(slots, slot_of, stride, p, per_node)) + mine;
        for (int j = 0; j < K - 1; j++) st[j] = src[j];
        float xv = x[(size_t)t * C + ch];
        float acc = wc[K - 1] * xv;
        for (int j = 0; j < K - 1; j++) acc += wc[j] * st[j];
        float *dst = node_state(slots, slot_of, stride, t, per_node) + mine; /* may be src: read above */
        for (int j = 0; j + 1 < K - 1; j++) dst[j] = st[j + 1];
        if (K > 1) dst[K - 2] = xv;
        out[(size_t)t * C + ch] = silu(acc);
    }
}

/* v2: K fixed at compile time (the state in registers, loops unrolled) and
 * the state carried in registers from a node to its child when the child
 * follows it, so a chain reads state0 once. */
template <int K>
__global__ void conv_v2(float *out, float *slots, const int *slot_of, size_t stride, const float *state0,
                        const float *x, const float *w, const int *parent, int m, int C) {
    int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= C) return;
    const size_t per_node = (size_t)C * (K - 1), mine = (size_t)ch * (K - 1);
    float wc[K], st[K > 1 ? K - 1 : 1];
#pragma unroll
    for (int j = 0; j < K; j++) wc[j] = w[(size_t)ch * K + j];
    int have = -2; /* the node whose state st holds */
    for (int t = 0; t < m; t++) {
        int p = parent ? parent[t] : t - 1;
        if (p != have) {
            const float *src = (p < 0 ? state0 : node_state(slots, slot_of, stride, p, per_node)) + mine;
#pragma unroll
            for (int j = 0; j < K - 1; j++) st[j] = src[j];
        }
        float xv = x[(size_t)t * C + ch];
        float acc = wc[K - 1] * xv;
#pragma unroll
        for (int j = 0; j < K - 1; j++) acc += wc[j] * st[j];
#pragma unroll
        for (int j = 0; j + 1 < K - 1; j++) st[j] = st[j + 1];
        if (K > 1) st[K - 2] = xv;
        float *dst = node_state(slots, slot_of, stride, t, per_node) + mine;
#pragma unroll
        for (int j = 0; j < K - 1; j++) dst[j] = st[j];
        out[(size_t)t * C + ch] = silu(acc);
        have = t;
    }
}

static int conv_args_ok(int m, int C, int K) { return m >= 1 && C >= 1 && K >= 2 && K <= KN_CONV_MAX_K; }

static cudaError_t launch_conv_v1(float *out, float *slots, const int *slot_of, size_t stride, const float *state0,
                                  const float *x, const float *w, const int *parent, int m, int C, int K,
                                  cudaStream_t s) {
    if (!conv_args_ok(m, C, K)) return cudaErrorInvalidValue;
    return KN_LAUNCH(conv_v1, kn_ceil_div(C, 128), 128, 0, s, out, slots, slot_of, stride, state0, x, w, parent, m, C,
                     K);
}

static cudaError_t launch_conv_v2(float *out, float *slots, const int *slot_of, size_t stride, const float *state0,
                                  const float *x, const float *w, const int *parent, int m, int C, int K,
                                  cudaStream_t s) {
    if (!conv_args_ok(m, C, K)) return cudaErrorInvalidValue;
    if (K != 4) return launch_conv_v1(out, slots, slot_of, stride, state0, x, w, parent, m, C, K, s);
    return KN_LAUNCH(conv_v2<4>, kn_ceil_div(C, 128), 128, 0, s, out, slots, slot_of, stride, state0, x, w, parent, m,
                     C);
}

static const kn_conv_version conv_versions[] = {
    {"v1", "thread per channel, parent state reloaded for every node", launch_conv_v1},
    {"v2", "K = 4 unrolled, state carried in registers along a chain", launch_conv_v2},
};

const kn_conv_version *kn_conv_versions(int *count) {
    *count = (int)(sizeof conv_versions / sizeof conv_versions[0]);
    return conv_versions;
}

/* ---- gated delta rule -------------------------------------------------------------- */

/* g, β and the decay exp(g) of node t, head h. */
__device__ __forceinline__ void gates(const float *a, const float *b, const float *A_log, const float *dt_bias, int t,
                                      int h, int Hv, float *decay, float *beta) {
    float g = -expf(A_log[h]) * softplus(a[(size_t)t * Hv + h] + dt_bias[h]); /* op_deltanet_decay (ops.h) */
    *decay = expf(g);
    *beta = sigmoid(b[(size_t)t * Hv + h]); /* op_deltanet_beta (ops.h) */
}

/* v1: one block per value head, one thread per state column j: the column
 * is read from the parent's slot, decayed, corrected and written to the
 * node's slot, with q and k normalised in shared memory. Two passes over the
 * column (the prediction Sᵀk, then the update and Sᵀq). */
__global__ void delta_v1(float *out, float *slots, const int *slot_of, size_t stride, const float *S0, const float *q,
                         const float *k, const float *v, const float *a, const float *b, const float *A_log,
                         const float *dt_bias, const int *parent, int m, int Hk, int Hv, int Dk, int Dv) {
    __shared__ float scratch[32];
    KN_DYN_SMEM(float, qk); /* [2, Dk]: normalised q then k */
    float *qs = qk, *ks = qk + Dk;
    int h = blockIdx.x, kh = h / (Hv / Hk), j = threadIdx.x;
    size_t head = (size_t)Dk * Dv;
    float qscale = 1.0f / sqrtf((float)Dk);
    for (int t = 0; t < m; t++) {
        int p = parent ? parent[t] : t - 1;
        const float *src = (p < 0 ? S0 : node_state(slots, slot_of, stride, p, Hv * head)) + (size_t)h * head;
        /* dst may be src (a chain written in place): each element is read before this thread writes it */
        float *dst = node_state(slots, slot_of, stride, t, Hv * head) + (size_t)h * head;
        const float *qt = q + ((size_t)t * Hk + kh) * Dk, *kt = k + ((size_t)t * Hk + kh) * Dk;
        float sq = 0.0f, sk = 0.0f;
        for (int i = threadIdx.x; i < Dk; i += blockDim.x) sq += qt[i] * qt[i], sk += kt[i] * kt[i];
        sq = kn_block_sum(sq, scratch);
        sk = kn_block_sum(sk, scratch);
        float rq = 1.0f / sqrtf(sq + 1e-6f), rk = 1.0f / sqrtf(sk + 1e-6f);
        for (int i = threadIdx.x; i < Dk; i += blockDim.x) qs[i] = qt[i] * rq * qscale, ks[i] = kt[i] * rk;
        __syncthreads();
        float decay, beta;
        gates(a, b, A_log, dt_bias, t, h, Hv, &decay, &beta);
        if (j < Dv) {
            float kv = 0.0f;
            for (int i = 0; i < Dk; i++) kv += src[(size_t)i * Dv + j] * decay * ks[i];
            float u = (v[((size_t)t * Hv + h) * Dv + j] - kv) * beta;
            float o = 0.0f;
            for (int i = 0; i < Dk; i++) {
                float s = src[(size_t)i * Dv + j] * decay + ks[i] * u;
                dst[(size_t)i * Dv + j] = s;
                o += s * qs[i];
            }
            out[((size_t)t * Hv + h) * Dv + j] = o;
        }
        __syncthreads(); /* qs, ks are rewritten for the next node */
    }
}

#define DELTA_COLS 32 /* state columns per block in v2 */

/* v2: a block per (value head, 32 columns); four lanes share a column, each
 * holding every fourth row of it in registers (RPT = Dk/4 rows), so the
 * column's dot products are two shuffles. A child that follows its parent
 * keeps the registers: a chain reads S0 once and writes each slot once.
 * FULL (Dk = 4·RPT, Dv a multiple of 32, the 27B shape) drops the edge
 * tests, which saves registers (docs/performance.md). */
template <int RPT, bool FULL>
__global__ __launch_bounds__(128) void delta_v2(float *out, float *slots, const int *slot_of, size_t stride,
                                                const float *S0, const float *q, const float *k, const float *v,
                                                const float *a, const float *b, const float *A_log,
                                                const float *dt_bias, const int *parent, int m, int Hk, int Hv, int Dk,
                                                int Dv) {
    __shared__ float scratch[32];
    __shared__ float qs[4 * RPT], ks[4 * RPT];
    int h = blockIdx.x, kh = h / (Hv / Hk);
    int lane = threadIdx.x % KN_WARP, warp = threadIdx.x / KN_WARP, r = lane % 4;
    int j = blockIdx.y * DELTA_COLS + warp * 8 + lane / 4;
    int tid = threadIdx.x;
    size_t head = (size_t)Dk * Dv;
    float qscale = 1.0f / sqrtf((float)Dk);
    float S[RPT];
    /* bit ii: row r + 4·ii exists (i < Dk). One register rather than RPT
     * predicates hoisted out of the loop over nodes, which took v2 to the
     * register cap when Dk is not 4·RPT (docs/performance.md) */
    uint32_t row_ok = 0;
#pragma unroll
    for (int ii = 0; ii < RPT; ii++) row_ok |= (uint32_t)(r + 4 * ii < Dk) << ii;
    const bool col_ok = j < Dv;
    int have = -2;
    for (int t = 0; t < m; t++) {
        int p = parent ? parent[t] : t - 1;
        const float *qt = q + ((size_t)t * Hk + kh) * Dk, *kt = k + ((size_t)t * Hk + kh) * Dk;
        float qv = tid < Dk ? qt[tid] : 0.0f, kv = tid < Dk ? kt[tid] : 0.0f;
        float sq = kn_block_sum(qv * qv, scratch);
        float sk = kn_block_sum(kv * kv, scratch);
        float rq = 1.0f / sqrtf(sq + 1e-6f), rk = 1.0f / sqrtf(sk + 1e-6f);
        if (tid < Dk) qs[tid] = qv * rq * qscale, ks[tid] = kv * rk;
        __syncthreads();
        float decay, beta;
        gates(a, b, A_log, dt_bias, t, h, Hv, &decay, &beta);
        if (p != have) {
            const float *src = (p < 0 ? S0 : node_state(slots, slot_of, stride, p, Hv * head)) + (size_t)h * head;
#pragma unroll
            for (int ii = 0; ii < RPT; ii++) {
                int i = r + 4 * ii;
                S[ii] = FULL || (col_ok && (row_ok >> ii & 1u)) ? src[(size_t)i * Dv + j] : 0.0f;
            }
        }
        float part = 0.0f;
#pragma unroll
        for (int ii = 0; ii < RPT; ii++) {
            int i = r + 4 * ii;
            S[ii] *= decay;
            if (FULL || (row_ok >> ii & 1u)) part += S[ii] * ks[i];
        }
        part += __shfl_xor_sync(0xffffffffu, part, 1);
        part += __shfl_xor_sync(0xffffffffu, part, 2);
        float u = ((col_ok ? v[((size_t)t * Hv + h) * Dv + j] : 0.0f) - part) * beta;
        float o = 0.0f;
        float *dst = node_state(slots, slot_of, stride, t, Hv * head) + (size_t)h * head;
#pragma unroll
        for (int ii = 0; ii < RPT; ii++) {
            int i = r + 4 * ii;
            if (FULL || (row_ok >> ii & 1u)) {
                S[ii] += ks[i] * u;
                o += S[ii] * qs[i];
                if (FULL || col_ok) dst[(size_t)i * Dv + j] = S[ii];
            }
        }
        o += __shfl_xor_sync(0xffffffffu, o, 1);
        o += __shfl_xor_sync(0xffffffffu, o, 2);
        if (r == 0 && col_ok) out[((size_t)t * Hv + h) * Dv + j] = o;
        have = t;
        __syncthreads(); /* qs, ks are rewritten for the next node */
    }
}

static int delta_args_ok(int m, int Hk, int Hv, int Dk, int Dv) {
    return m >= 1 && Hk >= 1 && Hv >= Hk && Hv % Hk == 0 && Dk >= 1 && Dk <= 1024 && Dv >= 1 && Dv <= 1024;
}

static cudaError_t launch_delta_v1(float *out, float *slots, const int *slot_of, size_t stride, const float *S0,
                                   const float *q, const float *k, const float *v, const float *a, const float *b,
                                   const float *A_log, const float *dt_bias, const int *parent, int m, int Hk, int Hv,
                                   int Dk, int Dv, cudaStream_t s) {
    if (!delta_args_ok(m, Hk, Hv, Dk, Dv)) return cudaErrorInvalidValue;
    int threads = kn_ceil_div(Dv, 32) * 32;
    return KN_LAUNCH(delta_v1, Hv, threads, 2 * Dk * sizeof(float), s, out, slots, slot_of, stride, S0, q, k, v, a, b,
                     A_log, dt_bias, parent, m, Hk, Hv, Dk, Dv);
}

static cudaError_t launch_delta_v2(float *out, float *slots, const int *slot_of, size_t stride, const float *S0,
                                   const float *q, const float *k, const float *v, const float *a, const float *b,
                                   const float *A_log, const float *dt_bias, const int *parent, int m, int Hk, int Hv,
                                   int Dk, int Dv, cudaStream_t s) {
    if (!delta_args_ok(m, Hk, Hv, Dk, Dv)) return cudaErrorInvalidValue;
    if (Dk > 128)
        return launch_delta_v1(out, slots, slot_of, stride, S0, q, k, v, a, b, A_log, dt_bias, parent, m, Hk, Hv, Dk,
                               Dv, s);
    dim3 grid(Hv, kn_ceil_div(Dv, DELTA_COLS));
    if (Dk == 128 && Dv % DELTA_COLS == 0)
        return KN_LAUNCH((delta_v2<32, true>), grid, 128, 0, s, out, slots, slot_of, stride, S0, q, k, v, a, b, A_log,
                         dt_bias, parent, m, Hk, Hv, Dk, Dv);
    return KN_LAUNCH((delta_v2<32, false>), grid, 128, 0, s, out, slots, slot_of, stride, S0, q, k, v, a, b, A_log,
                     dt_bias, parent, m, Hk, Hv, Dk, Dv);
}

static const kn_delta_version delta_versions[] = {
    {"v1", "block per value head, thread per state column, state read from the parent slot", launch_delta_v1},
    {"v2", "block per (head, 32 columns), 4 lanes per column in registers, chain kept on chip", launch_delta_v2},
};

const kn_delta_version *kn_delta_versions(int *count) {
    *count = (int)(sizeof delta_versions / sizeof delta_versions[0]);
    return delta_versions;
}
