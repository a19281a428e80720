/* stat_common.c — shared checks of the distribution suites (stat_common.h). */
#include "stat_common.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"

/* Each case's seed is derived from its name (verify_case_seed), so adding
 * a case never changes another's draws. The engine's draws use a base apart
 * from the reference's: with float32 weights the engine reproduces the
 * reference's tokens for the same seed, and the engine's check must be a
 * sample of its own. */
#define REFERENCE_SEED_BASE 1000
#define ENGINE_SEED_BASE 50000

int64_t stat_planned_n(const double *exact, const double *control, int64_t cells, int two_sample, int64_t floor,
                       int64_t cap, const char *what) {
    stats_plan plan;
    sp_error err;
    int rc = two_sample ? stats_plan_two(control, exact, (int)cells, STAT_CONTROL_P, STAT_PLAN_POWER,
                                         STATS_MIN_EXPECTED, &plan, &err)
                        : stats_plan_gof(exact, control, (int)cells, STAT_CONTROL_P, STAT_PLAN_POWER,
                                         STATS_MIN_EXPECTED, &plan, &err);
    ck_assert_msg(rc == 0, "%s: %s", what, err.msg);
    int64_t n = (int64_t)ceil(STAT_PLAN_MARGIN * (double)plan.n / 500.0) * 500;
    if (n < floor) n = floor;
    ck_assert_msg(n <= cap, "%s: the control needs %lld draws (planned %lld, w = %.3f), over the budget of %lld", what,
                  (long long)n, (long long)plan.n, plan.w, (long long)cap);
    return n;
}

void stat_assert_family_passes(const double *p, int m, const char *const *names) {
    double *adjusted = malloc((size_t)m * sizeof *adjusted);
    stats_holm(p, m, adjusted);
    for (int i = 0; i < m; i++)
        ck_assert_msg(adjusted[i] >= STAT_FAMILY_ALPHA, "%s: p = %.3g, Holm-adjusted %.3g < %g", names[i], p[i],
                      adjusted[i], STAT_FAMILY_ALPHA);
    free(adjusted);
}

void stat_assert_control_rejected(const verify_result *control, const char *what) {
    ck_assert_msg(control->test.p_value < STAT_CONTROL_P,
                  "%s: the planted bug was not rejected (statistic %.1f, df %d, p = %.3g at n = %lld)", what,
                  control->test.statistic, control->test.df, control->test.p_value, (long long)control->n);
}

/* The generic size: power STAT_PLAN_POWER at STAT_CONTROL_P against w =
 * STAT_GENERIC_W, with df = the cells the law can reach − 1 (pooling only
 * lowers df, and a lower df needs a smaller n: the plan is conservative). */
static int64_t generic_n(const double *exact, int64_t cells, int two_sample, int64_t cap, const char *what) {
    int reachable = 0;
    for (int64_t i = 0; i < cells; i++) reachable += exact[i] > 0;
    if (reachable == 1) return 1000; /* a point mass: a single draw elsewhere rejects it */
    int64_t n;
    sp_error err;
    int rc = two_sample ? stats_n_two(reachable - 1, STAT_CONTROL_P, STAT_PLAN_POWER, STAT_GENERIC_W, &n, &err)
                        : stats_n_gof(reachable - 1, STAT_CONTROL_P, STAT_PLAN_POWER, STAT_GENERIC_W, &n, &err);
    ck_assert_msg(rc == 0, "%s: %s", what, err.msg);
    n = (int64_t)ceil(STAT_PLAN_MARGIN * (double)n / 500.0) * 500;
    ck_assert_msg(n <= cap, "%s: the generic plan needs %lld draws, over the budget of %lld", what, (long long)n,
                  (long long)cap);
    return n;
}

/* One micro world of `specula verify`'s defaults (verify_cases.h: the main
 * one, or the long-window one), on the reference or (on the engine) on CPU
 * engines opened on the same checkpoints in float32. */
typedef struct {
    fixture_model t, d;
    medusa_heads heads;
    verify_world w;
    engine te, de;
    int on_engine;
} stat_world;

static void stat_world_open(stat_world *sw, verify_world_id id, int on_engine) {
    fixture_model_open(&sw->t, "micro", 1, verify_world_config(id, 0));
    fixture_model_open(&sw->d, "micro-draft", 2, verify_world_config(id, 1));
    sp_error err;
    ck_assert_msg(verify_world_heads(&sw->heads, &sw->t.m, 3, &err) == 0, "%s", err.msg);
    verify_world_init(&sw->w, &sw->t.m, &sw->d.m, &sw->heads);
    sw->on_engine = on_engine;
    if (!on_engine) return;
    engine_options eo = engine_defaults();
    eo.f32_weights = 1;
    ck_assert_msg(engine_open(&sw->te, sw->t.dir, &eo, &err) == 0, "%s", err.msg);
    ck_assert_msg(engine_open(&sw->de, sw->d.dir, &eo, &err) == 0, "%s", err.msg);
    ck_assert_msg(verify_world_use_engine(&sw->w, &sw->te, &sw->de, &err) == 0, "%s", err.msg);
}

static void stat_world_close(stat_world *sw) {
    verify_world_free(&sw->w);
    if (sw->on_engine) engine_close(&sw->de), engine_close(&sw->te);
    medusa_free(&sw->heads);
    fixture_model_close(&sw->d);
    fixture_model_close(&sw->t);
}

/* Every world, opened only when one of `cases` runs in it. */
typedef struct {
    stat_world world[VERIFY_WORLDS];
    int open[VERIFY_WORLDS];
    int on_engine;
} stat_worlds;

static const verify_world *stat_worlds_get(stat_worlds *all, verify_world_id id) {
    if (!all->open[id]) stat_world_open(&all->world[id], id, all->on_engine);
    all->open[id] = 1;
    return &all->world[id].w;
}

static void stat_worlds_close(stat_worlds *all) {
    for (int id = 0; id < VERIFY_WORLDS; id++)
        if (all->open[id]) stat_world_close(&all->world[id]);
}

/* Case c at its planned size with seed `seed`: asserts its control
 * rejected (or, for a rule known to be biased, the bias detected) and
 * returns the p-value that joins the family. */
static double run_case(const verify_case *c, const verify_world *w, uint64_t seed, int64_t cap) {
    sp_error err;
    enum_table exact;
    ck_assert_msg(verify_case_exact(c, w, &exact, &err) == 0, "%s", err.msg);
    double *law = malloc((size_t)exact.cells * sizeof *law);
    int computed = verify_case_law(c, w, 1, law, &err);
    ck_assert_msg(computed >= 0, "%s", err.msg);
    int64_t n = computed ? stat_planned_n(exact.joint, law, exact.cells, c->pair == VC_VS_SAMPLE, 1000, cap, c->name)
                         : generic_n(exact.joint, exact.cells, c->pair == VC_VS_SAMPLE, cap, c->name);
    free(law);
    verify_options o = verify_defaults();
    o.n = n;
    o.seed = seed;
    verify_case_outcome out;
    ck_assert_msg(verify_case_run(c, w, &exact, &o, 0, &out, &err) == 0, "%s", err.msg);
    double p;
    if (c->expect_biased) {
        ck_assert_msg(out.result.test.p_value < STAT_CONTROL_P, "%s: the bias was not detected (p = %.3g at n = %lld)",
                      c->name, out.result.test.p_value, (long long)out.result.n);
        p = out.control.test.p_value; /* the exact rule on the same drafts */
    } else {
        char control[96], what[224];
        verify_case_control_text(c, w->engine != NULL, control, sizeof control);
        snprintf(what, sizeof what, "%s (control: %s, %s)", c->name, control,
                 computed ? "planned from its law" : "generic plan");
        stat_assert_control_rejected(&out.control, what);
        ck_assert_int_eq(out.result.test.impossible, 0);
        p = out.result.test.p_value;
    }
    verify_case_outcome_free(&out);
    enumerate_free(&exact);
    return p;
}

void stat_run_catalogue(const char *method, int64_t cap) {
    stat_worlds sw = {.on_engine = 0};
    double p[64];
    const char *names[64];
    int m = 0;
    for (const verify_case *c = verify_cases(); c->name; c++) {
        if (strcmp(c->method, method) || c->coverage) continue; /* coverage rows: --all's minutes */
        p[m] = run_case(c, stat_worlds_get(&sw, c->world), verify_case_seed(c, REFERENCE_SEED_BASE), cap);
        names[m++] = c->name;
    }
    ck_assert_int_gt(m, 0);
    stat_assert_family_passes(p, m, names);
    stat_worlds_close(&sw);
}

void stat_run_on_engine(const char *const *cases, int64_t cap) {
    stat_worlds sw = {.on_engine = 1};
    double p[64];
    int m = 0;
    for (; cases[m]; m++) {
        const verify_case *c = verify_cases();
        while (c->name && strcmp(c->name, cases[m])) c++;
        ck_assert_msg(c->name != NULL, "no case named \"%s\" in the catalogue", cases[m]);
        p[m] = run_case(c, stat_worlds_get(&sw, c->world), verify_case_seed(c, ENGINE_SEED_BASE), cap);
    }
    ck_assert_int_gt(m, 0);
    stat_assert_family_passes(p, m, cases);
    stat_worlds_close(&sw);
}
