/* test_stats.c — the statistics module against GSL's reference values,
 * closed forms, Monte Carlo with fixed seeds, and textbook examples with
 * published answers. Every random draw comes from GSL's MT19937 with a fixed
 * seed, so each run sees the same numbers. */
#include <check.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

#include "harness.h"
#include "stats.h"

/* Published values carry k decimals; half a unit of the last one is the
 * tolerance: the computation must round to the printed number. */
#define ck_published(got, want, half_ulp)                                                                              \
    ck_assert_msg(fabs((got) - (want)) <= (half_ulp), "%s = %.6f, published %.6f (± %g)", #got, (double)(got),         \
                  (double)(want), (double)(half_ulp))

static gsl_rng *fixed_rng(unsigned long seed) {
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    return r;
}

/* n draws from probs[K] into counts[K]. */
static void draw_counts(gsl_rng *r, const double *probs, int K, int64_t n, int64_t *counts) {
    unsigned int c[4096];
    ck_assert_int_le(K, 4096);
    gsl_ran_multinomial(r, (size_t)K, (unsigned int)n, probs, c);
    for (int i = 0; i < K; i++) counts[i] = c[i];
}

static double tv_distance(const double *p, const double *q, int K) {
    double s = 0.0;
    for (int i = 0; i < K; i++) s += fabs(p[i] - q[i]);
    return 0.5 * s;
}

/* ---- agreement with GSL and hand computation ---------------------------------- */

START_TEST(test_pvalue_is_gsl_survival) {
    static const int64_t counts[6] = {30, 52, 41, 18, 33, 26};
    static const double probs[6] = {0.15, 0.25, 0.2, 0.1, 0.17, 0.13};
    for (int m = 0; m < 2; m++) {
        stats_result r;
        sp_error err;
        ck_assert_int_eq(stats_gof(counts, probs, 6, (stats_method)m, STATS_MIN_EXPECTED, &r, &err), 0);
        double want = 0.0;
        for (int i = 0; i < 6; i++) {
            double E = 200.0 * probs[i], O = (double)counts[i];
            want += m == STATS_PEARSON ? (O - E) * (O - E) / E : 2.0 * O * log(O / E);
        }
        /* same formula, same order of summation: agreement to rounding */
        ck_assert_msg(fabs(r.statistic - want) <= 1e-12 * want, "statistic %.15g want %.15g", r.statistic, want);
        ck_assert_int_eq(r.df, 5);
        ck_assert_int_eq(r.cells, 6);
        ck_assert_int_eq(r.pooled, 0);
        ck_assert(r.n == 200);
        ck_assert(r.p_value == gsl_cdf_chisq_Q(r.statistic, 5.0)); /* the p-value is GSL's, bit for bit */
    }
}
END_TEST

/* ---- textbook examples ----------------------------------------------------------- */

START_TEST(test_mendel_peas) {
    /* Mendel's F2 peas: round-yellow 315, round-green 108, wrinkled-yellow
     * 101, wrinkled-green 32 against 9:3:3:1. The classic textbook answer:
     * X² = 0.470, df 3, P = 0.925. */
    static const int64_t counts[4] = {315, 108, 101, 32};
    static const double probs[4] = {9 / 16.0, 3 / 16.0, 3 / 16.0, 1 / 16.0};
    stats_result r;
    sp_error err;
    ck_assert_int_eq(stats_gof(counts, probs, 4, STATS_PEARSON, STATS_MIN_EXPECTED, &r, &err), 0);
    ck_published(r.statistic, 0.470, 5e-4);
    ck_assert_int_eq(r.df, 3);
    ck_published(r.p_value, 0.925, 5e-4);
}
END_TEST

START_TEST(test_crossbills_g) {
    /* McDonald, Handbook of Biological Statistics (3rd ed., 2014), G-test of
     * goodness-of-fit, p. 55: Groth's 1752 right-billed and 1895 left-billed
     * crossbills against 1:1; Mangiafico's R Companion to the Handbook
     * reproduces it as G = 5.6085, df 1, p = 0.01787. The Handbook's
     * chi-square page gives X² = 5.61 for the same counts. */
    static const int64_t counts[2] = {1752, 1895};
    static const double half[2] = {0.5, 0.5};
    stats_result r;
    sp_error err;
    ck_assert_int_eq(stats_gof(counts, half, 2, STATS_G, STATS_MIN_EXPECTED, &r, &err), 0);
    ck_published(r.statistic, 5.6085, 5e-5);
    ck_assert_int_eq(r.df, 1);
    ck_published(r.p_value, 0.01787, 5e-6);
    ck_assert_int_eq(stats_gof(counts, half, 2, STATS_PEARSON, STATS_MIN_EXPECTED, &r, &err), 0);
    ck_published(r.statistic, 5.61, 5e-3);
}
END_TEST

/* 1000 cells of expectation 10⁹ each, every count off by one (alternating, so Σ O = Σ E): G = Σ 2E·f(±10⁻⁹) with
 * f(u) = (1+u)ln(1+u) − u = u²/2 − u³/6 + …, i.e. 1000·10⁻⁹·(1 ∓ 10⁻⁹/3 …) = 1.0·10⁻⁶ to 9 digits. Summed as
 * 2 Σ O ln(O/E), the terms are ±1 each and ln(O/E) is off by an ulp of O/E, about 10⁻⁷ a cell: nothing of the
 * 10⁻⁶ would be left. */
START_TEST(test_g_keeps_its_digits_near_the_expectation) {
    enum { K = 1000 };
    static int64_t counts[K];
    static double probs[K];
    for (int i = 0; i < K; i++) counts[i] = 1000000000 + (i % 2 ? 1 : -1), probs[i] = 1.0 / K;
    stats_result r;
    sp_error err;
    ck_assert_int_eq(stats_gof(counts, probs, K, STATS_G, STATS_MIN_EXPECTED, &r, &err), 0);
    ck_assert_msg(fabs(r.statistic - 1e-6) <= 1e-6 * 1e-8, "G = %.12g, want 1e-06", r.statistic);
    ck_assert_int_eq(stats_gof(counts, probs, K, STATS_PEARSON, STATS_MIN_EXPECTED, &r, &err), 0);
    ck_assert_msg(fabs(r.statistic - 1e-6) <= 1e-6 * 1e-8, "X2 = %.12g, want 1e-06", r.statistic);
}
END_TEST

START_TEST(test_agresti_party_by_gender) {
    /* Agresti, An Introduction to Categorical Data Analysis (2nd ed., 2007),
     * ch. 2, party identification by gender (General Social Survey):
     *   females 762 Democrat, 327 Independent, 468 Republican
     *   males   484,          239,             477
     * X² = 30.1 and G² = 30.0 with df = 2. */
    static const int64_t female[3] = {762, 327, 468}, male[3] = {484, 239, 477};
    stats_result r;
    sp_error err;
    ck_assert_int_eq(stats_homogeneity(female, male, 3, STATS_PEARSON, STATS_MIN_EXPECTED, &r, &err), 0);
    ck_published(r.statistic, 30.1, 0.05);
    ck_assert_int_eq(r.df, 2);
    ck_assert(r.p_value < 1e-6);
    ck_assert_int_eq(stats_homogeneity(female, male, 3, STATS_G, STATS_MIN_EXPECTED, &r, &err), 0);
    ck_published(r.statistic, 30.0, 0.05);
    ck_assert(r.n == 2757);
}
END_TEST

START_TEST(test_mcdonald_independence) {
    /* McDonald, Handbook of Biological Statistics (3rd ed.), chi-square and
     * G-tests of independence, Gardemann et al. (1998) apolipoprotein B
     * genotypes ins/ins, ins/del, del/del:
     *   no disease 268 199 42;  disease 807 759 184
     * X² = 7.26, 2 d.f., P = 0.027;  G = 7.30, 2 d.f., P = 0.026. */
    static const int64_t healthy[3] = {268, 199, 42}, disease[3] = {807, 759, 184};
    stats_result r;
    sp_error err;
    ck_assert_int_eq(stats_homogeneity(healthy, disease, 3, STATS_PEARSON, STATS_MIN_EXPECTED, &r, &err), 0);
    ck_published(r.statistic, 7.26, 5e-3);
    ck_assert_int_eq(r.df, 2);
    ck_published(r.p_value, 0.027, 5e-4);
    ck_assert_int_eq(stats_homogeneity(healthy, disease, 3, STATS_G, STATS_MIN_EXPECTED, &r, &err), 0);
    ck_published(r.statistic, 7.30, 5e-3);
    ck_published(r.p_value, 0.026, 5e-4);
    /* Mangiafico's R Companion, G-test of independence, vaccination example
     * (thigh 4788 no severe reaction / 30 severe; arm 8916 / 76): G = 2.1087,
     * df 1, p = 0.1465. Rows are the two samples here. */
    static const int64_t thigh[2] = {4788, 30}, arm[2] = {8916, 76};
    ck_assert_int_eq(stats_homogeneity(thigh, arm, 2, STATS_G, STATS_MIN_EXPECTED, &r, &err), 0);
    ck_published(r.statistic, 2.1087, 5e-5);
    ck_published(r.p_value, 0.1465, 5e-5);
}
END_TEST

START_TEST(test_holm_known_list) {
    /* The textbook illustration of Holm's procedure (as on Wikipedia's
     * Holm–Bonferroni page): p = 0.01, 0.04, 0.03, 0.005 at α = 0.05; Holm
     * rejects H1 and H4 only. Adjusted by hand: sorted 0.005·4 = 0.02,
     * 0.01·3 = 0.03, 0.03·2 = 0.06, max(0.04·1, 0.06) = 0.06. */
    double p[4] = {0.01, 0.04, 0.03, 0.005}, adj[4];
    static const double want[4] = {0.03, 0.06, 0.06, 0.02};
    stats_holm(p, 4, adj);
    for (int i = 0; i < 4; i++) ck_assert_msg(fabs(adj[i] - want[i]) < 1e-15, "holm[%d] = %g", i, adj[i]);
    int rejected = 0;
    for (int i = 0; i < 4; i++) rejected += adj[i] <= 0.05;
    ck_assert_int_eq(rejected, 2);
    ck_assert(adj[0] <= 0.05 && adj[3] <= 0.05);
    /* Bonferroni: m·p, clipped at 1 */
    stats_bonferroni(p, 4, adj);
    static const double bonf[4] = {0.04, 0.16, 0.12, 0.02};
    for (int i = 0; i < 4; i++) ck_assert_msg(fabs(adj[i] - bonf[i]) < 1e-15, "bonferroni[%d] = %g", i, adj[i]);
    /* clipping at 1, and in place */
    double q[3] = {0.5, 0.6, 0.01};
    stats_holm(q, 3, q);
    ck_assert(fabs(q[2] - 0.03) < 1e-15 && q[0] == 1.0 && q[1] == 1.0);
    double b[2] = {0.7, 0.2};
    stats_bonferroni(b, 2, b);
    ck_assert(b[0] == 1.0 && fabs(b[1] - 0.4) < 1e-15);
}
END_TEST

/* The one-sided Clopper–Pearson bound u is the probability at which x or fewer successes in n trials have
 * probability delta: P(Bin(n, u) ≤ x) = delta. Held to that definition through GSL's binomial CDF, to the closed
 * form at x = 0 (1 − δ^(1/n): 0.0950 for 0 of 30, near the rule of three's 3/n) and to the edge x = n. */
START_TEST(test_clopper_pearson_upper) {
    static const int64_t cases[][2] = {{0, 30}, {1, 10}, {5, 10}, {2, 100}, {27, 32}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int64_t x = cases[i][0], n = cases[i][1];
        const double u = stats_clopper_pearson_upper(x, n, 0.05);
        const double tail = gsl_cdf_binomial_P((unsigned)x, u, (unsigned)n);
        ck_assert_msg(fabs(tail - 0.05) < 1e-9 && u > (double)x / n, "%lld of %lld: bound %g, P(X <= x) = %g",
                      (long long)x, (long long)n, u, tail);
    }
    ck_assert_msg(fabs(stats_clopper_pearson_upper(0, 30, 0.05) - 0.0950) < 5e-5, "0 of 30");
    ck_assert(stats_clopper_pearson_upper(10, 10, 0.05) == 1.0);
    ck_assert(stats_clopper_pearson_upper(0, 0, 0.05) == 1.0);
}
END_TEST

/* ---- pooling ----------------------------------------------------------------- */

START_TEST(test_pool_rule) {
    int g[8];
    /* every cell below 5 joins the rest (0.5 + 1 + 2 = 3.5 < 5), then the
     * smallest remaining (10) joins too; the zero cell is dropped */
    static const double e1[7] = {0.5, 1, 2, 10, 20, 30, 0};
    ck_assert_int_eq(stats_pool_cells(e1, 7, 5.0, g), 3);
    static const int w1[7] = {2, 2, 2, 2, 0, 1, -1};
    for (int i = 0; i < 7; i++) ck_assert_msg(g[i] == w1[i], "cell %d in group %d, want %d", i, g[i], w1[i]);
    /* ties in the expected count: the lower index joins first */
    static const double e2[4] = {4, 6, 6, 10};
    ck_assert_int_eq(stats_pool_cells(e2, 4, 5.0, g), 3);
    static const int w2[4] = {2, 2, 0, 1};
    for (int i = 0; i < 4; i++) ck_assert_msg(g[i] == w2[i], "cell %d in group %d, want %d", i, g[i], w2[i]);
    /* exactly 5 is enough; min_expected 0 pools nothing */
    static const double e3[3] = {5, 5, 100};
    ck_assert_int_eq(stats_pool_cells(e3, 3, 5.0, g), 3);
    static const double e4[3] = {0.1, 0.2, 100};
    ck_assert_int_eq(stats_pool_cells(e4, 3, 0.0, g), 3);
    /* everything rare: one group */
    static const double e5[3] = {1, 1, 1};
    ck_assert_int_eq(stats_pool_cells(e5, 3, 5.0, g), 1);
}
END_TEST

START_TEST(test_gof_pools_and_reports) {
    /* n = 100 over probs with three rare cells (expected 1, 2, 3 → rest 6) */
    static const double probs[5] = {0.5, 0.44, 0.01, 0.02, 0.03};
    static const int64_t counts[5] = {52, 41, 2, 1, 4};
    stats_result r;
    sp_error err;
    ck_assert_int_eq(stats_gof(counts, probs, 5, STATS_PEARSON, STATS_MIN_EXPECTED, &r, &err), 0);
    ck_assert_int_eq(r.cells, 3);
    ck_assert_int_eq(r.pooled, 3);
    ck_assert_int_eq(r.df, 2);
    ck_assert(fabs(r.min_expected - 6.0) < 1e-12);
    double want = (52 - 50.0) * (52 - 50.0) / 50 + (41 - 44.0) * (41 - 44.0) / 44 + (7 - 6.0) * (7 - 6.0) / 6;
    ck_assert(fabs(r.statistic - want) < 1e-12);
    /* unpooled on request (textbook mode) */
    ck_assert_int_eq(stats_gof(counts, probs, 5, STATS_PEARSON, 0.0, &r, &err), 0);
    ck_assert_int_eq(r.cells, 5);
    ck_assert_int_eq(r.pooled, 0);
    /* a count where the null has probability 0 is impossible under it */
    static const double with_zero[3] = {0.5, 0.5, 0.0};
    static const int64_t hit[3] = {50, 49, 1};
    ck_assert_int_eq(stats_gof(hit, with_zero, 3, STATS_G, STATS_MIN_EXPECTED, &r, &err), 0);
    ck_assert(isinf(r.statistic) && r.p_value == 0.0);
    ck_assert(r.impossible == 1);
    ck_assert_int_eq(r.cells, 2); /* the zero cell is not a cell of the test */
    /* homogeneity pools columns on the smaller row's expected counts */
    /* (column totals 195, 188, 6, 5 → the smaller row's expected counts
     * 96.7, 93.3, 2.98, 2.48: the last two pool into 5.46) */
    static const int64_t a[4] = {100, 90, 3, 3}, b[4] = {95, 98, 3, 2};
    ck_assert_int_eq(stats_homogeneity(a, b, 4, STATS_PEARSON, STATS_MIN_EXPECTED, &r, &err), 0);
    ck_assert_int_eq(r.cells, 3);
    ck_assert_int_eq(r.pooled, 2);
    ck_assert(r.min_expected >= 5.0);
}
END_TEST

START_TEST(test_bad_input_errors) {
    stats_result r;
    sp_error err;
    static const int64_t c2[2] = {3, 4}, neg[2] = {3, -1}, zero[2] = {0, 0};
    static const double p2[2] = {0.5, 0.5}, bad_sum[2] = {0.5, 0.6}, nan_p[2] = {NAN, 0.5};
    ck_assert_int_eq(stats_gof(c2, p2, 1, STATS_G, 5, &r, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "at least 2 cells"));
    ck_assert_int_eq(stats_gof(neg, p2, 2, STATS_G, 5, &r, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "counts[1] is a negative count"));
    ck_assert_int_eq(stats_gof(zero, p2, 2, STATS_G, 5, &r, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "empty"));
    ck_assert_int_eq(stats_gof(c2, bad_sum, 2, STATS_G, 5, &r, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "must sum to 1"));
    ck_assert_int_eq(stats_gof(c2, nan_p, 2, STATS_G, 5, &r, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "probs[0]"));
    ck_assert_int_eq(stats_gof(c2, p2, 2, (stats_method)7, 5, &r, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown method 7"));
    /* 7 draws cannot fill two cells of expected 5 */
    ck_assert_int_eq(stats_gof(c2, p2, 2, STATS_PEARSON, 5, &r, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "only 1 cell(s) left after pooling"));
    ck_assert_int_eq(stats_homogeneity(c2, zero, 2, STATS_G, 5, &r, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "sample b is empty"));
    stats_tv tv;
    ck_assert_int_eq(stats_tv_upper(c2, p2, 2, 0.0, &tv, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "delta must be in (0, 1)"));
    int64_t n;
    ck_assert_int_eq(stats_n_gof(0, 0.05, 0.8, 0.3, &n, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "degrees of freedom"));
    ck_assert_int_eq(stats_n_gof(1, 0.05, 1.0, 0.3, &n, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "power must be in (0, 1)"));
    stats_plan plan;
    ck_assert_int_eq(stats_plan_gof(p2, p2, 2, 0.05, 0.8, 5, &plan, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "equals the null"));
}
END_TEST

/* ---- noncentral chi-square and power ------------------------------------------------ */

/* Closed forms (X = |Z + μ·e1|², Z standard normal in k dims, λ = μ²):
 *   k = 1: P(X ≤ x) = Φ(r − μ) − Φ(−r − μ),                 r = √x
 *   k = 3: the same minus (φ(r − μ) − φ(r + μ)) / μ. */
static double ncx2_cdf_closed(int k, double x, double mu) {
    double r = sqrt(x), c = gsl_cdf_ugaussian_P(r - mu) - gsl_cdf_ugaussian_P(-r - mu);
    if (k == 3) c -= (gsl_ran_ugaussian_pdf(r - mu) - gsl_ran_ugaussian_pdf(r + mu)) / mu;
    return c;
}

START_TEST(test_ncx2_closed_forms) {
    static const double mus[] = {0.1, 0.5, 1, 3, 10, 40, 100};
    static const double fracs[] = {0.05, 0.3, 0.8, 1.0, 1.3, 2.0, 4.0};
    for (unsigned a = 0; a < sizeof mus / sizeof *mus; a++)
        for (unsigned b = 0; b < sizeof fracs / sizeof *fracs; b++)
            for (int k = 1; k <= 3; k += 2) {
                double mu = mus[a], x = fracs[b] * (k + mu * mu); /* around the mean k + λ */
                double want = ncx2_cdf_closed(k, x, mu), got = stats_ncx2_cdf(x, k, mu * mu);
                double got_q = stats_ncx2_q(x, k, mu * mu);
                /* both sides are a handful of GSL evaluations in double: 1e-12 is
                 * ~1000 ulps of slack for the mixture's hundreds of terms */
                ck_assert_msg(fabs(got - want) < 1e-12, "k %d mu %g x %g: cdf %.17g closed form %.17g", k, mu, x, got,
                              want);
                ck_assert_msg(fabs(got_q - (1.0 - want)) < 1e-12, "k %d mu %g x %g: q %.17g", k, mu, x, got_q);
            }
    /* λ = 0 is the central law, exactly */
    ck_assert(stats_ncx2_cdf(3.3, 4, 0.0) == gsl_cdf_chisq_P(3.3, 4));
    ck_assert(stats_ncx2_q(3.3, 4, 0.0) == gsl_cdf_chisq_Q(3.3, 4));
    ck_assert(isnan(stats_ncx2_cdf(1.0, 0.0, 1.0)) && isnan(stats_ncx2_cdf(1.0, 2.0, -1.0)));
}
END_TEST

START_TEST(test_ncx2_monte_carlo) {
    /* 200000 draws of |Z + μ|² in 5 dims, μ = (1, 1, 1, 1, 0) so λ = 4; the
     * empirical CDF is within 5 standard errors (sqrt(F(1−F)/N) ≤ 0.0011) of
     * the series at every x. Negative control: the common slip of using λ/2
     * as the noncentrality is off by more than 10 standard errors somewhere. */
    enum { N = 200000, DIM = 5 };
    static const double xs[5] = {3.0, 6.0, 9.0, 13.0, 20.0};
    gsl_rng *r = fixed_rng(2024);
    int below[5] = {0};
    for (int s = 0; s < N; s++) {
        double x = 0.0;
        for (int d = 0; d < DIM; d++) {
            double z = gsl_ran_ugaussian(r) + (d < 4 ? 1.0 : 0.0);
            x += z * z;
        }
        for (int j = 0; j < 5; j++) below[j] += x <= xs[j];
    }
    gsl_rng_free(r);
    double worst_wrong = 0.0;
    for (int j = 0; j < 5; j++) {
        double F = stats_ncx2_cdf(xs[j], DIM, 4.0), emp = (double)below[j] / N;
        double se = sqrt(F * (1.0 - F) / N);
        ck_assert_msg(fabs(emp - F) < 5.0 * se, "x %g: empirical %.5f series %.5f (se %.5f)", xs[j], emp, F, se);
        double wrong = fabs(emp - stats_ncx2_cdf(xs[j], DIM, 2.0)) / se;
        if (wrong > worst_wrong) worst_wrong = wrong;
    }
    ck_assert_msg(worst_wrong > 10.0, "the λ/2 mutant is only %.1f standard errors off", worst_wrong);
}
END_TEST

START_TEST(test_power_and_sample_size) {
    /* df 1: power = Φ(μ − z) + Φ(−μ − z) exactly, z = Φ⁻¹(1 − α/2), λ = μ² */
    double z = gsl_cdf_ugaussian_Qinv(0.025);
    for (double mu = 0.5; mu < 6.0; mu += 0.5) {
        double want = gsl_cdf_ugaussian_P(mu - z) + gsl_cdf_ugaussian_P(-mu - z);
        ck_assert_msg(fabs(stats_power(1, 0.05, mu * mu) - want) < 1e-12, "mu %g", mu);
    }
    ck_assert(fabs(stats_power(4, 0.01, 0.0) - 0.01) < 1e-12); /* no effect: power is the level */
    /* λ for power 0.8 at α 0.05: for df 1 solve the closed form independently
     * (μ = z + Φ⁻¹(0.8) up to the far tail, refined by bisection) */
    double lo = 0.0, hi = 10.0;
    for (int it = 0; it < 200; it++) {
        double mid = 0.5 * (lo + hi);
        if (gsl_cdf_ugaussian_P(mid - z) + gsl_cdf_ugaussian_P(-mid - z) < 0.8)
            lo = mid;
        else
            hi = mid;
    }
    double lambda;
    sp_error err;
    ck_assert_int_eq(stats_lambda_for_power(1, 0.05, 0.8, &lambda, &err), 0);
    ck_assert_msg(fabs(lambda - hi * hi) < 1e-8, "lambda %.10f closed form %.10f", lambda, hi * hi);
    ck_assert(fabs(lambda - 7.849) < 1e-3); /* (1.95996 + 0.84162)² = 7.849 */
    /* df 3 through the k = 3 closed form */
    double c3 = gsl_cdf_chisq_Qinv(0.05, 3.0);
    lo = 0.0, hi = 10.0;
    for (int it = 0; it < 200; it++) {
        double mid = 0.5 * (lo + hi);
        if (1.0 - ncx2_cdf_closed(3, c3, mid) < 0.8)
            lo = mid;
        else
            hi = mid;
    }
    ck_assert_int_eq(stats_lambda_for_power(3, 0.05, 0.8, &lambda, &err), 0);
    ck_assert_msg(fabs(lambda - hi * hi) < 1e-7, "df 3 lambda %.10f closed form %.10f", lambda, hi * hi);
    /* sample sizes: n = ⌈λ/w²⌉, two samples ⌈2λ/w²⌉ each */
    int64_t n;
    ck_assert_int_eq(stats_n_gof(1, 0.05, 0.8, 0.3, &n, &err), 0);
    ck_assert(n == 88); /* 7.849 / 0.09 = 87.2 */
    ck_assert(stats_power(1, 0.05, n * 0.09) >= 0.8 && stats_power(1, 0.05, (n - 1) * 0.09) < 0.8);
    ck_assert_int_eq(stats_n_two(1, 0.05, 0.8, 0.3, &n, &err), 0);
    ck_assert(n == 175); /* 2 · 7.849 / 0.09 = 174.4 */
}
END_TEST

START_TEST(test_effect_size_and_tv) {
    /* w ≥ 2·TV for any pair, with equality when q − p ∝ p on two halves of
     * equal mass (the least favourable alternative) */
    gsl_rng *r = fixed_rng(7);
    for (int rep = 0; rep < 200; rep++) {
        double p[6], q[6], sp = 0, sq = 0;
        for (int i = 0; i < 6; i++) sp += p[i] = gsl_rng_uniform_pos(r), sq += q[i] = gsl_rng_uniform_pos(r);
        for (int i = 0; i < 6; i++) p[i] /= sp, q[i] /= sq;
        ck_assert(stats_cohen_w(p, q, 6) >= 2.0 * tv_distance(p, q, 6) - 1e-12);
        ck_assert(stats_cohen_w_two(p, q, 6) >= 2.0 * tv_distance(p, q, 6) - 1e-12);
    }
    gsl_rng_free(r);
    static const double p[4] = {0.3, 0.2, 0.25, 0.25};
    double d = 0.05, q[4] = {0.3 * (1 + 2 * d), 0.2 * (1 + 2 * d), 0.25 * (1 - 2 * d), 0.25 * (1 - 2 * d)};
    ck_assert(fabs(tv_distance(p, q, 4) - d) < 1e-15);
    ck_assert(fabs(stats_cohen_w(p, q, 4) - 2 * d) < 1e-12);
    static const double forbid[2] = {1.0, 0.0}, spill[2] = {0.9, 0.1};
    ck_assert(isinf(stats_cohen_w(forbid, spill, 2)));
}
END_TEST

START_TEST(test_plan_predicts_power) {
    /* The planned n for power 0.9 at α = 0.01 against a concrete alternative
     * is checked by simulation: 400 tests at that n reject in 90 % ± 6 %
     * (4 binomial standard errors of 0.015), and the same n falls short of
     * the target when the plan's n is halved. */
    static const double p0[8] = {0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02};
    static const double p1[8] = {0.26, 0.22, 0.15, 0.12, 0.09, 0.08, 0.06, 0.02};
    stats_plan plan;
    sp_error err;
    ck_assert_msg(stats_plan_gof(p0, p1, 8, 0.01, 0.9, STATS_MIN_EXPECTED, &plan, &err) == 0, "%s", err.msg);
    ck_assert(plan.power >= 0.9);
    gsl_rng *r = fixed_rng(99);
    int rejected = 0, rejected_half = 0;
    for (int rep = 0; rep < 400; rep++) {
        int64_t counts[8];
        stats_result res;
        draw_counts(r, p1, 8, plan.n, counts);
        ck_assert_int_eq(stats_gof(counts, p0, 8, STATS_PEARSON, STATS_MIN_EXPECTED, &res, &err), 0);
        rejected += res.p_value < 0.01;
        draw_counts(r, p1, 8, plan.n / 2, counts);
        ck_assert_int_eq(stats_gof(counts, p0, 8, STATS_PEARSON, STATS_MIN_EXPECTED, &res, &err), 0);
        rejected_half += res.p_value < 0.01;
    }
    gsl_rng_free(r);
    ck_assert_msg(fabs(rejected / 400.0 - 0.9) <= 0.06, "n %lld: empirical power %.3f (plan %.3f)", (long long)plan.n,
                  rejected / 400.0, plan.power);
    ck_assert_msg(rejected_half / 400.0 < 0.8, "half the plan still rejects %.3f", rejected_half / 400.0);
    /* a forbidden cell: power comes from the first draw that lands there,
     * 1 − 0.99^n ≥ 0.9999 → n = ⌈ln 1e-4 / ln 0.99⌉ = 917 unless X² gets there first */
    static const double n0[3] = {0.5, 0.5, 0.0}, n1[3] = {0.495, 0.495, 0.01};
    ck_assert_int_eq(stats_plan_gof(n0, n1, 3, 1e-12, 0.9999, STATS_MIN_EXPECTED, &plan, &err), 0);
    ck_assert_msg(plan.n <= 917 && plan.power >= 0.9999, "n %lld power %g", (long long)plan.n, plan.power);
    /* two samples: n per sample for the same pair */
    ck_assert_int_eq(stats_plan_two(p0, p1, 8, 0.01, 0.9, STATS_MIN_EXPECTED, &plan, &err), 0);
    ck_assert(plan.power >= 0.9 && plan.df == 7);
    ck_assert(fabs(plan.lambda - plan.n * plan.w * plan.w / 2) < 1e-9 * plan.lambda);
}
END_TEST

START_TEST(test_tv_plan_reaches_its_power) {
    /* `specula verify`'s rows (verify_case_plan): power 0.99 against every
     * law at TV 0.05 at the Holm level 1e-3/12, df 63, from w = 2·TV, × 1.5.
     * Simulated against the least favourable alternative of three laws on
     * 64 cells (Dirichlet 1, 0.5, 0.2: flat to peaked, so some cells pool):
     * p1 = p0·(1 + 2d·s), s = ±1 on two halves of the mass. At the plan
     * without the margin 400 G-tests reject at 0.99 within 4 binomial
     * standard errors (0.02); with it every one of them rejects. */
    const double level = 1e-3 / 12, d = 0.05;
    int64_t n;
    sp_error err;
    ck_assert_int_eq(stats_n_gof(63, level, 0.99, 2 * d, &n, &err), 0);
    const int64_t planned = (int64_t)ceil(1.5 * (double)n / 500.0) * 500;
    ck_assert_int_eq(planned, 15500); /* docs/verification.md, "Planned sizes" */
    static const double shapes[3] = {1.0, 0.5, 0.2};
    gsl_rng *r = fixed_rng(64);
    for (int k = 0; k < 3; k++) {
        double a[64], p0[64], p1[64], acc = 0;
        for (int i = 0; i < 64; i++) a[i] = shapes[k];
        gsl_ran_dirichlet(r, 64, a, p0);
        for (int i = 0; i < 64; i++) { /* the straddling cell is split so that Σ p0·s = 0 */
            const double s = acc + p0[i] <= 0.5 ? 1 : acc >= 0.5 ? -1 : ((0.5 - acc) - (acc + p0[i] - 0.5)) / p0[i];
            acc += p0[i];
            p1[i] = p0[i] * (1 + 2 * d * s);
        }
        ck_assert(fabs(tv_distance(p0, p1, 64) - d) < 2e-3);
        int rejected = 0, rejected_planned = 0;
        for (int rep = 0; rep < 400; rep++) {
            int64_t counts[64];
            stats_result res;
            draw_counts(r, p1, 64, n, counts);
            ck_assert_int_eq(stats_gof(counts, p0, 64, STATS_G, STATS_MIN_EXPECTED, &res, &err), 0);
            rejected += res.p_value < level;
            draw_counts(r, p1, 64, planned, counts);
            ck_assert_int_eq(stats_gof(counts, p0, 64, STATS_G, STATS_MIN_EXPECTED, &res, &err), 0);
            rejected_planned += res.p_value < level;
        }
        ck_assert_msg(rejected / 400.0 >= 0.99 - 0.02, "shape %g, n %lld: empirical power %.3f", shapes[k],
                      (long long)n, rejected / 400.0);
        ck_assert_msg(rejected_planned == 400, "shape %g, planned n %lld: %d of 400 rejected", shapes[k],
                      (long long)planned, rejected_planned);
    }
    gsl_rng_free(r);
}
END_TEST

/* ---- total-variation upper confidence bound ------------------------------------------ */

START_TEST(test_tv_bound_coverage) {
    /* δ = 0.05: the bound must cover the true TV in at least 95 % of the 300
     * repetitions (its guarantee; the union bound makes it conservative, so
     * the observed coverage is near 100 %). It must also be useful: never
     * above 0.2 when the truth is 0.1 at n = 4000. Negative control: the
     * plug-in estimate alone (no deviation term) misses in at least 25 % of
     * the same repetitions. Every cell of q2 differs from p by 0.025, four
     * standard errors at n = 4000, so the plug-in is nearly unbiased and
     * falls below the truth about half the time. */
    static const double p[8] = {0.2, 0.2, 0.15, 0.15, 0.1, 0.1, 0.05, 0.05};
    static const double q[8] = {0.2125, 0.1875, 0.1625, 0.1375, 0.1125, 0.0875, 0.0625, 0.0375};
    static const double q2[8] = {0.225, 0.175, 0.175, 0.125, 0.125, 0.075, 0.075, 0.025};
    double truth = tv_distance(p, q2, 8), truth_two = tv_distance(q, q2, 8);
    ck_assert(fabs(truth - 0.1) < 1e-12 && fabs(truth_two - 0.05) < 1e-12);
    gsl_rng *r = fixed_rng(31337);
    int covered = 0, plugin_covered = 0, covered_two = 0, reps = 300;
    double worst = 0.0;
    for (int rep = 0; rep < reps; rep++) {
        int64_t c[8], d[8];
        stats_tv tv;
        sp_error err;
        draw_counts(r, q2, 8, 4000, c);
        ck_assert_int_eq(stats_tv_upper(c, p, 8, 0.05, &tv, &err), 0);
        covered += tv.upper >= truth;
        plugin_covered += tv.observed >= truth;
        if (tv.upper > worst) worst = tv.upper;
        draw_counts(r, q, 8, 4000, d);
        ck_assert_int_eq(stats_tv_upper_two(d, c, p, 8, 0.05, &tv, &err), 0);
        covered_two += tv.upper >= truth_two;
    }
    gsl_rng_free(r);
    ck_assert_msg(covered >= 0.95 * reps, "covered %d of %d", covered, reps);
    ck_assert_msg(covered_two >= 0.95 * reps, "two-sample covered %d of %d", covered_two, reps);
    ck_assert_msg(worst <= 0.2, "largest bound %.3f for a true TV of 0.1", worst);
    ck_assert_msg(plugin_covered <= 0.75 * reps, "the plug-in alone covered %d of %d", plugin_covered, reps);
}
END_TEST

START_TEST(test_tv_bound_coarsens_large_supports) {
    /* 4096 cells with Zipf-like weights: keeping every cell would cost a
     * deviation term of sqrt((4096 ln 2 + ln 20) / (2n)) ≈ 0.24 at n = 25000;
     * the coarse cells must do much better, and a sample of the reference
     * itself must get a bound below 0.1. */
    enum { K = 4096 };
    static double p[K];
    double s = 0.0;
    for (int i = 0; i < K; i++) s += p[i] = 1.0 / ((i + 1.0) * (i + 1.0));
    for (int i = 0; i < K; i++) p[i] /= s;
    gsl_rng *r = fixed_rng(5);
    static int64_t c[K];
    draw_counts(r, p, K, 25000, c);
    gsl_rng_free(r);
    stats_tv tv;
    sp_error err;
    ck_assert_int_eq(stats_tv_upper(c, p, K, 0.05, &tv, &err), 0);
    double full = sqrt((K * log(2.0) + log(20.0)) / (2.0 * 25000));
    ck_assert_msg(tv.cells < K && tv.upper < 0.1 && tv.upper < full / 2, "cells %d upper %.4f (all cells: %.4f)",
                  tv.cells, tv.upper, full);
    ck_assert(tv.upper >= tv.observed + tv.deviation);
    /* without a reference the two-sample bound keeps every cell */
    ck_assert_int_eq(stats_tv_upper_two(c, c, NULL, K, 0.05, &tv, &err), 0);
    ck_assert_int_eq(tv.cells, K);
    ck_assert(tv.observed == 0.0);
}
END_TEST

Suite *stats_suite(void) {
    Suite *s = suite_create("stats");
    TCase *tc = harness_tcase("reference-values", 10);
    tcase_add_test(tc, test_pvalue_is_gsl_survival);
    tcase_add_test(tc, test_mendel_peas);
    tcase_add_test(tc, test_crossbills_g);
    tcase_add_test(tc, test_g_keeps_its_digits_near_the_expectation);
    tcase_add_test(tc, test_agresti_party_by_gender);
    tcase_add_test(tc, test_mcdonald_independence);
    tcase_add_test(tc, test_holm_known_list);
    tcase_add_test(tc, test_clopper_pearson_upper);
    tcase_add_test(tc, test_pool_rule);
    tcase_add_test(tc, test_gof_pools_and_reports);
    tcase_add_test(tc, test_bad_input_errors);
    suite_add_tcase(s, tc);
    TCase *power = harness_tcase("power", 60);
    tcase_add_test(power, test_ncx2_closed_forms);
    tcase_add_test(power, test_ncx2_monte_carlo);
    tcase_add_test(power, test_power_and_sample_size);
    tcase_add_test(power, test_effect_size_and_tv);
    tcase_add_test(power, test_plan_predicts_power);
    tcase_add_test(power, test_tv_plan_reaches_its_power);
    suite_add_tcase(s, power);
    TCase *tv = harness_tcase("tv-bound", 60);
    tcase_add_test(tv, test_tv_bound_coverage);
    tcase_add_test(tv, test_tv_bound_coarsens_large_supports);
    suite_add_tcase(s, tv);
    return s;
}
