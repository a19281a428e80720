/* bench_split.c — where a bench run's time goes: the target and the proposer of a real run sit behind wrappers
 * that time each call and pass it on unchanged, so the run computes what method_generate computes and the table
 * can set the passes, the proposer and the rest beside the cost model. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

double bench_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *x, int n) {
    qsort(x, (size_t)n, sizeof x[0], cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* The copy decode_run calls comes first, so a callback's t is the wrapper. Each pass is kept apart: on a loaded
 * machine a few passes that the scheduler interrupts take far longer than the rest, and the median says what a
 * pass costs when it is not interrupted. */
typedef struct {
    decode_target t;
    decode_target *inner;
    bench_split *split;
    double *pass; /* [cap] seconds of each pass (verify + commit), for their median */
    int n_pass, cap;
} timed_target;

static decode_target *inner_of(const decode_target *t) { return ((const timed_target *)t)->inner; }

static int tt_seq_open(decode_target *t, sp_error *err) { return inner_of(t)->seq_open(inner_of(t), err); }
static int tt_seq_fork(decode_target *t, int src, sp_error *err) {
    return inner_of(t)->seq_fork(inner_of(t), src, err);
}
static void tt_seq_close(decode_target *t, int seq) { inner_of(t)->seq_close(inner_of(t), seq); }
static int tt_position(const decode_target *t, int seq) { return inner_of(t)->position(inner_of(t), seq); }
static void tt_memory(const decode_target *t, const int *seqs, int n_seqs, target_memory *out) {
    inner_of(t)->memory(inner_of(t), seqs, n_seqs, out);
}

static int tt_prefill(decode_target *t, int seq, const int *tokens, int n, float *logits, float *hidden,
                      sp_error *err) {
    const double t0 = bench_now_s();
    int rc = inner_of(t)->prefill(inner_of(t), seq, tokens, n, logits, hidden, err);
    ((timed_target *)t)->split->prefill_s += bench_now_s() - t0;
    return rc;
}

static void record_pass(timed_target *w, double dt) {
    w->split->pass_s += dt;
    if (w->n_pass == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 256;
        w->pass = sp_xrealloc(w->pass, (size_t)w->cap, sizeof(double), "bench pass times");
    }
    w->pass[w->n_pass] = dt; /* the commit that follows adds its time and closes the pass */
}

static int tt_verify(decode_target *t, const target_job *jobs, int n_jobs, const sampler_params *sp, sp_error *err) {
    timed_target *w = (timed_target *)t;
    const double t0 = bench_now_s();
    int rc = w->inner->verify(w->inner, jobs, n_jobs, sp, err);
    record_pass(w, bench_now_s() - t0);
    return rc;
}

/* The pass with its acceptance where the logits are (target.h): timed as a pass, as the host's acceptance
 * after verify is timed as the round's. */
static int tt_verify_accept(decode_target *t, const target_job *job, const sampler_params *sp, accept_site site,
                            accept_result *r, sp_error *err) {
    timed_target *w = (timed_target *)t;
    const double t0 = bench_now_s();
    int rc = w->inner->verify_accept(w->inner, job, sp, site, r, err);
    record_pass(w, bench_now_s() - t0);
    return rc;
}

/* An MTP round handed to the target (target.h): its drafting on the target's side, pass and acceptance in one
 * call, timed as a pass — the proposer's share of it is not told apart. */
static int tt_mtp_verify_accept(decode_target *t, const target_job *job, const mtp_chain_call *call,
                                const sampler_params *sp, accept_site site, accept_result *r, sp_error *err) {
    timed_target *w = (timed_target *)t;
    const double t0 = bench_now_s();
    int rc = w->inner->mtp_verify_accept(w->inner, job, call, sp, site, r, err);
    record_pass(w, bench_now_s() - t0);
    return rc;
}

static int tt_commit(decode_target *t, int seq, int node, sp_error *err) {
    timed_target *w = (timed_target *)t;
    const double t0 = bench_now_s();
    int rc = w->inner->commit(w->inner, seq, node, err);
    const double dt = bench_now_s() - t0;
    w->split->pass_s += dt;
    w->pass[w->n_pass++] += dt;
    return rc;
}

static void timed_target_build(timed_target *w, decode_target *inner, bench_split *split) {
    w->t = *inner; /* the figures (cfg, bytes per pass, largest tree) as they are */
    w->t.seq_open = tt_seq_open;
    w->t.seq_fork = tt_seq_fork;
    w->t.seq_close = tt_seq_close;
    w->t.prefill = tt_prefill;
    w->t.verify = tt_verify;
    w->t.verify_accept = inner->verify_accept ? tt_verify_accept : NULL;
    w->t.mtp_verify_accept = inner->mtp_verify_accept ? tt_mtp_verify_accept : NULL;
    w->t.commit = tt_commit;
    w->t.position = tt_position;
    w->t.memory = tt_memory;
    w->t.release = NULL; /* the wrapper owns nothing */
    w->inner = inner;
    w->split = split;
    w->pass = NULL;
    w->n_pass = w->cap = 0;
}

/* The proposer's wrapper: its impl is this, its counters the inner one's. */
typedef struct {
    proposer *inner;
    bench_split *split;
} timed_proposer;

static int tp_propose(proposer *self, token_tree *tree, const propose_call *call, sp_error *err) {
    timed_proposer *w = self->impl;
    const double t0 = bench_now_s();
    int rc = w->inner->propose(w->inner, tree, call, err);
    w->split->proposer_s += bench_now_s() - t0;
    self->steps = w->inner->steps;
    return rc;
}

static int tp_commit(proposer *self, const int *path, const float *hidden, int len, int next_token, sp_error *err) {
    timed_proposer *w = self->impl;
    const double t0 = bench_now_s();
    int rc = w->inner->commit(w->inner, path, hidden, len, next_token, err);
    w->split->proposer_s += bench_now_s() - t0;
    self->steps = w->inner->steps;
    return rc;
}

/* The round handed to the target: timed there (tt_mtp_verify_accept). */
static int tp_propose_verify(proposer *self, decode_target *t, int seq, token_tree *tree, const propose_call *call,
                             accept_site site, accept_result *r, sp_error *err) {
    timed_proposer *w = self->impl;
    int rc = w->inner->propose_verify(w->inner, t, seq, tree, call, site, r, err);
    self->steps = w->inner->steps;
    return rc;
}

int bench_generate(const method_spec *s, const method_parts *parts, const int *prompt, int n_prompt, decode_output *out,
                   bench_split *split, sp_error *err) {
    method_built b;
    memset(out, 0, sizeof *out);
    if (method_build(&b, s, parts, err)) return -1;
    timed_target tt;
    timed_target_build(&tt, parts->target, split);
    timed_proposer tw = {b.proposer, split};
    proposer tp;
    if (b.proposer) {
        tp = *b.proposer;
        tp.propose = tp_propose;
        tp.commit = tp_commit;
        tp.propose_verify = b.proposer->propose_verify ? tp_propose_verify : NULL;
        tp.release = NULL; /* method_release releases the inner one */
        tp.impl = &tw;
    }
    int rc = decode_batch_one(&tt.t, b.proposer ? &tp : NULL, prompt, n_prompt, &b.options, out, err);
    method_release(&b);
    split->passes = tt.n_pass;
    if (tt.n_pass) {
        split->pass_median_s = bench_median(tt.pass, tt.n_pass);
    }
    free(tt.pass);
    return rc;
}
