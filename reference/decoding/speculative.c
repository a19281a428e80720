/* speculative.c — the draft model as a proposer. The draft keeps its own
 * state; during a proposal it saves a snapshot after every token it
 * consumes, so that after the verdict it can return to the longest prefix
 * of what it consumed that was committed, and catch up on the rest. */
#include "speculative.h"

#include <stdlib.h>
#include <string.h>

#define SPEC_MAX_K 32

typedef struct {
    model *draft;
    model_state state;
    int k;
    sampler_params sampling;
    uint64_t seed;
    int consumed[SPEC_MAX_K + 1]; /* tokens the last proposal fed into the draft */
    int n_consumed;
    state_snapshot base;                  /* the draft before the last proposal */
    state_snapshot after[SPEC_MAX_K + 1]; /* after[i]: after consumed[0..i] */
    int *backlog;                         /* committed tokens the draft has not consumed yet */
    int n_backlog, backlog_cap;
    float *logits; /* [V] */
} spec_impl;

static void feed_backlog(proposer *self) {
    spec_impl *s = self->impl;
    if (!s->n_backlog) return;
    for (int i = 0; i < s->n_backlog; i++) model_forward(s->draft, &s->state, s->backlog[i], NULL, NULL);
    s->n_backlog = 0;
    self->steps++; /* one batched catch-up pass in an engine */
}

static int spec_propose(proposer *self, token_tree *tree, int root_position, int max_depth, uint64_t round,
                        sp_error *err) {
    spec_impl *s = self->impl;
    const int V = s->draft->cfg.vocab_size;
    feed_backlog(self);
    state_save(&s->state, &s->base);
    s->n_consumed = 0;
    int depth = s->k < max_depth ? s->k : max_depth, u = 0, token = tree->token[0];
    for (int d = 1; d <= depth; d++) {
        model_forward(s->draft, &s->state, token, s->logits, NULL);
        self->steps++;
        s->consumed[s->n_consumed] = token;
        state_save(&s->state, &s->after[s->n_consumed++]);
        float *q = tree_q(tree, u);
        sampler_probs(&s->sampling, s->logits, q, V);
        rng_site site = {s->seed, RNG_DRAFT, accept_draw_index(round, root_position + d, 0)};
        token = sampler_sample(q, V, site);
        u = tree_add(tree, u, token);
        if (u < 0) return sp_fail(err, "draft proposal: tree capacity %d exceeded", tree->cap);
    }
    return 0;
}

static void spec_commit(proposer *self, const int *path, const float *hidden, int len, int next_token) {
    spec_impl *s = self->impl;
    (void)hidden, (void)next_token;
    int m = 0; /* the longest prefix of what the draft consumed that was committed */
    while (m < s->n_consumed && m < len && s->consumed[m] == path[m]) m++;
    if (m > 0)
        state_restore(&s->state, &s->after[m - 1]);
    else if (s->n_consumed > 0)
        state_restore(&s->state, &s->base);
    s->n_consumed = 0;
    if (s->n_backlog + len - m > s->backlog_cap) {
        s->backlog_cap = s->n_backlog + len - m + 16;
        s->backlog = sp_xrealloc(s->backlog, (size_t)s->backlog_cap, sizeof(int), "draft backlog");
    }
    for (int i = m; i < len; i++) s->backlog[s->n_backlog++] = path[i];
}

static void spec_release(proposer *self) {
    spec_impl *s = self->impl;
    state_free(&s->state);
    snapshot_free(&s->base);
    for (int i = 0; i <= SPEC_MAX_K; i++) snapshot_free(&s->after[i]);
    free(s->backlog);
    free(s->logits);
    free(s);
    self->impl = NULL;
}

int spec_proposer_build(proposer *p, model *draft, const model *target, int k, const sampler_params *sp, uint64_t seed,
                        sp_error *err) {
    if (draft->cfg.vocab_size != target->cfg.vocab_size)
        return sp_fail(err, "draft %s has a vocabulary of %d tokens, the target %s has %d: they must share it",
                       draft->path, draft->cfg.vocab_size, target->path, target->cfg.vocab_size);
    if (k < 1 || k > SPEC_MAX_K) return sp_fail(err, "k = %d is outside [1, %d]", k, SPEC_MAX_K);
    spec_impl *s = sp_xcalloc(1, sizeof *s, "draft proposer");
    s->draft = draft;
    s->k = k;
    s->sampling = *sp;
    s->seed = seed;
    state_build(&s->state, &draft->cfg, NULL);
    snapshot_build(&s->base, &s->state);
    for (int i = 0; i <= SPEC_MAX_K; i++) snapshot_build(&s->after[i], &s->state);
    s->logits = sp_xcalloc((size_t)draft->cfg.vocab_size, sizeof(float), "draft logits");
    memset(p, 0, sizeof *p);
    p->name = "spec";
    p->propose = spec_propose;
    p->commit = spec_commit;
    p->release = spec_release;
    p->bytes_per_step = draft->weight_bytes_per_step;
    p->tree_capacity = k;
    p->kind = CHILDREN_IID;
    p->impl = s;
    return 0;
}
