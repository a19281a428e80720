/* Exercise 3 — the exact acceptance rule over a token tree
 * (lessons/03-speculative-decoding.md, "Trees: one round per child").
 * Write accept_residual and accept_exact as reference/decoding/accept.h
 * specifies them. accept_exact walks the tree from the root: at a node u it
 * tries u's children in index order, each against the residual left by the
 * children rejected before it; it descends into the first child it
 * accepts, and stops with a correction when it accepts none or with a
 * bonus at a leaf. The checker (make exercise EX=3 FILE=this-file) runs the
 * project's acceptance tests, the statistical suite `leviathan` (the round
 * loop's output against exact laws) and the exercise's own tests: hand-made
 * trees whose outcome is certain, and chi-square tests that the committed
 * tokens of random trees follow the target. Helpers you may use:
 * sampler_sample and rng_uniform (sampler.h), tree_children and
 * tree_q_const (tree.h). */
#include "accept.h"

#include <string.h>

#include "sampler.h"

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

/* q[V] loses token x and is scaled back to a sum of 1 (left as it is if
 * nothing remains): the law of the next child when the children were drawn
 * without replacement. */
static void drop_and_renormalise(float *q, int x, int V) {
    /* ---- gap 3 ---- */
    (void)q, (void)x, (void)V;
    /* ---- end of gap 3 ---- */
}

static void path_push(accept_result *r, int node) {
    if (r->n_accepted + 1 < ACCEPT_MAX_PATH) r->path[++r->n_accepted] = node;
}

/* The draws, so that your walk and the engine's agree draw for draw (each
 * is an rng_site {site.seed, STREAM, accept_draw_index(site.round, pos,
 * slot)} with pos = site.base_position + depth of the node u whose children
 * are being decided):
 *   the bonus at a leaf u         RNG_SAMPLE,   slot 0, sampler_sample(p_u)
 *   the test of u's j-th child    RNG_ACCEPT,   slot j, rng_uniform: accept when U · q(x) < r(x)
 *   the correction after u        RNG_RESIDUAL, slot 0, sampler_sample(r)
 * p_u is row u of p; q of u's children is tree_q_const(t, u). scratch
 * holds 2·V floats: room for r and for a working copy of q. These sites are
 * part of the contract, and the checker tests them (the test case
 * exercise_tree_walk/rng_sites): a draw from the right law at another site
 * passes every distribution test but breaks the engine's agreement. */
int accept_exact(const token_tree *t, const float *p, accept_site site, float *scratch, accept_result *r,
                 sp_error *err) {
    const int V = t->V;
    if (t->kind == CHILDREN_TOP_RANKS)
        return sp_fail(err, "the exact rule needs children drawn from q; this tree holds top-ranked tokens "
                            "(use the greedy or typical rule)");
    float *res = scratch, *q = scratch + V;
    int children[ACCEPT_MAX_PATH];
    r->n_accepted = 0;
    r->path[0] = 0;
    r->bonus = 0;
    r->next_token = -1;
    int u = 0;
    for (;;) {
        const int pos = site.base_position + t->depth[u];
        const int m = tree_children(t, u, children, ACCEPT_MAX_PATH);
        /* ---- gap 4: u is a leaf (m == 0): every proposal on the path was
         * accepted; draw the bonus from p_u, set r->next_token and r->bonus,
         * return 0 ---- */

        /* ---- end of gap 4 ---- */

        /* ---- gap 5: one round per child, in index order. Start with
         * r = p_u and q = u's q row (copies: you will change them). For
         * child j with token x: fail (sp_fail, naming the node and the
         * token) when q(x) is not > 0; accept with probability
         * min(1, r(x)/q(x)); on a rejection r becomes norm(max(0, r − q)),
         * and when t->kind is CHILDREN_NO_REPLACEMENT q also loses x. Stop
         * at the first accepted child. ---- */
        int next = -1;
        (void)pos, (void)m, (void)res, (void)q, (void)p, (void)err, (void)drop_and_renormalise;

        /* ---- end of gap 5 ---- */

        if (next < 0) {
            /* ---- gap 6: no child accepted: draw the correction from r into r->next_token ---- */

            /* ---- end of gap 6 ---- */
            return 0;
        }
        path_push(r, next);
        u = next;
    }
}
