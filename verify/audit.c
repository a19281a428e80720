/* audit.c — the audit's two test families (audit.h): on against off, and the control against off, each
 * Holm-corrected on its own. The verdict needs both. Only samples and PIT counts come in. */
#include "audit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

audit_options audit_defaults(void) { return (audit_options){.alpha = 1e-3, .delta = 1e-3}; }

const char *audit_verdict_name(audit_verdict v) {
    switch (v) {
    case AUDIT_PASSED: return "passed";
    case AUDIT_FAILED: return "FAILED";
    case AUDIT_UNDERPOWERED: return "underpowered";
    case AUDIT_UNTESTED: return "untested";
    }
    return "?";
}

void audit_pit_init(audit_pit *p, int L) {
    p->L = L;
    p->bins = sp_xcalloc((size_t)L * AUDIT_PIT_BINS, sizeof *p->bins, "audit PIT bins[L, B]");
    p->impossible = sp_xcalloc((size_t)L, sizeof *p->impossible, "audit PIT impossible[L]");
    p->draws = 0;
}

void audit_pit_free(audit_pit *p) {
    free(p->bins);
    free(p->impossible);
    memset(p, 0, sizeof *p);
}

void audit_report_free(audit_report *r) {
    free(r->tests);
    free(r->control);
    memset(r, 0, sizeof *r);
}

/* Whether the 2×K homogeneity test has a degree of freedom after pooling
 * (the same rule stats_homogeneity applies): a position where both arms
 * drew almost always the same token has nothing to compare. */
static int two_sample_testable(const int64_t *a, const int64_t *b, int K) {
    int64_t na = 0, nb = 0;
    for (int j = 0; j < K; j++) na += a[j], nb += b[j];
    if (na == 0 || nb == 0) return 0;
    double N = (double)(na + nb), small = (double)(na < nb ? na : nb);
    double *e = sp_xcalloc((size_t)K, sizeof *e, "audit expected[K]");
    int *group = sp_xcalloc((size_t)K, sizeof *group, "audit group[K]");
    for (int j = 0; j < K; j++) e[j] = small * (double)(a[j] + b[j]) / N;
    int G = stats_pool_cells(e, K, STATS_MIN_EXPECTED, group);
    free(e), free(group);
    return G >= 2;
}

/* counts[V] of the token at position t. */
static void position_counts(const audit_samples *s, int t, int V, int64_t *counts) {
    memset(counts, 0, (size_t)V * sizeof *counts);
    for (int i = 0; i < s->n; i++) counts[s->tokens[(size_t)i * (size_t)s->L + (size_t)t]]++;
}

/* ---- whole sequences as cells ------------------------------------------------ */

typedef struct {
    const int *row;
    int arm; /* 0 on, 1 off, 2 control */
} seq_ref;

static int seq_len_for_sort; /* qsort has no context argument in C11 */

static int seq_cmp(const void *x, const void *y) {
    const seq_ref *a = x, *b = y;
    return memcmp(a->row, b->row, (size_t)seq_len_for_sort * sizeof(int));
}

/* Numbers the distinct sequences of the three arms (sorted order) and
 * counts each arm's draws of each: counts[3][K] (malloc'ed), returns K. */
static int sequence_counts(const audit_samples *arms[3], int64_t *counts[3]) {
    int L = arms[0]->L, total = 0;
    for (int a = 0; a < 3; a++) total += arms[a]->n;
    seq_ref *refs = sp_xcalloc((size_t)total, sizeof *refs, "audit sequences");
    int m = 0;
    for (int a = 0; a < 3; a++)
        for (int i = 0; i < arms[a]->n; i++) refs[m++] = (seq_ref){arms[a]->tokens + (size_t)i * (size_t)L, a};
    seq_len_for_sort = L;
    qsort(refs, (size_t)total, sizeof *refs, seq_cmp);
    for (int a = 0; a < 3; a++) counts[a] = sp_xcalloc((size_t)total, sizeof *counts[a], "audit sequence counts");
    int K = 0;
    for (int i = 0; i < total; i++) {
        if (i > 0 && memcmp(refs[i].row, refs[i - 1].row, (size_t)L * sizeof(int))) K++;
        counts[refs[i].arm][K]++;
    }
    free(refs);
    return total ? K + 1 : 0;
}

/* ---- one family ---------------------------------------------------------------- */

/* The reference distribution that picks the TV bound's coarse cells: the
 * control's frequencies, drawn independently of the arms being bounded. */
static void frequencies(const int64_t *counts, int K, double *probs) {
    int64_t n = 0;
    for (int j = 0; j < K; j++) n += counts[j];
    for (int j = 0; j < K; j++) probs[j] = n ? (double)counts[j] / (double)n : 1.0 / K;
}

static int add_two_sample(audit_test *tests, int *m, audit_test_kind kind, int position, const int64_t *a,
                          const int64_t *b, const int64_t *tv_ref, int K, double tv_delta, sp_error *err) {
    if (K < 2 || !two_sample_testable(a, b, K)) return 0;
    audit_test *x = &tests[*m];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->position = position;
    if (stats_homogeneity(a, b, K, STATS_G, STATS_MIN_EXPECTED, &x->test, err)) return -1;
    if (tv_ref) {
        double *probs = sp_xcalloc((size_t)K, sizeof *probs, "audit tv reference");
        frequencies(tv_ref, K, probs);
        int rc = stats_tv_upper_two(a, b, probs, K, tv_delta, &x->tv, err);
        free(probs);
        if (rc) return -1;
        x->has_tv = 1;
    }
    (*m)++;
    return 0;
}

/* The goodness of fit of one arm's transforms at `position` (−1: pooled
 * over every position) to the uniform law; a token the law forbids is a
 * cell of probability 0, which makes G infinite. Skipped when the uniform
 * expected counts are too small to leave two cells after pooling. */
static int add_law(audit_test *tests, int *m, const audit_pit *pit, int position, const char *arm, sp_error *err) {
    int64_t counts[AUDIT_PIT_BINS + 1] = {0}, n = 0;
    double probs[AUDIT_PIT_BINS + 1];
    for (int t = 0; t < pit->L; t++) {
        if (position >= 0 && t != position) continue;
        for (int j = 0; j < AUDIT_PIT_BINS; j++) counts[j] += pit->bins[(size_t)t * AUDIT_PIT_BINS + (size_t)j];
        counts[AUDIT_PIT_BINS] += pit->impossible[t];
    }
    for (int j = 0; j <= AUDIT_PIT_BINS; j++) n += counts[j];
    /* at exactly the minimum, stats_gof's renormalised probabilities can
     * round the expected counts below it: ask for more */
    const int too_few = (double)n / AUDIT_PIT_BINS <= STATS_MIN_EXPECTED;
    if (too_few && counts[AUDIT_PIT_BINS] == 0) return 0;
    for (int j = 0; j < AUDIT_PIT_BINS; j++) probs[j] = 1.0 / AUDIT_PIT_BINS;
    probs[AUDIT_PIT_BINS] = 0.0;
    audit_test *x = &tests[*m];
    memset(x, 0, sizeof *x);
    x->kind = AUDIT_TEST_LAW;
    x->position = position;
    x->arm = arm;
    if (too_few) {
        /* too few draws for a chi-square test, but a forbidden token is
         * proof enough */
        x->test = (stats_result){.statistic = INFINITY, .p_value = 0.0, .n = n, .impossible = counts[AUDIT_PIT_BINS]};
    } else if (stats_gof(counts, probs, AUDIT_PIT_BINS + 1, STATS_G, STATS_MIN_EXPECTED, &x->test, err)) {
        return -1;
    }
    (*m)++;
    return 0;
}

static void holm(audit_test *tests, int m) {
    if (m == 0) return;
    double *p = sp_xcalloc((size_t)m, sizeof *p, "audit p-values");
    for (int i = 0; i < m; i++) p[i] = tests[i].test.p_value;
    stats_holm(p, m, p);
    for (int i = 0; i < m; i++) tests[i].p_holm = p[i];
    free(p);
}

/* The tests of `a` against off: a position test per position, the sequence
 * test, and the law tests of the arms in pits (NULL-terminated names). */
static int family(const audit_samples *a, const audit_samples *off, const audit_samples *tv_source, int V,
                  int64_t *seq_a, int64_t *seq_off, int64_t *seq_tv, int K, const audit_pit *const *pits,
                  const char *const *pit_arms, double tv_delta, audit_test **out, int *n_out, sp_error *err) {
    int L = a->L, cap = L + 1 + 2 * (L + 1), m = 0;
    audit_test *tests = sp_xcalloc((size_t)cap, sizeof *tests, "audit tests");
    int64_t *ca = sp_xcalloc((size_t)V, sizeof *ca, "audit counts"), *cb = sp_xcalloc((size_t)V, sizeof *cb, "counts"),
            *cr = tv_source ? sp_xcalloc((size_t)V, sizeof *cr, "audit counts") : NULL;
    int rc = 0;
    for (int t = 0; t < L && !rc; t++) {
        position_counts(a, t, V, ca);
        position_counts(off, t, V, cb);
        if (cr) position_counts(tv_source, t, V, cr);
        rc = add_two_sample(tests, &m, AUDIT_TEST_POSITION, t, ca, cb, cr, V, tv_delta, err);
    }
    if (!rc) rc = add_two_sample(tests, &m, AUDIT_TEST_SEQUENCE, -1, seq_a, seq_off, seq_tv, K, tv_delta, err);
    for (int i = 0; pits && pits[i] && !rc; i++)
        for (int t = -1; t < L && !rc; t++) rc = add_law(tests, &m, pits[i], t, pit_arms[i], err);
    free(ca), free(cb), free(cr);
    if (rc) {
        free(tests);
        return -1;
    }
    holm(tests, m);
    *out = tests;
    *n_out = m;
    return 0;
}

int audit_drafting_enough(const audit_drafting *d) {
    return d->drafted_rounds >= AUDIT_MIN_DRAFTED_ROUNDS &&
           (double)d->drafted_rounds >= AUDIT_MIN_DRAFTED_SHARE * (double)d->rounds;
}

/* The smallest TV shift of one position's law its two-sample test (df degrees of freedom, n samples an arm) finds
 * with probability AUDIT_POWER at level `level`: every law at TV >= t has Cohen's w >= 2t, so the planner's size at
 * w = 2t (stats_n_two) says which t the audit's n reaches. */
static double detectable_tv(int df, double level, int n) {
    double lo = 1e-4, hi = 0.5; /* in TV; bisection on the planner's monotone size */
    int64_t need;
    sp_error err;
    if (df < 1 || stats_n_two(df, level, AUDIT_POWER, 2 * hi, &need, &err) || need > n) return NAN;
    for (int i = 0; i < 40; i++) {
        const double mid = 0.5 * (lo + hi);
        if (!stats_n_two(df, level, AUDIT_POWER, 2 * mid, &need, &err) && need <= n)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

int audit_run(const audit_samples *on, const audit_samples *off, const audit_samples *control, int V,
              const audit_pit *pit_on, const audit_pit *pit_off, const audit_pit *pit_control, const audit_options *opt,
              audit_report *r, sp_error *err) {
    memset(r, 0, sizeof *r);
    if (V < 2) return sp_fail(err, "audit: the vocabulary must have at least 2 tokens, got %d", V);
    if (on->L != off->L || on->L != control->L)
        return sp_fail(err, "audit: the arms' lengths differ (on %d, off %d, control %d)", on->L, off->L, control->L);
    if (on->n != off->n || on->n != control->n)
        return sp_fail(err, "audit: the arms must have the same number of samples (on %d, off %d, control %d)", on->n,
                       off->n, control->n);
    if (on->n < 1) return sp_fail(err, "audit: no samples");
    if ((pit_on != NULL) != (pit_off != NULL) || (pit_on != NULL) != (pit_control != NULL))
        return sp_fail(err, "audit: the law's transforms are needed for all three arms or none");
    r->n = on->n, r->L = on->L, r->V = V;
    const audit_samples *arms[3] = {on, off, control};
    int64_t *seq[3];
    int K = sequence_counts(arms, seq);
    /* every TV bound of the audit's family holds at once: a union bound over
     * the L positions and the sequence */
    double tv_delta = opt->delta / (on->L + 1);
    const audit_pit *pits[3] = {pit_on, pit_off, NULL};
    const char *pit_arms[2] = {"on", "off"};
    const audit_pit *cpits[2] = {pit_control, NULL};
    const char *cpit_arms[1] = {"control"};
    int rc = family(on, off, control, V, seq[0], seq[1], seq[2], K, pit_on ? pits : NULL, pit_arms, tv_delta, &r->tests,
                    &r->n_tests, err);
    if (!rc)
        rc = family(control, off, NULL, V, seq[2], seq[1], NULL, K, pit_on ? cpits : NULL, cpit_arms, tv_delta,
                    &r->control, &r->n_control, err);
    for (int a = 0; a < 3; a++) free(seq[a]);
    if (rc) {
        audit_report_free(r);
        return -1;
    }
    r->min_p_holm = 1.0;
    r->detectable_tv = NAN;
    for (int i = 0; i < r->n_tests; i++) {
        const audit_test *x = &r->tests[i];
        if (x->p_holm < r->min_p_holm) r->min_p_holm = x->p_holm;
        if (x->has_tv && x->kind == AUDIT_TEST_POSITION && x->tv.upper > r->max_tv) r->max_tv = x->tv.upper;
        if (x->kind == AUDIT_TEST_POSITION) {
            const double t = detectable_tv(x->test.df, opt->alpha / r->n_tests, r->n);
            if (isfinite(t) && !(t >= r->detectable_tv)) r->detectable_tv = t;
        }
    }
    r->control_min_p_holm = 1.0;
    r->control_law_p_holm = pit_on ? 1.0 : -1.0;
    for (int i = 0; i < r->n_control; i++) {
        const audit_test *x = &r->control[i];
        if (x->kind == AUDIT_TEST_LAW) {
            if (x->p_holm < r->control_law_p_holm) r->control_law_p_holm = x->p_holm;
        } else if (x->p_holm < r->control_min_p_holm)
            r->control_min_p_holm = x->p_holm;
    }
    /* the control must be caught by the two-sample tests and, where the law
     * is computed, by the law test too: each part of the audit shows it can
     * see a difference of this size at this n */
    r->control_rejected = r->control_min_p_holm < AUDIT_CONTROL_P &&
                          (r->control_law_p_holm < 0 || r->control_law_p_holm < AUDIT_CONTROL_P);
    if (r->min_p_holm <= opt->alpha)
        r->verdict = AUDIT_FAILED;
    else
        r->verdict = r->control_rejected ? AUDIT_PASSED : AUDIT_UNDERPOWERED;
    return 0;
}
