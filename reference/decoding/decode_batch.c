/* decode_batch.c — decode_run's round over B sequences (decode_batch.h): the steps of decode_round.h, with the
 * trees of a round verified together and the target's hooks. */
#include "decode_batch.h"

#include "decode_round.h"

#include <stdlib.h>
#include <string.h>

/* One job of the batch: its sequence's state, and whether its rounds go to the target whole. */
typedef struct {
    decode_job *job;
    decode_output *out;
    decode_seq s;
    int on_target; /* 1: its proposer hands each round to the target (propose_verify), until it says it cannot */
    int handed;    /* 1: this round's was handed: proposed, verified and accepted already */
} batch_seq;

/* Every job valid, and no proposer shared (a proposer follows one sequence). */
static int check_batch(const decode_target *t, decode_job *jobs, int B, sp_error *err) {
    if (B < 1) return sp_fail(err, "a batch needs at least one sequence, got %d", B);
    for (int j = 0; j < B; j++) {
        const decode_job *job = &jobs[j];
        if (decode_check(t, job->prop, job->prompt, job->n_prompt, &job->opt, err))
            return B > 1 ? sp_wrap(err, "sequence %d of the batch: ", j) : -1;
        for (int i = 0; i < j && jobs[j].prop; i++)
            if (jobs[i].prop == jobs[j].prop)
                return sp_fail(err, "sequences %d and %d of the batch share one proposer; each needs its own", i, j);
    }
    return 0;
}

static int exact_rule(const decode_options *opt) { return !opt->custom_accept && accept_rule_exact(opt->rule); }

/* The round of a job: handed to the target whole when its proposer and the target agree, else proposed here. */
static int batch_propose(decode_target *t, batch_seq *b, sp_error *err) {
    decode_seq *s = &b->s;
    const decode_options *opt = &b->job->opt;
    proposer *prop = b->job->prop;
    b->handed = 0;
    if (b->on_target) {
        const int remaining = opt->max_tokens - b->out->n;
        tree_reset(&s->tree, s->pending, prop->kind);
        const propose_call call = {&opt->sampling, opt->seed, s->round, s->position, remaining - 1};
        const int rc = prop->propose_verify(prop, t, s->seq, &s->tree, &call, decode_site(s, opt), &s->r, err);
        if (rc < 0) return -1;
        if (rc == 0) {
            b->handed = 1;
            return 0;
        }
        b->on_target = 0; /* the target cannot: the proposal here, the pass and the rule below, from now on */
    }
    return decode_propose(s, prop, opt, b->out, err);
}

/* One job's verify pass and acceptance: in one call to the target when it accepts on its side (exactly
 * accept_exact, at the same sites) and the job asks for the exact rule, else the pass and the rule here. */
static int verify_one(decode_target *t, batch_seq *b, sp_error *err) {
    decode_seq *s = &b->s;
    const decode_options *opt = &b->job->opt;
    const target_job job = {s->seq, &s->tree, s->p, s->hidden};
    if (t->verify_accept && exact_rule(opt))
        return t->verify_accept(t, &job, &opt->sampling, decode_site(s, opt), &s->r, err);
    if (t->verify(t, &job, 1, &opt->sampling, err)) return -1;
    return decode_accept(s, opt, err);
}

static int same_sampling(const sampler_params *a, const sampler_params *b) {
    return a->temperature == b->temperature && a->top_k == b->top_k && a->top_p == b->top_p && a->min_p == b->min_p;
}

/* The jobs' trees verified together: one verify call over all the jobs that process their distributions alike
 * (one, normally: a batch shares its sampling), then each job's own rule at its own sites. tj, grouped: [n]. */
static int verify_together(decode_target *t, batch_seq **live, int n, target_job *tj, char *grouped, long *passes,
                           sp_error *err) {
    memset(grouped, 0, (size_t)n);
    for (int first = 0; first < n; first++) {
        if (grouped[first]) continue;
        const sampler_params *sp = &live[first]->job->opt.sampling;
        int m = 0;
        for (int i = first; i < n; i++)
            if (!grouped[i] && same_sampling(sp, &live[i]->job->opt.sampling)) {
                const decode_seq *s = &live[i]->s;
                grouped[i] = 1;
                tj[m++] = (target_job){s->seq, &s->tree, s->p, s->hidden};
            }
        if (t->verify(t, tj, m, sp, err)) return -1;
        ++*passes;
    }
    for (int i = 0; i < n; i++)
        if (decode_accept(&live[i]->s, &live[i]->job->opt, err)) return -1;
    return 0;
}

static int batch_live(const batch_seq *b) { return decode_seq_live(&b->s, &b->job->opt, b->out); }

/* The rounds: every live job proposes, the trees not handed to the target are verified (together, unless one is
 * left or the caller asks for a pass each), every live job commits and realigns. *failed: the job that failed. */
static int run_rounds(decode_target *t, batch_seq *seqs, int B, decode_batch_options *bo, double t0, int *failed,
                      sp_error *err) {
    batch_seq **live = sp_xcalloc((size_t)B, sizeof *live, "live sequences");
    batch_seq **unverified = sp_xcalloc((size_t)B, sizeof *unverified, "sequences to verify");
    target_job *tj = sp_xcalloc((size_t)B, sizeof *tj, "verify jobs");
    char *grouped = sp_xcalloc((size_t)B, 1, "verify groups");
    int rc = 0;
    for (;;) {
        int n = 0, nv = 0;
        for (int j = 0; j < B && !rc; j++)
            if (batch_live(&seqs[j])) {
                live[n++] = &seqs[j];
                if ((rc = batch_propose(t, &seqs[j], err))) *failed = j;
                if (!seqs[j].handed) unverified[nv++] = &seqs[j];
            }
        if (rc || !n) break;
        bo->rounds++;
        bo->passes += n - nv; /* a handed round: its pass is the target's */
        if (nv == 1 || bo->pass_per_job) {
            for (int i = 0; i < nv && !rc; i++, bo->passes++)
                if ((rc = verify_one(t, unverified[i], err))) *failed = (int)(unverified[i] - seqs);
        } else if (nv && (rc = verify_together(t, unverified, nv, tj, grouped, &bo->passes, err))) {
            *failed = -1; /* a pass over several sequences: the message says which part failed */
        }
        for (int i = 0; i < n && !rc; i++) {
            batch_seq *b = live[i];
            rc = decode_commit(t, &b->s, &b->job->opt, b->out, t0, err);
            if (!rc && b->job->prop) rc = decode_realign(t, &b->s, b->job->prop, err);
            if (rc) *failed = (int)(b - seqs);
        }
        if (rc) break;
    }
    free(live);
    free(unverified);
    free(tj);
    free(grouped);
    return rc;
}

int decode_batch_run(decode_target *t, decode_job *jobs, int B, decode_batch_options *bo, decode_output *out,
                     sp_error *err) {
    decode_batch_options defaults = {0, 0, 0};
    if (!bo) bo = &defaults;
    if (B > 0) memset(out, 0, (size_t)B * sizeof *out);
    bo->passes = bo->rounds = 0;
    if (check_batch(t, jobs, B, err)) return -1;
    batch_seq *seqs = sp_xcalloc((size_t)B, sizeof *seqs, "batch sequences");
    for (int j = 0; j < B; j++) seqs[j].s.seq = -1;
    int rc = 0, failed = -1;
    const double t0 = decode_now_s();
    for (int j = 0; j < B && !rc; j++) {
        batch_seq *b = &seqs[j];
        decode_job *job = &jobs[j];
        b->job = job;
        b->out = &out[j];
        b->on_target = job->prop && job->prop->propose_verify && exact_rule(&job->opt);
        if ((rc = decode_seq_start(t, job->prop, job->prompt, job->n_prompt, &job->opt, &b->s, &out[j], err)))
            failed = j;
    }
    if (!rc) rc = run_rounds(t, seqs, B, bo, t0, &failed, err);
    for (int j = 0; j < B; j++) {
        if (jobs[j].prop) out[j].acc.proposer_steps = jobs[j].prop->steps;
        decode_seq_free(&seqs[j].s, t);
        if (rc) decode_output_free(&out[j]);
    }
    free(seqs);
    if (rc && B > 1 && failed >= 0) sp_wrap(err, "sequence %d of the batch: ", failed);
    return rc;
}

int decode_batch_one(decode_target *t, proposer *prop, const int *prompt, int n_prompt, const decode_options *opt,
                     decode_output *out, sp_error *err) {
    decode_job job = {prop, prompt, n_prompt, *opt};
    return decode_batch_run(t, &job, 1, NULL, out, err);
}
