/* stats.h — the hypothesis tests behind specula's distribution checks: goodness of fit, two-sample homogeneity,
 * multiple-test corrections, a total-variation upper confidence bound, and the sample sizes that give a test a
 * stated power. docs/verification.md explains the methods. */
#ifndef SPECULA_STATS_H
#define SPECULA_STATS_H

#include <stdint.h>

#include "error.h"

/* Cells whose expected count is below this are pooled (the usual rule for
 * the chi-square approximation). */
#define STATS_MIN_EXPECTED 5.0

typedef enum {
    STATS_PEARSON = 0, /* X² = Σ (O − E)² / E */
    STATS_G = 1 /* G = 2 Σ O ln(O / E), the likelihood-ratio statistic, summed as 2 Σ [O ln(O/E) − (O − E)] */
} stats_method;

/* One test's outcome. */
typedef struct {
    double statistic;    /* X² or G; +inf when a count falls where the null has probability 0 */
    int df;              /* cells − 1 */
    double p_value;      /* gsl_cdf_chisq_Q(statistic, df); 0 when statistic is +inf */
    int cells;           /* cells (columns for 2×K) after pooling */
    int pooled;          /* original cells merged into the rest cell; 0 when none */
    double min_expected; /* the smallest expected count the test used */
    int64_t n;           /* total count (both samples for 2×K) */
    int64_t impossible;  /* goodness of fit: counts in cells whose probability is 0 */
} stats_result;

/* Pooling, shared by every test here. Cells with expected[i] = 0 are dropped
 * (group[i] = −1). Of the rest, every cell with expected < min_expected goes
 * into one rest cell; while the rest cell's own expected count is still
 * below min_expected, the smallest remaining cell joins it. "Smallest" means
 * ascending expected count, ties broken by ascending index. Unpooled cells
 * keep their order as groups 0, 1, …; the rest cell, when there is one, is
 * the last group. group[K] receives each cell's group; returns the number of
 * groups. min_expected ≤ 0 pools nothing. */
int stats_pool_cells(const double *expected, int K, double min_expected, int *group);

/* Goodness of fit of counts[K] to probs[K] (non-negative, summing to 1
 * within 1e-4; renormalised). Expected counts n·probs are pooled with
 * min_expected (STATS_MIN_EXPECTED, or 0 to reproduce unpooled textbook
 * numbers). A count in a zero-probability cell makes the statistic +inf. */
int stats_gof(const int64_t *counts, const double *probs, int K, stats_method method, double min_expected,
              stats_result *res, sp_error *err);

/* Homogeneity of two samples a[K], b[K] (a 2×K contingency table): are they
 * drawn from one distribution? Expected counts are row total × column total
 * / N; columns are pooled on the smaller row's expected counts, so every
 * expected count the test uses is ≥ min_expected. Empty columns are dropped. */
int stats_homogeneity(const int64_t *a, const int64_t *b, int K, stats_method method, double min_expected,
                      stats_result *res, sp_error *err);

/* Multiple testing over m p-values. adjusted[m] may alias p.
 * Bonferroni: min(1, m·p_i). Holm (step-down): with p sorted ascending,
 * adjusted_(j) = max_{i ≤ j} min(1, (m − i + 1)·p_(i)) (1-based); reject
 * hypothesis i at family-wise level α when adjusted_i ≤ α. */
void stats_bonferroni(const double *p, int m, double *adjusted);
void stats_holm(const double *p, int m, double *adjusted);

/* Total-variation upper confidence bound: with probability ≥ 1 − delta over
 * the sampling, TV(true, reference) ≤ upper (assumption: the draws are
 * i.i.d.). The cells are coarsened to the heaviest reference cells plus one
 * rest cell, chosen from the reference and n alone so the bound stays valid;
 * see stats.c for the derivation. */
typedef struct {
    double upper;     /* the bound, clipped to 1 */
    double observed;  /* plug-in TV on the coarse cells */
    double deviation; /* sampling term (Hoeffding over every event, union bound); summed over samples */
    double tail;      /* what the rest cell can hide */
    int cells;        /* coarse cells, the rest cell included */
    double delta;     /* 1 − confidence */
} stats_tv;

/* TV between the distribution that produced counts[K] and probs[K]. */
int stats_tv_upper(const int64_t *counts, const double *probs, int K, double delta, stats_tv *tv, sp_error *err);
/* TV between the distributions that produced a[K] and b[K]. probs[K], when
 * not NULL, is a reference distribution (e.g. the known target) used only to
 * choose the coarse cells; NULL keeps all K cells. */
int stats_tv_upper_two(const int64_t *a, const int64_t *b, const double *probs, int K, double delta, stats_tv *tv,
                       sp_error *err);

/* Clopper–Pearson's one-sided upper confidence bound on a binomial
 * probability from x successes in n trials: with probability ≥ 1 − delta,
 * the probability is ≤ the bound (the Beta(x + 1, n − x) quantile 1 − delta;
 * 1 − delta^(1/n) when x = 0; 1 when x = n). Where a coupling's mismatches
 * are the successes, it bounds the total-variation distance of the two laws
 * (tests/gpu/test_accept_coupling.c). */
double stats_clopper_pearson_upper(int64_t x, int64_t n, double delta);

/* Noncentral chi-square with df degrees of freedom and noncentrality λ,
 * as the Poisson(λ/2) mixture of central chi-squares with df + 2j degrees of
 * freedom (absolute error below 1e-14). λ = 0 is the central law. */
double stats_ncx2_cdf(double x, double df, double lambda);
double stats_ncx2_q(double x, double df, double lambda); /* 1 − cdf, summed directly */

/* Power of a level-alpha chi-square test with df degrees of freedom when the
 * statistic is noncentral chi-square with noncentrality λ (the large-sample
 * law of X² and G under an alternative: λ = n·w² for goodness of fit). */
double stats_power(int df, double alpha, double lambda);
/* The λ at which stats_power reaches power (bisection, relative 1e-10). */
int stats_lambda_for_power(int df, double alpha, double power, double *lambda, sp_error *err);

/* Cohen's effect size w = sqrt(Σ (p1 − p0)² / p0) of alternative p1 against
 * null p0 (+inf when p1 puts mass where p0 has none). Every alternative at
 * total-variation distance d has w ≥ 2d (Cauchy–Schwarz), with equality for
 * the least favourable one, so w = 2d powers a test against all of them. */
double stats_cohen_w(const double *p0, const double *p1, int K);
/* The two-sample effect size: w = sqrt(Σ (a − b)² / m), m = (a + b)/2; a
 * 2×K test with n draws per sample has λ = n·w²/2. Also ≥ 2·TV(a, b). */
double stats_cohen_w_two(const double *a, const double *b, int K);

/* Smallest n with stats_power(df, alpha, n·w²) ≥ power (goodness of fit) or,
 * for two samples of n draws each, stats_power(df, alpha, n·w²/2) ≥ power. */
int stats_n_gof(int df, double alpha, double power, double w, int64_t *n, sp_error *err);
int stats_n_two(int df, double alpha, double power, double w, int64_t *n, sp_error *err);

/* A sample size planned for a concrete alternative, with the pooling the
 * test will apply at that size taken into account. */
typedef struct {
    int64_t n;     /* draws (per sample for two samples) */
    int df;        /* after pooling at n */
    double w;      /* effect size on the pooled cells */
    double lambda; /* noncentrality at n */
    double power;  /* approximate power at n (noncentral chi-square; plus, for
                    * goodness of fit, the chance that a draw lands in a cell
                    * the null forbids) */
} stats_plan;

/* The smallest n (doubling, then bisection) at which the goodness-of-fit
 * test of the null p0 against the alternative p1, pooled with min_expected,
 * reaches power at level alpha. */
int stats_plan_gof(const double *p0, const double *p1, int K, double alpha, double power, double min_expected,
                   stats_plan *plan, sp_error *err);
/* The same for the homogeneity test of n draws from a against n from b. */
int stats_plan_two(const double *a, const double *b, int K, double alpha, double power, double min_expected,
                   stats_plan *plan, sp_error *err);

#endif
