/* test_spec_law.c — the planted bugs and the exact law of chain speculation: exactness shown by computation,
 * before any sampling. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "accept.h"
#include "fixtures.h"
#include "harness.h"
#include "planted.h"
#include "sampler.h"
#include "spec_law.h"
#include "verify_cases.h"
#include "registry.h"

/* ---- planted_accept(PLANT_NONE) is accept_exact ---------------------------------- */

static void random_row(float *row, int V, uint64_t seed, uint64_t index, int zeros) {
    double sum = 0;
    for (int i = 0; i < V; i++) {
        rng_site s = {seed, RNG_TEST, index * 64 + (uint64_t)i};
        float u = rng_uniform(s);
        row[i] = zeros && u < 0.3f ? 0.0f : u * u;
        sum += row[i];
    }
    if (sum == 0) row[0] = 1, sum = 1;
    for (int i = 0; i < V; i++) row[i] = (float)(row[i] / sum);
}

/* planted_accept without a bug decides exactly as accept_exact, so a control differs from the real rule only by
 * its planted line. */
START_TEST(test_unplanted_copy_matches_accept_exact) {
    const int V = 6, cap = 12;
    token_tree t;
    tree_build(&t, V, cap);
    float *p = calloc((size_t)cap * V, sizeof(float)), scratch[12];
    int differ[PLANT_COUNT] = {0};
    for (int trial = 0; trial < 600; trial++) {
        /* chains (one child per node) and trees (2–3 children at the root), i.i.d. or without replacement */
        children_kind kind = trial % 3 != 0 ? CHILDREN_NO_REPLACEMENT : CHILDREN_IID;
        tree_reset(&t, 0, kind);
        int chain = trial % 2 == 0, width = chain ? 1 : 2 + trial % 2;
        int parent = 0;
        for (int d = 0; d < 3; d++) {
            random_row(tree_q(&t, parent), V, 7, (uint64_t)(trial * 16 + d), trial % 4 == 1);
            int first = -1, used[6] = {0};
            /* trees: two children under the root's first child too (where no-replacement-root-only
             * shows) */
            const int children = d == 0 ? width : d == 1 && !chain ? 2 : 1;
            for (int c = 0; c < children; c++) {
                /* a token q can draw, distinct from its siblings (needed without replacement) */
                int x = (trial + c * 5) % V, tries = 0;
                while ((tree_q(&t, parent)[x] <= 0 || used[x]) && tries++ < V) x = (x + 1) % V;
                if (tries > V) break; /* q has fewer tokens than the width asked for */
                used[x] = 1;
                int node = tree_add(&t, parent, x);
                if (first < 0) first = node;
            }
            parent = first;
        }
        for (int i = 0; i < t.n; i++) random_row(p + (size_t)i * V, V, 8, (uint64_t)(trial * 16 + i), trial % 5 == 1);
        accept_site site = {11, (uint64_t)trial, trial % 7};
        accept_result want, got;
        sp_error err;
        ck_assert_msg(accept_exact(&t, p, site, scratch, &want, &err) == 0, "%s", err.msg);
        for (int b = 0; b < PLANT_COUNT; b++) {
            /* an EOS among the tokens, and generated positions from 0 (base position ≥ first position) */
            const planted_rule rule = {(planted_bug)b, 0, trial % V};
            ck_assert_msg(planted_accept_rule(&rule, &t, p, site, scratch, &got, &err) == 0, "%s", err.msg);
            int same =
                got.n_accepted == want.n_accepted && got.next_token == want.next_token && got.bonus == want.bonus;
            for (int i = 0; same && i <= want.n_accepted; i++) same = got.path[i] == want.path[i];
            if (b == PLANT_NONE) ck_assert_msg(same, "trial %d: the unplanted copy decided differently", trial);
            differ[b] += !same;
        }
    }
    for (int b = 1; b < PLANT_COUNT; b++) /* the commit's slip is the target's: the rule stays exact */
        if (b != PLANT_COMMIT_PARENT_AFTER_TWO)
            ck_assert_msg(differ[b] > 0, "%s never changed a decision", planted_name(b));
    ck_assert_int_eq(differ[PLANT_COMMIT_PARENT_AFTER_TWO], 0);
    free(p);
    tree_free(&t);
}
END_TEST

START_TEST(test_names_and_retemper_row) {
    for (int b = 0; b < PLANT_COUNT; b++) ck_assert_int_eq(planted_parse(planted_name(b)), b);
    ck_assert_int_eq(planted_parse("no-such-bug"), -1);
    float q[4] = {0.5f, 0.3f, 0.2f, 0.0f}, out[4];
    planted_retemper_row(q, 1.0f, out, 4);
    for (int i = 0; i < 4; i++) ck_assert_float_eq_tol(out[i], q[i], 1e-7); /* γ = 1: the row itself */
    planted_retemper_row(q, 2.0f, out, 4);
    double s = 0.25 + 0.09 + 0.04;
    ck_assert_float_eq_tol(out[0], 0.25 / s, 1e-7);
    ck_assert_float_eq_tol(out[2], 0.04 / s, 1e-7);
    ck_assert(out[3] == 0);
}
END_TEST

/* ---- spec_law on hand-computed cases -------------------------------------------------
 * One position of context-free rows: p = (0.5, 0.3, 0.2), q = (0.2, 0.2, 0.6);
 * a second position p' = (0.1, 0.1, 0.8), q' = q. The rule accepts x with
 * q(x)·min(1, p/q) = (0.2, 0.2, 0.2): 0.6 in all, so it rejects with 0.4,
 * and norm(max(0, p − q)) = (0.75, 0.25, 0). */
static const float hp[2][3] = {{0.5f, 0.3f, 0.2f}, {0.1f, 0.1f, 0.8f}}, hq[3] = {0.2f, 0.2f, 0.6f};

static void hand_target(void *user, const int *tokens, int len, float *out) {
    (void)user, (void)tokens;
    memcpy(out, hp[len < 2 ? len : 1], sizeof hq);
}
static void hand_draw(void *user, const int *tokens, int len, int depth, float *out) {
    (void)user, (void)tokens, (void)len, (void)depth;
    memcpy(out, hq, sizeof hq);
}

static void hand_law(planted_bug bug, int L, double *joint) {
    spec_law_spec s = {.V = 3, .L = L, .k = 1, .max_tokens = 0, .target = hand_target, .draw = hand_draw, .bug = bug};
    sp_error err;
    ck_assert_msg(spec_law(&s, joint, &err) == 0, "%s", err.msg);
}

/* spec_law reproduces hand-computed laws of every bug. */
START_TEST(test_law_by_hand) {
    double j[9];
    /* the first token alone, L = 1 */
    const double want[PLANT_COUNT][3] = {
        [PLANT_NONE] = {0.5, 0.3, 0.2},
        /* inverted: accept with q·min(1, q/p) = (0.08, 0.1333, 0.6), reject 0.18667 → residual (0.75, 0.25, 0) */
        [PLANT_RATIO_INVERTED] = {0.08 + 0.14, 0.2 / 1.5 + 0.56 / 12, 0.6},
        [PLANT_RESIDUAL_IS_P] = {0.2 + 0.4 * 0.5, 0.2 + 0.4 * 0.3, 0.2 + 0.4 * 0.2},
        /* max(0, p − q) = (0.3, 0.1, 0) by an inverse CDF: the missing 0.6 falls on the last token */
        [PLANT_RESIDUAL_UNNORMALISED] = {0.2 + 0.4 * 0.3, 0.2 + 0.4 * 0.1, 0.2 + 0.4 * 0.6},
        [PLANT_REJECT_FROM_Q] = {0.2 + 0.4 * 0.2, 0.2 + 0.4 * 0.2, 0.2 + 0.4 * 0.6},
        [PLANT_BONUS_FROM_PARENT] = {0.5, 0.3, 0.2},     /* no bonus among the first token */
        [PLANT_NO_REPLACEMENT_AS_IID] = {0.5, 0.3, 0.2}, /* a chain: nothing to renormalise */
        [PLANT_CHILDREN_BY_Q] = {0.5, 0.3, 0.2},         /* a chain: one child, nothing to re-order */
        [PLANT_NO_REPLACEMENT_ROOT_ONLY] = {0.5, 0.3, 0.2},
        [PLANT_BONUS_FROM_PARENT_LATE] = {0.5, 0.3, 0.2}, /* position 0 is not late */
        [PLANT_EOS_DRAFT_UNTESTED] = {0.5, 0.3, 0.2},     /* no EOS given */
    };
    for (int b = 0; b < PLANT_COUNT; b++) {
        if (!spec_law_computes((planted_bug)b)) continue;
        hand_law((planted_bug)b, 1, j);
        for (int x = 0; x < 3; x++)
            ck_assert_msg(fabs(j[x] - want[b][x]) < 1e-7, "%s: P(%d) = %.8f, by hand %.8f", planted_name(b), x, j[x],
                          want[b][x]);
    }
    /* two tokens: the exact rule gives p × p'; the early bonus draws the second token from p
     * whenever the first draft was accepted: P(x, y) = acc(x)·p(y) + 0.4·res(x)·p'(y) */
    hand_law(PLANT_NONE, 2, j);
    for (int x = 0; x < 3; x++)
        for (int y = 0; y < 3; y++) ck_assert(fabs(j[x * 3 + y] - (double)hp[0][x] * hp[1][y]) < 1e-7);
    hand_law(PLANT_BONUS_FROM_PARENT, 2, j);
    const double res[3] = {0.75, 0.25, 0};
    for (int x = 0; x < 3; x++)
        for (int y = 0; y < 3; y++) {
            double by_hand = 0.2 * hp[0][y] + 0.4 * res[x] * hp[1][y];
            ck_assert_msg(fabs(j[x * 3 + y] - by_hand) < 1e-7, "(%d, %d): %.8f vs %.8f", x, y, j[x * 3 + y], by_hand);
        }
}
END_TEST

/* ---- the exact rule's law is the target's, on the micro models ----------------------- */

/* Computed from the micro models' conditionals, the exact rule's law equals the target's for every spec case of the
 * catalogue. */
START_TEST(test_exact_rule_law_is_target) {
    fixture_model t[VERIFY_WORLDS], d[VERIFY_WORLDS];
    verify_world worlds[VERIFY_WORLDS];
    for (int id = 0; id < VERIFY_WORLDS; id++) { /* every world: the default rows' long windows are the small one's */
        fixture_model_open(&t[id], "micro", 1, verify_world_config((verify_world_id)id, 0));
        fixture_model_open(&d[id], "micro-draft", 2, verify_world_config((verify_world_id)id, 1));
        verify_world_init(&worlds[id], &t[id].m, &d[id].m, NULL); /* no Medusa case is computed here */
    }
    int checked = 0;
    for (const verify_case *c = verify_cases(); c->name; c++) {
        if ((!method_has(&c->spec, METHOD_DRAFT_MODEL) && !c->spec.method->point_drafts) || c->spec.rule != RULE_EXACT ||
            c->spec.shape.depth > 0 || c->batch) /* chains only: a tree's law is not computed; a batch's is a
                                                   * mixture of the target's (verify_batch.h) */
            continue;
        const verify_world *w = &worlds[c->world];
        sp_error err;
        enum_table exact;
        ck_assert_msg(verify_case_exact(c, w, &exact, &err) == 0, "%s", err.msg);
        double *law = calloc((size_t)exact.cells, sizeof(double)),
               *control = calloc((size_t)exact.cells, sizeof(double));
        ck_assert_int_eq(verify_case_law(c, w, 0, law, &err), 1);
        const int control_computed = verify_case_law(c, w, 1, control, &err);
        ck_assert_int_eq(control_computed, spec_law_computes(c->control_bug));
        double worst = 0, tv = 0;
        for (int64_t i = 0; i < exact.cells; i++) {
            worst = fmax(worst, fabs(law[i] - exact.joint[i]));
            tv += 0.5 * fabs(control[i] - exact.joint[i]);
        }
        /* the same float rows enter both computations in a different order: double rounding only */
        ck_assert_msg(worst < 1e-7, "%s: the exact rule's law differs from the target's by %g", c->name, worst);
        if (control_computed)
            ck_assert_msg(tv > 0.02, "%s: the control's law is only %g from the target's", c->name, tv);
        free(law);
        free(control);
        enumerate_free(&exact);
        checked++;
    }
    /* twenty-four draft-model cases (eleven of the small world, four of the EOS world), four prompt-lookup cases */
    ck_assert_int_ge(checked, 28);
    for (int id = 0; id < VERIFY_WORLDS; id++) {
        verify_world_free(&worlds[id]);
        fixture_model_close(&d[id]);
        fixture_model_close(&t[id]);
    }
}
END_TEST

/* The typical rule's law (spec_law's typical branch) for the catalogue's rows held to it: a distribution, away from
 * the target's above temperature 0 (the rule is biased there, which is why such a row has its own law), its
 * control's law away from it; and at temperature 0, where p is one-hot and the threshold below 1, the greedy
 * sequence with probability 1 — the target's law. */
START_TEST(test_typical_rule_law) {
    fixture_model t, d;
    fixture_model_open(&t, "micro", 1, verify_world_config(VERIFY_SMALL, 0));
    fixture_model_open(&d, "micro-draft", 2, verify_world_config(VERIFY_SMALL, 1));
    verify_world w;
    verify_world_init(&w, &t.m, &d.m, NULL);
    int checked = 0;
    for (const verify_case *c = verify_cases(); c->name; c++) {
        if (!verify_case_follows_rule_law(c)) continue;
        ck_assert_int_eq(c->world, VERIFY_SMALL);
        sp_error err;
        enum_table target;
        const int *prompt;
        int n_prompt;
        verify_case_prompt(c, &w, &prompt, &n_prompt);
        ck_assert_msg(enumerate_build(&target, w.target, prompt, n_prompt, &c->spec.sampling, c->L, &err) == 0, "%s",
                      err.msg);
        double *law = calloc((size_t)target.cells, sizeof(double)),
               *control = calloc((size_t)target.cells, sizeof(double));
        ck_assert_int_eq(verify_case_law(c, &w, 0, law, &err), 1);
        ck_assert_int_eq(verify_case_law(c, &w, 1, control, &err), 1);
        double sum = 0, bias = 0, control_tv = 0;
        for (int64_t i = 0; i < target.cells; i++) {
            sum += law[i];
            bias += 0.5 * fabs(law[i] - target.joint[i]);
            control_tv += 0.5 * fabs(control[i] - law[i]);
        }
        ck_assert_msg(fabs(sum - 1) < 1e-9, "%s: the law sums to %.12f", c->name, sum);
        ck_assert_msg(bias > 0.01, "%s: the typical rule's law is only %g from the target's", c->name, bias);
        ck_assert_msg(control_tv > 0.02, "%s: the control's law is only %g from the rule's", c->name, control_tv);
        enum_table exact;
        ck_assert_msg(verify_case_exact(c, &w, &exact, &err) == 0, "%s", err.msg);
        for (int64_t i = 0; i < target.cells; i++) ck_assert(exact.joint[i] == law[i]); /* what the row tests against */
        enumerate_free(&exact);

        verify_case greedy = *c;
        greedy.spec.sampling.temperature = 0.0f;
        enum_table point;
        ck_assert(enumerate_build(&point, w.target, prompt, n_prompt, &greedy.spec.sampling, c->L, &err) == 0);
        ck_assert_int_eq(verify_case_law(&greedy, &w, 0, law, &err), 1);
        for (int64_t i = 0; i < point.cells; i++)
            ck_assert_msg(fabs(law[i] - point.joint[i]) < 1e-12, "%s at T=0: cell %lld has %g, greedy %g", c->name,
                          (long long)i, law[i], point.joint[i]);
        enumerate_free(&point);
        free(law);
        free(control);
        enumerate_free(&target);
        checked++;
    }
    ck_assert_int_ge(checked, 1);
    verify_world_free(&w);
    fixture_model_close(&d);
    fixture_model_close(&t);
}
END_TEST

Suite *spec_law_suite(void) {
    Suite *s = suite_create("spec_law");
    TCase *tc = harness_tcase("spec_law", 60);
    tcase_add_test(tc, test_unplanted_copy_matches_accept_exact);
    tcase_add_test(tc, test_names_and_retemper_row);
    tcase_add_test(tc, test_law_by_hand);
    tcase_add_test(tc, test_exact_rule_law_is_target);
    tcase_add_test(tc, test_typical_rule_law);
    suite_add_tcase(s, tc);
    return s;
}
