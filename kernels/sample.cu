/* sample.cu — logits to the processed distribution, the exponential-race
 * draw and chain acceptance on the device (kn_sample.h), following
 * sampler.c's and accept.c's definitions step by step: the same double
 * arithmetic, the same thresholds (found by radix selection over the
 * values' bit patterns instead of a sort), the same Philox sites. One block
 * of 1024 threads per row: a row is 1 MB at V = 248320, read from L2. */
#include "kn_common.cuh"
#include "kn_philox.cuh"
#include "kn_sample.h"

#define SB 1024 /* threads per row */

/* Float → an unsigned key with the same order (NaN ordered as −inf, the
 * reference's reading of a NaN logit), and back. */
__device__ __forceinline__ uint32_t fkey(float f) {
    if (f != f) f = -INFINITY;
    uint32_t u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float fkey_inv(uint32_t k) {
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

/* Is (r, i) a better race entry than (r2, i2)? Larger ratio, then lower index. */
__device__ __forceinline__ int race_better(double r, int i, double r2, int i2) {
    return i >= 0 && (i2 < 0 || r > r2 || (r == r2 && i < i2));
}

/* The block's best (r, i); every thread gets it. */
__device__ __forceinline__ int block_best(double r, int i, double *sr, int *si) {
    for (int o = 16; o > 0; o >>= 1) {
        double r2 = __shfl_xor_sync(0xffffffffu, r, o);
        int i2 = __shfl_xor_sync(0xffffffffu, i, o);
        if (race_better(r2, i2, r, i)) r = r2, i = i2;
    }
    int lane = threadIdx.x % KN_WARP, warp = threadIdx.x / KN_WARP, n_warps = blockDim.x / KN_WARP;
    __syncthreads();
    if (lane == 0) sr[warp] = r, si[warp] = i;
    __syncthreads();
    r = lane < n_warps ? sr[lane] : 0.0, i = lane < n_warps ? si[lane] : -1;
    for (int o = 16; o > 0; o >>= 1) {
        double r2 = __shfl_xor_sync(0xffffffffu, r, o);
        int i2 = __shfl_xor_sync(0xffffffffu, i, o);
        if (race_better(r2, i2, r, i)) r = r2, i = i2;
    }
    return i;
}

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

/* ---- processed distribution ----------------------------------------------------- */

/* The k-th largest logit of lg[V], duplicates counted: a radix select over
 * the 32-bit order-preserving keys, one byte per pass, most significant
 * first. hist[256] and the two scalars are the block's shared scratch. */
__device__ float topk_threshold(const float *lg, int V, int k, int *hist, unsigned long long *sh_prefix, int *sh_krem) {
    const int tid = threadIdx.x, nt = blockDim.x;
    uint32_t prefix = 0;
    int krem = k;
    for (int d = 3; d >= 0; d--) {
        int shift = 8 * d;
        uint32_t hmask = d == 3 ? 0u : (0xffffffffu << (shift + 8));
        for (int b = tid; b < 256; b += nt) hist[b] = 0;
        __syncthreads();
        for (int i = tid; i < V; i += nt) {
            uint32_t key = fkey(lg[i]);
            if ((key & hmask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], 1);
        }
        __syncthreads();
        if (tid == 0) {
            int b = 255;
            for (; b > 0; b--) {
                if (krem <= hist[b]) break;
                krem -= hist[b];
            }
            *sh_prefix = prefix | ((uint32_t)b << shift);
            *sh_krem = krem;
        }
        __syncthreads();
        prefix = (uint32_t)*sh_prefix, krem = *sh_krem;
    }
    return fkey_inv(prefix);
}

/* top-p's cut over the weights e[V] (their sum times top_p is `target`): the
 * largest weight τ whose group and everything above holds the target, by a
 * radix select over the weights' 64-bit patterns with the mass of each
 * bucket; 0 (nothing cut) when no group reaches it (rounding near 1).
 * hist[256], hmass[256] and the scalars are the block's shared scratch. */
__device__ double topp_cut(const double *e, int V, double target, int *hist, double *hmass,
                           unsigned long long *sh_prefix, double *sh_above, int *sh_done) {
    const int tid = threadIdx.x, nt = blockDim.x;
    double above = 0.0;
    unsigned long long prefix = 0;
    if (tid == 0) *sh_done = 0;
    for (int d = 7; d >= 0; d--) {
        int shift = 8 * d;
        unsigned long long hmask = d == 7 ? 0ull : (~0ull << (shift + 8));
        for (int b = tid; b < 256; b += nt) hist[b] = 0, hmass[b] = 0.0;
        __syncthreads();
        for (int i = tid; i < V; i += nt) {
            double ei = e[i];
            if (ei > 0.0) {
                unsigned long long key = (unsigned long long)__double_as_longlong(ei);
                if ((key & hmask) == prefix) {
                    int b = (int)((key >> shift) & 255u);
                    atomicAdd(&hist[b], 1);
                    atomicAdd(&hmass[b], ei);
                }
            }
        }
        __syncthreads();
        if (tid == 0) {
            double cum = above;
            int chosen = -1, lowest = -1;
            for (int b = 255; b >= 0; b--) {
                if (!hist[b]) continue;
                lowest = b;
                if (cum + hmass[b] >= target) {
                    chosen = b;
                    break;
                }
                cum += hmass[b];
            }
            if (chosen < 0 && d == 7) {
                *sh_done = 1; /* no group reaches top_p·S (rounding near 1): nothing is cut */
            } else {
                if (chosen < 0) { /* a deeper level misses by rounding: the whole group is needed */
                    chosen = lowest;
                    cum -= hmass[lowest];
                }
                *sh_prefix = prefix | ((unsigned long long)chosen << shift);
                *sh_above = cum;
            }
        }
        __syncthreads();
        if (*sh_done) return 0.0;
        prefix = *sh_prefix, above = *sh_above;
    }
    return __longlong_as_double((long long)prefix);
}

/* v1: one block per row, every pass over the whole row: max, top-k by a
 * 4-pass radix select on the logits' keys, the weights e = exp(z − m) in
 * double (kept in the workspace), top-p by an 8-pass radix walk over the
 * weights' bit patterns carrying the mass of each bucket, min-p, then
 * the normalisation. */
__global__ __launch_bounds__(SB) void probs_v1(float *probs, const float *logits, int V, sampler_params sp, int valid,
                                               double *work) {
    __shared__ int hist[256];
    __shared__ double hmass[256];
    __shared__ float fscratch[32];
    __shared__ double dscratch[32];
    __shared__ int iscratch[32];
    __shared__ unsigned long long sh_prefix;
    __shared__ double sh_above;
    __shared__ int sh_krem, sh_done;
    int row = blockIdx.x, tid = threadIdx.x, nt = blockDim.x;
    const float *lg = logits + (size_t)row * V;
    float *pr = probs + (size_t)row * V;
    double *e = work + (size_t)row * V;
    if (!valid) { /* sampler_validate failed: an all-zero row */
        for (int i = tid; i < V; i += nt) pr[i] = 0.0f;
        return;
    }
    if (sp.temperature == 0.0f) { /* one-hot at the lowest index of the maximum */
        float bv = -INFINITY;
        int bi = -1;
        for (int i = tid; i < V; i += nt)
            if (lg[i] > bv) bv = lg[i], bi = i;
        int best = block_best(bv, bi, dscratch, iscratch);
        for (int i = tid; i < V; i += nt) pr[i] = i == best ? 1.0f : 0.0f;
        return;
    }
    float mx = -INFINITY;
    for (int i = tid; i < V; i += nt)
        if (lg[i] > mx) mx = lg[i];
    mx = kn_block_max(mx, fscratch);
    if (mx == -INFINITY) { /* nothing to choose from */
        for (int i = tid; i < V; i += nt) pr[i] = 0.0f;
        return;
    }
    double T = sp.temperature, m = (double)mx / T; /* max z = z of the max logit: z is increasing */

    /* top-k: κ = the k-th largest logit, duplicates counted (z ≥ κ_z ⇔ logit ≥ κ) */
    const float kappa =
        sp.top_k > 0 && sp.top_k < V ? topk_threshold(lg, V, sp.top_k, hist, &sh_prefix, &sh_krem) : -INFINITY;

    /* weights over the kept entries; S */
    double S = 0.0;
    for (int i = tid; i < V; i += nt) {
        float x = lg[i];
        double ei = 0.0;
        if (x >= kappa) { /* false for NaN */
            double z = (double)x / T;
            ei = m == INFINITY ? (z == INFINITY ? 1.0 : 0.0) : exp(z - m);
        }
        e[i] = ei; /* read back only by this thread */
        S += ei;
    }
    S = kn_block_sum_d(S, dscratch);

    /* top-p: τ = the largest weight whose group and everything above holds top_p·S */
    double cut =
        sp.top_p < 1.0f ? topp_cut(e, V, (double)sp.top_p * S, hist, hmass, &sh_prefix, &sh_above, &sh_done) : 0.0;
    if ((double)sp.min_p > cut) cut = (double)sp.min_p;
    double kept = 0.0;
    for (int i = tid; i < V; i += nt)
        if (e[i] >= cut) kept += e[i];
    kept = kn_block_sum_d(kept, dscratch);
    for (int i = tid; i < V; i += nt) pr[i] = e[i] >= cut ? (float)(e[i] / kept) : 0.0f;
}

size_t kn_probs_work_doubles(int m, int V) { return (size_t)m * (size_t)V; }

static cudaError_t launch_probs_v1(float *probs, const float *logits, int m, int V, sampler_params sp, double *work,
                                   size_t work_doubles, cudaStream_t s) {
    if (m < 1 || V < 1 || work_doubles < kn_probs_work_doubles(m, V)) return cudaErrorInvalidValue;
    int valid = sampler_validate(&sp, NULL) == 0;
    return KN_LAUNCH(probs_v1, m, SB, 0, s, probs, logits, V, sp, valid, work);
}

static const kn_probs_version probs_versions[] = {
    {"v1", "block per row: radix select for top-k, radix walk with bucket masses for top-p, double weights",
     launch_probs_v1},
};

const kn_probs_version *kn_probs_versions(int *count) {
    *count = (int)(sizeof probs_versions / sizeof probs_versions[0]);
    return probs_versions;
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
            if (threadIdx.x == 0) result[0] = -1, result[1] = -1, result[2] = 0;
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
