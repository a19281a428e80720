/* Exercise 1 — from logits to the processed distribution
 * (lessons/01-processed-distribution.md). Write the core of sampler_probs as
 * reference/decoding/sampler.h defines it: temperature, top-k, softmax, top-p and
 * min-p, every cut a threshold on a value so that ties at a cut are kept.
 * The edge cases (bad parameters, temperature 0, a row of −inf) and the
 * softmax weights are done for you; fill the four gaps. The checker
 * (make exercise EX=1 FILE=this-file) runs the project's sampler suite. */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>

static int descending(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* sorted[V]: a copy of x[V], largest first. */
static void sort_descending(const double *x, double *sorted, int V) {
    for (int i = 0; i < V; i++) sorted[i] = x[i];
    qsort(sorted, (size_t)V, sizeof *sorted, descending);
}

static void zero_row(float *probs, int V) {
    for (int i = 0; i < V; i++) probs[i] = 0.0f;
}

void sampler_probs(const sampler_params *sp, const float *logits, float *probs, int V) {
    if (V <= 0) return;
    if (sampler_validate(sp, NULL) != 0) { /* bad parameters: all zeros, never a guess */
        zero_row(probs, V);
        return;
    }
    if (sp->temperature == 0.0f) { /* greedy: one-hot at the argmax, no cut applies */
        int a = sampler_argmax(logits, V);
        zero_row(probs, V);
        if (a >= 0) probs[a] = 1.0f;
        return;
    }
    /* probs may alias logits, so everything below works on z and writes
     * probs only at the very end. */
    double *z = calloc((size_t)V, sizeof *z), *sorted = calloc((size_t)V, sizeof *sorted);
    if (!z || !sorted) abort();
    double m = -INFINITY;  /* the largest z */
    (void)sort_descending; /* for gaps 2 and 3; this line only keeps the compiler quiet until then */

    /* ---- gap 1: temperature. z[i] = logits[i] / sp->temperature, in double; a NaN
     * logit counts as −INFINITY. Keep m = the largest z[i]. ---- */

    /* ---- end of gap 1 ---- */

    if (m == -INFINITY) { /* no logit above −inf: no distribution at all */
        zero_row(probs, V);
        free(z), free(sorted);
        return;
    }

    /* ---- gap 2: top-k. When 0 < top_k < V, kappa = the top_k-th largest z,
     * duplicates counted (sort_descending gives them in order); entries with
     * z < kappa are cut. Otherwise nothing is cut (kappa stays −INFINITY). ---- */
    double kappa = -INFINITY;

    /* ---- end of gap 2 ---- */

    /* Softmax weights over the kept entries: e = exp(z − m), so the largest
     * weight is exactly 1; when m = +inf, the +inf entries share the mass. */
    double *e = z, S = 0.0;
    for (int i = 0; i < V; i++) {
        if (z[i] < kappa)
            e[i] = 0.0;
        else if (m == INFINITY)
            e[i] = z[i] == INFINITY ? 1.0 : 0.0;
        else
            e[i] = exp(z[i] - m);
        S += e[i];
    }

    /* ---- gap 3: top-p. When top_p < 1: cut = the largest weight e_j such
     * that the weights e_i ≥ e_j add up to at least top_p · S. Walk the sorted
     * weights one group of equal values at a time (a group of ties is kept or
     * cut as a whole). When no group gets there, cut = 0. ---- */
    double cut = 0.0;

    /* ---- end of gap 3 ---- */

    /* ---- gap 4: min-p. Keep only weights ≥ min_p (min_p · the largest
     * weight, which is 1): raise cut to min_p when that is larger. ---- */

    /* ---- end of gap 4 ---- */

    double kept = 0.0;
    for (int i = 0; i < V; i++) {
        if (e[i] < cut) e[i] = 0.0;
        kept += e[i];
    }
    for (int i = 0; i < V; i++) probs[i] = (float)(e[i] / kept); /* renormalise; the maximum always survives */
    free(z), free(sorted);
}
