/* tree_grow.h — dynamic draft trees (EAGLE-2's idea, kept exact): under a node budget the tree grows one child
 * at a time. Shared by the draft-model and MTP proposers, which supply the step that gives a node its q. */
#ifndef SPECULA_TREE_GROW_H
#define SPECULA_TREE_GROW_H

#include "proposer.h"
#include "tree.h"

#define TREE_GROW_MAX_NODES (TREE_SHAPE_MAX_NODES + 1) /* the root and the budget */

#define TREE_GROW_BINS 16 /* bins of confidence for the calibration */

/* The verdicts of earlier rounds, per bin of the draft's confidence and
 * apart for first children and later ones (a later child is tried only
 * after its elder siblings were rejected, which says the draft was off
 * there): the children the rule tried and those it accepted. Kept across
 * rounds. */
typedef struct {
    long tried[2][TREE_GROW_BINS], accepted[2][TREE_GROW_BINS];
} tree_calibration;

typedef struct {
    tree_shape caps;                              /* depth and children per node at most; budget; raw or calibrated */
    children_kind kind;                           /* how children are chosen */
    int n_children[TREE_GROW_MAX_NODES];          /* children drawn so far */
    float path[TREE_GROW_MAX_NODES];              /* chance the rule reaches the node (root: 1) */
    float rest[TREE_GROW_MAX_NODES];              /* chance that no child so far carries the path */
    unsigned char stepped[TREE_GROW_MAX_NODES];   /* 1: the node's q (and ranks) are known */
    unsigned char exhausted[TREE_GROW_MAX_NODES]; /* 1: nothing left to draw (without replacement) */
    int at_depth[TREE_SHAPE_MAX_DEPTH + 1];       /* nodes added at each depth: the next one's rng slot */
    int ranked[TREE_GROW_MAX_NODES][TREE_SHAPE_MAX_BRANCH];        /* top ranks of a stepped node */
    float ranked_conf[TREE_GROW_MAX_NODES][TREE_SHAPE_MAX_BRANCH]; /* their softmax at temperature 1 */
    /* what the last growth drew, for the verdict (tree_grow_learn) */
    int n;                                    /* nodes (0: nothing to learn from) */
    int parent[TREE_GROW_MAX_NODES];          /* [n] */
    int token[TREE_GROW_MAX_NODES];           /* [n] */
    unsigned char bin[TREE_GROW_MAX_NODES];   /* [n] bin of the node's raw confidence */
    unsigned char later[TREE_GROW_MAX_NODES]; /* [n] 1: not its parent's first child */
    tree_calibration calibration;             /* across rounds: not reset by tree_grow_start */
} tree_growth;

/* The bin of a confidence in [0, 1]. */
int tree_grow_bin(float confidence);
/* The confidence the priority uses for a child of the given confidence,
 * first among its siblings or not: raw, or calibrated by the verdicts so far. */
float tree_grow_calibrated(const tree_growth *g, float confidence, int later);

/* The committed path (root first, len tokens) of the round the last growth
 * proposed: every child the rule tried on it — the children of each node on
 * the path up to the accepted one, all children of its last node — counts
 * in its bin, accepted or not. A no-op when nothing was grown since the last
 * call. */
void tree_grow_learn(tree_growth *g, const int *path, int len);

/* A fresh growth for one proposal; caps->budget > 0. The calibration stays. */
void tree_grow_start(tree_growth *g, const tree_shape *caps, children_kind kind);

/* The node to give the next child to: the one whose next child has the
 * highest priority, ties to the lower node index; −1 when the budget is spent
 * or no node may take one. depth: the deepest a node may be (the caps' depth
 * or less, the round's token budget).
 *
 * The draft's confidence c in a child x of node u is q_u(x) when children
 * are drawn from q, and softmax(logits_u)(x) (temperature 1) when they are
 * the top ranks (at temperature 0 q is one-hot and says nothing).
 *   raw (EAGLE-2's rule): path(child) = path(u) · c; the priority of u's
 *     next child is path(u) · (1 − c of u's distinct children so far), the
 *     draft's own chance that the target's path leaves u by a token not yet
 *     offered there.
 *   calibrated (the default): c is replaced by the acceptance rate that the
 *     verdicts of the earlier rounds measured for children of about that
 *     confidence (tree_calibration; c itself as a prior worth two
 *     children); the chance that u's children so far all fail is the
 *     product of (1 − calibrated c); the priority is the chance of reaching
 *     u's next child times the acceptance measured for first, or later,
 *     children: the tokens that child is expected to add.
 * Either reads only draws already made and earlier rounds, never the child
 * it decides on, never p and never this round's verifier randomness:
 * docs/methods.md ("Dynamic trees") says why that keeps the multi-round
 * rule exact. */
int tree_grow_pick(const tree_growth *g, const token_tree *t, int depth);

/* Node u has been stepped: its q row is in the tree; logits [V] are the
 * draft's at u (read for the top ranks only). scratch [V]. */
void tree_grow_stepped(tree_growth *g, const token_tree *t, int u, const float *logits, float *scratch);

/* Draws u's next child (top rank, or from q i.i.d. or without replacement
 * at its own rng site) and adds it to the tree: its index, −1 when nothing
 * is left to draw at u (u is then exhausted), −2 when the tree is full.
 * pool [V]: scratch for draws without replacement. */
int tree_grow_child(tree_growth *g, token_tree *t, int u, const propose_call *call, float *pool);

/* The path of node u, root first: anc[0..depth(u)] (anc[depth(u)] = u). */
void tree_grow_path(const token_tree *t, int u, int *anc);

/* Which path a stepper holds, and after which depths it has marks: a
 * dynamic tree is not walked depth first, so reaching the next node may mean
 * returning to an ancestor and stepping the rest of its path again. */
typedef struct {
    int node[TREE_SHAPE_MAX_DEPTH + 1];             /* the node held at each depth */
    unsigned char marked[TREE_SHAPE_MAX_DEPTH + 1]; /* a mark after that depth's node */
    int n;                                          /* depths held */
} held_path;

/* To step node u (path anc, from tree_grow_path), the stepper resumes after
 * the deepest marked node it holds on u's path, or from its base (returns
 * `first`, the first depth the stepper steps: 0 for a draft model, 1 for the
 * MTP module). Returns the first depth to step; *rewind: 1 when the stepper
 * holds more than that and must rewind first. */
int held_path_resume(const held_path *h, const int *anc, int depth_u, int first, int *rewind);

/* The stepper now holds anc[0..depth_u], having stepped anc[from..depth_u]
 * in one call and marked only after depth_u. */
void held_path_stepped(held_path *h, const int *anc, int from, int depth_u);

#endif
