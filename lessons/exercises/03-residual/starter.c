/* Exercise 3 — the residual distribution (lessons/03-speculative-decoding.md).
 * Write accept_residual as reference/core/accept.h specifies it. The checker
 * (make exercise EX=3 FILE=this-file) runs the project's acceptance tests and
 * a distribution test of accept_exact, which calls your function at every
 * rejection: the committed token must follow the target's p exactly. */
#include "accept.h"

#include <string.h>

/* residual[V] = norm(max(0, p − q)); returns the mass Σ max(0, p − q)
 * before normalising. When that mass is 0 (p ≤ q everywhere, which for two
 * distributions means p = q), residual is left as a copy of p and 0 is
 * returned. residual may alias p: read everything you need from p before
 * you write to residual. Sum in double. */
double accept_residual(const float *p, const float *q, float *residual, int V) {
    double mass = 0.0;
    /* ---- gap 1: mass = Σ over i of max(0, p[i] − q[i]) ---- */

    /* ---- end of gap 1 ---- */
    if (mass <= 0) {
        if (residual != p) memcpy(residual, p, (size_t)V * sizeof(float));
        return 0.0;
    }
    /* ---- gap 2: residual[i] = max(0, p[i] − q[i]) / mass, as float ---- */

    /* ---- end of gap 2 ---- */
    (void)q;
    return mass;
}
