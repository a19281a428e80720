/* A wrong solution to exercise 5; its checker must reject it (tests/parts/exercises.sh).
 * Mistake: the mask is transposed: a node sees its descendants instead of its ancestors.
 * Caught by: exercise_tree_mask */
#include <stddef.h>

#include "tree.h"

void tree_attention_mask(const token_tree *t, unsigned char *mask) {
    const int n = t->n;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) mask[(size_t)i * n + j] = 0;
        if (i > 0)
            for (int j = 0; j < n; j++) mask[(size_t)i * n + j] = mask[(size_t)t->parent[i] * n + j];
        mask[(size_t)i * n + i] = 1;
    }
    for (int i = 0; i < n; i++) /* swap across the diagonal */
        for (int j = 0; j < i; j++) {
            unsigned char x = mask[(size_t)i * n + j];
            mask[(size_t)i * n + j] = mask[(size_t)j * n + i];
            mask[(size_t)j * n + i] = x;
        }
}

void tree_positions(const token_tree *t, int base, int *pos) {
    for (int i = 0; i < t->n; i++) pos[i] = base + t->depth[i];
}
