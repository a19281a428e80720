/* A wrong solution to exercise 5; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: a node sees itself and its parent only, not the whole path up to the root.
 * Caught by: exercise_tree_mask */
#include <stddef.h>

#include "tree.h"

void tree_attention_mask(const token_tree *t, unsigned char *mask) {
    const int n = t->n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) mask[(size_t)i * n + j] = j == i || j == t->parent[i];
}

void tree_positions(const token_tree *t, int base, int *pos) {
    for (int i = 0; i < t->n; i++) pos[i] = base + t->depth[i];
}
