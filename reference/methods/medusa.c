/* medusa.c — Medusa heads as a proposer (medusa.h). A proposal runs each head once on the target's hidden state
 * of the last consumed position and lays the candidates out on the tree: by rank (greedy, typical) or drawn from
 * the head's processed distribution (exact). */
#include "medusa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "logits_check.h"

typedef struct {
    const medusa_heads *heads;
    medusa_tree tree;
    children_kind kind;
    int D, V;
    int have_hidden;            /* a position has been committed since the start */
    float *hidden;              /* [D] final-normed hidden state of the last consumed position */
    float *logits;              /* [n_heads, V] */
    float *probs;               /* [n_heads, V] processed distributions: the q rows */
    int *ranked;                /* [n_heads, max_rank + 1] token ids by rank */
    float *remaining;           /* [V] q with the tokens already drawn removed (without replacement) */
    float *scratch;             /* [2·D] */
    int node[MEDUSA_MAX_NODES]; /* token-tree index of each tree node, −1 when not placed */
} medusa_impl;

/* The token of tree node k, drawn from q = head (depth − 1)'s processed
 * distribution; −1 when nothing is left to draw (without replacement, once
 * every token with q > 0 has been drawn). The site is unique per node and
 * round, so each draw has its own randomness. */
static int draw_child(medusa_impl *s, int k, const propose_call *call) {
    const float *q = s->probs + (size_t)(s->tree.depth[k] - 1) * s->V;
    rng_site site = {call->seed, RNG_DRAFT,
                     accept_draw_index(call->round, call->root_position + s->tree.depth[k], k + 1)};
    if (s->kind == CHILDREN_IID) return sampler_sample(q, s->V, site);
    /* without replacement: siblings are consecutive, the first resets the pool */
    if (s->tree.sibling[k] == 0) memcpy(s->remaining, q, (size_t)s->V * sizeof(float));
    int x = sampler_sample(s->remaining, s->V, site); /* the race draws in proportion to what is left */
    if (x >= 0) s->remaining[x] = 0.0f;
    return x;
}

static int medusa_propose(proposer *self, token_tree *tree, const propose_call *call, sp_error *err) {
    medusa_impl *s = self->impl;
    if (!s->have_hidden) return 0; /* a one-token prompt: no hidden state before the root yet */
    const int V = s->V, R = s->tree.max_rank + 1;
    int depth = s->tree.max_depth < call->max_depth ? s->tree.max_depth : call->max_depth;
    for (int i = 0; i < depth; i++) {
        float *logits = s->logits + (size_t)i * V;
        medusa_head_forward(s->heads, i, s->hidden, logits, s->scratch);
        if (logits_check_raw(logits, 1, V, call->root_position + i + 1, err))
            return sp_wrap(err, "Medusa head %d: ", i);
        sampler_probs(call->sampling, logits, s->probs + (size_t)i * V, V);
        if (s->kind == CHILDREN_TOP_RANKS) sampler_top_ranks(logits, V, R, s->ranked + (size_t)i * R);
    }
    self->steps++;
    /* q of every node that can have children: its depth's head */
    memcpy(tree_q(tree, 0), s->probs, (size_t)V * sizeof(float));
    for (int k = 0; k < s->tree.n; k++) {
        s->node[k] = -1;
        const int d = s->tree.depth[k], parent = s->tree.parent[k] < 0 ? 0 : s->node[s->tree.parent[k]];
        if (d > depth || parent < 0) continue; /* beyond the budget, or under a node that was not placed */
        int token =
            s->kind == CHILDREN_TOP_RANKS ? s->ranked[(size_t)(d - 1) * R + s->tree.rank[k]] : draw_child(s, k, call);
        if (token < 0) continue;
        int u = tree_add(tree, parent, token);
        if (u < 0) return sp_fail(err, "Medusa proposal: tree capacity %d exceeded", tree->cap);
        s->node[k] = u;
        if (d < depth) memcpy(tree_q(tree, u), s->probs + (size_t)d * V, (size_t)V * sizeof(float));
    }
    return 0;
}

static int medusa_commit(proposer *self, const int *path, const float *hidden, int len, int next_token, sp_error *err) {
    medusa_impl *s = self->impl;
    (void)path, (void)next_token, (void)err;
    if (len < 1) return 0;
    memcpy(s->hidden, hidden + (size_t)(len - 1) * s->D, (size_t)s->D * sizeof(float));
    s->have_hidden = 1;
    return 0;
}

static void medusa_release(proposer *self) {
    medusa_impl *s = self->impl;
    free(s->hidden);
    free(s->logits);
    free(s->probs);
    free(s->ranked);
    free(s->remaining);
    free(s->scratch);
    free(s);
    self->impl = NULL;
}

int medusa_proposer_build(proposer *p, const medusa_heads *h, const decode_target *t, const medusa_tree *tree,
                          children_kind kind, sp_error *err) {
    const int D = t->cfg->hidden_size, V = t->cfg->vocab_size;
    if (h->D != D || h->V != V)
        return sp_fail(err, "Medusa heads %s have D %d, V %d; the target %s has D %d, V %d",
                       h->path[0] ? h->path : "(built in memory)", h->D, h->V, t->path, D, V);
    for (int i = 0; i < h->n_heads; i++)
        if (!h->proj[i])
            return sp_fail(err, "Medusa head %d shares the lm_head but none was attached (medusa_share_lm_head)", i);
    if (medusa_tree_validate(tree, h->n_heads, V, "Medusa tree", err)) return -1;
    medusa_impl *s = sp_xcalloc(1, sizeof *s, "Medusa proposer");
    s->heads = h;
    s->tree = *tree;
    s->kind = kind;
    s->D = D, s->V = V;
    const size_t HV = (size_t)h->n_heads * V;
    s->hidden = sp_xcalloc((size_t)D, sizeof(float), "Medusa hidden state");
    s->logits = sp_xcalloc(HV, sizeof(float), "Medusa logits");
    s->probs = sp_xcalloc(HV, sizeof(float), "Medusa distributions");
    s->ranked = sp_xcalloc((size_t)h->n_heads * (tree->max_rank + 1), sizeof(int), "Medusa ranks");
    s->remaining = sp_xcalloc((size_t)V, sizeof(float), "Medusa draw pool");
    s->scratch = sp_xcalloc((size_t)2 * D, sizeof(float), "Medusa scratch");
    memset(p, 0, sizeof *p);
    p->name = "medusa";
    p->depth = tree->max_depth;
    p->needs_hidden = 1;
    p->propose = medusa_propose;
    p->commit = medusa_commit;
    p->release = medusa_release;
    p->bytes_per_step = medusa_bytes_per_step(h, t->storage_bytes);
    p->tree_capacity = tree->n;
    p->kind = kind;
    p->impl = s;
    return 0;
}
