/* A wrong solution to exercise 3; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: draws the correction on the sampling stream (RNG_SAMPLE), not RNG_RESIDUAL: right law, wrong site.
 * Caught by: exercise_tree_walk/rng_sites */
#include "accept.h"

#include <math.h>
#include <string.h>

#include "sampler.h"

double accept_residual(const float *p, const float *q, float *residual, int V) {
    double mass = 0; /* first pass only measures, so residual may alias p */
    for (int i = 0; i < V; i++)
        if (p[i] > q[i]) mass += (double)p[i] - q[i];
    if (mass <= 0) { /* p ≤ q everywhere means p = q: a rejection had probability 0 */
        if (residual != p) memcpy(residual, p, (size_t)V * sizeof(float));
        return 0;
    }
    for (int i = 0; i < V; i++) residual[i] = p[i] > q[i] ? (float)(((double)p[i] - q[i]) / mass) : 0.0f;
    return mass;
}

static void drop_and_renormalise(float *q, int x, int V) {
    q[x] = 0.0f;
    double sum = 0;
    for (int i = 0; i < V; i++) sum += q[i];
    if (sum > 0)
        for (int i = 0; i < V; i++) q[i] = (float)(q[i] / sum);
}

static void path_push(accept_result *r, int node) {
    if (r->n_accepted + 1 < ACCEPT_MAX_PATH) r->path[++r->n_accepted] = node;
}

static void result_start(accept_result *r) {
    r->n_accepted = 0;
    r->path[0] = 0;
    r->bonus = 0;
    r->next_token = -1;
}

int accept_exact(const token_tree *t, const float *p, accept_site site, float *scratch, accept_result *r,
                 sp_error *err) {
    const int V = t->V;
    if (t->kind == CHILDREN_TOP_RANKS)
        return sp_fail(err, "the exact rule needs children drawn from q; this tree holds top-ranked tokens "
                            "(use the greedy or typical rule)");
    float *res = scratch, *q = scratch + V;
    int children[ACCEPT_MAX_PATH];
    result_start(r);
    int u = 0;
    for (;;) {
        const int pos = site.base_position + t->depth[u];
        const float *pu = p + (size_t)u * V;
        int m = tree_children(t, u, children, ACCEPT_MAX_PATH);
        if (m == 0) { /* a leaf: every proposal on the path was accepted */
            rng_site s = {site.seed, RNG_SAMPLE, accept_draw_index(site.round, pos, 0)};
            r->next_token = sampler_sample(pu, V, s);
            r->bonus = 1;
            return 0;
        }
        memcpy(res, pu, (size_t)V * sizeof(float));
        memcpy(q, tree_q_const(t, u), (size_t)V * sizeof(float));
        int next = -1;
        for (int j = 0; j < m && next < 0; j++) {
            int x = t->token[children[j]];
            if (!(q[x] > 0))
                return sp_fail(err, "node %d: drafted token %d has proposal probability 0", children[j], x);
            rng_site s = {site.seed, RNG_ACCEPT, accept_draw_index(site.round, pos, j)};
            if (rng_uniform(s) * q[x] < res[x]) { /* U < r(x)/q(x) */
                next = children[j];
            } else {
                accept_residual(res, q, res, V); /* the residual is the next round's target */
                if (t->kind == CHILDREN_NO_REPLACEMENT) drop_and_renormalise(q, x, V);
            }
        }
        if (next < 0) {
            rng_site s = {site.seed, RNG_SAMPLE, accept_draw_index(site.round, pos, 0)};
            r->next_token = sampler_sample(res, V, s);
            return 0;
        }
        path_push(r, next);
        u = next;
    }
}
