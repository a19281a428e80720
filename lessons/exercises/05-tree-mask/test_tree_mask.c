/* test_tree_mask.c — exercise 5's checks: the mask of a hand-drawn Medusa
 * tree, then random trees of every shape against the definition read off
 * the parent links (a walk up from each node), and the positions.
 *
 * Wrong solutions this checker must reject (wrong/, run by
 * tests/parts/exercises.sh):
 *   parent-only.c      a node sees itself and its parent only
 *   transposed.c       a node sees its descendants, not its ancestors
 *   index-positions.c  pos[i] = base + i, not base + depth[i]
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "sampler.h"
#include "tree.h"

/* root(0) ─ a(1) ─ c(3) ─ e(5)
 *         │      └ d(4)
 *         └ b(2) ─ f(6)                 (Medusa's shape: two guesses per depth) */
START_TEST(test_hand_drawn_tree) {
    token_tree t;
    tree_build(&t, 4, 8);
    tree_reset(&t, 0, CHILDREN_TOP_RANKS);
    int a = tree_add(&t, 0, 1), b = tree_add(&t, 0, 2), c = tree_add(&t, a, 3), d = tree_add(&t, a, 1);
    int e = tree_add(&t, c, 2), f = tree_add(&t, b, 0);
    ck_assert(a == 1 && b == 2 && c == 3 && d == 4 && e == 5 && f == 6);
    static const char *want[7] = {"1000000", "1100000", "1010000", "1101000", "1100100", "1101010", "1010001"};
    unsigned char mask[49];
    memset(mask, 7, sizeof mask); /* garbage: every entry must be written */
    tree_attention_mask(&t, mask);
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 7; j++)
            ck_assert_msg(mask[i * 7 + j] == (want[i][j] == '1'), "mask[%d][%d] = %d, want %c", i, j, mask[i * 7 + j],
                          want[i][j]);
    int pos[7];
    tree_positions(&t, 40, pos);
    static const int want_pos[7] = {40, 41, 41, 42, 42, 43, 42};
    for (int i = 0; i < 7; i++) ck_assert_int_eq(pos[i], want_pos[i]);
    tree_free(&t);
}
END_TEST

/* Random trees: each new node picks a parent uniformly among the nodes so
 * far (deep chains and wide fans both occur). */
START_TEST(test_random_trees) {
    enum { MAX_N = 64 };
    unsigned char mask[MAX_N * MAX_N];
    int pos[MAX_N];
    for (uint64_t trial = 0; trial < 300; trial++) {
        rng_site s = {5, RNG_TEST, trial * 1000};
        int n = 1 + (int)(rng_uniform(s) * MAX_N);
        if (n > MAX_N) n = MAX_N;
        token_tree t;
        tree_build(&t, 2, n);
        tree_reset(&t, 0, CHILDREN_IID);
        for (int i = 1; i < n; i++) {
            s.index = trial * 1000 + (uint64_t)i;
            int parent = (int)(rng_uniform(s) * i);
            if (parent >= i) parent = i - 1;
            tree_add(&t, parent, 0);
        }
        memset(mask, 9, sizeof mask);
        tree_attention_mask(&t, mask);
        int base = (int)trial;
        tree_positions(&t, base, pos);
        for (int i = 0; i < n; i++) {
            unsigned char on_path[MAX_N] = {0};
            int depth = 0;
            for (int x = i; x >= 0; x = t.parent[x], depth++) on_path[x] = 1;
            for (int j = 0; j < n; j++)
                ck_assert_msg(mask[(size_t)i * n + j] == on_path[j], "trial %d (n %d): mask[%d][%d] = %d, want %d",
                              (int)trial, n, i, j, mask[(size_t)i * n + j], on_path[j]);
            ck_assert_msg(pos[i] == base + depth - 1, "trial %d: pos[%d] = %d, want %d", (int)trial, i, pos[i],
                          base + depth - 1);
        }
        tree_free(&t);
    }
}
END_TEST

Suite *exercise_tree_mask_suite(void) {
    Suite *s = suite_create("exercise_tree_mask");
    TCase *tc = harness_tcase("mask", 30);
    tcase_add_test(tc, test_hand_drawn_tree);
    tcase_add_test(tc, test_random_trees);
    suite_add_tcase(s, tc);
    return s;
}
