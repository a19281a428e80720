/* stats_power.c — the noncentral chi-square law, the power of a chi-square test, and the sample sizes that reach
 * a stated power (stats.h). Under an alternative of effect size w, X² and G are taken as noncentral chi-square
 * with λ = n·w² (the large-sample approximation; Cohen 1988, ch. 7). GSL has none, so it is built from GSL's
 * central law. */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>

#include "stats.h"

/* Stop a series when what is left is below this fraction of what was summed. */
#define NCX2_TAIL 1e-17
/* Largest sample size a plan searches before declaring the alternative out of reach. */
#define PLAN_MAX_N ((int64_t)1 << 40)

/* Noncentral chi-square as a Poisson mixture:
 *     P(X ≤ x) = Σ_{j≥0} π_j · P(χ²_{df+2j} ≤ x),   π_j = e^{−μ} μ^j / j!,  μ = λ/2
 * (Johnson, Kotz & Balakrishnan, Continuous Univariate Distributions 2,
 * ch. 29). Summing outward from the Poisson mode j0 = ⌊μ⌋ with the weights
 * built by the ratios π_{j+1}/π_j = μ/(j+1) relative to π_{j0} = 1, and
 * dividing by the sum of the weights taken, avoids both the underflow of
 * e^{−μ} and the cancellation in log π_j for large μ. Going up, the ratios
 * r = μ/(j+1) only shrink, so the weights left beyond j total at most
 * π_j·r/(1−r); going down, with s = j/μ, at most π_j·s/(1−s). Each side stops
 * when that bound falls below NCX2_TAIL of the weight summed; since every
 * central term lies in [0, 1], the truncation error is below 2·NCX2_TAIL
 * relative to the total and the result is as accurate as GSL's terms. */
static double ncx2_mixture(double x, double df, double lambda, int upper) {
    double (*central)(double, double) = upper ? gsl_cdf_chisq_Q : gsl_cdf_chisq_P;
    double mu = lambda / 2.0;
    double j0 = floor(mu);
    double w = 1.0, weights = 0.0, sum = 0.0;
    for (double j = j0;; j += 1.0) {
        weights += w;
        sum += w * central(x, df + 2.0 * j);
        double r = mu / (j + 1.0);
        if (r < 1.0 && w * r / (1.0 - r) < NCX2_TAIL * weights) break;
        w *= r;
    }
    w = 1.0;
    for (double j = j0; j > 0.0;) {
        w *= j / mu; /* π_{j−1} from π_j */
        j -= 1.0;
        weights += w;
        sum += w * central(x, df + 2.0 * j);
        double s = j / mu;
        if (w * s / (1.0 - s) < NCX2_TAIL * weights) break;
    }
    return sum / weights;
}

double stats_ncx2_cdf(double x, double df, double lambda) {
    if (!(df > 0.0) || !(lambda >= 0.0) || isnan(x)) return NAN;
    if (x <= 0.0) return 0.0;
    if (lambda == 0.0) return gsl_cdf_chisq_P(x, df);
    return ncx2_mixture(x, df, lambda, 0);
}

double stats_ncx2_q(double x, double df, double lambda) {
    if (!(df > 0.0) || !(lambda >= 0.0) || isnan(x)) return NAN;
    if (x <= 0.0) return 1.0;
    if (lambda == 0.0) return gsl_cdf_chisq_Q(x, df);
    return ncx2_mixture(x, df, lambda, 1);
}

double stats_power(int df, double alpha, double lambda) {
    if (df < 1 || !(alpha > 0.0 && alpha < 1.0) || !(lambda >= 0.0)) return NAN;
    return stats_ncx2_q(gsl_cdf_chisq_Qinv(alpha, (double)df), (double)df, lambda);
}

static int check_design(int df, double alpha, double power, sp_error *err) {
    if (df < 1) return sp_fail(err, "stats: degrees of freedom must be >= 1, got %d", df);
    if (!(alpha > 0.0 && alpha < 1.0)) return sp_fail(err, "stats: alpha must be in (0, 1), got %g", alpha);
    if (!(power > 0.0 && power < 1.0)) return sp_fail(err, "stats: power must be in (0, 1), got %g", power);
    return 0;
}

int stats_lambda_for_power(int df, double alpha, double power, double *lambda, sp_error *err) {
    if (!lambda) return sp_fail(err, "stats_lambda_for_power: NULL argument");
    if (check_design(df, alpha, power, err)) return -1;
    if (power <= alpha) { /* the test already has this power against no effect at all */
        *lambda = 0.0;
        return 0;
    }
    double lo = 0.0, hi = 1.0;
    while (stats_power(df, alpha, hi) < power) {
        lo = hi, hi *= 2.0;
        if (hi > 1e12) return sp_fail(err, "stats: power %g at alpha %g, df %d needs lambda > 1e12", power, alpha, df);
    }
    while (hi - lo > 1e-10 * hi) { /* power rises with λ; keep stats_power(hi) ≥ power */
        double mid = 0.5 * (lo + hi);
        if (stats_power(df, alpha, mid) >= power)
            hi = mid;
        else
            lo = mid;
    }
    *lambda = hi;
    return 0;
}

static int n_for_w(int df, double alpha, double power, double w, double per_unit, int64_t *n, sp_error *err) {
    if (!n) return sp_fail(err, "stats: NULL argument");
    if (!(w > 0.0)) return sp_fail(err, "stats: effect size w must be > 0, got %g", w);
    double lambda;
    if (stats_lambda_for_power(df, alpha, power, &lambda, err)) return -1;
    if (isinf(w)) {
        *n = 1;
        return 0;
    }
    double need = ceil(lambda / (per_unit * w * w));
    if (need > (double)PLAN_MAX_N) return sp_fail(err, "stats: w = %g needs more than 2^40 draws", w);
    *n = need < 1.0 ? 1 : (int64_t)need;
    return 0;
}

int stats_n_gof(int df, double alpha, double power, double w, int64_t *n, sp_error *err) {
    return n_for_w(df, alpha, power, w, 1.0, n, err);
}

int stats_n_two(int df, double alpha, double power, double w, int64_t *n, sp_error *err) {
    return n_for_w(df, alpha, power, w, 0.5, n, err);
}

double stats_cohen_w(const double *p0, const double *p1, int K) {
    double s = 0.0;
    for (int i = 0; i < K; i++) {
        double d = p1[i] - p0[i];
        if (p0[i] > 0.0)
            s += d * d / p0[i];
        else if (p1[i] > 0.0)
            return INFINITY;
    }
    return sqrt(s);
}

double stats_cohen_w_two(const double *a, const double *b, int K) {
    double s = 0.0;
    for (int i = 0; i < K; i++) {
        double m = 0.5 * (a[i] + b[i]), d = a[i] - b[i];
        if (m > 0.0) s += d * d / m;
    }
    return sqrt(s);
}

/* ---- plans ------------------------------------------------------------------- */

typedef struct {
    const double *x, *y; /* null and alternative (goodness of fit) or the two samples' laws */
    int K;
    int two; /* 0: goodness of fit, 1: two samples of n each */
    double alpha, min_expected;
    double forbidden; /* alternative mass where the null has none (goodness of fit) */
    double *expected, *cx, *cy;
    int *group;
} plan_ctx;

/* Fills plan for sample size n: the pooling the test would apply at n, the
 * effect size on those cells, and the resulting power. */
static void plan_at(plan_ctx *c, int64_t n, stats_plan *plan) {
    for (int i = 0; i < c->K; i++) c->expected[i] = (double)n * (c->two ? 0.5 * (c->x[i] + c->y[i]) : c->x[i]);
    int G = stats_pool_cells(c->expected, c->K, c->min_expected, c->group);
    for (int g = 0; g < G; g++) c->cx[g] = c->cy[g] = 0.0;
    for (int i = 0; i < c->K; i++)
        if (c->group[i] >= 0) c->cx[c->group[i]] += c->x[i], c->cy[c->group[i]] += c->y[i];
    *plan = (stats_plan){.n = n, .df = G - 1};
    plan->w = c->two ? stats_cohen_w_two(c->cx, c->cy, G) : stats_cohen_w(c->cx, c->cy, G);
    plan->lambda = (double)n * plan->w * plan->w * (c->two ? 0.5 : 1.0);
    plan->power = G >= 2 ? stats_power(G - 1, c->alpha, plan->lambda) : 0.0;
    if (c->forbidden > 0.0) { /* one draw in a forbidden cell rejects outright */
        double hit = -expm1((double)n * log1p(-c->forbidden));
        if (hit > plan->power) plan->power = hit;
    }
}

static int plan_search(plan_ctx *c, double power, stats_plan *plan, sp_error *err) {
    int64_t hi = 1;
    plan_at(c, hi, plan);
    while (!(plan->power >= power)) {
        if (hi >= PLAN_MAX_N)
            return sp_fail(err, "stats: power %g at alpha %g is out of reach below n = 2^40 (w = %g at n = 2^40)",
                           power, c->alpha, plan->w);
        hi *= 2;
        plan_at(c, hi, plan);
    }
    int64_t lo = hi / 2; /* fails (or is 0) */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        plan_at(c, mid, plan);
        if (plan->power >= power)
            hi = mid;
        else
            lo = mid;
    }
    plan_at(c, hi, plan); /* the returned plan is always one that reaches the target */
    return 0;
}

static int plan_run(plan_ctx *c, double power, stats_plan *plan, sp_error *err) {
    c->expected = sp_xcalloc((size_t)c->K, sizeof *c->expected, "stats plan expected[K]");
    c->cx = sp_xcalloc((size_t)c->K, sizeof *c->cx, "stats plan cx[K]");
    c->cy = sp_xcalloc((size_t)c->K, sizeof *c->cy, "stats plan cy[K]");
    c->group = sp_xcalloc((size_t)c->K, sizeof *c->group, "stats plan group[K]");
    int rc = plan_search(c, power, plan, err);
    free(c->expected), free(c->cx), free(c->cy), free(c->group);
    return rc;
}

static int check_law(const double *p, int K, const char *what, sp_error *err) {
    double s = 0.0;
    for (int i = 0; i < K; i++) {
        if (!isfinite(p[i]) || p[i] < 0.0)
            return sp_fail(err, "stats: %s[%d] must be a finite probability >= 0, got %g", what, i, p[i]);
        s += p[i];
    }
    if (fabs(s - 1.0) > 1e-4) return sp_fail(err, "stats: %s must sum to 1 (within 1e-4), sums to %.9g", what, s);
    return 0;
}

int stats_plan_gof(const double *p0, const double *p1, int K, double alpha, double power, double min_expected,
                   stats_plan *plan, sp_error *err) {
    if (!p0 || !p1 || !plan) return sp_fail(err, "stats_plan_gof: NULL argument");
    if (K < 2) return sp_fail(err, "stats_plan_gof: need at least 2 cells, got %d", K);
    if (check_law(p0, K, "null", err) || check_law(p1, K, "alternative", err) || check_design(1, alpha, power, err))
        return -1;
    plan_ctx c = {.x = p0, .y = p1, .K = K, .alpha = alpha, .min_expected = min_expected};
    for (int i = 0; i < K; i++)
        if (p0[i] == 0.0) c.forbidden += p1[i];
    if (c.forbidden == 0.0 && stats_cohen_w(p0, p1, K) == 0.0)
        return sp_fail(err, "stats_plan_gof: the alternative equals the null (w = 0); no sample size has power");
    return plan_run(&c, power, plan, err);
}

int stats_plan_two(const double *a, const double *b, int K, double alpha, double power, double min_expected,
                   stats_plan *plan, sp_error *err) {
    if (!a || !b || !plan) return sp_fail(err, "stats_plan_two: NULL argument");
    if (K < 2) return sp_fail(err, "stats_plan_two: need at least 2 cells, got %d", K);
    if (check_law(a, K, "sample a's law", err) || check_law(b, K, "sample b's law", err) ||
        check_design(1, alpha, power, err))
        return -1;
    if (stats_cohen_w_two(a, b, K) == 0.0)
        return sp_fail(err, "stats_plan_two: the two laws are equal (w = 0); no sample size has power");
    plan_ctx c = {.x = a, .y = b, .K = K, .two = 1, .alpha = alpha, .min_expected = min_expected};
    return plan_run(&c, power, plan, err);
}
