/* planted.c — the planted bugs of planted.h. planted_accept follows
 * accept_exact line for line; planted_typical shares accept_typical's walk
 * and changes only its final draw. Each mistake is marked "PLANTED". */
#include "planted.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sampler.h"

static const char *const names[PLANT_COUNT] = {"none",
                                               "ratio-inverted",
                                               "residual-is-p",
                                               "residual-unnormalised",
                                               "reject-from-q",
                                               "bonus-from-parent",
                                               "no-replacement-as-iid",
                                               "children-by-q",
                                               "no-replacement-root-only",
                                               "commit-parent-after-two",
                                               "bonus-from-parent-late",
                                               "eos-draft-untested"};
static const char *const summaries[PLANT_COUNT] = {
    "the exact rule, unchanged",
    "accept a draft with min(1, q/p) instead of min(1, p/q)",
    "after a rejection draw from p instead of norm(max(0, p - q))",
    "residual max(0, p - q) left unnormalised, drawn by an inverse CDF assuming unit mass",
    "after a rejection draw the correction from q",
    "bonus token drawn from p of the leaf's parent (one position early)",
    "children drawn without replacement verified as i.i.d. (q not renormalised after a rejection)",
    "a node's children verified in order of their q, highest first, not in the order drawn",
    "q renormalised after a rejected sibling at the root only (deeper siblings verified as i.i.d.)",
    "the target commits the parent of the last accepted node when two or more were accepted",
    "bonus token drawn from p of the leaf's parent, from generated position 4 on",
    "an EOS draft accepted without the ratio test",
};

const char *planted_name(planted_bug bug) { return bug >= 0 && bug < PLANT_COUNT ? names[bug] : "?"; }
const char *planted_summary(planted_bug bug) { return bug >= 0 && bug < PLANT_COUNT ? summaries[bug] : "?"; }

int planted_parse(const char *name) {
    for (int i = 0; i < PLANT_COUNT; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

/* PLANTED (residual-unnormalised): the inverse-CDF draw of a sampler that
 * trusts its weights to sum to 1; whatever they miss goes to the last token. */
static int draw_assuming_unit_mass(const float *w, int V, rng_site site) {
    double u = rng_uniform(site), cum = 0;
    for (int i = 0; i < V; i++) {
        cum += w[i];
        if (u < cum) return i;
    }
    return V - 1;
}

static void drop_and_renormalise(float *q, int x, int V) {
    q[x] = 0.0f;
    double sum = 0;
    for (int i = 0; i < V; i++) sum += q[i];
    if (sum > 0)
        for (int i = 0; i < V; i++) q[i] = (float)(q[i] / sum);
}

/* PLANTED (children-by-q): the children re-ordered by their q, highest first (stable: equal q keep
 * the drawn order). A child's q is the proposer's own number, so a proposer could do this; but the k-th
 * child verified is then no longer a fresh draw from q given the ones verified before it. */
static void sort_by_q(int *children, int m, const token_tree *t, const float *q) {
    for (int i = 1; i < m; i++) {
        const int c = children[i];
        int j = i;
        for (; j > 0 && q[t->token[children[j - 1]]] < q[t->token[c]]; j--) children[j] = children[j - 1];
        children[j] = c;
    }
}

/* Whether the token after node u (a bonus, or the next token at temperature 0) is drawn from the row of
 * u's parent: PLANTED (bonus-from-parent) always, (bonus-from-parent-late) from generated position
 * PLANT_LATE_POSITION on. */
static int next_from_parent(const planted_rule *rule, const token_tree *t, int u, accept_site site) {
    if (u == 0) return 0;
    const int generated = site.base_position + t->depth[u] + 1 - rule->first_position;
    return rule->bug == PLANT_BONUS_FROM_PARENT ||
           (rule->bug == PLANT_BONUS_FROM_PARENT_LATE && generated >= PLANT_LATE_POSITION);
}

/* accept_greedy's walk. PLANTED (bonus-from-parent, -late): the next token is p's argmax at the last node's
 * parent; (reject-from-q): after a node whose children all missed, the next token is the draft's argmax
 * there. */
static void planted_greedy(const planted_rule *rule, const token_tree *t, const float *p, accept_site site,
                           accept_result *r) {
    const planted_bug bug = rule->bug;
    const int V = t->V;
    int children[ACCEPT_MAX_PATH], u = 0;
    r->n_accepted = 0;
    r->path[0] = 0;
    for (;;) {
        const int best = sampler_argmax(p + (size_t)u * V, V);
        int m = tree_children(t, u, children, ACCEPT_MAX_PATH), next = -1;
        for (int j = 0; j < m && next < 0; j++)
            if (t->token[children[j]] == best) next = children[j];
        if (next < 0) {
            const int from = next_from_parent(rule, t, u, site) ? t->parent[u] : u; /* PLANTED */
            r->next_token = sampler_argmax(p + (size_t)from * V, V);
            if (bug == PLANT_REJECT_FROM_Q && m > 0)
                r->next_token = sampler_argmax(tree_q_const(t, u), V); /* PLANTED */
            r->bonus = m == 0;
            return;
        }
        if (r->n_accepted + 1 < ACCEPT_MAX_PATH) r->path[++r->n_accepted] = next;
        u = next;
    }
}

int planted_accept_rule(const planted_rule *rule, const token_tree *t, const float *p, accept_site site, float *scratch,
                        accept_result *r, sp_error *err) {
    const int V = t->V;
    const planted_bug bug = rule->bug;
    if (t->kind == CHILDREN_TOP_RANKS) {
        planted_greedy(rule, t, p, site, r);
        return 0;
    }
    float *res = scratch, *q = scratch + V;
    int children[ACCEPT_MAX_PATH];
    r->n_accepted = 0;
    r->path[0] = 0;
    r->bonus = 0;
    r->next_token = -1;
    int u = 0;
    for (;;) {
        const int pos = site.base_position + t->depth[u];
        const float *pu = p + (size_t)u * V;
        int m = tree_children(t, u, children, ACCEPT_MAX_PATH);
        if (bug == PLANT_CHILDREN_BY_Q) sort_by_q(children, m, t, tree_q_const(t, u)); /* PLANTED */
        if (m == 0) {
            const float *bonus_row = pu;
            if (next_from_parent(rule, t, u, site)) bonus_row = p + (size_t)t->parent[u] * V; /* PLANTED */
            rng_site s = {site.seed, RNG_SAMPLE, accept_draw_index(site.round, pos, 0)};
            r->next_token = sampler_sample(bonus_row, V, s);
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
            float uniform = rng_uniform(s);
            int accepted = bug == PLANT_RATIO_INVERTED ? uniform * res[x] < q[x] /* PLANTED: U < q/r */
                                                       : uniform * q[x] < res[x];
            if (bug == PLANT_EOS_DRAFT_UNTESTED && x == rule->eos) accepted = 1; /* PLANTED */
            if (accepted) {
                next = children[j];
            } else {
                if (bug == PLANT_RESIDUAL_UNNORMALISED) { /* PLANTED: max(0, r − q) without the division */
                    for (int i = 0; i < V; i++) res[i] = res[i] > q[i] ? res[i] - q[i] : 0.0f;
                } else if (bug != PLANT_RESIDUAL_IS_P) { /* PLANTED (residual-is-p): r stays p */
                    accept_residual(res, q, res, V);
                }
                if (t->kind == CHILDREN_NO_REPLACEMENT && bug != PLANT_NO_REPLACEMENT_AS_IID &&
                    (bug != PLANT_NO_REPLACEMENT_ROOT_ONLY || u == 0)) /* PLANTED (either) */
                    drop_and_renormalise(q, x, V);
            }
        }
        if (next < 0) {
            rng_site s = {site.seed, RNG_RESIDUAL, accept_draw_index(site.round, pos, 0)};
            if (bug == PLANT_RESIDUAL_UNNORMALISED)
                r->next_token = draw_assuming_unit_mass(res, V, s);
            else
                r->next_token = sampler_sample(bug == PLANT_REJECT_FROM_Q ? q : res, V, s); /* PLANTED: q */
            return 0;
        }
        if (r->n_accepted + 1 < ACCEPT_MAX_PATH) r->path[++r->n_accepted] = next;
        u = next;
    }
}

int planted_accept(planted_bug bug, const token_tree *t, const float *p, accept_site site, float *scratch,
                   accept_result *r, sp_error *err) {
    const planted_rule rule = {bug, 1, -1}; /* the first round's root at position 0 */
    return planted_accept_rule(&rule, t, p, site, scratch, r, err);
}

int planted_accept_fn(void *user, const token_tree *t, const float *p, accept_site site, float *scratch,
                      accept_result *r, sp_error *err) {
    return planted_accept_rule(user, t, p, site, scratch, r, err);
}

void planted_typical(planted_bug bug, const token_tree *t, const float *p, float epsilon, float delta, accept_site site,
                     accept_result *r) {
    int best = accept_typical_walk(t, p, epsilon, delta, r);
    int from = best;
    if (bug == PLANT_BONUS_FROM_PARENT && best > 0) from = t->parent[best]; /* PLANTED */
    rng_site s = {site.seed, RNG_SAMPLE, accept_draw_index(site.round, site.base_position + r->n_accepted, 0)};
    r->next_token = sampler_sample(p + (size_t)from * t->V, t->V, s);
    int children[1];
    r->bonus = tree_children(t, best, children, 1) == 0;
}

int planted_typical_fn(void *user, const token_tree *t, const float *p, accept_site site, float *scratch,
                       accept_result *r, sp_error *err) {
    const planted_typical_rule *rule = user;
    (void)scratch, (void)err;
    planted_typical(rule->bug, t, p, rule->epsilon, rule->delta, site, r);
    return 0;
}

/* ---- the retempering proposer ------------------------------------------------- */

void planted_retemper_row(const float *q, float gamma, float *out, int V) {
    double max = 0, sum = 0;
    for (int i = 0; i < V; i++)
        if (q[i] > max) max = q[i];
    for (int i = 0; i < V; i++) {
        double w = q[i] > 0 ? pow(q[i] / max, gamma) : 0.0; /* relative to the largest: no underflow */
        out[i] = (float)w;
        sum += w;
    }
    for (int i = 0; i < V; i++) out[i] = (float)(out[i] / sum);
}

typedef struct {
    proposer inner;
    float draw_temperature;
} retemper_impl;

static void sync_counters(proposer *self) {
    retemper_impl *w = self->impl;
    self->steps = w->inner.steps;
}

/* The inner proposer drafts under the run's sampler params at the draw
 * temperature; its q rows are then reported at the run's temperature. */
static int retemper_propose(proposer *self, token_tree *tree, const propose_call *call, sp_error *err) {
    retemper_impl *w = self->impl;
    const float ratio_temperature = call->sampling->temperature;
    if (!(ratio_temperature > 0))
        return sp_fail(err, "retempered proposer: the run's temperature must be > 0, got %g", ratio_temperature);
    sampler_params draw = *call->sampling;
    draw.temperature = w->draw_temperature;
    propose_call inner_call = *call;
    inner_call.sampling = &draw;
    int rc = w->inner.propose(&w->inner, tree, &inner_call, err);
    sync_counters(self);
    if (rc) return rc;
    int child[1];
    const float gamma = w->draw_temperature / ratio_temperature;
    for (int i = 0; i < tree->n; i++)
        if (tree_children(tree, i, child, 1) > 0)
            planted_retemper_row(tree_q(tree, i), gamma, tree_q(tree, i), tree->V);
    return 0;
}

static int retemper_commit(proposer *self, const int *path, const float *hidden, int len, int next_token,
                           sp_error *err) {
    retemper_impl *w = self->impl;
    int rc = w->inner.commit(&w->inner, path, hidden, len, next_token, err);
    sync_counters(self);
    return rc;
}

static void retemper_release(proposer *self) {
    retemper_impl *w = self->impl;
    w->inner.release(&w->inner);
    free(w);
    self->impl = NULL;
}

int planted_retemper_build(proposer *outer, proposer *inner, float draw_temperature, sp_error *err) {
    if (!(draw_temperature > 0))
        return sp_fail(err, "retempered proposer: the draw temperature must be > 0, got %g", draw_temperature);
    retemper_impl *w = sp_xcalloc(1, sizeof *w, "retempered proposer");
    w->inner = *inner;
    w->draw_temperature = draw_temperature;
    memset(outer, 0, sizeof *outer);
    outer->name = inner->name;
    outer->depth = inner->depth;
    outer->needs_hidden = inner->needs_hidden;
    outer->propose = retemper_propose;
    outer->commit = retemper_commit;
    outer->release = retemper_release;
    outer->bytes_per_step = inner->bytes_per_step;
    outer->tree_capacity = inner->tree_capacity;
    outer->kind = inner->kind;
    outer->impl = w;
    return 0;
}

/* ---- the proposer that reports other q rows -------------------------------------- */

typedef struct {
    proposer inner;
    planted_q bug;
    float *rows; /* [cap, V] the rows as drawn */
    int cap;
} q_impl;

const char *planted_q_name(planted_q bug) {
    return bug == PLANT_Q_OTHER_DEPTH ? "q half another depth's"
           : bug == PLANT_Q_UNIFORM   ? "q reported uniform"
                                      : "none";
}

static int q_propose(proposer *self, token_tree *tree, const propose_call *call, sp_error *err) {
    q_impl *w = self->impl;
    int rc = w->inner.propose(&w->inner, tree, call, err);
    self->steps = w->inner.steps;
    if (rc) return rc;
    const int V = tree->V;
    int drafting[TREE_SHAPE_MAX_NODES + 1], n = 0, child[1];
    for (int i = 0; i < tree->n; i++)
        if (tree_children(tree, i, child, 1) > 0) drafting[n++] = i;
    if (n > w->cap) {
        w->cap = n;
        w->rows = sp_xrealloc(w->rows, (size_t)n * V, sizeof(float), "planted q rows");
    }
    for (int j = 0; j < n; j++) memcpy(w->rows + (size_t)j * V, tree_q(tree, drafting[j]), (size_t)V * sizeof(float));
    for (int j = 0; j < n; j++) {
        float *q = tree_q(tree, drafting[j]);
        if (w->bug == PLANT_Q_UNIFORM)
            for (int x = 0; x < V; x++) q[x] = 1.0f / (float)V;
        else if (n > 1) { /* half its own row, so that every draft keeps a chance: a silent change, not an error */
            const float *other = w->rows + (size_t)(j + 1 < n ? j + 1 : j - 1) * V;
            for (int x = 0; x < V; x++) q[x] = 0.5f * q[x] + 0.5f * other[x];
        }
    }
    return 0;
}

static int q_commit(proposer *self, const int *path, const float *hidden, int len, int next_token, sp_error *err) {
    q_impl *w = self->impl;
    int rc = w->inner.commit(&w->inner, path, hidden, len, next_token, err);
    self->steps = w->inner.steps;
    return rc;
}

static void q_release(proposer *self) {
    q_impl *w = self->impl;
    w->inner.release(&w->inner);
    free(w->rows);
    free(w);
    self->impl = NULL;
}

int planted_q_build(proposer *outer, proposer *inner, planted_q bug, sp_error *err) {
    if (bug != PLANT_Q_OTHER_DEPTH && bug != PLANT_Q_UNIFORM)
        return sp_fail(err, "planted q rows: no such bug %d", bug);
    q_impl *w = sp_xcalloc(1, sizeof *w, "planted q proposer");
    w->inner = *inner;
    w->bug = bug;
    *outer = *inner;
    outer->propose = q_propose;
    outer->commit = q_commit;
    outer->release = q_release;
    outer->propose_verify = NULL; /* the round stays on the host, where the rows are changed */
    outer->impl = w;
    return 0;
}
