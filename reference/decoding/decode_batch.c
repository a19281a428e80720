/* decode_batch.c — the round loop shared by every method, over B sequences
 * (decode_batch.h); decode_run (decode.c) is its batch of one. */
#include "decode_batch.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Everything one sequence of the batch holds, so the loop below reads as the algorithm. */
typedef struct {
    decode_job *job;
    decode_output *out;
    int seq; /* the job's sequence of the target: every committed token but the pending one */
    token_tree tree;
    float *p, *hidden, *scratch; /* [cap, V], [cap, D] (proposers that read it), [2V] */
    int cap;
    int *path_tokens;   /* [cap] */
    float *path_hidden; /* [cap, D] */
    int pending, position, done, out_cap;
    uint64_t round;  /* this sequence's rounds so far: its rng sites' round */
    accept_result r; /* the round's acceptance */
    int on_target;   /* 1: its proposer hands each round to the target (propose_verify), until it says it cannot */
    int handed;      /* 1: this round's was handed: proposed, verified and accepted already */
} seq_run;

static int context_build(seq_run *c, decode_target *t, int cap, int with_hidden, sp_error *err) {
    const int V = t->cfg->vocab_size, D = t->cfg->hidden_size;
    c->cap = cap;
    if ((c->seq = t->seq_open(t, err)) < 0) return -1;
    tree_build(&c->tree, V, cap);
    c->p = sp_xcalloc((size_t)cap * V, sizeof(float), "target distributions");
    c->scratch = sp_xcalloc((size_t)2 * V, sizeof(float), "acceptance scratch");
    c->path_tokens = sp_xcalloc((size_t)cap, sizeof(int), "path tokens");
    if (with_hidden) {
        c->hidden = sp_xcalloc((size_t)cap * D, sizeof(float), "target hidden states");
        c->path_hidden = sp_xcalloc((size_t)cap * D, sizeof(float), "path hidden states");
    }
    return 0;
}

static void context_free(seq_run *c, decode_target *t) {
    if (c->seq >= 0) t->seq_close(t, c->seq);
    if (c->cap) tree_free(&c->tree);
    free(c->p);
    free(c->hidden);
    free(c->scratch);
    free(c->path_tokens);
    free(c->path_hidden);
}

static void append(decode_output *out, int *cap, int token) {
    if (out->n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        out->tokens = sp_xrealloc(out->tokens, (size_t)*cap, sizeof(int), "output tokens");
    }
    out->tokens[out->n++] = token;
}

static int check_job(const decode_target *t, const decode_job *job, sp_error *err) {
    const int V = t->cfg->vocab_size;
    const proposer *prop = job->prop;
    const decode_options *opt = &job->opt;
    if (job->n_prompt < 1 || !job->prompt) return sp_fail(err, "the prompt needs at least one token");
    for (int i = 0; i < job->n_prompt; i++)
        if (job->prompt[i] < 0 || job->prompt[i] >= V)
            return sp_fail(err, "prompt token %d at position %d is outside the vocabulary [0, %d)", job->prompt[i], i,
                           V);
    if (sampler_validate(&opt->sampling, err)) return -1;
    if (opt->max_tokens < 1) return sp_fail(err, "max_tokens must be at least 1");
    if (prop && prop->tree_capacity + 1 > t->max_tree_nodes)
        return sp_fail(err, "the %s proposer builds trees of up to %d nodes; the %s target verifies at most %d",
                       prop->name, prop->tree_capacity + 1, t->backend, t->max_tree_nodes);
    return 0;
}

/* Every job valid, and no proposer shared (a proposer follows one sequence). */
static int check_batch(const decode_target *t, decode_job *jobs, int B, sp_error *err) {
    if (B < 1) return sp_fail(err, "a batch needs at least one sequence, got %d", B);
    for (int j = 0; j < B; j++) {
        if (check_job(t, &jobs[j], err)) return B > 1 ? sp_wrap(err, "sequence %d of the batch: ", j) : -1;
        for (int i = 0; i < j && jobs[j].prop; i++)
            if (jobs[i].prop == jobs[j].prop)
                return sp_fail(err, "sequences %d and %d of the batch share one proposer; each needs its own", i, j);
    }
    return 0;
}

/* The acceptance rule of the job: the caller's, or the one its options name. */
static int accept_round(const decode_options *opt, seq_run *c, accept_site site, sp_error *err) {
    if (opt->custom_accept) return opt->custom_accept(opt->accept_user, &c->tree, c->p, site, c->scratch, &c->r, err);
    if (opt->rule == RULE_GREEDY) {
        accept_greedy(&c->tree, c->p, &c->r);
        return 0;
    }
    if (opt->rule == RULE_TYPICAL) {
        accept_typical(&c->tree, c->p, opt->typical_epsilon, opt->typical_delta, site, &c->r);
        return 0;
    }
    return accept_exact(&c->tree, c->p, site, c->scratch, &c->r, err);
}

static accept_site round_site(const seq_run *c) { return (accept_site){c->job->opt.seed, c->round, c->position}; }

/* One sequence's verify pass and acceptance: in one call to the target when it accepts on its side (exactly
 * accept_exact, at the same sites) and the job asks for the exact rule, else the pass and the rule here. */
static int verify_and_accept(decode_target *t, seq_run *c, sp_error *err) {
    const decode_options *opt = &c->job->opt;
    const target_job job = {c->seq, &c->tree, c->p, c->hidden};
    if (t->verify_accept && !opt->custom_accept && opt->rule == RULE_EXACT)
        return t->verify_accept(t, &job, &opt->sampling, round_site(c), &c->r, err);
    if (t->verify(t, &job, 1, &opt->sampling, err)) return -1;
    return accept_round(opt, c, round_site(c), err);
}

static int same_sampling(const sampler_params *a, const sampler_params *b) {
    return a->temperature == b->temperature && a->top_k == b->top_k && a->top_p == b->top_p && a->min_p == b->min_p;
}

/* The live sequences' trees verified together: one verify call over all the sequences that process their
 * distributions alike (one, normally: a batch shares its sampling), then each sequence's own rule at its own
 * sites. tj, grouped: [n] scratch. */
static int verify_together(decode_target *t, seq_run **live, int n, target_job *tj, char *grouped, long *passes,
                           sp_error *err) {
    memset(grouped, 0, (size_t)n);
    for (int first = 0; first < n; first++) {
        if (grouped[first]) continue;
        const sampler_params *sp = &live[first]->job->opt.sampling;
        int m = 0;
        for (int i = first; i < n; i++)
            if (!grouped[i] && same_sampling(sp, &live[i]->job->opt.sampling)) {
                grouped[i] = 1;
                tj[m++] = (target_job){live[i]->seq, &live[i]->tree, live[i]->p, live[i]->hidden};
            }
        if (t->verify(t, tj, m, sp, err)) return -1;
        ++*passes;
    }
    for (int i = 0; i < n; i++)
        if (accept_round(&live[i]->job->opt, live[i], round_site(live[i]), err)) return -1;
    return 0;
}

/* The proposer realigns on the accepted path (root first) and the token after it. */
static int proposer_commit(decode_target *t, seq_run *c, sp_error *err) {
    const int D = t->cfg->hidden_size;
    const accept_result *r = &c->r;
    for (int i = 0; i <= r->n_accepted; i++) {
        c->path_tokens[i] = c->tree.token[r->path[i]];
        if (c->hidden)
            memcpy(c->path_hidden + (size_t)i * D, c->hidden + (size_t)r->path[i] * D, (size_t)D * sizeof(float));
    }
    proposer *prop = c->job->prop;
    return prop->commit(prop, c->path_tokens, c->path_hidden, r->n_accepted + 1, r->next_token, err);
}

/* The prompt minus its last token goes straight into the target; the last one becomes the first root, so the
 * prompt's final position is computed by the first round's pass like any other root. */
static int prefill(decode_target *t, seq_run *c, sp_error *err) {
    const int D = t->cfg->hidden_size, n_prompt = c->job->n_prompt;
    const int *prompt = c->job->prompt;
    float *hidden = c->hidden ? sp_xcalloc((size_t)n_prompt * D, sizeof(float), "prompt hidden states") : NULL;
    int rc = t->prefill(t, c->seq, prompt, n_prompt - 1, NULL, hidden, err);
    c->out->acc.target_positions += n_prompt - 1;
    if (!rc && c->job->prop)
        rc = c->job->prop->commit(c->job->prop, prompt, hidden, n_prompt - 1, prompt[n_prompt - 1], err);
    free(hidden);
    c->pending = prompt[n_prompt - 1];
    c->position = n_prompt - 1;
    return rc;
}

/* The job's sequence, buffers, accounting and prefill. */
static int seq_start(decode_target *t, decode_job *job, decode_output *out, seq_run *c, sp_error *err) {
    proposer *prop = job->prop;
    c->job = job;
    c->out = out;
    c->seq = -1;
    if (context_build(c, t, prop ? prop->tree_capacity + 1 : 1, prop && prop->needs_hidden, err)) return -1;
    const char *plain_name = job->opt.sampling.temperature == 0 ? "greedy" : "sample";
    accounting_init(&out->acc, prop ? prop->name : plain_name, prop ? prop->depth : 0, t->weight_bytes_per_pass,
                    prop ? prop->bytes_per_step : 0);
    c->on_target = prop && prop->propose_verify && !job->opt.custom_accept && job->opt.rule == RULE_EXACT;
    return prefill(t, c, err);
}

static int seq_live(const seq_run *c) { return !c->done && c->out->n < c->job->opt.max_tokens; }

/* The tree of the round: the root (the pending token), and the proposer's nodes while the budget leaves room —
 * or the whole round in one call to the target, when the proposer hands it over (c->handed). */
static int seq_propose(decode_target *t, seq_run *c, sp_error *err) {
    const decode_options *opt = &c->job->opt;
    proposer *prop = c->job->prop;
    const int remaining = opt->max_tokens - c->out->n;
    tree_reset(&c->tree, c->pending, prop ? prop->kind : CHILDREN_IID);
    const propose_call call = {&opt->sampling, opt->seed, c->round, c->position, remaining - 1};
    if (c->on_target) {
        const int rc = prop->propose_verify(prop, t, c->seq, &c->tree, &call, round_site(c), &c->r, err);
        if (rc < 0) return -1;
        if (rc == 0) {
            c->handed = 1;
            return 0;
        }
        c->on_target = 0; /* the target cannot: the proposal here, the pass and the rule below, from now on */
    }
    return prop && remaining > 1 ? prop->propose(prop, &c->tree, &call, err) : 0;
}

/* After the acceptance: the burst (the accepted tokens, then the correction or bonus) committed to the target,
 * the output and the stream, and the proposer realigned. */
static int seq_settle(decode_target *t, seq_run *c, double t0, sp_error *err) {
    const decode_options *opt = &c->job->opt;
    decode_output *out = c->out;
    const accept_result *r = &c->r;
    out->acc.target_positions += c->tree.n;
    int burst[ACCEPT_MAX_PATH + 1], n_burst = 0;
    for (int i = 1; i <= r->n_accepted; i++) burst[n_burst++] = c->tree.token[r->path[i]];
    burst[n_burst++] = r->next_token;
    for (int i = 0; i < n_burst; i++)
        if (opt->stop_at_eos && config_is_eos(t->cfg, burst[i])) {
            n_burst = i + 1; /* EOS is emitted, nothing after it */
            c->done = 1;
        }
    if (t->commit(t, c->seq, r->path[r->n_accepted], err)) return -1;
    accounting_round(&out->acc, tree_max_depth(&c->tree), r->n_accepted, n_burst, !r->bonus);
    for (int i = 0; i < n_burst; i++) append(out, &c->out_cap, burst[i]);
    if (c->round == 0) out->acc.ttft_s = now_s() - t0;
    if (opt->on_commit) opt->on_commit(burst, n_burst, opt->user);
    if (c->job->prop && proposer_commit(t, c, err)) return -1;
    c->pending = r->next_token;
    c->position += r->n_accepted + 1;
    c->round++;
    if (!seq_live(c)) out->acc.decode_s = now_s() - t0 - out->acc.ttft_s;
    return 0;
}

/* The rounds: every live sequence proposes, the live trees are verified (together, unless one is left or the
 * caller asks for a pass each), every live sequence accepts and settles. *failed: the job that failed. */
static int run_rounds(decode_target *t, seq_run *s, int B, decode_batch_options *bo, double t0, int *failed,
                      sp_error *err) {
    seq_run **live = sp_xcalloc((size_t)B, sizeof *live, "live sequences");
    target_job *tj = sp_xcalloc((size_t)B, sizeof *tj, "verify jobs");
    char *grouped = sp_xcalloc((size_t)B, 1, "verify groups");
    seq_run **unverified = sp_xcalloc((size_t)B, sizeof *unverified, "sequences to verify");
    int rc = 0, n = 0;
    do {
        n = 0;
        int nv = 0; /* the live sequences whose round was not handed to the target whole */
        for (int j = 0; j < B && !rc; j++)
            if (seq_live(&s[j])) {
                live[n++] = &s[j];
                s[j].handed = 0;
                if ((rc = seq_propose(t, &s[j], err))) *failed = j;
                if (!s[j].handed) unverified[nv++] = &s[j];
            }
        if (rc || !n) break;
        bo->rounds++;
        bo->passes += n - nv; /* a handed round: its pass is the target's */
        if (nv == 1 || bo->pass_per_job) {
            for (int i = 0; i < nv && !rc; i++, bo->passes++)
                if ((rc = verify_and_accept(t, unverified[i], err))) *failed = (int)(unverified[i] - s);
        } else if (nv && (rc = verify_together(t, unverified, nv, tj, grouped, &bo->passes, err))) {
            *failed = -1; /* a pass over several sequences: the message says which part failed */
        }
        for (int i = 0; i < n && !rc; i++)
            if ((rc = seq_settle(t, live[i], t0, err))) *failed = (int)(live[i] - s);
    } while (!rc);
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
    seq_run *s = sp_xcalloc((size_t)B, sizeof *s, "batch sequences");
    for (int j = 0; j < B; j++) s[j].seq = -1;
    int rc = 0, failed = -1;
    const double t0 = now_s();
    for (int j = 0; j < B && !rc; j++)
        if ((rc = seq_start(t, &jobs[j], &out[j], &s[j], err))) failed = j;
    if (!rc) rc = run_rounds(t, s, B, bo, t0, &failed, err);
    for (int j = 0; j < B; j++) {
        if (jobs[j].prop) out[j].acc.proposer_steps = jobs[j].prop->steps;
        context_free(&s[j], t);
        if (rc) decode_output_free(&out[j]);
    }
    free(s);
    if (rc && B > 1 && failed >= 0) sp_wrap(err, "sequence %d of the batch: ", failed);
    return rc;
}
