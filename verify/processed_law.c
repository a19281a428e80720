/* processed_law.c — sampler.h's processed distribution by its definitions, pair by pair (processed_law.h). */
#include "processed_law.h"

#include <math.h>
#include <stdlib.h>

#include "error.h"

/* The lowest index of the largest logit (NaN never chosen), −1 when none is above −inf. */
static int first_maximum(const float *logits, int V) {
    int best = -1;
    for (int i = 0; i < V; i++)
        if (logits[i] > -INFINITY && (best < 0 || logits[i] > logits[best])) best = i;
    return best;
}

/* Entry i survives top-k when fewer than k entries lie strictly above it: then z_i is at least the k-th largest
 * counting duplicates, and every entry tied with the k-th survives. */
static int survives_top_k(const double *z, int V, int i, int k) {
    if (k <= 0 || k >= V) return 1;
    int above = 0;
    for (int j = 0; j < V; j++) above += z[j] > z[i];
    return above < k;
}

/* Entry j's weight is a top-p threshold candidate when the weights at least as large as it hold top_p·S. τ is the
 * largest candidate; every entry at or above τ survives. */
static double top_p_tau(const double *e, int V, double S, double top_p) {
    double tau = 0.0;
    for (int j = 0; j < V; j++) {
        if (e[j] <= tau) continue;
        double mass = 0.0;
        for (int i = 0; i < V; i++)
            if (e[i] >= e[j]) mass += e[i];
        if (mass >= top_p * S) tau = e[j];
    }
    return tau;
}

void processed_law(const sampler_params *sp, const float *logits, float *probs, int V) {
    for (int i = 0; i < V; i++) probs[i] = 0.0f;
    if (V <= 0 || sampler_validate(sp, NULL) != 0) return;
    if (sp->temperature == 0.0f) {
        int a = first_maximum(logits, V);
        if (a >= 0) probs[a] = 1.0f;
        return;
    }
    double *z = sp_xcalloc((size_t)V, sizeof *z, "law z[V]");
    double *e = sp_xcalloc((size_t)V, sizeof *e, "law e[V]");
    double m = -INFINITY;
    for (int i = 0; i < V; i++) {
        z[i] = isnan(logits[i]) ? -INFINITY : (double)logits[i] / (double)sp->temperature;
        if (z[i] > m) m = z[i];
    }
    if (m > -INFINITY) {
        double S = 0.0;
        for (int i = 0; i < V; i++) {
            if (!survives_top_k(z, V, i, sp->top_k)) continue;
            e[i] = m == INFINITY ? (z[i] == INFINITY ? 1.0 : 0.0) : exp(z[i] - m);
            S += e[i];
        }
        double tau = sp->top_p < 1.0f ? top_p_tau(e, V, S, (double)sp->top_p) : 0.0;
        double kept = 0.0;
        for (int i = 0; i < V; i++) { /* the largest weight is 1, so min-p keeps e_i ≥ min_p */
            if (e[i] < tau || e[i] < (double)sp->min_p) e[i] = 0.0;
            kept += e[i];
        }
        for (int i = 0; i < V; i++) probs[i] = (float)(e[i] / kept);
    }
    free(z), free(e);
}
