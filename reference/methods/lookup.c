/* lookup.c — the prompt-lookup proposer (lookup.h). It keeps the sequence the target has consumed and looks up
 * that sequence plus the pending root. No model and no state to roll back: a commit only appends. */
#include "lookup.h"

#include <stdlib.h>
#include <string.h>

/* 1 when ctx[a − m + 1 .. a] equals ctx[b − m + 1 .. b]. */
static int same_ngram(const int *ctx, int a, int b, int m) {
    for (int i = 0; i < m; i++)
        if (ctx[a - i] != ctx[b - i]) return 0;
    return 1;
}

int lookup_find(const int *ctx, int n, int max_ngram, int k, int *drafts) {
    for (int m = max_ngram < n - 1 ? max_ngram : n - 1; m >= 1; m--)
        for (int j = n - 2; j >= m - 1; j--) { /* the most recent occurrence first */
            if (!same_ngram(ctx, j, n - 1, m)) continue;
            for (int i = 0; i < k; i++) {
                const int src = j + 1 + i; /* < n + i: the copy reads only what is already there */
                drafts[i] = src < n ? ctx[src] : drafts[src - n];
            }
            return k;
        }
    return 0;
}

typedef struct {
    int V, k, max_ngram;
    int *seq; /* [cap] the consumed sequence, then room for the root */
    int n, cap;
} lookup_impl;

static int lookup_propose(proposer *self, token_tree *tree, const propose_call *call, sp_error *err) {
    lookup_impl *s = self->impl;
    s->seq[s->n] = tree->token[0]; /* the context: the consumed sequence and the pending root */
    int drafts[LOOKUP_MAX_K];
    const int found = lookup_find(s->seq, s->n + 1, s->max_ngram, s->k, drafts);
    const int depth = found < call->max_depth ? found : call->max_depth;
    for (int d = 0, u = 0; d < depth; d++) {
        float *q = tree_q(tree, u); /* a point mass: the draft is not drawn, it is looked up */
        memset(q, 0, (size_t)s->V * sizeof(float));
        q[drafts[d]] = 1.0f;
        if ((u = tree_add(tree, u, drafts[d])) < 0)
            return sp_fail(err, "lookup proposal: tree capacity %d exceeded", tree->cap);
    }
    return 0;
}

static int lookup_commit(proposer *self, const int *path, const float *hidden, int len, int next_token, sp_error *err) {
    lookup_impl *s = self->impl;
    (void)hidden, (void)next_token, (void)err;
    if (s->n + len + 1 > s->cap) { /* + 1: the root's slot at propose time */
        s->cap = 2 * (s->n + len + 1);
        s->seq = sp_xrealloc(s->seq, (size_t)s->cap, sizeof(int), "lookup context");
    }
    memcpy(s->seq + s->n, path, (size_t)len * sizeof(int));
    s->n += len;
    return 0;
}

static void lookup_release(proposer *self) {
    lookup_impl *s = self->impl;
    free(s->seq);
    free(s);
    self->impl = NULL;
}

int lookup_proposer_build(proposer *p, int V, int k, int max_ngram, sp_error *err) {
    if (k < 1 || k > LOOKUP_MAX_K) return sp_fail(err, "k = %d is outside [1, %d]", k, LOOKUP_MAX_K);
    if (max_ngram < 1 || max_ngram > LOOKUP_MAX_NGRAM)
        return sp_fail(err, "--ngram %d is outside [1, %d]", max_ngram, LOOKUP_MAX_NGRAM);
    lookup_impl *s = sp_xcalloc(1, sizeof *s, "lookup proposer");
    s->V = V;
    s->k = k;
    s->max_ngram = max_ngram;
    s->cap = 64;
    s->seq = sp_xcalloc((size_t)s->cap, sizeof(int), "lookup context");
    memset(p, 0, sizeof *p);
    p->name = "lookup";
    p->depth = k;
    p->propose = lookup_propose;
    p->commit = lookup_commit;
    p->release = lookup_release;
    p->bytes_per_step = 0; /* no model: a lookup reads no weights */
    p->tree_capacity = k;
    p->kind = CHILDREN_IID; /* one child, "drawn" from its one-hot q */
    p->impl = s;
    return 0;
}
