/* A wrong solution to exercise 3; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: writes residual while it measures the mass: in place with p = q, p is wiped before the fallback copies it.
 * Caught by: exercise_residual_rule */
#include "accept.h"

#include <string.h>

double accept_residual(const float *p, const float *q, float *residual, int V) {
    double mass = 0.0;
    for (int i = 0; i < V; i++) {
        float d = p[i] > q[i] ? p[i] - q[i] : 0.0f;
        mass += d;
        residual[i] = d;
    }
    if (mass <= 0) {
        if (residual != p) memcpy(residual, p, (size_t)V * sizeof(float));
        return 0.0;
    }
    for (int i = 0; i < V; i++) residual[i] = (float)(residual[i] / mass);
    return mass;
}
