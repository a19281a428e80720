/* test_tree_walk.c — exercise 3's checks of the walk over a token tree
 * (accept_exact with several children per node). Hand-made trees whose
 * outcome is certain whatever the draws: a residual that must be carried
 * from child to child, a leaf's bonus, a chain followed to its end, a
 * drafted token the proposal could not have drawn. Then the rng sites: each
 * decision drawn where the starter says. Then chi-square tests on
 * random two-level trees, children drawn i.i.d. and without replacement:
 * the first committed token must follow the target's p at the root, and
 * the second, given the first, the target's p after it. The wrong solutions
 * below are the negative controls of these tests, run at the same sample
 * sizes by tests/parts/exercises.sh.
 *
 * Wrong solutions this checker must reject (wrong/):
 *   residual-not-carried.c  every child tried against p_u, not the residual
 *                           left by the children rejected before it
 *   correction-from-p.c     when no child is accepted the next token is
 *                           drawn from p_u instead of the residual
 *   no-drop.c               children drawn without replacement verified as
 *                           if i.i.d.: q keeps the rejected token
 *   bonus-from-parent.c     the bonus at a leaf drawn from the parent's row
 *   not-normalised.c        accept_residual leaves max(0, p − q) undivided
 *   absolute-difference.c   accept_residual takes |p − q|
 *   q-minus-p.c             accept_residual takes max(0, q − p)
 *   one-pass.c              accept_residual writes while it measures, so in
 *                           place with p = q the fallback finds p wiped
 *   correction-on-sample-stream.c  the correction drawn at (RNG_SAMPLE, …)
 *                           instead of (RNG_RESIDUAL, …): the right law at
 *                           the wrong site, invisible to every law test
 *   accept-slot-shifted.c   child j tested with the uniform of slot j + 1
 *   bonus-at-parent-position.c  the bonus drawn at the parent's position,
 *                           not the leaf's
 */
#include <check.h>
#include <stdlib.h>

#include "accept.h"
#include "harness.h"
#include "sampler.h"
#include "stats.h"

enum { V = 5 };

static void set_row(float *dst, const float *src) {
    for (int j = 0; j < V; j++) dst[j] = src[j];
}

/* ---- hand-made trees --------------------------------------------------- */

/* Root p = {0, .5, .5, 0, 0}, q = {.5, .5, 0, 0, 0}; children: token 0, then
 * token 1. Token 0 has p = 0: always rejected. The residual is then
 * norm(max(0, p − q)) = token 2 alone, where token 1 has no mass: token 1 is
 * always rejected too, and the correction is token 2. A walk that tries
 * token 1 against p (0.5 ≥ q = 0.5) always accepts it; a correction drawn
 * from p is token 1 half the time. */
START_TEST(test_residual_is_carried_to_the_next_child) {
    const float P0[V] = {0, 0.5f, 0.5f, 0, 0}, Q0[V] = {0.5f, 0.5f, 0, 0, 0}, U[V] = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f};
    token_tree t;
    tree_build(&t, V, 3);
    float p[3 * V], scratch[2 * V];
    for (int kind = CHILDREN_IID; kind <= CHILDREN_NO_REPLACEMENT; kind++) {
        tree_reset(&t, 4, (children_kind)kind);
        set_row(tree_q(&t, 0), Q0);
        tree_add(&t, 0, 0);
        tree_add(&t, 0, 1);
        set_row(tree_q(&t, 1), U);
        set_row(tree_q(&t, 2), U);
        set_row(p, P0);
        set_row(p + V, U);
        set_row(p + 2 * V, U);
        for (uint64_t round = 0; round < 200; round++) {
            accept_result r;
            sp_error err;
            ck_assert_int_eq(accept_exact(&t, p, (accept_site){5, round, 10}, scratch, &r, &err), 0);
            ck_assert_msg(r.n_accepted == 0,
                          "%s children, round %d: a child was accepted (node %d) though the "
                          "residual after token 0 gives token 1 no mass",
                          kind == CHILDREN_IID ? "i.i.d." : "without-replacement", (int)round, r.path[1]);
            ck_assert_msg(r.next_token == 2, "round %d: the correction is token %d; the residual is token 2 alone",
                          (int)round, r.next_token);
            ck_assert_int_eq(r.bonus, 0);
        }
    }
    tree_free(&t);
}
END_TEST

/* A chain root → 3 → 1, every proposal one-hot in q and in p, so every one
 * is accepted; the leaf's row is one-hot at 4: the bonus is 4. */
START_TEST(test_a_chain_is_followed_to_a_bonus_at_its_leaf) {
    const float AT3[V] = {0, 0, 0, 1, 0}, AT1[V] = {0, 1, 0, 0, 0}, AT4[V] = {0, 0, 0, 0, 1};
    token_tree t;
    tree_build(&t, V, 3);
    tree_reset(&t, 0, CHILDREN_IID);
    set_row(tree_q(&t, 0), AT3);
    tree_add(&t, 0, 3);
    set_row(tree_q(&t, 1), AT1);
    tree_add(&t, 1, 1);
    set_row(tree_q(&t, 2), AT4);
    float p[3 * V], scratch[2 * V];
    set_row(p, AT3);
    set_row(p + V, AT1);
    set_row(p + 2 * V, AT4);
    for (uint64_t round = 0; round < 50; round++) {
        accept_result r;
        sp_error err;
        ck_assert_int_eq(accept_exact(&t, p, (accept_site){9, round, 0}, scratch, &r, &err), 0);
        ck_assert_int_eq(r.n_accepted, 2);
        ck_assert_int_eq(r.path[0], 0);
        ck_assert_int_eq(r.path[1], 1);
        ck_assert_int_eq(r.path[2], 2);
        ck_assert_msg(r.next_token == 4, "the bonus is token %d; the leaf's p is token 4 alone", r.next_token);
        ck_assert_int_eq(r.bonus, 1);
    }
    tree_free(&t);
}
END_TEST

/* Children drawn without replacement: token 0, then token 1, from
 * q = {.5, .5, 0, 0, 0}. With p = {0, 1, 0, 0, 0} token 0 is always
 * rejected, the residual is token 1 alone and q without token 0 is token 1
 * alone: node 2 is always accepted, and as a leaf it ends the walk with a
 * bonus from its own row (token 3). With p = {0, .5, .5, 0, 0} both are
 * rejected and the correction is token 2. */
START_TEST(test_the_accepted_sibling_is_the_one_descended_into) {
    const float P0[V] = {0, 0.5f, 0.5f, 0, 0}, Q0[V] = {0.5f, 0.5f, 0, 0, 0};
    const float ROW1[V] = {1, 0, 0, 0, 0}, ROW2[V] = {0, 0, 0, 1, 0};
    token_tree t;
    tree_build(&t, V, 3);
    tree_reset(&t, 0, CHILDREN_NO_REPLACEMENT);
    set_row(tree_q(&t, 0), Q0);
    tree_add(&t, 0, 0);
    tree_add(&t, 0, 1);
    set_row(tree_q(&t, 1), ROW1);
    set_row(tree_q(&t, 2), ROW2);
    float p[3 * V], scratch[2 * V];
    set_row(p, P0);
    set_row(p + V, ROW1);
    set_row(p + 2 * V, ROW2);
    accept_result r;
    sp_error err;
    ck_assert_int_eq(accept_exact(&t, p, (accept_site){3, 0, 0}, scratch, &r, &err), 0);
    ck_assert_int_eq(r.n_accepted, 0);
    ck_assert_int_eq(r.next_token, 2);
    const float P0b[V] = {0, 1, 0, 0, 0};
    set_row(p, P0b);
    for (uint64_t round = 0; round < 50; round++) {
        ck_assert_int_eq(accept_exact(&t, p, (accept_site){3, round, 0}, scratch, &r, &err), 0);
        ck_assert_int_eq(r.n_accepted, 1);
        ck_assert_int_eq(r.path[1], 2);
        ck_assert_msg(r.next_token == 3 && r.bonus == 1,
                      "after node 2 (a leaf) the bonus comes from its row "
                      "(token 3); got token %d, bonus %d",
                      r.next_token, r.bonus);
    }
    tree_free(&t);
}
END_TEST

START_TEST(test_a_token_q_could_not_draw_is_refused) {
    const float Q0[V] = {0.5f, 0.5f, 0, 0, 0}, U[V] = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f};
    token_tree t;
    tree_build(&t, V, 2);
    tree_reset(&t, 0, CHILDREN_IID);
    set_row(tree_q(&t, 0), Q0);
    tree_add(&t, 0, 3); /* q(3) = 0 */
    set_row(tree_q(&t, 1), U);
    float p[2 * V], scratch[2 * V];
    set_row(p, U);
    set_row(p + V, U);
    accept_result r;
    sp_error err = {0};
    ck_assert_int_eq(accept_exact(&t, p, (accept_site){1, 0, 0}, scratch, &r, &err), -1);
    ck_assert_msg(err.msg[0] != 0, "the failure must say why");
    tree_free(&t);
}
END_TEST

/* ---- the rng sites: the walk's draws are part of its contract ------------ */

/* The starter names the draw of every decision (stream, position, slot), so
 * that the reference and the engine, given the same site, agree draw for
 * draw. A walk that draws from the right law at the wrong site passes every
 * distribution test, and these tests exist for it. Each tree below makes one
 * decision random and everything else certain; the test draws that one
 * decision itself, at the site the contract names, over 64 sites, and
 * demands the same outcome every time.
 *
 * Root p = {0, .375, .125, .5, 0}, q = {.5, .25, .25, 0, 0}; children:
 * token 0, then token 1, then (for the bonus) a leaf under token 1 whose row
 * is {0, .5, .5, 0, 0}.
 *   child 0 (token 0, p = 0): rejected for certain, whatever its uniform;
 *   the residual is then norm(max(0, p − q)) = {0, .2, 0, .8, 0};
 *   child 1 (token 1): accepted when U · q(1) < r(1), U at (RNG_ACCEPT,
 *   root position, slot 1): probability 0.8;
 *   accepted, it is a leaf: the bonus is drawn from its row at
 *   (RNG_SAMPLE, position + 1, slot 0), token 1 or 2;
 *   rejected, the residual is {0, 0, 0, 1, 0}: the correction is token 3.
 * A second tree, one child with p = 0, draws its correction from
 * {0, .5, .5, 0, 0} at (RNG_RESIDUAL, root position, slot 0). */
static accept_site site_of(int i) { return (accept_site){1000 + (uint64_t)i, (uint64_t)(i % 7), 3 + i % 5}; }

START_TEST(test_each_decision_is_drawn_at_its_site) {
    const float P0[V] = {0, 0.375f, 0.125f, 0.5f, 0}, Q0[V] = {0.5f, 0.25f, 0.25f, 0, 0};
    const float HALF[V] = {0, 0.5f, 0.5f, 0, 0}, U[V] = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f};
    token_tree t;
    tree_build(&t, V, 4);
    float p[4 * V], scratch[2 * V];
    int accepted = 0, rejected = 0;
    for (int i = 0; i < 64; i++) {
        const accept_site site = site_of(i);
        tree_reset(&t, 4, CHILDREN_IID);
        set_row(tree_q(&t, 0), Q0);
        tree_add(&t, 0, 0);
        tree_add(&t, 0, 1);
        set_row(tree_q(&t, 1), U);
        set_row(tree_q(&t, 2), U);
        set_row(p, P0);
        set_row(p + V, U);
        set_row(p + 2 * V, HALF);
        accept_result r;
        sp_error err;
        ck_assert_int_eq(accept_exact(&t, p, site, scratch, &r, &err), 0);
        const float u1 =
            rng_uniform((rng_site){site.seed, RNG_ACCEPT, accept_draw_index(site.round, site.base_position, 1)});
        if (u1 * 0.25f < 0.2f) { /* child 1 accepted; its bonus at the next position */
            accepted++;
            const int bonus = sampler_sample(
                HALF, V, (rng_site){site.seed, RNG_SAMPLE, accept_draw_index(site.round, site.base_position + 1, 0)});
            ck_assert_msg(r.n_accepted == 1 && r.path[1] == 2,
                          "site %d: the uniform at (RNG_ACCEPT, the root's position, slot 1) accepts child 1 "
                          "(token 1); the walk accepted %d nodes: is child j tested at slot j?",
                          i, r.n_accepted);
            ck_assert_msg(r.bonus == 1 && r.next_token == bonus,
                          "site %d: the bonus is token %d, drawn at (RNG_SAMPLE, the leaf's position, slot 0); "
                          "the walk gave %d",
                          i, bonus, r.next_token);
        } else {
            rejected++;
            ck_assert_msg(r.n_accepted == 0 && r.next_token == 3,
                          "site %d: the uniform at (RNG_ACCEPT, the root's position, slot 1) rejects child 1, so "
                          "the correction is token 3; the walk accepted %d nodes and gave %d: is child j "
                          "tested at slot j?",
                          i, r.n_accepted, r.next_token);
        }
    }
    ck_assert_msg(accepted >= 8 && rejected >= 4, "the sites should exercise both outcomes (%d, %d)", accepted,
                  rejected);

    /* the correction's own site */
    const float ONLY0[V] = {1, 0, 0, 0, 0};
    for (int i = 0; i < 64; i++) {
        const accept_site site = site_of(i);
        tree_reset(&t, 4, CHILDREN_IID);
        set_row(tree_q(&t, 0), ONLY0);
        tree_add(&t, 0, 0);
        set_row(tree_q(&t, 1), U);
        set_row(p, HALF);
        set_row(p + V, U);
        accept_result r;
        sp_error err;
        ck_assert_int_eq(accept_exact(&t, p, site, scratch, &r, &err), 0);
        const int want = sampler_sample(
            HALF, V, (rng_site){site.seed, RNG_RESIDUAL, accept_draw_index(site.round, site.base_position, 0)});
        ck_assert_msg(r.n_accepted == 0 && r.next_token == want,
                      "site %d: the correction is token %d, drawn from the residual at (RNG_RESIDUAL, the root's "
                      "position, slot 0); the walk gave %d",
                      i, want, r.next_token);
    }
    tree_free(&t);
}
END_TEST

/* ---- random trees against the target's law ------------------------------ */

enum { N_ROUNDS = 20000, ROOT_CHILDREN = 3, GRANDCHILDREN = 2 };

/* The target: P0 at the root, P1[a] after token a, P2 after any two tokens.
 * The proposals are far from it: q0 favours tokens 0 and 1, which p
 * under-weights, so rejections, residuals and second children are common. */
static const float P0[V] = {0.10f, 0.15f, 0.30f, 0.25f, 0.20f};
static const float Q0[V] = {0.45f, 0.35f, 0.10f, 0.05f, 0.05f};
static const float P1[V][V] = {{0.50f, 0.05f, 0.05f, 0.20f, 0.20f},
                               {0.05f, 0.05f, 0.60f, 0.10f, 0.20f},
                               {0.20f, 0.20f, 0.20f, 0.20f, 0.20f},
                               {0.05f, 0.45f, 0.05f, 0.05f, 0.40f},
                               {0.30f, 0.10f, 0.10f, 0.40f, 0.10f}};
static const float Q1[V] = {0.30f, 0.30f, 0.20f, 0.10f, 0.10f};
static const float P2[V] = {0.20f, 0.20f, 0.20f, 0.20f, 0.20f};

/* n distinct or independent draws from q into out. */
static void draw_children(const float *q, int n, children_kind kind, uint64_t stream, int *out) {
    float w[V];
    set_row(w, q);
    for (int i = 0; i < n; i++) {
        out[i] = sampler_sample(w, V, (rng_site){77, RNG_TEST, stream * 16 + (uint64_t)i});
        if (kind == CHILDREN_NO_REPLACEMENT) {
            w[out[i]] = 0;
            double s = 0;
            for (int j = 0; j < V; j++) s += w[j];
            for (int j = 0; j < V; j++) w[j] = (float)(w[j] / s);
        }
    }
}

/* counts1[a]: the first committed token; counts2[a][b]: the second, when
 * the first was an accepted child with token a. */
static void run_trees(children_kind kind, int64_t counts1[V], int64_t counts2[V][V]) {
    const int n_nodes = 1 + ROOT_CHILDREN + ROOT_CHILDREN * GRANDCHILDREN;
    token_tree t;
    tree_build(&t, V, n_nodes);
    float *p = sp_xcalloc((size_t)n_nodes * V, sizeof(float), "tree rows"), scratch[2 * V];
    for (uint64_t round = 0; round < N_ROUNDS; round++) {
        tree_reset(&t, 0, kind);
        set_row(tree_q(&t, 0), Q0);
        set_row(p, P0);
        int kids[ROOT_CHILDREN], grand[GRANDCHILDREN];
        draw_children(Q0, ROOT_CHILDREN, kind, round * 8, kids);
        for (int i = 0; i < ROOT_CHILDREN; i++) {
            const int c = tree_add(&t, 0, kids[i]);
            set_row(tree_q(&t, c), Q1);
            set_row(p + (size_t)c * V, P1[kids[i]]);
            draw_children(Q1, GRANDCHILDREN, kind, round * 8 + 1 + (uint64_t)i, grand);
            for (int g = 0; g < GRANDCHILDREN; g++) {
                const int d = tree_add(&t, c, grand[g]);
                set_row(tree_q(&t, d), P2);
                set_row(p + (size_t)d * V, P2);
            }
        }
        accept_result r;
        sp_error err;
        ck_assert_int_eq(accept_exact(&t, p, (accept_site){21, round, 0}, scratch, &r, &err), 0);
        const int first = r.n_accepted ? t.token[r.path[1]] : r.next_token;
        const int second = r.n_accepted >= 2 ? t.token[r.path[2]] : r.next_token;
        ck_assert_msg(first >= 0 && first < V && (!r.n_accepted || (second >= 0 && second < V)),
                      "round %d: committed tokens %d, %d outside [0, %d)", (int)round, first, second, V);
        counts1[first]++;
        if (r.n_accepted) counts2[first][second]++;
    }
    free(p);
    tree_free(&t);
}

static double gof(const int64_t *counts, const float *law) {
    double probs[V];
    for (int j = 0; j < V; j++) probs[j] = law[j];
    stats_result res;
    sp_error err;
    ck_assert_int_eq(stats_gof(counts, probs, V, STATS_PEARSON, STATS_MIN_EXPECTED, &res, &err), 0);
    return res.p_value;
}

/* Level 1e-3 for the first token, and for the second the smallest of V
 * p-values times V (Bonferroni), so a correct walk fails each test with
 * probability at most 1/1000 over seeds; the seed is fixed, so the outcome
 * is too. */
static void check_law(children_kind kind) {
    int64_t counts1[V] = {0}, counts2[V][V] = {{0}};
    run_trees(kind, counts1, counts2);
    const double p1 = gof(counts1, P0);
    ck_assert_msg(p1 > 1e-3, "the first committed token does not follow p at the root: p-value %.3g", p1);
    for (int a = 0; a < V; a++) {
        int64_t n = 0;
        for (int b = 0; b < V; b++) n += counts2[a][b];
        if (n < 200) continue; /* too few rounds accepted token a to test */
        const double p2 = gof(counts2[a], P1[a]) * V;
        ck_assert_msg(p2 > 1e-3,
                      "after an accepted token %d, the next token does not follow p after it: "
                      "p-value %.3g (Bonferroni over %d rows)",
                      a, p2, V);
    }
}

START_TEST(test_iid_children_follow_the_target) { check_law(CHILDREN_IID); }
END_TEST

START_TEST(test_children_without_replacement_follow_the_target) { check_law(CHILDREN_NO_REPLACEMENT); }
END_TEST

Suite *exercise_tree_walk_suite(void) {
    Suite *s = suite_create("exercise_tree_walk");
    TCase *hand = harness_tcase("by_hand", 10);
    tcase_add_test(hand, test_residual_is_carried_to_the_next_child);
    tcase_add_test(hand, test_a_chain_is_followed_to_a_bonus_at_its_leaf);
    tcase_add_test(hand, test_the_accepted_sibling_is_the_one_descended_into);
    tcase_add_test(hand, test_a_token_q_could_not_draw_is_refused);
    suite_add_tcase(s, hand);
    TCase *sites = harness_tcase("rng_sites", 10);
    tcase_add_test(sites, test_each_decision_is_drawn_at_its_site);
    suite_add_tcase(s, sites);
    TCase *law = harness_tcase("law", 60);
    tcase_add_test(law, test_iid_children_follow_the_target);
    tcase_add_test(law, test_children_without_replacement_follow_the_target);
    suite_add_tcase(s, law);
    return s;
}
