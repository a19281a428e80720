/* speculative.c — the draft model as a proposer. The draft is a stepper
 * (stepper.h): during a proposal it sets a mark after every token it
 * consumes, so that after the verdict it can return to the longest prefix
 * of what it consumed that was committed, and catch up on the rest. */
#include "speculative.h"

#include <stdlib.h>
#include <string.h>

/* Marks: MARK_BASE before the proposal, MARK_AFTER(i) after consumed[0..i]. */
#define MARK_BASE 0
#define MARK_AFTER(i) (1 + (i))

typedef struct {
    stepper *draft; /* not owned */
    int k;
    int consumed[SPEC_MAX_K + 1]; /* tokens the last proposal fed into the draft */
    int n_consumed;
    int *backlog; /* committed tokens the draft has not consumed yet */
    int n_backlog, backlog_cap;
    float *logits; /* [V] */
} spec_impl;

static int feed_backlog(proposer *self, sp_error *err) {
    spec_impl *s = self->impl;
    if (!s->n_backlog) return 0;
    int rc = s->draft->step(s->draft, s->backlog, NULL, s->n_backlog, NULL, NULL, err);
    s->n_backlog = 0;
    self->steps++; /* one batched catch-up pass */
    return rc;
}

static int spec_propose(proposer *self, token_tree *tree, const propose_call *call, sp_error *err) {
    spec_impl *s = self->impl;
    const int V = s->draft->V;
    if (feed_backlog(self, err)) return -1;
    s->draft->mark(s->draft, MARK_BASE);
    s->n_consumed = 0;
    int depth = s->k < call->max_depth ? s->k : call->max_depth, u = 0, token = tree->token[0];
    for (int d = 1; d <= depth; d++) {
        if (s->draft->step(s->draft, &token, NULL, 1, s->logits, NULL, err)) return -1;
        self->steps++;
        s->consumed[s->n_consumed] = token;
        s->draft->mark(s->draft, MARK_AFTER(s->n_consumed++));
        float *q = tree_q(tree, u);
        sampler_probs(call->sampling, s->logits, q, V);
        rng_site site = {call->seed, RNG_DRAFT, accept_draw_index(call->round, call->root_position + d, 0)};
        token = sampler_sample(q, V, site);
        u = tree_add(tree, u, token);
        if (u < 0) return sp_fail(err, "draft proposal: tree capacity %d exceeded", tree->cap);
    }
    return 0;
}

static int spec_commit(proposer *self, const int *path, const float *hidden, int len, int next_token, sp_error *err) {
    spec_impl *s = self->impl;
    (void)hidden, (void)next_token, (void)err;
    int m = 0; /* the longest prefix of what the draft consumed that was committed */
    while (m < s->n_consumed && m < len && s->consumed[m] == path[m]) m++;
    if (m > 0)
        s->draft->rewind(s->draft, MARK_AFTER(m - 1));
    else if (s->n_consumed > 0)
        s->draft->rewind(s->draft, MARK_BASE);
    s->n_consumed = 0;
    if (s->n_backlog + len - m > s->backlog_cap) {
        s->backlog_cap = s->n_backlog + len - m + 16;
        s->backlog = sp_xrealloc(s->backlog, (size_t)s->backlog_cap, sizeof(int), "draft backlog");
    }
    for (int i = m; i < len; i++) s->backlog[s->n_backlog++] = path[i];
    return 0;
}

static void spec_release(proposer *self) {
    spec_impl *s = self->impl;
    free(s->backlog);
    free(s->logits);
    free(s);
    self->impl = NULL;
}

int spec_proposer_build(proposer *p, stepper *draft, const decode_target *t, int k, sp_error *err) {
    if (draft->V != t->cfg->vocab_size)
        return sp_fail(err, "draft %s has a vocabulary of %d tokens, the target %s has %d: they must share it",
                       draft->path, draft->V, t->path, t->cfg->vocab_size);
    if (draft->reads_hidden) return sp_fail(err, "a %s cannot serve as a draft model", draft->name);
    if (k < 1 || k > SPEC_MAX_K) return sp_fail(err, "k = %d is outside [1, %d]", k, SPEC_MAX_K);
    spec_impl *s = sp_xcalloc(1, sizeof *s, "draft proposer");
    s->draft = draft;
    s->k = k;
    s->logits = sp_xcalloc((size_t)draft->V, sizeof(float), "draft logits");
    draft->reset(draft);
    memset(p, 0, sizeof *p);
    p->name = "spec";
    p->depth = k;
    p->propose = spec_propose;
    p->commit = spec_commit;
    p->release = spec_release;
    p->bytes_per_step = draft->bytes_per_step;
    p->tree_capacity = k;
    p->kind = CHILDREN_IID;
    p->impl = s;
    return 0;
}
