/* tree_law.c — tree_accept_law (tree_law.h): planted_accept_rule's walk with the probability of each branch.
 * Each planted bug changes the steps as it does in planted.c. It computes in double, so the planted code's
 * float rounding is not followed. */
#include "tree_law.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const planted_rule *rule;
    const token_tree *t;
    const float *p;
    accept_site site;
    tree_outcome_fn out;
    void *user;
    int path[ACCEPT_MAX_PATH];
    sp_error *err;
    int failed;
} walk;

/* Emits every token of row[V] (weights, normalised here) after path[0..n]. */
static void emit(walk *w, int n, const double *row, double mass) {
    const int V = w->t->V;
    double sum = 0;
    for (int y = 0; y < V; y++) sum += row[y] > 0 ? row[y] : 0;
    if (!(sum > 0)) return; /* the sampler draws nothing from an empty row; the rule never asks it to */
    for (int y = 0; y < V; y++)
        if (row[y] > 0) w->out(w->user, w->path, n, y, mass * row[y] / sum);
}

static void bonus(walk *w, int u, int n, double mass) {
    const token_tree *t = w->t;
    const int V = t->V;
    const planted_bug bug = w->rule->bug;
    const int generated = w->site.base_position + t->depth[u] + 1 - w->rule->first_position;
    const int early = u > 0 && (bug == PLANT_BONUS_FROM_PARENT ||
                                (bug == PLANT_BONUS_FROM_PARENT_LATE && generated >= PLANT_LATE_POSITION));
    const float *row = w->p + (size_t)(early ? t->parent[u] : u) * V;
    double *d = sp_xcalloc((size_t)V, sizeof *d, "tree law bonus row");
    for (int y = 0; y < V; y++) d[y] = row[y];
    emit(w, n, d, mass);
    free(d);
}

/* The children of u in the order the rule verifies them. */
static int children_in_order(const walk *w, int u, int *children) {
    const token_tree *t = w->t;
    const int m = tree_children(t, u, children, ACCEPT_MAX_PATH);
    if (w->rule->bug != PLANT_CHILDREN_BY_Q) return m;
    const float *q = tree_q_const(t, u);
    for (int i = 1; i < m; i++) { /* stable, highest q first, as planted.c's sort_by_q */
        const int c = children[i];
        int j = i;
        for (; j > 0 && q[t->token[children[j - 1]]] < q[t->token[c]]; j--) children[j] = children[j - 1];
        children[j] = c;
    }
    return m;
}

/* The probability that child token x passes the test against residual r and proposal q. */
static double accept_probability(const planted_rule *rule, int x, double rx, double qx) {
    if (rule->bug == PLANT_EOS_DRAFT_UNTESTED && x == rule->eos) return 1.0;
    const double num = rule->bug == PLANT_RATIO_INVERTED ? qx : rx, den = rule->bug == PLANT_RATIO_INVERTED ? rx : qx;
    if (den <= 0) return num > 0 ? 1.0 : 0.0;
    return num >= den ? 1.0 : num / den;
}

/* r ← the residual after rejecting a child against q, as the bug computes it. */
static void after_rejection(planted_bug bug, double *r, const double *q, int V) {
    if (bug == PLANT_RESIDUAL_IS_P) return; /* r stays p */
    double mass = 0;
    for (int i = 0; i < V; i++) mass += r[i] > q[i] ? r[i] - q[i] : 0;
    if (bug == PLANT_RESIDUAL_UNNORMALISED) {
        for (int i = 0; i < V; i++) r[i] = r[i] > q[i] ? r[i] - q[i] : 0;
        return;
    }
    if (mass <= 0) return; /* accept_residual keeps r */
    for (int i = 0; i < V; i++) r[i] = r[i] > q[i] ? (r[i] - q[i]) / mass : 0;
}

static void node(walk *w, int u, int n, double mass);

/* The correction after every child of u missed: from r, from q, or by the inverse CDF. */
static void correction(walk *w, int n, double *r, double *q, double mass) {
    const int V = w->t->V;
    const planted_bug bug = w->rule->bug;
    if (bug == PLANT_REJECT_FROM_Q) {
        emit(w, n, q, mass);
    } else if (bug == PLANT_RESIDUAL_UNNORMALISED) { /* what the weights miss falls on V − 1 */
        double cum = 0;
        for (int i = 0; i < V; i++) cum += r[i];
        if (cum < 1) r[V - 1] += 1 - cum;
        emit(w, n, r, mass);
    } else {
        emit(w, n, r, mass);
    }
}

/* Node u runs the multi-round rejection over its children in order: child j is reached when the j before it
 * were rejected, and accepted with min(1, r(x)/q(x)) (inverted: min(1, q(x)/r(x))). After a rejection r becomes
 * the residual and, for children drawn without replacement, q loses x. A node without children emits the bonus;
 * a node whose children all missed, the correction. */
static void node(walk *w, int u, int n, double mass) {
    const token_tree *t = w->t;
    const int V = t->V;
    const planted_bug bug = w->rule->bug;
    if (w->failed || mass <= 0) return;
    int children[ACCEPT_MAX_PATH];
    const int m = children_in_order(w, u, children);
    if (m == 0) {
        bonus(w, u, n, mass);
        return;
    }
    double *r = sp_xcalloc((size_t)2 * V, sizeof *r, "tree law rows"), *q = r + V;
    for (int i = 0; i < V; i++) r[i] = w->p[(size_t)u * V + i], q[i] = tree_q_const(t, u)[i];
    double reach = 1;
    for (int j = 0; j < m && !w->failed; j++) {
        const int x = t->token[children[j]];
        if (!(q[x] > 0)) {
            w->failed = 1;
            sp_fail(w->err, "tree law: node %d: drafted token %d has proposal probability 0", children[j], x);
            break;
        }
        const double a = accept_probability(w->rule, x, r[x], q[x]);
        if (n + 1 < ACCEPT_MAX_PATH) w->path[n + 1] = children[j];
        node(w, children[j], n + 1, mass * reach * a);
        reach *= 1 - a;
        after_rejection(bug, r, q, V);
        if (t->kind == CHILDREN_NO_REPLACEMENT && bug != PLANT_NO_REPLACEMENT_AS_IID &&
            (bug != PLANT_NO_REPLACEMENT_ROOT_ONLY || u == 0)) {
            q[x] = 0;
            double sum = 0;
            for (int i = 0; i < V; i++) sum += q[i];
            if (sum > 0)
                for (int i = 0; i < V; i++) q[i] /= sum;
        }
    }
    if (!w->failed && reach > 1e-15) correction(w, n, r, q, mass * reach);
    free(r);
}

int tree_accept_law(const planted_rule *rule, const token_tree *t, const float *p, accept_site site,
                    tree_outcome_fn out, void *user, sp_error *err) {
    if (t->kind == CHILDREN_TOP_RANKS)
        return sp_fail(err, "tree law: a tree of top ranks is walked by the greedy rule (deterministic given p)");
    if (rule->bug == PLANT_COMMIT_PARENT_AFTER_TWO)
        return sp_fail(err, "tree law: %s is a slip of the target's commit, not of the rule", planted_name(rule->bug));
    walk w;
    memset(&w, 0, sizeof w);
    w.rule = rule;
    w.t = t;
    w.p = p;
    w.site = site;
    w.out = out;
    w.user = user;
    w.err = err;
    node(&w, 0, 0, 1.0);
    return w.failed ? -1 : 0;
}
