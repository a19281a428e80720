/* verify_dist.c — draw, count, test (see verify_dist.h). The statistics are
 * those of stats.h: the G-test (or Pearson) with cells pooled to expected
 * counts ≥ STATS_MIN_EXPECTED, and the coarsened TV upper bound. */
#include "verify_dist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "enumerate.h"

/* How often the progress callback hears from a draw loop. */
#define VERIFY_PROGRESS_EVERY 500

verify_options verify_defaults(void) {
    verify_options o;
    memset(&o, 0, sizeof o);
    o.n = 10000;
    o.seed = 1;
    o.method = STATS_G;
    o.alpha = 1e-3;
    o.delta = 1e-3;
    return o;
}

void verify_result_free(verify_result *r) {
    free(r->counts);
    free(r->counts_b);
    r->counts = r->counts_b = NULL;
}

/* splitmix64's finaliser: a bijection that spreads every input bit. */
static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t verify_run_seed(uint64_t seed, int stream, int64_t run) {
    return mix64(mix64(seed ^ 0x9e3779b97f4a7c15ull) + ((uint64_t)(uint32_t)stream << 48) + (uint64_t)run);
}

uint64_t verify_name_seed(const char *name, uint64_t base) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, 64 bits */
    for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = (h ^ *c) * 0x100000001b3ull;
    return mix64(h ^ mix64(base + 0x9e3779b97f4a7c15ull));
}

static int check_sampler(const dist_sampler *s, sp_error *err) {
    if (!s || !s->draw) return sp_fail(err, "verify: the sampler has no draw function");
    if (s->V < 2 || s->L < 1 || enumerate_cells(s->V, s->L) < 0)
        return sp_fail(err, "verify: sampler \"%s\" has V = %d, L = %d: need V ≥ 2, L ≥ 1 and V^L ≤ %d",
                       s->name ? s->name : "?", s->V, s->L, ENUM_MAX_CELLS);
    return 0;
}

int verify_draw(const dist_sampler *s, int64_t n, uint64_t seed, int stream, int64_t *counts, const verify_options *opt,
                sp_error *err) {
    if (check_sampler(s, err)) return -1;
    if (n < 1) return sp_fail(err, "verify: need at least one draw, got n = %lld", (long long)n);
    const int64_t cells = enumerate_cells(s->V, s->L);
    memset(counts, 0, (size_t)cells * sizeof *counts);
    int tokens[ENUM_MAX_LENGTH];
    for (int64_t r = 0; r < n; r++) {
        if (s->draw(s->ctx, verify_run_seed(seed, stream, r), tokens, err))
            return sp_wrap(err, "sampler \"%s\", draw %lld: ", s->name ? s->name : "?", (long long)r);
        for (int j = 0; j < s->L; j++)
            if (tokens[j] < 0 || tokens[j] >= s->V)
                return sp_fail(err, "sampler \"%s\", draw %lld: token %d at position %d is outside [0, %d)",
                               s->name ? s->name : "?", (long long)r, tokens[j], j, s->V);
        counts[enumerate_index(tokens, s->L, s->V)]++;
        if (opt && opt->progress && ((r + 1) % VERIFY_PROGRESS_EVERY == 0 || r + 1 == n))
            opt->progress(opt->progress_user, r + 1, n);
    }
    return 0;
}

static int check_options(const verify_options *opt, sp_error *err) {
    if (opt->n < 1) return sp_fail(err, "verify: need at least one draw, got n = %lld", (long long)opt->n);
    if (!(opt->alpha > 0 && opt->alpha < 1)) return sp_fail(err, "verify: alpha must be in (0, 1), got %g", opt->alpha);
    if (!(opt->delta > 0 && opt->delta < 1)) return sp_fail(err, "verify: delta must be in (0, 1), got %g", opt->delta);
    return 0;
}

static void set_verdict(verify_result *r, const verify_options *opt) {
    r->pass = r->test.p_value >= opt->alpha && (opt->tv_max <= 0 || r->tv.upper <= opt->tv_max);
}

/* A law on one sequence (temperature 0): no chi-square test exists; any
 * draw elsewhere is impossible under it (p = 0), none means p = 1. */
static int point_mass_test(const int64_t *counts, const double *probs, int64_t cells, stats_result *res) {
    int64_t support = -1, n = 0, elsewhere = 0;
    for (int64_t i = 0; i < cells; i++) {
        n += counts[i];
        if (probs[i] > 0) {
            if (support >= 0) return 0; /* more than one sequence: the ordinary test */
            support = i;
        } else {
            elsewhere += counts[i];
        }
    }
    *res = (stats_result){.statistic = elsewhere ? INFINITY : 0.0,
                          .df = 0,
                          .p_value = elsewhere ? 0.0 : 1.0,
                          .cells = 1,
                          .min_expected = (double)n,
                          .n = n,
                          .impossible = elsewhere};
    return 1;
}

int verify_counts_exact(const int64_t *counts, const double *probs, int64_t cells, const verify_options *opt,
                        verify_result *r, sp_error *err) {
    if (check_options(opt, err)) return -1;
    if (!point_mass_test(counts, probs, cells, &r->test) &&
        stats_gof(counts, probs, (int)cells, opt->method, STATS_MIN_EXPECTED, &r->test, err))
        return -1;
    if (stats_tv_upper(counts, probs, (int)cells, opt->delta, &r->tv, err)) return -1;
    r->n = r->test.n;
    r->cells = cells;
    set_verdict(r, opt);
    return 0;
}

int verify_against_exact(const dist_sampler *s, const double *probs, const verify_options *opt, verify_result *r,
                         sp_error *err) {
    memset(r, 0, sizeof *r);
    if (check_sampler(s, err) || check_options(opt, err)) return -1;
    const int64_t cells = enumerate_cells(s->V, s->L);
    r->counts = sp_xcalloc((size_t)cells, sizeof *r->counts, "verify counts");
    if (verify_draw(s, opt->n, opt->seed, 0, r->counts, opt, err) ||
        verify_counts_exact(r->counts, probs, cells, opt, r, err)) {
        verify_result_free(r);
        return -1;
    }
    return 0;
}

int verify_same_distribution(const dist_sampler *a, const dist_sampler *b, const double *ref_probs,
                             const verify_options *opt, verify_result *r, sp_error *err) {
    memset(r, 0, sizeof *r);
    if (check_sampler(a, err) || check_sampler(b, err) || check_options(opt, err)) return -1;
    if (a->V != b->V || a->L != b->L)
        return sp_fail(err, "verify: samplers \"%s\" (V %d, L %d) and \"%s\" (V %d, L %d) emit different cells",
                       a->name ? a->name : "?", a->V, a->L, b->name ? b->name : "?", b->V, b->L);
    const int64_t cells = enumerate_cells(a->V, a->L);
    r->counts = sp_xcalloc((size_t)cells, sizeof *r->counts, "verify counts A");
    r->counts_b = sp_xcalloc((size_t)cells, sizeof *r->counts_b, "verify counts B");
    if (verify_draw(a, opt->n, opt->seed, 0, r->counts, opt, err) ||
        verify_draw(b, opt->n, opt->seed, 1, r->counts_b, opt, err) ||
        stats_homogeneity(r->counts, r->counts_b, (int)cells, opt->method, STATS_MIN_EXPECTED, &r->test, err) ||
        stats_tv_upper_two(r->counts, r->counts_b, ref_probs, (int)cells, opt->delta, &r->tv, err)) {
        verify_result_free(r);
        return -1;
    }
    r->n = opt->n;
    r->cells = cells;
    set_verdict(r, opt);
    return 0;
}
