/* probs.cu — logits to the processed distribution on the device (kn_sample.h), following sampler.c's sampler_probs
 * step by step: the same double arithmetic and the same thresholds, found by radix selection over the values' bit
 * patterns instead of a sort. */
#include "kn_common.cuh"
#include "kn_race.cuh"
#include "kn_sample.h"

#define SB 1024 /* threads per row (v1) */

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

/* v1: one block of SB threads per row (a row is 1 MB at V = 248320, read from L2), every pass over the whole row:
 * max, top-k by a
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

static cudaError_t launch_probs_v1(float *probs, const float *logits, int m, int V, sampler_params sp, double *work,
                                   size_t work_doubles, cudaStream_t s) {
    if (m < 1 || V < 1 || work_doubles < (size_t)m * (size_t)V) return cudaErrorInvalidValue;
    int valid = sampler_validate(&sp, NULL) == 0;
    return KN_LAUNCH(probs_v1, m, SB, 0, s, probs, logits, V, sp, valid, work);
}

/* ---- probs v2: several blocks per row, no double atomics ------------------------ */

/* v2 splits a row over G blocks (a grid of G × m) and walks v1's steps as a
 * chain of launches, each pass over its slice of the row: the max and the
 * first top-k byte; the three other top-k bytes; the weights and the first
 * top-p byte; the seven other top-p bytes; the cut and the kept mass; the
 * normalisation. A pass first repeats, in every block and in a fixed order,
 * the decision of the previous pass from the G blocks' histograms (so every
 * block holds the same prefix; block 0 records it for the next pass), then
 * builds its own histogram. Bucket masses take no atomics: lanes of a warp
 * with the same bucket (__match_any_sync) are summed by a tree over their
 * ranks, the group's first lane adds the sum to its warp's own histogram,
 * and the warps' histograms are added in warp order, so the masses are the
 * same on every run. Launches that an option does not need are skipped. */
#define P2_THREADS 256
#define P2_WARPS (P2_THREADS / KN_WARP)
#define P2_MAX_G 32 /* blocks per row, at most */
#define P2_CTL 64   /* per-row control words (doubles) */

/* The per-row workspace of v2, carved from `work` (doubles). */
struct p2_row {
    double *e;    /* [V] the weights */
    double *ctl;  /* [P2_CTL] decisions recorded by block 0 */
    int *hc;      /* [2][P2_MAX_G][256] bucket counts, double-buffered by level */
    double *hm;   /* [2][P2_MAX_G][256] bucket masses */
    double *part; /* [4][P2_MAX_G] per-block max, S, kept mass, argmax index */
};

__host__ __device__ static inline size_t p2_row_doubles(int V) {
    return (size_t)V + P2_CTL + 2 * P2_MAX_G * 256 / 2 + 2 * P2_MAX_G * 256 + 4 * P2_MAX_G;
}

__device__ static inline p2_row p2_row_at(double *work, int V, int row) {
    double *base = work + (size_t)row * p2_row_doubles(V);
    p2_row r;
    r.e = base;
    r.ctl = base + V;
    r.hc = (int *)(r.ctl + P2_CTL);
    r.hm = (double *)(r.hc + 2 * P2_MAX_G * 256);
    r.part = r.hm + 2 * P2_MAX_G * 256;
    return r;
}

/* ctl slots: top-k after level d (3..0): prefix, remaining k; top-p after
 * level d (7..0): prefix bits, mass above, done; the cut. */
#define TK_PREFIX(d) (2 * (d))
#define TK_KREM(d) (2 * (d) + 1)
#define TP_PREFIX(d) (8 + 3 * (d))
#define TP_ABOVE(d) (9 + 3 * (d))
#define TP_DONE(d) (10 + 3 * (d))
#define CTL_CUT 40
#define PART_MAX 0
#define PART_S 1
#define PART_KEPT 2
#define PART_IDX 3

struct p2_args {
    float *probs;
    const float *logits;
    double *work;
    int V, G;
    sampler_params sp;
    int topk, topp; /* the option is active */
};

/* The block's slice of a row: [lo, hi). */
__device__ static inline void p2_slice(int V, int G, int *lo, int *hi) {
    int chunk = (V + G - 1) / G;
    *lo = blockIdx.x * chunk;
    *hi = *lo + chunk < V ? *lo + chunk : V;
}

/* Position of the n-th (from 0) set bit of m; n < popc(m). */
__device__ static inline int nth_set(unsigned m, int n) {
    int pos = 0;
    for (int w = 16; w > 0; w >>= 1) {
        int c = __popc(m & ((1u << w) - 1u));
        if (n >= c) n -= c, m >>= w, pos += w;
    }
    return pos;
}

/* Adds (1, e) to bucket `key` (0..255; −1: nothing) of the warp's own
 * histogram (wc, wm): the lanes of one bucket are summed by a tree over their
 * ranks in the group, in a fixed order, and the group's first lane adds the
 * sum. Every lane of the warp calls it. */
__device__ static inline void warp_hist_add(int *wc, double *wm, int key, double e) {
    if (!__ballot_sync(0xffffffffu, key >= 0)) return;
    int lane = threadIdx.x % KN_WARP;
    unsigned peers = __match_any_sync(0xffffffffu, key);
    int rank = __popc(peers & ((1u << lane) - 1u)), size = __popc(peers);
    double v = key >= 0 ? e : 0.0;
    for (int off = 1; __ballot_sync(0xffffffffu, size > off); off <<= 1) {
        int src = rank + off < size ? nth_set(peers, rank + off) : lane;
        double w = __shfl_sync(0xffffffffu, v, src);
        if (rank % (2 * off) == 0 && rank + off < size) v += w;
    }
    if (rank == 0 && key >= 0) wc[key] += size, wm[key] += v;
    __syncwarp();
}

/* The block's shared histograms: per warp (counts, masses), then merged. */
struct p2_smem {
    int wc[P2_WARPS][256];
    double wm[P2_WARPS][256];
    int hist[256];
    double hmass[256];
    double fscr[32];
    int iscr[32];
    float mscr[32];
    uint32_t prefix;            /* top-k: the decided prefix */
    unsigned long long pprefix; /* top-p: the decided prefix */
    int done;                   /* top-p: nothing is cut */
};

/* What every pass of one block works on. */
struct p2_block {
    p2_row r;
    const float *lg; /* the row's logits */
    float *pr;       /* the row's probabilities */
    int lo, hi;      /* the block's slice */
};

/* The G blocks' histograms of buffer buf summed into sm.hist / sm.hmass,
 * thread b summing bucket b over g ascending (every block alike). */
__device__ static inline void p2_gather(p2_smem &sm, const p2_row &r, int G, int buf) {
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {
        int c = 0;
        double ms = 0.0;
        for (int g = 0; g < G; g++) {
            c += r.hc[((size_t)buf * P2_MAX_G + g) * 256 + b];
            ms += r.hm[((size_t)buf * P2_MAX_G + g) * 256 + b];
        }
        sm.hist[b] = c, sm.hmass[b] = ms;
    }
    __syncthreads();
}

/* The row's max logit: the G blocks' maxima, g ascending (every block alike). */
__device__ static inline float p2_max(const p2_row &r, int G) {
    float mx = -INFINITY;
    for (int g = 0; g < G; g++) {
        float v = (float)r.part[PART_MAX * P2_MAX_G + g];
        if (v > mx) mx = v;
    }
    return mx;
}

__device__ static inline double p2_sum(const p2_row &r, int which, int G) {
    double t = 0.0;
    for (int g = 0; g < G; g++) t += r.part[which * P2_MAX_G + g];
    return t;
}

/* Writes the block's counts (and masses, when with_mass) of buffer buf from
 * the per-warp histograms, warps in order, then clears them. */
__device__ static inline void p2_flush(p2_smem &sm, const p2_row &r, int buf, int with_mass) {
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {
        int c = 0;
        double ms = 0.0;
        for (int w = 0; w < P2_WARPS; w++) c += sm.wc[w][b], ms += sm.wm[w][b];
        r.hc[((size_t)buf * P2_MAX_G + blockIdx.x) * 256 + b] = c;
        r.hm[((size_t)buf * P2_MAX_G + blockIdx.x) * 256 + b] = with_mass ? ms : 0.0;
    }
}

__device__ static inline void p2_clear(p2_smem &sm) {
    for (int i = threadIdx.x; i < P2_WARPS * 256; i += blockDim.x)
        sm.wc[i / 256][i % 256] = 0, sm.wm[i / 256][i % 256] = 0.0;
    __syncthreads();
}

/* Top-k histogram (counts) of level d over the slice: keys whose bytes
 * above d match prefix. Integer shared atomics (native). */
__device__ static inline void p2_topk_hist(p2_smem &sm, const p2_row &r, const float *lg, int lo, int hi, int d,
                                           uint32_t prefix) {
    int shift = 8 * d;
    uint32_t hmask = d == 3 ? 0u : (0xffffffffu << (shift + 8));
    for (int b = threadIdx.x; b < 256; b += blockDim.x) sm.hist[b] = 0;
    __syncthreads();
    for (int i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        uint32_t k = fkey(lg[i]);
        if ((k & hmask) == prefix) atomicAdd(&sm.hist[(k >> shift) & 255u], 1);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {
        r.hc[((size_t)(d & 1) * P2_MAX_G + blockIdx.x) * 256 + b] = sm.hist[b];
        r.hm[((size_t)(d & 1) * P2_MAX_G + blockIdx.x) * 256 + b] = 0.0;
    }
}

/* Top-p histogram of level d over the slice's positive weights. */
__device__ static inline void p2_topp_hist(p2_smem &sm, const p2_row &r, int lo, int hi, int d,
                                           unsigned long long prefix) {
    int shift = 8 * d;
    unsigned long long hmask = d == 7 ? 0ull : (~0ull << (shift + 8));
    p2_clear(sm);
    int warp = threadIdx.x / KN_WARP;
    for (int i0 = lo; i0 < hi; i0 += blockDim.x) {
        int i = i0 + threadIdx.x, key = -1;
        double ei = 0.0;
        if (i < hi) {
            ei = r.e[i];
            unsigned long long k = (unsigned long long)__double_as_longlong(ei);
            if (ei > 0.0 && (k & hmask) == prefix) key = (int)((k >> shift) & 255u);
        }
        warp_hist_add(sm.wc[warp], sm.wm[warp], key, ei);
    }
    p2_flush(sm, r, d & 1, 1);
}

/* v1's top-k decision at level d from the gathered counts (thread 0). */
__device__ static inline void p2_topk_decide(const p2_smem &sm, int d, uint32_t *prefix, int *krem) {
    int b = 255;
    for (; b > 0; b--) {
        if (*krem <= sm.hist[b]) break;
        *krem -= sm.hist[b];
    }
    *prefix |= (uint32_t)b << (8 * d);
}

/* v1's top-p decision at level d (topp_cut's thread-0 step) from the
 * gathered counts and masses. */
__device__ static inline void p2_topp_decide(const p2_smem &sm, int d, double target, unsigned long long *prefix,
                                             double *above, int *done) {
    double cum = *above;
    int chosen = -1, lowest = -1;
    for (int b = 255; b >= 0; b--) {
        if (!sm.hist[b]) continue;
        lowest = b;
        if (cum + sm.hmass[b] >= target) {
            chosen = b;
            break;
        }
        cum += sm.hmass[b];
    }
    if (chosen < 0 && d == 7) {
        *done = 1; /* no group reaches top_p·S (rounding near 1): nothing is cut */
        return;
    }
    if (chosen < 0) { /* a deeper level misses by rounding: the whole group is needed */
        chosen = lowest;
        cum -= sm.hmass[lowest];
    }
    *prefix |= (unsigned long long)chosen << (8 * d);
    *above = cum;
}

enum { P2_MAXPASS, P2_TOPK, P2_WEIGHTS, P2_TOPP, P2_CUT, P2_NORM, P2_ARGMAX, P2_ONEHOT, P2_ZERO };

/* Greedy: the block's best (value, lowest index), then the one-hot row from
 * the G bests (g ascending: larger value, then lower index). */
__device__ static void p2_greedy(p2_smem &sm, const p2_args &a, const p2_block &k, int pass) {
    const int tid = threadIdx.x, G = a.G;
    if (pass == P2_ARGMAX) {
        float bv = -INFINITY;
        int bi = -1;
        for (int i = k.lo + tid; i < k.hi; i += blockDim.x)
            if (k.lg[i] > bv) bv = k.lg[i], bi = i;
        int best = block_best(bv, bi, sm.fscr, sm.iscr);
        __syncthreads();
        if (tid == 0) {
            k.r.part[PART_MAX * P2_MAX_G + blockIdx.x] = best >= 0 ? k.lg[best] : -INFINITY;
            k.r.part[PART_IDX * P2_MAX_G + blockIdx.x] = best;
        }
        return;
    }
    double bv = 0.0;
    int best = -1;
    for (int g = 0; g < G; g++) {
        int i = (int)k.r.part[PART_IDX * P2_MAX_G + g];
        double v = k.r.part[PART_MAX * P2_MAX_G + g];
        if (race_better(v, i, bv, best)) bv = v, best = i;
    }
    for (int i = k.lo + tid; i < k.hi; i += blockDim.x) k.pr[i] = i == best ? 1.0f : 0.0f;
}

/* P2_TOPK at d: decide top-k level d + 1, histogram level d. P2_WEIGHTS:
 * decide level 0 (κ), the weights and their partial sum, and the first
 * top-p histogram. m: the max logit over T. */
__device__ static void p2_weights(p2_smem &sm, const p2_args &a, const p2_block &k, int pass, int d, double m) {
    const int tid = threadIdx.x;
    const double T = a.sp.temperature;
    float kappa = -INFINITY;
    if (a.topk) {
        int dd = pass == P2_TOPK ? d + 1 : 0;
        p2_gather(sm, k.r, a.G, dd & 1);
        if (tid == 0) {
            uint32_t prefix = dd == 3 ? 0u : (uint32_t)k.r.ctl[TK_PREFIX(dd + 1)];
            int krem = dd == 3 ? a.sp.top_k : (int)k.r.ctl[TK_KREM(dd + 1)];
            p2_topk_decide(sm, dd, &prefix, &krem);
            sm.prefix = prefix;
            if (blockIdx.x == 0) k.r.ctl[TK_PREFIX(dd)] = prefix, k.r.ctl[TK_KREM(dd)] = krem;
        }
        __syncthreads();
        if (pass == P2_TOPK) {
            p2_topk_hist(sm, k.r, k.lg, k.lo, k.hi, d, sm.prefix);
            return;
        }
        kappa = fkey_inv(sm.prefix);
    }
    double S = 0.0;
    for (int i = k.lo + tid; i < k.hi; i += blockDim.x) {
        float x = k.lg[i];
        double ei = 0.0;
        if (x >= kappa) { /* false for NaN */
            double z = (double)x / T;
            ei = m == INFINITY ? (z == INFINITY ? 1.0 : 0.0) : exp(z - m);
        }
        k.r.e[i] = ei;
        S += ei;
    }
    S = kn_block_sum_d(S, sm.fscr);
    if (tid == 0) k.r.part[PART_S * P2_MAX_G + blockIdx.x] = S;
    if (a.topp) {
        __syncthreads(); /* this block's weights, written above, are read back */
        p2_topp_hist(sm, k.r, k.lo, k.hi, 7, 0ull);
    }
}

/* P2_TOPP at d: decide top-p level d + 1, histogram level d. P2_CUT: decide
 * level 0, the cut (with min-p) and the block's kept mass. S: Σ weights. */
__device__ static void p2_cut(p2_smem &sm, const p2_args &a, const p2_block &k, int pass, int d, double S) {
    const int tid = threadIdx.x;
    double cut = 0.0;
    if (a.topp) {
        int dd = pass == P2_TOPP ? d + 1 : 0;
        p2_gather(sm, k.r, a.G, dd & 1);
        if (tid == 0) {
            unsigned long long prefix = 0;
            double above = 0.0;
            int done = 0;
            if (dd < 7) {
                prefix = (unsigned long long)__double_as_longlong(k.r.ctl[TP_PREFIX(dd + 1)]);
                above = k.r.ctl[TP_ABOVE(dd + 1)];
                done = k.r.ctl[TP_DONE(dd + 1)] != 0.0;
            }
            if (!done) p2_topp_decide(sm, dd, (double)a.sp.top_p * S, &prefix, &above, &done);
            sm.pprefix = prefix, sm.done = done;
            if (blockIdx.x == 0) {
                k.r.ctl[TP_PREFIX(dd)] = __longlong_as_double((long long)prefix);
                k.r.ctl[TP_ABOVE(dd)] = above;
                k.r.ctl[TP_DONE(dd)] = done;
            }
        }
        __syncthreads();
        if (pass == P2_TOPP) {
            if (!sm.done) p2_topp_hist(sm, k.r, k.lo, k.hi, d, sm.pprefix);
            return;
        }
        cut = sm.done ? 0.0 : __longlong_as_double((long long)sm.pprefix);
    }
    if ((double)a.sp.min_p > cut) cut = (double)a.sp.min_p;
    double kept = 0.0;
    for (int i = k.lo + tid; i < k.hi; i += blockDim.x)
        if (k.r.e[i] >= cut) kept += k.r.e[i];
    kept = kn_block_sum_d(kept, sm.fscr);
    if (tid == 0) {
        k.r.part[PART_KEPT * P2_MAX_G + blockIdx.x] = kept;
        if (blockIdx.x == 0) k.r.ctl[CTL_CUT] = cut;
    }
}

/* One pass of v2 (see above) over block (blockIdx.x, row blockIdx.y). */
__global__ __launch_bounds__(P2_THREADS) void probs_v2(p2_args a, int pass, int d) {
    __shared__ p2_smem sm;
    const int row = blockIdx.y, V = a.V, tid = threadIdx.x;
    p2_block k;
    k.lg = a.logits + (size_t)row * V;
    k.pr = a.probs + (size_t)row * V;
    k.r = p2_row_at(a.work, V, row);
    p2_slice(V, a.G, &k.lo, &k.hi);
    if (pass == P2_ZERO) { /* sampler_validate failed */
        for (int i = k.lo + tid; i < k.hi; i += blockDim.x) k.pr[i] = 0.0f;
        return;
    }
    if (pass == P2_ARGMAX || pass == P2_ONEHOT) {
        p2_greedy(sm, a, k, pass);
        return;
    }
    if (pass == P2_MAXPASS) {
        float mx = -INFINITY;
        for (int i = k.lo + tid; i < k.hi; i += blockDim.x)
            if (k.lg[i] > mx) mx = k.lg[i];
        mx = kn_block_max(mx, sm.mscr);
        if (tid == 0) k.r.part[PART_MAX * P2_MAX_G + blockIdx.x] = mx;
        if (a.topk) p2_topk_hist(sm, k.r, k.lg, k.lo, k.hi, 3, 0u);
        return;
    }
    const float mx = p2_max(k.r, a.G);
    if (mx == -INFINITY) { /* nothing to choose from: the last pass writes zeros */
        if (pass == P2_NORM)
            for (int i = k.lo + tid; i < k.hi; i += blockDim.x) k.pr[i] = 0.0f;
        return;
    }
    if (pass == P2_TOPK || pass == P2_WEIGHTS) {
        p2_weights(sm, a, k, pass, d, (double)mx / a.sp.temperature);
        return;
    }
    if (pass == P2_TOPP || pass == P2_CUT) {
        p2_cut(sm, a, k, pass, d, p2_sum(k.r, PART_S, a.G));
        return;
    }
    /* P2_NORM */
    const double kept = p2_sum(k.r, PART_KEPT, a.G), cut = k.r.ctl[CTL_CUT];
    for (int i = k.lo + tid; i < k.hi; i += blockDim.x) k.pr[i] = k.r.e[i] >= cut ? (float)(k.r.e[i] / kept) : 0.0f;
}

static cudaError_t launch_probs_v2(float *probs, const float *logits, int m, int V, sampler_params sp, double *work,
                                   size_t work_doubles, cudaStream_t s) {
    if (m < 1 || V < 1 || m > 65535 || work_doubles < (size_t)m * p2_row_doubles(V)) return cudaErrorInvalidValue;
    int G = kn_ceil_div(2 * kn_sm_count(), m); /* about two blocks per SM over the m rows */
    if (G > P2_MAX_G) G = P2_MAX_G;
    if (G > kn_ceil_div(V, P2_THREADS)) G = kn_ceil_div(V, P2_THREADS); /* at least a block's worth each */
    if (G < 1) G = 1;
    p2_args a = {probs, logits, work, V, G, sp, 0, 0};
    dim3 grid(G, m);
#define P2_PASS(pass, d)                                                                                               \
    do {                                                                                                               \
        cudaError_t e_ = KN_LAUNCH(probs_v2, grid, P2_THREADS, 0, s, a, (pass), (d));                                  \
        if (e_ != cudaSuccess) return e_;                                                                              \
    } while (0)
    if (sampler_validate(&sp, NULL) != 0) {
        P2_PASS(P2_ZERO, 0);
        return cudaSuccess;
    }
    if (sp.temperature == 0.0f) {
        P2_PASS(P2_ARGMAX, 0);
        P2_PASS(P2_ONEHOT, 0);
        return cudaSuccess;
    }
    a.topk = sp.top_k > 0 && sp.top_k < V;
    a.topp = sp.top_p < 1.0f;
    P2_PASS(P2_MAXPASS, 3);
    if (a.topk)
        for (int d = 2; d >= 0; d--) P2_PASS(P2_TOPK, d);
    P2_PASS(P2_WEIGHTS, 0);
    if (a.topp)
        for (int d = 6; d >= 0; d--) P2_PASS(P2_TOPP, d);
    P2_PASS(P2_CUT, 0);
    P2_PASS(P2_NORM, 0);
#undef P2_PASS
    return cudaSuccess;
}

size_t kn_probs_work_doubles(int m, int V) { return (size_t)m * p2_row_doubles(V); } /* v2's; v1 needs m·V */

static const kn_probs_version probs_versions[] = {
    {"v1", "block per row: radix select for top-k, radix walk with bucket masses for top-p, double weights",
     launch_probs_v1},
    {"v2", "v1 over G blocks per row as a chain of passes; bucket masses summed per warp group, no double atomics",
     launch_probs_v2},
};

cudaError_t kn_probs(float *probs, const float *logits, int m, int V, sampler_params sp, double *work,
                     size_t work_doubles, cudaStream_t s) {
    return launch_probs_v2(probs, logits, m, V, sp, work, work_doubles, s);
}

const kn_probs_version *kn_probs_versions(int *count) {
    *count = (int)(sizeof probs_versions / sizeof probs_versions[0]);
    return probs_versions;
}
