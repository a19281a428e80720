/* decode.c — the round loop shared by every method (see decode.h). */
#include "decode.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

decode_options decode_defaults(void) {
    decode_options o;
    memset(&o, 0, sizeof o);
    o.sampling = sampler_defaults();
    o.seed = 1;
    o.max_tokens = 64;
    o.stop_at_eos = 1;
    o.rule = RULE_EXACT;
    o.typical_epsilon = 0.09f;
    o.typical_delta = 0.3f;
    return o;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void decode_output_free(decode_output *out) {
    free(out->tokens);
    out->tokens = NULL;
    out->n = 0;
}

/* Everything one run holds, so the loop below reads as the algorithm. */
typedef struct {
    decode_target *t;
    int seq; /* the run's sequence: every committed token but the pending one */
    token_tree tree;
    float *p, *hidden, *scratch; /* [cap, V], [cap, D] (proposers that read it), [2V] */
    int cap;
    int *path_tokens;   /* [cap] */
    float *path_hidden; /* [cap, D] */
} run_context;

static int context_build(run_context *c, decode_target *t, int cap, int with_hidden, sp_error *err) {
    memset(c, 0, sizeof *c);
    const int V = t->cfg->vocab_size, D = t->cfg->hidden_size;
    c->t = t;
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

static void context_free(run_context *c) {
    if (c->seq >= 0) c->t->seq_close(c->t, c->seq);
    tree_free(&c->tree);
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

static int check_run(const decode_target *t, const proposer *prop, const int *prompt, int n_prompt,
                     const decode_options *opt, sp_error *err) {
    const int V = t->cfg->vocab_size;
    if (n_prompt < 1) return sp_fail(err, "the prompt needs at least one token");
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= V)
            return sp_fail(err, "prompt token %d at position %d is outside the vocabulary [0, %d)", prompt[i], i, V);
    if (sampler_validate(&opt->sampling, err)) return -1;
    if (opt->max_tokens < 1) return sp_fail(err, "max_tokens must be at least 1");
    if (prop && prop->tree_capacity + 1 > t->max_tree_nodes)
        return sp_fail(err, "the %s proposer builds trees of up to %d nodes; the %s target verifies at most %d",
                       prop->name, prop->tree_capacity + 1, t->backend, t->max_tree_nodes);
    return 0;
}

/* The acceptance rule of the run: the caller's, or the one opt names. */
static int accept_round(const decode_options *opt, const run_context *c, accept_site site, accept_result *r,
                        sp_error *err) {
    if (opt->custom_accept) return opt->custom_accept(opt->accept_user, &c->tree, c->p, site, c->scratch, r, err);
    if (opt->rule == RULE_GREEDY) {
        accept_greedy(&c->tree, c->p, r);
        return 0;
    }
    if (opt->rule == RULE_TYPICAL) {
        accept_typical(&c->tree, c->p, opt->typical_epsilon, opt->typical_delta, site, r);
        return 0;
    }
    return accept_exact(&c->tree, c->p, site, c->scratch, r, err);
}

/* The round's verify pass and acceptance: in one call to the target when it accepts on its side (exactly
 * accept_exact, at the same sites) and the run asks for the exact rule, else the pass and the rule here. */
static int verify_and_accept(const decode_options *opt, run_context *c, accept_site site, accept_result *r,
                             sp_error *err) {
    decode_target *t = c->t;
    const target_job job = {c->seq, &c->tree, c->p, c->hidden};
    if (t->verify_accept && !opt->custom_accept && opt->rule == RULE_EXACT)
        return t->verify_accept(t, &job, &opt->sampling, site, r, err);
    if (t->verify(t, &job, 1, &opt->sampling, err)) return -1;
    return accept_round(opt, c, site, r, err);
}

/* The proposer realigns on the accepted path (root first) and the token after it. */
static int proposer_commit(proposer *prop, run_context *c, const accept_result *r, sp_error *err) {
    const int D = c->t->cfg->hidden_size;
    for (int i = 0; i <= r->n_accepted; i++) {
        c->path_tokens[i] = c->tree.token[r->path[i]];
        if (c->hidden)
            memcpy(c->path_hidden + (size_t)i * D, c->hidden + (size_t)r->path[i] * D, (size_t)D * sizeof(float));
    }
    return prop->commit(prop, c->path_tokens, c->path_hidden, r->n_accepted + 1, r->next_token, err);
}

/* The prompt minus its last token goes straight into the target; the last
 * one becomes the first root, so the prompt's final position is computed by
 * the first round's pass like any other root. */
static int prefill(run_context *c, proposer *prop, const int *prompt, int n_prompt, run_accounting *acc,
                   sp_error *err) {
    const int D = c->t->cfg->hidden_size;
    float *hidden = c->hidden ? sp_xcalloc((size_t)n_prompt * D, sizeof(float), "prompt hidden states") : NULL;
    int rc = c->t->prefill(c->t, c->seq, prompt, n_prompt - 1, NULL, hidden, err);
    acc->target_positions += n_prompt - 1;
    if (!rc && prop) rc = prop->commit(prop, prompt, hidden, n_prompt - 1, prompt[n_prompt - 1], err);
    free(hidden);
    return rc;
}

int decode_run(decode_target *t, proposer *prop, const int *prompt, int n_prompt, const decode_options *opt,
               decode_output *out, sp_error *err) {
    memset(out, 0, sizeof *out);
    if (check_run(t, prop, prompt, n_prompt, opt, err)) return -1;
    run_context c;
    if (context_build(&c, t, prop ? prop->tree_capacity + 1 : 1, prop && prop->needs_hidden, err)) return -1;
    const char *plain_name = opt->sampling.temperature == 0 ? "greedy" : "sample";
    accounting_init(&out->acc, prop ? prop->name : plain_name, prop ? prop->depth : 0, t->weight_bytes_per_pass,
                    prop ? prop->bytes_per_step : 0);
    int out_cap = 0, rc = 0;
    const double t0 = now_s();
    rc = prefill(&c, prop, prompt, n_prompt, &out->acc, err);

    int pending = prompt[n_prompt - 1], position = n_prompt - 1, done = 0;
    /* the proposer hands each round to the target (propose_verify) under the exact rule, until it says it cannot */
    int on_target = prop && prop->propose_verify && !opt->custom_accept && opt->rule == RULE_EXACT;
    for (uint64_t round = 0; !rc && !done && out->n < opt->max_tokens; round++) {
        const int remaining = opt->max_tokens - out->n;
        tree_reset(&c.tree, pending, prop ? prop->kind : CHILDREN_IID);
        const propose_call call = {&opt->sampling, opt->seed, round, position, remaining - 1};
        accept_result r;
        const accept_site site = {opt->seed, round, position};
        const int handed = on_target ? prop->propose_verify(prop, t, c.seq, &c.tree, &call, site, &r, err) : 1;
        if (handed < 0) {
            rc = -1;
            break;
        }
        if (handed == 1) { /* the proposal here, then the pass and the rule */
            on_target = 0;
            if (prop && remaining > 1 && (rc = prop->propose(prop, &c.tree, &call, err))) break;
            if ((rc = verify_and_accept(opt, &c, site, &r, err))) break;
        }
        out->acc.target_positions += c.tree.n;

        /* the burst: the accepted tokens, then the correction or bonus */
        int burst[ACCEPT_MAX_PATH + 1], n_burst = 0;
        for (int i = 1; i <= r.n_accepted; i++) burst[n_burst++] = c.tree.token[r.path[i]];
        burst[n_burst++] = r.next_token;
        for (int i = 0; i < n_burst; i++)
            if (opt->stop_at_eos && config_is_eos(t->cfg, burst[i])) {
                n_burst = i + 1; /* EOS is emitted, nothing after it */
                done = 1;
            }
        if ((rc = t->commit(t, c.seq, r.path[r.n_accepted], err))) break;
        accounting_round(&out->acc, tree_max_depth(&c.tree), r.n_accepted, n_burst, !r.bonus);

        for (int i = 0; i < n_burst; i++) append(out, &out_cap, burst[i]);
        if (round == 0) out->acc.ttft_s = now_s() - t0;
        if (opt->on_commit) opt->on_commit(burst, n_burst, opt->user);
        if (prop && (rc = proposer_commit(prop, &c, &r, err))) break;
        pending = r.next_token;
        position += r.n_accepted + 1;
    }
    out->acc.decode_s = now_s() - t0 - out->acc.ttft_s;
    if (prop) out->acc.proposer_steps = prop->steps;
    context_free(&c);
    if (rc) decode_output_free(out);
    return rc;
}
