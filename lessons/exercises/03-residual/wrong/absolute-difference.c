/* A wrong solution to exercise 3; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: uses |p − q| instead of max(0, p − q): tokens q over-proposes get mass too.
 * Caught by: exercise_residual_rule */
#include "accept.h"

#include <math.h>
#include <string.h>

double accept_residual(const float *p, const float *q, float *residual, int V) {
    double mass = 0.0;
    for (int i = 0; i < V; i++) mass += fabs((double)p[i] - q[i]);
    if (mass <= 0) {
        if (residual != p) memcpy(residual, p, (size_t)V * sizeof(float));
        return 0.0;
    }
    for (int i = 0; i < V; i++) residual[i] = (float)(fabs((double)p[i] - q[i]) / mass);
    return mass;
}
