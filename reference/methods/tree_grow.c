/* tree_grow.c — the best-first growth of a dynamic draft tree (tree_grow.h):
 * plain arrays over at most 256 nodes, so a linear scan picks the next node
 * (the budget is small next to one draft step). */
#include "tree_grow.h"

#include <string.h>

#include "sampler.h"

void tree_grow_start(tree_growth *g, const tree_shape *caps, children_kind kind) {
    const tree_calibration kept = g->calibration;
    memset(g, 0, sizeof *g);
    g->calibration = kept;
    g->caps = *caps;
    g->kind = kind;
    g->path[0] = 1.0f;
    g->rest[0] = 1.0f;
    g->n = 1;
    g->parent[0] = -1;
}

int tree_grow_bin(float confidence) {
    const int b = (int)(confidence * TREE_GROW_BINS);
    return b < 0 ? 0 : b >= TREE_GROW_BINS ? TREE_GROW_BINS - 1 : b;
}

float tree_grow_calibrated(const tree_growth *g, float confidence, int later) {
    if (g->caps.raw_confidence) return confidence;
    const int b = tree_grow_bin(confidence);
    const tree_calibration *k = &g->calibration;
    /* the confidence itself is the prior, worth two tried children: with no verdicts yet it is unchanged */
    return (float)((k->accepted[later][b] + 2.0 * confidence) / (k->tried[later][b] + 2.0));
}

void tree_grow_learn(tree_growth *g, const int *path, int len) {
    int u = 0;
    for (int d = 1; d <= len && g->n > 1; d++) { /* d = len: the last node, whose children were all rejected */
        int next = -1;
        for (int c = u + 1; c < g->n && next < 0; c++) {
            if (g->parent[c] != u) continue;
            g->calibration.tried[g->later[c]][g->bin[c]]++;
            if (d < len && g->token[c] == path[d]) {
                g->calibration.accepted[g->later[c]][g->bin[c]]++;
                next = c;
            }
        }
        if (next < 0) break;
        u = next;
    }
    g->n = 0;
}

/* The acceptance rate measured so far for first children (later = 0) or later ones, ½ before any verdict. */
static float expected_acceptance(const tree_growth *g, int later) {
    long tried = 0, accepted = 0;
    for (int b = 0; b < TREE_GROW_BINS; b++)
        tried += g->calibration.tried[later][b], accepted += g->calibration.accepted[later][b];
    return (float)((accepted + 1.0) / (tried + 2.0));
}

/* Raw: the draft's probability that the target's path leaves u by a token not yet drawn there (EAGLE-2's
 * value of a node, before the child is drawn). Calibrated: the chance the rule reaches u's next child,
 * times the chance such a child is accepted: the tokens the child is expected to add. */
static float next_child_priority(const tree_growth *g, int u) {
    const float reach = g->path[u] * g->rest[u];
    return g->caps.raw_confidence ? reach : reach * expected_acceptance(g, g->n_children[u] > 0);
}

int tree_grow_pick(const tree_growth *g, const token_tree *t, int depth) {
    if (t->n - 1 >= g->caps.budget) return -1;
    int best = -1;
    float best_priority = 0.0f;
    for (int u = 0; u < t->n; u++) {
        const int du = t->depth[u];
        if (du >= depth || g->exhausted[u] || g->n_children[u] >= g->caps.branch[du]) continue;
        const float priority = next_child_priority(g, u);
        if (priority > best_priority) { /* strictly: the lower index keeps a tie */
            best = u;
            best_priority = priority;
        }
    }
    return best;
}

void tree_grow_stepped(tree_growth *g, const token_tree *t, int u, const float *logits, float *scratch) {
    g->stepped[u] = 1;
    if (g->kind != CHILDREN_TOP_RANKS) return; /* the confidences are q itself */
    const int V = t->V, b = g->caps.branch[t->depth[u]], r = b < V ? b : V;
    sampler_top_ranks(logits, V, r, g->ranked[u]);
    const sampler_params raw = sampler_defaults(); /* temperature 1, no cut: the draft's own confidence */
    sampler_probs(&raw, logits, scratch, V);
    for (int j = 0; j < r; j++) g->ranked_conf[u][j] = scratch[g->ranked[u][j]];
    for (int j = r; j < TREE_SHAPE_MAX_BRANCH; j++) g->ranked[u][j] = -1;
}

/* 1 when x is already a child of u (i.i.d. draws repeat tokens). */
static int has_child(const token_tree *t, int u, int x) {
    for (int i = u + 1; i < t->n; i++)
        if (t->parent[i] == u && t->token[i] == x) return 1;
    return 0;
}

/* u's next child: its rank j, or a draw from q (without replacement: q with
 * u's children so far taken out). The site's slot is the child's place among
 * the nodes of its depth, so every draw of the proposal has its own
 * randomness: whether a node gets a child may depend on a draw elsewhere in
 * the tree, and must not share randomness with the child it decides on. */
static int draw_next(const tree_growth *g, const token_tree *t, int u, const propose_call *call, float *pool) {
    const int V = t->V, d = t->depth[u] + 1, j = g->n_children[u];
    if (g->kind == CHILDREN_TOP_RANKS) /* a rank the draft gives no chance at all is not worth a node */
        return j < V && j < TREE_SHAPE_MAX_BRANCH && g->ranked_conf[u][j] > 0 ? g->ranked[u][j] : -1;
    const float *q = tree_q_const(t, u);
    rng_site site = {call->seed, RNG_DRAFT, accept_draw_index(call->round, call->root_position + d, g->at_depth[d])};
    if (g->kind == CHILDREN_IID) return sampler_sample(q, V, site);
    memcpy(pool, q, (size_t)V * sizeof(float));
    for (int i = u + 1; i < t->n; i++)
        if (t->parent[i] == u) pool[t->token[i]] = 0.0f;
    return sampler_sample(pool, V, site); /* the race draws in proportion to what is left */
}

int tree_grow_child(tree_growth *g, token_tree *t, int u, const propose_call *call, float *pool) {
    const int j = g->n_children[u];
    const int x = draw_next(g, t, u, call, pool);
    if (x < 0) {
        g->exhausted[u] = 1;
        return -1;
    }
    const float conf = g->kind == CHILDREN_TOP_RANKS ? g->ranked_conf[u][j] : tree_q_const(t, u)[x];
    const float cal = tree_grow_calibrated(g, conf, j > 0);
    const int repeated = g->kind == CHILDREN_IID && has_child(t, u, x); /* rejected once, rejected again */
    const int c = tree_add(t, u, x);
    if (c < 0) return -2;
    g->n_children[u]++;
    g->at_depth[t->depth[c]]++;
    if (!repeated) g->rest[u] = g->caps.raw_confidence ? g->rest[u] - conf : g->rest[u] * (1.0f - cal);
    g->path[c] = g->path[u] * cal;
    g->rest[c] = 1.0f;
    g->parent[c] = u;
    g->token[c] = x;
    g->bin[c] = (unsigned char)tree_grow_bin(conf);
    g->later[c] = j > 0;
    g->n = c + 1;
    return c;
}

void tree_grow_path(const token_tree *t, int u, int *anc) {
    for (int v = u; v >= 0; v = t->parent[v]) anc[t->depth[v]] = v;
}

int held_path_resume(const held_path *h, const int *anc, int depth_u, int first, int *rewind) {
    int common = 0; /* depths held that lie on u's path */
    while (common < h->n && common <= depth_u && h->node[common] == anc[common]) common++;
    int from = first;
    for (int d = common - 1; d >= first; d--)
        if (h->marked[d]) {
            from = d + 1;
            break;
        }
    *rewind = h->n > from;
    return from;
}

void held_path_stepped(held_path *h, const int *anc, int from, int depth_u) {
    for (int d = from; d <= depth_u; d++) {
        h->node[d] = anc[d];
        h->marked[d] = 0;
    }
    h->marked[depth_u] = 1;
    h->n = depth_u + 1;
}
