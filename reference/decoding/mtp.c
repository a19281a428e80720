/* mtp.c — the MTP module as a proposer (see mtp.h). Two kinds of MTP step:
 *   real steps  (target hidden at t, committed token t+1) at position t,
 *               run when tokens are committed; their KV entries stay;
 *   chain steps (MTP hidden, drafted token) during a proposal; their KV
 *               entries are dropped at the next commit.
 * The last real step's logits give the first draft. */
#include "mtp.h"

#include <stdlib.h>
#include <string.h>

#include "footprint.h"

#define MTP_MAX_K 32

typedef struct {
    model *m;
    model_state ms;      /* the MTP layer's KV cache */
    state_snapshot real; /* ms after the last real step */
    int k, sample_drafts;
    sampler_params sampling;
    uint64_t seed;
    int have_first;         /* the last real step's outputs are valid */
    float *first_logits;    /* [V] logits of the last real step */
    float *first_hidden;    /* [D] its output hidden state */
    float *logits, *hidden; /* [V], [D] chain-step outputs */
} mtp_impl;

/* q for a draft: one-hot at the argmax, or the processed distribution. */
static int draft_token(mtp_impl *s, const float *logits, float *q, rng_site site) {
    const int V = s->m->cfg.vocab_size;
    if (!s->sample_drafts) {
        int best = sampler_argmax(logits, V);
        memset(q, 0, (size_t)V * sizeof(float));
        q[best] = 1.0f;
        return best;
    }
    sampler_probs(&s->sampling, logits, q, V);
    return sampler_sample(q, V, site);
}

static int mtp_propose(proposer *self, token_tree *tree, int root_position, int max_depth, uint64_t round,
                       sp_error *err) {
    mtp_impl *s = self->impl;
    if (!s->have_first) return 0; /* a one-token prompt: nothing to chain from yet */
    if (s->ms.pos != root_position)
        return sp_fail(err, "MTP state at position %d, proposal rooted at %d: out of step", s->ms.pos, root_position);
    const int D = s->m->cfg.hidden_size;
    int depth = s->k < max_depth ? s->k : max_depth, u = 0;
    memcpy(s->hidden, s->first_hidden, (size_t)D * sizeof(float));
    const float *logits = s->first_logits;
    for (int d = 1; d <= depth; d++) {
        if (d > 1) { /* chain: the MTP's own output hidden state and the token it drafted */
            model_mtp_forward(s->m, &s->ms, s->hidden, tree->token[u], s->logits, s->hidden);
            self->steps++;
            logits = s->logits;
        }
        rng_site site = {s->seed, RNG_DRAFT, accept_draw_index(round, root_position + d, 0)};
        int token = draft_token(s, logits, tree_q(tree, u), site);
        u = tree_add(tree, u, token);
        if (u < 0) return sp_fail(err, "MTP proposal: tree capacity %d exceeded", tree->cap);
    }
    return 0;
}

static void mtp_commit(proposer *self, const int *path, const float *hidden, int len, int next_token) {
    mtp_impl *s = self->impl;
    const int D = s->m->cfg.hidden_size;
    state_restore(&s->ms, &s->real); /* drop the chain steps */
    for (int i = 0; i < len; i++) {
        int following = i + 1 < len ? path[i + 1] : next_token;
        model_mtp_forward(s->m, &s->ms, hidden + (size_t)i * D, following, s->first_logits, s->first_hidden);
    }
    if (len > 0) {
        s->have_first = 1;
        self->steps++; /* the real steps of one commit form one batched MTP pass */
    }
    state_save(&s->ms, &s->real);
}

static void mtp_release(proposer *self) {
    mtp_impl *s = self->impl;
    state_free(&s->ms);
    snapshot_free(&s->real);
    free(s->first_logits);
    free(s->first_hidden);
    free(s->logits);
    free(s->hidden);
    free(s);
    self->impl = NULL;
}

int mtp_proposer_build(proposer *p, model *m, int k, int sample_drafts, const sampler_params *sp, uint64_t seed,
                       sp_error *err) {
    if (!m->w.has_mtp) return sp_fail(err, "%s has no MTP module (no mtp.* tensors): MTP needs one", m->path);
    if (k < 1 || k > MTP_MAX_K) return sp_fail(err, "k = %d is outside [1, %d]", k, MTP_MAX_K);
    const int V = m->cfg.vocab_size, D = m->cfg.hidden_size;
    mtp_impl *s = sp_xcalloc(1, sizeof *s, "MTP proposer");
    s->m = m;
    s->k = k;
    s->sample_drafts = sample_drafts;
    s->sampling = *sp;
    s->seed = seed;
    state_build_mtp(&s->ms, &m->cfg);
    snapshot_build(&s->real, &s->ms);
    state_save(&s->ms, &s->real);
    s->first_logits = sp_xcalloc((size_t)V, sizeof(float), "MTP logits");
    s->first_hidden = sp_xcalloc((size_t)D, sizeof(float), "MTP hidden");
    s->logits = sp_xcalloc((size_t)V, sizeof(float), "MTP chain logits");
    s->hidden = sp_xcalloc((size_t)D, sizeof(float), "MTP chain hidden");
    memset(p, 0, sizeof *p);
    p->name = "mtp";
    p->propose = mtp_propose;
    p->commit = mtp_commit;
    p->release = mtp_release;
    model_footprint fp;
    footprint_compute(&m->cfg, 1, m->storage_bytes, 2.0, &fp);
    p->bytes_per_step = fp.mtp_bytes_per_step;
    p->tree_capacity = k;
    p->kind = CHILDREN_IID;
    p->impl = s;
    return 0;
}
