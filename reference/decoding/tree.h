/* tree.h — the token tree a proposer hands to the verifier; a chain is a tree with one child per node. Plain
 * arrays and no model types, so the reference and the engine share it. */
#ifndef SPECULA_TREE_H
#define SPECULA_TREE_H

#include <stddef.h>

#include "error.h"

/* How the children of a node were chosen, which decides the exact rule. */
typedef enum {
    CHILDREN_IID = 0,        /* drawn independently from q (a chain is this with one child) */
    CHILDREN_NO_REPLACEMENT, /* drawn from q without replacement */
    CHILDREN_TOP_RANKS       /* the top-ranked tokens of q: greedy and typical rules only */
} children_kind;

/* Node 0 is the root: the last committed token, which the target has not run yet. Every other node is a
 * proposed token. q of node i is the distribution its children were drawn from (one-hot for argmax drafts). */
typedef struct {
    int n, cap;  /* nodes in use, capacity */
    int V;       /* vocabulary: the width of a q row */
    int *token;  /* [cap] */
    int *parent; /* [cap] −1 for the root; parent[i] < i, so index order is topological */
    int *depth;  /* [cap] 0 for the root */
    float *q;    /* [cap, V] q row of node i: the distribution its children came from */
    children_kind kind;
} token_tree;

void tree_build(token_tree *t, int V, int cap);
void tree_free(token_tree *t);
/* Empties the tree and sets the root token. */
void tree_reset(token_tree *t, int root_token, children_kind kind);
/* Adds a child of `parent` and returns its index, or −1 when full. */
int tree_add(token_tree *t, int parent, int token);
float *tree_q(token_tree *t, int node);
const float *tree_q_const(const token_tree *t, int node);
/* The children of node u in index order; returns their number. */
int tree_children(const token_tree *t, int u, int *out, int max);
int tree_max_depth(const token_tree *t);
/* 1 when a is b or an ancestor of b. */
int tree_is_ancestor(const token_tree *t, int a, int b);
/* mask[i·n + j] = 1 when node i may attend to node j (j is i or an ancestor
 * of i): the tree attention mask of a verification pass. */
void tree_attention_mask(const token_tree *t, unsigned char *mask);
/* pos[i] = base + depth[i]: the position of each node in the sequence. */
void tree_positions(const token_tree *t, int base, int *pos);

/* A static branching shape for tree drafting: every node at depth d − 1
 * gets branch[d − 1] children, so "2,2,1,1" is 2 + 4 + 4 + 4 = 14 nodes
 * under the root. A chain of k is k ones. */
#define TREE_SHAPE_MAX_DEPTH 32  /* as deep as the longest chain (SPEC_MAX_K) */
#define TREE_SHAPE_MAX_BRANCH 16 /* children per node */
#define TREE_SHAPE_MAX_NODES 255 /* nodes under the root: a sibling's rng slot is 8 bits */

typedef struct {
    int depth;                        /* 0: no shape (a chain) */
    int branch[TREE_SHAPE_MAX_DEPTH]; /* [depth] children per node at each depth (dynamic: at most) */
    int budget;                       /* 0: static, every node gets all its children; > 0: a dynamic
                                       * tree of this many nodes, grown best first (tree_grow.h) */
    int raw_confidence;               /* dynamic: 1: the draft's confidences as they are (EAGLE-2's
                                       * rule); 0: calibrated by earlier rounds' verdicts */
} tree_shape;

/* "2,2,1,1" → shape; a clear message (naming `flag`) on anything else. */
int tree_shape_parse(const char *flag, const char *text, tree_shape *out, sp_error *err);
/* Nodes under the root (a dynamic tree's budget). */
int tree_shape_nodes(const tree_shape *s);
/* Nodes under the root when every node gets all its branch[d] children
 * (saturates at TREE_SHAPE_MAX_NODES + 1: a dynamic tree's caps may be wide). */
int tree_shape_full_nodes(const tree_shape *s);
/* A dynamic tree of `budget` nodes to depth `depth`, any node taking up to
 * TREE_SHAPE_MAX_BRANCH children. */
tree_shape tree_shape_dynamic(int budget, int depth);
/* "2,2,1,1"; a dynamic tree: "dynamic depth 4" (its caps appended when
 * they are not the widest: "dynamic depth 2 under 3,1"; "dynamic raw depth
 * 4" with raw confidences). */
void tree_shape_format(const tree_shape *s, char *buf, size_t size);
/* A clear message (starting with `what`, e.g. "a draft tree") when the
 * shape has more than TREE_SHAPE_MAX_NODES nodes, or a dynamic tree's budget
 * is below 1 or above what its caps allow. */
int tree_shape_check_budget(const tree_shape *s, const char *what, sp_error *err);
/* The chain of k: k ones. */
tree_shape tree_shape_chain(int k);

#endif
