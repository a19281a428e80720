/* sample.cu — the exponential-race draw and chain and tree acceptance on the device (kn_sample.h), following
 * sampler.c's and accept.c's definitions step by step: the same double arithmetic, the same Philox sites. One block
 * of 1024 threads per row, or per walk for acceptance. */
#include "kn_common.cuh"
#include "kn_philox.cuh"
#include "kn_race.cuh"
#include "kn_sample.h"

#define SB 1024 /* threads per row */

/* The exponential race over value(j), j < V, at one site: argmax value/E
 * among value > 0, lowest index on a tie, −1 when no value is positive.
 * Each thread takes whole Philox blocks (4 tokens), in increasing order. */
template <class F>
__device__ int block_race(int V, uint64_t seed, uint32_t purpose, uint64_t index, F value, double *sr, int *si) {
    double best_r = 0.0;
    int best = -1;
    int n_groups = (V + 3) / 4;
    for (int g = threadIdx.x; g < n_groups; g += blockDim.x) {
        float pv[4];
        int any = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int i = 4 * g + j;
            pv[j] = i < V ? value(i) : 0.0f;
            any |= pv[j] > 0.0f;
        }
        if (!any) continue; /* zero entries never race: no Philox call */
        uint32_t w[4];
        kn_site_block(seed, purpose, index, (uint32_t)g, w);
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (pv[j] > 0.0f) {
                double r = (double)pv[j] / kn_race_exponential(w[j]);
                if (r > best_r) best_r = r, best = 4 * g + j;
            }
    }
    return block_best(best_r, best, sr, si);
}

/* ---- the race -------------------------------------------------------------------------- */

__global__ __launch_bounds__(SB) void sample_kernel(int *tokens, const float *probs, int V, uint64_t seed,
                                                    uint32_t purpose, uint64_t index0) {
    __shared__ double sr[32];
    __shared__ int si[32];
    const float *p = probs + (size_t)blockIdx.x * V;
    int best = block_race(
        V, seed, purpose, index0 + blockIdx.x, [&](int i) { return p[i]; }, sr, si);
    if (threadIdx.x == 0) tokens[blockIdx.x] = best;
}

cudaError_t kn_sample(int *tokens, const float *probs, int m, int V, uint64_t seed, uint32_t purpose, uint64_t index0,
                      cudaStream_t s) {
    if (m < 1 || V < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(sample_kernel, m, SB, 0, s, tokens, probs, V, seed, purpose, index0);
}

/* ---- chain acceptance ------------------------------------------------------------------- */

/* accept.h's accept_draw_index, for the device. */
__device__ __forceinline__ uint64_t draw_index(uint64_t round, int position, int slot) {
    return (round << 40) | ((uint64_t)(uint32_t)position << 8) | (uint64_t)(slot & 0xff);
}

/* One block walks the chain: each acceptance test is one uniform; the first
 * rejection's residual norm(max(0, p − q)) (mass summed in double, values
 * rounded once to float, as accept_residual) is raced without being stored. */
__global__ __launch_bounds__(SB) void accept_kernel(int *result, const float *p, const float *q, const int *draft,
                                                    int k, int V, uint64_t seed, uint64_t round, int base) {
    __shared__ double sr[32];
    __shared__ int si[32];
    for (int i = 0; i < k; i++) {
        const float *pi = p + (size_t)i * V, *qi = q + (size_t)i * V;
        int x = draft[i], pos = base + i;
        float qx = (x >= 0 && x < V) ? qi[x] : 0.0f;
        if (!(qx > 0.0f)) { /* accept_exact fails here: the draft cannot have come from q */
            if (threadIdx.x == 0) result[0] = -1, result[1] = i + 1, result[2] = 0;
            return;
        }
        float u = kn_rng_uniform(seed, RNG_ACCEPT, draw_index(round, pos, 0));
        if (u * qx < pi[x]) continue; /* U < p(x)/q(x) */
        double mass = 0.0;
        for (int j = threadIdx.x; j < V; j += blockDim.x)
            if (pi[j] > qi[j]) mass += (double)pi[j] - qi[j];
        mass = kn_block_sum_d(mass, sr);
        int tok = block_race(
            V, seed, RNG_RESIDUAL, draw_index(round, pos, 0),
            [&](int j) {
                if (!(mass > 0.0)) return pi[j]; /* p ≤ q everywhere: the residual is p */
                return pi[j] > qi[j] ? (float)(((double)pi[j] - qi[j]) / mass) : 0.0f;
            },
            sr, si);
        if (threadIdx.x == 0) result[0] = i, result[1] = tok, result[2] = 0;
        return;
    }
    const float *pk = p + (size_t)k * V;
    int tok = block_race(
        V, seed, RNG_SAMPLE, draw_index(round, base + k, 0), [&](int j) { return pk[j]; }, sr, si);
    if (threadIdx.x == 0) result[0] = k, result[1] = tok, result[2] = 1;
}

cudaError_t kn_accept_chain(int *result, const float *p, const float *q, const int *draft, int k, int V, uint64_t seed,
                            uint64_t round, int base_position, cudaStream_t s) {
    if (k < 0 || V < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(accept_kernel, 1, SB, 0, s, result, p, q, draft, k, V, seed, round, base_position);
}

/* ---- tree acceptance -------------------------------------------------------------------- */

/* accept_exact's multi-round rejection over a tree, step for step: at node u the residual r starts as p_u and q
 * as u's proposal row (both in work, 2·V floats); each child in index order is tested with one uniform; a
 * rejection replaces r by norm(max(0, r − q)) (accept_residual) and, without replacement, q by norm(q without the
 * rejected token) (drop_and_renormalise) — sums in double, values rounded once to float, as there. The block's
 * sums add in another order than the host's loop, so r and q can differ from the host's in the last bit: a test
 * or race within that of a tie could go the other way (never seen in gpucheck's trials). */
__global__ __launch_bounds__(SB) void accept_tree_kernel(int *result, const float *p, const float *q, const int *token,
                                                         const int *parent, int n, int V, int without_replacement,
                                                         uint64_t seed, uint64_t round, int base, float *work) {
    __shared__ double sr[32];
    __shared__ int si[32];
    float *res = work, *qv = work + V;
    int u = 0, depth = 0, n_acc = 0;
    for (;;) {
        const int pos = base + depth;
        const float *pu = p + (size_t)u * V;
        int first = -1;
        for (int c = u + 1; c < n && first < 0; c++)
            if (parent[c] == u) first = c;
        if (first < 0) { /* a leaf: every proposal on the path was accepted */
            int tok = block_race(
                V, seed, RNG_SAMPLE, draw_index(round, pos, 0), [&](int j) { return pu[j]; }, sr, si);
            if (threadIdx.x == 0) result[0] = n_acc, result[1] = tok, result[2] = 1;
            return;
        }
        for (int j = threadIdx.x; j < V; j += blockDim.x) res[j] = pu[j], qv[j] = q[(size_t)u * V + j];
        __syncthreads();
        int next = -1;
        for (int c = first, slot = 0; c < n && next < 0; c++) {
            if (parent[c] != u) continue;
            const int x = token[c];
            const float qx = (x >= 0 && x < V) ? qv[x] : 0.0f;
            if (!(qx > 0.0f)) { /* accept_exact fails here: the draft cannot have come from q */
                if (threadIdx.x == 0) result[0] = -1, result[1] = c, result[2] = 0;
                return;
            }
            const float uni = kn_rng_uniform(seed, RNG_ACCEPT, draw_index(round, pos, slot++));
            if (uni * qx < res[x]) { /* U < r(x)/q(x) */
                next = c;
                break;
            }
            double mass = 0.0;
            for (int j = threadIdx.x; j < V; j += blockDim.x)
                if (res[j] > qv[j]) mass += (double)res[j] - qv[j];
            mass = kn_block_sum_d(mass, sr);
            if (mass > 0.0) /* else p ≤ q everywhere: the residual stays as it is */
                for (int j = threadIdx.x; j < V; j += blockDim.x)
                    res[j] = res[j] > qv[j] ? (float)(((double)res[j] - qv[j]) / mass) : 0.0f;
            __syncthreads();
            if (without_replacement) {
                if (threadIdx.x == 0) qv[x] = 0.0f;
                __syncthreads();
                double sum = 0.0;
                for (int j = threadIdx.x; j < V; j += blockDim.x) sum += qv[j];
                sum = kn_block_sum_d(sum, sr);
                if (sum > 0.0)
                    for (int j = threadIdx.x; j < V; j += blockDim.x) qv[j] = (float)(qv[j] / sum);
                __syncthreads();
            }
        }
        if (next < 0) { /* every child rejected: the correction, from the residual */
            int tok = block_race(
                V, seed, RNG_RESIDUAL, draw_index(round, pos, 0), [&](int j) { return res[j]; }, sr, si);
            if (threadIdx.x == 0) result[0] = n_acc, result[1] = tok, result[2] = 0;
            return;
        }
        if (threadIdx.x == 0) result[3 + n_acc] = next;
        n_acc++, depth++, u = next;
        __syncthreads(); /* res and qv are rewritten for the next node */
    }
}

cudaError_t kn_accept_tree(int *result, const float *p, const float *q, const int *token, const int *parent, int n,
                           int V, int without_replacement, uint64_t seed, uint64_t round, int base_position,
                           float *work, cudaStream_t s) {
    if (n < 1 || V < 1) return cudaErrorInvalidValue;
    return KN_LAUNCH(accept_tree_kernel, 1, SB, 0, s, result, p, q, token, parent, n, V, without_replacement, seed,
                     round, base_position, work);
}
