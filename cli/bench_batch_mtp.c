/* bench_batch_mtp.c — B sequences decoded together with MTP speculation
 * on one engine, for `specula bench --batch`: every sequence has its own
 * MTP stepper and proposer (the factory's, method.h), every round each one
 * proposes, the target verifies all B trees — in one pass, or one pass a
 * sequence — and each sequence accepts with the run's own rule
 * (accept_exact, or accept_greedy at temperature 0: accept.h), commits and
 * realigns its proposer, as decode_run does for one sequence. Assumes the
 * engine's checkpoint has an MTP module. */
#include <stdlib.h>
#include <string.h>

#include "bench_batch.h"

/* One sequence of the run: its proposer and what a round reads and writes. */
typedef struct {
    stepper mtp;
    method_built m;
    int have_mtp, have_method;
    int seq, pending, position;
    token_tree tree;
    float *p, *hidden, *scratch; /* [cap, V], [cap, D], [2V] */
    int *path_tokens;            /* [cap] */
    float *path_hidden;          /* [cap, D] */
} mtp_seq;

typedef struct {
    engine *e;
    decode_target *t;
    int B;
    mtp_seq q[ENGINE_MAX_BATCH];
    target_job jobs[ENGINE_MAX_BATCH];
} mtp_run;

static void seq_close(mtp_run *r, mtp_seq *q) {
    if (q->seq >= 0) r->t->seq_close(r->t, q->seq);
    if (q->have_method) method_release(&q->m);
    if (q->have_mtp) q->mtp.release(&q->mtp);
    tree_free(&q->tree);
    free(q->p), free(q->hidden), free(q->scratch), free(q->path_tokens), free(q->path_hidden);
}

/* Sequence j: its stepper, proposer and buffers, and its prompt consumed (all but the last token, which is
 * pending), as decode_run's prefill. */
static int seq_open(mtp_run *r, mtp_seq *q, const method_spec *spec, const int *prompt, int n, sp_error *err) {
    decode_target *t = r->t;
    const int V = t->cfg->vocab_size, D = t->cfg->hidden_size;
    if (engine_mtp_stepper_build(&q->mtp, r->e, err)) return -1;
    q->have_mtp = 1;
    const method_parts parts = {t, NULL, &q->mtp, NULL};
    if (method_build(&q->m, spec, &parts, err)) return -1;
    q->have_method = 1;
    const proposer *prop = q->m.proposer;
    const int cap = prop->tree_capacity + 1;
    tree_build(&q->tree, V, cap);
    q->p = sp_xcalloc((size_t)cap * V, sizeof(float), "target distributions");
    q->hidden = sp_xcalloc((size_t)cap * D, sizeof(float), "target hidden states");
    q->scratch = sp_xcalloc((size_t)2 * V, sizeof(float), "acceptance scratch");
    q->path_tokens = sp_xcalloc((size_t)cap, sizeof(int), "path tokens");
    q->path_hidden = sp_xcalloc((size_t)cap * D, sizeof(float), "path hidden states");
    if ((q->seq = t->seq_open(t, err)) < 0) return -1;
    float *h = sp_xcalloc((size_t)n * D, sizeof(float), "prompt hidden states");
    int rc = n > 1 ? t->prefill(t, q->seq, prompt, n - 1, NULL, h, err) : 0;
    if (!rc) rc = q->m.proposer->commit(q->m.proposer, prompt, h, n - 1, prompt[n - 1], err);
    free(h);
    q->pending = prompt[n - 1];
    q->position = n - 1;
    return rc;
}

/* After the verify: sequence q accepts by the run's rule, commits the path and realigns its proposer; returns
 * the tokens committed (−1 on failure). */
static int seq_settle(mtp_run *r, mtp_seq *q, uint64_t round, sp_error *err) {
    const decode_options *opt = &q->m.options;
    const int D = r->t->cfg->hidden_size;
    accept_result a;
    const accept_site site = {opt->seed, round, q->position};
    if (opt->rule == RULE_GREEDY)
        accept_greedy(&q->tree, q->p, &a);
    else if (accept_exact(&q->tree, q->p, site, q->scratch, &a, err))
        return -1;
    if (r->t->commit(r->t, q->seq, a.path[a.n_accepted], err)) return -1;
    for (int i = 0; i <= a.n_accepted; i++) {
        q->path_tokens[i] = q->tree.token[a.path[i]];
        memcpy(q->path_hidden + (size_t)i * D, q->hidden + (size_t)a.path[i] * D, (size_t)D * sizeof(float));
    }
    proposer *prop = q->m.proposer;
    if (prop->commit(prop, q->path_tokens, q->path_hidden, a.n_accepted + 1, a.next_token, err)) return -1;
    q->pending = a.next_token;
    q->position += a.n_accepted + 1;
    return a.n_accepted + 1;
}

/* One round over every sequence: propose, verify (one pass, or one a sequence), settle. */
static int run_round(mtp_run *r, uint64_t round, int one_pass, long *tokens, sp_error *err) {
    for (int j = 0; j < r->B; j++) {
        mtp_seq *q = &r->q[j];
        proposer *prop = q->m.proposer;
        tree_reset(&q->tree, q->pending, prop->kind);
        const propose_call call = {&q->m.options.sampling, q->m.options.seed, round, q->position, prop->depth};
        if (prop->propose(prop, &q->tree, &call, err)) return -1;
        r->jobs[j] = (target_job){q->seq, &q->tree, q->p, q->hidden};
    }
    const sampler_params *sp = &r->q[0].m.options.sampling;
    if (one_pass && r->t->verify(r->t, r->jobs, r->B, sp, err)) return -1;
    for (int j = 0; j < r->B; j++) {
        if (!one_pass && r->t->verify(r->t, &r->jobs[j], 1, sp, err)) return -1;
        const int n = seq_settle(r, &r->q[j], round, err);
        if (n < 0) return -1;
        *tokens += n;
    }
    return 0;
}

int bench_batch_mtp_run(engine *e, decode_target *t, const method_spec *spec, int B, int rounds, int prompt_tokens,
                        int one_pass, double *tps, double *tokens_per_round, sp_error *err) {
    mtp_run r;
    memset(&r, 0, sizeof r);
    r.e = e, r.t = t, r.B = B;
    const int V = t->cfg->vocab_size;
    int *prompt = sp_xcalloc((size_t)prompt_tokens, sizeof(int), "prompt");
    int rc = 0, opened = 0;
    for (int j = 0; j < B && !rc; j++, opened++) {
        r.q[j].seq = -1;
        for (int i = 0; i < prompt_tokens; i++) prompt[i] = (j + 1 + i) % V;
        rc = seq_open(&r, &r.q[j], spec, prompt, prompt_tokens, err);
    }
    long tokens = 0;
    const double t0 = bench_now_s();
    for (int i = 0; i < rounds && !rc; i++) rc = run_round(&r, (uint64_t)i, one_pass, &tokens, err);
    *tps = (double)tokens / (bench_now_s() - t0);
    *tokens_per_round = (double)tokens / rounds;
    for (int j = 0; j < opened; j++) seq_close(&r, &r.q[j]);
    free(prompt);
    return rc;
}
