/* A wrong solution to exercise 3; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: takes max(0, q − p), the draft's excess, for the target's: the same mass, the wrong tokens.
 * Caught by: exercise_residual_rule */
#include "accept.h"

#include <string.h>

double accept_residual(const float *p, const float *q, float *residual, int V) {
    double mass = 0.0;
    for (int i = 0; i < V; i++)
        if (q[i] > p[i]) mass += (double)q[i] - p[i];
    if (mass <= 0) {
        if (residual != p) memcpy(residual, p, (size_t)V * sizeof(float));
        return 0.0;
    }
    for (int i = 0; i < V; i++) residual[i] = q[i] > p[i] ? (float)(((double)q[i] - p[i]) / mass) : 0.0f;
    return mass;
}
