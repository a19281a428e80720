/* engine_mtp_round.c — an MTP chain round on the target's side (target.h's mtp_verify_accept), on a backend that
 * drafts where the logits are (backend.h: draft). Every step is launched in order; only the final download of the
 * result and the drafts waits, so the round waits on the device once. */
#include <string.h>

#include "accept.h"
#include "engine_mtp.h"

/* The result and the drafts after it, as accept_drawn downloads them. */
#define RECORD(k) (3 + (k))

int engine_mtp_verify_accept(decode_target *t, const target_job *job, const mtp_chain_call *call,
                             const sampler_params *sp, accept_site site, accept_result *r, sp_error *err) {
    engine *e = t->impl;
    engine_backend *be = &e->be;
    mtp_stepper *m = engine_mtp_of(call->mtp, e);
    if (!m || !m->logits) return 1; /* another engine's module, or a backend that drafts on the host */
    eseq *s = engine_seq(e, job->seq, err);
    if (!s) return -1;
    const int k = call->k, n = k + 1, V = e->cfg.vocab_size, D = e->cfg.hidden_size;
    if (k < 0 || n > be->max_tree_nodes)
        return sp_fail(err, "%s engine: an MTP chain of %d drafts (at most %d)", be->name, k, be->max_tree_nodes - 1);
    if (call->n_real < 0 || call->n_real > m->target_rows)
        return sp_fail(err, "%s engine: %d MTP real steps, but the last round kept %d hidden states", be->name,
                       call->n_real, m->target_rows);
    for (int i = 0; i < call->n_real; i++)
        if (call->real_tokens[i] < 0 || call->real_tokens[i] >= V)
            return sp_fail(err, "MTP module step: token %d is outside the vocabulary [0, %d)", call->real_tokens[i], V);
    int parent[ENGINE_MAX_TREE_NODES], depth[ENGINE_MAX_TREE_NODES];
    for (int i = 0; i < n; i++) parent[i] = i - 1, depth[i] = i;
    if (engine_seq_begin_tree(e, s, parent, depth, n, err)) return -1;
    engine_act_reserve_tree(e, n);
    be->upload(be, e->act.tree_tokens, &job->tree->token[0], sizeof(int)); /* the root */

    /* the real steps of the last commit: its tokens, the target's hidden states of the chain's first rows */
    for (int done = 0; done < call->n_real; done += ENGINE_PREFILL_CHUNK) {
        const int c = call->n_real - done < ENGINE_PREFILL_CHUNK ? call->n_real - done : ENGINE_PREFILL_CHUNK;
        engine_mtp_launch(m, call->real_tokens + done, NULL, m->target_hidden + (size_t)done * D, 1, c, NULL, NULL);
    }
    if (call->n_real) call->mtp->mark(call->mtp, call->real_mark);

    /* draft d from the last step's logits (d = 1: the real steps'), at the proposer's rng sites (mtp.c,
     * draw_child), then a chain step on it unless it is the last */
    sampler_params dsp = *sp;
    if (!call->sample_drafts) dsp.temperature = 0.0f; /* argmax drafts: q one-hot at the argmax, as mtp.c's */
    for (int d = 1; d <= k; d++) {
        if (d > 1) engine_mtp_launch(m, NULL, e->act.tree_tokens + d - 1, m->hidden, 1, 1, NULL, NULL);
        be->draft(be, e->act.tree_tokens + d, m->record + RECORD(d - 1), e->act.tree_q + (size_t)(d - 1) * V, m->logits,
                  V, &dsp, call->seed, accept_draw_index(call->round, call->root_position + d, 0));
    }

    /* the verify pass over the chain; its hidden states stay for the next round's real steps */
    if (engine_forward_drawn(e, s, e->act.tree_tokens, s->parent, s->depth, n, 1, err)) return -1;
    be->copy(be, m->target_hidden, e->act.xn, (size_t)n * D * sizeof(float));
    m->target_rows = n;
    int rec[RECORD(ENGINE_MAX_TREE_NODES)];
    be->accept_drawn(be, rec, m->record, RECORD(k), e->act.logits, e->act.tree_q, e->act.tree_tokens, n, V, sp,
                     site.seed, site.round, site.base_position);
    if (be->status(be, err)) return -1;
    for (int d = 0; d < k; d++)
        if (rec[RECORD(d)] < 0)
            return sp_fail(err, "MTP draft %d: its distribution is zero everywhere (nothing to draw)", d + 1);
    if (rec[0] < 0) /* accept_exact's message, for the node the walk stopped at */
        return sp_fail(err, "node %d: drafted token %d has proposal probability 0", rec[1], rec[RECORD(rec[1] - 1)]);
    memcpy(call->drafts, rec + RECORD(0), (size_t)k * sizeof(int));
    r->n_accepted = rec[0];
    for (int i = 0; i <= r->n_accepted; i++) r->path[i] = i; /* a chain's path: its first nodes */
    r->next_token = rec[1];
    r->bonus = rec[2];
    return 0;
}
