/* mtp.c — the MTP module as a proposer (mtp.h). Two kinds of MTP step:
 *   real steps  (target hidden at t, committed token t+1) at position t, run when tokens are committed; their KV
 *               entries stay;
 *   chain steps (MTP hidden, drafted token) during a proposal; their KV entries are dropped at the next commit. */
#include "mtp.h"

#include <stdlib.h>
#include <string.h>

#include "logits_check.h"
#include "tree_grow.h"

#define MARK_REAL 0             /* the module after the last real step */
#define MARK_AFTER(d) (1 + (d)) /* after the chain step of the path's node at depth d ≥ 1 */

typedef struct {
    stepper *mtp; /* not owned */
    tree_shape shape;
    children_kind kind;
    int sample_drafts;
    int have_first;      /* the last real step's outputs are valid */
    float *first_logits; /* [V] logits of the last real step: they give the first draft */
    float *first_hidden; /* [D] its output hidden state */
    float *logits;       /* [V] chain-step outputs */
    float *hidden;       /* [depth + 1, D] output hidden state after the path's node at each depth (0: first) */
    float *remaining;    /* [V] q without the children drawn so far (without replacement) */
    int ranked[TREE_SHAPE_MAX_BRANCH];
    int stepped;    /* the depth of the deepest chain step on the path the module holds */
    int *following; /* [following_cap] the token each real step pairs with its hidden state */
    int following_cap;
    int on_target; /* 1: the rounds are handed to the target (mtp_verify_accept) */
    int pending;   /* then: the real steps of the last commit, following[0..pending), not yet run */
    int drafts[MTP_MAX_K];
    tree_growth *grow;  /* a dynamic tree's growth (NULL: static shape) */
    held_path held;     /* the chain steps the module holds (depth 0: the root, after the real steps) */
    float *node_hidden; /* [budget + 1, D] a dynamic tree's output hidden state of each stepped node */
    float *path_hidden; /* [depth, D] the hidden inputs of one batched re-step */
} mtp_impl;

/* Child j of a node at depth d − 1, from q (one-hot for argmax drafts); the
 * chain's drafts are the j = 0 ones. −1: nothing left to draw. */
static int draw_child(mtp_impl *s, const float *q, int j, int d, const propose_call *call) {
    const int V = s->mtp->V;
    rng_site site = {call->seed, RNG_DRAFT, accept_draw_index(call->round, call->root_position + d, j)};
    if (s->kind == CHILDREN_TOP_RANKS) return s->ranked[j];
    if (!s->sample_drafts) return sampler_argmax(q, V);
    if (s->kind == CHILDREN_IID) return sampler_sample(q, V, site);
    if (j == 0) memcpy(s->remaining, q, (size_t)V * sizeof(float));
    int x = sampler_sample(s->remaining, V, site);
    if (x >= 0) s->remaining[x] = 0.0f;
    return x;
}

/* Node u of a static tree (a chain is the shape of k ones), depth first: its chain step (depth ≥ 1) from the
 * state after its parent's, fed its parent's output hidden state; its q; its children, then theirs. Marks are
 * rewound only to an ancestor, so marks that are positions suffice. */
static int walk(proposer *self, token_tree *tree, int u, int depth, const propose_call *call, sp_error *err) {
    mtp_impl *s = self->impl;
    const int V = s->mtp->V, D = s->mtp->D, du = tree->depth[u];
    const float *logits = s->first_logits;
    if (du > 0) { /* a chain step: the parent's output hidden state and this node's token */
        if (s->stepped >= du) {
            s->mtp->rewind(s->mtp, du == 1 ? MARK_REAL : MARK_AFTER(du - 1));
            s->stepped = du - 1;
        }
        float *h = s->hidden + (size_t)du * D;
        if (s->mtp->step(s->mtp, &tree->token[u], h - D, 1, s->logits, h, err)) return -1;
        self->steps++;
        s->mtp->mark(s->mtp, MARK_AFTER(du));
        s->stepped = du;
        logits = s->logits;
    }
    /* the module's numbers, before a draft is drawn from them (an argmax of NaN would index q at −1) */
    if (logits_check_raw(logits, 1, V, call->root_position + du, err)) return sp_wrap(err, "the MTP module: ");
    float *q = tree_q(tree, u);
    if (s->sample_drafts) {
        sampler_probs(call->sampling, logits, q, V);
    } else { /* argmax drafts: q one-hot */
        memset(q, 0, (size_t)V * sizeof(float));
        q[sampler_argmax(logits, V)] = 1.0f;
    }
    const int b = s->shape.branch[du];
    if (s->kind == CHILDREN_TOP_RANKS) sampler_top_ranks(logits, V, b < V ? b : V, s->ranked);
    int first = tree->n, n_children = 0;
    for (int j = 0; j < b && j < V; j++) {
        int x = draw_child(s, q, j, du + 1, call);
        if (x < 0) break;
        if (tree_add(tree, u, x) < 0) return sp_fail(err, "MTP proposal: tree capacity %d exceeded", tree->cap);
        n_children++;
    }
    if (du + 1 == depth) return 0;
    for (int j = n_children - 1; j >= 0; j--)
        if (walk(self, tree, first + j, depth, call, err)) return -1;
    return 0;
}

/* Gives node u of a dynamic tree (grown best first, tree_grow.h) its q: the root's from the last real step;
 * any other node's from a chain step, after returning to the deepest marked node on its path and stepping the
 * rest of the path with it in one call, each position fed the output hidden state its parent had when it was
 * first stepped (kept per node). */
static int step_dynamic(proposer *self, token_tree *tree, int u, const propose_call *call, sp_error *err) {
    mtp_impl *s = self->impl;
    const int V = s->mtp->V, D = s->mtp->D, du = tree->depth[u];
    const float *logits = s->first_logits;
    if (du > 0) {
        int anc[MTP_MAX_K + 1], tokens[MTP_MAX_K + 1], rewind;
        tree_grow_path(tree, u, anc);
        const int from = held_path_resume(&s->held, anc, du, 1, &rewind);
        if (rewind) s->mtp->rewind(s->mtp, from == 1 ? MARK_REAL : MARK_AFTER(from - 1));
        for (int d = from; d <= du; d++) {
            tokens[d - from] = tree->token[anc[d]];
            memcpy(s->path_hidden + (size_t)(d - from) * D, s->node_hidden + (size_t)anc[d - 1] * D,
                   (size_t)D * sizeof(float));
        }
        if (s->mtp->step(s->mtp, tokens, s->path_hidden, du - from + 1, s->logits, s->node_hidden + (size_t)u * D, err))
            return -1;
        self->steps++;
        s->mtp->mark(s->mtp, MARK_AFTER(du));
        held_path_stepped(&s->held, anc, from, du);
        logits = s->logits;
    }
    if (logits_check_raw(logits, 1, V, call->root_position + du, err)) return sp_wrap(err, "the MTP module: ");
    sampler_probs(call->sampling, logits, tree_q(tree, u), V);
    tree_grow_stepped(s->grow, tree, u, logits, s->remaining);
    return 0;
}

/* Grows a dynamic tree: the best node takes its next child, stepped first
 * if its q is not known yet. */
static int grow(proposer *self, token_tree *tree, int depth, const propose_call *call, sp_error *err) {
    mtp_impl *s = self->impl;
    tree_grow_start(s->grow, &s->shape, s->kind);
    memcpy(s->node_hidden, s->first_hidden, (size_t)s->mtp->D * sizeof(float)); /* the root's */
    s->held.n = 1;
    s->held.node[0] = 0;
    s->held.marked[0] = 1; /* MARK_REAL */
    for (int u; (u = tree_grow_pick(s->grow, tree, depth)) >= 0;) {
        if (!s->grow->stepped[u] && step_dynamic(self, tree, u, call, err)) return -1;
        if (tree_grow_child(s->grow, tree, u, call, s->remaining) == -2)
            return sp_fail(err, "MTP proposal: tree capacity %d exceeded", tree->cap);
    }
    return 0;
}

static int mtp_propose(proposer *self, token_tree *tree, const propose_call *call, sp_error *err) {
    mtp_impl *s = self->impl;
    if (!s->have_first) return 0; /* a one-token prompt: nothing to chain from yet */
    const int at = s->mtp->position(s->mtp);
    if (at != call->root_position)
        return sp_fail(err, "MTP state at position %d, proposal rooted at %d: out of step", at, call->root_position);
    const int depth = s->shape.depth < call->max_depth ? s->shape.depth : call->max_depth;
    if (depth <= 0) return 0;
    if (s->grow) return grow(self, tree, depth, call, err);
    memcpy(s->hidden, s->first_hidden, (size_t)s->mtp->D * sizeof(float));
    s->stepped = 0;
    return walk(self, tree, 0, depth, call, err);
}

/* The chain round handed to a target that drafts where its distributions are (target.h, mtp_verify_accept):
 * it runs the real steps the last commit left pending (the hidden states stay on its side), draws the drafts at
 * draw_child's sites (j = 0 at each depth), then the pass and the rule. Only the result and the drafts come back;
 * the drafts go into the tree. */
static int mtp_propose_verify(proposer *self, decode_target *t, int seq, token_tree *tree, const propose_call *call,
                              accept_site site, accept_result *r, sp_error *err) {
    mtp_impl *s = self->impl;
    if (!t->mtp_verify_accept) return 1;
    const int at = s->mtp->position(s->mtp) + s->pending;
    if (at != call->root_position && (s->have_first || s->pending))
        return sp_fail(err, "MTP state at position %d, proposal rooted at %d: out of step", at, call->root_position);
    int k = s->shape.depth < call->max_depth ? s->shape.depth : call->max_depth;
    if (!s->have_first && !s->pending) k = 0; /* a one-token prompt: nothing to chain from yet */
    const mtp_chain_call c = {s->mtp,           s->following, s->pending,  MARK_REAL,           k > 0 ? k : 0,
                              s->sample_drafts, call->seed,   call->round, call->root_position, s->drafts};
    const target_job job = {seq, tree, NULL, NULL};
    const int rc = t->mtp_verify_accept(t, &job, &c, call->sampling, site, r, err);
    if (rc) return rc;
    s->on_target = 1;
    self->steps += (s->pending > 0) + (c.k > 1 ? c.k - 1 : 0); /* the real steps' pass, the chain steps */
    s->have_first |= s->pending > 0;
    s->pending = 0;
    for (int d = 0; d < c.k; d++)
        if (tree_add(tree, d, s->drafts[d]) < 0)
            return sp_fail(err, "MTP proposal: tree capacity %d exceeded", tree->cap);
    return 0;
}

static int mtp_commit(proposer *self, const int *path, const float *hidden, int len, int next_token, sp_error *err) {
    mtp_impl *s = self->impl;
    if (s->grow) tree_grow_learn(s->grow, path, len); /* the verdict calibrates the next growths */
    s->mtp->rewind(s->mtp, MARK_REAL);                /* drop the chain steps */
    if (len < 1) return 0;
    if (len > s->following_cap) {
        s->following_cap = len + 16;
        s->following = sp_xrealloc(s->following, (size_t)s->following_cap, sizeof(int), "MTP real-step tokens");
    }
    for (int i = 0; i < len; i++) s->following[i] = i + 1 < len ? path[i + 1] : next_token;
    if (s->on_target) { /* the target runs them in the next round, on the hidden states it kept */
        s->pending = len;
        return 0;
    }
    /* the real steps of one commit form one batched MTP pass */
    if (s->mtp->step(s->mtp, s->following, hidden, len, s->first_logits, s->first_hidden, err)) return -1;
    s->have_first = 1;
    self->steps++;
    s->mtp->mark(s->mtp, MARK_REAL);
    return 0;
}

static void mtp_release(proposer *self) {
    mtp_impl *s = self->impl;
    free(s->first_logits);
    free(s->first_hidden);
    free(s->logits);
    free(s->hidden);
    free(s->remaining);
    free(s->following);
    free(s->grow);
    free(s->node_hidden);
    free(s->path_hidden);
    free(s);
    self->impl = NULL;
}

int mtp_tree_proposer_build(proposer *p, stepper *mtp, const tree_shape *shape, children_kind kind, int sample_drafts,
                            sp_error *err) {
    if (!mtp->reads_hidden)
        return sp_fail(err, "%s: a %s cannot serve as an MTP module (it reads no hidden state)", mtp->path, mtp->name);
    if (shape->depth < 1 || shape->depth > MTP_MAX_K)
        return sp_fail(err, "an MTP tree of depth %d is outside [1, %d]", shape->depth, MTP_MAX_K);
    for (int d = 0; d < shape->depth; d++)
        if (shape->branch[d] < 1 || shape->branch[d] > TREE_SHAPE_MAX_BRANCH)
            return sp_fail(err, "an MTP tree with %d children per node at depth %d: outside [1, %d]", shape->branch[d],
                           d, TREE_SHAPE_MAX_BRANCH);
    if (tree_shape_check_budget(shape, "an MTP tree", err)) return -1;
    if (!sample_drafts && kind != CHILDREN_TOP_RANKS && (shape->budget > 0 || tree_shape_nodes(shape) != shape->depth))
        return sp_fail(err, "argmax MTP drafts give every child of a node the same token: a tree needs sampled "
                            "drafts or top-ranked children");
    const int V = mtp->V, D = mtp->D;
    mtp_impl *s = sp_xcalloc(1, sizeof *s, "MTP proposer");
    s->mtp = mtp;
    s->shape = *shape;
    s->kind = kind;
    s->sample_drafts = sample_drafts;
    s->first_logits = sp_xcalloc((size_t)V, sizeof(float), "MTP logits");
    s->first_hidden = sp_xcalloc((size_t)D, sizeof(float), "MTP hidden");
    s->logits = sp_xcalloc((size_t)V, sizeof(float), "MTP chain logits");
    s->hidden = sp_xcalloc((size_t)(shape->depth + 1) * D, sizeof(float), "MTP chain hidden states");
    s->remaining = sp_xcalloc((size_t)V, sizeof(float), "MTP draw pool");
    if (shape->budget > 0) {
        s->grow = sp_xcalloc(1, sizeof *s->grow, "MTP tree growth");
        s->node_hidden = sp_xcalloc((size_t)(shape->budget + 1) * D, sizeof(float), "MTP node hidden states");
        s->path_hidden = sp_xcalloc((size_t)shape->depth * D, sizeof(float), "MTP re-step hidden states");
    }
    mtp->reset(mtp);
    mtp->mark(mtp, MARK_REAL);
    memset(p, 0, sizeof *p);
    p->name = "mtp";
    p->depth = shape->depth;
    p->needs_hidden = 1;
    p->propose = mtp_propose;
    p->commit = mtp_commit;
    /* a chain (one child a node: drawn alike i.i.d. or without replacement) of drafts drawn from q */
    if (!shape->budget && kind != CHILDREN_TOP_RANKS && tree_shape_nodes(shape) == shape->depth)
        p->propose_verify = mtp_propose_verify;
    p->release = mtp_release;
    p->bytes_per_step = mtp->bytes_per_step;
    p->tree_capacity = tree_shape_nodes(shape);
    p->kind = kind;
    p->impl = s;
    return 0;
}

int mtp_proposer_build(proposer *p, stepper *mtp, int k, int sample_drafts, sp_error *err) {
    if (k < 1 || k > MTP_MAX_K) return sp_fail(err, "k = %d is outside [1, %d]", k, MTP_MAX_K);
    const tree_shape chain = tree_shape_chain(k);
    return mtp_tree_proposer_build(p, mtp, &chain, CHILDREN_IID, sample_drafts, err);
}
