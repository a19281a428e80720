/* sampler.c — the processed sampling distribution and the replayable draw. Readable reference in double
 * precision; order statistics come from a selection, so a 248k vocabulary costs O(V), not a full sort. The CUDA
 * sampler implements the same definitions (at sampler_probs), so both pick the same token from the same site. */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>

#include "philox.h"

sampler_params sampler_defaults(void) {
    sampler_params sp = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f};
    return sp;
}

int sampler_validate(const sampler_params *sp, sp_error *err) {
    if (!sp) return sp_fail(err, "sampler: no parameters given (NULL pointer)");
    if (!isfinite(sp->temperature) || sp->temperature < 0.0f)
        return sp_fail(err, "sampler: temperature must be a finite number >= 0 (0 = greedy), got %g",
                       (double)sp->temperature);
    if (sp->top_k < 0) return sp_fail(err, "sampler: top_k must be >= 0 (0 = off), got %d", sp->top_k);
    if (!(sp->top_p > 0.0f && sp->top_p <= 1.0f))
        return sp_fail(err, "sampler: top_p must be in (0, 1] (1 = off), got %g", (double)sp->top_p);
    if (!(sp->min_p >= 0.0f && sp->min_p < 1.0f))
        return sp_fail(err, "sampler: min_p must be in [0, 1) (0 = off), got %g", (double)sp->min_p);
    return 0;
}

int sampler_argmax(const float *x, int V) {
    int best = -1;
    float best_v = -INFINITY;
    for (int i = 0; i < V; i++) /* strict >: the lowest index wins a tie; NaN never compares greater */
        if (x[i] > best_v) best = i, best_v = x[i];
    return best;
}

static float rank_key(float x) { return x == x ? x : -INFINITY; }

/* Insertion into a short list: O(V·R). */
void sampler_top_ranks(const float *logits, int V, int R, int *ranked) {
    int n = 0;
    for (int v = 0; v < V; v++) {
        float x = rank_key(logits[v]);
        if (n == R && !(x > rank_key(logits[ranked[R - 1]]))) continue;
        int i = n < R ? n++ : R - 1;
        for (; i > 0 && x > rank_key(logits[ranked[i - 1]]); i--) ranked[i] = ranked[i - 1];
        ranked[i] = v;
    }
}

static int desc_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static void swap_double(double *a, double *b) {
    const double t = *a;
    *a = *b, *b = t;
}

/* Rearranges x[0..n) (no NaN) so that x[k] holds what a descending sort puts there, every entry before it ≥ it
 * and every entry after it ≤ it: Hoare's quickselect, a median-of-three pivot, expected O(n). Ties split evenly,
 * so long runs of equal values (the zero weights that cuts leave) cost no more than distinct ones. */
static void select_desc(double *x, int n, int k) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = lo + (hi - lo) / 2;
        if (x[mid] > x[lo]) swap_double(&x[mid], &x[lo]);
        if (x[hi] > x[lo]) swap_double(&x[hi], &x[lo]);
        if (x[hi] > x[mid]) swap_double(&x[hi], &x[mid]); /* now x[lo] ≥ x[mid] ≥ x[hi] */
        const double pivot = x[mid];
        int i = lo, j = hi;
        while (i <= j) {
            while (x[i] > pivot) i++;
            while (x[j] < pivot) j--;
            if (i <= j) swap_double(&x[i++], &x[j--]);
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return; /* j < k < i: x[k] equals the pivot, in place */
    }
}

double sampler_kth_largest(const double *z, int V, int k, double *scratch) {
    for (int i = 0; i < V; i++) scratch[i] = z[i];
    select_desc(scratch, V, k - 1);
    return scratch[k - 1];
}

/* Where the walk of step 5 (sampler_probs) starts: the largest weights first, more only when they do not reach top_p·S.
 */
#define TOP_P_FIRST 1024

double sampler_top_p_threshold(const double *e, int V, double S, double top_p, double *scratch) {
    const double target = top_p * S;
    /* The walk visits the weights in descending order and stops at the first group of ties that brings the
     * cumulative sum to the target. Only the largest n are put in order (a selection, then a sort of n); their
     * groups come first in a sort of all V, in the same order, so the additions are the same and τ is the same to
     * the bit. The last group may go on past n: if its members within n already reach the target, all of them
     * do, at the same level. When the n largest fall short, n grows eightfold, up to all V. */
    for (int n = V < TOP_P_FIRST ? V : TOP_P_FIRST;; n = n > V / 8 ? V : 8 * n) {
        for (int i = 0; i < V; i++) scratch[i] = e[i];
        if (n < V) select_desc(scratch, V, n - 1);
        qsort(scratch, (size_t)n, sizeof *scratch, desc_double);
        double cum = 0.0;
        int i = 0;
        while (i < n && scratch[i] > 0.0) {
            const double level = scratch[i];
            while (i < n && scratch[i] == level) cum += scratch[i++]; /* a whole group of ties at once */
            if (cum >= target) return level;
        }
        if (n == V || (i < n && !(scratch[i] > 0.0))) return 0.0; /* every positive weight walked */
    }
}

static void zero_row(float *probs, int V) {
    for (int i = 0; i < V; i++) probs[i] = 0.0f;
}

/* The definitions, in the order they apply. All cuts are thresholds on a
 * value, never positions in a sorted list, so ties at a cut are always kept
 * and nothing depends on the order in which entries are visited.
 *
 *   0. Parameters that fail sampler_validate give an all-zero row.
 *      A NaN logit counts as −inf (masked): it never receives probability.
 *      A row with no logit above −inf has no distribution: all zeros, at
 *      every temperature, and sampler_sample returns −1 on it.
 *   1. temperature 0: one-hot at sampler_argmax(logits) (lowest index of the
 *      maximum); top-k, top-p and min-p do not apply.
 *   2. z_i = logits_i / temperature in double (no float overflow for any
 *      positive float temperature; the map is strictly increasing, so ties
 *      in z are exactly the ties in the logits).
 *   3. top-k, 0 < k < V: κ = the k-th largest z counting duplicates (the
 *      element at position k−1 of z sorted descending); keep z_i ≥ κ. When
 *      fewer than k logits are finite κ = −inf and nothing is cut.
 *   4. weights over the kept entries, m = max z:
 *        e_i = exp(z_i − m)                  (m finite)
 *        e_i = 1 if z_i = +inf, else 0       (m = +inf: the limit of the
 *                                             softmax, uniform over the +inf
 *                                             entries)
 *      so the largest weight is exactly 1; S = Σ e_i over the kept entries.
 *      p_i = e_i / S is the softmax over the kept entries.
 *   5. top-p, 0 < top_p < 1: τ = the largest weight e_j such that
 *        Σ_{i: e_i ≥ e_j} e_i ≥ top_p · S,
 *      which is sampler.h's definition on p multiplied through by S. τ is
 *      found by walking the weights in descending order one group of equal
 *      values at a time. Should no group reach top_p·S (only possible by
 *      rounding when top_p is within 1e-15 of 1), τ = 0: nothing is cut.
 *   6. min-p, 0 < min_p < 1: keep e_i ≥ min_p (= min_p · max e, max e = 1).
 *   7. keep e_i ≥ max(τ, min_p); probs_i = e_i / Σ_kept e_j in double,
 *      rounded once to float. Cut entries are exactly 0.
 *
 * Because top-p and min-p are both thresholds on the same weights, applying
 * them in either order gives the same set; the result is the intersection.
 * A backend that sums in another order can only differ where a cumulative
 * sum in step 5 lands within rounding of top_p·S, or where its exp differs
 * by an ulp at a threshold; the sets agree otherwise.
 *
 * Temperature → 0⁺ is not temperature 0: tied maxima then share the mass
 * equally, while temperature 0 gives all of it to the lowest index. */
void sampler_probs(const sampler_params *sp, const float *logits, float *probs, int V) {
    if (V <= 0) return;
    if (sampler_validate(sp, NULL) != 0) {
        zero_row(probs, V);
        return;
    }
    if (sp->temperature == 0.0f) { /* step 1 */
        int a = sampler_argmax(logits, V);
        zero_row(probs, V);
        if (a >= 0) probs[a] = 1.0f;
        return;
    }
    double *z = sp_xcalloc((size_t)V, sizeof *z, "sampler z[V]");
    double *scratch = sp_xcalloc((size_t)V, sizeof *scratch, "sampler scratch[V]");
    double T = sp->temperature, m = -INFINITY;
    for (int i = 0; i < V; i++) { /* step 2 */
        z[i] = isnan(logits[i]) ? -INFINITY : (double)logits[i] / T;
        if (z[i] > m) m = z[i];
    }
    if (m == -INFINITY) { /* nothing to choose from */
        zero_row(probs, V);
        free(z), free(scratch);
        return;
    }
    double kappa = -INFINITY;
    if (sp->top_k > 0 && sp->top_k < V) kappa = sampler_kth_largest(z, V, sp->top_k, scratch); /* step 3 */
    double *e = z; /* step 4 overwrites z with the weights */
    double S = 0.0;
    for (int i = 0; i < V; i++) {
        if (z[i] < kappa)
            e[i] = 0.0;
        else if (m == INFINITY)
            e[i] = z[i] == INFINITY ? 1.0 : 0.0;
        else
            e[i] = exp(z[i] - m);
        S += e[i];
    }
    double cut = 0.0;
    if (sp->top_p < 1.0f) cut = sampler_top_p_threshold(e, V, S, (double)sp->top_p, scratch); /* step 5 */
    if ((double)sp->min_p > cut) cut = (double)sp->min_p;                                     /* step 6 */
    double kept = 0.0;
    for (int i = 0; i < V; i++) { /* step 7 */
        if (e[i] < cut) e[i] = 0.0;
        kept += e[i];
    }
    for (int i = 0; i < V; i++) probs[i] = (float)(e[i] / kept); /* kept ≥ 1: the maximum survives every cut */
    free(z), free(scratch);
}

/* One Philox block for a site: counter (block, index lo, index hi, purpose),
 * key (seed lo, seed hi). */
static void site_block(rng_site site, uint32_t block, uint32_t out[4]) {
    uint32_t ctr[4] = {block, (uint32_t)site.index, (uint32_t)(site.index >> 32), site.purpose};
    uint32_t key[2] = {(uint32_t)site.seed, (uint32_t)(site.seed >> 32)};
    philox4x32_10(ctr, key, out);
}

/* tests/stat's exact computations (sampler.h); NULL outside them. */
static const rng_source *test_source;

void rng_set_source(const rng_source *source) { test_source = source; }

float rng_uniform(rng_site site) {
    if (test_source) return test_source->uniform(test_source->user, site);
    uint32_t w[4];
    site_block(site, RNG_UNIFORM_BLOCK, w);
    return philox_unit(w[0]);
}

/* The race uses all 32 bits of its word: U = (w + ½)·2⁻³² lies strictly in
 * (0, 1) and is exact in double, so E = −log U is finite and positive, and
 * two tokens share a U with probability 2⁻³² instead of the 2⁻²³ of a float
 * uniform. Token blocks are token >> 2 ≤ 2³⁰ − 1, so they never meet
 * RNG_UNIFORM_BLOCK. */
static double race_exponential(uint32_t word) { return -log(((double)word + 0.5) * 0x1p-32); }

double rng_race_exponential(rng_site site, int token) {
    uint32_t w[4];
    site_block(site, (uint32_t)token >> 2, w);
    return race_exponential(w[token & 3]);
}

int sampler_sample(const float *probs, int V, rng_site site) {
    if (test_source) return test_source->sample(test_source->user, probs, V, site);
    int best = -1;
    double best_r = 0.0;
    uint32_t w[4];
    int64_t loaded = -1; /* which block w holds */
    for (int i = 0; i < V; i++) {
        if (!(probs[i] > 0.0f)) continue; /* zero, negative and NaN entries never race */
        if ((int64_t)(i >> 2) != loaded) {
            site_block(site, (uint32_t)(i >> 2), w);
            loaded = i >> 2;
        }
        double r = (double)probs[i] / race_exponential(w[i & 3]);
        if (r > best_r) best = i, best_r = r; /* strict >: the lowest index wins a tie */
    }
    return best;
}
