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
    model *m;
    model_state state; /* the target after every committed token but the pending one */
    token_tree tree;
    float *p, *hidden, *scratch; /* [cap, V], [cap, D], [2V] */
    model_state *node_states;    /* [cap] */
    int cap;
    int *path_tokens;   /* [cap] */
    float *path_hidden; /* [cap, D] */
} run_context;

static void context_build(run_context *c, model *m, int cap) {
    memset(c, 0, sizeof *c);
    const int V = m->cfg.vocab_size, D = m->cfg.hidden_size;
    c->m = m;
    c->cap = cap;
    state_build(&c->state, &m->cfg, NULL);
    tree_build(&c->tree, V, cap);
    c->p = sp_xcalloc((size_t)cap * V, sizeof(float), "target distributions");
    c->hidden = sp_xcalloc((size_t)cap * D, sizeof(float), "target hidden states");
    c->scratch = sp_xcalloc((size_t)2 * V, sizeof(float), "acceptance scratch");
    c->node_states = sp_xcalloc((size_t)cap, sizeof(model_state), "node states");
    for (int i = 0; i < cap; i++) state_build(&c->node_states[i], &m->cfg, c->state.pool);
    c->path_tokens = sp_xcalloc((size_t)cap, sizeof(int), "path tokens");
    c->path_hidden = sp_xcalloc((size_t)cap * D, sizeof(float), "path hidden states");
}

static void context_free(run_context *c) {
    for (int i = 0; i < c->cap; i++) state_free(&c->node_states[i]);
    free(c->node_states);
    state_free(&c->state);
    tree_free(&c->tree);
    free(c->p);
    free(c->hidden);
    free(c->scratch);
    free(c->path_tokens);
    free(c->path_hidden);
}

/* Drops the KV blocks every node state holds, so that only the committed
 * state owns blocks between rounds. */
static void release_nodes(run_context *c, int n) {
    for (int i = 0; i < n; i++) state_truncate_kv(&c->node_states[i], 0);
}

static int append(decode_output *out, int *cap, int token) {
    if (out->n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        out->tokens = sp_xrealloc(out->tokens, (size_t)*cap, sizeof(int), "output tokens");
    }
    out->tokens[out->n++] = token;
    return 0;
}

int decode_run(model *target, proposer *prop, const char *method, int k, const int *prompt, int n_prompt,
               const decode_options *opt, decode_output *out, sp_error *err) {
    const model_config *cfg = &target->cfg;
    const int V = cfg->vocab_size, D = cfg->hidden_size;
    memset(out, 0, sizeof *out);
    if (n_prompt < 1) return sp_fail(err, "the prompt needs at least one token");
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= V)
            return sp_fail(err, "prompt token %d at position %d is outside the vocabulary [0, %d)", prompt[i], i, V);
    if (sampler_validate(&opt->sampling, err)) return -1;
    if (opt->max_tokens < 1) return sp_fail(err, "max_tokens must be at least 1");

    const int cap = prop ? prop->tree_capacity + 1 : 1;
    run_context c;
    context_build(&c, target, cap);
    accounting_init(&out->acc, method, k, target->weight_bytes_per_step, prop ? prop->bytes_per_step : 0);
    int out_cap = 0, rc = 0;
    const double t0 = now_s();

    /* The prompt minus its last token goes straight into the target; the
     * last one becomes the first root, so the prompt's final position is
     * computed by the first round's pass like any other root. */
    float *prompt_hidden = sp_xcalloc((size_t)n_prompt * D, sizeof(float), "prompt hidden states");
    for (int i = 0; i + 1 < n_prompt; i++)
        model_forward(target, &c.state, prompt[i], NULL, prompt_hidden + (size_t)i * D);
    out->acc.target_positions += n_prompt - 1;
    if (prop) prop->commit(prop, prompt, prompt_hidden, n_prompt - 1, prompt[n_prompt - 1]);
    free(prompt_hidden);

    int pending = prompt[n_prompt - 1], position = n_prompt - 1, done = 0;
    for (uint64_t round = 0; !done && out->n < opt->max_tokens; round++) {
        const int remaining = opt->max_tokens - out->n;
        tree_reset(&c.tree, pending, prop ? prop->kind : CHILDREN_IID);
        if (prop && remaining > 1 && prop->propose(prop, &c.tree, position, remaining - 1, round, err)) {
            rc = -1;
            break;
        }
        verify_tree(target, &c.state, &c.tree, &opt->sampling, c.p, c.hidden, c.node_states);
        out->acc.target_positions += c.tree.n;

        accept_result r;
        accept_site site = {opt->seed, round, position};
        if (opt->custom_accept) {
            if (opt->custom_accept(opt->accept_user, &c.tree, c.p, site, c.scratch, &r, err)) {
                rc = -1;
                break;
            }
        } else if (opt->rule == RULE_GREEDY) {
            accept_greedy(&c.tree, c.p, &r);
        } else if (opt->rule == RULE_TYPICAL) {
            accept_typical(&c.tree, c.p, opt->typical_epsilon, opt->typical_delta, site, &r);
        } else if (accept_exact(&c.tree, c.p, site, c.scratch, &r, err)) {
            rc = -1;
            break;
        }

        /* the burst: the accepted tokens, then the correction or bonus */
        int burst[ACCEPT_MAX_PATH + 1], n_burst = 0;
        for (int i = 1; i <= r.n_accepted; i++) burst[n_burst++] = c.tree.token[r.path[i]];
        burst[n_burst++] = r.next_token;
        for (int i = 0; i < n_burst; i++)
            if (opt->stop_at_eos && config_is_eos(cfg, burst[i])) {
                n_burst = i + 1; /* EOS is emitted, nothing after it */
                done = 1;
            }
        const int last = r.path[r.n_accepted];
        state_fork(&c.state, &c.node_states[last]);
        release_nodes(&c, c.tree.n);
        accounting_round(&out->acc, tree_max_depth(&c.tree), r.n_accepted, n_burst, !r.bonus);

        for (int i = 0; i < n_burst; i++) append(out, &out_cap, burst[i]);
        if (round == 0) out->acc.ttft_s = now_s() - t0;
        if (opt->on_commit) opt->on_commit(burst, n_burst, opt->user);

        if (prop) {
            for (int i = 0; i <= r.n_accepted; i++) {
                c.path_tokens[i] = c.tree.token[r.path[i]];
                memcpy(c.path_hidden + (size_t)i * D, c.hidden + (size_t)r.path[i] * D, (size_t)D * sizeof(float));
            }
            prop->commit(prop, c.path_tokens, c.path_hidden, r.n_accepted + 1, r.next_token);
        }
        pending = r.next_token;
        position += r.n_accepted + 1;
    }
    out->acc.decode_s = now_s() - t0 - out->acc.ttft_s;
    if (prop) out->acc.proposer_steps = prop->steps;
    context_free(&c);
    if (rc) decode_output_free(out);
    return rc;
}
