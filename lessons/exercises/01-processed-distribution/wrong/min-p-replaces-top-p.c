/* A wrong solution to exercise 1; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: min-p sets the cut outright, undoing a larger cut that top-p made.
 * Caught by: sampler/cuts */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>

void sampler_probs(const sampler_params *sp, const float *logits, float *probs, int V) {
    if (V <= 0) return;
    if (sampler_validate(sp, NULL) != 0 || sp->temperature == 0.0f) {
        int a = sp->temperature == 0.0f && sampler_validate(sp, NULL) == 0 ? sampler_argmax(logits, V) : -1;
        for (int i = 0; i < V; i++) probs[i] = i == a ? 1.0f : 0.0f;
        return;
    }
    double *z = calloc((size_t)V, sizeof *z), *scratch = calloc((size_t)V, sizeof *scratch);
    if (!z || !scratch) abort();
    double m = -INFINITY;
    for (int i = 0; i < V; i++) {
        z[i] = isnan(logits[i]) ? -INFINITY : (double)logits[i] / sp->temperature;
        if (z[i] > m) m = z[i];
    }
    if (m == -INFINITY) {
        for (int i = 0; i < V; i++) probs[i] = 0.0f;
        free(z), free(scratch);
        return;
    }
    const double kappa = sp->top_k > 0 && sp->top_k < V ? sampler_kth_largest(z, V, sp->top_k, scratch) : -INFINITY;
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
    double cut = 0.0;
    if (sp->top_p < 1.0f) cut = sampler_top_p_threshold(e, V, S, (double)sp->top_p, scratch);
    if (sp->min_p > 0.0f) cut = (double)sp->min_p;
    double kept = 0.0;
    for (int i = 0; i < V; i++) {
        if (e[i] < cut) e[i] = 0.0;
        kept += e[i];
    }
    for (int i = 0; i < V; i++) probs[i] = (float)(e[i] / kept);
    free(z), free(scratch);
}
