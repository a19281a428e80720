/* tree_law.h — the exact law of one verification of a token tree, by the exact rule or a planted bug (planted.h):
 * the probability of each accepted path and of the token after it. spec_law.h does whole runs of chains; this is
 * one round of a tree, for callers that compose rounds themselves (tests/stat/test_leviathan.c). */
#ifndef SPECULA_TREE_LAW_H
#define SPECULA_TREE_LAW_H

#include "planted.h"

/* One outcome: path[0..n_accepted] (path[0] = 0, the root) accepted, then
 * next_token, with probability prob. */
typedef void (*tree_outcome_fn)(void *user, const int *path, int n_accepted, int next_token, double prob);

/* Calls out once per (path, next token) branch of the rule on tree t with
 * p[t->n, V] (row i: the target after node i) at `site` (for the late
 * bug's position). Outcomes of the same (path, token) reached by different
 * branches come separately. Fails on a drafted token with q = 0, a bug that
 * is not the rule's (the target's commit slip), or a tree of top ranks: the
 * greedy rule walks those, and it is deterministic given p. */
int tree_accept_law(const planted_rule *rule, const token_tree *t, const float *p, accept_site site,
                    tree_outcome_fn out, void *user, sp_error *err);

#endif
