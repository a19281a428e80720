/* test_round_law.c — exactness by computation through the real code: the law of the first L tokens that
 * decode_run emits, computed exactly by round_explore.h, must equal the target's enumerated law to float rounding.
 * The equality is exact, not within a sampling error, for the code as written (its float comparisons included);
 * the Philox draws themselves are the sampled suites' subject (test_accepted_length.c, the *_dist suites). */
#include <check.h>
#include <math.h>
#include <stdio.h>

#include "enumerate.h"
#include "harness.h"
#include "round_explore.h"
#include "round_worlds.h"

/* p and q are floats rounded once from double (relative 6e-8), each
 * acceptance is decided on the 2²³-point grid of its uniform (±1.2e-7 in
 * probability), and a window multiplies at most six such factors: the
 * computed law is within ~1e-7 of the target's per cell; 1e-6 leaves ten
 * times that. */
#define EXACT_TOLERANCE 1e-6
/* A planted bug must move the law by at least this much in total variation, far more than rounding can, so the
 * comparison can fail. */
#define BUG_MIN_TV 1e-3
#define MAX_BUGS 3

typedef struct {
    const char *name, *flags;
    int L, max_tokens;
    const char *prompt;         /* NULL: the world's */
    planted_bug bugs[MAX_BUGS]; /* each must move the law; PLANT_NONE ends the list */
} law_row;

/* The rows, on the long-window micro world of `specula verify` (V = 3). The windows: spec k = 1, L = 3 holds the
 * draft, the bonus after it and the next round; argmax MTP and lookup with k = 2 at L = 4 hold both drafts, the
 * bonus and the next round (their drafts are deterministic, so the computation stays small); sampled MTP drafts
 * of k = 2 at L = 3 hold both drafts and the bonus, or after a rejection the next round; the draft tree's L = 2
 * holds both of its levels, siblings rejected in turn at the root, and so does Medusa's over the world's tree,
 * its three children at the root drawn without replacement (every order of the three tokens). */
static const law_row rows[] = {
    {"spec k=1 T=1 L=3",
     "--method spec --k 1 --temperature 1",
     3,
     4,
     NULL,
     {PLANT_RATIO_INVERTED, PLANT_RESIDUAL_IS_P, PLANT_BONUS_FROM_PARENT}},
    {"mtp argmax k=2 T=1 L=4", "--method mtp --k 2 --temperature 1 --mtp-argmax", 4, 5, NULL, {PLANT_RESIDUAL_IS_P}},
    {"mtp sampled k=2 T=0.6 L=3",
     "--method mtp --k 2 --temperature 0.6 --mtp-sample",
     3,
     4,
     NULL,
     {PLANT_BONUS_FROM_PARENT}},
    {"lookup k=2 T=1 L=4", "--method lookup --k 2 --temperature 1", 4, 5, "0 2 1 0 2", {PLANT_RATIO_INVERTED}},
    {"medusa without replacement T=0.8 L=2",
     "--method medusa --temperature 0.8 --rule exact-norepl",
     2,
     3,
     NULL,
     {PLANT_NO_REPLACEMENT_AS_IID}},
    {"spec tree 2,1 iid T=0.8 L=2",
     "--method spec --tree-shape 2,1 --temperature 0.8 --rule exact",
     2,
     3,
     NULL,
     {PLANT_RESIDUAL_UNNORMALISED}},
};
#define N_ROWS ((int)(sizeof rows / sizeof rows[0]))

static int run_method(void *user, commit_callback on_commit, void *commit_user, sp_error *err) {
    return round_method_run(user, 1, on_commit, commit_user, err); /* the seed only names the sites */
}

static double tv_distance(const double *a, const double *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += fabs(a[i] - b[i]);
    return s / 2;
}

/* The explored law of the window under m. */
static void explore_tokens(const round_method *m, int L, explore_law *law) {
    explore_window w = {.V = VERIFY_SMALL_V, .L = L, .rounds = 0, .max_depth = 0};
    sp_error err;
    ck_assert_msg(explore_law_compute(run_method, (void *)m, &w, law, &err) == 0, "%s", err.msg);
}

static void check_row(const law_row *r, const verify_world *w) {
    round_method m;
    round_method_init(&m, w, r->flags, r->max_tokens, r->prompt);
    enum_table target;
    sp_error err;
    ck_assert_msg(enumerate_build(&target, w->target, m.prompt, m.n_prompt, &m.spec.sampling, r->L, &err) == 0, "%s",
                  err.msg);
    explore_law law;
    explore_tokens(&m, r->L, &law);
    double worst = 0;
    for (int64_t c = 0; c < target.cells; c++) worst = fmax(worst, fabs(law.tokens[c] - target.joint[c]));
    printf("round_law %-28s %6ld runs, %5ld outcomes, max |law − target| = %.2g\n", r->name, law.runs, law.leaves,
           worst);
    ck_assert_msg(worst <= EXACT_TOLERANCE, "%s: the computed law is %.3g away from the target's in a cell", r->name,
                  worst);
    explore_law_free(&law);
    for (int b = 0; b < MAX_BUGS && r->bugs[b] != PLANT_NONE; b++) {
        m.bug = r->bugs[b];
        explore_tokens(&m, r->L, &law);
        const double tv = tv_distance(law.tokens, target.joint, target.cells);
        printf("round_law %-28s control %-20s TV = %.4f\n", r->name, planted_name(m.bug), tv);
        ck_assert_msg(tv >= BUG_MIN_TV, "%s: planted bug %s moves the law by TV %.3g only", r->name,
                      planted_name(m.bug), tv);
        explore_law_free(&law);
    }
    enumerate_free(&target);
}

/* Each row's law is computed with a proposer built by the method factory and accept_exact. MTP's drafts come from
 * its own chained state, so no formula of the rule gives its law: only running the module does. Negative
 * controls: the same computation with a planted bug in place of accept_exact must move the law by BUG_MIN_TV. */
START_TEST(test_real_code_emits_the_target_law) {
    round_world rw;
    round_world_open(&rw, VERIFY_SMALL);
    for (int i = 0; i < N_ROWS; i++) check_row(&rows[i], &rw.w);
    round_world_close(&rw);
}
END_TEST

Suite *round_law_suite(void) {
    Suite *s = suite_create("round_law");
    TCase *tc = harness_tcase("round_law", 120);
    tcase_add_test(tc, test_real_code_emits_the_target_law);
    suite_add_tcase(s, tc);
    return s;
}
