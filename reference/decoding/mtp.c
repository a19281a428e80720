/* mtp.c — the MTP module as a proposer (see mtp.h). Two kinds of MTP step:
 *   real steps  (target hidden at t, committed token t+1) at position t,
 *               run when tokens are committed; their KV entries stay;
 *   chain steps (MTP hidden, drafted token) during a proposal; their KV
 *               entries are dropped at the next commit.
 * The last real step's logits give the first draft. */
#include "mtp.h"

#include <stdlib.h>
#include <string.h>

#define MARK_REAL 0 /* the module after the last real step */

typedef struct {
    stepper *mtp; /* not owned */
    int k, sample_drafts;
    int have_first;         /* the last real step's outputs are valid */
    float *first_logits;    /* [V] logits of the last real step */
    float *first_hidden;    /* [D] its output hidden state */
    float *logits, *hidden; /* [V], [D] chain-step outputs */
    int *following;         /* [following_cap] the token each real step pairs with its hidden state */
    int following_cap;
} mtp_impl;

/* q for a draft: one-hot at the argmax, or the processed distribution. */
static int draft_token(const mtp_impl *s, const float *logits, float *q, const propose_call *call, rng_site site) {
    const int V = s->mtp->V;
    if (!s->sample_drafts) {
        int best = sampler_argmax(logits, V);
        memset(q, 0, (size_t)V * sizeof(float));
        q[best] = 1.0f;
        return best;
    }
    sampler_probs(call->sampling, logits, q, V);
    return sampler_sample(q, V, site);
}

static int mtp_propose(proposer *self, token_tree *tree, const propose_call *call, sp_error *err) {
    mtp_impl *s = self->impl;
    if (!s->have_first) return 0; /* a one-token prompt: nothing to chain from yet */
    const int at = s->mtp->position(s->mtp);
    if (at != call->root_position)
        return sp_fail(err, "MTP state at position %d, proposal rooted at %d: out of step", at, call->root_position);
    const int D = s->mtp->D;
    int depth = s->k < call->max_depth ? s->k : call->max_depth, u = 0;
    memcpy(s->hidden, s->first_hidden, (size_t)D * sizeof(float));
    const float *logits = s->first_logits;
    for (int d = 1; d <= depth; d++) {
        if (d > 1) { /* chain: the MTP's own output hidden state and the token it drafted */
            if (s->mtp->step(s->mtp, &tree->token[u], s->hidden, 1, s->logits, s->hidden, err)) return -1;
            self->steps++;
            logits = s->logits;
        }
        rng_site site = {call->seed, RNG_DRAFT, accept_draw_index(call->round, call->root_position + d, 0)};
        int token = draft_token(s, logits, tree_q(tree, u), call, site);
        u = tree_add(tree, u, token);
        if (u < 0) return sp_fail(err, "MTP proposal: tree capacity %d exceeded", tree->cap);
    }
    return 0;
}

static int mtp_commit(proposer *self, const int *path, const float *hidden, int len, int next_token, sp_error *err) {
    mtp_impl *s = self->impl;
    s->mtp->rewind(s->mtp, MARK_REAL); /* drop the chain steps */
    if (len < 1) return 0;
    if (len > s->following_cap) {
        s->following_cap = len + 16;
        s->following = sp_xrealloc(s->following, (size_t)s->following_cap, sizeof(int), "MTP real-step tokens");
    }
    for (int i = 0; i < len; i++) s->following[i] = i + 1 < len ? path[i + 1] : next_token;
    /* the real steps of one commit form one batched MTP pass */
    if (s->mtp->step(s->mtp, s->following, hidden, len, s->first_logits, s->first_hidden, err)) return -1;
    s->have_first = 1;
    self->steps++;
    s->mtp->mark(s->mtp, MARK_REAL);
    return 0;
}

static void mtp_release(proposer *self) {
    mtp_impl *s = self->impl;
    free(s->first_logits);
    free(s->first_hidden);
    free(s->logits);
    free(s->hidden);
    free(s->following);
    free(s);
    self->impl = NULL;
}

int mtp_proposer_build(proposer *p, stepper *mtp, int k, int sample_drafts, sp_error *err) {
    if (!mtp->reads_hidden)
        return sp_fail(err, "%s: a %s cannot serve as an MTP module (it reads no hidden state)", mtp->path, mtp->name);
    if (k < 1 || k > MTP_MAX_K) return sp_fail(err, "k = %d is outside [1, %d]", k, MTP_MAX_K);
    const int V = mtp->V, D = mtp->D;
    mtp_impl *s = sp_xcalloc(1, sizeof *s, "MTP proposer");
    s->mtp = mtp;
    s->k = k;
    s->sample_drafts = sample_drafts;
    s->first_logits = sp_xcalloc((size_t)V, sizeof(float), "MTP logits");
    s->first_hidden = sp_xcalloc((size_t)D, sizeof(float), "MTP hidden");
    s->logits = sp_xcalloc((size_t)V, sizeof(float), "MTP chain logits");
    s->hidden = sp_xcalloc((size_t)D, sizeof(float), "MTP chain hidden");
    mtp->reset(mtp);
    mtp->mark(mtp, MARK_REAL);
    memset(p, 0, sizeof *p);
    p->name = "mtp";
    p->depth = k;
    p->needs_hidden = 1;
    p->propose = mtp_propose;
    p->commit = mtp_commit;
    p->release = mtp_release;
    p->bytes_per_step = mtp->bytes_per_step;
    p->tree_capacity = k;
    p->kind = CHILDREN_IID;
    p->impl = s;
    return 0;
}
