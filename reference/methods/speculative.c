/* speculative.c — the draft model (a stepper) as a proposer: a chain of k drafts, a tree of a static shape (a
 * chain is the shape of k ones), or a dynamic tree grown best first (tree_grow.h). */
#include "speculative.h"

#include <stdlib.h>
#include <string.h>

#include "tree_grow.h"

/* Marks: MARK_BASE before the proposal, MARK_AFTER(d) after the path's node at depth d. */
#define MARK_BASE 0
#define MARK_AFTER(d) (1 + (d))

typedef struct {
    stepper *draft; /* not owned */
    tree_shape shape;
    children_kind kind;
    int consumed[SPEC_MAX_K + 1]; /* the tokens of the path the draft now holds (root first) */
    int n_consumed;
    held_path held;    /* the same path as nodes, with the depths after which it has a mark */
    tree_growth *grow; /* a dynamic tree's growth (NULL: static shape) */
    int *backlog;      /* committed tokens the draft has not consumed yet */
    int n_backlog, backlog_cap;
    float *logits;    /* [V] */
    float *remaining; /* [V] q without the children drawn so far (without replacement) */
    int *ranked;      /* [TREE_SHAPE_MAX_BRANCH] top-ranked tokens */
} spec_impl;

static int feed_backlog(proposer *self, sp_error *err) {
    spec_impl *s = self->impl;
    if (!s->n_backlog) return 0;
    int rc = s->draft->step(s->draft, s->backlog, NULL, s->n_backlog, NULL, NULL, err);
    s->n_backlog = 0;
    self->steps++; /* one batched catch-up pass */
    return rc;
}

/* Child j of a node at depth d − 1, drawn from q. The site is (round,
 * position of the child, j): a chain's draws are the j = 0 ones. Siblings
 * under different parents share sites; the exact rule only ever explores
 * one node per depth, so no accepted path sees two of them. */
static int draw_child(spec_impl *s, const float *q, int j, int d, const propose_call *call) {
    const int V = s->draft->V;
    rng_site site = {call->seed, RNG_DRAFT, accept_draw_index(call->round, call->root_position + d, j)};
    if (s->kind == CHILDREN_TOP_RANKS) return s->ranked[j];
    if (s->kind == CHILDREN_IID) return sampler_sample(q, V, site);
    if (j == 0) memcpy(s->remaining, q, (size_t)V * sizeof(float));
    int x = sampler_sample(s->remaining, V, site); /* the race draws in proportion to what is left */
    if (x >= 0) s->remaining[x] = 0.0f;
    return x; /* −1: every token with q > 0 has been drawn */
}

/* Steps node u (at depth du < depth), draws its children and walks them: the static tree, depth first.
 * On entry the draft holds the path to u's parent (consumed[0..du)). A node is stepped once, from the mark
 * after its parent; marks are only rewound to an ancestor of the node being stepped, so a stepper whose marks
 * are positions (the KV entries themselves not saved) is rewound correctly too. */
static int walk(proposer *self, token_tree *tree, int u, int depth, const propose_call *call, sp_error *err) {
    spec_impl *s = self->impl;
    const int V = s->draft->V, du = tree->depth[u];
    if (s->n_consumed > du) { /* a later sibling's subtree was stepped: back to the parent */
        s->draft->rewind(s->draft, du == 0 ? MARK_BASE : MARK_AFTER(du - 1));
        s->n_consumed = du;
    }
    if (s->draft->step(s->draft, &tree->token[u], NULL, 1, s->logits, NULL, err)) return -1;
    self->steps++;
    s->consumed[s->n_consumed++] = tree->token[u];
    s->draft->mark(s->draft, MARK_AFTER(du));
    s->held.marked[du] = 1;
    float *q = tree_q(tree, u);
    sampler_probs(call->sampling, s->logits, q, V);
    const int b = s->shape.branch[du];
    if (s->kind == CHILDREN_TOP_RANKS) sampler_top_ranks(s->logits, V, b < V ? b : V, s->ranked);
    int first = tree->n, n_children = 0;
    for (int j = 0; j < b && j < V; j++) {
        int x = draw_child(s, q, j, du + 1, call);
        if (x < 0) break;
        if (tree_add(tree, u, x) < 0) return sp_fail(err, "draft proposal: tree capacity %d exceeded", tree->cap);
        n_children++;
    }
    if (du + 1 == depth) return 0;            /* the children are leaves: no step needed */
    for (int j = n_children - 1; j >= 0; j--) /* last to first: the first child's path stays in the draft */
        if (walk(self, tree, first + j, depth, call, err)) return -1;
    return 0;
}

/* Steps node u of a dynamic tree (its ancestors were all stepped before). The node may lie on another branch
 * than the last one stepped, so the draft goes back to the deepest marked node on its path, then steps the rest
 * of the path and u in one call, marked after u only; u's q goes into the tree. */
static int step_dynamic(proposer *self, token_tree *tree, int u, const propose_call *call, sp_error *err) {
    spec_impl *s = self->impl;
    const int du = tree->depth[u];
    int anc[SPEC_MAX_K + 1], tokens[SPEC_MAX_K + 1], rewind;
    tree_grow_path(tree, u, anc);
    const int from = held_path_resume(&s->held, anc, du, 0, &rewind);
    if (rewind) s->draft->rewind(s->draft, from == 0 ? MARK_BASE : MARK_AFTER(from - 1));
    for (int d = from; d <= du; d++) tokens[d - from] = tree->token[anc[d]];
    if (s->draft->step(s->draft, tokens, NULL, du - from + 1, s->logits, NULL, err)) return -1;
    self->steps++;
    s->draft->mark(s->draft, MARK_AFTER(du));
    held_path_stepped(&s->held, anc, from, du);
    for (int d = from; d <= du; d++) s->consumed[d] = tokens[d - from];
    s->n_consumed = du + 1;
    sampler_probs(call->sampling, s->logits, tree_q(tree, u), s->draft->V);
    tree_grow_stepped(s->grow, tree, u, s->logits, s->remaining);
    return 0;
}

/* Grows a dynamic tree: the best node takes its next child, stepped first
 * if its q is not known yet. */
static int grow(proposer *self, token_tree *tree, int depth, const propose_call *call, sp_error *err) {
    spec_impl *s = self->impl;
    tree_grow_start(s->grow, &s->shape, s->kind);
    for (int u; (u = tree_grow_pick(s->grow, tree, depth)) >= 0;) {
        if (!s->grow->stepped[u] && step_dynamic(self, tree, u, call, err)) return -1;
        if (tree_grow_child(s->grow, tree, u, call, s->remaining) == -2)
            return sp_fail(err, "draft proposal: tree capacity %d exceeded", tree->cap);
    }
    return 0;
}

static int spec_propose(proposer *self, token_tree *tree, const propose_call *call, sp_error *err) {
    spec_impl *s = self->impl;
    if (feed_backlog(self, err)) return -1;
    s->draft->mark(s->draft, MARK_BASE);
    s->n_consumed = 0;
    s->held.n = 0;
    const int depth = s->shape.depth < call->max_depth ? s->shape.depth : call->max_depth;
    if (depth <= 0) return 0;
    return s->grow ? grow(self, tree, depth, call, err) : walk(self, tree, 0, depth, call, err);
}

/* The draft returns to the longest prefix of the committed path it still holds (after a static walk, the first
 * child's path at every depth, since children are walked last to first) and queues the rest, to catch up on it
 * in one batched step at the next proposal. */
static int spec_commit(proposer *self, const int *path, const float *hidden, int len, int next_token, sp_error *err) {
    spec_impl *s = self->impl;
    (void)hidden, (void)next_token, (void)err;
    if (s->grow) tree_grow_learn(s->grow, path, len); /* the verdict calibrates the next growths */
    int m = 0; /* the longest prefix of what the draft holds that was committed */
    while (m < s->n_consumed && m < len && s->consumed[m] == path[m]) m++;
    while (m > 0 && !s->held.marked[m - 1]) m--; /* a dynamic tree's batched steps leave depths unmarked */
    if (m > 0)
        s->draft->rewind(s->draft, MARK_AFTER(m - 1));
    else if (s->n_consumed > 0)
        s->draft->rewind(s->draft, MARK_BASE);
    s->n_consumed = 0;
    if (s->n_backlog + len - m > s->backlog_cap) {
        s->backlog_cap = s->n_backlog + len - m + 16;
        s->backlog = sp_xrealloc(s->backlog, (size_t)s->backlog_cap, sizeof(int), "draft backlog");
    }
    for (int i = m; i < len; i++) s->backlog[s->n_backlog++] = path[i];
    return 0;
}

static void spec_release(proposer *self) {
    spec_impl *s = self->impl;
    free(s->backlog);
    free(s->logits);
    free(s->remaining);
    free(s->ranked);
    free(s->grow);
    free(s);
    self->impl = NULL;
}

int spec_tree_proposer_build(proposer *p, stepper *draft, const decode_target *t, const tree_shape *shape,
                             children_kind kind, sp_error *err) {
    if (draft->V != t->cfg->vocab_size)
        return sp_fail(err, "draft %s has a vocabulary of %d tokens, the target %s has %d: they must share it",
                       draft->path, draft->V, t->path, t->cfg->vocab_size);
    if (draft->reads_hidden) return sp_fail(err, "a %s cannot serve as a draft model", draft->name);
    if (shape->depth < 1 || shape->depth > SPEC_MAX_K)
        return sp_fail(err, "a draft tree of depth %d is outside [1, %d]", shape->depth, SPEC_MAX_K);
    for (int d = 0; d < shape->depth; d++)
        if (shape->branch[d] < 1 || shape->branch[d] > TREE_SHAPE_MAX_BRANCH)
            return sp_fail(err, "a draft tree with %d children per node at depth %d: outside [1, %d]", shape->branch[d],
                           d, TREE_SHAPE_MAX_BRANCH);
    if (tree_shape_check_budget(shape, "a draft tree", err)) return -1;
    spec_impl *s = sp_xcalloc(1, sizeof *s, "draft proposer");
    if (shape->budget > 0) s->grow = sp_xcalloc(1, sizeof *s->grow, "draft tree growth");
    s->draft = draft;
    s->shape = *shape;
    s->kind = kind;
    s->logits = sp_xcalloc((size_t)draft->V, sizeof(float), "draft logits");
    s->remaining = sp_xcalloc((size_t)draft->V, sizeof(float), "draft draw pool");
    s->ranked = sp_xcalloc(TREE_SHAPE_MAX_BRANCH, sizeof(int), "draft ranks");
    draft->reset(draft);
    memset(p, 0, sizeof *p);
    p->name = "spec";
    p->depth = shape->depth;
    p->propose = spec_propose;
    p->commit = spec_commit;
    p->release = spec_release;
    p->bytes_per_step = draft->bytes_per_step;
    p->tree_capacity = tree_shape_nodes(shape);
    p->kind = kind;
    p->impl = s;
    return 0;
}

int spec_proposer_build(proposer *p, stepper *draft, const decode_target *t, int k, sp_error *err) {
    if (k < 1 || k > SPEC_MAX_K) return sp_fail(err, "k = %d is outside [1, %d]", k, SPEC_MAX_K);
    const tree_shape chain = tree_shape_chain(k);
    return spec_tree_proposer_build(p, draft, t, &chain, CHILDREN_IID, err);
}
