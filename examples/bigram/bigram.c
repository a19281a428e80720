/* bigram.c — a proposer plug-in for specula (specula.h): it drafts from the bigram counts of the context itself.
 * After token a the next draft is drawn from the tokens that followed a so far, in proportion to how often; a
 * token never seen followed ends the round's chain. No model, no weights: it pays off on text that repeats.
 * ARGS (plugin:PATH:ARGS, comma-separated): min=N ignores successors seen fewer than N times (default 1);
 * greedy drafts the most frequent successor as a point mass instead of drawing one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "specula.h"

typedef struct {
    int token, count;
} successor;

typedef struct {
    successor *next; /* the tokens seen after this one, and how often */
    int n, cap;
} successors;

typedef struct {
    int V, min_count, greedy;
    successors *after; /* [V] */
    int last;          /* the last committed token (−1 before any) */
} bigram;

static int parse_args(bigram *b, const char *args, char *err, size_t errlen) {
    char buf[256];
    if (strlen(args) >= sizeof buf) return snprintf(err, errlen, "ARGS longer than %zu bytes", sizeof buf - 1), -1;
    snprintf(buf, sizeof buf, "%s", args);
    for (char *save = NULL, *arg = strtok_r(buf, ",", &save); arg; arg = strtok_r(NULL, ",", &save)) {
        char *end;
        if (!strcmp(arg, "greedy")) {
            b->greedy = 1;
        } else if (!strncmp(arg, "min=", 4) && (b->min_count = (int)strtol(arg + 4, &end, 10)) >= 1 && !*end &&
                   end != arg + 4) {
        } else {
            snprintf(err, errlen, "unknown argument '%s' (min=N with N >= 1, greedy)", arg);
            return -1;
        }
    }
    return 0;
}

static void *bigram_create(const specula_config *c, char *err, size_t errlen) {
    bigram *b = calloc(1, sizeof *b);
    if (!b) return snprintf(err, errlen, "out of memory"), NULL;
    b->V = c->vocab_size;
    b->min_count = 1;
    b->last = -1;
    if (parse_args(b, c->args, err, errlen) || !(b->after = calloc((size_t)b->V, sizeof *b->after))) {
        if (!err[0]) snprintf(err, errlen, "out of memory");
        free(b);
        return NULL;
    }
    return b;
}

static int count(bigram *b, int a, int next) {
    successors *s = &b->after[a];
    for (int i = 0; i < s->n; i++)
        if (s->next[i].token == next) return ++s->next[i].count, 0;
    if (s->n == s->cap) {
        const int cap = s->cap ? 2 * s->cap : 4;
        successor *grown = realloc(s->next, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        s->next = grown, s->cap = cap;
    }
    s->next[s->n++] = (successor){next, 1};
    return 0;
}

static int bigram_commit(void *self, const int *path, int len, int next_token, char *err, size_t errlen) {
    bigram *b = self;
    (void)next_token; /* counted once committed: it is the first token of the next path */
    for (int i = 0; i < len; i++) {
        if (b->last >= 0 && count(b, b->last, path[i])) return snprintf(err, errlen, "out of memory"), -1;
        b->last = path[i];
    }
    return 0;
}

/* The q row after token a: its successors seen at least min_count times, in proportion to their counts (or a
 * point mass at the most frequent, first seen on ties). 0 when there is none. */
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

/* A chain from the root: each draft drawn (at the host's site for it) from the successors of the one before. */
static int bigram_propose(void *self, specula_round *r, const specula_host *host, char *err, size_t errlen) {
    const bigram *b = self;
    int node = 0, token = r->root_token;
    for (int depth = 1; depth <= r->max_depth; depth++) {
        float *q = host->q_row(r, node);
        if (!q) return snprintf(err, errlen, "no q row for node %d", node), -1;
        if (!successor_row(b, token, q)) break;
        const int next = host->draw(r, q, depth, 0);
        if (next < 0) break;
        if ((node = host->add(r, node, next)) < 0) break; /* the tree is full */
        token = next;
    }
    return 0;
}

static void bigram_destroy(void *self) {
    bigram *b = self;
    for (int a = 0; a < b->V; a++) free(b->after[a].next);
    free(b->after);
    free(b);
}

static const specula_proposer proposer = {
    SPECULA_PLUGIN_ABI, "bigram", SPECULA_CHILDREN_IID, bigram_create, bigram_propose, bigram_commit, bigram_destroy,
};

const specula_proposer *specula_plugin(void) { return &proposer; }
