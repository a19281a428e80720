/* test_accepted_length.c — the number of drafts each real decoder accepts per round, sampled, against its exact
 * law (round_explore.h). It adds to round_law, which shows the rule exact as written: here the real draws
 * (Philox streams, sites, the race) must give the accepted lengths that law, so a draw that reuses another's
 * randomness, or a site that repeats across rounds, shows. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "enumerate.h"
#include "harness.h"
#include "round_explore.h"
#include "round_worlds.h"
#include "stat_common.h"
#include "stats.h"
#include "tree_law.h"
#include "registry.h"

#define SEED_BASE 7000
#define RUN_CAP 6000 /* the most runs a row may plan (the suite's time) */

typedef struct {
    const char *name, *flags;
    int rounds;     /* rounds observed */
    int depth;      /* the most drafts one round can accept: k, or the tree's depth */
    int max_tokens; /* the least with which every observed round proposes its full depth: (depth + 1) × rounds */
    const char *prompt;
    int repeated_sites;  /* 1: also the control of repeated sites (accept_with_repeated_sites) */
    planted_bug control; /* the planted bug whose law sizes the row and which must be rejected */
    int tree_law;        /* 1: the law by tree_law_over_drafts, not by exploring the verification */
} length_row;

/* Rows on the long-window micro world (V = 3): chains of k = 1…4, MTP with argmax and sampled drafts, prompt
 * lookup, a draft tree, and Medusa over the world's tree with its children drawn without replacement and i.i.d.
 * (a tree's accepted count is the depth of the accepted path). A row observes the first round, or the first two
 * jointly, so that the round after a full acceptance and the round after a partial one are both seen, weighed by
 * how often each happens. */
static const length_row rows[] = {
    {"spec k=1 T=1, rounds 1-2", "--method spec --k 1 --temperature 1", 2, 1, 4, NULL, 0, PLANT_RATIO_INVERTED, 0},
    {"spec k=2 T=0.8, round 1", "--method spec --k 2 --temperature 0.8", 1, 2, 3, NULL, 0, PLANT_RATIO_INVERTED, 0},
    {"spec k=3 T=0.8, round 1", "--method spec --k 3 --temperature 0.8", 1, 3, 4, NULL, 0, PLANT_RATIO_INVERTED, 0},
    {"spec k=4 T=1, round 1", "--method spec --k 4 --temperature 1", 1, 4, 5, NULL, 0, PLANT_RATIO_INVERTED, 0},
    {"mtp argmax k=2 T=1, rounds 1-2", "--method mtp --k 2 --temperature 1 --mtp-argmax", 2, 2, 6, NULL, 1,
     PLANT_RATIO_INVERTED, 0},
    {"mtp sampled k=2 T=0.6, round 1", "--method mtp --k 2 --temperature 0.6 --mtp-sample", 1, 2, 3, NULL, 0,
     PLANT_RATIO_INVERTED, 0},
    {"lookup k=2 T=1, rounds 1-2", "--method lookup --k 2 --temperature 1", 2, 2, 6, "0 2 1 0 2", 1,
     PLANT_RATIO_INVERTED, 0},
    {"spec tree 2,1 iid T=0.8, round 1", "--method spec --tree-shape 2,1 --temperature 0.8 --rule exact", 1, 2, 3, NULL,
     0, PLANT_RATIO_INVERTED, 0},
    {"medusa norepl T=0.8, round 1", "--method medusa --temperature 0.8 --rule exact-norepl", 1, 3, 4, NULL, 0,
     PLANT_RATIO_INVERTED, 1},
    {"medusa iid T=0.8, round 1", "--method medusa --temperature 0.8 --rule exact", 1, 3, 4, NULL, 0,
     PLANT_RATIO_INVERTED, 1},
};
#define N_ROWS ((int)(sizeof rows / sizeof rows[0]))

static int run_method(void *user, commit_callback on_commit, void *commit_user, sp_error *err) {
    return round_method_run(user, 1, on_commit, commit_user, err);
}

/* The law of the first round's accepted depth as the average, over the
 * trees the real proposer drafts, of each tree's law under the rule
 * (tree_law.h): the explorer branches every draw of the proposer (its races,
 * weighed by their shares) while the verification is replaced by
 * accept_at_tree_law, which computes the tree's law on the target's real p
 * rows and draws nothing. Exploring the verification's uniforms instead
 * costs tens of probe runs of the loop per uniform, against one run per
 * tree here (the counts, and how closely the two ways agree, are in
 * docs/verification.md; tree_law sums in double, the code decides in
 * float). The rule is taken at tree_law's law, not run: round_law holds
 * accept_exact, through the explorer, to the target's law on the same
 * method. */
typedef struct {
    round_method m;                      /* the row's method, its verification replaced */
    planted_rule rule;                   /* the rule whose law is taken: the exact one or a planted bug */
    int verified;                        /* verifications in the run in progress */
    double first[EXPLORE_MAX_DEPTH + 1]; /* the law of the run's first tree's accepted depth */
    double law[EXPLORE_MAX_DEPTH + 1];   /* Σ over outcomes of weight × first */
} tree_average;

static void add_tree_outcome(void *user, const int *path, int n_accepted, int next_token, double prob) {
    (void)path;
    (void)next_token;
    tree_average *a = user;
    if (n_accepted >= 0 && n_accepted <= EXPLORE_MAX_DEPTH) a->first[n_accepted] += prob;
}

/* An accept_fn: the first verification of a run takes its tree's law into
 * a->first; every verification then accepts the path of first children down
 * to a leaf and the first token of positive p after it (what follows the
 * first round is not observed; a full path spends the row's budget, so the
 * run ends there). */
static int accept_at_tree_law(void *user, const token_tree *t, const float *p, accept_site site, float *scratch,
                              accept_result *r, sp_error *err) {
    (void)scratch;
    tree_average *a = user;
    if (a->verified++ == 0) {
        memset(a->first, 0, sizeof a->first);
        if (tree_accept_law(&a->rule, t, p, site, add_tree_outcome, a, err)) return -1;
    }
    memset(r, 0, sizeof *r);
    int u = 0, children[ACCEPT_MAX_PATH];
    while (r->n_accepted + 1 < ACCEPT_MAX_PATH && tree_children(t, u, children, ACCEPT_MAX_PATH) > 0)
        r->path[++r->n_accepted] = u = children[0];
    r->bonus = 1;
    for (int y = t->V - 1; y >= 0; y--)
        if (p[(size_t)u * t->V + y] > 0) r->next_token = y;
    return 0;
}

static int run_at_tree_law(void *user, commit_callback on_commit, void *commit_user, sp_error *err) {
    tree_average *a = user;
    a->verified = 0;
    return round_method_run(&a->m, 1, on_commit, commit_user, err); /* the seed only names the sites */
}

static void weigh_tree_law(void *user, double weight) {
    tree_average *a = user;
    ck_assert_msg(a->verified >= 1, "the run ended before its first verification");
    for (int d = 0; d <= EXPLORE_MAX_DEPTH; d++) a->law[d] += weight * a->first[d];
}

static void tree_law_over_drafts(const round_method *m, const length_row *r, planted_bug bug, explore_law *law) {
    ck_assert_msg(r->rounds == 1, "%s: the tree law is one round's", r->name);
    tree_average *a = calloc(1, sizeof *a);
    ck_assert_ptr_nonnull(a);
    a->m = *m;
    a->m.bug = PLANT_NONE;
    a->m.accept = accept_at_tree_law;
    a->m.accept_user = a;
    a->rule = (planted_rule){.bug = bug, .first_position = m->n_prompt, .eos = m->w->eos};
    explore_window w = {.V = VERIFY_SMALL_V,
                        .L = 1,
                        .rounds = 1,
                        .max_depth = r->depth,
                        .on_outcome = weigh_tree_law,
                        .outcome_user = a};
    sp_error err;
    ck_assert_msg(explore_law_compute(run_at_tree_law, a, &w, law, &err) == 0, "%s: %s", r->name, err.msg);
    double total = 0;
    for (int d = 0; d <= EXPLORE_MAX_DEPTH; d++) {
        ck_assert_msg(d <= r->depth || a->law[d] == 0, "%s: a tree accepts %d drafts", r->name, d);
        total += a->law[d];
    }
    ck_assert_msg(fabs(total - 1) <= 1e-9, "%s: the trees' laws weigh %.12f in all", r->name, total);
    memcpy(law->accepted, a->law, (size_t)(r->depth + 1) * sizeof *law->accepted); /* not the stand-in's zeros */
    free(a);
}

/* The exact law of the row's observed counts under bug (PLANT_NONE: the method's own rule). */
static void exact_law(const round_method *m, const length_row *r, planted_bug bug, explore_law *law) {
    if (r->tree_law) {
        tree_law_over_drafts(m, r, bug, law);
        return;
    }
    round_method e = *m;
    e.bug = bug;
    explore_window w = {.V = VERIFY_SMALL_V, .L = 1, .rounds = r->rounds, .max_depth = r->depth};
    sp_error err;
    ck_assert_msg(explore_law_compute(run_method, &e, &w, law, &err) == 0, "%s: %s", r->name, err.msg);
}

/* The first round's law of a chain of k drafts from a draft model, by
 * Leviathan's rule written out over the enumerated conditionals of target
 * (p) and draft (q), apart from the code: the round passes depth d with
 * probability Σ_x q(x)·a(x), a = min(1, p/q) (inverted: min(1, q/p)).
 * out[k + 1]. */
static void leviathan_walk(const enum_table *tp, const enum_table *tq, int k, int inverted, int *tokens, int len,
                           double mass, double *out) {
    if (len == k) {
        out[k] += mass;
        return;
    }
    const float *p = enumerate_cond(tp, tokens, len), *q = enumerate_cond(tq, tokens, len);
    double pass = 0;
    for (int x = 0; x < tp->V; x++) {
        if (!(q[x] > 0)) continue;
        const double num = inverted ? q[x] : p[x], den = inverted ? p[x] : q[x];
        const double take = q[x] * (den > 0 && num < den ? num / den : num > 0 ? 1.0 : 0.0);
        pass += take;
        tokens[len] = x;
        leviathan_walk(tp, tq, k, inverted, tokens, len + 1, mass * take, out);
    }
    out[len] += mass * (1 - pass);
}

/* p and q are floats rounded once (relative 6e-8) and each test is decided
 * on the 2²³-point grid of its uniform (±1.2e-7): four rounds of them stay
 * well inside 1e-6. */
#define FORMULA_TOLERANCE 1e-6

/* For a chain row observed over one round: the explored law and the
 * control's equal the formula. */
static void check_against_formula(const round_method *m, const length_row *r, const double *law,
                                  const double *control_law) {
    if (!method_has(&m->spec, METHOD_DRAFT_MODEL) || m->spec.shape.depth != 0 || r->rounds != 1) return;
    ck_assert_msg(r->control == PLANT_RATIO_INVERTED, "%s: the formula's control is the inverted test", r->name);
    const int k = m->spec.k;
    enum_table tp, tq;
    sp_error err;
    ck_assert_msg(enumerate_build(&tp, m->w->target, m->prompt, m->n_prompt, &m->spec.sampling, k, &err) == 0, "%s",
                  err.msg);
    ck_assert_msg(enumerate_build(&tq, m->w->draft, m->prompt, m->n_prompt, &m->spec.sampling, k, &err) == 0, "%s",
                  err.msg);
    for (int inverted = 0; inverted <= 1; inverted++) {
        double formula[EXPLORE_MAX_DEPTH + 1] = {0};
        int tokens[EXPLORE_MAX_DEPTH];
        leviathan_walk(&tp, &tq, k, inverted, tokens, 0, 1.0, formula);
        const double *explored = inverted ? control_law : law;
        for (int j = 0; j <= k; j++)
            ck_assert_msg(fabs(explored[j] - formula[j]) <= FORMULA_TOLERANCE,
                          "%s%s: P(%d accepted) is %.9f by the code, %.9f by the formula", r->name,
                          inverted ? " (control)" : "", j, explored[j], formula[j]);
    }
    enumerate_free(&tp);
    enumerate_free(&tq);
}

/* The accepted counts of one sampled run's first rounds. */
typedef struct {
    int n[EXPLORE_MAX_ROUNDS], rounds;
} counts_of_run;

static void count_burst(const int *tokens, int n, void *user) {
    (void)tokens;
    counts_of_run *c = user;
    if (c->rounds < EXPLORE_MAX_ROUNDS) c->n[c->rounds] = n - 1; /* the burst: accepted drafts, then one token */
    c->rounds++;
}

/* counts[cells] of n runs with seeds base, base + 1, … */
static void sample_counts(const round_method *m, const length_row *r, int64_t n, uint64_t base, int64_t *counts,
                          int64_t cells) {
    memset(counts, 0, (size_t)cells * sizeof *counts);
    for (int64_t i = 0; i < n; i++) {
        counts_of_run c = {{0}, 0};
        sp_error err;
        ck_assert_msg(round_method_run(m, base + (uint64_t)i, count_burst, &c, &err) == 0, "%s: %s", r->name, err.msg);
        ck_assert_msg(c.rounds >= r->rounds, "%s: the run ended after %d rounds", r->name, c.rounds);
        for (int j = 0; j < r->rounds; j++)
            ck_assert_msg(c.n[j] >= 0 && c.n[j] <= r->depth, "%s: round %d accepted %d", r->name, j + 1, c.n[j]);
        counts[explore_accepted_index(c.n, r->rounds, r->depth)]++;
    }
}

static double g_test(const int64_t *counts, const double *law, int64_t cells, const char *what) {
    stats_result res;
    sp_error err;
    ck_assert_msg(stats_gof(counts, law, (int)cells, STATS_G, STATS_MIN_EXPECTED, &res, &err) == 0, "%s: %s", what,
                  err.msg);
    return res.p_value;
}

static void print_law(const char *what, const double *law, int64_t cells) {
    printf("accepted_length   %-11s", what);
    for (int64_t i = 0; i < cells; i++) printf(" %.4f", law[i]);
    printf("\n");
}

/* A bug of the kind only sampled runs can show: accept_exact, unchanged,
 * given the sites of round 0 at position 0 in every round, so each round
 * reuses the first round's uniforms and races. Every draw still has its law
 * (the explorer, which answers each draw afresh, cannot tell), but the
 * rounds are no longer independent. Its law cannot be computed here, so
 * it runs at the row's size, on the two-round rows whose drafts are
 * deterministic (MTP argmax, lookup): there the second round tests its
 * drafts with the first round's uniforms, and the dependence is strong. On
 * the sampled chain of k = 1 it is too weak for a control
 * (docs/verification.md). */
static int accept_with_repeated_sites(void *user, const token_tree *t, const float *p, accept_site site, float *scratch,
                                      accept_result *r, sp_error *err) {
    (void)user;
    site.round = 0;
    site.base_position = 0;
    return accept_exact(t, p, site, scratch, r, err);
}

/* Row r: its exact law, its control's, the sampled test and the control's; returns the row's p-value. */
static double check_row(const length_row *r, const verify_world *w) {
    ck_assert_int_eq(r->max_tokens, (r->depth + 1) * r->rounds);
    const clock_t start = clock();
    round_method m;
    round_method_init(&m, w, r->flags, r->max_tokens, r->prompt);
    explore_law law, control_law;
    exact_law(&m, r, PLANT_NONE, &law);
    exact_law(&m, r, r->control, &control_law);
    check_against_formula(&m, r, law.accepted, control_law.accepted);
    const int64_t cells = law.accepted_cells;
    double tv = 0;
    for (int64_t i = 0; i < cells; i++) tv += fabs(law.accepted[i] - control_law.accepted[i]) / 2;
    const double explore_s = (double)(clock() - start) / CLOCKS_PER_SEC;
    const int64_t n = stat_planned_n(law.accepted, control_law.accepted, cells, 0, 1000, RUN_CAP, r->name);
    int64_t *counts = malloc((size_t)cells * sizeof *counts);
    const uint64_t base = verify_name_seed(r->name, SEED_BASE);
    m.bug = PLANT_NONE;
    sample_counts(&m, r, n, base, counts, cells);
    const double p = g_test(counts, law.accepted, cells, r->name);
    m.bug = r->control;
    sample_counts(&m, r, n, base + (uint64_t)n, counts, cells);
    const double control_p = g_test(counts, law.accepted, cells, r->name);
    printf("accepted_length %-34s n = %5lld  p = %.3g  control %s (TV %.3f) p = %.3g\n", r->name, (long long)n, p,
           planted_name(r->control), tv, control_p);
    if (r->repeated_sites) { /* at the row's size */
        m.bug = PLANT_NONE;
        m.accept = accept_with_repeated_sites;
        sample_counts(&m, r, n, base + 2 * (uint64_t)n, counts, cells);
        const double repeated_p = g_test(counts, law.accepted, cells, r->name);
        printf("accepted_length %-34s control sites repeated across rounds p = %.3g\n", r->name, repeated_p);
        ck_assert_msg(repeated_p < STAT_CONTROL_P, "%s: the repeated sites were not rejected (p = %.3g at n = %lld)",
                      r->name, repeated_p, (long long)n);
        m.accept = NULL;
    }
    printf("accepted_length %-34s CPU: %.2f s %s (%ld + %ld runs), %.2f s in all\n", r->name, explore_s,
           r->tree_law ? "over the drafted trees" : "exploring", law.runs, control_law.runs,
           (double)(clock() - start) / CLOCKS_PER_SEC);
    print_law("law", law.accepted, cells);
    print_law("control law", control_law.accepted, cells);
    ck_assert_msg(control_p < STAT_CONTROL_P, "%s: the control %s was not rejected (p = %.3g at n = %lld)", r->name,
                  planted_name(r->control), control_p, (long long)n);
    free(counts);
    explore_law_free(&law);
    explore_law_free(&control_law);
    return p;
}

/* For each row: the exact law of its accepted counts and of its negative control's; n runs with distinct seeds,
 * the counts taken from the bursts each commits (on_commit); a G-test of fit (stats.h, cells pooled below 5
 * expected), which must pass at the family-wise level 1e-3, Holm over the rows.
 * Negative control per row: the acceptance test inverted (min(1, q/p), planted.h). Its law is computed the same
 * way and sizes the row (power 0.999 at p < 1e-12, × 1.5, at least 1 000 runs); sampled at that size, it must be
 * rejected below 1e-12. For the chains of a draft model observed over one round, both laws are also held to
 * Leviathan's rule written out apart from the code (check_against_formula). Medusa's verification is too costly
 * to explore: its rows explore the proposer's draws only (tree_law_over_drafts). Their control is the inverted
 * test too, because no-replacement-as-iid moves the accepted depth too little (Cohen's w = 0.058: 49 000 runs).
 * The suite prints every row's p-values and CPU time. */
START_TEST(test_accepted_lengths_follow_their_law) {
    round_world rw;
    round_world_open(&rw, VERIFY_SMALL);
    double p[N_ROWS];
    const char *names[N_ROWS];
    for (int i = 0; i < N_ROWS; i++) {
        p[i] = check_row(&rows[i], &rw.w);
        names[i] = rows[i].name;
    }
    stat_assert_family_passes(p, N_ROWS, names);
    round_world_close(&rw);
}
END_TEST

Suite *accepted_length_suite(void) {
    Suite *s = suite_create("accepted_length");
    TCase *tc = harness_tcase("accepted_length", 180);
    tcase_add_test(tc, test_accepted_lengths_follow_their_law);
    suite_add_tcase(s, tc);
    return s;
}
