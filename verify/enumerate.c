/* enumerate.c — exact sequence probabilities by a depth-first walk over
 * every prefix (see enumerate.h). One model state is advanced along the
 * walk; a snapshot taken after each position lets every sibling start from
 * the same state, so the walk costs one forward per prefix. */
#include "enumerate.h"
#include "processed_law.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t enumerate_cells(int V, int L) {
    int64_t c = 1;
    for (int j = 0; j < L; j++) {
        c *= V;
        if (c > ENUM_MAX_CELLS) return -1;
    }
    return c;
}

int64_t enumerate_index(const int *tokens, int L, int V) {
    int64_t index = 0;
    for (int j = 0; j < L; j++) index = index * V + tokens[j];
    return index;
}

void enumerate_tokens(int64_t index, int L, int V, int *tokens) {
    for (int j = L - 1; j >= 0; j--) {
        tokens[j] = (int)(index % V);
        index /= V;
    }
}

/* Ids of all prefixes shorter than len: 1 + V + … + V^(len−1). */
static int64_t prefixes_shorter_than(int len, int V) {
    int64_t total = 0, power = 1;
    for (int j = 0; j < len; j++) {
        total += power;
        power *= V;
    }
    return total;
}

int64_t enumerate_prefix_id(const int *tokens, int len, int V) {
    return prefixes_shorter_than(len, V) + enumerate_index(tokens, len, V);
}

const float *enumerate_cond(const enum_table *t, const int *tokens, int len) {
    return t->cond + (size_t)enumerate_prefix_id(tokens, len, t->V) * t->V;
}

const double *enumerate_raw_logprob(const enum_table *t, const int *tokens, int len) {
    return t->raw_logprob + (size_t)enumerate_prefix_id(tokens, len, t->V) * t->V;
}

void enumerate_free(enum_table *t) {
    free(t->joint);
    free(t->cond);
    free(t->raw_logprob);
    memset(t, 0, sizeof *t);
}

void enumerate_stop_at_eos(enum_table *t, int eos) {
    const int V = t->V;
    int tokens[ENUM_MAX_LENGTH];
    for (int len = 1; len < t->L; len++) {
        const int64_t n = enumerate_cells(V, len);
        for (int64_t s = 0; s < n; s++) {
            enumerate_tokens(s, len, V, tokens);
            int stopped = 0;
            for (int j = 0; j < len; j++) stopped |= tokens[j] == eos;
            if (!stopped) continue;
            float *row = t->cond + (size_t)enumerate_prefix_id(tokens, len, V) * V;
            for (int x = 0; x < V; x++) row[x] = x == eos ? 1.0f : 0.0f;
        }
    }
    for (int64_t i = 0; i < t->cells; i++) {
        enumerate_tokens(i, t->L, V, tokens);
        double prob = 1;
        for (int j = 0; j < t->L && prob > 0; j++) prob *= enumerate_cond(t, tokens, j)[tokens[j]];
        t->joint[i] = prob;
    }
}

/* out[V] = log_softmax(logits) in double, for finite logits (a micro
 * model's); −inf where a logit is −inf. */
static void raw_log_softmax(const float *logits, double *out, int V) {
    double mx = -INFINITY, sum = 0;
    for (int v = 0; v < V; v++)
        if (logits[v] > mx) mx = logits[v];
    for (int v = 0; v < V; v++)
        if (logits[v] > -INFINITY) sum += exp((double)logits[v] - mx);
    const double lse = mx + log(sum);
    for (int v = 0; v < V; v++) out[v] = logits[v] > -INFINITY ? (double)logits[v] - lse : -INFINITY;
}

/* What the walk carries down the recursion. */
typedef struct {
    model *m;
    model_state s;
    state_snapshot *after; /* [L] the state just after the forward at each depth */
    float *logits;         /* [V] */
    const sampler_params *sp;
    enum_table *t;
    int tokens[ENUM_MAX_LENGTH];
} walk;

/* Records the distribution after the prefix tokens[0..depth) from its raw logits: the processed row (not the
 * samplers' code: processed_law.h) and the raw log-probabilities; at the last depth, the cells below it. Returns
 * the processed row. prob: P(prefix). */
static const float *record(enum_table *t, const int *tokens, int depth, const float *logits, const sampler_params *sp,
                           double prob) {
    const int V = t->V;
    const size_t id = (size_t)enumerate_prefix_id(tokens, depth, V);
    float *row = t->cond + id * V;
    processed_law(sp, logits, row, V);
    raw_log_softmax(logits, t->raw_logprob + id * V, V);
    if (depth == t->L - 1) {
        double *cell = t->joint + enumerate_index(tokens, depth, V) * V;
        for (int x = 0; x < V; x++) cell[x] = prob * row[x];
    }
    return row;
}

/* Feeds `token` (the last of the prefix tokens[0..depth), or the prompt's
 * last token at depth 0), records the distribution after the prefix, then
 * visits every extension. prob: P(prefix). */
static void visit(walk *w, int depth, int token, double prob) {
    enum_table *t = w->t;
    const int V = t->V;
    model_forward(w->m, &w->s, token, w->logits, NULL);
    t->forwards++;
    const float *row = record(t, w->tokens, depth, w->logits, w->sp, prob);
    if (depth == t->L - 1) return;
    state_save(&w->s, &w->after[depth]);
    for (int x = 0; x < V; x++) {
        state_restore(&w->s, &w->after[depth]);
        w->tokens[depth] = x;
        visit(w, depth + 1, x, prob * row[x]); /* zero-probability prefixes too: see enum_table.cond */
    }
}

/* The checks and allocations both walks share. */
static int table_start(enum_table *t, int V, const int *prompt, int n_prompt, const sampler_params *sp, int L,
                       sp_error *err) {
    memset(t, 0, sizeof *t);
    if (L < 1 || L > ENUM_MAX_LENGTH)
        return sp_fail(err, "enumeration length L = %d is outside [1, %d]", L, ENUM_MAX_LENGTH);
    const int64_t cells = enumerate_cells(V, L);
    if (cells < 0)
        return sp_fail(err,
                       "enumerating %d tokens over a vocabulary of %d means more than %d sequences: use a "
                       "smaller vocabulary or a shorter length",
                       L, V, ENUM_MAX_CELLS);
    if (n_prompt < 1) return sp_fail(err, "enumeration needs a prompt of at least one token");
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= V)
            return sp_fail(err, "prompt token %d at position %d is outside the vocabulary [0, %d)", prompt[i], i, V);
    if (sampler_validate(sp, err)) return -1;
    t->V = V;
    t->L = L;
    t->cells = cells;
    t->prefixes = prefixes_shorter_than(L, V);
    t->joint = sp_xcalloc((size_t)cells, sizeof(double), "enumerated probabilities");
    t->cond = sp_xcalloc((size_t)t->prefixes * V, sizeof(float), "enumerated conditionals");
    t->raw_logprob = sp_xcalloc((size_t)t->prefixes * V, sizeof(double), "enumerated raw log-probabilities");
    return 0;
}

int enumerate_build(enum_table *t, model *m, const int *prompt, int n_prompt, const sampler_params *sp, int L,
                    sp_error *err) {
    const int V = m->cfg.vocab_size;
    if (table_start(t, V, prompt, n_prompt, sp, L, err)) return -1;
    walk w;
    memset(&w, 0, sizeof w);
    w.m = m;
    w.sp = sp;
    w.t = t;
    w.logits = sp_xcalloc((size_t)V, sizeof(float), "enumeration logits");
    state_build(&w.s, &m->cfg, NULL);
    w.after = sp_xcalloc((size_t)L, sizeof(state_snapshot), "enumeration snapshots");
    for (int d = 0; d < L; d++) snapshot_build(&w.after[d], &w.s);
    for (int i = 0; i + 1 < n_prompt; i++) {
        model_forward(m, &w.s, prompt[i], NULL, NULL);
        t->forwards++;
    }
    visit(&w, 0, prompt[n_prompt - 1], 1.0);

    for (int d = 0; d < L; d++) snapshot_free(&w.after[d]);
    free(w.after);
    state_free(&w.s);
    free(w.logits);
    return 0;
}

/* The walk over a decode_target: a sequence per prefix, forked from its parent's, so every sibling starts from the
 * same state. */
typedef struct {
    decode_target *tg;
    const sampler_params *sp;
    enum_table *t;
    float *logits; /* [L, V]: one row per depth, so a recursion does not overwrite its caller's */
    int tokens[ENUM_MAX_LENGTH];
    sp_error *err;
} target_walk;

static int visit_target(target_walk *w, int parent_seq, int depth, int token, double prob) {
    enum_table *t = w->t;
    const int V = t->V;
    const int seq = w->tg->seq_fork(w->tg, parent_seq, w->err);
    if (seq < 0) return -1;
    float *logits = w->logits + (size_t)depth * V;
    int rc = w->tg->prefill(w->tg, seq, &token, 1, logits, NULL, w->err);
    if (!rc) {
        t->forwards++;
        const float *row = record(t, w->tokens, depth, logits, w->sp, prob);
        for (int x = 0; x < V && depth < t->L - 1 && !rc; x++) {
            w->tokens[depth] = x;
            rc = visit_target(w, seq, depth + 1, x, prob * row[x]);
        }
    }
    w->tg->seq_close(w->tg, seq);
    return rc;
}

int enumerate_build_target(enum_table *t, decode_target *tg, const int *prompt, int n_prompt, const sampler_params *sp,
                           int L, sp_error *err) {
    const int V = tg->cfg->vocab_size;
    if (table_start(t, V, prompt, n_prompt, sp, L, err)) return -1;
    target_walk w = {tg, sp, t, sp_xcalloc((size_t)L * V, sizeof(float), "enumeration logits"), {0}, err};
    int rc = -1;
    const int root = tg->seq_open(tg, err);
    if (root >= 0) {
        rc = tg->prefill(tg, root, prompt, n_prompt - 1, NULL, NULL, err);
        t->forwards += n_prompt - 1;
        if (!rc) rc = visit_target(&w, root, 0, prompt[n_prompt - 1], 1.0);
        tg->seq_close(tg, root);
    }
    free(w.logits);
    if (rc) enumerate_free(t);
    return rc ? -1 : 0;
}
