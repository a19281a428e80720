/* stats.c — the tests, corrections and total-variation bound of stats.h, with p-values from GSL's chi-square
 * survival function. Every test assumes i.i.d. draws. Power and sample sizes are in stats_power.c. */
#include "stats.h"

#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>

/* A reference distribution must sum to 1 within this: loose enough for
 * probabilities rounded to float and multiplied along a sequence of tokens
 * (≈ 1e-7 per factor), tight enough to catch an unnormalised vector. */
#define STATS_SUM_TOL 1e-4

typedef struct {
    double key;
    int index;
} keyed;

static int keyed_ascending(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static int keyed_descending(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* ---- input checks --------------------------------------------------------- */

static int check_probs(const double *probs, int K, const char *what, double *sum, sp_error *err) {
    double s = 0.0;
    for (int i = 0; i < K; i++) {
        if (!isfinite(probs[i]) || probs[i] < 0.0)
            return sp_fail(err, "stats: %s[%d] must be a finite probability >= 0, got %g", what, i, probs[i]);
        s += probs[i];
    }
    if (fabs(s - 1.0) > STATS_SUM_TOL)
        return sp_fail(err, "stats: %s must sum to 1 (within %g), sums to %.9g", what, STATS_SUM_TOL, s);
    *sum = s;
    return 0;
}

static int check_counts(const int64_t *c, int K, const char *what, int64_t *total, sp_error *err) {
    int64_t n = 0;
    for (int i = 0; i < K; i++) {
        if (c[i] < 0) return sp_fail(err, "stats: %s[%d] is a negative count (%lld)", what, i, (long long)c[i]);
        n += c[i];
    }
    if (n == 0) return sp_fail(err, "stats: %s is empty (all %d counts are 0)", what, K);
    *total = n;
    return 0;
}

/* ---- pooling --------------------------------------------------------------- */

int stats_pool_cells(const double *expected, int K, double min_expected, int *group) {
    keyed *order = sp_xcalloc((size_t)K, sizeof *order, "stats pooling order[K]");
    int n_pos = 0;
    for (int i = 0; i < K; i++)
        if (expected[i] > 0.0) order[n_pos].key = expected[i], order[n_pos++].index = i;
    qsort(order, (size_t)n_pos, sizeof *order, keyed_ascending);
    int rest = 0; /* order[0 .. rest) form the rest cell */
    double rest_e = 0.0;
    while (rest < n_pos && order[rest].key < min_expected) rest_e += order[rest++].key;
    while (rest > 0 && rest < n_pos && rest_e < min_expected) rest_e += order[rest++].key;
    for (int i = 0; i < K; i++) group[i] = -1;
    for (int r = 0; r < rest; r++) group[order[r].index] = -2; /* marked: in the rest cell */
    int g = 0;
    for (int i = 0; i < K; i++)
        if (expected[i] > 0.0 && group[i] == -1) group[i] = g++;
    if (rest > 0) {
        for (int i = 0; i < K; i++)
            if (group[i] == -2) group[i] = g;
        g++;
    }
    free(order);
    return g;
}

/* ---- the two tests ---------------------------------------------------------- */

/* (1 + u)·ln(1 + u) − u for u ≥ −1: a G cell over its 2E, u = (O − E)/E. Near u = 0 the two terms agree to
 * nearly every digit, so there the series Σ_{k≥2} (−1)^k u^k / (k(k − 1)) = u²/2 − u³/6 + u⁴/12 − … is summed
 * instead (|u| < 0.1: 40 terms leave less than 10⁻⁴⁰). */
static double xlogx_excess(double u) {
    if (u == -1.0) return 1.0; /* O = 0: 0·ln 0 = 0 */
    if (fabs(u) >= 0.1) return (1.0 + u) * log1p(u) - u;
    double sum = 0.0, power = u * u;
    for (int k = 2; k <= 41; k++, power *= -u) sum += power / ((double)k * (k - 1));
    return sum;
}

/* One cell's share of the statistic. G's cells are 2[O ln(O/E) − (O − E)] = 2E·xlogx_excess((O − E)/E): the
 * added −(O − E) sums to 0 over the cells (Σ O = Σ E), so G is unchanged, but every term is ≥ 0, nothing cancels
 * across cells, and O − E is exact for integer counts, so a cell close to its expectation keeps its digits.
 * O = 0 adds E to X² and 2E to G. */
static double cell_term(double O, double E, stats_method method) {
    if (method == STATS_PEARSON) return (O - E) * (O - E) / E;
    return 2.0 * E * xlogx_excess((O - E) / E);
}

static int check_method(stats_method method, sp_error *err) {
    if (method != STATS_PEARSON && method != STATS_G)
        return sp_fail(err, "stats: unknown method %d (expected STATS_PEARSON or STATS_G)", (int)method);
    return 0;
}

static int too_few_cells(int groups, int64_t n, double min_expected, sp_error *err) {
    return sp_fail(err,
                   "stats: only %d cell(s) left after pooling cells with expected count < %g at n = %lld; "
                   "a test needs 2 (draw more samples)",
                   groups, min_expected, (long long)n);
}

static void finish(stats_result *res, double statistic, int groups) {
    res->statistic = statistic;
    res->df = groups - 1;
    res->cells = groups;
    res->p_value = isinf(statistic) ? 0.0 : gsl_cdf_chisq_Q(statistic, (double)res->df);
}

int stats_gof(const int64_t *counts, const double *probs, int K, stats_method method, double min_expected,
              stats_result *res, sp_error *err) {
    if (!counts || !probs || !res) return sp_fail(err, "stats_gof: NULL argument");
    if (K < 2) return sp_fail(err, "stats_gof: need at least 2 cells, got %d", K);
    double sum;
    int64_t n;
    if (check_method(method, err) || check_probs(probs, K, "probs", &sum, err) ||
        check_counts(counts, K, "counts", &n, err))
        return -1;
    double *expected = sp_xcalloc((size_t)K, sizeof *expected, "stats expected[K]");
    int *group = sp_xcalloc((size_t)K, sizeof *group, "stats group[K]");
    *res = (stats_result){.n = n};
    for (int i = 0; i < K; i++) {
        expected[i] = (double)n * (probs[i] / sum);
        if (probs[i] == 0.0) res->impossible += counts[i];
    }
    int G = stats_pool_cells(expected, K, min_expected, group);
    if (G < 2) {
        free(expected), free(group);
        return too_few_cells(G, n, min_expected, err);
    }
    double *O = sp_xcalloc((size_t)G, sizeof *O, "stats O[G]"), *E = sp_xcalloc((size_t)G, sizeof *E, "stats E[G]");
    int rest_members = 0;
    for (int i = 0; i < K; i++) {
        if (group[i] < 0) continue;
        O[group[i]] += (double)counts[i];
        E[group[i]] += expected[i];
        if (group[i] == G - 1) rest_members++;
    }
    res->pooled = rest_members > 1 ? rest_members : 0; /* a last group of one cell is an ordinary cell */
    double stat = 0.0;
    res->min_expected = INFINITY;
    for (int g = 0; g < G; g++) {
        stat += cell_term(O[g], E[g], method);
        if (E[g] < res->min_expected) res->min_expected = E[g];
    }
    finish(res, res->impossible > 0 ? INFINITY : stat, G);
    free(expected), free(group), free(O), free(E);
    return 0;
}

int stats_homogeneity(const int64_t *a, const int64_t *b, int K, stats_method method, double min_expected,
                      stats_result *res, sp_error *err) {
    if (!a || !b || !res) return sp_fail(err, "stats_homogeneity: NULL argument");
    if (K < 2) return sp_fail(err, "stats_homogeneity: need at least 2 cells, got %d", K);
    int64_t na, nb;
    if (check_method(method, err) || check_counts(a, K, "sample a", &na, err) ||
        check_counts(b, K, "sample b", &nb, err))
        return -1;
    double N = (double)(na + nb), small = (double)(na < nb ? na : nb);
    double *colmin = sp_xcalloc((size_t)K, sizeof *colmin, "stats column expected[K]");
    int *group = sp_xcalloc((size_t)K, sizeof *group, "stats group[K]");
    for (int j = 0; j < K; j++) colmin[j] = small * (double)(a[j] + b[j]) / N;
    int G = stats_pool_cells(colmin, K, min_expected, group);
    *res = (stats_result){.n = na + nb};
    if (G < 2) {
        free(colmin), free(group);
        return too_few_cells(G, na + nb, min_expected, err);
    }
    double *A = sp_xcalloc((size_t)G, sizeof *A, "stats A[G]"), *B = sp_xcalloc((size_t)G, sizeof *B, "stats B[G]");
    int rest_members = 0;
    for (int j = 0; j < K; j++) {
        if (group[j] < 0) continue;
        A[group[j]] += (double)a[j];
        B[group[j]] += (double)b[j];
        if (group[j] == G - 1) rest_members++;
    }
    res->pooled = rest_members > 1 ? rest_members : 0;
    double stat = 0.0;
    res->min_expected = INFINITY;
    for (int g = 0; g < G; g++) {
        double C = A[g] + B[g], Ea = (double)na * C / N, Eb = (double)nb * C / N;
        stat += cell_term(A[g], Ea, method) + cell_term(B[g], Eb, method);
        double e = Ea < Eb ? Ea : Eb;
        if (e < res->min_expected) res->min_expected = e;
    }
    finish(res, stat, G);
    free(colmin), free(group), free(A), free(B);
    return 0;
}

/* ---- multiple testing ------------------------------------------------------- */

void stats_bonferroni(const double *p, int m, double *adjusted) {
    for (int i = 0; i < m; i++) {
        double v = (double)m * p[i];
        adjusted[i] = v < 1.0 ? v : 1.0;
    }
}

void stats_holm(const double *p, int m, double *adjusted) {
    if (m <= 0) return;
    keyed *order = sp_xcalloc((size_t)m, sizeof *order, "stats holm order[m]");
    for (int i = 0; i < m; i++) order[i].key = p[i], order[i].index = i;
    qsort(order, (size_t)m, sizeof *order, keyed_ascending); /* copies p first, so adjusted may alias it */
    double running = 0.0;
    for (int j = 0; j < m; j++) {
        double v = (double)(m - j) * order[j].key;
        if (v > 1.0) v = 1.0;
        if (v > running) running = v; /* step-down: adjusted values never decrease along the order */
        adjusted[order[j].index] = running;
    }
    free(order);
}

/* ---- total-variation upper confidence bound ----------------------------------
 *
 * Deviation of one sample. For n i.i.d. draws from q on C cells with
 * empirical distribution q̂, TV(q̂, q) = max over events A of q̂(A) − q(A).
 * Hoeffding gives P(q̂(A) − q(A) ≥ t) ≤ exp(−2nt²) for each of the 2^C − 2
 * non-trivial events, so by the union bound, with probability ≥ 1 − δ,
 *     |q̂(A) − q(A)| < t(C) = sqrt((ln(2^C − 2) + ln(1/δ)) / (2n))  for every A
 * (A and its complement are both in the family). This is the L1 deviation
 * inequality of Weissman, Ordentlich, Seroussi, Verdú and Weinberger (HP
 * Labs, 2003) in its simplest form. It needs nothing but independence.
 *
 * Coarsening. Keep the c heaviest reference cells as they are and merge the
 * others into a rest cell R. For any two distributions q, p on the K cells,
 *     2·TV(q, p) ≤ ‖q^C − p^C‖₁ + 2·min(q(R), p(R)),
 * because Σ_{i∈R} |q_i − p_i| ≤ q(R) + p(R) = |q(R) − p(R)| + 2 min(q(R), p(R)).
 * Hence, on the event above,
 *     TV(q, p) ≤ TV(q̂^C, p^C) + t(C) + min(p(R), q̂(R) + t(C)).
 * c is chosen to minimise p(R) + t(C) from the reference and n alone, never
 * from the counts, so the event and the bound keep their 1 − δ coverage.
 *
 * Two samples a, b (δ/2 each): on both events,
 *     TV(a, b) ≤ TV(â^C, b̂^C) + t_a + t_b + min(â(R) + t_a, b̂(R) + t_b),
 * with the coarse cells chosen from a reference distribution when one is
 * given, otherwise all K cells kept (no rest). */

/* t(C) above for n draws at confidence 1 − delta; 0 for a single cell. */
static double tv_deviation(int C, int64_t n, double delta) {
    if (C < 2) return 0.0;
    double log_events = C * log(2.0) + log1p(-ldexp(1.0, 1 - C)); /* ln(2^C − 2) without overflow */
    return sqrt((log_events - log(delta)) / (2.0 * (double)n));
}

/* The number of heavy cells c (1 ≤ c ≤ K, in descending order of probs) that
 * minimises rest mass + the sampling terms; order[K] receives that order. */
static int tv_choose_cells(const double *probs, int K, const int64_t *ns, int n_samples, double delta, keyed *order) {
    for (int i = 0; i < K; i++) order[i].key = probs[i], order[i].index = i;
    qsort(order, (size_t)K, sizeof *order, keyed_descending);
    double *rest_mass = sp_xcalloc((size_t)K + 1, sizeof *rest_mass, "stats rest mass[K+1]");
    for (int c = K - 1; c >= 0; c--) rest_mass[c] = rest_mass[c + 1] + order[c].key; /* suffix sums */
    int best_c = K;
    double best = INFINITY;
    for (int c = 1; c <= K; c++) {
        int C = c + (c < K);
        double f = rest_mass[c];
        for (int s = 0; s < n_samples; s++) f += tv_deviation(C, ns[s], delta / n_samples);
        if (f < best) best = f, best_c = c;
    }
    free(rest_mass);
    return best_c;
}

int stats_tv_upper(const int64_t *counts, const double *probs, int K, double delta, stats_tv *tv, sp_error *err) {
    if (!counts || !probs || !tv) return sp_fail(err, "stats_tv_upper: NULL argument");
    if (K < 1) return sp_fail(err, "stats_tv_upper: need at least 1 cell, got %d", K);
    if (!(delta > 0.0 && delta < 1.0)) return sp_fail(err, "stats_tv_upper: delta must be in (0, 1), got %g", delta);
    double sum;
    int64_t n;
    if (check_probs(probs, K, "probs", &sum, err) || check_counts(counts, K, "counts", &n, err)) return -1;
    keyed *order = sp_xcalloc((size_t)K, sizeof *order, "stats tv order[K]");
    int c = tv_choose_cells(probs, K, &n, 1, delta, order);
    int C = c + (c < K);
    double t = tv_deviation(C, n, delta), l1 = 0.0, rest_p = 0.0, rest_q = 0.0;
    for (int r = 0; r < K; r++) {
        int i = order[r].index;
        double q = (double)counts[i] / (double)n, p = probs[i] / sum;
        if (r < c)
            l1 += fabs(q - p);
        else
            rest_p += p, rest_q += q;
    }
    l1 += fabs(rest_q - rest_p);
    double hidden = c < K ? fmin(rest_p, rest_q + t) : 0.0;
    *tv = (stats_tv){.observed = 0.5 * l1, .deviation = t, .tail = hidden, .cells = C, .delta = delta};
    tv->upper = fmin(1.0, tv->observed + t + hidden);
    free(order);
    return 0;
}

int stats_tv_upper_two(const int64_t *a, const int64_t *b, const double *probs, int K, double delta, stats_tv *tv,
                       sp_error *err) {
    if (!a || !b || !tv) return sp_fail(err, "stats_tv_upper_two: NULL argument");
    if (K < 1) return sp_fail(err, "stats_tv_upper_two: need at least 1 cell, got %d", K);
    if (!(delta > 0.0 && delta < 1.0))
        return sp_fail(err, "stats_tv_upper_two: delta must be in (0, 1), got %g", delta);
    int64_t ns[2];
    double sum;
    if (check_counts(a, K, "sample a", &ns[0], err) || check_counts(b, K, "sample b", &ns[1], err) ||
        (probs && check_probs(probs, K, "probs", &sum, err)))
        return -1;
    keyed *order = sp_xcalloc((size_t)K, sizeof *order, "stats tv order[K]");
    int c = K;
    if (probs)
        c = tv_choose_cells(probs, K, ns, 2, delta, order);
    else
        for (int i = 0; i < K; i++) order[i].index = i;
    int C = c + (c < K);
    double ta = tv_deviation(C, ns[0], delta / 2), tb = tv_deviation(C, ns[1], delta / 2);
    double l1 = 0.0, rest_a = 0.0, rest_b = 0.0;
    for (int r = 0; r < K; r++) {
        int i = order[r].index;
        double qa = (double)a[i] / (double)ns[0], qb = (double)b[i] / (double)ns[1];
        if (r < c)
            l1 += fabs(qa - qb);
        else
            rest_a += qa, rest_b += qb;
    }
    l1 += fabs(rest_a - rest_b);
    double hidden = c < K ? fmin(rest_a + ta, rest_b + tb) : 0.0;
    *tv = (stats_tv){.observed = 0.5 * l1, .deviation = ta + tb, .tail = hidden, .cells = C, .delta = delta};
    tv->upper = fmin(1.0, tv->observed + ta + tb + hidden);
    free(order);
    return 0;
}

double stats_clopper_pearson_upper(int64_t x, int64_t n, double delta) {
    if (n <= 0 || x >= n) return 1.0;
    if (x <= 0) return 1.0 - pow(delta, 1.0 / (double)n); /* the Beta(1, n) quantile in closed form */
    return gsl_cdf_beta_Pinv(1.0 - delta, (double)x + 1.0, (double)(n - x));
}
