/* Exercise 5 — the tree attention mask and the node positions
 * (lessons/05-medusa.md). A verification pass evaluates every node of
 * a token tree at once; each node must see exactly the path from the root
 * to itself, at the position it would have in a plain sequence. The checker
 * (make exercise EX=5 FILE=this-file) runs the project's tree tests and
 * compares your mask with the root-to-node paths of random trees. */
#include <stddef.h> /* size_t, for index arithmetic */

#include "tree.h"

/* mask[i·n + j] = 1 when node i may attend to node j: j is i itself or one
 * of i's ancestors; 0 otherwise (siblings, cousins, descendants). n = t->n.
 * Nodes are in topological order (t->parent[i] < i for i > 0; the root's
 * parent is −1), which gives an O(n²) construction without walking paths:
 * row i is row parent[i] plus the diagonal. Do not call tree_is_ancestor. */
void tree_attention_mask(const token_tree *t, unsigned char *mask) {
    /* ---- gap 1 ---- */
    (void)t, (void)mask;
    /* ---- end of gap 1 ---- */
}

/* pos[i]: the sequence position of node i when the root sits at `base`.
 * Siblings share a position: they are alternatives for the same slot. */
void tree_positions(const token_tree *t, int base, int *pos) {
    /* ---- gap 2 ---- */
    (void)t, (void)base, (void)pos;
    /* ---- end of gap 2 ---- */
}
