/* decode.c — the round loop of decode.h on one sequence, on the target and proposer interfaces only. */
#include "decode_round.h"

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

void decode_output_free(decode_output *out) {
    free(out->tokens);
    out->tokens = NULL;
    out->n = 0;
}

const char *accept_rule_name(accept_rule rule) {
    static const char *const names[] = {"exact", "exact-norepl", "typical", "greedy", "default"};
    return (unsigned)rule <= RULE_DEFAULT ? names[rule] : "?";
}

double decode_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int decode_check(const decode_target *t, const proposer *prop, const int *prompt, int n_prompt,
                 const decode_options *opt, sp_error *err) {
    const int V = t->cfg->vocab_size;
    if (n_prompt < 1 || !prompt) return sp_fail(err, "the prompt needs at least one token");
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

/* The prompt minus its last token goes straight into the target; the last one becomes the first root, so the
 * prompt's final position is computed by the first round's pass like any other root. */
static int prefill(decode_target *t, decode_seq *s, proposer *prop, const int *prompt, int n_prompt, decode_output *out,
                   sp_error *err) {
    const int D = t->cfg->hidden_size;
    float *hidden = s->hidden ? sp_xcalloc((size_t)n_prompt * D, sizeof(float), "prompt hidden states") : NULL;
    int rc = t->prefill(t, s->seq, prompt, n_prompt - 1, NULL, hidden, err);
    out->acc.target_positions += n_prompt - 1;
    if (!rc && prop) rc = prop->commit(prop, prompt, hidden, n_prompt - 1, prompt[n_prompt - 1], err);
    free(hidden);
    s->pending = prompt[n_prompt - 1];
    s->position = n_prompt - 1;
    return rc;
}

int decode_seq_start(decode_target *t, proposer *prop, const int *prompt, int n_prompt, const decode_options *opt,
                     decode_seq *s, decode_output *out, sp_error *err) {
    const int V = t->cfg->vocab_size, D = t->cfg->hidden_size;
    memset(s, 0, sizeof *s);
    if ((s->seq = t->seq_open(t, err)) < 0) return -1;
    s->cap = prop ? prop->tree_capacity + 1 : 1;
    tree_build(&s->tree, V, s->cap);
    s->p = sp_xcalloc((size_t)s->cap * V, sizeof(float), "target distributions");
    s->scratch = sp_xcalloc((size_t)2 * V, sizeof(float), "acceptance scratch");
    s->path_tokens = sp_xcalloc((size_t)s->cap, sizeof(int), "path tokens");
    if (prop && prop->needs_hidden) {
        s->hidden = sp_xcalloc((size_t)s->cap * D, sizeof(float), "target hidden states");
        s->path_hidden = sp_xcalloc((size_t)s->cap * D, sizeof(float), "path hidden states");
    }
    const char *plain_name = opt->sampling.temperature == 0 ? "greedy" : "sample";
    accounting_init(&out->acc, prop ? prop->name : plain_name, prop ? prop->depth : 0, t->weight_bytes_per_pass,
                    prop ? prop->bytes_per_step : 0);
    return prefill(t, s, prop, prompt, n_prompt, out, err);
}

void decode_seq_free(decode_seq *s, decode_target *t) {
    if (s->seq >= 0) t->seq_close(t, s->seq);
    if (s->cap) tree_free(&s->tree);
    free(s->p);
    free(s->hidden);
    free(s->scratch);
    free(s->path_tokens);
    free(s->path_hidden);
    s->seq = -1;
    s->cap = 0;
}

int decode_seq_live(const decode_seq *s, const decode_options *opt, const decode_output *out) {
    return !s->done && out->n < opt->max_tokens;
}

accept_site decode_site(const decode_seq *s, const decode_options *opt) {
    return (accept_site){opt->seed, s->round, s->position};
}

int decode_propose(decode_seq *s, proposer *prop, const decode_options *opt, const decode_output *out, sp_error *err) {
    const int remaining = opt->max_tokens - out->n;
    tree_reset(&s->tree, s->pending, prop ? prop->kind : CHILDREN_IID);
    const propose_call call = {&opt->sampling, opt->seed, s->round, s->position, remaining - 1};
    return prop && remaining > 1 ? prop->propose(prop, &s->tree, &call, err) : 0;
}

int decode_accept(decode_seq *s, const decode_options *opt, sp_error *err) {
    const accept_site site = decode_site(s, opt);
    if (opt->custom_accept) return opt->custom_accept(opt->accept_user, &s->tree, s->p, site, s->scratch, &s->r, err);
    if (opt->rule == RULE_GREEDY) {
        accept_greedy(&s->tree, s->p, &s->r);
        return 0;
    }
    if (opt->rule == RULE_TYPICAL) {
        accept_typical(&s->tree, s->p, opt->typical_epsilon, opt->typical_delta, site, &s->r);
        return 0;
    }
    return accept_exact(&s->tree, s->p, site, s->scratch, &s->r, err);
}

static void append(decode_output *out, int *cap, int token) {
    if (out->n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        out->tokens = sp_xrealloc(out->tokens, (size_t)*cap, sizeof(int), "output tokens");
    }
    out->tokens[out->n++] = token;
}

int decode_realign(const decode_target *t, decode_seq *s, proposer *prop, sp_error *err) {
    const int D = t->cfg->hidden_size;
    const accept_result *r = &s->r;
    for (int i = 0; i <= r->n_accepted; i++) {
        s->path_tokens[i] = s->tree.token[r->path[i]];
        if (s->hidden)
            memcpy(s->path_hidden + (size_t)i * D, s->hidden + (size_t)r->path[i] * D, (size_t)D * sizeof(float));
    }
    return prop->commit(prop, s->path_tokens, s->path_hidden, r->n_accepted + 1, r->next_token, err);
}

int decode_commit(decode_target *t, decode_seq *s, const decode_options *opt, decode_output *out, double t0,
                  sp_error *err) {
    const accept_result *r = &s->r;
    if (r->next_token < 0 || r->next_token >= t->cfg->vocab_size) /* never fed on: the next pass would read past */
        return sp_fail(err,
                       "position %d: the target drew token %d, outside the vocabulary [0, %d): its distribution "
                       "there was empty (NaN or -inf logits: the model's activations overflow float32?)",
                       s->position + r->n_accepted, r->next_token, t->cfg->vocab_size);
    out->acc.target_positions += s->tree.n;
    int burst[ACCEPT_MAX_PATH + 1], n_burst = 0;
    for (int i = 1; i <= r->n_accepted; i++) burst[n_burst++] = s->tree.token[r->path[i]];
    burst[n_burst++] = r->next_token;
    for (int i = 0; i < n_burst; i++)
        if (opt->stop_at_eos && config_is_eos(t->cfg, burst[i])) {
            n_burst = i + 1; /* EOS is emitted, nothing after it */
            s->done = 1;
        }
    if (t->commit(t, s->seq, r->path[r->n_accepted], err)) return -1;
    accounting_round(&out->acc, tree_max_depth(&s->tree), r->n_accepted, n_burst, !r->bonus);
    for (int i = 0; i < n_burst; i++) append(out, &s->out_cap, burst[i]);
    if (s->round == 0) out->acc.ttft_s = decode_now_s() - t0;
    if (opt->on_commit) opt->on_commit(burst, n_burst, opt->user);
    s->pending = r->next_token;
    s->position += r->n_accepted + 1;
    s->round++;
    if (!decode_seq_live(s, opt, out)) out->acc.decode_s = decode_now_s() - t0 - out->acc.ttft_s;
    return 0;
}

int decode_run(decode_target *t, proposer *prop, const int *prompt, int n_prompt, const decode_options *opt,
               decode_output *out, sp_error *err) {
    memset(out, 0, sizeof *out);
    if (decode_check(t, prop, prompt, n_prompt, opt, err)) return -1;
    const double t0 = decode_now_s();
    decode_seq s;
    int rc = decode_seq_start(t, prop, prompt, n_prompt, opt, &s, out, err);
    while (!rc && decode_seq_live(&s, opt, out)) {
        const target_job job = {s.seq, &s.tree, s.p, s.hidden};
        if ((rc = decode_propose(&s, prop, opt, out, err))) break;    /* a tree under the pending token, q per node */
        if ((rc = t->verify(t, &job, 1, &opt->sampling, err))) break; /* one pass over every node: p per node */
        if ((rc = decode_accept(&s, opt, err))) break;                /* the accepted path and the token after it */
        if ((rc = decode_commit(t, &s, opt, out, t0, err))) break;    /* that burst, into the sequence and out */
        if (prop) rc = decode_realign(t, &s, prop, err);              /* the proposer follows what was committed */
    }
    if (prop) out->acc.proposer_steps = prop->steps;
    decode_seq_free(&s, t);
    if (rc) decode_output_free(out);
    return rc;
}
