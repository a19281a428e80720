/* test_accept.c — the acceptance rules on hand-built trees and
 * distributions, where the right answer is known without statistics
 * (the distributional proofs are in tests/stat/), plus tree geometry and
 * the accounting formulas. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "accept.h"
#include "accounting.h"
#include "harness.h"

enum { V = 6 };

static void one_hot(float *row, int i) {
    memset(row, 0, sizeof(float) * V);
    row[i] = 1.0f;
}

/* root → 1 → 2 → 3, q = p everywhere */
static void chain(token_tree *t, float *p) {
    tree_build(t, V, 8);
    tree_reset(t, 0, CHILDREN_IID);
    int u = 0;
    for (int d = 1; d <= 3; d++) u = tree_add(t, u, d);
    for (int i = 0; i < t->n; i++) {
        float *row = p + (size_t)i * V;
        for (int j = 0; j < V; j++) row[j] = 1.0f / V;
        memcpy(tree_q(t, i), row, sizeof(float) * V);
    }
}

START_TEST(test_equal_p_q_accepts_everything) {
    token_tree t;
    float p[4 * V], scratch[2 * V];
    chain(&t, p);
    accept_result r;
    sp_error err;
    for (uint64_t round = 0; round < 50; round++) {
        accept_site site = {7, round, 10};
        ck_assert(accept_exact(&t, p, site, scratch, &r, &err) == 0);
        ck_assert_int_eq(r.n_accepted, 3);
        ck_assert_int_eq(r.bonus, 1);
        ck_assert_int_eq(r.path[3], 3);
    }
    tree_free(&t);
}
END_TEST

START_TEST(test_disjoint_support_rejects_and_draws_from_p) {
    token_tree t;
    float p[4 * V], scratch[2 * V];
    chain(&t, p);
    one_hot(tree_q(&t, 0), 1); /* the draft is sure of token 1 … */
    one_hot(p, 4);             /* … the target is sure of token 4 */
    accept_result r;
    sp_error err;
    accept_site site = {3, 0, 0};
    ck_assert(accept_exact(&t, p, site, scratch, &r, &err) == 0);
    ck_assert_int_eq(r.n_accepted, 0);
    ck_assert_int_eq(r.next_token, 4);
    ck_assert_int_eq(r.bonus, 0);
    tree_free(&t);
}
END_TEST

START_TEST(test_residual) {
    float p[V] = {0.5f, 0.3f, 0.2f, 0, 0, 0}, q[V] = {0.2f, 0.3f, 0.1f, 0.4f, 0, 0}, res[V];
    double mass = accept_residual(p, q, res, V);
    ck_assert_double_eq_tol(mass, 0.4, 1e-6);
    ck_assert_float_eq_tol(res[0], 0.75f, 1e-6f);
    ck_assert_float_eq_tol(res[2], 0.25f, 1e-6f);
    ck_assert_float_eq(res[1], 0.0f);
    ck_assert_float_eq(res[3], 0.0f);
    /* p = q: no residual mass; the residual falls back to p itself */
    ck_assert_double_eq(accept_residual(p, p, res, V), 0.0);
    ck_assert(memcmp(res, p, sizeof p) == 0);
    /* in place */
    memcpy(res, p, sizeof p);
    accept_residual(res, q, res, V);
    ck_assert_float_eq_tol(res[0], 0.75f, 1e-6f);
}
END_TEST

START_TEST(test_top_ranks_refused_by_exact_rule) {
    token_tree t;
    float p[4 * V], scratch[2 * V];
    chain(&t, p);
    t.kind = CHILDREN_TOP_RANKS;
    accept_result r;
    sp_error err;
    accept_site site = {1, 0, 0};
    ck_assert_int_eq(accept_exact(&t, p, site, scratch, &r, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "greedy or typical"));
    tree_free(&t);
}
END_TEST

START_TEST(test_greedy_follows_argmax_through_a_tree) {
    /* root has children 2 and 4; 4 has children 1 and 5 */
    token_tree t;
    tree_build(&t, V, 8);
    tree_reset(&t, 0, CHILDREN_TOP_RANKS);
    int a = tree_add(&t, 0, 2), b = tree_add(&t, 0, 4), c = tree_add(&t, b, 1), d = tree_add(&t, b, 5);
    float p[5 * V];
    one_hot(p + 0 * V, 4);
    one_hot(p + (size_t)a * V, 0);
    one_hot(p + (size_t)b * V, 5);
    one_hot(p + (size_t)c * V, 0);
    one_hot(p + (size_t)d * V, 3);
    accept_result r;
    accept_greedy(&t, p, &r);
    ck_assert_int_eq(r.n_accepted, 2);
    ck_assert_int_eq(r.path[1], b);
    ck_assert_int_eq(r.path[2], d);
    ck_assert_int_eq(r.next_token, 3); /* the bonus from the leaf */
    ck_assert_int_eq(r.bonus, 1);
    one_hot(p + (size_t)b * V, 2); /* now 4's argmax is not among its children */
    accept_greedy(&t, p, &r);
    ck_assert_int_eq(r.n_accepted, 1);
    ck_assert_int_eq(r.next_token, 2);
    ck_assert_int_eq(r.bonus, 0);
    tree_free(&t);
}
END_TEST

START_TEST(test_typical_threshold) {
    /* p uniform over 4 tokens: H = log 4, δ·e^{−H} = 0.3/4 = 0.075 < ε = 0.09, so tokens with p > 0.075 pass */
    token_tree t;
    tree_build(&t, V, 4);
    tree_reset(&t, 0, CHILDREN_TOP_RANKS);
    tree_add(&t, 0, 5);
    float p[2 * V] = {0.25f, 0.25f, 0.25f, 0.25f, 0, 0, 0.25f, 0.25f, 0.25f, 0.25f, 0, 0};
    accept_result r;
    accept_site site = {1, 0, 0};
    accept_typical(&t, p, 0.09f, 0.3f, site, &r);
    ck_assert_int_eq(r.n_accepted, 0); /* p(5) = 0 */
    t.token[1] = 2;
    accept_typical(&t, p, 0.09f, 0.3f, site, &r);
    ck_assert_int_eq(r.n_accepted, 1);
    ck_assert_int_eq(r.bonus, 1);
    ck_assert_int_lt(r.next_token, 4);
    tree_free(&t);
}
END_TEST

START_TEST(test_tree_mask_and_positions) {
    token_tree t;
    tree_build(&t, V, 8);
    tree_reset(&t, 0, CHILDREN_IID);
    int a = tree_add(&t, 0, 1), b = tree_add(&t, 0, 2), c = tree_add(&t, a, 3);
    ck_assert_int_eq(tree_add(&t, 9, 1), -1); /* no such parent */
    unsigned char mask[16];
    tree_attention_mask(&t, mask);
    ck_assert(mask[(size_t)c * 4 + 0] && mask[(size_t)c * 4 + a] && mask[(size_t)c * 4 + c]);
    ck_assert(!mask[(size_t)c * 4 + b]); /* a branch never sees its sibling */
    ck_assert(!mask[(size_t)a * 4 + c]); /* nor its descendants */
    int pos[4];
    tree_positions(&t, 100, pos);
    ck_assert_int_eq(pos[0], 100);
    ck_assert_int_eq(pos[b], 101);
    ck_assert_int_eq(pos[c], 102);
    int kids[4];
    ck_assert_int_eq(tree_children(&t, 0, kids, 4), 2);
    ck_assert_int_eq(tree_max_depth(&t), 2);
    tree_free(&t);
}
END_TEST

START_TEST(test_expected_tokens_formula) {
    ck_assert_double_eq_tol(expected_tokens_per_pass(0.8, 4), 3.36160, 1e-5);
    ck_assert_double_eq_tol(expected_tokens_per_pass(0.0, 4), 1.0, 1e-12);
    ck_assert_double_eq(expected_tokens_per_pass(1.0, 4), 5.0);
    ck_assert_double_eq_tol(expected_tokens_per_pass(0.999999, 4), 5.0, 1e-4); /* continuous at α = 1 */
}
END_TEST

START_TEST(test_accounting_alpha_and_consistency) {
    run_accounting a;
    accounting_init(&a, "spec", 3, 100.0, 10.0);
    accounting_round(&a, 3, 3, 4, 0); /* a full block */
    accounting_round(&a, 3, 1, 2, 1); /* one accepted, then a rejection */
    accounting_round(&a, 3, 0, 1, 1); /* rejected at once */
    ck_assert_int_eq(a.committed, a.accepted_total + a.target_passes);
    ck_assert_int_eq(a.committed, 7);
    /* α̂ = 4 accepted / (4 + 2 rejections) */
    ck_assert_double_eq_tol(accounting_alpha(&a), 4.0 / 6.0, 1e-12);
    ck_assert_int_eq(a.length_hist[3], 1);
    ck_assert_int_eq(a.length_hist[0], 1);
    ck_assert_int_eq(a.accepted[1], 2);
    ck_assert_int_eq(a.proposed[3], 3);
    a.proposer_steps = 9;
    ck_assert_double_eq_tol(accounting_bytes_per_token(&a), (3 * 100.0 + 9 * 10.0) / 7.0, 1e-9);
}
END_TEST

Suite *accept_suite(void) {
    Suite *s = suite_create("accept");
    TCase *tc = harness_tcase("rules", 10);
    tcase_add_test(tc, test_equal_p_q_accepts_everything);
    tcase_add_test(tc, test_disjoint_support_rejects_and_draws_from_p);
    tcase_add_test(tc, test_residual);
    tcase_add_test(tc, test_top_ranks_refused_by_exact_rule);
    tcase_add_test(tc, test_greedy_follows_argmax_through_a_tree);
    tcase_add_test(tc, test_typical_threshold);
    tcase_add_test(tc, test_tree_mask_and_positions);
    tcase_add_test(tc, test_expected_tokens_formula);
    tcase_add_test(tc, test_accounting_alpha_and_consistency);
    suite_add_tcase(s, tc);
    return s;
}
