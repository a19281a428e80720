/* accept.c — exact, greedy and typical acceptance over a token tree. */
#include "accept.h"

#include <math.h>
#include <stdlib.h>
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

/* At a node u with children c1, c2, …:
 *   r ← p_u
 *   for each child c (token x): accept with probability min(1, r(x)/q(x));
 *       on accept move to c; on reject r ← norm(max(0, r − q)) and, when the
 *       children were drawn without replacement, q ← norm(q without x)
 *   no child accepted: the next token is drawn from r (a correction);
 *   u has no children: the next token is drawn from p_u (a bonus).
 * With one child per node this is exactly Leviathan et al.'s rule. */
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
            rng_site s = {site.seed, RNG_RESIDUAL, accept_draw_index(site.round, pos, 0)};
            r->next_token = sampler_sample(res, V, s);
            return 0;
        }
        path_push(r, next);
        u = next;
    }
}

void accept_greedy(const token_tree *t, const float *p, accept_result *r) {
    const int V = t->V;
    int children[ACCEPT_MAX_PATH];
    result_start(r);
    int u = 0;
    for (;;) {
        int best = sampler_argmax(p + (size_t)u * V, V);
        int m = tree_children(t, u, children, ACCEPT_MAX_PATH), next = -1;
        for (int j = 0; j < m && next < 0; j++)
            if (t->token[children[j]] == best) next = children[j];
        if (next < 0) {
            r->next_token = best;
            r->bonus = m == 0;
            return;
        }
        path_push(r, next);
        u = next;
    }
}

static double entropy(const float *p, int V) {
    double h = 0;
    for (int i = 0; i < V; i++)
        if (p[i] > 0) h -= p[i] * log(p[i]);
    return h;
}

int accept_typical_walk(const token_tree *t, const float *p, float epsilon, float delta, accept_result *r) {
    const int V = t->V, n = t->n;
    /* ok[i]: node i and all its ancestors are acceptable */
    unsigned char *ok = sp_xcalloc((size_t)n, 1, "typical acceptance flags");
    double *threshold = sp_xcalloc((size_t)n, sizeof(double), "typical thresholds");
    result_start(r);
    int best = 0;
    for (int i = 0; i < n; i++) {
        const float *pi = p + (size_t)i * V;
        double h = entropy(pi, V), cut = delta * exp(-h);
        threshold[i] = cut < epsilon ? cut : epsilon;
        if (i == 0) {
            ok[0] = 1;
            continue;
        }
        int u = t->parent[i];
        ok[i] = ok[u] && p[(size_t)u * V + t->token[i]] > threshold[u];
        if (ok[i] && t->depth[i] > t->depth[best]) best = i;
    }
    free(ok);
    free(threshold);
    int len = t->depth[best];
    for (int x = best, d = len; d > 0; x = t->parent[x], d--) r->path[d] = x;
    r->n_accepted = len;
    return best;
}

void accept_typical(const token_tree *t, const float *p, float epsilon, float delta, accept_site site,
                    accept_result *r) {
    int best = accept_typical_walk(t, p, epsilon, delta, r);
    rng_site s = {site.seed, RNG_SAMPLE, accept_draw_index(site.round, site.base_position + r->n_accepted, 0)};
    r->next_token = sampler_sample(p + (size_t)best * t->V, t->V, s);
    int children[1];
    r->bonus = tree_children(t, best, children, 1) == 0;
}
