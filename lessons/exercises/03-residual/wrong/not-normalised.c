/* A wrong solution to exercise 3; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: returns the mass but leaves residual = max(0, p − q) undivided, so it does not sum to 1.
 * Caught by: exercise_residual_rule */
#include "accept.h"

#include <string.h>

double accept_residual(const float *p, const float *q, float *residual, int V) {
    double mass = 0.0;
    for (int i = 0; i < V; i++)
        if (p[i] > q[i]) mass += (double)p[i] - q[i];
    if (mass <= 0) {
        if (residual != p) memcpy(residual, p, (size_t)V * sizeof(float));
        return 0.0;
    }
    for (int i = 0; i < V; i++) residual[i] = p[i] > q[i] ? p[i] - q[i] : 0.0f;
    return mass;
}
