/* accept.h — the acceptance rules, as pure functions of the token tree, its proposal distributions q and the
 * target's processed distributions p at every node. Shared by the reference and the engine. */
#ifndef SPECULA_ACCEPT_H
#define SPECULA_ACCEPT_H

#include <stdint.h>

#include "error.h"
#include "tree.h"

#define ACCEPT_MAX_PATH 256

typedef struct {
    int n_accepted;            /* proposed tokens accepted (the path's length minus the root) */
    int path[ACCEPT_MAX_PATH]; /* accepted nodes, root first: path[0] = 0 */
    int next_token;            /* the token after the path: a correction or a bonus */
    int bonus;                 /* 1 when next_token was drawn from p of a node without children */
} accept_result;

/* Where the randomness of one verification comes from. Every draw's rng
 * index is accept_draw_index(round, position of the deciding node, slot),
 * unique within a run, so two backends given the same site agree draw for
 * draw. */
typedef struct {
    uint64_t seed;
    uint64_t round;    /* the number of this verification pass in the run */
    int base_position; /* the root's position in the sequence */
} accept_site;

static inline uint64_t accept_draw_index(uint64_t round, int position, int slot) {
    return (round << 40) | ((uint64_t)(uint32_t)position << 8) | (uint64_t)(slot & 0xff);
}

/* The exact rule: Leviathan et al. for a chain, SpecInfer-style multi-round rejection for a tree (children
 * i.i.d. or without replacement). The committed tokens are distributed exactly as the target's.
 * p: [t->n, V], p row i = the target's processed distribution of the token after node i. scratch: [2·V].
 * Fails (with a message) when the tree's children were not drawn from q (CHILDREN_TOP_RANKS), or a drafted
 * token has q = 0. */
int accept_exact(const token_tree *t, const float *p, accept_site site, float *scratch, accept_result *r,
                 sp_error *err);

/* Follows the target's argmax while the tree has it. */
void accept_greedy(const token_tree *t, const float *p, accept_result *r);

/* Medusa's typical acceptance: fast, but not exact at temperature > 0.
 * Node c is acceptable when p_parent(c)[token c] >
 * min(epsilon, delta·exp(−H(p_parent))). The longest acceptable path wins
 * (the first in index order among equals); next_token is drawn from p of
 * its last node. Medusa's defaults: epsilon 0.09, delta 0.3. */
void accept_typical(const token_tree *t, const float *p, float epsilon, float delta, accept_site site,
                    accept_result *r);

/* The walk of accept_typical without the final draw: fills r's path and
 * n_accepted and returns the last accepted node. */
int accept_typical_walk(const token_tree *t, const float *p, float epsilon, float delta, accept_result *r);

/* The pieces of the exact rule, exposed for tests and lessons:
 * residual[V] = norm(max(0, p − q)); returns its mass before normalising
 * (0 when p ≤ q everywhere, in which case residual is left as p). */
double accept_residual(const float *p, const float *q, float *residual, int V);

#endif
