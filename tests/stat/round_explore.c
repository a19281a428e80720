/* round_explore.c — depth-first exploration of the decode loop's random decisions by re-running it
 * (round_explore.h). The choices made so far are a stack: each run replays them, takes the first outcome of every
 * new decision until the window is observed, and adds its weight to the law; the next run changes the deepest
 * decision that has outcomes left. */
#include "round_explore.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "enumerate.h"
#include "sampler.h"

#define GRID (1 << 23) /* the points of philox_unit's uniform */
#define MAX_BRANCHES 64
#define MAX_DECISIONS 256
#define MAX_EMITTED 256
#define NO_PROBE INT_MAX /* probe_at of a full run: every draw is before it */

typedef enum { DRAW_UNIFORM, DRAW_SAMPLE } draw_kind;

typedef struct {
    draw_kind kind;
    rng_site site;
    int n, branch;           /* outcomes, and the one this run takes */
    int value[MAX_BRANCHES]; /* a uniform: the first grid point of each piece; a race: the token */
    double weight[MAX_BRANCHES];
} decision;

typedef struct {
    explore_run_fn run;
    void *user;
    const explore_window *w;
    decision stack[MAX_DECISIONS];
    int depth;  /* decisions on the stack */
    int cursor; /* draws served in this run */
    /* a probe: the draw at probe_at takes grid point probe_value, nothing after it is recorded */
    int probe_at, probe_value;
    int grew;                            /* decisions pushed by this run start at grew */
    uint64_t hash;                       /* FNV-1a over everything after the probed draw */
    int emitted[MAX_EMITTED], n_emitted; /* by the run in progress */
    int accepted[EXPLORE_MAX_ROUNDS], n_rounds;
    int outcome[MAX_EMITTED], outcome_accepted[EXPLORE_MAX_ROUNDS]; /* the last full run's, kept over its probes */
    int failed;
    sp_error *err;
} explorer;

static float grid_uniform(int m) { return ((float)m + 0.5f) * (1.0f / 8388608.0f); }

static void mix(explorer *e, uint64_t x) {
    for (int i = 0; i < 8; i++) e->hash = (e->hash ^ ((x >> (8 * i)) & 0xff)) * 0x100000001b3ull;
}

static void mix_site(explorer *e, rng_site s) {
    mix(e, s.purpose);
    mix(e, s.index);
}

/* 1 once the window is observed: later draws cannot change it. */
static int settled(const explorer *e) { return e->n_emitted >= e->w->L && e->n_rounds >= e->w->rounds; }

static void fail(explorer *e, const char *what, rng_site s) {
    if (!e->failed)
        sp_fail(e->err, "explore: draw %d (purpose %u, index %llu): %s", e->cursor, s.purpose,
                (unsigned long long)s.index, what);
    e->failed = 1;
}

/* The decision this draw replays, or NULL when it is a new one. */
static decision *replayed(explorer *e, draw_kind kind, rng_site s) {
    if (e->cursor >= e->depth || e->cursor > e->probe_at) return NULL; /* a probe replays up to its draw */
    decision *d = &e->stack[e->cursor];
    if (d->kind != kind || d->site.purpose != s.purpose || d->site.index != s.index)
        fail(e, "the run asked for another draw than the same choices did before", s);
    return d;
}

static float source_uniform(void *user, rng_site s) {
    explorer *e = user;
    const int at = e->cursor;
    decision *d = replayed(e, DRAW_UNIFORM, s);
    int m = 0;
    if (at == e->probe_at) {
        m = e->probe_value;
    } else if (d && at < e->probe_at) {
        m = d->value[d->branch];
    } else if (at > e->probe_at) {
        mix_site(e, s);
    } else if (!settled(e) && e->depth < MAX_DECISIONS) { /* new: its pieces are found after the run */
        d = &e->stack[e->depth++];
        *d = (decision){.kind = DRAW_UNIFORM, .site = s, .n = 0, .branch = 0};
    } else if (!settled(e)) {
        fail(e, "more decisions than the explorer holds", s);
    }
    e->cursor++;
    return grid_uniform(m);
}

static int first_positive(const float *probs, int V) {
    for (int i = 0; i < V; i++)
        if (probs[i] > 0) return i;
    return -1;
}

static int source_sample(void *user, const float *probs, int V, rng_site s) {
    explorer *e = user;
    const int at = e->cursor;
    decision *d = replayed(e, DRAW_SAMPLE, s);
    int token = first_positive(probs, V);
    if (d && at < e->probe_at) {
        token = d->value[d->branch];
    } else if (at > e->probe_at) {
        mix_site(e, s);
        for (int i = 0; i < V; i++) {
            uint32_t bits;
            memcpy(&bits, &probs[i], sizeof bits);
            mix(e, bits);
        }
    } else if (!settled(e) && e->depth < MAX_DECISIONS && V <= MAX_BRANCHES) {
        d = &e->stack[e->depth++];
        *d = (decision){.kind = DRAW_SAMPLE, .site = s, .n = 0, .branch = 0};
        double sum = 0;
        for (int i = 0; i < V; i++) sum += probs[i] > 0 ? probs[i] : 0;
        for (int i = 0; i < V; i++)
            if (probs[i] > 0) d->value[d->n] = i, d->weight[d->n++] = probs[i] / sum;
    } else if (!settled(e)) {
        fail(e, "more decisions or tokens than the explorer holds", s);
    }
    e->cursor++;
    return token;
}

static void on_commit(const int *tokens, int n, void *user) {
    explorer *e = user;
    if (e->n_rounds < EXPLORE_MAX_ROUNDS) e->accepted[e->n_rounds] = n - 1;
    e->n_rounds++;
    for (int i = 0; i < n && e->n_emitted < MAX_EMITTED; i++) e->emitted[e->n_emitted++] = tokens[i];
    if (e->probe_at != NO_PROBE) {
        mix(e, 0xc0ffee);
        for (int i = 0; i < n; i++) mix(e, (uint64_t)tokens[i]);
    }
}

/* One run of the loop; probe_at != NO_PROBE makes it a probe. */
static int run_once(explorer *e, int probe_at, int probe_value) {
    e->cursor = 0;
    e->probe_at = probe_at;
    e->probe_value = probe_value;
    e->hash = 0xcbf29ce484222325ull;
    e->n_emitted = e->n_rounds = 0;
    e->grew = e->depth;
    const rng_source src = {source_uniform, source_sample, e};
    rng_set_source(&src);
    int rc = e->run(e->user, on_commit, e, e->err);
    rng_set_source(NULL);
    if (!rc && e->failed) rc = -1;
    if (!rc && probe_at == NO_PROBE && !settled(e))
        rc = sp_fail(e->err, "explore: the run ended after %d tokens and %d rounds, before the window", e->n_emitted,
                     e->n_rounds);
    return rc;
}

/* What follows the uniform at `at` forced to grid point m. */
static int probe(explorer *e, int at, int m, uint64_t *out, long *runs) {
    (*runs)++;
    const int depth = e->depth;
    if (run_once(e, at, m)) return -1;
    e->depth = depth; /* a probe records nothing */
    *out = e->hash;
    return 0;
}

/* Adds the pieces of [lo, hi] (outcomes a at lo, b at hi) to d, lowest first. */
static int bisect(explorer *e, int at, int lo, int hi, uint64_t a, uint64_t b, long *runs) {
    decision *d = &e->stack[at];
    if (a == b) return 0; /* one piece: the one that holds lo goes on */
    if (hi == lo + 1) {
        if (d->n == MAX_BRANCHES) return sp_fail(e->err, "explore: a uniform with more than %d pieces", MAX_BRANCHES);
        d->value[d->n++] = hi;
        return 0;
    }
    const int mid = lo + (hi - lo) / 2;
    uint64_t c;
    if (probe(e, at, mid, &c, runs)) return -1;
    return bisect(e, at, lo, mid, a, c, runs) || bisect(e, at, mid, hi, c, b, runs);
}

/* The pieces of the new uniform at `at`, weighed by their grid points. */
static int resolve_uniform(explorer *e, int at, long *runs) {
    uint64_t a, b;
    if (probe(e, at, 0, &a, runs) || probe(e, at, GRID - 1, &b, runs)) return -1;
    decision *d = &e->stack[at];
    d->n = 1;
    d->value[0] = 0;
    if (bisect(e, at, 0, GRID - 1, a, b, runs)) return -1;
    for (int i = 0; i < d->n; i++) {
        const int end = i + 1 < d->n ? d->value[i + 1] : GRID;
        d->weight[i] = (double)(end - d->value[i]) / GRID;
    }
    return 0;
}

int64_t explore_accepted_index(const int *n, int rounds, int max_depth) {
    int64_t index = 0;
    for (int r = 0; r < rounds; r++) index = index * (max_depth + 1) + n[r];
    return index;
}

/* Adds the outcome of the run that just ended, with the weight of its choices. */
static int record(explorer *e, explore_law *law) {
    const explore_window *w = e->w;
    double weight = 1;
    for (int i = 0; i < e->depth; i++) weight *= e->stack[i].weight[e->stack[i].branch];
    for (int r = 0; r < w->rounds; r++)
        if (e->outcome_accepted[r] < 0 || e->outcome_accepted[r] > w->max_depth)
            return sp_fail(e->err, "explore: round %d accepted %d drafts, outside 0 … %d", r + 1,
                           e->outcome_accepted[r], w->max_depth);
    law->tokens[enumerate_index(e->outcome, w->L, w->V)] += weight;
    law->accepted[explore_accepted_index(e->outcome_accepted, w->rounds, w->max_depth)] += weight;
    law->leaves++;
    if (w->on_outcome) w->on_outcome(w->outcome_user, weight);
    return 0;
}

int explore_law_compute(explore_run_fn run, void *user, const explore_window *w, explore_law *law, sp_error *err) {
    memset(law, 0, sizeof *law);
    const int64_t cells = enumerate_cells(w->V, w->L);
    if (cells < 0 || w->rounds < 0 || w->rounds > EXPLORE_MAX_ROUNDS || w->max_depth < 0 ||
        w->max_depth > EXPLORE_MAX_DEPTH)
        return sp_fail(err, "explore: V = %d, L = %d, %d rounds of up to %d drafts is outside what it holds", w->V,
                       w->L, w->rounds, w->max_depth);
    law->accepted_cells = 1;
    for (int r = 0; r < w->rounds; r++) law->accepted_cells *= w->max_depth + 1;
    law->tokens = sp_xcalloc((size_t)cells, sizeof(double), "explored token law");
    law->accepted = sp_xcalloc((size_t)law->accepted_cells, sizeof(double), "explored accepted law");
    explorer *e = sp_xcalloc(1, sizeof *e, "explorer");
    e->run = run;
    e->user = user;
    e->w = w;
    e->err = err;
    int rc = 0;
    for (;;) {
        law->runs++;
        if ((rc = run_once(e, NO_PROBE, 0))) break;
        memcpy(e->outcome, e->emitted, sizeof e->outcome);
        memcpy(e->outcome_accepted, e->accepted, sizeof e->outcome_accepted);
        const int grew = e->grew;
        for (int i = grew; i < e->depth && !rc; i++) {
            if (e->stack[i].kind != DRAW_UNIFORM) continue;
            if (w->on_outcome) {
                rc = sp_fail(err,
                             "explore: a run with an outcome observer drew a uniform (purpose %u) before the "
                             "window was observed",
                             e->stack[i].site.purpose);
                break;
            }
            rc = resolve_uniform(e, i, &law->runs);
        }
        if (rc || (rc = record(e, law))) break;
        while (e->depth > 0 && e->stack[e->depth - 1].branch + 1 >= e->stack[e->depth - 1].n) e->depth--;
        if (e->depth == 0) break;
        e->stack[e->depth - 1].branch++;
    }
    free(e);
    double total = 0;
    for (int64_t i = 0; i < cells; i++) total += law->tokens[i];
    if (!rc && fabs(total - 1) > 1e-9) rc = sp_fail(err, "explore: the outcomes weigh %.12f in all, not 1", total);
    if (rc) explore_law_free(law);
    return rc;
}

void explore_law_free(explore_law *law) {
    free(law->tokens);
    free(law->accepted);
    law->tokens = law->accepted = NULL;
}
