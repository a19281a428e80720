/* tree.c — token trees: construction, children, masks and positions. */
#include "tree.h"

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
