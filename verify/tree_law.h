/* tree_law.h — the exact law of one verification of a given token tree by
 * the exact rule or a planted bug of planted.h: the probability of each
 * accepted path and of the token after it, computed (not sampled) by
 * following planted_accept_rule's walk with the probability of each branch.
 * spec_law.h does this for whole runs of chains; this is one round of a
 * tree, for callers that compose rounds themselves (the context-free trees
 * of tests/stat/test_leviathan.c, whose controls' must-catch sets come from
 * it). Sampled children only (i.i.d. or without replacement): a tree of top
 * ranks is walked by the greedy rule, which is deterministic given p. */
#ifndef SPECULA_TREE_LAW_H
#define SPECULA_TREE_LAW_H

#include "planted.h"

/* One outcome: path[0..n_accepted] (path[0] = 0, the root) accepted, then
 * next_token, with probability prob. */
typedef void (*tree_outcome_fn)(void *user, const int *path, int n_accepted, int next_token, double prob);

/* Calls out once per (path, next token) branch of the rule on tree t with
 * p[t->n, V] (row i: the target after node i) at `site` (for the late
 * bug's position). Outcomes of the same (path, token) reached by different
 * branches come separately. Fails on a tree of top ranks, a drafted token
 * with q = 0, or a bug that is not the rule's (the target's commit slip). */
int tree_accept_law(const planted_rule *rule, const token_tree *t, const float *p, accept_site site,
                    tree_outcome_fn out, void *user, sp_error *err);

#endif
