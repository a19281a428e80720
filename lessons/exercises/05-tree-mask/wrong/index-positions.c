/* A wrong solution to exercise 5; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: a node's position is base + its index, so siblings get different positions.
 * Caught by: exercise_tree_mask */
#include <stddef.h>

#include "tree.h"

void tree_attention_mask(const token_tree *t, unsigned char *mask) {
    const int n = t->n;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) mask[(size_t)i * n + j] = i > 0 ? mask[(size_t)t->parent[i] * n + j] : 0;
        mask[(size_t)i * n + i] = 1;
    }
}

void tree_positions(const token_tree *t, int base, int *pos) {
    for (int i = 0; i < t->n; i++) pos[i] = base + i;
}
