/* test_spec_model.c — the analytic model of speculation against values computed by hand, its monotonicity, the
 * Monte-Carlo simulations inside their 99.9 % intervals (each with a planted error the interval must reject), and
 * the roofline model's two regimes on a workload small enough to do on paper. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "accounting.h"
#include "harness.h"
#include "roofline.h"
#include "spec_model.h"

/* Closed forms evaluated in double: agreement to a few ulps. */
#define EXACT 1e-12
/* two-sided 99.9 %: Φ⁻¹(0.9995) */
#define Z_999 3.2905267314919

#define ck_close(got, want, tol)                                                                                       \
    ck_assert_msg(fabs((got) - (want)) <= (tol)*fmax(1.0, fabs(want)), "%s = %.15g, expected %.15g", #got,             \
                  (double)(got), (double)(want))

/* ---- E(α,k) and the speed-up -------------------------------------------------- */

START_TEST(test_e_known_points) {
    /* 1 + 0.8 + 0.64 + 0.512 + 0.4096 */
    ck_close(expected_tokens_per_pass(0.8, 4), 3.3616, EXACT);
    /* 1 + 0.5 */
    ck_close(expected_tokens_per_pass(0.5, 1), 1.5, EXACT);
    for (int k = 0; k <= 16; k++) {
        ck_close(expected_tokens_per_pass(1.0, k), k + 1.0, 0);
        ck_close(expected_tokens_per_pass(0.0, k), 1.0, 0);
    }
}
END_TEST

START_TEST(test_e_monotone) {
    for (int i = 0; i <= 100; i++) {
        double a = i / 100.0;
        for (int k = 1; k <= 16; k++) {
            double e = expected_tokens_per_pass(a, k), e_next = expected_tokens_per_pass(a, k + 1);
            /* one more draft adds α^{k+1}: never less, and visibly more while α^{k+1} is above rounding */
            ck_assert_msg(e_next >= e, "E(%g,%d) = %.17g < E(%g,%d) = %.17g", a, k + 1, e_next, a, k, e);
            if (pow(a, k + 1) > 1e-12)
                ck_assert_msg(e_next > e, "E(%g,%d) = %.17g, E(%g,%d) = %.17g", a, k + 1, e_next, a, k, e);
            if (i > 0) {
                double e_prev = expected_tokens_per_pass((i - 1) / 100.0, k);
                ck_assert_msg(e > e_prev, "E(%g,%d) = %g not above E(%g,%d) = %g", a, k, e, (i - 1) / 100.0, k, e_prev);
            }
        }
    }
}
END_TEST

START_TEST(test_speedup_values) {
    /* 3.3616 / (4·0.1 + 1) = 2.40114285714… */
    ck_close(spec_speedup(0.8, 4, 0.1), 3.3616 / 1.4, EXACT);
    ck_close(spec_speedup(0.37, 0, 0.5), 1.0, 0);
    /* c = 0: the speed-up is E itself */
    ck_close(spec_speedup(0.9, 6, 0.0), expected_tokens_per_pass(0.9, 6), EXACT);
}
END_TEST

START_TEST(test_best_k_hand_cases) {
    double best;
    /* α = 0.8, c = 0.1: S(5) = 3.68928/1.5 = 2.45952, S(6) = 3.951424/1.6 = 2.46964,
     * S(7) = 4.1611392/1.7 = 2.44773: the peak is k = 6 */
    ck_assert_int_eq(spec_best_k(0.8, 0.1, 32, &best), 6);
    ck_close(best, 3.951424 / 1.6, EXACT);
    /* α = 0.9, c = 0.05: S(12) = 10(1 − 0.9^13)/1.6 = 4.66133, S(13) = 10(1 − 0.9^14)/1.65 = 4.67413,
     * S(14) = 10(1 − 0.9^15)/1.7 = 4.67123 */
    ck_assert_int_eq(spec_best_k(0.9, 0.05, 32, NULL), 13);
    /* α = 0.6, c = 0.05: S(3) = 2.176/1.15 = 1.89217, S(4) = 2.3056/1.2 = 1.92133, S(5) = 2.38336/1.25 = 1.90669 */
    ck_assert_int_eq(spec_best_k(0.6, 0.05, 32, NULL), 4);
    /* α = 0.8, c = 0.25: S(2) = 2.44/1.5 = 1.62667, S(3) = 2.952/1.75 = 1.68686, S(4) = 3.3616/2 = 1.6808 */
    ck_assert_int_eq(spec_best_k(0.8, 0.25, 32, NULL), 3);
    /* a tie: α = 0.5, c = 0.2: S(1) = 1.5/1.2 = 1.25 and S(2) = 1.75/1.4 = 1.25 (S(3) = 1.875/1.6 =
     * 1.171875); equal in exact arithmetic, a rounding apart in double: the smaller k wins */
    ck_assert_int_eq(spec_best_k(0.5, 0.2, 32, &best), 1);
    ck_close(best, 1.25, EXACT);
    /* α = 0: every draft is wasted, S(k) = 1/(kc + 1) < 1 */
    ck_assert_int_eq(spec_best_k(0.0, 0.1, 32, NULL), 0);
    /* α = 0.3, c = 0.5: S(1) = 1.3/1.5 = 0.867, and it only falls: never pays */
    ck_assert_int_eq(spec_best_k(0.3, 0.5, 32, NULL), 0);
    /* α = 1, c = 0.5: S = (k+1)/(k/2 + 1) rises towards 2 without reaching it: k_max */
    ck_assert_int_eq(spec_best_k(1.0, 0.5, 20, &best), 20);
    ck_close(best, 21.0 / 11.0, EXACT);
    /* α = 1, c = 1: S = 1 for every k, a tie all along: 0 */
    ck_assert_int_eq(spec_best_k(1.0, 1.0, 20, NULL), 0);
}
END_TEST

START_TEST(test_best_k_is_the_maximum) {
    for (int ia = 0; ia <= 20; ia++)
        for (int ic = 0; ic <= 10; ic++) {
            double a = ia / 20.0, c = ic / 20.0, best;
            int kb = spec_best_k(a, c, 24, &best);
            for (int k = 0; k <= 24; k++) {
                double s = spec_speedup(a, k, c);
                ck_assert_msg(s <= best * (1 + 1e-12), "α %g c %g: S(%d) = %.15g beats S(k* = %d) = %.15g", a, c, k, s,
                              kb, best);
                /* every smaller k is beaten by more than rounding, else it would have been the answer */
                if (k < kb) ck_assert_msg(s * (1 + 1e-12) < best, "α %g c %g: k %d ties k* = %d", a, c, k, kb);
            }
        }
}
END_TEST

START_TEST(test_bytes_per_token) {
    /* (100 + 4·10) / 3.3616 */
    ck_close(spec_bytes_per_token(100, 10, 0.8, 4), 140.0 / 3.3616, EXACT);
    ck_close(spec_bytes_per_token(100, 10, 0.8, 0), 100.0, EXACT);
    /* α = 1, k = 3: (100 + 30) / 4 */
    ck_close(spec_bytes_per_token(100, 10, 1.0, 3), 32.5, EXACT);
}
END_TEST

START_TEST(test_chain_variance) {
    /* k = 1: one or two tokens, P(two) = α: Var = α(1 − α) */
    ck_close(spec_chain_variance(0.3, 1), 0.21, EXACT);
    /* k → ∞: accepted tokens are geometric, Var = α/(1 − α)² = 2 at α = 0.5 (0.5^200 is far below rounding) */
    ck_close(spec_chain_variance(0.5, 200), 2.0, 1e-9);
    ck_close(spec_chain_variance(1.0, 5), 0.0, EXACT);
    ck_close(spec_chain_variance(0.0, 5), 0.0, EXACT);
}
END_TEST

/* ---- trees ------------------------------------------------------------------------- */

static double tree_value(const int *parent, const double *a, int n, spec_tree_rule rule) {
    double v;
    sp_error err;
    ck_assert_msg(spec_tree_expected_accepted(parent, a, n, rule, &v, &err) == 0, "%s", err.msg);
    return v;
}

START_TEST(test_tree_chain_matches_e) {
    const int parent[] = {-1, 0, 1, 2, 3};
    const double a[] = {0, 0.8, 0.8, 0.8, 0.8};
    for (int r = 0; r < 3; r++) ck_close(tree_value(parent, a, 5, (spec_tree_rule)r), 3.3616 - 1.0, EXACT);
}
END_TEST

START_TEST(test_tree_star) {
    /* three children of the root, 0.2 each: exclusive 3·0.2; sequential 1 − 0.8³ = 0.488 (the first
     * success among three tries); independent: some child passes, 1 − 0.8³ */
    const int parent[] = {-1, 0, 0, 0};
    const double a[] = {0, 0.2, 0.2, 0.2};
    ck_close(tree_value(parent, a, 4, SPEC_TREE_EXCLUSIVE), 0.6, EXACT);
    ck_close(tree_value(parent, a, 4, SPEC_TREE_SEQUENTIAL), 0.488, EXACT);
    ck_close(tree_value(parent, a, 4, SPEC_TREE_INDEPENDENT), 0.488, EXACT);
}
END_TEST

/* root → A(0.6), B(0.3); A → C(0.5), D(0.4); B → E(0.9) */
static const int T_PARENT[] = {-1, 0, 0, 1, 1, 2};
static const double T_A[] = {0, 0.6, 0.3, 0.5, 0.4, 0.9};
/* exclusive: A .6 + B .3 + C .6·.5 + D .6·.4 + E .3·.9 = 1.71
 * sequential: A .6, B .3·(1 − .6) = .12, C .6·.5 = .3, D .6·.4·(1 − .5) = .12, E .12·.9 = .108: 1.248
 * independent: P(L ≥ 1) = 1 − .4·.7 = .72; G_A(1) = 1 − .5·.6 = .7, G_B(1) = .9,
 *   P(L ≥ 2) = 1 − (1 − .6·.7)(1 − .3·.9) = 1 − .58·.73 = .5766: 1.2966 */
#define T_EXCLUSIVE 1.71
#define T_SEQUENTIAL 1.248
#define T_INDEPENDENT 1.2966

START_TEST(test_tree_hand_example) {
    ck_close(tree_value(T_PARENT, T_A, 6, SPEC_TREE_EXCLUSIVE), T_EXCLUSIVE, EXACT);
    ck_close(tree_value(T_PARENT, T_A, 6, SPEC_TREE_SEQUENTIAL), T_SEQUENTIAL, EXACT);
    ck_close(tree_value(T_PARENT, T_A, 6, SPEC_TREE_INDEPENDENT), T_INDEPENDENT, EXACT);
}
END_TEST

START_TEST(test_tree_errors) {
    double v;
    sp_error err;
    const int bad_root[] = {0, 0};
    const double a2[] = {0, 0.5};
    ck_assert_int_eq(spec_tree_expected_accepted(bad_root, a2, 2, SPEC_TREE_EXCLUSIVE, &v, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "parent -1"));
    const int forward[] = {-1, 2, 0};
    const double a3[] = {0, 0.5, 0.5};
    ck_assert_int_eq(spec_tree_expected_accepted(forward, a3, 3, SPEC_TREE_SEQUENTIAL, &v, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "node 1 has parent 2"));
    const int chain[] = {-1, 0};
    const double too_big[] = {0, 1.5}, not_a_number[] = {0, NAN};
    ck_assert_int_eq(spec_tree_expected_accepted(chain, too_big, 2, SPEC_TREE_INDEPENDENT, &v, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "1.5"));
    ck_assert_int_eq(spec_tree_expected_accepted(chain, not_a_number, 2, SPEC_TREE_INDEPENDENT, &v, &err), -1);
    /* exclusive siblings that can both be "the" accepted child */
    const int star[] = {-1, 0, 0};
    const double over[] = {0, 0.7, 0.5};
    ck_assert_int_eq(spec_tree_expected_accepted(star, over, 3, SPEC_TREE_EXCLUSIVE, &v, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "summing to 1.2"));
    /* the same numbers are fine for the rules where they are per-test probabilities */
    ck_assert_int_eq(spec_tree_expected_accepted(star, over, 3, SPEC_TREE_SEQUENTIAL, &v, &err), 0);
    ck_assert_int_eq(spec_tree_expected_accepted(star, over, 0, SPEC_TREE_SEQUENTIAL, &v, &err), -1);
}
END_TEST

/* ---- Monte-Carlo --------------------------------------------------------------------- */

#define MC_ROUNDS 20000

/* |mean − want| inside the 99.9 % interval of a mean of `rounds` draws of variance var. */
static int inside(double mean, double want, double var, long rounds) {
    return fabs(mean - want) <= Z_999 * sqrt(var / rounds);
}

START_TEST(test_mc_chain_inside_interval) {
    static const double alphas[] = {0.3, 0.6, 0.9};
    static const int ks[] = {1, 4, 8};
    int row = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++, row++) {
            spec_mc_result r;
            spec_mc_chain(alphas[i], ks[j], MC_ROUNDS, 100 + row, &r);
            double var = spec_chain_variance(alphas[i], ks[j]);
            double want = expected_tokens_per_pass(alphas[i], ks[j]);
            ck_assert_msg(inside(r.mean, want, var, r.rounds), "α %g k %d: simulated %.5f, E = %.5f, ±%.5f", alphas[i],
                          ks[j], r.mean, want, Z_999 * sqrt(var / r.rounds));
            /* the sample variance agrees with the exact one to within a few per cent at 20000 rounds */
            ck_assert_msg(fabs(r.variance - var) <= 0.05 * var + 1e-9, "α %g k %d: variance %g, exact %g", alphas[i],
                          ks[j], r.variance, var);
            /* negative control: a formula off by 0.02 in α must fall outside the same interval */
            double planted = expected_tokens_per_pass(alphas[i] + 0.02, ks[j]);
            ck_assert_msg(!inside(r.mean, planted, var, r.rounds),
                          "α %g k %d: the interval (±%.5f) cannot tell E(α + 0.02) = %.5f from %.5f", alphas[i], ks[j],
                          Z_999 * sqrt(var / r.rounds), planted, r.mean);
        }
}
END_TEST

START_TEST(test_mc_chain_replays) {
    spec_mc_result a, b, c;
    spec_mc_chain(0.7, 5, 1000, 42, &a);
    spec_mc_chain(0.7, 5, 1000, 42, &b);
    spec_mc_chain(0.7, 5, 1000, 43, &c);
    ck_assert(a.mean == b.mean && a.variance == b.variance);
    ck_assert(a.mean != c.mean);
}
END_TEST

START_TEST(test_mc_tree_inside_interval) {
    const spec_tree_rule rules[3] = {SPEC_TREE_EXCLUSIVE, SPEC_TREE_SEQUENTIAL, SPEC_TREE_INDEPENDENT};
    const double want[3] = {T_EXCLUSIVE, T_SEQUENTIAL, T_INDEPENDENT};
    for (int i = 0; i < 3; i++) {
        spec_mc_result r;
        sp_error err;
        ck_assert_msg(spec_mc_tree(T_PARENT, T_A, 6, rules[i], MC_ROUNDS, 7 + i, &r, &err) == 0, "%s", err.msg);
        ck_assert_msg(inside(r.mean, 1.0 + want[i], r.variance, r.rounds), "rule %d: simulated %.5f, formula %.5f", i,
                      r.mean, 1.0 + want[i]);
        /* negative control: the other rules' values (0.05 to 0.46 away) are rejected */
        for (int j = 0; j < 3; j++)
            if (j != i)
                ck_assert_msg(!inside(r.mean, 1.0 + want[j], r.variance, r.rounds),
                              "rule %d simulated %.5f cannot be told from rule %d's %.5f", i, r.mean, j, 1.0 + want[j]);
    }
    sp_error err;
    spec_mc_result r;
    const int bad[] = {-1, 1};
    const double a[] = {0, 0.5};
    ck_assert_int_eq(spec_mc_tree(bad, a, 2, SPEC_TREE_EXCLUSIVE, 10, 1, &r, &err), -1);
}
END_TEST

/* ---- roofline ---------------------------------------------------------------------------- */

/* A device of 100 B/s and 1000 FLOP/s; a target of 100 weight bytes and 10
 * FLOP per position; a proposer of 10 bytes and 1 FLOP; no cache traffic. */
static void paper_workload(roofline_device *d, roofline_workload *w) {
    memset(d, 0, sizeof *d);
    memset(w, 0, sizeof *w);
    d->name = "paper";
    d->bandwidth = 100;
    d->peak_flops = 1000;
    d->memory = 1000;
    w->target.weight_bytes = 100;
    w->target.flops_per_position = 10;
    w->proposer.weight_bytes = 10;
    w->proposer.flops_per_position = 1;
    w->weight_memory = 110;
}

START_TEST(test_roofline_regimes) {
    roofline_device d;
    roofline_workload w;
    paper_workload(&d, &w);
    /* b = 1: bytes dominate everywhere: plain 1 s, verify 1 s (5·10 FLOP = 0.05 s), MTP 0.1 s:
     * S = 3.3616 · 1 / (1 + 4·0.1) */
    ck_close(roofline_pass_time(&d, &w.target, 1, 1), 1.0, EXACT);
    ck_close(roofline_speedup(&d, &w, 1, 0.8, 4), 3.3616 / 1.4, EXACT);
    /* b = 1000: FLOPs dominate: plain 1000·10/1000 = 10 s, verify 1000·5·10/1000 = 50 s,
     * MTP max(0.1, 1000·1/1000 = 1) = 1 s: S = 3.3616 · 10 / 54 = 0.6225 < 1 */
    ck_close(roofline_pass_time(&d, &w.target, 1000, 5), 50.0, EXACT);
    ck_close(roofline_speedup(&d, &w, 1000, 0.8, 4), 33.616 / 54.0, EXACT);
    /* per-sequence bytes: 1 B of cache, 2 B of state slot per verified position; at b = 10,
     * plain: (100 + 10·(1 + 2))/100 = 1.3 s; verify over 5: (100 + 10·(1 + 10))/100 = 2.1 s */
    w.target.seq_bytes = 1;
    w.target.state_write_bytes = 2;
    ck_close(roofline_pass_time(&d, &w.target, 10, 1), 1.3, EXACT);
    ck_close(roofline_pass_time(&d, &w.target, 10, 5), 2.1, EXACT);
    /* written once: the verify pass moves the plain pass's bytes, (100 + 10·3)/100 */
    roofline_workload once = roofline_single_state_write(&w);
    ck_close(roofline_pass_time(&d, &once.target, 10, 5), 1.3, EXACT);
    ck_close(roofline_pass_time(&d, &once.target, 10, 1), 1.3, EXACT);
}
END_TEST

START_TEST(test_roofline_capacity) {
    roofline_device d;
    roofline_workload w;
    paper_workload(&d, &w);
    w.kv_bytes_per_sequence = 40;
    w.state_bytes_per_sequence = 5;
    /* (1000 − 110) / (40 + 5) = 19.8; with k = 4, five more slots: 890 / 65 = 13.7 */
    ck_assert_int_eq(roofline_max_batch(&d, &w, 0), 19);
    ck_assert_int_eq(roofline_max_batch(&d, &w, 4), 13);
    d.memory = 100; /* the weights alone do not fit */
    ck_assert_int_eq(roofline_max_batch(&d, &w, 0), 0);
}
END_TEST

START_TEST(test_roofline_from_config) {
    /* the 27B config: FLOPs are 2 per weight read plus attention, and the MTP layer's bytes are
     * footprint's MTP step */
    model_config c;
    sp_error err;
    ck_assert_msg(config_load("models/qwen3.8-27b", &c, &err) == 0, "%s", err.msg);
    roofline_workload w;
    roofline_workload_build(&c, 2.0, 2.0, 1000, &w);
    /* 16 attention layers × 4 · 24 heads · 256 · 1000 positions */
    double attention = 16.0 * 4 * 24 * 256 * 1000;
    ck_close(w.target.flops_per_position, w.target.weight_bytes + attention, EXACT);
    /* KV: 1000 positions × 16 layers × 2 · 4 heads · 256 · 2 bytes, plus the MTP layer's */
    ck_close(w.kv_bytes_per_sequence, 1000.0 * 17 * 2 * 4 * 256 * 2, EXACT);
    /* at batch 1 it is bandwidth-bound and speculation pays; at the default context the per-sequence
     * cache and state traffic keep even b = 64 memory-bound for plain decoding */
    roofline_device d = roofline_h200();
    ck_assert(roofline_speedup(&d, &w, 1, 0.8, 4) > 2.0);
    double bytes = w.target.weight_bytes + 64 * (w.target.seq_bytes + w.target.state_write_bytes);
    ck_close(roofline_pass_time(&d, &w.target, 64, 1), bytes / d.bandwidth, EXACT);
    ck_assert(64 * w.target.flops_per_position / d.peak_flops < bytes / d.bandwidth);
}
END_TEST

Suite *spec_model_suite(void) {
    Suite *s = suite_create("spec_model");
    TCase *tc = harness_tcase("formulas", 10);
    tcase_add_test(tc, test_e_known_points);
    tcase_add_test(tc, test_e_monotone);
    tcase_add_test(tc, test_speedup_values);
    tcase_add_test(tc, test_best_k_hand_cases);
    tcase_add_test(tc, test_best_k_is_the_maximum);
    tcase_add_test(tc, test_bytes_per_token);
    tcase_add_test(tc, test_chain_variance);
    suite_add_tcase(s, tc);
    tc = harness_tcase("trees", 10);
    tcase_add_test(tc, test_tree_chain_matches_e);
    tcase_add_test(tc, test_tree_star);
    tcase_add_test(tc, test_tree_hand_example);
    tcase_add_test(tc, test_tree_errors);
    suite_add_tcase(s, tc);
    tc = harness_tcase("monte_carlo", 60);
    tcase_add_test(tc, test_mc_chain_inside_interval);
    tcase_add_test(tc, test_mc_chain_replays);
    tcase_add_test(tc, test_mc_tree_inside_interval);
    suite_add_tcase(s, tc);
    tc = harness_tcase("roofline", 10);
    tcase_add_test(tc, test_roofline_regimes);
    tcase_add_test(tc, test_roofline_capacity);
    tcase_add_test(tc, test_roofline_from_config);
    suite_add_tcase(s, tc);
    return s;
}
