/* tree.c — token trees: construction, children, masks and positions. */
#include "tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

void tree_build(token_tree *t, int V, int cap) {
    memset(t, 0, sizeof *t);
    t->V = V;
    t->cap = cap;
    t->token = sp_xcalloc((size_t)cap, sizeof(int), "tree tokens");
    t->parent = sp_xcalloc((size_t)cap, sizeof(int), "tree parents");
    t->depth = sp_xcalloc((size_t)cap, sizeof(int), "tree depths");
    t->q = sp_xcalloc((size_t)cap * V, sizeof(float), "tree q rows");
}

void tree_free(token_tree *t) {
    free(t->token);
    free(t->parent);
    free(t->depth);
    free(t->q);
    memset(t, 0, sizeof *t);
}

void tree_reset(token_tree *t, int root_token, children_kind kind) {
    t->n = 1;
    t->token[0] = root_token;
    t->parent[0] = -1;
    t->depth[0] = 0;
    t->kind = kind;
}

int tree_add(token_tree *t, int parent, int token) {
    if (t->n == t->cap || parent < 0 || parent >= t->n) return -1;
    int i = t->n++;
    t->token[i] = token;
    t->parent[i] = parent;
    t->depth[i] = t->depth[parent] + 1;
    return i;
}

float *tree_q(token_tree *t, int node) { return t->q + (size_t)node * t->V; }

const float *tree_q_const(const token_tree *t, int node) { return t->q + (size_t)node * t->V; }

int tree_children(const token_tree *t, int u, int *out, int max) {
    int m = 0;
    for (int i = u + 1; i < t->n; i++)
        if (t->parent[i] == u && m < max) out[m++] = i;
    return m;
}

int tree_max_depth(const token_tree *t) {
    int d = 0;
    for (int i = 0; i < t->n; i++)
        if (t->depth[i] > d) d = t->depth[i];
    return d;
}

int tree_is_ancestor(const token_tree *t, int a, int b) {
    for (int x = b; x >= 0; x = t->parent[x])
        if (x == a) return 1;
    return 0;
}

void tree_attention_mask(const token_tree *t, unsigned char *mask) {
    for (int i = 0; i < t->n; i++)
        for (int j = 0; j < t->n; j++) mask[(size_t)i * t->n + j] = (unsigned char)tree_is_ancestor(t, j, i);
}

void tree_positions(const token_tree *t, int base, int *pos) {
    for (int i = 0; i < t->n; i++) pos[i] = base + t->depth[i];
}

int tree_shape_full_nodes(const tree_shape *s) {
    int nodes = 0, level = 1;
    for (int d = 0; d < s->depth && nodes <= TREE_SHAPE_MAX_NODES; d++) {
        level *= s->branch[d];
        if (level > TREE_SHAPE_MAX_NODES) level = TREE_SHAPE_MAX_NODES + 1; /* no overflow: 16^32 does not fit */
        nodes += level;
    }
    return nodes > TREE_SHAPE_MAX_NODES ? TREE_SHAPE_MAX_NODES + 1 : nodes;
}

int tree_shape_nodes(const tree_shape *s) { return s->budget > 0 ? s->budget : tree_shape_full_nodes(s); }

int tree_shape_check_budget(const tree_shape *s, const char *what, sp_error *err) {
    const int full = tree_shape_full_nodes(s);
    if (s->budget == 0 && full > TREE_SHAPE_MAX_NODES)
        return sp_fail(err, "%s of more than %d nodes: at most %d", what, TREE_SHAPE_MAX_NODES, TREE_SHAPE_MAX_NODES);
    if (s->budget < 0 || s->budget > TREE_SHAPE_MAX_NODES)
        return sp_fail(err, "%s with a budget of %d nodes: outside [1, %d]", what, s->budget, TREE_SHAPE_MAX_NODES);
    if (s->budget > full) return sp_fail(err, "%s with a budget of %d nodes: its caps allow %d", what, s->budget, full);
    return 0;
}

tree_shape tree_shape_dynamic(int budget, int depth) {
    tree_shape s;
    memset(&s, 0, sizeof s);
    s.depth = depth < TREE_SHAPE_MAX_DEPTH ? depth : TREE_SHAPE_MAX_DEPTH;
    for (int d = 0; d < s.depth; d++) s.branch[d] = TREE_SHAPE_MAX_BRANCH;
    s.budget = budget;
    return s;
}

int tree_shape_parse(const char *flag, const char *text, tree_shape *out, sp_error *err) {
    tree_shape s;
    memset(&s, 0, sizeof s);
    const char *p = text;
    for (;;) {
        char *end;
        long b = strtol(p, &end, 10);
        if (end == p || b < 1 || b > TREE_SHAPE_MAX_BRANCH || s.depth == TREE_SHAPE_MAX_DEPTH)
            return sp_fail(err, "%s '%s': expected children per depth like 2,2,1,1 (each 1 to %d, at most %d depths)",
                           flag, text, TREE_SHAPE_MAX_BRANCH, TREE_SHAPE_MAX_DEPTH);
        s.branch[s.depth++] = (int)b;
        if (tree_shape_nodes(&s) > TREE_SHAPE_MAX_NODES)
            return sp_fail(err, "%s '%s': more than %d nodes under the root", flag, text, TREE_SHAPE_MAX_NODES);
        if (!*end) break;
        if (*end != ',')
            return sp_fail(err, "%s '%s': expected children per depth separated by commas, e.g. 2,2,1,1", flag, text);
        p = end + 1;
    }
    *out = s;
    return 0;
}

void tree_shape_format(const tree_shape *s, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = 0;
    int widest = 1;
    for (int d = 0; d < s->depth; d++) widest &= s->branch[d] == TREE_SHAPE_MAX_BRANCH;
    if (s->budget > 0) {
        len = (size_t)snprintf(buf, size, "dynamic%s depth %d%s", s->raw_confidence ? " raw" : "", s->depth,
                               widest ? "" : " under ");
        if (widest || len >= size) return;
    }
    for (int d = 0; d < s->depth && len < size; d++)
        len += (size_t)snprintf(buf + len, size - len, "%s%d", d ? "," : "", s->branch[d]);
}

tree_shape tree_shape_chain(int k) {
    tree_shape s;
    memset(&s, 0, sizeof s);
    s.depth = k < TREE_SHAPE_MAX_DEPTH ? k : TREE_SHAPE_MAX_DEPTH;
    for (int d = 0; d < s.depth; d++) s.branch[d] = 1;
    return s;
}
