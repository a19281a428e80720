/* accept.c — Leviathan chain acceptance with replayable randomness (accept.h). */
#include "accept.h"

#include <stddef.h>

#include "sampler.h"

accept_result accept_chain(const float *p, const float *q, const int *draft, int k, int V, uint64_t seed,
                           uint64_t index0, float *residual) {
    accept_result res = {0, -1};
    for (int i = 0; i < k; i++) {
        const float *pi = p + (size_t)i * V, *qi = q + (size_t)i * V;
        int d = draft[i];
        rng_site at = {seed, RNG_ACCEPT, index0 + (uint64_t)i};
        double u = rng_uniform(at);
        if (d >= 0 && d < V && u * (double)qi[d] < (double)pi[d]) {
            res.n_accepted++;
            continue;
        }
        int any = 0;
        for (int j = 0; j < V; j++) {
            float r = pi[j] - qi[j];
            residual[j] = r > 0.0f ? r : 0.0f;
            any |= residual[j] > 0.0f;
        }
        rng_site rs = {seed, RNG_RESIDUAL, index0 + (uint64_t)i};
        res.token = sampler_sample(any ? residual : pi, V, rs);
        return res;
    }
    rng_site bonus = {seed, RNG_SAMPLE, index0 + (uint64_t)k};
    res.token = sampler_sample(p + (size_t)k * V, V, bonus);
    return res;
}
