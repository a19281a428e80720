/* bigram_method.c — the context's own bigram counts as a proposer, and its descriptor: after token a the next
 * draft is drawn from the tokens that followed a so far, in proportion to how often; a token never seen followed
 * ends the chain. No model. The same method ships as the example plug-in (examples/bigram), and the tests hold the
 * two to the same tokens, which is how this file shows that a built-in method is one file and one registry row. */
#include <stdlib.h>
#include <string.h>

#include "accept.h"
#include "parse.h"
#include "registry.h"

typedef struct {
    int token, count;
} successor;

typedef struct {
    successor *next; /* the tokens seen after this one, and how often */
    int n, cap;
} successors;

typedef struct {
    int V, k, min_count, greedy;
    successors *after; /* [V] */
    int last;          /* the last committed token (−1 before any) */
} bigram;

static void count(bigram *b, int a, int next) {
    successors *s = &b->after[a];
    for (int i = 0; i < s->n; i++)
        if (s->next[i].token == next) {
            s->next[i].count++;
            return;
        }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4;
        s->next = sp_xrealloc(s->next, (size_t)s->cap, sizeof *s->next, "bigram successors");
    }
    s->next[s->n++] = (successor){next, 1};
}

/* The q row after token a: its successors seen at least min_count times in proportion to their counts, or a point
 * mass at the most frequent (first seen on ties) when greedy. 0 when there is none. */
static int successor_row(const bigram *b, int a, float *q) {
    const successors *s = &b->after[a];
    long total = 0;
    int best = -1;
    for (int i = 0; i < s->n; i++) {
        if (s->next[i].count < b->min_count) continue;
        total += s->next[i].count;
        if (best < 0 || s->next[i].count > s->next[best].count) best = i;
    }
    if (!total) return 0;
    memset(q, 0, (size_t)b->V * sizeof *q);
    if (b->greedy) {
        q[s->next[best].token] = 1.0f;
        return 1;
    }
    for (int i = 0; i < s->n; i++)
        if (s->next[i].count >= b->min_count) q[s->next[i].token] = (float)s->next[i].count / (float)total;
    return 1;
}

/* A chain from the root, each draft drawn at the proposer's site for child 0 at its depth. */
static int bigram_propose(proposer *self, token_tree *tree, const propose_call *call, sp_error *err) {
    bigram *b = self->impl;
    self->steps++;
    const int max_depth = b->k < call->max_depth ? b->k : call->max_depth;
    for (int depth = 1, node = 0, token = tree->token[0]; depth <= max_depth; depth++) {
        float *q = tree_q(tree, node);
        if (!successor_row(b, token, q)) break;
        const rng_site site = {call->seed, RNG_DRAFT, accept_draw_index(call->round, call->root_position + depth, 0)};
        const int next = sampler_sample(q, b->V, site);
        if (next < 0) break;
        if ((node = tree_add(tree, node, next)) < 0)
            return sp_fail(err, "bigram proposal: tree capacity %d exceeded", tree->cap);
        token = next;
    }
    return 0;
}

static int bigram_commit(proposer *self, const int *path, const float *hidden, int len, int next_token, sp_error *err) {
    bigram *b = self->impl;
    (void)hidden, (void)next_token, (void)err; /* next_token is counted once committed: the next path's first */
    for (int i = 0; i < len; i++) {
        if (b->last >= 0) count(b, b->last, path[i]);
        b->last = path[i];
    }
    return 0;
}

static void bigram_release(proposer *self) {
    bigram *b = self->impl;
    for (int a = 0; a < b->V; a++) free(b->after[a].next);
    free(b->after);
    free(b);
    self->impl = NULL;
}

/* Its flags' settings, in the spec's room for a method's own (0 when not given). */
enum { OWN_MIN, OWN_GREEDY };

static int bigram_method_build(proposer *p, method_spec *s, const method_parts *parts, sp_error *err) {
    (void)err;
    bigram *b = sp_xcalloc(1, sizeof *b, "bigram proposer");
    b->V = parts->target->cfg->vocab_size;
    b->k = s->k;
    b->min_count = s->own[OWN_MIN] ? s->own[OWN_MIN] : 1;
    b->greedy = s->own[OWN_GREEDY];
    b->last = -1;
    b->after = sp_xcalloc((size_t)b->V, sizeof *b->after, "bigram successors");
    memset(p, 0, sizeof *p);
    p->name = "bigram";
    p->depth = s->k;
    p->tree_capacity = s->k;
    p->kind = CHILDREN_IID;
    p->propose = bigram_propose;
    p->commit = bigram_commit;
    p->release = bigram_release;
    p->impl = b;
    return 0;
}

static int set_min(method_spec *s, const char *f, const char *v, sp_error *err) {
    return parse_int(f, v, 1, 1 << 30, &s->own[OWN_MIN], err);
}

static int set_greedy(method_spec *s, const char *f, const char *v, sp_error *err) {
    (void)f, (void)v, (void)err;
    s->own[OWN_GREEDY] = 1;
    return 0;
}

static const method_flag bigram_flags[] = {
    {"--bigram-min", "N", "bigram: successors seen fewer than N times are not drafted (default 1)", set_min},
    {"--bigram-greedy", NULL, "bigram: draft the most frequent successor, q a point mass", set_greedy},
    {NULL, NULL, NULL, NULL},
};

static void bigram_method_label(const method_spec *s, char *buf, size_t size) {
    snprintf(buf, size, "bigram k=%d, min %d%s", s->k, s->own[OWN_MIN] ? s->own[OWN_MIN] : 1,
             s->own[OWN_GREEDY] ? ", greedy drafts" : "");
}

const method_desc bigram_method = {
    .name = "bigram",
    .summary = "the context's own bigram counts draft a chain: no model, wins where the text repeats",
    .traits = METHOD_PROPOSES | METHOD_CHAIN | METHOD_MAY_IDLE | METHOD_SAMPLED_DRAFTS,
    .flags = bigram_flags,
    .build = bigram_method_build,
    .label = bigram_method_label,
};
